//! Idle workers: parking, waking, and the watchdog that rescues work from a stuck worker.
//!
//! # Protocol (no lost wake-up)
//!
//! A worker that found no work:
//! 0. spins first, for at most [`SPIN_BEFORE_PARK`](crate::scheduler::tuning::SPIN_BEFORE_PARK): counted in `num_spinning`, it
//!    waits for a pusher to leave it a wake-up (`woken`), and if one does, it looks for
//!    work again without having parked;
//! 1. registers as sleeping (under the `sleepers` lock; `num_sleeping` + 1, `SeqCst`);
//! 2. issues a `SeqCst` fence and looks at every queue once more;
//! 3. parks only if that look found nothing.
//!
//! A thread that made work available (pushed onto a queue) and wants a worker for it
//! issues a `SeqCst` fence and reads `num_spinning`: if a worker spins, it sets `woken`
//! and is done. Else it reads `num_sleeping`; if that is non-zero it pops a sleeper and
//! unparks it. Either the pusher's read sees the registration (1), or the worker's look
//! (2) sees the push: the two fences forbid both reads missing. `std::thread::unpark`
//! before `park` is not lost (the thread's token), so unparking a worker between (2)
//! and (3) is fine. Step (0) adds no way to lose work: a wake-up left for a spinner that
//! stops spinning without taking it is one whose push the spinner's own (2) will see,
//! since it stops counting itself as spinning before it registers (the same pair of
//! fences, with `num_spinning` in the role of `num_sleeping`). A wake-up it takes late
//! or that nobody needed (`woken` is one flag for all spinners) costs one look.
//!
//! # Why spin
//!
//! Unparking a worker is a futex wake-up, and on this project's 2-vCPU machine the
//! sleeping vCPU then took 1–3 ms to run it. A stream's receiver that empties its
//! mailbox goes idle and is handed on again within `tuning::SPILL_INTERVAL` sends, about
//! 0.2 ms. A worker that spins that long before it parks is still awake for both. The
//! BEAM does the same: its schedulers busy-wait before they sleep (`erl +sbwt`). The
//! cost is bounded: a worker that runs out of work burns at most `SPIN_BEFORE_PARK`
//! before it parks, so an idle runtime still uses no CPU.
//! Measured: docs/design/0013-spin-before-park.md.
//!
//! # Idle costs nothing, busy is watched
//!
//! A worker parks without a timeout when every other worker is parked too: an idle
//! runtime uses no CPU. While some other worker is busy, it parks for [`WATCHDOG`](crate::scheduler::tuning::WATCHDOG) and,
//! on waking, checks whether a busy worker has been inside one poll since its previous
//! look (its tick counter did not move). Such a worker is stuck in a long computation;
//! its local queue and its LIFO slot are taken over, so a process that hogs its worker
//! cannot hold up the processes queued behind it. The first worker to wake into an
//! all-parked runtime wakes one more to act as this watchdog. A busy worker makes the
//! same look, at most once per `WATCHDOG` (it reads the clock every `GLOBAL_INTERVAL`
//! ticks: `Worker::watch_while_busy`), so a process queued behind a hog is taken over
//! even when every other worker is too busy to park.
//!
//! The loom model `tests/loom_park.rs` runs steps (1)–(3) against a pusher, with
//! `thread::park` for real: a lost wake-up is a deadlock loom reports.

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;

use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering, fence};

/// The set of spinning and parked workers.
#[derive(Debug)]
pub struct Idle {
    sleepers: Mutex<Vec<usize>>,
    num_sleeping: AtomicUsize,
    /// Workers in step (0).
    num_spinning: AtomicUsize,
    /// A wake-up left for whichever spinner takes it first.
    woken: AtomicBool,
    workers: usize,
}

impl Idle {
    /// No worker parked yet, out of `workers`.
    pub fn new(workers: usize) -> Idle {
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            num_sleeping: AtomicUsize::new(0),
            num_spinning: AtomicUsize::new(0),
            woken: AtomicBool::new(false),
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

    /// Step (0) begins: the caller spins until [`Idle::take_wake`] says a pusher woke
    /// it or the spin runs out, then calls [`Idle::end_spin`].
    pub fn begin_spin(&self) {
        self.num_spinning.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes the wake-up a pusher left for spinners, if there is one.
    #[inline]
    pub fn take_wake(&self) -> bool {
        // Read before the swap, so that spinning costs no writes to the flag's line.
        self.woken.load(Ordering::Relaxed) && self.woken.swap(false, Ordering::Acquire)
    }

    /// Step (0) ends, before any step (1).
    pub fn end_spin(&self) {
        self.num_spinning.fetch_sub(1, Ordering::SeqCst);
    }

    /// The pusher's side: wakes a spinning worker if there is one (and returns `None`),
    /// else returns a parked worker to unpark, if any.
    #[inline]
    pub fn pop_sleeper(&self) -> Option<usize> {
        fence(Ordering::SeqCst);
        if self.num_spinning.load(Ordering::SeqCst) > 0 {
            self.woken.store(true, Ordering::Release);
            return None;
        }
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

    /// Whether every worker other than one is parked (a spinning one is not).
    pub fn all_others_parked(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) + 1 >= self.workers
    }

    /// Whether some worker other than the caller (a parked one) is busy.
    pub fn someone_busy(&self) -> bool {
        self.num_sleeping.load(Ordering::SeqCst) < self.workers
    }
}
