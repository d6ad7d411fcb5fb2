//! The receive operations of a process: [`Context::recv`] and its timed, selective
//! and keyed forms, their futures, and the process's queue length. What they promise
//! (Erlang's `receive`, the save area, keyed receive, bounded mailboxes) is
//! `mailbox.rs`'s module docs; the save area itself is `mailbox/saved.rs`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use crate::coop::consume_budget;
use crate::mailbox::Keyed;
use crate::mailbox::index::{Index, Seq};
use crate::mailbox::saved::{Saved, clear_index, index_one, take_indexed};
use crate::process::Context;
use crate::timer::Sleep;

impl<M: Send + 'static> Context<M> {
    /// Takes the next message, in arrival order: Erlang's `receive Msg -> Msg end`.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     cx.pid().send(1);
    ///     cx.pid().send(2);
    ///     (cx.recv().await, cx.recv().await)
    /// });
    /// assert_eq!(r.unwrap(), (1, 2));
    /// ```
    pub fn recv(&mut self) -> Recv<'_, M> {
        Recv { cx: self }
    }

    /// Takes the next message if one is there now, without waiting.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     let none = cx.try_recv();
    ///     cx.pid().send(3);
    ///     (none, cx.try_recv())
    /// });
    /// assert_eq!(r.unwrap(), (None, Some(3)));
    /// ```
    pub fn try_recv(&mut self) -> Option<M> {
        if let Some(m) = self.saved.as_deref_mut().and_then(Saved::pop_front) {
            self.taken_from_saved();
            return Some(m);
        }
        self.owner.pop()
    }

    /// Takes the next message (the one [`Context::try_recv`] would take) if there is one
    /// now and `pred` holds for it; otherwise leaves it where it was, first in line: a
    /// queue message looked at is moved to the front of an empty save area, which keeps
    /// the order. Unlike [`Context::try_recv_match`] it never looks past that message, so
    /// a caller that takes a run of messages of one kind keeps arrival order with the
    /// others (the supervisor's batched starts, `supervisor.rs`).
    pub(crate) fn try_recv_next_if(&mut self, pred: impl FnOnce(&M) -> bool) -> Option<M> {
        if let Some(saved) = self.saved.as_deref_mut().filter(|s| s.live > 0) {
            let seq = (saved.base..saved.end()).find(|&seq| saved.get(seq).is_some())?;
            if !saved.get(seq).is_some_and(pred) {
                return None;
            }
            let m = saved.take(seq);
            self.taken_from_saved();
            return m;
        }
        let m = self.owner.pop()?;
        if pred(&m) {
            return Some(m);
        }
        self.save(m);
        None
    }

    /// How many messages wait in this process's mailbox: Erlang's
    /// `process_info(self(), message_queue_len)`. Those a selective receive looked at
    /// and left (the save area) count, as in Erlang; so do messages whose sender is
    /// writing them at this instant (a receive right after may still have to wait a
    /// few instructions for them). Exact at the moment of the read: two loads of
    /// positions the mailbox keeps anyway, no read-modify-write and no lock; senders
    /// count nothing. To read another process's, [`Pid::message_queue_len`](crate::Pid::message_queue_len).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     let me = cx.pid();
    ///     for i in 0..100 { me.send(i); }
    ///     let before = cx.message_queue_len();
    ///     let _ = cx.try_recv_match(|m| *m == 50); // 50 messages move to the save area
    ///     (before, cx.message_queue_len())
    /// });
    /// assert_eq!(r.unwrap(), (100, 99));
    /// ```
    pub fn message_queue_len(&self) -> usize {
        self.owner.queue_len() + self.saved.as_deref().map_or(0, |s| s.live)
    }

    /// The save area, boxed on its first use (`Context::saved`).
    fn saved_mut(&mut self) -> &mut Saved<M> {
        self.saved.get_or_insert_with(|| Box::new(Saved::new()))
    }

    /// Puts `m` at the end of the save area, and publishes the area's count.
    fn save(&mut self, m: M) -> Seq {
        let saved = self.saved.get_or_insert_with(|| Box::new(Saved::new()));
        let seq = saved.push(m);
        self.owner.set_saved(saved.live);
        seq
    }

    /// Publishes how many messages the save area holds, for introspection
    /// (`ProcessInfo::message_queue_len`, `Memory::saved`): a store each time one goes
    /// in ([`Context::save`]) or comes out (here), none on a receive that does not use
    /// the area.
    #[inline]
    fn taken_from_saved(&self) {
        self.owner
            .set_saved(self.saved.as_deref().map_or(0, |s| s.live));
    }

    /// Takes the oldest message for which `pred` is true if there is one now, without
    /// waiting (`receive Pattern -> ... after 0 -> none end`). Unmatched messages stay in
    /// order, as with [`Context::recv_match`].
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     cx.pid().send(1);
    ///     cx.pid().send(2);
    ///     (cx.try_recv_match(|m| *m == 2), cx.try_recv_match(|m| *m == 3), cx.try_recv())
    /// });
    /// assert_eq!(r.unwrap(), (Some(2), None, Some(1)));
    /// ```
    pub fn try_recv_match(&mut self, mut pred: impl FnMut(&M) -> bool) -> Option<M> {
        if let Some(saved) = self.saved.as_deref_mut() {
            let mut seq = saved.base;
            while seq < saved.end() {
                if saved.get(seq).is_some_and(&mut pred) {
                    let m = saved.take(seq);
                    self.taken_from_saved();
                    return m;
                }
                seq += 1;
            }
        }
        while let Some(m) = self.owner.pop() {
            if pred(&m) {
                return Some(m);
            }
            self.save(m);
        }
        None
    }

    /// Takes the next message, or `None` once `timeout` has passed without one:
    /// `receive Msg -> Msg after Timeout -> timeout end`. Never returns `None` before
    /// the timeout; a zero timeout polls once; `Duration::MAX` waits for ever (Erlang's
    /// `infinity`), as does any timeout too long for `Instant`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     cx.recv_timeout(Duration::from_millis(2)).await
    /// });
    /// assert_eq!(r.unwrap(), None);
    /// ```
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Option<M> {
        let deadline = crate::timer::deadline_after(timeout);
        self.recv_match_until(|_| true, Some(deadline)).await
    }

    /// Takes the oldest message for which `pred` is true, leaving the others in the
    /// mailbox in their order: Erlang's selective receive. See the module docs for the
    /// cost model.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     for i in [1, 2, 3, 4] { cx.pid().send(i); }
    ///     let even = cx.recv_match(|m| m % 2 == 0).await;
    ///     (even, cx.recv().await, cx.recv().await)
    /// });
    /// assert_eq!(r.unwrap(), (2, 1, 3));
    /// ```
    pub async fn recv_match(&mut self, pred: impl FnMut(&M) -> bool) -> M {
        match self.recv_match_until(pred, None).await {
            Some(m) => m,
            None => unreachable!("no deadline"),
        }
    }

    /// [`Context::recv_match`] with a timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u32>| async move {
    ///     cx.pid().send(1);
    ///     let none = cx.recv_match_timeout(|m| *m == 2, Duration::from_millis(1)).await;
    ///     (none, cx.recv().await)
    /// });
    /// assert_eq!(r.unwrap(), (None, 1));
    /// ```
    pub async fn recv_match_timeout(
        &mut self,
        pred: impl FnMut(&M) -> bool,
        timeout: Duration,
    ) -> Option<M> {
        let deadline = crate::timer::deadline_after(timeout);
        self.recv_match_until(pred, Some(deadline)).await
    }

    async fn recv_match_until(
        &mut self,
        pred: impl FnMut(&M) -> bool,
        deadline: Option<Instant>,
    ) -> Option<M> {
        let sleep = deadline.map(|d| self.sleep_until(d));
        RecvMatch {
            cursor: self.saved.as_ref().map_or(0, |s| s.base),
            cx: self,
            pred,
            sleep,
        }
        .await
    }

    /// Takes the oldest message whose [`Keyed::key`] is `key`, in `O(1)` amortised
    /// whatever else waits in the mailbox (see the module docs).
    ///
    /// ```
    /// use otter::{Context, Keyed, Pid};
    /// struct Done(Pid<()>);
    /// impl Keyed for Done {
    ///     type Key = Pid<()>;
    ///     fn key(&self) -> Option<Pid<()>> { Some(self.0) }
    /// }
    /// let rt = otter::Runtime::new();
    /// let n = rt.block_on(|mut cx: Context<Done>| async move {
    ///     let me = cx.pid();
    ///     let kids: Vec<Pid<()>> = (0..100)
    ///         .map(|_| cx.spawn(move |c: Context<()>| async move { me.send(Done(c.pid())) }))
    ///         .collect();
    ///     for k in kids.iter().rev() {
    ///         let Done(p) = cx.recv_key(k).await;
    ///         assert_eq!(p, *k);
    ///     }
    ///     kids.len()
    /// });
    /// assert_eq!(n.unwrap(), 100);
    /// ```
    pub fn recv_key<'a>(&'a mut self, key: &'a M::Key) -> RecvKey<'a, M>
    where
        M: Keyed,
    {
        let saved = self.saved_mut();
        if saved.index.is_none() {
            saved.index = Some(Box::new(Index::<M::Key>::new()));
            saved.indexer = Some((index_one::<M>, clear_index::<M::Key>));
            saved.reindex();
        }
        RecvKey { cx: self, key }
    }
}

