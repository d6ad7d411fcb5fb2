//! Loom model of the watchdog thread's doze (`src/scheduler/doze.rs`): the thread waits
//! without a timeout only while every worker sleeps, and a worker that wakes wakes it.
//! A wake-up lost between the two is a thread that waits for good beside a worker at
//! work (one that may be held by a poll, with nobody left to look): loom reports it as
//! a deadlock. The workers' side is `Idle` (`src/scheduler/park.rs`), as the runtime
//! uses it.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_doze`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use otter::__loom::{Doze, Idle};

/// The runtime's one worker (`registered`: parked and registered as sleeping), the
/// thread's doze, and the thread, dozing unless a worker is awake or `shutdown` is set.
fn runtime(
    registered: bool,
) -> (
    Arc<Idle>,
    Arc<Doze>,
    Arc<AtomicBool>,
    thread::JoinHandle<()>,
) {
    let idle = Arc::new(Idle::new(1));
    if registered {
        idle.register(0);
    }
    let doze = Arc::new(Doze::new());
    let shutdown = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (idle, doze, shutdown) = (idle.clone(), doze.clone(), shutdown.clone());
        thread::spawn(move || {
            doze.doze_unless(|| shutdown.load(Ordering::SeqCst) || idle.someone_busy())
        })
    };
    (idle, doze, shutdown, watchdog)
}

#[test]
fn a_worker_that_wakes_on_its_own_wakes_the_dozing_watchdog() {
    // The worker leaves the sleepers itself (its OS poll returned, or a timeout).
    loom::model(|| {
        let (idle, doze, _, watchdog) = runtime(true);
        idle.unregister(0);
        doze.worker_woke();
        watchdog.join().unwrap();
    });
}

#[test]
fn a_worker_that_leaves_its_park_after_a_push_wakes_the_dozing_watchdog() {
    // The worker registers as sleeping while a push comes: the push finds nobody to
    // wake (the worker not yet registered) and the worker's last look sees the work,
    // so it leaves without parking; or the push pops it, and it parks and is woken (or
    // finds the work anyway). Either way it then runs that work, perhaps for long: the
    // thread must not doze through it.
    loom::model(|| {
        let (idle, doze, _, watchdog) = runtime(false);
        let work = Arc::new(AtomicBool::new(false));
        let worker = {
            let (idle, doze, work) = (idle.clone(), doze.clone(), work.clone());
            thread::spawn(move || {
                idle.register(0);
                if !work.load(Ordering::SeqCst) {
                    thread::park();
                }
                idle.unregister(0);
                doze.worker_woke();
            })
        };
        work.store(true, Ordering::SeqCst);
        if idle.pop_sleeper() == Some(0) {
            worker.thread().unpark();
        }
        worker.join().unwrap();
        watchdog.join().unwrap();
    });
}

#[test]
fn the_shutdown_wakes_the_dozing_watchdog() {
    loom::model(|| {
        let (_, doze, shutdown, watchdog) = runtime(true);
        shutdown.store(true, Ordering::SeqCst);
        doze.stop();
        watchdog.join().unwrap();
    });
}
