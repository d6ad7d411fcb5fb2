//! Loom model of the process schedule state (`src/process/state.rs`): a wake-up that
//! races with a poll is never lost, and a process is queued at most once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_state`.
#![cfg(loom)]
// The model drives the mailbox queue's `unsafe` single-consumer API directly.
#![allow(unsafe_code)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::{Queue, State, TransitionToIdle, TransitionToScheduled, TryPopError};

#[test]
fn a_wake_during_or_after_a_poll_is_not_lost() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        let mailbox = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let (s2, m2, q2) = (state.clone(), mailbox.clone(), queued.clone());
        // The sender: publish the message, then wake.
        let sender = thread::spawn(move || {
            m2.store(1, Ordering::Release);
            if s2.transition_to_scheduled() == TransitionToScheduled::Push {
                q2.fetch_add(1, Ordering::Relaxed);
            }
        });
        // The worker: run the (initially queued) process until it waits.
        let mut seen = 0;
        loop {
            state.transition_to_running();
            seen = seen.max(mailbox.load(Ordering::Acquire));
            match state.transition_to_idle() {
                TransitionToIdle::Idle => break,
                TransitionToIdle::Reschedule => continue,
            }
        }
        sender.join().unwrap();
        let pushed = queued.load(Ordering::Relaxed);
        // Either the worker saw the message, or the sender queued the process again
        // (so a later poll will see it). Never both a push and a reschedule.
        assert!(seen == 1 || pushed == 1, "wake-up lost");
        assert!(pushed <= 1);
    });
}

#[test]
fn two_wakers_queue_the_process_once() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        state.transition_to_running();
        let _ = state.transition_to_idle();
        let pushes = Arc::new(AtomicUsize::new(0));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (s, p) = (state.clone(), pushes.clone());
                thread::spawn(move || {
                    if s.transition_to_scheduled() == TransitionToScheduled::Push {
                        p.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(pushes.load(Ordering::Relaxed), 1);
    });
}

/// What one poll of the modelled process does with its mailbox: takes the message if it
/// is there, and schedules itself again if it is reserved but not yet written, as
/// `Owner::pop` does (`src/process/cell.rs`). Returns the message bits it took.
fn poll_mailbox(state: &State, mailbox: &Queue<u32>) -> u32 {
    let mut seen = 0;
    loop {
        // SAFETY: the modelled worker is the queue's only consumer.
        match unsafe { mailbox.pop() } {
            Ok(m) => seen |= m,
            Err(TryPopError::Empty) => return seen,
            Err(TryPopError::InFlight) => {
                let _ = state.transition_to_scheduled();
                return seen;
            }
        }
    }
}

/// The message sender's skip rule (`transition_to_scheduled_by_message`) against a
/// poll: the Dekker pair of `src/process/state.rs`, whose event is the reservation in
/// the real mailbox queue. The worker runs the process until it goes idle; each poll
/// takes what the mailbox has.
#[test]
fn a_message_wake_is_skipped_only_when_a_poll_is_still_to_come() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        let mailbox = Arc::new(Queue::new());
        let pushed = Arc::new(AtomicUsize::new(0));
        let (s2, m2, p2) = (state.clone(), mailbox.clone(), pushed.clone());
        let sender = thread::spawn(move || {
            m2.push(1);
            if s2.transition_to_scheduled_by_message() == TransitionToScheduled::Push {
                p2.fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut seen = 0;
        loop {
            state.transition_to_running();
            seen |= poll_mailbox(&state, &mailbox);
            match state.transition_to_idle() {
                // Looking again, maybe at a message in flight: let its sender run.
                TransitionToIdle::Reschedule => thread::yield_now(),
                TransitionToIdle::Idle => break,
            }
        }
        sender.join().unwrap();
        let pushed = pushed.load(Ordering::Relaxed);
        // Either a poll saw the message, or the sender queued the process (a later poll
        // will). A late wake-up after a poll already took the message is allowed: it
        // found the process idle, so the process was never in two queues at once.
        assert!(seen == 1 || pushed == 1, "message wake-up lost");
        assert!(pushed <= 1);
    });
}

/// Two senders, one of which may skip because the other's wake-up is pending: neither
/// message's wake-up is lost, and the process is never in two queues at once.
#[test]
fn two_senders_lose_no_message_wake() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        // The process has run once and waits (idle), so both senders race to wake it.
        state.transition_to_running();
        let _ = state.transition_to_idle();
        let mailbox = Arc::new(Queue::new());
        let queued = Arc::new(AtomicBool::new(false));
        let senders: Vec<_> = (0..2)
            .map(|i| {
                let (s, m, q) = (state.clone(), mailbox.clone(), queued.clone());
                thread::spawn(move || {
                    m.push(1 << i);
                    if s.transition_to_scheduled_by_message() == TransitionToScheduled::Push {
                        // At most one run queue at a time: nobody else holds it queued.
                        assert!(!q.swap(true, Ordering::AcqRel), "queued twice");
                    }
                })
            })
            .collect();
        // The worker: whenever the process is queued, it runs it until it goes idle.
        let mut seen = 0;
        for _ in 0..4 {
            if !queued.swap(false, Ordering::AcqRel) {
                thread::yield_now();
                continue;
            }
            loop {
                state.transition_to_running();
                seen |= poll_mailbox(&state, &mailbox);
                if state.transition_to_idle() == TransitionToIdle::Idle {
                    break;
                }
                thread::yield_now();
            }
        }
        for s in senders {
            s.join().unwrap();
        }
        // Whatever the worker did not see, the process is queued for.
        assert!(
            seen == 3 || queued.load(Ordering::Acquire),
            "a message wake-up was lost"
        );
    });
}
