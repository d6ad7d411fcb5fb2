//! The futures of a process's yield points: [`Context::yield_now`](crate::Context::yield_now), the awaitable send
//! ([`Context::send`](crate::Context::send)) and [`Context::consume_budget`](crate::Context::consume_budget) (the budget's rules are
//! `coop.rs`'s).

use std::future::Future;

use super::owner::Owner;
use super::send;
use crate::error::TrySendError;
use crate::pid::Pid;

/// The future of [`Context::yield_now`](crate::Context::yield_now).
///
/// ```
/// let rt = otter::Runtime::new();
/// rt.block_on(|cx: otter::Context<()>| async move {
///     let y: otter::YieldNow = cx.yield_now();
///     y.await
/// }).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldNow {
    pub(super) yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.yielded {
            return std::task::Poll::Ready(());
        }
        self.yielded = true;
        // The process's waker: it is running, so this queues it again after this poll.
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// The future of [`Context::send`](crate::Context::send): the yield after the send, if the send spent the
/// turn's budget (and the turn is not renewed in place); else ready at once. If the
/// receiver's mailbox is bounded and was full, the future holds the message and sends
/// it once there is room (`mailbox/bound.rs`); if the receiver is on another node
/// whose connection is busy, once it is not (`dist/connection.rs`, "Limits"). `N` is
/// the receiver's message type.
///
/// ```
/// let rt = otter::Runtime::new();
/// rt.block_on(|mut cx: otter::Context<u8>| async move {
///     let me = cx.pid();
///     let s: otter::Sending<'_, u8> = cx.send(me, 1);
///     s.await;
///     cx.recv().await
/// }).unwrap();
/// ```
#[must_use = "the message is sent unless the mailbox is full; awaiting this is the yield, or the wait for room"]
pub struct Sending<'a, M, N = M> {
    pub(super) owner: &'a mut Owner<M>,
    /// Whether the send spent the budget: the first poll yields (or renews the turn).
    pub(super) spent: bool,
    /// The message and its receiver, while the receiver's bounded mailbox is full.
    /// Boxed: the future is stored in its caller's state across the `.await`, and a
    /// loop of sends would otherwise move the message's bytes there on every send.
    pub(super) waiting: Option<Box<(Pid<N>, N)>>,
}

// Nothing in a `Sending` is pinned: the message is moved in and out by value.
impl<M, N> Unpin for Sending<'_, M, N> {}

impl<M, N> std::fmt::Debug for Sending<'_, M, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sending")
            .field("spent", &self.spent)
            .field("waiting", &self.waiting.is_some())
            .finish_non_exhaustive()
    }
}

impl<M, N: Send + 'static> Future for Sending<'_, M, N> {
    type Output = ();

    #[inline(always)]
    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = self.get_mut();
        if this.waiting.is_some() {
            return this.wait_for_room(cx);
        }
        if this.spent {
            // The first poll yields, unless the turn is renewed in place; the poll
            // after the yield finds `spent` cleared.
            this.spent = false;
            if !this.owner.send_budget_spent() {
                return std::task::Poll::Pending;
            }
        }
        std::task::Poll::Ready(())
    }
}

impl<M, N: Send + 'static> Sending<'_, M, N> {
    /// The receiver's bounded mailbox was full: tries again, and waits for room
    /// (`mailbox/bound.rs`, the sender's steps). A receiver that has exited drops the
    /// message, as a send to it would. The wait is the yield: `spent` is dropped.
    #[cold]
    #[inline(never)]
    fn wait_for_room(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let Some(waiting) = self.waiting.take() else {
            return std::task::Poll::Ready(());
        };
        let (to, m) = *waiting;
        if to.raw.is_remote() {
            // A busy peer (`dist/connection.rs`, "Busy"): the retry files the waker
            // and sends unless the connection is still busy.
            return match send::send_remote_or_wait(to, m, cx.waker()) {
                Err(TrySendError::Full(m)) => {
                    self.waiting = Some(Box::new((to, m)));
                    std::task::Poll::Pending
                }
                Ok(()) | Err(TrySendError::Exited(_)) => std::task::Poll::Ready(()),
            };
        }
        let m = match send::send_checked(to, m) {
            Err(TrySendError::Full(m)) => m,
            Ok(()) | Err(TrySendError::Exited(_)) => return std::task::Poll::Ready(()),
        };
        send::wait_for_room(to, cx.waker());
        match send::send_checked(to, m) {
            Err(TrySendError::Full(m)) => {
                self.waiting = Some(Box::new((to, m)));
                std::task::Poll::Pending
            }
            Ok(()) | Err(TrySendError::Exited(_)) => std::task::Poll::Ready(()),
        }
    }
}

/// The future of [`Context::consume_budget`](crate::Context::consume_budget).
///
/// ```
/// let rt = otter::Runtime::new();
/// rt.block_on(|mut cx: otter::Context<()>| async move {
///     let c: otter::ConsumeBudget<'_, ()> = cx.consume_budget();
///     c.await
/// }).unwrap();
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct ConsumeBudget<'a, M> {
    pub(super) owner: &'a mut Owner<M>,
    pub(super) yielded: bool,
}

impl<M> std::fmt::Debug for ConsumeBudget<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeBudget")
            .field("yielded", &self.yielded)
            .finish_non_exhaustive()
    }
}

impl<M> Future for ConsumeBudget<'_, M> {
    type Output = ();

    #[inline]
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let this = self.get_mut();
        if this.yielded {
            return std::task::Poll::Ready(());
        }
        if !crate::coop::consume_budget() && !this.owner.budget_spent() {
            this.yielded = true;
            return std::task::Poll::Pending;
        }
        std::task::Poll::Ready(())
    }
}
