//! How the timer thread sleeps until the earliest deadline of all shards, and how an
//! insert of an earlier one wakes it.
//!
//! # The rule: no deadline is slept through
//!
//! The thread scans every shard (`shard.rs`: due timers out, each shard's `next` set),
//! then sleeps until the least `next`. An insert on any worker may file an earlier
//! deadline meanwhile. The two sides are a Dekker pair, each with a `SeqCst` fence
//! between its write and its read:
//!
//! * the thread, holding the lock, stores the instant it sleeps until (`until`), then
//!   reads every shard's `next` once more, and waits only if none is earlier;
//! * an insert that lowered its shard's `next` (under the shard's lock) reads `until`,
//!   and if it sleeps past the new deadline, sets `kicked` and notifies under the lock.
//!
//! So either the thread's second read sees the new `next` and does not wait, or the
//! insert sees `until` and wakes it. The notification takes the lock, which the thread
//! holds from its store to its wait (which releases it), so it cannot fall between the
//! two; one that comes while the thread scans (it read a stale `until`) leaves `kicked`
//! set, and the next sleep scans again instead of waiting. An insert that does not
//! lower its shard's `next` does nothing: the thread wakes by that `next` anyway.
//!
//! The shutdown ([`Alarm::stop`]) sets `stopped` under the same lock and notifies; the
//! thread reads it under the lock before each wait. The loom model
//! `tests/loom_timer.rs` runs the inserts and the thread; without either fence it finds
//! the thread asleep past a deadline filed as it went to sleep.

#![allow(unreachable_pub)] // `pub` items are for the loom model; the module is private.

use std::sync::PoisonError;
use std::time::Duration;

use crate::loom::{AtomicU64, Condvar, Mutex, Ordering, fence};

/// `until` while the thread scans (below every deadline: no insert wakes it then).
const AWAKE: u64 = 0;

/// The timer thread's sleep (module docs).
#[derive(Debug)]
pub struct Alarm {
    /// The deadline (ms) the thread sleeps until, `shard::NEVER` if it waits for an
    /// insert, [`AWAKE`] while it scans.
    until: AtomicU64,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// An insert asked for a scan since the thread's last sleep.
    kicked: bool,
    /// The runtime shuts down: the thread returns.
    stopped: bool,
}

impl Default for Alarm {
    fn default() -> Alarm {
        Alarm::new()
    }
}

impl Alarm {
    /// A thread that is awake.
    pub fn new() -> Alarm {
        Alarm {
            until: AtomicU64::new(AWAKE),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        }
    }

    /// An insert's side, after it lowered its shard's `next` to `ms`: wakes the thread
    /// if it sleeps past `ms`.
    #[inline]
    pub fn deadline_filed(&self, ms: u64) {
        fence(Ordering::SeqCst);
        if ms < self.until.load(Ordering::Relaxed) {
            self.kick();
        }
    }

    #[cold]
    fn kick(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .kicked = true;
        self.wake.notify_one();
    }

    /// The thread's sleep until `at` (ms; `timeout` from now, `None`: until woken),
    /// unless `earliest` (the least `next` of all shards, read after `at` is published)
    /// is earlier or an insert asked for a scan. False once the runtime shuts down.
    pub fn sleep(&self, at: u64, timeout: Option<Duration>, earliest: impl Fn() -> u64) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !s.stopped && !std::mem::take(&mut s.kicked) {
            self.until.store(at, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if earliest() >= at {
                s = self.wait(s, timeout);
                s.kicked = false;
            }
        }
        self.until.store(AWAKE, Ordering::Relaxed);
        !s.stopped
    }

    #[cfg(not(loom))]
    fn wait<'a>(
        &self,
        s: std::sync::MutexGuard<'a, State>,
        timeout: Option<Duration>,
    ) -> std::sync::MutexGuard<'a, State> {
        match timeout {
            None => self.wake.wait(s).unwrap_or_else(PoisonError::into_inner),
            Some(d) => {
                self.wake
                    .wait_timeout(s, d)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
        }
    }

    /// Under loom a sleep ends only when woken: a deadline that is slept through is a
    /// thread that never returns, which loom reports.
    #[cfg(loom)]
    fn wait<'a>(
        &self,
        s: loom::sync::MutexGuard<'a, State>,
        _: Option<Duration>,
    ) -> loom::sync::MutexGuard<'a, State> {
        self.wake.wait(s).unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the runtime shuts down.
    pub fn is_stopped(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped
    }

    /// The shutdown's: the thread returns from its sleep, and sleeps no more.
    pub fn stop(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped = true;
        self.wake.notify_all();
    }
}
