//! How the watchdog thread (`watchdog.rs`) sleeps through an idle runtime, and how the
//! first worker to leave its park wakes it.
//!
//! # The rule: no worker runs unwatched, and an idle runtime wakes no thread
//!
//! The thread dozes once it has found every worker parked for a while (`watchdog.rs`,
//! rule 1): it waits without a timeout until a worker leaves its park. Every way out
//! of a park (woken by a pusher, by the OS poll, by a
//! timeout, or the last look before parking finding work) leaves the sleepers (`Idle`)
//! and then calls [`Doze::worker_woke`]: a fence and one load unless the thread dozes.
//!
//! The two sides are a Dekker pair, each with a `SeqCst` fence between its write and
//! its read (loom models a fence's order, not that of `SeqCst` accesses alone):
//!
//! * the thread, holding the lock, stores `asleep`, then reads the sleeper count
//!   (`awake` in [`Doze::doze_unless`]) and waits only if every worker sleeps;
//! * the worker's sleeper count is lowered before it reads `asleep`.
//!
//! So either the thread sees a worker awake and does not wait, or that worker sees
//! `asleep` and notifies, under the lock the thread holds from its read to its wait:
//! the notification cannot fall in between. The loom model `tests/loom_doze.rs` runs
//! both sides, for each way out of a park; without the fences, it finds the thread
//! waiting for good beside a worker at work. The shutdown ([`Doze::stop`]) notifies
//! under the same lock after the flag is set, which the thread reads under it before
//! each wait.

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;
#[cfg(not(loom))]
use std::time::Duration;

use crate::loom::{AtomicBool, Condvar, Mutex, Ordering, fence};

/// The watchdog thread's sleep.
#[derive(Debug)]
pub struct Doze {
    /// The thread waits without a timeout.
    asleep: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Default for Doze {
    fn default() -> Doze {
        Doze::new()
    }
}

impl Doze {
    /// A thread that does not doze.
    pub fn new() -> Doze {
        Doze {
            asleep: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// The thread's doze: waits until a worker wakes or `stop` is called, unless
    /// `awake` (some worker is awake, or the runtime shuts down) holds once `asleep`
    /// is set.
    pub fn doze_unless(&self, awake: impl Fn() -> bool) {
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.asleep.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let guard = if awake() {
            guard
        } else {
            self.wake
                .wait(guard)
                .unwrap_or_else(PoisonError::into_inner)
        };
        self.asleep.store(false, Ordering::SeqCst);
        drop(guard);
    }

    /// The thread's sleep between two looks: `period`, or less if `stop` is called;
    /// not at all if `done` (the runtime shuts down) holds under the lock.
    #[cfg(not(loom))]
    pub fn nap(&self, period: Duration, done: impl Fn() -> bool) {
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if !done() {
            drop(self.wake.wait_timeout(guard, period));
        }
    }

    /// Called by a worker that has woken from a park, after it left the sleepers:
    /// wakes the thread if it dozes.
    #[inline]
    pub fn worker_woke(&self) {
        fence(Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) {
            self.notify();
        }
    }

    /// The shutdown's: wakes the thread from a doze or a nap. The caller set the flag
    /// that the thread's `awake` and `done` read.
    pub fn stop(&self) {
        self.notify();
    }

    #[cold]
    fn notify(&self) {
        drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
        self.wake.notify_one();
    }
}
