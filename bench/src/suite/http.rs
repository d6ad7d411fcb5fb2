//! One run of the `http` case (WORKLOADS.md "http"), as an `echo` run (`suite/echo.rs`):
//!
//! 1. The server, this binary's `http-server impl=otter|tokio port=0 threads=1`, on core 0
//!    (`taskset -c 0`) with its stdin a pipe; its first line on stdout gives the port.
//! 2. The load, this binary's `http-load port=P conns=C seconds=T work_us=W threads=1
//!    server_pid=PID`, on core 1 (`taskset -c 1`), through `invoke` like any run.
//! 3. The server's stdin is closed; it must exit 0 within [`SERVER_EXIT`].
//!
//! The load's line is the run's, its `bench` the case's (`http`), with `server` (the
//! server's line) and `pinning` added. The suite alternates which implementation goes
//! first between repetitions, as for every case. A case whose connections do not fit in
//! `ulimit -n` is skipped with the reason.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::Outcome;
use super::cases::Impl;
use super::peer::{Peer, Pinning, merge};
use crate::workloads::echo::open_files_limit;

/// The case's bench name.
pub(crate) const BENCH: &str = "http";
/// How long a server has to print its line, and to exit once its stdin is closed.
const SERVER_START: Duration = Duration::from_secs(60);
const SERVER_EXIT: Duration = Duration::from_secs(20);
/// Descriptors each side needs besides its connections.
const SPARE_FDS: u64 = 64;

/// Runs one http run of `imp` (otter or tokio; both are this binary, `me`). `args`: the
/// case's `conns=`, `seconds=`, `work_us=`.
pub(super) fn run(
    me: &Path,
    imp: Impl,
    args: &[(&'static str, String)],
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let get = |k: &str| {
        args.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let conns = get("conns");
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

    let mut cmd = pin.command(0, me);
    cmd.args([
        "http-server",
        &format!("impl={}", imp.name()),
        "port=0",
        "threads=1",
    ]);
    let peer = match Peer::start(cmd, "the server", me, SERVER_START) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let port = peer
        .line
        .as_ref()
        .ok()
        .and_then(|v| v["port"].as_u64())
        .filter(|p| *p > 0);
    let Some(port) = port else {
        return peer.failed("its line has no port");
    };

    let pid = peer.id();
    let load_args = [
        format!("port={port}"),
        format!("conns={conns}"),
        format!("seconds={}", get("seconds")),
        format!("work_us={}", get("work_us")),
        "threads=1".to_string(),
        format!("server_pid={pid}"),
    ];
    let (mut outcome, code) = pin.invoke(1, me, "http-load", &load_args, timeout);

    // Closing stdin tells the server to exit.
    let server_line = peer.line.clone().ok();
    let server_failed = peer.finish(SERVER_EXIT);
    let extend = |v: &mut Value| {
        // The run is the case's (`http`), measured by http-load.
        v["bench"] = BENCH.into();
        v["server"] = server_line.clone().unwrap_or(Value::Null);
        v["pinning"] = pin.describe().into();
    };
    outcome = merge(outcome, server_failed, extend);
    (outcome, code)
}
