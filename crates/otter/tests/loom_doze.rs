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

/// The runtime's one worker, parked and registered as sleeping.
fn parked_runtime() -> Arc<Idle> {
    let idle = Arc::new(Idle::new(1));
    idle.register(0);
    idle
}

#[test]
fn a_worker_that_wakes_on_its_own_wakes_the_dozing_watchdog() {
    // The worker leaves the sleepers itself (its OS poll returned, or a timeout).
    loom::model(|| {
        let idle = parked_runtime();
        let doze = Arc::new(Doze::new());
        let watchdog = {
            let (idle, doze) = (idle.clone(), doze.clone());
            thread::spawn(move || doze.doze_unless(|| idle.someone_busy()))
        };
        idle.unregister(0);
        doze.worker_woke();
        watchdog.join().unwrap();
    });
}

#[test]
fn a_worker_woken_by_a_push_wakes_the_dozing_watchdog() {
    // A pusher pops the worker from the sleepers and unparks it; the worker, woken,
    // calls `worker_woke`.
    loom::model(|| {
        let idle = parked_runtime();
        let doze = Arc::new(Doze::new());
        let worker = {
            let (idle, doze) = (idle.clone(), doze.clone());
            thread::spawn(move || {
                thread::park();
                idle.unregister(0);
                doze.worker_woke();
            })
        };
        let watchdog = {
            let (idle, doze) = (idle.clone(), doze.clone());
            thread::spawn(move || doze.doze_unless(|| idle.someone_busy()))
        };
        if idle.pop_sleeper() == Some(0) {
            worker.thread().unpark();
        }
        worker.join().unwrap();
        watchdog.join().unwrap();
    });
}

#[test]
fn a_worker_whose_last_look_finds_work_wakes_the_dozing_watchdog() {
    // The worker registers as sleeping while a push comes that finds nobody to wake
    // (the worker not yet registered) or pops it; either its last look sees the work
    // and it leaves without parking, or it parks and is woken. Either way it then runs
    // that work, perhaps for long: the watchdog must not doze through it.
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let doze = Arc::new(Doze::new());
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
        let watchdog = {
            let (idle, doze) = (idle.clone(), doze.clone());
            thread::spawn(move || doze.doze_unless(|| idle.someone_busy()))
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
        let idle = parked_runtime();
        let doze = Arc::new(Doze::new());
        let shutdown = Arc::new(AtomicBool::new(false));
        let watchdog = {
            let (idle, doze, shutdown) = (idle.clone(), doze.clone(), shutdown.clone());
            thread::spawn(move || {
                doze.doze_unless(|| shutdown.load(Ordering::SeqCst) || idle.someone_busy())
            })
        };
        shutdown.store(true, Ordering::SeqCst);
        doze.stop();
        watchdog.join().unwrap();
    });
}
