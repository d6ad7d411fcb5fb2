//! One run of an `echo` case (WORKLOADS.md "echo"): two programs, not one.
//!
//! 1. The server (`otter-bench echo-server` or `erlang-reference/bench echo-server`, with
//!    `port=0 mode=M threads=1`), on core 0 (`taskset -c 0`) with its stdin a pipe; its
//!    first line on stdout gives the port.
//! 2. The load, always this binary's `echo-load port=P conns=C size=S seconds=T threads=1
//!    server_pid=PID`, on core 1 (`taskset -c 1`), through `invoke` like any run.
//! 3. The server's stdin is closed; it must exit 0 within [`SERVER_EXIT`].
//!
//! The load's line is the run's, its `bench` the case's (`echo`), with `server` (the
//! server's line) and `pinning` added.
//! Without `taskset` or with a single core both run unpinned, and `pinning` says so. A case
//! whose connections do not fit in `ulimit -n` (both processes need one descriptor per
//! connection) is skipped with the reason.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::Outcome;
use super::invoke::invoke;
use crate::sysinfo;
use crate::workloads::echo::open_files_limit;

/// The case's bench name.
pub(crate) const BENCH: &str = "echo";
/// How long a server has to print its line, and to exit once its stdin is closed.
const SERVER_START: Duration = Duration::from_secs(60);
const SERVER_EXIT: Duration = Duration::from_secs(20);
/// Descriptors each side needs besides its connections.
const SPARE_FDS: u64 = 64;

/// Runs one echo case: `server` serves (`program` is otter-bench or the Erlang twin), this
/// binary (`me`) loads. `args`: the case's `conns=`, `size=`, `seconds=`, `mode=`.
pub(super) fn run(
    server: &Path,
    me: &Path,
    args: &[(&'static str, String)],
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let get = |k: &str| {
        args.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (mode, conns) = (get("mode"), get("conns"));
    let need = conns.parse::<u64>().unwrap_or(0) + SPARE_FDS;
    if let Some(limit) = open_files_limit().filter(|l| *l < need) {
        return (
            Outcome::Skipped(format!(
                "conns={conns} needs {need} descriptors a process, ulimit -n is {limit}"
            )),
            None,
        );
    }
    let pin = Pinning::of_this_machine();

    let mut cmd = pin.command(0, server);
    cmd.args([
        "echo-server",
        "port=0",
        &format!("mode={mode}"),
        "threads=1",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = format!("cannot run the server {}: {e}", server.display());
            return (Outcome::Error(why), None);
        }
    };
    let stderr = drain(child.stderr.take());
    let (line_tx, line_rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let Some(out) = stdout else { return };
        let mut lines = BufReader::new(out).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = line_tx.send(first);
        }
        // The rest (nothing, by the contract) is read so the server never blocks on it.
        for _ in lines {}
    });
    let server_line = match line_rx.recv_timeout(SERVER_START) {
        Ok(l) => serde_json::from_str::<Value>(&l).map_err(|e| format!("not JSON ({e}): {l}")),
        Err(_) => Err("no line".into()),
    };
    let port = server_line
        .as_ref()
        .ok()
        .and_then(|v| v["port"].as_u64())
        .filter(|p| *p > 0);
    let Some(port) = port else {
        stop(&mut child);
        let code = child.wait().ok().and_then(|s| s.code());
        let tail = last_line(stderr.join().unwrap_or_default());
        let why = match server_line {
            Ok(_) => "its line has no port".to_string(),
            Err(e) => e,
        };
        let _ = reader.join();
        return (
            Outcome::Error(format!(
                "the server did not start ({why}; exit {code:?}{tail})"
            )),
            code,
        );
    };

    let pid = child.id();
    let load_args = [
        format!("port={port}"),
        format!("conns={conns}"),
        format!("size={}", get("size")),
        format!("seconds={}", get("seconds")),
        "threads=1".to_string(),
        format!("server_pid={pid}"),
    ];
    let (mut outcome, code) = pin.invoke(1, me, "echo-load", &load_args, timeout);

    // Closing stdin tells the server to exit.
    drop(child.stdin.take());
    let exit = wait_for(&mut child, SERVER_EXIT);
    let tail = last_line(stderr.join().unwrap_or_default());
    let _ = reader.join();
    let server_failed = match exit {
        Some(0) => None,
        Some(c) => Some(format!("the server exited {c} once its stdin closed{tail}")),
        None => Some(format!(
            "the server did not exit within {SERVER_EXIT:?} of its stdin closing{tail}"
        )),
    };
    let extend = |v: &mut Value| {
        // The run is the case's (`echo`), measured by echo-load.
        v["bench"] = BENCH.into();
        v["server"] = server_line.clone().unwrap_or(Value::Null);
        v["pinning"] = pin.describe().into();
    };
    outcome = match (outcome, server_failed) {
        (Outcome::Ok(mut v), None) => {
            extend(&mut v);
            Outcome::Ok(v)
        }
        (Outcome::Ok(mut v), Some(why)) | (Outcome::CheckFailed(mut v, _), Some(why)) => {
            extend(&mut v);
            Outcome::CheckFailed(v, why)
        }
        (Outcome::CheckFailed(mut v, why), None) => {
            extend(&mut v);
            Outcome::CheckFailed(v, why)
        }
        (o, _) => o,
    };
    (outcome, code)
}

/// Where the server and the load run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pinning {
    /// `taskset -c 0` for the server, `taskset -c 1` for the load.
    Cores,
    /// No `taskset` on PATH.
    NoTaskset,
    /// One core only.
    OneCore,
}

impl Pinning {
    pub(super) fn of_this_machine() -> Pinning {
        if sysinfo::cores() < 2 {
            Pinning::OneCore
        } else if !sysinfo::on_path("taskset") {
            Pinning::NoTaskset
        } else {
            Pinning::Cores
        }
    }

    pub(super) fn describe(self) -> &'static str {
        match self {
            Pinning::Cores => "server on core 0, load on core 1 (taskset)",
            Pinning::NoTaskset => "unpinned: taskset not found (util-linux)",
            Pinning::OneCore => "unpinned: one core",
        }
    }

    /// `program`, on `core` if pinned.
    pub(super) fn command(self, core: u32, program: &Path) -> Command {
        if self == Pinning::Cores {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(core.to_string()).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// `invoke(program bench args)`, on `core` if pinned (`taskset -c CORE program bench ..`).
    pub(super) fn invoke(
        self,
        core: u32,
        program: &Path,
        bench: &str,
        args: &[String],
        timeout: Duration,
    ) -> (Outcome, Option<i32>) {
        if self == Pinning::Cores {
            let mut argv = vec![
                core.to_string(),
                program.display().to_string(),
                bench.into(),
            ];
            argv.extend(args.iter().cloned());
            invoke(Path::new("taskset"), "-c", &argv, timeout)
        } else {
            invoke(program, bench, args, timeout)
        }
    }
}

pub(super) fn drain<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let _ = r.read_to_string(&mut s);
        }
        s
    })
}

/// `": <the last line of stderr>"`, or nothing.
pub(super) fn last_line(stderr: String) -> String {
    stderr
        .trim()
        .lines()
        .last()
        .map_or(String::new(), |l| format!(": {l}"))
}

/// Waits up to `limit` for `child`; kills its group if it has not exited. Its exit code.
pub(super) fn wait_for(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return st.code(),
            Ok(None) if t0.elapsed() > limit => {
                stop(child);
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => return None,
        }
    }
}

/// Kills the server and its process group (the BEAM has a child of its own).
pub(super) fn stop(child: &mut Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}
