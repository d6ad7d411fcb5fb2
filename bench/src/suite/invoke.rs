//! One run: this binary or the Erlang twin as a subprocess, with a time limit, and what its
//! JSON line and exit code say.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{INSTALL_ERLANG, Options, Outcome};
use crate::sysinfo;

/// Where the Erlang twin is, or why it cannot run.
pub(super) fn erlang_bench(o: &Options) -> Result<PathBuf, String> {
    if o.no_erlang {
        return Err("--no-erlang".into());
    }
    if !sysinfo::on_path("erl") {
        return Err(format!("erl not on PATH ({INSTALL_ERLANG})"));
    }
    let path = match std::env::var_os("OTTER_ERLANG_BENCH") {
        Some(p) => PathBuf::from(p),
        None => {
            let built = sysinfo::workspace_dir().join("erlang-reference/bench");
            if built.is_file() {
                built
            } else {
                PathBuf::from("erlang-reference/bench")
            }
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "Erlang reference not found at {} (set OTTER_ERLANG_BENCH)",
            path.display()
        ))
    }
}

/// Runs `program bench k=v ...` once, with a time limit.
pub(super) fn invoke(
    program: &Path,
    bench: &str,
    args: &[String],
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let mut cmd = Command::new(program);
    cmd.arg(bench)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return (
                Outcome::Error(format!("cannot run {}: {e}", program.display())),
                None,
            );
        }
    };
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() > timeout => {
                timed_out = true;
                kill_group(&mut child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let code = status.and_then(|s| s.code());
    let tail = stderr.trim().lines().last().unwrap_or("").to_string();
    if timed_out {
        return (
            Outcome::Error(format!("timed out after {} s", timeout.as_secs())),
            code,
        );
    }
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let parsed = line.and_then(|l| serde_json::from_str::<Value>(l).ok());
    let outcome = match (parsed, code) {
        (Some(v), Some(0)) if v["check"] == "ok" => Outcome::Ok(v),
        (Some(v), _) => {
            let why = match v["check"].as_str() {
                Some("ok") => format!("check ok but exit code {code:?}"),
                Some(why) => why.to_string(),
                None => "no check field".to_string(),
            };
            Outcome::CheckFailed(v, why)
        }
        (None, c) => Outcome::Error(format!(
            "exit code {}{}",
            c.map_or("none (killed by a signal)".to_string(), |c| c.to_string()),
            if tail.is_empty() {
                String::new()
            } else {
                format!(": {tail}")
            }
        )),
    };
    (outcome, code)
}

/// Kills a timed-out child and its process group (the BEAM may have children of its own).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}