/// The future of [`Context::recv`]: ready with the next message.
///
/// ```
/// let rt = otter::Runtime::new();
/// let r = rt.block_on(|mut cx: otter::Context<u8>| async move {
///     cx.pid().send(4);
///     let fut: otter::Recv<'_, u8> = cx.recv();
///     fut.await
/// });
/// assert_eq!(r.unwrap(), 4);
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Recv<'a, M: Send + 'static> {
    cx: &'a mut Context<M>,
}

impl<M: Send + 'static> std::fmt::Debug for Recv<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recv").finish_non_exhaustive()
    }
}

impl<M: Keyed + Send + 'static> std::fmt::Debug for RecvKey<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvKey").finish_non_exhaustive()
    }
}

impl<M: Send + 'static> Future for Recv<'_, M> {
    type Output = M;

    #[inline]
    fn poll(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<M> {
        let cx = &mut *self.get_mut().cx;
        if !consume_budget() && !cx.owner.budget_spent() {
            return Poll::Pending;
        }
        match cx.try_recv() {
            Some(m) => Poll::Ready(m),
            None => Poll::Pending,
        }
    }
}

struct RecvMatch<'a, M: Send + 'static, P> {
    cx: &'a mut Context<M>,
    pred: P,
    /// The first sequence number this receive has not examined yet.
    cursor: Seq,
    sleep: Option<Sleep>,
}

impl<M: Send + 'static, P: FnMut(&M) -> bool> Future for RecvMatch<'_, M, P> {
    type Output = Option<M>;

