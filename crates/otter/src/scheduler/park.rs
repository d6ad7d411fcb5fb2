//! Idle workers: parking, waking, and the watchdog that rescues work from a stuck worker.
//!
//! # Protocol (no lost wake-up)
//!
//! A worker that found no work:
//! 1. registers as sleeping (under the `sleepers` lock; `num_sleeping` + 1, `SeqCst`);
//! 2. issues a `SeqCst` fence and looks at every queue once more;
//! 3. parks only if that look found nothing.
//!
//! A thread that made work available (pushed onto a queue) issues a `SeqCst` fence and
//! reads `num_sleeping`; if it is non-zero it pops a sleeper and unparks it. Either the
//! pusher's read sees the registration (1), or the worker's look (2) sees the push: the
//! two fences forbid both reads missing. `std::thread::unpark` before `park` is not lost
//! (the thread's token), so unparking a worker between (2) and (3) is fine.
//!
//! # Idle costs nothing, busy is watched
//!
//! A worker parks without a timeout when every other worker is parked too: an idle
//! runtime uses no CPU. While some other worker is busy, it parks for [`WATCHDOG`] and,
//! on waking, checks whether a busy worker has been inside one poll since its previous
//! look (its tick counter did not move). Such a worker is stuck in a long computation;
//! its local queue and its LIFO slot are taken over, so a process that hogs its worker
//! cannot hold up the processes queued behind it. The first worker to wake into an
//! all-parked runtime wakes one more to act as this watchdog.
//!
//! The loom model `tests/loom_park.rs` runs steps (1)–(3) against a pusher, with
//! `thread::park` for real: a lost wake-up is a deadlock loom reports.

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;
use std::time::Duration;

use crate::loom::{AtomicUsize, Mutex, Ordering, fence};

/// How long a parked worker sleeps while another is busy before it looks for stuck
/// workers. 5 ms: a hogged worker's queue waits at most about this long, and a parked
/// watchdog wakes 200 times a second, which costs well under 0.1% of a core.
pub(crate) const WATCHDOG: Duration = Duration::from_millis(5);

/// The set of parked workers.
#[derive(Debug)]
pub struct Idle {
    sleepers: Mutex<Vec<usize>>,
    num_sleeping: AtomicUsize,
    workers: usize,
}

impl Idle {
    /// No worker parked yet, out of `workers`.
    pub fn new(workers: usize) -> Idle {
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            num_sleeping: AtomicUsize::new(0),
            workers,
        }
    }

    /// Step (1). Returns whether every other worker is parked too.
    pub fn register(&self, me: usize) -> bool {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        s.push(me);
        let n = self.num_sleeping.fetch_add(1, Ordering::SeqCst) + 1;
        drop(s);
        fence(Ordering::SeqCst);
        n == self.workers
    }

    /// Undoes `register` if nobody popped us meanwhile (we found work, or timed out).
    pub fn unregister(&self, me: usize) {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = s.iter().position(|&w| w == me) {
            s.swap_remove(i);
            self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The pusher's side: returns a parked worker to unpark, if any.
    #[inline]
    pub fn pop_sleeper(&self) -> Option<usize> {
        fence(Ordering::SeqCst);
        if self.num_sleeping.load(Ordering::SeqCst) == 0 {
            return None;
        }
        self.pop_sleeper_slow()
    }

    #[cold]
    fn pop_sleeper_slow(&self) -> Option<usize> {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        let w = s.pop()?;
        self.num_sleeping.fetch_sub(1, Ordering::SeqCst);
        Some(w)
    }

    /// Whether every worker other than one is parked.
    pub fn all_others_parked(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) + 1 >= self.workers
    }

    /// Whether some worker other than the caller (a parked one) is busy.
    pub fn someone_busy(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) < self.workers
    }
}
