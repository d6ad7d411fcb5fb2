//! Spare threads that stand in for workers held by one poll (what a held worker is, and
//! how it is found: `watchdog.rs`).
//!
//! Handing on what is queued behind a held worker leaves the runtime one worker short
//! for everything else (`latency hog=1`: docs/design/0026). So the watchdog's look that
//! finds a worker held also starts a spare thread in its place, or wakes a dormant one:
//! a worker of its own, with its own queues. The held thread goes on with its poll and
//! the OS shares the cores among the threads: the BEAM's time slicing by reductions,
//! done by the kernel (Go's `sysmon` hands a blocked thread's P on the same way).
//!
//! # Rules
//!
//! 1. **One spare per held worker.** The look claims the held worker
//!    (`stood_in_for`, compare-and-swap from clear) and then a spare's slot
//!    (`standing_in`, compare-and-swap from [`DORMANT`]); the worker is released only
//!    after the spare has left its slot. A slot's thread is started under the `spares`
//!    lock, and a look that finds it started once it holds the lock wakes it instead:
//!    one thread per slot. There are as many slots as workers; with none free, the look
//!    starts nothing.
//! 2. **A stream is not held.** A poll that streams (`STREAMING`) is a sender whose
//!    spills hand its receivers on; a spare would only take a core from them.
//! 3. **Counted as active.** The parking protocol counts a spare from before it starts
//!    until it goes dormant (`Idle::activate`), so "every worker parked" still means
//!    that no worker runs processes.
//! 4. **It steps back when the poll ends.** Between chains, and instead of searching or
//!    parking, a spare looks at the worker it stands in for: once that worker's tick
//!    has moved or it is no longer busy, the spare wakes the calls whose deadlines it
//!    deferred, hands everything queued on it to the injector, leaves the count, wakes
//!    one sleeper (it may have taken a wake-up meant for work it will not run) and, as
//!    `io.rs`'s invariants ask, hands the OS poll on, then goes dormant.
//! 5. **Shutdown.** No spare starts once the shutdown flag is set (checked under the
//!    `spares` lock, which the shutdown takes after setting it); a dormant spare wakes,
//!    sees the flag and returns; every spare thread is joined. Dormant spares wait on a
//!    condition variable under the `spares` lock: the claim and the shutdown change what
//!    the spare looks at, then take the lock and notify, so no wake-up falls between its
//!    look and its wait.
//!
//! Left to the queues' hand-over alone: a runtime whose spare slots are all taken and
//! whose threads, spares included, are all held at once.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::scheduler::{STREAMING, Shared, worker};

/// A spare slot's `standing_in` while no thread of it stands in for a worker.
pub(crate) const DORMANT: usize = usize::MAX;

/// Whether worker `v`'s state calls for a spare, seen by a watchdog look that found
/// its tick at `ticks`, unchanged for at least `WATCHDOG` (rules 1 and 2).
pub(crate) fn wants_spare(shared: &Shared, v: usize, ticks: u64) -> bool {
    let w = &shared.workers[v];
    ticks & STREAMING == 0
        && w.busy.load(Ordering::Relaxed)
        && !w.stood_in_for.load(Ordering::Relaxed)
}

/// Starts or wakes a spare thread to stand in for worker `v`, held by one poll. Called
/// by the watchdog thread's look. The spare's slot, if one now stands in.
pub(crate) fn stand_in_for(shared: &Arc<Shared>, v: usize) -> Option<usize> {
    let held = &shared.workers[v];
    if held
        .stood_in_for
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    let claimed = (shared.threads..shared.workers.len()).find(|&s| {
        shared.workers[s]
            .standing_in
            .compare_exchange(DORMANT, v, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    let Some(s) = claimed else {
        held.stood_in_for.store(false, Ordering::Release);
        return None;
    };
    shared.idle.activate();
    let spare = &shared.workers[s];
    let mut spares = shared.spares.lock().unwrap_or_else(PoisonError::into_inner);
    if spare.thread.get().is_some() {
        // Started before (the thread is set under this lock) and dormant in
        // `Worker::go_dormant`: it sees its slot claimed. One thread per slot.
        shared.dormant.notify_all();
        return Some(s);
    }
    let name = format!("{}-spare-{}", shared.thread_name, s - shared.threads);
    let thread = std::thread::Builder::new().name(name);
    let runtime = Arc::clone(shared);
    let started = if shared.is_shutdown() {
        None
    } else {
        thread.spawn(move || worker::run(runtime, s)).ok()
    };
    match started {
        Some(h) => {
            let _ = spare.thread.set(h.thread().clone());
            spares.push(h);
            Some(s)
        }
        None => {
            // Shutting down, or no thread to be had: as if no slot had been free.
            shared.idle.deactivate();
            spare.standing_in.store(DORMANT, Ordering::Release);
            held.stood_in_for.store(false, Ordering::Release);
            None
        }
    }
}
