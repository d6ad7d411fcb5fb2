//! Reports: what OTP's SASL logs about servers and supervisors, as [`tracing`] events.
//!
//! Nothing is printed unless the program installs a `tracing` subscriber (for instance
//! `tracing_subscriber::fmt::init()`); with none, each report costs a look at
//! `tracing`'s global level. Every event has the fields below, and a message that says
//! what happened. The targets let a subscriber pick them (`RUST_LOG=otter::supervisor=info`):
//!
//! | target | level | when | fields |
//! |---|---|---|---|
//! | `otter::crash` | error | a server (or state machine, or supervisor) ends with a reason other than `normal`, `shutdown` or `{shutdown, _}`: OTP's `** Generic server .. terminating` | `pid`, `name` (if registered), `behaviour` (its Rust type), `reason`, `location` (a panic's `file:line:column`, else empty) |
//! | `otter::crash` | error | a process that is not a server panics: OTP's `Error in process .. with exit value` | `pid`, `reason`, `location` |
//! | `otter::crash` | error | a panic caught where no process ends with it (a message's or a future's `Drop`, a monitor's notification, a supervisor's start function) | `reason`, `location` |
//! | `otter::supervisor` | error | a child ends abnormally (`child_terminated`), a child fails to start or restart (`start_error`), a child stopped by its supervisor ends otherwise than its shutdown asked, killed when its time ran out or with another reason (`shutdown_error`), the restart intensity is reached and the supervisor shuts down (`shutdown`) | `supervisor`, `context`, `child_id` (not for `shutdown_error`), `pid`, `reason` |
//! | `otter::progress` | info | a supervisor started a child (OTP's progress report) | `supervisor`, `child_id`, `pid` |
//! | `otter::dist` | warn | the distribution dropped what it could not do: a message or a reply that does not encode (`send_failed`, `reply_failed`), a call from another node past the limit of calls in flight (`calls_dropped`), an `erpc` or `pg` request it could not serve (`erpc`, `pg`: once per kind and peer), a message to a visible node's `global_name_server` that is not `global`'s or names another node than its sender's, or a call it does not answer (`global`: once per kind and peer) | `context` |
//! | `otter::dist` | info, warn | a connection that was up goes down: info when either side closed it (the peer, `Node::disconnect`, a node's stop, a newer connection from the peer), warn when it was lost (the peer stopped ticking or reading, sent what the protocol does not allow, the socket failed): OTP's `** Node .. not responding **` | `node`, `peer`, `reason` ([`Closed`](crate::dist::Closed)) |
//! | `otter::dist` | warn | a node refused a connection a peer opened: its TLS handshake or its distribution handshake failed (a wrong cookie, a plain peer at a TLS node, a bad certificate): OTP's `** Connection attempt from node .. rejected`; once per peer and kind (TLS, handshake), 1,024 at most in a node's life | `node` (this node), `peer` (its node name, else its IP address), `reason` |
//!
//! "Abnormal" is OTP's: any reason but `normal`, `shutdown` and `{shutdown, _}`
//! ([`ExitReason::is_shutdown`]). A panic on a worker is printed by Rust's panic hook
//! only while no subscriber takes `otter::crash` events: with one, its report above is
//! its one line in the log (`unwind.rs`, "The panic hook").

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
        let location = site(reason);
        tracing::error!(
            target: "otter::crash",
            pid = %pid,
            name = name.unwrap_or(""),
            behaviour,
            reason = %reason,
            location = &*location,
            "server {pid} terminating: {reason}{}",
            at(&location),
        );
    }
}

/// Whether a subscriber takes crash reports: the panic hook then leaves the panic to
/// them (`unwind.rs`).
pub(crate) fn panics_reported() -> bool {
    tracing::enabled!(target: "otter::crash", tracing::Level::ERROR)
}

/// Where the panic that `reason` comes from happened, if it is one and the panic hook
/// saw it; empty otherwise.
fn site(reason: &ExitReason) -> Box<str> {
    match reason {
        ExitReason::Panic(m) => crate::unwind::take_panic_site(m).unwrap_or_default(),
        _ => Box::default(),
    }
}

/// " at LOCATION", or nothing.
fn at(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!(" at {location}")
    }
}

/// A process that is not a server panicked (`otter::crash`).
#[cold]
pub(crate) fn process_crashed(pid: ProcessId, reason: &ExitReason) {
    let location = site(reason);
    tracing::error!(
        target: "otter::crash",
        pid = %pid,
        reason = %reason,
        location = &*location,
        "process {pid} crashed: {reason}{}",
        at(&location),
    );
}

/// A panic caught where no process ends with it (`otter::crash`).
#[cold]
pub(crate) fn panic_caught(reason: &ExitReason) {
    let location = site(reason);
    tracing::error!(
        target: "otter::crash",
        reason = %reason,
        location = &*location,
        "caught in a drop or a notification: {reason}{}",
        at(&location),
    );
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

/// A child stopped by its supervisor ended otherwise than its shutdown asked
/// (`otter::supervisor`, OTP's `shutdown_error`).
pub(crate) fn shutdown_error(supervisor: ProcessId, pid: ProcessId, reason: &ExitReason) {
    tracing::error!(
        target: "otter::supervisor",
        supervisor = %supervisor,
        context = "shutdown_error",
        pid = %pid,
        reason = %reason,
        "supervisor {supervisor}: child {pid} did not shut down cleanly: {reason}",
    );
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

/// A node refused a connection a peer opened (`otter::dist`).
#[cfg(feature = "dist")]
pub(crate) fn connection_refused(node: &str, peer: &str, reason: &str) {
    tracing::warn!(
        target: "otter::dist",
        node,
        peer,
        reason,
        "{node} refused a connection from {peer}: {reason}",
    );
}

/// A connection that was up went down (`otter::dist`); `lost` if neither side closed
/// it.
#[cfg(feature = "dist")]
pub(crate) fn connection_down(node: &str, peer: &str, reason: &dyn std::fmt::Display, lost: bool) {
    if lost {
        tracing::warn!(
            target: "otter::dist",
            node,
            peer,
            reason = %reason,
            "{node} lost its connection to {peer}: {reason}",
        );
    } else {
        tracing::info!(
            target: "otter::dist",
            node,
            peer,
            reason = %reason,
            "{node}'s connection to {peer} closed: {reason}",
        );
    }
}

/// The distribution dropped something it could not do (`otter::dist`): `context` says
/// what (module docs' table).
#[cfg(feature = "dist")]
pub(crate) fn dist_fault(context: &'static str, message: &dyn std::fmt::Display) {
    tracing::warn!(target: "otter::dist", context, "{message}");
}
