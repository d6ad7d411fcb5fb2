//! How a worker held by one poll is told from one at work: it is busy (`Remote::busy`)
//! and its tick (the turns it has started, `Remote::ticks`, written by that worker
//! alone) stands still; a parked worker's tick stands still too. The watchdog thread
//! (`watchdog.rs`) and each worker's looks for a stuck LIFO process when it searches or
//! parks (`Worker::look_at_lifos`) keep one [`Held`] each: each worker slot's tick as
//! last seen, and since when it has stood at that value.

use std::time::Instant;

/// Each worker slot's tick as last seen, and since when (module docs).
#[derive(Debug)]
pub(crate) struct Held(Vec<(u64, Instant)>);

impl Held {
    /// `slots` worker slots, none seen yet.
    pub(crate) fn new(slots: usize, now: Instant) -> Held {
        Held(vec![(u64::MAX, now); slots])
    }

    /// Notes slot `v`'s tick `ticks` at `now`: since when it has stood at that value,
    /// `None` if it moved since the last note.
    pub(crate) fn since(&mut self, v: usize, ticks: u64, now: Instant) -> Option<Instant> {
        let seen = &mut self.0[v];
        if seen.0 != ticks {
            *seen = (ticks, now);
            return None;
        }
        Some(seen.1)
    }

    /// Slot `v`'s tick counts as standing from `now` on, whatever it is (a look that
    /// cannot tell what happened since the last one, a spare just claimed).
    pub(crate) fn restart(&mut self, v: usize, ticks: u64, now: Instant) {
        self.0[v] = (ticks, now);
    }
}