    fn poll(self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Option<M>> {
        let this = self.get_mut();
        if !consume_budget() && !this.cx.owner.budget_spent() {
            return Poll::Pending;
        }
        if let Some(saved) = this.cx.saved.as_deref_mut() {
            let mut seq = this.cursor.max(saved.base);
            while seq < saved.end() {
                if saved.get(seq).is_some_and(|m| (this.pred)(m)) {
                    let m = saved.take(seq);
                    this.cx.taken_from_saved();
                    return Poll::Ready(m);
                }
                seq += 1;
            }
            this.cursor = seq;
        }
        let mut examined = 0u32;
        while let Some(m) = this.cx.owner.pop() {
            if (this.pred)(&m) {
                return Poll::Ready(Some(m));
            }
            this.cursor = this.cx.save(m) + 1;
            examined += 1;
            if examined == crate::tuning::BUDGET * 8 {
                // A long scan yields like a long run of receives does.
                this.cx.owner.schedule_self();
                return Poll::Pending;
            }
        }
        match this.sleep.as_mut() {
            Some(s) => {
                if s.poll_elapsed(task) {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                }
            }
            None => Poll::Pending,
        }
    }
}

// Nothing in a `RecvMatch` is pinned: the predicate is only called through `&mut`.
impl<M: Send + 'static, P> Unpin for RecvMatch<'_, M, P> {}

/// The future of [`Context::recv_key`]: ready with the oldest message with the key.
///
/// ```
/// use otter::Keyed;
/// struct Tagged(u32, &'static str);
/// impl Keyed for Tagged {
///     type Key = u32;
///     fn key(&self) -> Option<u32> { Some(self.0) }
/// }
/// let rt = otter::Runtime::new();
/// let r = rt.block_on(|mut cx: otter::Context<Tagged>| async move {
///     cx.pid().send(Tagged(1, "a"));
///     cx.pid().send(Tagged(2, "b"));
///     let fut: otter::RecvKey<'_, Tagged> = cx.recv_key(&2);
///     fut.await.1
/// });
/// assert_eq!(r.unwrap(), "b");
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RecvKey<'a, M: Keyed + Send + 'static> {
    cx: &'a mut Context<M>,
    key: &'a M::Key,
}

impl<M: Keyed + Send + 'static> Future for RecvKey<'_, M> {
    type Output = M;

    fn poll(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<M> {
        let this = self.get_mut();
        if !consume_budget() && !this.cx.owner.budget_spent() {
            return Poll::Pending;
        }
        if let Some(m) = take_indexed::<M>(this.cx.saved_mut(), this.key) {
            this.cx.taken_from_saved();
            return Poll::Ready(m);
        }
        while let Some(m) = this.cx.owner.pop() {
            if m.key().as_ref() == Some(this.key) {
                return Poll::Ready(m);
            }
            this.cx.save(m);
        }
        Poll::Pending
    }
}
