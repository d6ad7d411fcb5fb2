//! Idle workers: searching, parking and waking; what is left to the watchdog thread
//! (`watchdog.rs`).
//!
//! # The rule: a runnable process never waits for a timer tick while a worker is idle
//!
//! A runnable process is in a worker's local queue, its spawn stack, its LIFO slot, or
//! the injector. Whichever it is, an idle worker (searching or parked) takes it without
//! waiting for the watchdog:
//!
//! * **Local queue, spawn stack and injector**: every push wakes an idle worker if none
//!   is searching (the protocol below); the woken worker searches and steals it.
//! * **LIFO slot**: its owner runs it after the current poll. If that poll runs long, an
//!   idle worker takes it once it has stood [`STEAL_LIFO_AFTER`] while the owner's tick
//!   did not move (Go's rule for its `runnext`), but for a poll that streams
//!   (`STREAMING`). A searching worker looks every spin round. A worker about to park
//!   that has seen an occupied LIFO slot in the last [`LIFO_WATCH`], while another
//!   worker runs, sleeps short ([`LIFO_RECHECK`]) and looks again. One that parks until
//!   woken says so first ([`Idle::begin_deep`]), and a LIFO placement that finds no
//!   idle worker watching and one parked until woken wakes it ([`Idle::lifo_unwatched`],
//!   [`Idle::claim_deep`]); that worker then watches. So a placement pays one load, and
//!   a ring or a ping-pong keeps its idle worker sleeping short instead of waking it at
//!   every hop (docs/design/0019, 0031).
//!
//! The placement reads the counts without a fence (a fence would cost every hop of a
//! ring): a worker that begins its park at the very moment of the placement may be
//! missed. The watchdog ([`WATCHDOG`]) finds that process, and remains for the one case
//! no idle worker can see: a process that computes without yielding while every other
//! worker is busy.
//!
//! # Protocol (no lost wake-up)
//!
//! A worker that found no work:
//! 0. searches for a while (below): counted as searching, it looks at the other
//!    workers' queues and LIFO slots, the injector and the OS every spin round;
//! 1. stops counting itself as searching, then registers as sleeping (under the
//!    `sleepers` lock, a `SeqCst` read-modify-write of the count);
//! 2. issues a `SeqCst` fence and looks at every queue once more, its own LIFO slot
//!    included (where the OS poll of a short sleep wakes what it found);
//! 3. parks only if that look found nothing.
//!
//! A thread that made work available issues a `SeqCst` fence and reads the counts: if a
//! worker searches, that worker will find the work (its last look, step 2, comes after
//! it stops searching); else, if one sleeps, it pops a sleeper and unparks it. Either
//! the pusher's read sees the registration (1), or the worker's look (2) sees the push:
//! the two fences forbid both reads missing. An unpark before the park is not lost (the
//! thread's token).
//!
//! # How long a worker searches
//!
//! At least [`Builder::busy_wait`] (default zero). Past it, a worker searches on only
//! while another worker runs processes (one may hand it work), and for no longer than
//! it was busy since its previous search or park, unspent time carried over up to
//! [`SPIN_BEFORE_PARK`]: searching at most doubles the CPU a program uses, and a worker
//! that no other worker can feed sleeps after one look (docs/design/0033), in the OS's
//! poll if it holds the driver, as tokio's and Go's workers do. A search that finds
//! work saves a futex or `epoll_wait` wake-up (docs/design/0013, 0025).
//!
//! # Idle costs nothing
//!
//! A worker parks without a timeout (but for the short sleeps above): an idle runtime
//! uses no CPU. A worker that wakes from its park tells the watchdog thread, which dozes
//! while every worker sleeps (`doze.rs`).
//!
//! Loom models: `tests/loom_park.rs`, with `thread::park` for real (a lost wake-up is a
//! deadlock loom reports); ARCHITECTURE.md's loom table says what each catches.
//!
//! # The idle word
//!
//! The counts live in one 64-bit word ([`Idle`]), five fields of [`FIELD_BITS`] bits,
//! as tokio's `idle.rs` packs its counts: searching (step 0), registered as sleeping
//! (steps 1–3), in a short sleep, parked until woken and unclaimed (a subset of the
//! sleeping), and active (the runtime's workers plus the spares standing in). Rules:
//!
//! 1. A worker increments a field when it enters the state and decrements it when it
//!    leaves, but for the deep count, decremented exactly once per [`Idle::begin_deep`],
//!    by the worker or by a placement that claims it (the flag's swap decides). So no
//!    field goes below zero, and no borrow reaches the field above it.
//! 2. No field overflows: active is at most twice [`MAX_THREADS`] (one spare per held
//!    worker), below `2^FIELD_BITS`; every other field is at most active.
//! 3. A read of the word is one snapshot of all five counts (docs/design/0036): with
//!    separate counters, a worker going from sleeping to searching could be counted in
//!    both, and `others_running` answer "nobody runs" while one did (the loom model
//!    `a_snapshot_counts_a_worker_once`).
//!
//! The sleepers' list stays under a lock: it is touched only on the way to a park and
//! by a pusher that found a sleeper to wake.
//!
//! [`SPIN_BEFORE_PARK`]: crate::tuning::SPIN_BEFORE_PARK
//! [`Builder::busy_wait`]: crate::Builder::busy_wait
//! [`WATCHDOG`]: crate::tuning::WATCHDOG
//! [`STEAL_LIFO_AFTER`]: crate::tuning::STEAL_LIFO_AFTER
//! [`LIFO_RECHECK`]: crate::tuning::LIFO_RECHECK
//! [`LIFO_WATCH`]: crate::tuning::LIFO_WATCH

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;

