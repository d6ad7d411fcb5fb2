//! The process's schedule state: one atomic word (ERTS keeps process state in one atomic
//! flag word for the same reason: every wake-up is a single read-modify-write).
//!
//! # Protocol
//!
//! * A waker (a sender, a timer, a foreign future's waker) calls
//!   [`State::transition_to_scheduled`] *after* making its event visible (pushing the
//!   message). Only the caller that moves the process from idle to scheduled pushes it
//!   onto a run queue, so a process is in at most one run queue at a time.
//! * The worker that pops the process calls [`State::transition_to_running`] *before*
//!   polling. The read-modify-write orders the poll after every event whose waker wrote
//!   the state (a message sender that skipped the write is covered by the rule below).
//! * After a poll that returned `Pending`, [`State::transition_to_idle`] clears
//!   `RUNNING`; if a wake-up arrived during the poll (`SCHEDULED` set while `RUNNING`),
//!   the worker must queue the process again. The worker touches nothing of the process
//!   after that: once idle, it may run, end and be freed on another worker.
//! * A process that finished is marked [`DONE`] by the worker that ran it; wake-ups of a
//!   done process do nothing.
//!
//! # Message wake-ups skip the read-modify-write when one is already pending
//!
//! A sender of a message uses [`State::transition_to_scheduled_by_message`]: if the
//! receiver is already scheduled (queued, or running with a wake-up pending) or done, it
//! does not write the state at all, so a stream of messages to a busy receiver costs
//! one state write per poll of the receiver, not one per message. The skip is a Dekker
//! pair with the poll that is still to come, and its event is the message's
//! *reservation*, the read-modify-write of the mailbox's `tail_index`
//! (`mailbox/queue.rs`, rules 1 and 4), not the message itself:
//!
//! * sender: reserve the slot, `SeqCst` fence, write the message and set `ready`, read
//!   the state; skip only if `SCHEDULED` or `DONE` is set;
//! * worker: `transition_to_running` (a `SeqCst` read-modify-write that clears
//!   `SCHEDULED`, then a `SeqCst` fence), then the poll's receive, which loads
//!   `tail_index` before it reports the mailbox empty.
//!
//! The `SCHEDULED` the sender read may be an old one or one set after an earlier
//! `transition_to_running`; either way the next `transition_to_running` that clears it
//! is still to come (a scheduled process is queued, a running one is requeued by
//! `transition_to_idle`, or else it is done and the message is dropped with it). The
//! sender read the state before that RMW, or its fence would have made the RMW, or a
//! later write, visible to it; so the sender's fence precedes the worker's in the
//! `SeqCst` order, and the poll's load of `tail_index` sees the reservation. The slot
//! may still be unwritten then, so the queue reports it `InFlight`, never empty, and a
//! receiver that meets it schedules itself and looks again (`Owner::pop` in
//! `process/owner.rs`); it meets one only in the few instructions between a sender's
//! reservation and its `ready` store, unless that sender's thread is preempted there.
//!
//! Both fences are `fence_after_rmw`: each follows a read-modify-write (the
//! reservation, the state's `xadd`), which is a locked instruction on x86-64 and already
//! a full barrier, so on x86-64 a message to a busy receiver costs no fence at all.
//!
//! A sender that finds the process running without a pending wake-up writes
//! `SCHEDULED`, and `transition_to_idle` then reports it: the process runs once more.
//! That extra poll finds nothing if the running poll already took the message; it is
//! the price of a rule with one fenced pair and nothing on the worker's path after the
//! poll (tokio's task state has the same shape: a `NOTIFIED` bit set while running).
//! Wake-ups that are not messages (timers, foreign futures) always write.
//!
//! History and figures: docs/design/0006-wake-up-event-is-the-reservation.md.
//!
//! Between `transition_to_running` and the next transition, the worker has exclusive
//! access to the process's future: that exclusivity is what `process/cell.rs` relies on.

#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use crate::loom::{AtomicUsize, Ordering, fence_after_rmw};

/// Set while the process is in a run queue, or will be put back in one when the poll
/// that is running now returns. Set by wakers, cleared by the worker that starts a poll.
/// It can be set when `RUNNING` is set (a wake-up during the poll), and is ignored once
/// `DONE` is set.
pub(crate) const SCHEDULED: usize = 1 << 0;

/// Set while a worker polls the process's future. Only that worker sets and clears it.
/// Never set together with `DONE`.
pub(crate) const RUNNING: usize = 1 << 1;

/// Set once the process has exited; never cleared. Set by the worker that ran the final
/// poll, or by the runtime's shutdown for a process that never got to finish.
pub(crate) const DONE: usize = 1 << 2;

/// The schedule state of one process. See the module docs.
#[derive(Debug)]
pub struct State(AtomicUsize);

/// The state's flags at one load ([`State::load`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub(crate) scheduled: bool,
    pub(crate) running: bool,
    pub(crate) done: bool,
}

/// What a waker must do after [`State::transition_to_scheduled`].
#[must_use]
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TransitionToScheduled {
    /// The process was idle: the caller must push it onto a run queue.
    Push,
    /// It was already queued, running (it will be queued again) or done.
    Nothing,
}

/// What the worker must do after [`State::transition_to_idle`].
#[must_use]
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TransitionToIdle {
    /// Nothing woke it during the poll: it waits.
    Idle,
    /// It was woken during the poll: the worker must queue it again.
    Reschedule,
}

