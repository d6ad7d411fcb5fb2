//! The long-lived program of a two-program case (`echo`'s server, `dist`'s echo node):
//! started pinned to core 0 with its stdin a pipe, ready once its first stdout line (a
//! JSON object) says so, and told to exit by closing its stdin; its process group is
//! killed if it does not. Also where the two programs run (`Pinning`).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::Outcome;
use super::invoke::invoke;
use crate::sysinfo;

/// A started peer program.
pub(super) struct Peer {
    /// "the server", "the echo node": for the messages.
    what: &'static str,
    child: Child,
    stderr: JoinHandle<String>,
    reader: JoinHandle<()>,
    /// Its first line, as JSON, or why there is none.
    pub(super) line: Result<Value, String>,
}

impl Peer {
    /// Starts `cmd` and waits up to `limit` for its first line. `Err` if it cannot run.
    pub(super) fn start(
        mut cmd: Command,
        what: &'static str,
        program: &Path,
        limit: Duration,
    ) -> Result<Peer, (Outcome, Option<i32>)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let why = format!("cannot run {what} {}: {e}", program.display());
                return Err((Outcome::Error(why), None));
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
            // The rest (nothing, by the contract) is read so the peer never blocks on it.
            for _ in lines {}
        });
        let line = match line_rx.recv_timeout(limit) {
            Ok(l) => serde_json::from_str::<Value>(&l).map_err(|e| format!("not JSON ({e}): {l}")),
            Err(_) => Err("no line".into()),
        };
        Ok(Peer {
            what,
            child,
            stderr,
            reader,
            line,
        })
    }

    /// Its OS pid.
    pub(super) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The run's outcome when the peer did not start as it should: it is killed, and
    /// the error says why (`why`, or why it has no line) with its exit code and the
    /// last line of its stderr.
    pub(super) fn failed(mut self, why: &str) -> (Outcome, Option<i32>) {
        stop(&mut self.child);
        let code = self.child.wait().ok().and_then(|s| s.code());
        let tail = last_line(self.stderr.join().unwrap_or_default());
        let why = match &self.line {
            Ok(_) => why.to_string(),
            Err(e) => e.clone(),
        };
        let _ = self.reader.join();
        let msg = format!("{} did not start ({why}; exit {code:?}{tail})", self.what);
        (Outcome::Error(msg), code)
    }

    /// Closes its stdin and waits up to `limit` for it to exit: why it failed, if it
    /// did (an exit code other than 0, or no exit).
    pub(super) fn finish(mut self, limit: Duration) -> Option<String> {
        drop(self.child.stdin.take());
        let exit = wait_for(&mut self.child, limit);
        let tail = last_line(self.stderr.join().unwrap_or_default());
        let _ = self.reader.join();
        let what = self.what;
        match exit {
            Some(0) => None,
            Some(c) => Some(format!("{what} exited {c} once its stdin closed{tail}")),
            None => Some(format!(
                "{what} did not exit within {limit:?} of its stdin closing{tail}"
            )),
        }
    }
}

/// The client's outcome with the peer's failure folded in, `extend` applied to its line.
pub(super) fn merge(
    outcome: Outcome,
    peer_failed: Option<String>,
    extend: impl Fn(&mut Value),
) -> Outcome {
    match (outcome, peer_failed) {
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
    }
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

fn drain<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let _ = r.read_to_string(&mut s);
        }
        s
    })
}

/// `": <the last line of stderr>"`, or nothing.
fn last_line(stderr: String) -> String {
    stderr
        .trim()
        .lines()
        .last()
        .map_or(String::new(), |l| format!(": {l}"))
}

/// Waits up to `limit` for `child`; kills its group if it has not exited. Its exit code.
fn wait_for(child: &mut Child, limit: Duration) -> Option<i32> {
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
