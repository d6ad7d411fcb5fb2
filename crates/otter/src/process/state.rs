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
//!   the worker must queue the process again. Or, when the rule below finds a message,
//!   [`State::transition_to_rescheduled`] moves it straight back to scheduled.
//! * A process that finished is marked [`DONE`] by the worker that ran it; wake-ups of a
//!   done process do nothing.
//!
//! # Message wake-ups skip the read-modify-write when they can
//!
//! A sender of a message uses [`State::transition_to_scheduled_by_message`]: if the
//! receiver is already scheduled, or running and not yet waiting in a receive, it does
//! not write the state at all, so a stream of messages to a busy receiver does not
//! bounce the state's cache line between cores. The process's `waiting` flag (set by a
//! receive that found nothing, cleared before each poll) makes that safe, by a Dekker
//! pair:
//!
//! * sender: push the message, `SeqCst` fence, read the state and `waiting`; skip only
//!   if the process is scheduled or done, or running with `waiting` clear;
//! * worker, after a `Pending` poll in which a receive set `waiting`, *while the
//!   process is still `RUNNING`*: `SeqCst` fence, look at the mailbox; if a message
//!   is there, [`State::transition_to_rescheduled`] and queue the process again, else
//!   `transition_to_idle`.
//!
//! Either the sender sees `waiting` set, and writes `SCHEDULED` (which the worker's
//! `transition_to_idle` then reports, or which finds the process idle and queues it),
//! or the worker's look sees the message. A sender that skipped because the process was
//! scheduled read the state before the next poll's `transition_to_running`; if that
//! poll's receive misses the message, it sets `waiting`, and the worker's fence and the
//! sender's are ordered one way or the other: the sender's first means the look sees
//! the message, the worker's first would have shown the sender `RUNNING`, not
//! `SCHEDULED`. Stale reads only cost work: a `waiting` left set from an earlier poll
//! makes a sender write the state needlessly, and the look reports a position reserved
//! but not yet written (`Queue::may_have_message`), which costs a poll that finds
//! nothing and looks again. The look happens before the process is
//! released: once it is idle another worker may run it, consume its mailbox, even end
//! it and free it, so the worker touches nothing of it after `transition_to_idle`.
//! Wake-ups that are not messages (timers, foreign futures) always write.
//!
//! Between `transition_to_running` and the next transition, the worker has exclusive
//! access to the process's future: that exclusivity is what `process/cell.rs` relies on.

#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use crate::loom::{AtomicBool, AtomicUsize, Ordering, full_fence};

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

    /// Marks the process scheduled. `Release` publishes the caller's event to the poll
    /// that follows; see the module docs.
    pub fn transition_to_scheduled(&self) -> TransitionToScheduled {
        let prev = self.0.fetch_or(SCHEDULED, Ordering::SeqCst);
        if prev & (SCHEDULED | RUNNING | DONE) == 0 {
            TransitionToScheduled::Push
        } else {
            TransitionToScheduled::Nothing
        }
    }

    /// The message sender's wake-up (see the module docs): the caller has pushed a
    /// message. Writes the state only if the process is idle, or running and `waiting`
    /// in a receive.
    #[inline]
    pub fn transition_to_scheduled_by_message(
        &self,
        waiting: &AtomicBool,
    ) -> TransitionToScheduled {
        const BUSY: usize = SCHEDULED | RUNNING | DONE;
        if self.0.load(Ordering::Relaxed) & BUSY != 0 {
            full_fence();
            let s = self.0.load(Ordering::Relaxed);
            if s & (SCHEDULED | DONE) != 0 || (s & RUNNING != 0 && !waiting.load(Ordering::Relaxed))
            {
                return TransitionToScheduled::Nothing;
            }
        }
        self.transition_to_scheduled()
    }

    /// Scheduled → running, by the worker that popped the process. One `xadd`: the state
    /// is exactly `SCHEDULED` here (a queued process is neither running nor done), and
    /// `SCHEDULED + 1 == RUNNING`.
    pub fn transition_to_running(&self) {
        let prev = self.0.fetch_add(RUNNING - SCHEDULED, Ordering::SeqCst);
        debug_assert_eq!(prev & (SCHEDULED | RUNNING | DONE), SCHEDULED);
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

    /// Running → scheduled, by the worker that polled the process and found a message
    /// after a receive waited (module docs): the caller must queue it again. One RMW; a
    /// `SCHEDULED` set by a waker during the poll is simply kept.
    pub fn transition_to_rescheduled(&self) {
        // One CAS, never passing through idle: a waker that saw idle would queue the
        // process too.
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            debug_assert!(cur & RUNNING != 0 && cur & DONE == 0);
            let new = (cur & !RUNNING) | SCHEDULED;
            match self
                .0
                .compare_exchange_weak(cur, new, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(c) => cur = c,
            }
        }
    }

    /// Marks the process done; wake-ups from now on do nothing.
    pub(crate) fn transition_to_done(&self) {
        self.0.store(DONE, Ordering::Release);
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
        assert!(s.is_done());
    }
}
