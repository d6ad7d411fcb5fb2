//! [`TimerRef`]: a timer that [`Context::send_after`](crate::Context::send_after) started.

use crate::timer::{Timer, TimerKey};

/// A timer started by [`Context::send_after`](crate::Context::send_after).
///
/// ```
/// use std::time::Duration;
/// let rt = otter::Runtime::new();
/// let cancelled = rt.block_on(|cx: otter::Context<u8>| async move {
///     let t: otter::TimerRef = cx.send_after(cx.pid(), 1, Duration::from_secs(60));
///     t.cancel()
/// });
/// assert!(cancelled.unwrap());
/// ```
#[derive(Debug)]
pub struct TimerRef {
    pub(super) key: TimerKey,
    pub(super) timer: std::sync::Weak<Timer>,
}

impl TimerRef {
    /// Cancels the timer. Returns `true` if it had not fired yet (the message will not
    /// be sent), `false` if it already fired or its runtime is gone: Erlang's
    /// `cancel_timer/1` returning the time left or `false`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u8>| async move {
    ///     let t = cx.send_after(cx.pid(), 1, Duration::from_millis(1));
    ///     let m = cx.recv().await;
    ///     (m, t.cancel())
    /// });
    /// assert_eq!(r.unwrap(), (1, false));
    /// ```
    pub fn cancel(self) -> bool {
        self.timer.upgrade().is_some_and(|t| t.cancel(self.key))
    }
}
