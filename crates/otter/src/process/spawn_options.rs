//! [`SpawnOptions`]: how a process is spawned (Erlang's `spawn_opt/2` options), and
//! the spawns that take them.

use std::future::Future;

use super::{Context, cell};
use crate::exit::IntoExitReason;
use crate::monitor::{Down, MonitorRef, Watcher};
use crate::pid::{Pid, RawPid};
use crate::process::bonds::{self, Bonds};

/// Options for [`Context::spawn_opt`](crate::Context::spawn_opt),
/// [`Context::spawn_monitor_opt`](crate::Context::spawn_monitor_opt) and the servers'
/// [`start_opt`](crate::server::start_opt): Erlang's `spawn_opt/2` option list, as a
/// builder. `SpawnOptions::new()` (or `default()`) spawns as
/// [`Context::spawn`](crate::Context::spawn) does.
///
/// ```
/// use otter::{Context, Runtime, SpawnOptions};
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let opts = SpawnOptions::new().bounded_mailbox(2);
///     // Keeps its `Context` (the mailbox's receiving end) and never receives.
///     let idle = cx.spawn_opt(opts, |c: Context<u32>| async move {
///         let _receiver = c;
///         std::future::pending::<()>().await
///     });
///     (idle.try_send(1), idle.try_send(2), idle.try_send(3))
/// });
/// assert_eq!(r.unwrap(), (Ok(()), Ok(()), Err(otter::TrySendError::Full(3))));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpawnOptions {
    /// The mailbox's bound; 0 for none (`mailbox/bound.rs`, the bound word).
    pub(crate) bound: u32,
    /// Spawn linked to the caller.
    pub(crate) link: bool,
}

impl SpawnOptions {
    /// The largest bound [`SpawnOptions::bounded_mailbox`] takes: 2^30 − 1.
    pub const MAX_MAILBOX_BOUND: usize = crate::mailbox::bound::CAPACITY as usize;

    /// The queue length past which an unbounded mailbox mutes the senders that await
    /// [`Context::send`](crate::Context::send) to it, until it has drained to half:
    /// 65,536 messages. Plain sends are never muted.
    pub const MUTE_AT: usize = crate::mailbox::bound::MUTE_AT;

    /// The options of a plain spawn: not linked, mailbox unbounded.
    ///
    /// ```
    /// assert_eq!(otter::SpawnOptions::new().mailbox_bound(), None);
    /// ```
    pub const fn new() -> SpawnOptions {
        SpawnOptions {
            bound: 0,
            link: false,
        }
    }

    /// Links the new process to the caller before it can run (Erlang's `link` option;
    /// [`Context::spawn_link`](crate::Context::spawn_link)). For servers,
    /// [`start_opt`](crate::server::start_opt) with this option is `start_link`.
    ///
    /// ```
    /// assert!(otter::SpawnOptions::new().link().is_linked());
    /// ```
    pub const fn link(mut self) -> SpawnOptions {
        self.link = true;
        self
    }

    /// Whether [`SpawnOptions::link`] was given.
    ///
    /// ```
    /// assert!(!otter::SpawnOptions::default().is_linked());
    /// ```
    pub const fn is_linked(&self) -> bool {
        self.link
    }

    /// Bounds the new process's mailbox at `capacity` messages. Erlang has no such
    /// option (its mailboxes grow until the node runs out of memory, and
    /// `max_heap_size` kills the receiver instead); here a producer faster than its
    /// consumer is held back rather than let fill the heap.
    ///
    /// What the bound does:
    ///
    /// * [`Pid::try_send`](crate::Pid::try_send) to a full mailbox hands the message
    ///   back as [`TrySendError::Full`](crate::TrySendError::Full) (and as `Exited` to
    ///   a process that has exited, bounded or not).
    /// * The awaitable [`Context::send`](crate::Context::send) waits for room: the
    ///   future holds the message until the receiver has taken enough messages to
    ///   drain its queue to half the bound, then sends it (waiters are woken in
    ///   batches; `mailbox/bound.rs` has the protocol). If the receiver exits meanwhile
    ///   the message is dropped, as a message to an exited process is.
    /// * A server's [`call`](crate::server::ServerRef::call) to a full server fails at
    ///   once with [`CallError::Full`](crate::server::CallError::Full), which the
    ///   caller can handle (back off, shed the request); a
    ///   [`try_cast`](crate::server::ServerRef::try_cast) hands the cast back.
    ///
    /// What it never refuses (each is delivered beyond the bound if need be):
    ///
    /// * Plain [`Pid::send`](crate::Pid::send) (and [`ServerRef::cast`](crate::server::ServerRef::cast),
    ///   `info`, named sends): it never fails and never blocks, and no message to a
    ///   live process is lost, so it is accepted. Code that must respect the bound uses
    ///   one of the sends above.
    /// * Exit signals and [`Down`](crate::Down)s: the runtime sends them, and they say
    ///   that a process the receiver depends on is gone; refusing one would lose that
    ///   fact for good (there is no sender to retry), and an exit signal that is not
    ///   trapped never enters the mailbox at all.
    /// * Timer messages ([`Context::send_after`](crate::Context::send_after),
    ///   intervals): the timer has no one to hand a refused message back to, and a
    ///   process that set a timer for itself relies on it firing.
    /// * Call replies: they go to the caller's reply slot, not its mailbox, and the
    ///   caller is waiting for exactly that reply; a bounded caller can always be
    ///   answered.
    /// * System messages (`sys`) and a server's stop request: the runtime's control of
    ///   the process must not depend on its load.
    ///
    /// The bound counts what is in the queue when a send is tested, whichever way it
    /// arrived, so those deliveries take room too; they are never refused for it. The
    /// test and the push are two steps, so concurrent senders may each take the last
    /// slot: the queue may pass the bound by one message per sending thread. Messages a
    /// selective receive looked at and left behind (the save area, `mailbox/saved.rs`)
    /// have left the queue and do not count.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or above [`SpawnOptions::MAX_MAILBOX_BOUND`].
    ///
    /// ```
    /// let o = otter::SpawnOptions::new().bounded_mailbox(100);
    /// assert_eq!(o.mailbox_bound(), Some(100));
    /// ```
    pub const fn bounded_mailbox(mut self, capacity: usize) -> SpawnOptions {
        assert!(
            capacity > 0 && capacity <= Self::MAX_MAILBOX_BOUND,
            "otter: a mailbox bound is between 1 and SpawnOptions::MAX_MAILBOX_BOUND"
        );
        self.bound = capacity as u32;
        self
    }

