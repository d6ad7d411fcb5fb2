//! Exit signals, links and `trap_exit` (reference manual, "Processes": "Links",
//! "Sending Signals", "Receiving Exit Signals").
//!
//! # Rules mirrored from Erlang
//!
//! * A **link** is bidirectional and idempotent: `link` twice is one link, one `unlink`
//!   removes it, linking to oneself does nothing. When a process exits with reason `R`,
//!   every process linked to it gets an exit signal `R` from it and the link is gone.
//! * **`exit(pid, R)`** (Erlang's `exit/2`) sends an exit signal `R` to `pid` whether or
//!   not they are linked.
//! * On **receipt** of an exit signal `R` from `from`:
//!   - `R = Kill` sent by `exit` cannot be trapped: the receiver exits `Killed`. (A
//!     process that itself *exited* with reason `Kill` sends `Kill` through its links
//!     like any other reason: that one is trappable. Erlang's rule.)
//!   - if the receiver **traps exits**, the signal becomes the message
//!     [`Exit`]` { from, reason: R }` in its mailbox, after every message `from` sent it
//!     before (signals keep their order with the sender's messages);
//!   - otherwise `R = Normal` is ignored, except `exit(self, Normal)`, which ends the
//!     caller with `Normal`;
//!   - otherwise the receiver exits with reason `R` (Erlang: the receiver exits with the
//!     same reason, so a crash propagates along links unchanged).
//! * A link signal that arrives after `unlink` has returned is ignored (OTP 23's
//!   guarantee). A message `Exit` already in the mailbox stays there: flush it with
//!   [`Context::try_recv_match`](crate::Context::try_recv_match) as OTP code does.
//! * `link` to a process that does not exist (or is exiting) sends the caller the exit
//!   signal `Noproc` from that pid: trapping, it gets `Exit { from, reason: Noproc }`;
//!   otherwise it exits `Noproc` (Erlang's `link/1` raises `noproc` in the caller). As
//!   in Erlang the answer comes from the exiting process: it arrives after the `Down`s
//!   and exit signals that process sends the caller.
//! * `spawn_link` and `spawn_monitor` set the link or monitor before the child can run:
//!   the child's exit can never be missed or reported as `Noproc`.
//!
//! # How a process receives both its messages and system messages
//!
//! Mailboxes are typed, so a trapped exit is a message of the process's own type `M`:
//! [`Context::trap_exit`](crate::Context::trap_exit) requires `M: From<Exit>`, exactly as
//! monitors require `M: From<Down>`. The process decides in its message enum where
//! `Exit` and `Down` go, and receives them with the same `recv`, in the order they
//! arrived with the other messages. A process that does not trap exits never sees them.
//!
//! # When an exit takes effect
//!
//! A process is ended by a signal at its next suspension point: if it is waiting, at
//! once (the signal schedules it, and the worker runs its exit instead of polling it);
//! if it is running, when its current poll returns, or at the end of its budget if it
//! receives a stream that never runs dry (`Owner::budget_spent` checks for a pending
//! signal before it lets the turn start over in place). A process that computes for a long
//! time without awaiting is ended after that computation (the scheduler is cooperative;
//! Erlang preempts by reductions). Its exit then runs as usual: name released, `Down`s,
//! link signals with the reason, future dropped.
//!
//! # Cost
//!
//! Links, monitors and the trap flag live in one lazily boxed record per process
//! (`process/bonds.rs`, `Bonds`): a process that uses none of them carries one
//! empty mutex and pays one flag load at exit and one at each poll.

use crate::exit::ExitReason;
use crate::pid::ProcessId;

/// A trapped exit signal, as a message (Erlang's `{'EXIT', From, Reason}`).
///
/// ```
/// use otter::{Context, Exit, ExitReason, Runtime};
/// enum Msg { Exit(Exit) }
/// impl From<Exit> for Msg { fn from(e: Exit) -> Msg { Msg::Exit(e) } }
/// fn boom() { panic!("boom") }
/// let rt = Runtime::new();
/// let r = rt.block_on(|mut cx: Context<Msg>| async move {
///     cx.trap_exit(true);
///     let child = cx.spawn_link(|_: Context<()>| async { boom() });
///     let Msg::Exit(e) = cx.recv().await;
///     (e.from == child.id(), e.reason)
/// });
/// assert_eq!(r.unwrap(), (true, ExitReason::Panic("boom".into())));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The process the signal came from (the linked process that exited, or the caller
    /// of `exit`).
    pub from: ProcessId,
    /// The signal's reason.
    pub reason: ExitReason,
}

/// How an exit signal was sent (defined with the exit reasons, a leaf, so that
/// `remote.rs` need not import this module).
pub(crate) use crate::exit::SignalKind as Kind;

/// What the receiver of a signal does with it (the receipt rules of the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Nothing.
    Ignore,
    /// Put `Exit { from, reason }` in its mailbox.
    Message(ExitReason),
    /// Exit with this reason at the next suspension point.
    Terminate(ExitReason),
}

/// The receipt rule: what a signal `reason` of `kind` from `from` does to `to`.
pub(crate) fn effect(kind: Kind, reason: ExitReason, trapping: bool, from_self: bool) -> Effect {
    match reason {
        ExitReason::Kill if kind == Kind::Exit => Effect::Terminate(ExitReason::Killed),
        reason if trapping => Effect::Message(reason),
        ExitReason::Normal if kind == Kind::Exit && from_self => {
            Effect::Terminate(ExitReason::Normal)
        }
        ExitReason::Normal => Effect::Ignore,
        reason => Effect::Terminate(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipt_rules() {
        use ExitReason::*;
        let e = |k, r, trap, own| effect(k, r, trap, own);
        assert_eq!(e(Kind::Exit, Kill, true, false), Effect::Terminate(Killed));
        assert_eq!(e(Kind::Link, Kill, true, false), Effect::Message(Kill));
        assert_eq!(e(Kind::Link, Kill, false, false), Effect::Terminate(Kill));
        assert_eq!(e(Kind::Exit, Normal, false, false), Effect::Ignore);
        assert_eq!(
            e(Kind::Exit, Normal, false, true),
            Effect::Terminate(Normal)
        );
        assert_eq!(e(Kind::Exit, Normal, true, true), Effect::Message(Normal));
        assert_eq!(e(Kind::Link, Normal, false, false), Effect::Ignore);
        assert_eq!(
            e(Kind::Link, Shutdown, false, false),
            Effect::Terminate(Shutdown)
        );
        assert_eq!(e(Kind::Exit, Killed, true, false), Effect::Message(Killed));
    }
}
