//! Reports: what OTP's SASL logs about servers and supervisors, as [`tracing`] events.
//!
//! Nothing is printed unless the program installs a `tracing` subscriber (for instance
//! `tracing_subscriber::fmt::init()`); with none, each report costs a look at
//! `tracing`'s global level. Every event has the fields below, and a message that says
//! what happened. The targets let a subscriber pick them (`RUST_LOG=otter::supervisor=info`):
//!
//! | target | level | when | fields |
//! |---|---|---|---|
//! | `otter::crash` | error | a server (or state machine, or supervisor) ends with a reason other than `normal`, `shutdown` or `{shutdown, _}`: OTP's `** Generic server .. terminating` | `pid`, `name` (if registered), `behaviour` (its Rust type), `reason` |
//! | `otter::supervisor` | error | a child ends abnormally (`child_terminated`), a child fails to start or restart (`start_error`), the restart intensity is reached and the supervisor shuts down (`shutdown`) | `supervisor`, `context`, `child_id`, `pid`, `reason` |
//! | `otter::progress` | info | a supervisor started a child (OTP's progress report) | `supervisor`, `child_id`, `pid` |
//!
//! "Abnormal" is OTP's: any reason but `normal`, `shutdown` and `{shutdown, _}`
//! ([`ExitReason::is_shutdown`]). A panic still goes through Rust's panic hook too
//! (which prints it, unless the program installs its own: the crate docs' "Processes").

use crate::exit::ExitReason;
use crate::pid::ProcessId;

/// Whether OTP logs an exit with this reason (anything but normal and shutdown).
fn is_abnormal(reason: &ExitReason) -> bool {
    !reason.is_normal() && !reason.is_shutdown()
}

/// A server ends (`otter::crash`, only for an abnormal reason).
pub(crate) fn server_terminating(
    pid: ProcessId,
    name: Option<&str>,
    behaviour: &'static str,
    reason: &ExitReason,
) {
    if is_abnormal(reason) {
        tracing::error!(
            target: "otter::crash",
            pid = %pid,
            name = name.unwrap_or(""),
            behaviour,
            reason = %reason,
            "server {pid} terminating: {reason}",
        );
    }
}

/// A supervisor's child ended (`otter::supervisor`, only for an abnormal reason).
pub(crate) fn child_terminated(
    supervisor: ProcessId,
    child_id: &str,
    pid: ProcessId,
    reason: &ExitReason,
) {
    if is_abnormal(reason) {
        tracing::error!(
            target: "otter::supervisor",
            supervisor = %supervisor,
            context = "child_terminated",
            child_id,
            pid = %pid,
            reason = %reason,
            "supervisor {supervisor}: child {child_id} ({pid}) terminated: {reason}",
        );
    }
}

/// A supervisor's child failed to start or restart (`otter::supervisor`).
pub(crate) fn start_error(supervisor: ProcessId, child_id: &str, reason: &ExitReason) {
    tracing::error!(
        target: "otter::supervisor",
        supervisor = %supervisor,
        context = "start_error",
        child_id,
        reason = %reason,
        "supervisor {supervisor}: child {child_id} failed to start: {reason}",
    );
}

/// A supervisor reached its restart intensity and shuts down (`otter::supervisor`).
pub(crate) fn intensity_reached(supervisor: ProcessId, child_id: &str, intensity: u32) {
    tracing::error!(
        target: "otter::supervisor",
        supervisor = %supervisor,
        context = "shutdown",
        child_id,
        reason = "reached_max_restart_intensity",
        intensity,
        "supervisor {supervisor}: more than {intensity} restarts in its period \
         (the last of child {child_id}): shutting down",
    );
}

/// A supervisor started a child (`otter::progress`).
pub(crate) fn child_started(supervisor: ProcessId, child_id: &str, pid: ProcessId) {
    tracing::info!(
        target: "otter::progress",
        supervisor = %supervisor,
        child_id,
        pid = %pid,
        "supervisor {supervisor}: started child {child_id} ({pid})",
    );
}