impl State {
    /// A new process starts scheduled: its spawner pushes it onto a run queue.
    pub fn new_scheduled() -> State {
        State(AtomicUsize::new(SCHEDULED))
    }

    /// Marks the process scheduled. The `SeqCst` read-modify-write (a release) publishes
    /// the caller's event to the poll that follows; see the module docs.
    pub fn transition_to_scheduled(&self) -> TransitionToScheduled {
        let prev = self.0.fetch_or(SCHEDULED, Ordering::SeqCst);
        if prev & (SCHEDULED | RUNNING | DONE) == 0 {
            TransitionToScheduled::Push
        } else {
            TransitionToScheduled::Nothing
        }
    }

    /// Whether a message's wake-up would do nothing now
    /// ([`State::transition_to_scheduled_by_message`]'s first look, for a caller that
    /// takes the rest out of line).
    #[inline]
    pub fn is_wake_pending(&self) -> bool {
        self.0.load(Ordering::Relaxed) & (SCHEDULED | DONE) != 0
    }

    /// The message sender's wake-up (see the module docs): the caller has pushed a
    /// message into the process's mailbox (`Queue::push`, which fences after its
    /// reservation). Writes the state unless a wake-up is already pending or the
    /// process is done.
    #[inline]
    pub fn transition_to_scheduled_by_message(&self) -> TransitionToScheduled {
        const PENDING: usize = SCHEDULED | DONE;
        // The fence after the reservation is `push`'s (`mailbox/queue.rs`).
        if self.0.load(Ordering::Relaxed) & PENDING != 0 {
            return TransitionToScheduled::Nothing;
        }
        self.transition_to_scheduled()
    }

    /// Scheduled → running, by the worker that popped the process. One `xadd`: the state
    /// is exactly `SCHEDULED` here (a queued process is neither running nor done), and
    /// `SCHEDULED + 1 == RUNNING`.
    /// The fence after it is the worker's half of the message wake-up pair (module
    /// docs); on x86-64 the `xadd` already is that fence, and it costs nothing more.
    pub fn transition_to_running(&self) {
        let prev = self.0.fetch_add(RUNNING - SCHEDULED, Ordering::SeqCst);
        debug_assert_eq!(prev & (SCHEDULED | RUNNING | DONE), SCHEDULED);
        fence_after_rmw();
    }

    /// Running → idle after a `Pending` poll. One `xadd`.
    pub fn transition_to_idle(&self) -> TransitionToIdle {
        let prev = self.0.fetch_sub(RUNNING, Ordering::SeqCst);
        debug_assert!(prev & RUNNING != 0 && prev & DONE == 0);
        if prev & SCHEDULED != 0 {
            TransitionToIdle::Reschedule
        } else {
            TransitionToIdle::Idle
        }
    }

    /// Marks the process done; wake-ups from now on do nothing.
    pub(crate) fn transition_to_done(&self) {
        self.0.store(DONE, Ordering::Release);
    }

    /// The flags as they are now, for introspection (a `Relaxed` load: a reader that
    /// takes no part in the protocol).
    pub(crate) fn load(&self) -> Snapshot {
        let s = self.0.load(Ordering::Relaxed);
        Snapshot {
            scheduled: s & SCHEDULED != 0,
            running: s & RUNNING != 0,
            done: s & DONE != 0,
        }
    }

    /// Whether the process has been marked done.
    pub(crate) fn is_done(&self) -> bool {
        self.0.load(Ordering::Acquire) & DONE != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn message_wake_skips_only_a_pending_wake() {
        let s = State::new_scheduled();
        // Queued: the poll to come will see the message.
        assert_eq!(
            s.transition_to_scheduled_by_message(),
            TransitionToScheduled::Nothing
        );
        s.transition_to_running();
        // Running with nothing pending: the sender must write, and the poll's end
        // reports it.
        assert_eq!(
            s.transition_to_scheduled_by_message(),
            TransitionToScheduled::Nothing
        );
        assert_eq!(s.transition_to_idle(), TransitionToIdle::Reschedule);
        s.transition_to_running();
        assert_eq!(s.transition_to_idle(), TransitionToIdle::Idle);
        assert_eq!(
            s.transition_to_scheduled_by_message(),
            TransitionToScheduled::Push
        );
    }

    #[test]
    fn wake_while_running_reschedules_once() {
        let s = State::new_scheduled();
        s.transition_to_running();
        assert_eq!(s.transition_to_scheduled(), TransitionToScheduled::Nothing);
        assert_eq!(s.transition_to_scheduled(), TransitionToScheduled::Nothing);
        assert_eq!(s.transition_to_idle(), TransitionToIdle::Reschedule);
        s.transition_to_running();
        assert_eq!(s.transition_to_idle(), TransitionToIdle::Idle);
        assert_eq!(s.transition_to_scheduled(), TransitionToScheduled::Push);
        assert_eq!(s.transition_to_scheduled(), TransitionToScheduled::Nothing);
    }

    #[test]
    fn done_ignores_wakes() {
        let s = State::new_scheduled();
        s.transition_to_running();
        s.transition_to_done();
        assert_eq!(s.transition_to_scheduled(), TransitionToScheduled::Nothing);
        assert_eq!(
            s.transition_to_scheduled_by_message(),
            TransitionToScheduled::Nothing
        );
        assert!(s.is_done());
    }
}