    /// The mailbox's bound, if [`SpawnOptions::bounded_mailbox`] set one.
    ///
    /// ```
    /// assert_eq!(otter::SpawnOptions::new().bounded_mailbox(8).mailbox_bound(), Some(8));
    /// ```
    pub const fn mailbox_bound(&self) -> Option<usize> {
        if self.bound == 0 {
            None
        } else {
            Some(self.bound as usize)
        }
    }
}

impl<M: Send + 'static> Context<M> {
    /// Spawns a process with `options` (Erlang's `spawn_opt/2`): linked to this one
    /// if [`SpawnOptions::link`], with a bounded mailbox if
    /// [`SpawnOptions::bounded_mailbox`]. With `SpawnOptions::new()` it is
    /// [`Context::spawn`].
    ///
    /// ```
    /// use otter::{Context, Runtime, SpawnOptions};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<u32>| async move {
    ///     let me = cx.pid();
    ///     let worker = cx.spawn_opt(SpawnOptions::new().bounded_mailbox(16), move |mut c: Context<u32>| async move {
    ///         let mut sum = 0;
    ///         for _ in 0..100 { sum += c.recv().await; }
    ///         me.send(sum);
    ///     });
    ///     // The awaitable send waits whenever the worker's 16 slots are taken.
    ///     for i in 0..100 { cx.send(worker, i).await; }
    ///     cx.recv().await
    /// });
    /// assert_eq!(r.unwrap(), 4950);
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime is shutting down.
    pub fn spawn_opt<N, F, Fut>(&self, options: SpawnOptions, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        if options.link {
            return self.spawn_with(f, options, |_| None);
        }
        crate::coop::charge_spawn();
        cell::spawn_bonded(
            self.spawn_runtime(),
            self.pid().raw,
            f,
            |_| None,
            options.bound,
        )
    }

    /// [`Context::spawn_monitor`] with `options` (Erlang's `spawn_opt/2` with
    /// `monitor`): see [`Context::spawn_opt`].
    ///
    /// ```
    /// use otter::{Context, Down, ExitReason, Runtime, SpawnOptions};
    /// struct Msg(Down);
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let opts = SpawnOptions::new().bounded_mailbox(1);
    ///     let (_child, _) = cx.spawn_monitor_opt(opts, |_: Context<()>| async { ExitReason::Shutdown });
    ///     let Msg(d) = cx.recv().await;
    ///     d.reason
    /// });
    /// assert_eq!(r.unwrap(), ExitReason::Shutdown);
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime is shutting down.
    pub fn spawn_monitor_opt<N, F, Fut>(&self, options: SpawnOptions, f: F) -> (Pid<N>, MonitorRef)
    where
        M: From<Down>,
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        let mut reference = None;
        let pid = self.spawn_with(f, options, |child| {
            let (r, watcher) = self.watcher(child);
            reference = Some(r);
            Some(watcher)
        });
        let reference = reference.expect("bonds built at spawn");
        crate::process::bonds::hold(self.owner.header(), reference.id, reference.target);
        (pid, reference)
    }

    /// Spawns a process with `options` (linked to this one if `options.link`), and
    /// watched by the watcher `watcher(child)` builds, both set before it can run
    /// (`start_link`, supervisors).
    pub(crate) fn spawn_with<N, F, Fut>(
        &self,
        f: F,
        options: SpawnOptions,
        watcher: impl FnOnce(RawPid) -> Option<Watcher>,
    ) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        crate::coop::charge_spawn();
        let me = self.pid().raw;
        let link = options.link;
        cell::spawn_bonded(
            self.spawn_runtime(),
            me,
            f,
            |child| {
                if link {
                    bonds::link_one_side(me, child);
                }
                Some(Bonds::new(link.then_some(me), watcher(child)))
            },
            options.bound,
        )
    }
}
