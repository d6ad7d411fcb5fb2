//! Spare threads that stand in for workers held by one poll (what a held worker is, and
//! how it is found: `watchdog.rs`).
//!
//! Handing on what is queued behind a held worker leaves the runtime one worker short
//! for everything else (`latency hog=1`: docs/design/0026). So the watchdog's look that
//! finds a worker busy inside the same poll for at least [`WATCHDOG`] also starts a
//! spare thread in its place, or wakes a dormant one: a worker of its own, with its own
//! queues. The held thread goes on with its poll and the OS shares the cores among the
//! threads: the time slicing the BEAM does with reductions, done by the kernel (Go's
//! `sysmon` hands a blocked thread's P to another thread the same way).
//!
//! # Rules
//!
//! 1. **One spare per held worker.** The look claims the held worker
//!    (`stood_in_for`, compare-and-swap from clear) and then a spare's slot
//!    (`standing_in`, compare-and-swap from [`DORMANT`]); two looks never start two
//!    spares for one worker; the worker is released only after the spare has left its
//!    slot. A slot's thread is started under the `spares` lock, and a look that finds
//!    it started once it holds the lock wakes it instead: one thread per slot. There
//!    are as many slots as workers; with none free, the look does nothing more than it
//!    did before spares existed.
//! 2. **A stream is not held.** A poll that streams (it has spilled its LIFO process:
//!    `STREAMING`) is a sender in a long send loop, whose spills hand its receivers on;
//!    a spare would only take a core from it and its receivers.
//! 3. **Counted as active.** The parking protocol counts a spare from before it starts
//!    until it goes dormant (`Idle::activate`), so "every worker parked" still means
//!    that no worker runs processes.
//! 4. **It steps back when the poll ends.** A spare looks at the worker it stands in
//!    for between chains, and instead of searching or parking: once that worker's tick
//!    has moved (its poll ended, or it spilled and streams) or it is no longer busy,
//!    the spare wakes the calls whose deadlines it deferred, hands everything queued on
//!    it to the injector, leaves the count, and wakes one sleeper (it may have taken a
//!    wake-up meant for work it will not run) and, unless a worker waits in the OS
//!    poll, every worker (it may have held the IO driver: `io.rs`'s invariants) before
//!    it goes dormant. A runtime of `n`
//!    workers runs `n` threads of processes again, plus one for each poll that holds a
//!    worker.
//! 5. **Shutdown.** No spare starts once the shutdown flag is set (checked under the
//!    `spares` lock that the shutdown takes after setting it); a dormant spare wakes,
//!    sees the flag and returns; every spare thread is joined. Dormant spares wait on a
//!    condition variable, not in `thread::park`: the claim and the shutdown change
//!    what the spare looks at, then take its lock and notify, so no wake-up falls
//!    between its look and its wait.
//!
//! What is left to the queues' hand-over alone: a runtime whose spare slots are all
//! taken and whose active threads, spares included, are all held at once.
//!
//! [`WATCHDOG`]: crate::tuning::WATCHDOG

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
    if spare.thread.get().is_some() {
        // Dormant in `Worker::go_dormant`: it sees its slot claimed.
        shared.wake_dormant();
        return Some(s);
    }
    let mut spares = shared.spares.lock().unwrap_or_else(PoisonError::into_inner);
    if spare.thread.get().is_some() {
        // Started by another look while this one waited for the lock (the thread is
        // set under it), and gone dormant since: one thread per slot.
        drop(spares);
        shared.wake_dormant();
        return Some(s);
    }
    let started = if shared.is_shutdown() {
        None
    } else {
        let runtime = Arc::clone(shared);
        std::thread::Builder::new()
            .name(format!(
                "{}-spare-{}",
                shared.thread_name,
                s - shared.threads
            ))
            .spawn(move || worker::run(runtime, s))
            .ok()
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
