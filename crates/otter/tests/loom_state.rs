//! Loom model of the process schedule state (`src/process/state.rs`): a wake-up that
//! races with a poll is never lost, and a process is queued at most once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_state`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::{State, TransitionToIdle, TransitionToScheduled};

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

/// The message sender's skip rule (`transition_to_scheduled_by_message`) against the
/// worker's look at the mailbox after a `Pending` poll in which a receive waited, made
/// while the process is still `RUNNING` (`Task::run`): the Dekker pair of
/// `src/process/state.rs`. The worker's side is mirrored here step by step.
#[test]
fn a_skipped_message_wake_is_caught_by_the_worker_before_it_lets_go() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        let waiting = Arc::new(AtomicBool::new(false));
        let mailbox = Arc::new(AtomicUsize::new(0));
        let pushed = Arc::new(AtomicUsize::new(0));
        let (s2, w2, m2, p2) = (
            state.clone(),
            waiting.clone(),
            mailbox.clone(),
            pushed.clone(),
        );
        let sender = thread::spawn(move || {
            m2.store(1, Ordering::Release);
            if s2.transition_to_scheduled_by_message(&w2) == TransitionToScheduled::Push {
                p2.fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut seen = 0;
        let mut polls = 0;
        loop {
            polls += 1;
            state.transition_to_running();
            waiting.store(false, Ordering::Relaxed);
            // The receive: takes the message if it is there, else marks itself waiting.
            seen = seen.max(mailbox.load(Ordering::Acquire));
            if seen == 0 {
                waiting.store(true, Ordering::Relaxed);
                // The worker, after the `Pending` poll, still owning the process.
                loom::sync::atomic::fence(Ordering::SeqCst);
                if mailbox.load(Ordering::Acquire) == 1 {
                    state.transition_to_rescheduled();
                    continue;
                }
            }
            match state.transition_to_idle() {
                TransitionToIdle::Reschedule => continue,
                TransitionToIdle::Idle => break,
            }
        }
        sender.join().unwrap();
        let pushed = pushed.load(Ordering::Relaxed);
        // Either a poll saw the message, or the sender queued the process (a later poll
        // will). A late wake-up after a poll already took the message is allowed: it
        // found the process idle, so the process was never in two queues at once.
        assert!(seen == 1 || pushed == 1, "message wake-up lost");
        assert!(pushed <= 1 && polls <= 3);
    });
}

#[test]
fn rescheduling_a_running_process_never_passes_through_idle() {
    // A waker racing with `transition_to_rescheduled` must not see the process idle
    // (it would queue it a second time).
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        state.transition_to_running();
        let s2 = state.clone();
        let waker = thread::spawn(move || s2.transition_to_scheduled());
        state.transition_to_rescheduled();
        assert_eq!(waker.join().unwrap(), TransitionToScheduled::Nothing);
    });
}

/// Two senders, and a `waiting` flag left set by an earlier poll: neither message's
/// wake-up is lost, and the process is never in two queues at once.
#[test]
fn two_senders_and_a_stale_waiting_flag_lose_no_wake() {
    loom::model(|| {
        let state = Arc::new(State::new_scheduled());
        let waiting = Arc::new(AtomicBool::new(true)); // stale, from an earlier poll
        let mailbox = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let senders: Vec<_> = (0..2)
            .map(|i| {
                let (s, w, m, q) = (
                    state.clone(),
                    waiting.clone(),
                    mailbox.clone(),
                    queued.clone(),
                );
                thread::spawn(move || {
                    m.fetch_or(1 << i, Ordering::Release);
                    if s.transition_to_scheduled_by_message(&w) == TransitionToScheduled::Push {
                        // At most one run queue at a time: nobody else holds it queued.
                        assert_eq!(q.fetch_add(1, Ordering::Relaxed), 0, "queued twice");
                    }
                })
            })
            .collect();
        // The worker polls while the process is queued (by the start or by a sender).
        let mut seen = 0;
        let mut queued_now = true;
        while queued_now {
            state.transition_to_running();
            waiting.store(false, Ordering::Relaxed);
            seen |= mailbox.load(Ordering::Acquire);
            queued_now = if seen == 3 {
                state.transition_to_idle() == TransitionToIdle::Reschedule
            } else {
                waiting.store(true, Ordering::Relaxed);
                loom::sync::atomic::fence(Ordering::SeqCst);
                if mailbox.load(Ordering::Relaxed) != seen {
                    state.transition_to_rescheduled();
                    true
                } else {
                    state.transition_to_idle() == TransitionToIdle::Reschedule
                }
            };
        }
        for s in senders {
            s.join().unwrap();
        }
        // Whatever the worker did not see, a sender queued the process for.
        let pushed = queued.load(Ordering::Relaxed);
        assert!(seen == 3 || pushed == 1, "a message wake-up was lost");
    });
}