use crate::loom::{AtomicBool, AtomicU64, Mutex, Ordering, fence};

/// The width of each count in the idle word (module docs, "The idle word").
pub const FIELD_BITS: u32 = 12;

/// Worker threads of a runtime at most (`Builder::threads`): twice this fits a count of
/// the idle word (rule 2).
pub(crate) const MAX_THREADS: usize = (1 << FIELD_BITS) / 2 - 1;

/// One count of the idle word: its shift.
#[derive(Clone, Copy)]
struct Field(u32);

// The deep count lowest: a LIFO placement's look (`lifo_unwatched`) tests it first, and
// with nobody deep-parked that test alone answers, an immediate mask on x86-64.
const DEEP: Field = Field(0);
const SPINNING: Field = Field(FIELD_BITS);
const SHORT: Field = Field(2 * FIELD_BITS);
const SLEEPING: Field = Field(3 * FIELD_BITS);
const ACTIVE: Field = Field(4 * FIELD_BITS);

impl Field {
    /// This field's count of one.
    const fn one(self) -> u64 {
        1 << self.0
    }

    /// This field's bits.
    const fn mask(self) -> u64 {
        ((1 << FIELD_BITS) - 1) << self.0
    }

    /// This field's count in the word `w`.
    const fn get(self, w: u64) -> u64 {
        (w & self.mask()) >> self.0
    }
}

/// The set of searching and parked workers.
#[derive(Debug)]
pub struct Idle {
    sleepers: Mutex<Vec<usize>>,
    /// The counts (module docs, "The idle word").
    word: AtomicU64,
}

/// With someone deep-parked: whether nobody watches the LIFO slots.
#[cold]
#[inline(never)]
fn unwatched(w: u64) -> bool {
    w & (SPINNING.mask() | SHORT.mask()) == 0
}

