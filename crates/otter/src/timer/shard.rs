//! One worker's timers: a timing wheel (`wheel.rs`) under its own lock, and the
//! earliest deadline it may hold, readable without the lock.
//!
//! # Rules
//!
//! 1. **A timer lives on the shard it was filed on**, the shard of the worker whose
//!    thread filed it (the runtime's last shard for any other thread, `timer.rs`). Its
//!    key names the shard, so a cancel from any thread goes to that shard and takes
//!    its lock: the owner's inserts, a cancel from a worker the process moved to, and
//!    the timer thread's advance are serialized by the lock, so a timer is either
//!    taken out by its cancel (which then has its action) or handed to the timer
//!    thread by an advance (and the cancel finds nothing), never both. Uncontended,
//!    the lock is the owner's own cache line: two locked instructions per operation.
//! 2. **`next` is a lower bound** on the earliest deadline filed here: an insert lowers
//!    it under the lock, an advance (by the timer thread, under the lock) sets it to
//!    the wheel's next expiration, and a cancel leaves it (the timer thread then wakes
//!    for nothing once, and sets it right). It is never later than a pending deadline,
//!    so a thread that sleeps until the least `next` of all shards misses no timer.
//! 3. **An insert that lowers `next` says so** ([`Shard::insert`]'s second value); its
//!    caller then tells the timer thread (`alarm.rs`), whose sleep may be too long.
//!    An insert at or after `next` says nothing: the thread already wakes by `next`.
//!
//! The loom model `tests/loom_timer.rs` runs inserts, a cancel and the timer thread's
//! scan and sleep (`alarm.rs`) together.

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;

use super::wheel::{Key, Wheel};
use crate::loom::{AtomicU64, Mutex, Ordering};

/// [`Shard::next`] when the shard holds no timer.
pub const NEVER: u64 = u64::MAX;

/// One worker's timers (module docs).
#[derive(Debug)]
pub struct Shard<T> {
    inner: Mutex<Inner<T>>,
    /// Rule 2: at or before the earliest deadline filed here (ms), [`NEVER`] if none.
    next: AtomicU64,
}

#[derive(Debug)]
struct Inner<T> {
    wheel: Wheel<T>,
    /// Timers of this shard fired since the start (introspection).
    fired: u64,
}

impl<T> Default for Shard<T> {
    fn default() -> Self {
        Shard::new()
    }
}

impl<T> Shard<T> {
    /// An empty shard.
    pub fn new() -> Shard<T> {
        Shard {
            inner: Mutex::new(Inner {
                wheel: Wheel::new(),
                fired: 0,
            }),
            next: AtomicU64::new(NEVER),
        }
    }

    fn lock(&self) -> crate::loom::MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Files `value` at `ms`: its key, and whether `ms` is now this shard's earliest
    /// deadline (rule 3: the caller tells the timer thread).
    pub fn insert(&self, ms: u64, value: T) -> (Key, bool) {
        let mut g = self.lock();
        let key = g.wheel.insert(ms, value);
        let earlier = ms < self.next.load(Ordering::Relaxed);
        if earlier {
            // Only under the lock: the caller's fence (`Alarm::deadline_filed`) orders
            // it before its read of the thread's sleep.
            self.next.store(ms, Ordering::Relaxed);
        }
        (key, earlier)
    }

    /// Takes a pending timer's value out; `None` if it fired or was cancelled (rule 1).
    pub fn cancel(&self, key: Key) -> Option<T> {
        self.lock().wheel.cancel(key)
    }

    /// Whether `key`'s timer has neither fired nor been cancelled.
    pub fn is_pending(&self, key: Key) -> bool {
        self.lock().wheel.is_pending(key)
    }

    /// The timer thread's scan: hands every timer due by `now` to `due` and sets
    /// `next` to the wheel's next expiration (rule 2).
    pub fn advance(&self, now: u64, due: &mut Vec<T>) {
        let mut g = self.lock();
        let before = due.len();
        g.wheel.advance(now, |v| due.push(v));
        g.fired += (due.len() - before) as u64;
        let next = g.wheel.next_expiration().unwrap_or(NEVER);
        self.next.store(next, Ordering::Relaxed);
    }

    /// Rule 2's bound, read by the timer thread after its fence (`alarm.rs`).
    pub fn next(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// Timers pending here, and timers fired here since the start.
    pub fn counts(&self) -> (usize, u64) {
        let g = self.lock();
        (g.wheel.len(), g.fired)
    }

    /// Takes every pending timer's value out (the runtime's shutdown).
    pub fn drain(&self) -> Vec<T> {
        let wheel = std::mem::replace(&mut self.lock().wheel, Wheel::new());
        self.next.store(NEVER, Ordering::Relaxed);
        wheel.into_values().collect()
    }
}
