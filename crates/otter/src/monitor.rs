//! Monitors: one process watches another and gets a [`Down`] message when it exits
//! (Erlang's `monitor/2`, `demonitor/1,2`; reference manual, "Monitors").
//!
//! Rules mirrored: a monitor is unidirectional; monitoring a process that does not exist
//! (or has exited) gives `Down` with reason `Noproc` (at once, or, if its exit is under
//! way, after the exit signals it sends: it never overtakes them); several monitors of the
//! same process are independent, each with its own reference and its own `Down`; the
//! `Down` arrives after every message the monitored process sent to the watcher (it is
//! sent by the exiting process itself, on the same per-pair ordered path); after
//! `demonitor`, no `Down` for that reference arrives, and `demonitor_flush` also removes
//! one already delivered; a monitor belongs to the process that set it, and another
//! process's `demonitor` of its reference does nothing (returns false).
//!
//! Typed mailboxes: the watcher's message type `M` says how a `Down` becomes a message,
//! with `M: From<Down>`; [`DownMessage`] adds the way back, for `demonitor_flush`.
//!
//! # Protocol with the exit (in `process/cell.rs`)
//!
//! The monitored process's header holds its watchers in its bonds record, under a
//! small mutex. Its exit, in this order: (1) closes its exit gate (`process/gate.rs`) and
//! releases its name; (2) signals its links; (3) if the gate says bonds were announced,
//! takes the watchers under the lock and sends every `Down` while holding it; (4)
//! retires its pid. `monitor`, under the lock, announces the bond through the gate and
//! adds the watcher unless the gate is closed (then: `Noproc`, sent by the exit at its
//! step 3 if it has not passed it, at once otherwise: `process/bonds.rs`). The gate's
//! fenced Dekker pair makes either the exit see the announcement (and its lock orders it
//! after the addition) or `monitor` see the exit. A process nobody monitors or links
//! pays one fence and two loads at exit, no lock. `demonitor` removes the watcher under the lock; if it
//! is gone, or the pid no longer resolves (after step 3), its `Down` has already been
//! pushed into the watcher's mailbox, which is what `demonitor_flush` relies on.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Waker;

use crate::exit::ExitReason;
use crate::pid::RawPid;

/// Identifies one monitor (Erlang's monitor reference). Unique in the OS process.
///
/// A monitor belongs to the process that set it: only that process's
/// [`demonitor`](crate::Context::demonitor) stops it. Another process that is handed
/// the reference can compare it with a [`Down`]'s, not cancel it.
///
/// ```
/// use otter::{Context, Down, Runtime};
/// enum Msg { Down(Down) }
/// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
/// let rt = Runtime::new();
/// let r = rt.block_on(|mut cx: Context<Msg>| async move {
///     let child = cx.spawn(|_: Context<()>| async {});
///     let mref = cx.monitor(child);
///     let Msg::Down(d) = cx.recv().await;
///     (d.reference == mref, d.pid == child.id())
/// });
/// assert_eq!(r.unwrap(), (true, true));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MonitorRef {
    pub(crate) id: u64,
    pub(crate) target: RawPid,
    /// The watcher: the process that set the monitor and alone may stop it (`None`
    /// for the monitor of a call, which no process's `demonitor` ever gets).
    pub(crate) owner: Option<RawPid>,
}

impl fmt::Debug for MonitorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#Ref<0.{}>", self.id)
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl MonitorRef {
    /// A new monitor of `target`, set by `owner`.
    pub(crate) fn new(target: RawPid, owner: Option<RawPid>) -> MonitorRef {
        MonitorRef {
            id: next_id(),
            target,
            owner,
        }
    }
}

/// The message a watcher gets when a monitored process exits (Erlang's
/// `{'DOWN', Ref, process, Pid, Reason}`).
///
/// ```
/// use otter::{Context, Down, ExitReason, Runtime};
/// enum Msg { Down(Down) }
/// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
/// let rt = Runtime::new();
/// let r = rt.block_on(|mut cx: Context<Msg>| async move {
///     let gone = cx.spawn(|_: Context<()>| async {});
///     while !gone.has_exited() { cx.yield_now().await; }
///     cx.monitor(gone);
///     let Msg::Down(d) = cx.recv().await;
///     d.reason
/// });
/// assert_eq!(r.unwrap(), ExitReason::Noproc);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The monitor that fired.
    pub reference: MonitorRef,
    /// The process that exited.
    pub pid: crate::ProcessId,
    /// Why it exited; `Noproc` if it did not exist when the monitor was set.
    pub reason: ExitReason,
}

/// A message type that can carry a [`Down`] and give it back, for
/// [`Context::demonitor_flush`](crate::Context::demonitor_flush).
///
/// ```
/// use otter::{Down, DownMessage};
/// enum Msg { Work(u32), Down(Down) }
/// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
/// impl DownMessage for Msg {
///     fn as_down(&self) -> Option<&Down> {
///         match self { Msg::Down(d) => Some(d), _ => None }
///     }
/// }
/// ```
pub trait DownMessage: From<Down> {
    /// The `Down` this message carries, if it is one.
    fn as_down(&self) -> Option<&Down>;
}

/// A watcher recorded in the monitored process's header.
pub(crate) struct Watcher {
    pub(crate) id: u64,
    /// The process that set the monitor (see [`MonitorRef`]'s `owner`).
    pub(crate) owner: Option<RawPid>,
    /// What the `Down` does.
    pub(crate) notify: Notify,
}

/// How a watcher delivers its `Down`; either may hand back a waker, which the exit
/// wakes after releasing its lock.
pub(crate) enum Notify {
    /// A closure: a message built by `Context::monitor`.
    Message(Box<dyn FnOnce(Down) -> Option<Waker> + Send>),
    /// A call's reply slot (`server/reply.rs`), shared with the caller: no allocation
    /// beyond the slot's own.
    Call(Arc<dyn CallWatch>),
}

/// The side of a reply slot that its server's exit needs.
pub(crate) trait CallWatch: Send + Sync {
    /// The server exited with `reason` (`Noproc`: it did not exist): end the call that
    /// waits on the slot, if any, and mark the slot as no longer watching.
    fn server_exited(&self, reason: ExitReason) -> Option<Waker>;

    /// The process waiting for a reply through the slot now, if a process waits
    /// (introspection's view of who calls whom; racy, exact at its reads).
    fn waiting_caller(&self) -> Option<crate::pid::RawPid>;
}

/// A fresh monitor id (unique in the OS process).
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Watcher {
    /// The reference of this monitor of `target` (for the `Down` the exit sends).
    pub(crate) fn reference(&self, target: RawPid) -> MonitorRef {
        MonitorRef {
            id: self.id,
            target,
            owner: self.owner,
        }
    }

    /// Delivers `down`; hands back a waker to wake once no lock is held.
    pub(crate) fn notify(self, down: Down) -> Option<Waker> {
        match self.notify {
            Notify::Message(f) => f(down),
            Notify::Call(slot) => slot.server_exited(down.reason),
        }
    }
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
