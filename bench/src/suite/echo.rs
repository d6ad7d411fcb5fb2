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

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::Outcome;
use super::peer::{Peer, Pinning, merge};
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
    ]);
    let peer = match Peer::start(cmd, "the server", server, SERVER_START) {
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
        format!("size={}", get("size")),
        format!("seconds={}", get("seconds")),
        "threads=1".to_string(),
        format!("server_pid={pid}"),
    ];
    let (mut outcome, code) = pin.invoke(1, me, "echo-load", &load_args, timeout);

    // Closing stdin tells the server to exit.
    let server_line = peer.line.clone().ok();
    let server_failed = peer.finish(SERVER_EXIT);
    let extend = |v: &mut Value| {
        // The run is the case's (`echo`), measured by echo-load.
        v["bench"] = BENCH.into();
        v["server"] = server_line.clone().unwrap_or(Value::Null);
        v["pinning"] = pin.describe().into();
    };
    outcome = merge(outcome, server_failed, extend);
    (outcome, code)
}