impl Idle {
    /// No worker parked yet, out of `workers` (at most `MAX_THREADS`, which
    /// `Builder::build` checks).
    pub fn new(workers: usize) -> Idle {
        debug_assert!(workers <= MAX_THREADS);
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(workers)),
            word: AtomicU64::new(workers as u64 * ACTIVE.one()),
        }
    }

    fn add(&self, f: Field) {
        self.word.fetch_add(f.one(), Ordering::SeqCst);
    }

    fn sub(&self, f: Field) {
        self.word.fetch_sub(f.one(), Ordering::SeqCst);
    }

    /// A spare thread begins to stand in for a held worker (`stand_in.rs`, rule 3).
    pub fn activate(&self) {
        self.add(ACTIVE);
    }

    /// A spare thread goes dormant (it is not registered as sleeping).
    pub fn deactivate(&self) {
        self.sub(ACTIVE);
    }

    /// Step (1).
    pub fn register(&self, me: usize) {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        s.push(me);
        self.add(SLEEPING);
        drop(s);
        fence(Ordering::SeqCst);
    }

    /// Undoes `register` if nobody popped us meanwhile (we found work, or timed out).
    pub fn unregister(&self, me: usize) {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = s.iter().position(|&w| w == me) {
            s.swap_remove(i);
            self.sub(SLEEPING);
        }
    }

    /// Step (0) begins: the caller searches until it finds work or the search runs
    /// out, then calls [`Idle::end_spin`].
    pub fn begin_spin(&self) {
        self.add(SPINNING);
    }

    /// Step (0) ends, before any step (1).
    pub fn end_spin(&self) {
        self.sub(SPINNING);
    }

    /// The pusher's side, after its push: `None` if a worker searches (it will find the
    /// work) or none is parked, else a parked worker to unpark.
    #[inline]
    pub fn pop_sleeper(&self) -> Option<usize> {
        fence(Ordering::SeqCst);
        let w = self.word.load(Ordering::SeqCst);
        if w & SPINNING.mask() != 0 || w & SLEEPING.mask() == 0 {
            return None;
        }
        self.pop_sleeper_slow()
    }

    #[cold]
    fn pop_sleeper_slow(&self) -> Option<usize> {
        let mut s = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        let w = s.pop()?;
        self.sub(SLEEPING);
        Some(w)
    }

    /// A short sleep beside an occupied LIFO slot begins (the worker is registered).
    pub fn begin_short(&self) {
        self.add(SHORT);
    }

    /// The short sleep ends.
    pub fn end_short(&self) {
        self.sub(SHORT);
    }

    /// The worker whose flag is `deep` is about to park until woken (registered, its
    /// last look found nothing). The read-modify-write orders the count before its look
    /// at the LIFO slots that follows.
    pub fn begin_deep(&self, deep: &AtomicBool) {
        deep.store(true, Ordering::Relaxed);
        self.add(DEEP);
    }

    /// The worker whose flag is `deep` is awake again, or did not park after all:
    /// uncounted, unless a LIFO placement claimed it first ([`Idle::claim_deep`]).
    /// Whether this call uncounted it.
    pub fn end_deep(&self, deep: &AtomicBool) -> bool {
        let mine = deep.swap(false, Ordering::AcqRel);
        if mine {
            self.sub(DEEP);
        }
        mine
    }

    /// Whether a process just put in a LIFO slot has nobody to see it should its
    /// worker's poll run long: no worker searches or sleeps short, and one is parked
    /// until woken. A snapshot, without a fence (module docs, "The rule").
    #[inline]
    pub fn lifo_unwatched(&self) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        // Nobody deep-parked is the ring's case: one test, then the rest out of line
        // (inline, the compiler evaluates both tests without a branch, on every hop).
        w & DEEP.mask() != 0 && unwatched(w)
    }

    /// Takes the deep park of the worker whose flag is `deep` for the caller to wake:
    /// true once per park, for the caller or for the worker's own [`Idle::end_deep`].
    pub fn claim_deep(&self, deep: &AtomicBool) -> bool {
        if deep.load(Ordering::Relaxed) && deep.swap(false, Ordering::AcqRel) {
            self.sub(DEEP);
            true
        } else {
            false
        }
    }

    /// Whether some worker other than the caller (a searching one) is running processes:
    /// neither parked nor searching.
    pub fn others_running(&self) -> bool {
        let w = self.word.load(Ordering::Relaxed);
        SLEEPING.get(w) + SPINNING.get(w) < ACTIVE.get(w)
    }

    /// Whether some worker is awake (running processes or searching): the watchdog
    /// thread's look (`watchdog.rs`).
    pub fn someone_busy(&self) -> bool {
        let w = self.word.load(Ordering::SeqCst);
        SLEEPING.get(w) < ACTIVE.get(w)
    }
}
