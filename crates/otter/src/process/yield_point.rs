//! The futures of a process's yield points: [`Context::yield_now`](crate::Context::yield_now), the awaitable send
//! ([`Context::send`](crate::Context::send)) and [`Context::consume_budget`](crate::Context::consume_budget) (the budget's rules are
//! `coop.rs`'s).

use std::future::Future;

use super::owner::Owner;

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
/// turn's budget (and the turn is not renewed in place); else ready at once.
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
#[must_use = "the message is sent; awaiting this is the yield when the budget is spent"]
pub struct Sending<'a, M> {
    pub(super) owner: &'a mut Owner<M>,
    /// Whether the send spent the budget: the first poll yields (or renews the turn).
    pub(super) spent: bool,
}

impl<M> std::fmt::Debug for Sending<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sending")
            .field("spent", &self.spent)
            .finish_non_exhaustive()
    }
}

impl<M> Future for Sending<'_, M> {
    type Output = ();

    #[inline(always)]
    fn poll(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        let this = self.get_mut();
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
