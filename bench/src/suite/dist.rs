//! One run of a `dist` case (WORKLOADS.md "dist"): an echo node and a client, two programs.
//!
//! The case's implementation is the client's; its `echo=` says whose echo node it meets, so
//! the four pairs are `otter-otter`, `erlang-otter` (client first), `otter-erlang` and
//! `erlang-erlang`.
//!
//! 1. epmd must answer on 127.0.0.1:4369 (`ERL_EPMD_PORT`): `epmd -daemon` is started if not,
//!    and waited for.
//! 2. The echo node (`otter-bench dist-echo` or `erlang-reference/bench dist-echo`, with
//!    `name=dist_echo_<suite pid>_<n> cookie=otterbench threads=1`), on core 0 (`taskset -c
//!    0`) with its stdin a pipe; its first line on stdout (`"ready":true`) gives the node.
//! 3. The client, `dist-pingpong peer=NODE r=R size=S cookie=otterbench threads=1`, on core 1,
//!    through `invoke` like any run.
//! 4. The echo node's stdin is closed; it must exit 0 within [`ECHO_EXIT`], or its process
//!    group is killed and the run fails.
//!
//! The client's line is the run's, its `bench` the case's (`dist`), with `pair`, `echo` (the
//! echo node's line) and `pinning` added. Without Erlang, the cases that need it on either
//! side are skipped.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Outcome;
use super::cases::Impl;
use super::peer::{Peer, Pinning, merge};
use crate::workloads::dist::COOKIE;

/// The case's bench name.
pub(crate) const BENCH: &str = "dist";
/// How long an echo node has to print its line, and to exit once its stdin is closed.
const ECHO_START: Duration = Duration::from_secs(60);
const ECHO_EXIT: Duration = Duration::from_secs(20);
/// How long epmd has to answer once started.
const EPMD_START: Duration = Duration::from_secs(10);

/// The pair's name: the client's implementation, then the echo node's.
pub(crate) fn pair(client: Impl, echo: &str) -> String {
    format!("{}-{echo}", client.name())
}

/// Runs one dist case: `client` (otter-bench or the Erlang twin, per `imp`) against an echo
/// node of `args`' `echo=` (`me` for otter, `erlang` for Erlang). `args`: the case's `r=`,
/// `size=`, `echo=`.
pub(super) fn run(
    client: &Path,
    imp: Impl,
    me: &Path,
    erlang: Option<&Path>,
    args: &[(&'static str, String)],
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let get = |k: &str| {
        args.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let echo_impl = get("echo");
    let echo_program = match (echo_impl.as_str(), erlang) {
        ("erlang", Some(e)) => e,
        ("erlang", None) => {
            return (
                Outcome::Skipped("the Erlang echo node needs Erlang".into()),
                None,
            );
        }
        _ => me,
    };
    if let Err(why) = ensure_epmd() {
        return (Outcome::Error(why), None);
    }
    let pin = Pinning::of_this_machine();

    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "dist_echo_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut cmd = pin.command(0, echo_program);
    cmd.args([
        "dist-echo",
        &format!("name={name}"),
        &format!("cookie={COOKIE}"),
        "threads=1",
    ]);
    let peer = match Peer::start(cmd, "the echo node", echo_program, ECHO_START) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let node = peer
        .line
        .as_ref()
        .ok()
        .filter(|v| v["ready"] == true)
        .and_then(|v| v["node"].as_str())
        .map(str::to_string);
    let Some(node) = node else {
        return peer.failed("its line has no node or is not ready");
    };

    let client_args = [
        format!("peer={node}"),
        format!("r={}", get("r")),
        format!("size={}", get("size")),
        format!("cookie={COOKIE}"),
        "threads=1".to_string(),
    ];
    let (mut outcome, code) = pin.invoke(1, client, "dist-pingpong", &client_args, timeout);

    // Closing stdin tells the echo node to exit.
    let echo_line = peer.line.clone().ok();
    let echo_failed = peer.finish(ECHO_EXIT);
    let pinning = match pin {
        Pinning::Cores => "echo node on core 0, client on core 1 (taskset)",
        other => other.describe(),
    };
    let extend = |v: &mut Value| {
        // The run is the case's (`dist`), measured by the client.
        v["bench"] = BENCH.into();
        v["pair"] = pair(imp, &echo_impl).into();
        v["echo"] = echo_line.clone().unwrap_or(Value::Null);
        v["pinning"] = pinning.into();
    };
    outcome = merge(outcome, echo_failed, extend);
    (outcome, code)
}

/// epmd's port: `ERL_EPMD_PORT` or 4369.
fn epmd_port() -> u16 {
    std::env::var("ERL_EPMD_PORT")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(4369)
}

/// Starts `epmd -daemon` if nothing answers on epmd's port, and waits until it answers.
fn ensure_epmd() -> Result<(), String> {
    let port = epmd_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let up = || TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok();
    if up() {
        return Ok(());
    }
    let status = Command::new("epmd")
        .args(["-daemon", "-port", &port.to_string()])
        .status()
        .map_err(|e| format!("epmd is not running and `epmd -daemon` cannot run: {e}"))?;
    if !status.success() {
        return Err(format!("`epmd -daemon` failed: {status}"));
    }
    let t0 = Instant::now();
    while !up() {
        if t0.elapsed() > EPMD_START {
            return Err(format!(
                "epmd does not answer on {addr} {EPMD_START:?} after `epmd -daemon`"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
