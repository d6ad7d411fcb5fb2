//! The futures of a process's yield points: [`Context::yield_now`](crate::Context::yield_now), the awaitable send
//! ([`Context::send`](crate::Context::send)) and [`Context::consume_budget`](crate::Context::consume_budget) (the budget's rules are
//! `coop.rs`'s).

use std::future::Future;

use super::owner::Owner;
use super::send;
use crate::error::TrySendError;
use crate::mailbox::bound::{MUTE_AT, MUTE_RECHECK};
use crate::pid::{Pid, RawPid};

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
    /// The sender muted (`mailbox/bound.rs`, "Muting") holds its recheck timer here.
    /// One box for both, so that the usual send drops one `None`.
    pub(super) waiting: Option<Box<Slow<N>>>,
}

/// What a [`Sending`] waits for, when it waits.
pub(crate) enum Slow<N> {
    /// Room in the receiver's bounded mailbox, for this message.
    Full(Pid<N>, N),
    /// The receiver's queue to drain: the sender is muted until it looks again on its
    /// own at this deadline. The timer that wakes it then is not cancelled when it goes
    /// on sooner (one spurious wake-up at most, within `MUTE_RECHECK`), so that this
    /// type has no drop glue to run after every send.
    Muted(RawPid, std::time::Instant),
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
            return this.slow(cx);
        }
        if this.spent {
            // The first poll yields, unless the turn is renewed in place; the poll
            // after the yield finds `spent` cleared.
            this.spent = false;
            if let Some(flooded) = send::flooded() {
                return this.mute(cx, flooded);
            }
            if !this.owner.send_budget_spent() {
                return std::task::Poll::Pending;
            }
        }
        std::task::Poll::Ready(())
    }
}

impl<M, N: Send + 'static> Sending<'_, M, N> {
    /// At the yield point, a receiver of this turn's sends having its queue past
    /// `MUTE_AT`: mutes this sender (`mailbox/bound.rs`, "Muting") unless its own queue
    /// is past it too, and arms its recheck timer; else yields as [`Sending::poll`]
    /// does.
    #[cold]
    #[inline(never)]
    fn mute(&mut self, cx: &mut std::task::Context<'_>, to: RawPid) -> std::task::Poll<()> {
        if self.owner.queue_len() <= MUTE_AT
            && send::still_muted(to, cx.waker())
            && let Some(deadline) = self.recheck_at(cx)
        {
            self.waiting = Some(Box::new(Slow::Muted(to, deadline)));
            return std::task::Poll::Pending;
        }
        if self.owner.send_budget_spent() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }

    /// Arms a timer that wakes this process after [`MUTE_RECHECK`]; its deadline, or
    /// `None` if the runtime has shut down.
    fn recheck_at(&self, cx: &mut std::task::Context<'_>) -> Option<std::time::Instant> {
        let rt = self.owner.runtime()?;
        let deadline = crate::timer::deadline_after(MUTE_RECHECK);
        rt.services
            .timer
            .insert(deadline, crate::timer::Action::Wake(cx.waker().clone()));
        Some(deadline)
    }

    /// Waiting for room or muted: the slow paths of [`Sending::poll`].
    #[cold]
    #[inline(never)]
    fn slow(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        match self.waiting.take().map(|b| *b) {
            Some(Slow::Full(to, m)) => self.wait_for_room(cx, to, m),
            Some(Slow::Muted(to, deadline)) => self.muted(cx, to, deadline),
            None => std::task::Poll::Ready(()),
        }
    }

    /// A muted sender, woken: goes on once the receiver has drained to half, has
    /// exited, or this process's own queue is too long; else waits again (with a new
    /// recheck timer if this one has run out).
    fn muted(
        &mut self,
        cx: &mut std::task::Context<'_>,
        to: RawPid,
        mut deadline: std::time::Instant,
    ) -> std::task::Poll<()> {
        if self.owner.queue_len() > MUTE_AT || !send::still_muted(to, cx.waker()) {
            return std::task::Poll::Ready(());
        }
        if crate::time::now() >= deadline {
            match self.recheck_at(cx) {
                Some(d) => deadline = d,
                None => return std::task::Poll::Ready(()),
            }
        }
        self.waiting = Some(Box::new(Slow::Muted(to, deadline)));
        std::task::Poll::Pending
    }

    /// The receiver's bounded mailbox was full: tries again, and waits for room
    /// (`mailbox/bound.rs`, the sender's steps). A receiver that has exited drops the
    /// message, as a send to it would. The wait is the yield: `spent` is dropped.
    fn wait_for_room(
        &mut self,
        cx: &mut std::task::Context<'_>,
        to: Pid<N>,
        m: N,
    ) -> std::task::Poll<()> {
        if to.raw.is_remote() {
            // A busy peer (`dist/connection.rs`, "Busy"): the retry files the waker
            // and sends unless the connection is still busy.
            return match send::send_remote_or_wait(to, m, cx.waker()) {
                Err(TrySendError::Full(m)) => {
                    self.waiting = Some(Box::new(Slow::Full(to, m)));
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
                self.waiting = Some(Box::new(Slow::Full(to, m)));
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

/// The message [`Context::send`] keeps for the wait for room, if its receiver's bounded
/// mailbox was full (one to an exited process is dropped). Out of line: the send loop's
/// body keeps only the call.
#[cold]
#[inline(never)]
pub(super) fn waiting<N>(to: Pid<N>, refused: crate::TrySendError<N>) -> Option<Box<Slow<N>>> {
    match refused {
        crate::TrySendError::Full(m) => Some(Box::new(Slow::Full(to, m))),
        crate::TrySendError::Exited(_) => None,
    }
}
