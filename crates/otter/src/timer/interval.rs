//! Periodic timers: [`Context::send_interval`](crate::Context::send_interval), Erlang's
//! `timer:send_interval/3`.
//!
//! An interval is one wheel entry at a time: when it fires, its action sends the
//! message and inserts the next entry, `period` after the previous *deadline* (not after
//! the firing), so the interval does not drift. The state (stopped flag, key of the
//! pending entry) is under a small mutex shared with the [`IntervalRef`]: cancelling
//! takes the same lock, so it never races with the action inserting the next entry.
//! The interval ends when its receiver exits (tied to it as a `send_after` is:
//! `process/bonds.rs`), or, for a remote receiver, at the first tick that finds it gone.
//! The tick is the caller's closure (a send), so the timers know nothing of processes.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Action, Timer, TimerKey};

#[derive(Debug, Default)]
struct State {
    stopped: bool,
    key: Option<TimerKey>,
}

/// A periodic timer started by [`Context::send_interval`](crate::Context::send_interval).
///
/// ```
/// use std::time::Duration;
/// let rt = otter::Runtime::new();
/// let ticks = rt.block_on(|mut cx: otter::Context<&'static str>| async move {
///     let t: otter::IntervalRef = cx.send_interval(cx.pid(), "tick", Duration::from_millis(1));
///     for _ in 0..3 { cx.recv().await; }
///     t.cancel()
/// });
/// assert!(ticks.unwrap());
/// ```
#[derive(Debug)]
pub struct IntervalRef {
    state: Arc<Mutex<State>>,
    timer: Weak<Timer>,
}

impl IntervalRef {
    /// Whether the interval still runs: not cancelled, and its receiver has not exited
    /// (a remote one: was there at the last tick).
    ///
    /// See [`IntervalRef`] for an example.
    pub fn is_running(&self) -> bool {
        !self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped
    }

    /// Stops the interval: no message is sent after this returns. True if it was
    /// running, false if it had already ended because its receiver exited (a remote
    /// receiver's end is noticed at the first tick after it). After the runtime has
    /// shut down, the interval has ended but this may still say true.
    ///
    /// See [`IntervalRef`] for an example.
    pub fn cancel(self) -> bool {
        let (was_running, key) = stop(&self.state);
        if let (Some(key), Some(timer)) = (key, self.timer.upgrade()) {
            timer.cancel(key);
        }
        was_running
    }
}

/// Marks the interval stopped and takes the key of its pending entry, for the caller
/// to cancel after the lock is released (so no user code, the message's `Drop`, runs
/// under it); whether it was running. A tick that fires meanwhile finds `stopped` and
/// neither sends nor re-arms.
fn stop(state: &Mutex<State>) -> (bool, Option<TimerKey>) {
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    let was_running = !s.stopped;
    s.stopped = true;
    (was_running, s.key.take())
}

/// What the destination's bonds keep of an interval aimed at it, to stop it at its
/// exit (`timer.rs`, `Tied`).
#[derive(Debug)]
pub(crate) struct Handle {
    state: Weak<Mutex<State>>,
    timer: Weak<Timer>,
}

impl Handle {
    /// Whether the interval may still run. Asked under the destination's bonds lock
    /// (its look for stopped timers), so it never waits for the state's lock, which a
    /// tick holds while it clones the user's message: a state held now counts as
    /// running.
    pub(crate) fn is_running(&self) -> bool {
        self.state.upgrade().is_some_and(|s| match s.try_lock() {
            Ok(s) => !s.stopped,
            Err(std::sync::TryLockError::Poisoned(p)) => !p.into_inner().stopped,
            Err(std::sync::TryLockError::WouldBlock) => true,
        })
    }

    /// Stops the interval, as [`IntervalRef::cancel`] does; the pending entry's
    /// message is dropped after the state's lock is released, under a catch.
    pub(crate) fn stop(self) {
        let Some(state) = self.state.upgrade() else {
            return;
        };
        if let (_, Some(key)) = stop(&state)
            && let Some(timer) = self.timer.upgrade()
        {
            timer.cancel_quietly(key);
        }
    }
}

/// Starts an interval that calls `tick` every `period` (at least 1 ms, the wheel's
/// resolution) until `tick` says its destination is gone (false) or it is stopped;
/// the [`Handle`] is for the destination's bonds, which stop it at its exit (the
/// caller ties it: `process.rs`, `send_interval`).
pub(crate) fn start<F: FnMut() -> bool + Send + 'static>(
    timer: &Arc<Timer>,
    period: Duration,
    tick: F,
) -> (IntervalRef, Handle) {
    let period = period.max(Duration::from_millis(1));
    let state = Arc::new(Mutex::new(State::default()));
    let first = crate::timer::deadline_after(period);
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    let key = timer.insert(
        first,
        arm(Arc::downgrade(timer), state.clone(), first, period, tick),
    );
    s.key = Some(key);
    drop(s);
    let handle = Handle {
        state: Arc::downgrade(&state),
        timer: Arc::downgrade(timer),
    };
    let interval = IntervalRef {
        state,
        timer: Arc::downgrade(timer),
    };
    (interval, handle)
}

/// The action of the entry due at `deadline`: tick, then insert the next entry.
fn arm<F: FnMut() -> bool + Send + 'static>(
    timer: Weak<Timer>,
    state: Arc<Mutex<State>>,
    deadline: Instant,
    period: Duration,
    mut tick: F,
) -> Action {
    Action::Run(Box::new(move || {
        let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
        s.key = None;
        if s.stopped {
            return;
        }
        let Some(t) = timer.upgrade() else {
            s.stopped = true;
            return;
        };
        if !tick() {
            s.stopped = true;
            return;
        }
        let next = deadline.checked_add(period).unwrap_or(deadline);
        let key = t.insert(next, arm(timer.clone(), state.clone(), next, period, tick));
        s.key = Some(key);
    }))
}
