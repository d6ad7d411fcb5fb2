//! Loom model of parking (`src/scheduler/park.rs`): a worker that finds no work searches
//! for a while, then stops searching, registers as sleeping, looks once more and parks; a
//! pusher makes work visible and, unless a worker is searching (which will find it), wakes
//! a registered sleeper. A wake-up lost between the two is a worker parked for good: loom
//! reports it as a deadlock. This is the rule "a runnable process never waits for a timer
//! tick while a worker is idle" for the local queues and the injector (`items` stands for
//! them); the models park without a timeout, so no watchdog can hide a lost wake-up.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_park`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::Idle;

/// The worker loop's idle path, as `scheduler/worker.rs` runs it: take work if there is
/// some, else search (here: two looks, the spin's clock replaced by a yield), then
/// register, look again, park.
fn worker(idle: &Idle, me: usize, items: &AtomicUsize, want: usize) {
    let mut got = 0;
    while got < want {
        if take(items) {
            got += 1;
            continue;
        }
        // Step (0): the search may end either way.
        idle.begin_spin();
        let found = take(items) || {
            thread::yield_now();
            take(items)
        };
        idle.end_spin();
        if found {
            got += 1;
            continue;
        }
        idle.register(me);
        if items.load(Ordering::Acquire) > 0 {
            idle.unregister(me);
            continue;
        }
        thread::park();
        idle.unregister(me);
    }
}

fn take(items: &AtomicUsize) -> bool {
    items
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

#[test]
fn a_push_wakes_a_worker_that_is_about_to_park() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let items = Arc::new(AtomicUsize::new(0));
        let w = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 0, &items, 1))
        };
        // The pusher: make the work visible, then wake the spinner, or a sleeper if one
        // is registered.
        items.fetch_add(1, Ordering::Release);
        if idle.pop_sleeper() == Some(0) {
            w.thread().unpark();
        }
        w.join().unwrap();
    });
}

#[test]
fn two_pushes_in_a_row_are_both_taken() {
    // The worker parks between the two items in some interleavings: the second push must
    // find it registered again (or the worker must see the item on its last look).
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let items = Arc::new(AtomicUsize::new(0));
        let w = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 0, &items, 2))
        };
        for _ in 0..2 {
            items.fetch_add(1, Ordering::Release);
            if idle.pop_sleeper() == Some(0) {
                w.thread().unpark();
            }
        }
        w.join().unwrap();
    });
}

#[test]
fn a_process_queued_behind_a_long_poll_is_taken_by_an_idle_worker() {
    // Two workers: worker 0 queues a process and then computes for ever (it never takes
    // the item: the model's thread just ends); worker 1 is idle, somewhere between its
    // search and its park. It must get the item without a watchdog.
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        let items = Arc::new(AtomicUsize::new(0));
        let idle_worker = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 1, &items, 1))
        };
        items.fetch_add(1, Ordering::Release);
        if idle.pop_sleeper() == Some(1) {
            idle_worker.thread().unpark();
        }
        idle_worker.join().unwrap();
    });
}
