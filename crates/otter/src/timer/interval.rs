//! Periodic timers: [`Context::send_interval`](crate::Context::send_interval), Erlang's
//! `timer:send_interval/3`.
//!
//! An interval is one wheel entry at a time: when it fires, its action sends the
//! message and inserts the next entry, `period` after the previous *deadline* (not after
//! the firing), so the interval does not drift. The state (stopped flag, key of the
//! pending entry) is under a small mutex shared with the [`IntervalRef`]: cancelling
//! takes the same lock, so it never races with the action inserting the next entry.
//! The interval ends by itself when the receiver no longer exists.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Action, Timer, TimerKey};
use crate::pid::Pid;

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
    /// Whether the interval still runs: not cancelled, and its receiver was alive at the
    /// last tick.
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
    /// running, false if it had already ended because its receiver was gone (noticed at
    /// the first tick after the receiver's exit). After the runtime has shut down, the
    /// interval has ended but this may still say true.
    ///
    /// See [`IntervalRef`] for an example.
    pub fn cancel(self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let was_running = !s.stopped;
        s.stopped = true;
        if let (Some(key), Some(timer)) = (s.key.take(), self.timer.upgrade()) {
            timer.cancel(key);
        }
        was_running
    }
}

/// Starts an interval sending `message` to `to` every `period` (at least 1 ms, the
/// wheel's resolution).
pub(crate) fn start<N: Clone + Send + 'static>(
    timer: &Arc<Timer>,
    to: Pid<N>,
    message: N,
    period: Duration,
) -> IntervalRef {
    let period = period.max(Duration::from_millis(1));
    let state = Arc::new(Mutex::new(State::default()));
    let first = crate::timer::deadline_after(period);
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    let key = timer.insert(
        first,
        arm(
            Arc::downgrade(timer),
            state.clone(),
            first,
            period,
            to,
            message,
        ),
    );
    s.key = Some(key);
    drop(s);
    IntervalRef {
        state,
        timer: Arc::downgrade(timer),
    }
}

/// The action of the entry due at `deadline`: send, then insert the next entry.
fn arm<N: Clone + Send + 'static>(
    timer: Weak<Timer>,
    state: Arc<Mutex<State>>,
    deadline: Instant,
    period: Duration,
    to: Pid<N>,
    message: N,
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
        if to.try_send(message.clone()).is_err() {
            s.stopped = true;
            return;
        }
        let next = deadline.checked_add(period).unwrap_or(deadline);
        let key = t.insert(
            next,
            arm(timer.clone(), state.clone(), next, period, to, message),
        );
        s.key = Some(key);
    }))
}
