//! The core's one door to other nodes: what the process core does with a pid of
//! another node.
//!
//! A pid is remote when the top bit of its index is set (`pid.rs`'s `REMOTE_BIT`; the
//! process table's indices stay below it, `process/table.rs`). The core (sends, links,
//! monitors, exit signals, a pid's `Debug`) tests that bit and hands the operation to
//! the [`Distribution`] installed here; it names no module of the distribution and has
//! no `cfg` for it. The distribution (`dist/route.rs`) installs itself when the first
//! node starts, once for the program (remote pids are a process-wide table,
//! `dist/remote.rs`).
//!
//! # Invariants
//!
//! * A remote pid exists only once a distribution is installed: only the distribution
//!   makes them. So a core path that finds the bit set and nothing installed (which
//!   cannot happen) treats the pid as one that does not resolve, as a local pid of an
//!   exited process: a send hands the message back, a monitor gets `Noproc`.
//! * Installed once, never removed: a `&'static` the core may keep.
//! * The local paths pay one bit test, which the send path's miss branch and the bond
//!   operations made before this module too.

use std::any::Any;
use std::fmt;
use std::sync::OnceLock;

use crate::exit::ExitReason;
use crate::exit::SignalKind as Kind;
use crate::monitor::Watcher;
use crate::pid::RawPid;

/// What the core asks of the distribution about a remote pid. Each method has the
/// contract of the local operation it stands in for, named in its doc.
pub(crate) trait Distribution: Send + Sync {
    /// Whether `pid`'s node is connected (`Pid::is_alive` of a remote pid).
    fn is_connected(&self, pid: RawPid) -> bool;

    /// Sends `message` (the `Pid<M>`'s `M`, which the distribution encodes by its type)
    /// to `to`, as `busy` says when its node's connection is busy
    /// (`dist/connection.rs`, "Limits"). [`RemoteSend::Refused`] if it could not go
    /// (no encoder for its type, no such pid, a message that cannot be a term): the
    /// caller hands it back, as a send to an exited process does (`process/send.rs`).
    /// By reference: the caller keeps the message, so a remote send allocates nothing
    /// here.
    fn send(&self, to: RawPid, message: &dyn Any, busy: Busy<'_>) -> RemoteSend;

    /// Adds `watcher` to `target` (`process/bonds.rs`, `add_watcher`): the `Down` comes
    /// from the distribution, `Noconnection` or `Noproc` included.
    fn monitor(&self, target: RawPid, watcher: Watcher);

    /// Removes watcher `id` from `target`; false if its `Down` was delivered.
    fn demonitor(&self, target: RawPid, id: u64) -> bool;

    /// Whether watcher `id` is still on `target` (`process/bonds.rs`, `watching`): its
    /// `Down` not yet delivered, nor the monitor removed.
    fn watching(&self, target: RawPid, id: u64) -> bool;

    /// Records the link on `to`'s node; `Err` with the reason the link's signal gives
    /// at once if it cannot (the node unreachable).
    fn link(&self, from: RawPid, to: RawPid) -> Result<(), ExitReason>;

    /// Removes `to`'s side of the link on its node.
    fn unlink(&self, from: RawPid, to: RawPid);

    /// Sends the exit signal `reason` of `kind` from `from` to `to`.
    fn exit_signal(&self, to: RawPid, from: RawPid, reason: ExitReason, kind: Kind);

    /// Writes `pid` as Erlang shows it (`<Node.Id.Serial>`).
    fn fmt_pid(&self, pid: RawPid, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// What a remote send does when the connection to the pid's node is busy.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "dist"), allow(dead_code))] // Read by the distribution only.
pub(crate) enum Busy<'a> {
    /// Queue the message anyway (a plain send: up to the hard limit).
    Queue,
    /// Refuse it ([`RemoteSend::Busy`]): `try_send`, Erlang's `nosuspend`.
    Refuse,
    /// Refuse it, and wake this waker once the connection is not busy: the steps of
    /// the wait, whose protocol `dist/connection.rs` states ("Busy").
    Wait(&'a std::task::Waker),
}

/// What [`Distribution::send`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "dist"), allow(dead_code))] // Made by the distribution only.
pub(crate) enum RemoteSend {
    /// Queued on the connection.
    Sent,
    /// Not sent: the connection is busy (`Busy::Refuse`, `Busy::Wait`).
    Busy,
    /// Not sent and never will be: as a send to an exited process.
    Refused,
}

static INSTALLED: OnceLock<&'static dyn Distribution> = OnceLock::new();

/// Installs the distribution (the first call wins; later ones are the same one), and
/// with it how a remote pid writes itself (`pid.rs` stays a leaf).
#[allow(dead_code)] // Without the `dist` feature, nothing installs one.
pub(crate) fn install(d: &'static dyn Distribution) {
    let _ = INSTALLED.set(d);
    crate::pid::set_remote_fmt(|pid, f| match INSTALLED.get() {
        Some(d) => d.fmt_pid(pid, f),
        None => write!(f, "<remote.{}.{}>", pid.index, pid.generation),
    });
}

/// The distribution, if `pid` is remote and one is installed.
#[inline]
pub(crate) fn of(pid: RawPid) -> Option<&'static dyn Distribution> {
    if !pid.is_remote() {
        return None;
    }
    INSTALLED.get().copied()
}
