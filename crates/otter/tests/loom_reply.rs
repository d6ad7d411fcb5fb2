//! Loom models of a call's outcome cell (`server/reply/outcome.rs`): whoever answers a
//! call (the reply, the server's exit, the timeout) and the caller that ends it hand
//! each outcome over once, wake the waker the caller last gave, and the server's exit
//! never misses a call that starts as it exits.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_reply`.
#![cfg(loom)]

use std::sync::Arc;
use std::task::{Wake, Waker};

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use loom::thread;
use otter::__loom::{Answer, OutcomeCell};

struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

fn woken(c: &Count) -> usize {
    c.0.load(Ordering::SeqCst)
}

#[test]
fn a_reply_racing_the_callers_timeout_is_taken_or_dropped_never_both() {
    loom::model(|| {
        let (count, waker) = counter();
        let cell = Arc::new(OutcomeCell::waiting(1, Some(waker)));
        let c = cell.clone();
        let replier = thread::spawn(move || match c.fill(Answer::Current, 42u32) {
            Ok(w) => {
                w.expect("the caller's waker").wake();
                true
            }
            Err(_) => false,
        });
        // The caller's timeout: it ends the call whatever it finds.
        let value = cell.take(1);
        let stored = replier.join().unwrap();
        assert_eq!(value, stored.then_some(42));
        assert_eq!(woken(&count), usize::from(stored));
        // The cell is idle: no later filler of the call wins.
        assert!(cell.fill(Answer::Tag(1), 7).is_err());
    });
}

#[test]
fn of_a_reply_and_the_servers_exit_one_outcome_wins() {
    loom::model(|| {
        let (count, waker) = counter();
        let cell = Arc::new(OutcomeCell::waiting(5, Some(waker)));
        let fillers: Vec<_> = [(Answer::Current, "reply"), (Answer::Tag(5), "exit")]
            .into_iter()
            .map(|(answer, what)| {
                let c = cell.clone();
                thread::spawn(move || match c.fill(answer, what) {
                    Ok(w) => {
                        w.expect("the caller's waker").wake();
                        Some(what)
                    }
                    Err(_) => None,
                })
            })
            .collect();
        let won: Vec<_> = fillers
            .into_iter()
            .filter_map(|f| f.join().unwrap())
            .collect();
        assert_eq!(won.len(), 1);
        assert_eq!(woken(&count), 1);
        assert_eq!(cell.take(5), Some(won[0]));
    });
}

#[test]
fn the_waker_woken_is_the_one_the_caller_gave_last() {
    loom::model(|| {
        let (first, w1) = counter();
        let (second, w2) = counter();
        let cell = Arc::new(OutcomeCell::waiting(2, Some(w1)));
        let c = cell.clone();
        let replier = thread::spawn(move || {
            if let Ok(Some(w)) = c.fill(Answer::Current, 1u8) {
                w.wake();
            }
        });
        // A poll with another waker (a future polled by another executor).
        let registered = cell.register(2, &w2);
        replier.join().unwrap();
        if registered {
            assert_eq!((woken(&first), woken(&second)), (0, 1));
        } else {
            // The reply came first and woke the waker it found.
            assert_eq!((woken(&first), woken(&second)), (1, 0));
        }
        assert_eq!(cell.take(2), Some(1));
    });
}

#[test]
fn a_call_started_as_its_server_exits_is_ended_by_the_exit_or_sees_it() {
    loom::model(|| {
        // A kept slot, idle between two calls, still watching its server.
        let (count, waker) = counter();
        let cell = Arc::new(OutcomeCell::<&str>::waiting(1, None));
        assert_eq!(cell.take(1), None);
        let watched = Arc::new(AtomicBool::new(true));
        let (c, w) = (cell.clone(), watched.clone());
        // The server's exit: clear `watched`, fence, end whatever call waits.
        let exit = thread::spawn(move || {
            w.store(false, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if c.latest_waits()
                && let Ok(Some(waker)) = c.fill(Answer::Current, "exit")
            {
                waker.wake();
            }
        });
        // The caller's next call on the slot: publish, then look at `watched`.
        cell.begin(2, waker);
        let saw_watched = watched.load(Ordering::Relaxed);
        exit.join().unwrap();
        let outcome = cell.take(2);
        // Never both: the caller saw its server watched, and the exit missed the call.
        assert!(!saw_watched || outcome == Some("exit"));
        assert_eq!(woken(&count), usize::from(outcome.is_some()));
    });
}
