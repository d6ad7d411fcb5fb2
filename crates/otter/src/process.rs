//! Processes: spawning, and the context a process runs with.
//!
//! A process is a future with a mailbox. Spawning allocates one cell holding its control
//! block, its mailbox head and its future (`process/cell.rs`), files it in the process
//! table (`process/table.rs`) and queues it to run. The future gets the process's
//! [`Context`]: its own pid, its mailbox's receiving end, and the way to spawn more
//! processes on the same runtime.
//!
//! A process ends when its future returns (reason from [`IntoExitReason`]) or panics
//! (reason [`ExitReason::Panic`] with the message). The panic is caught at the process
//! boundary: the worker and every other process carry on.

pub(crate) mod bonds;
pub(crate) mod cell;
pub(crate) mod gate;
pub(crate) mod harness;
pub(crate) mod owner;
pub(crate) mod receive;
pub(crate) mod send;
mod spawn_options;
pub(crate) mod state;
pub(crate) mod table;
mod timer_ref;
pub(crate) mod waker;
mod yield_point;

pub use spawn_options::SpawnOptions;
pub use timer_ref::TimerRef;
pub use yield_point::{ConsumeBudget, Sending, YieldNow};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use std::any::TypeId;

use crate::exit::IntoExitReason;
use crate::mailbox::saved::Saved;
use crate::monitor::{Down, DownMessage, MonitorRef, Notify, Watcher};
use crate::pid::{Pid, ProcessId, RawPid};
use crate::registry::RegisterError;
use crate::signal::{Exit, Kind};
use crate::timer::interval::IntervalRef;
use crate::timer::{Action, Sleep, Timer};
use owner::Owner;

use crate::ExitReason;

/// What a process runs with: its pid, its mailbox, and its runtime.
///
/// A `Context` is handed to the process's function at spawn and belongs to that
/// process: it moves with the process's future between workers (`Send`), but it is not
/// `Clone` and not `Sync`, and receiving takes `&mut self`, so there is one receiver.
/// Moving it out of its process (into another process or thread) is memory-safe, but
/// receives there are not woken by new messages: wake-ups go to the process. A receive
/// polled on a plain thread takes every message that is there (no turn budget applies).
///
/// ```
/// let rt = otter::Runtime::new();
/// let r = rt.block_on(|mut cx: otter::Context<String>| async move {
///     cx.pid().send("to myself".to_string());
///     cx.recv().await
/// });
/// assert_eq!(r.unwrap(), "to myself");
/// ```
///
/// It is not `Sync`, so a future holding `&Context` across an `.await` is not `Send`:
///
/// ```compile_fail
/// fn is_sync<T: Sync>() {}
/// is_sync::<otter::Context<u8>>();
/// ```
pub struct Context<M> {
    pub(crate) owner: Owner<M>,
    /// The save area of selective receive (`mailbox/saved.rs`), boxed on first use: a
    /// process that never leaves a message behind carries one word here. The
    /// `Context` is part of every process's future (twice, when it is an `async fn`'s
    /// argument), so its size is paid on every process and its lines on every poll.
    pub(crate) saved: Option<Box<Saved<M>>>,
}

impl<M> std::fmt::Debug for Context<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("pid", &self.owner.pid())
            .finish_non_exhaustive()
    }
}

impl<M: Send + 'static> Context<M> {
    pub(crate) fn new(owner: Owner<M>) -> Context<M> {
        Context { owner, saved: None }
    }

    /// This process's pid (Erlang's `self()`).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let ok = rt.block_on(|cx: otter::Context<()>| async move { cx.pid().is_alive() });
    /// assert!(ok.unwrap());
    /// ```
    pub fn pid(&self) -> Pid<M> {
        self.owner.pid()
    }

    /// Spawns a process on this process's runtime. It is queued on this worker, and
    /// another worker may steal it.
    ///
    /// `f` is called right away, on the caller's stack, to build the process's future
    /// from its `Context`; the process's code is that future (the `async` block), which
    /// runs later on a worker. Work done in `f` itself, outside the future, runs in the
    /// caller.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u8>| async move {
    ///     let parent = cx.pid();
    ///     cx.spawn(move |_: otter::Context<()>| async move { parent.send(9) });
    ///     cx.recv().await
    /// });
    /// assert_eq!(r.unwrap(), 9);
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime is shutting down.
    pub fn spawn<N, F, Fut>(&self, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        crate::coop::charge_spawn();
        cell::spawn(self.spawn_runtime(), self.pid().raw, f)
    }

    fn spawn_runtime(&self) -> &crate::scheduler::Shared {
        self.owner
            .runtime()
            .expect("otter: spawn from a process whose runtime has shut down")
    }

    /// A future that completes after `duration` (Erlang's `timer:sleep/1`, but it only
    /// suspends this process).
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// rt.block_on(|cx: otter::Context<()>| async move {
    ///     cx.sleep(Duration::from_millis(1)).await;
    /// }).unwrap();
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        self.sleep_until(crate::timer::deadline_after(duration))
    }

    /// Lets the other processes of this worker run before this one continues.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// rt.block_on(|cx: otter::Context<()>| async move { cx.yield_now().await }).unwrap();
    /// ```
    pub fn yield_now(&self) -> YieldNow {
        YieldNow { yielded: false }
    }

    /// Sends `message` to `to`, and yields if that spent this turn's budget: the send of
    /// a process that may send many messages in a row (Erlang's `To ! Message` in a
    /// loop). Like [`Pid::send`] it never fails; a message to a process that has
    /// exited is dropped. It waits for the receiver only if the receiver's mailbox is
    /// bounded and full ([`SpawnOptions::bounded_mailbox`]): then the future holds the
    /// message and sends it once the receiver has taken messages to make room. The
    /// same for a receiver on another node whose connection is busy (more than the
    /// node's `dist_buf_busy_limit` queued for it, Erlang's `busy_dist_port`): the
    /// message goes once the connection has written its queue down to the limit
    /// (feature `dist`, `dist/connection.rs`'s "Limits").
    ///
    /// **Muting.** At its yield point (once a turn), a sender whose receivers of this
    /// turn include one whose unbounded queue holds more than
    /// [`SpawnOptions::MUTE_AT`] messages waits until that queue has drained to half,
    /// as Pony mutes a sender to an overloaded actor: a producer faster than its
    /// consumer on another worker keeps about `MUTE_AT` messages queued instead of all
    /// it can produce. A sender whose own queue is past `MUTE_AT` is not muted (so
    /// processes that flood each other never wait for each other), and plain
    /// [`Pid::send`] never is. Rules: `mailbox/bound.rs`, "Muting".
    ///
    /// A turn's budget is shared by receives, sends, spawns and socket operations
    /// (crate docs, "Scheduler"). [`Pid::send`] draws on it too but cannot yield: a
    /// loop of plain sends holds its worker until it ends, and a receiver on the same
    /// worker runs only then, after every message has been queued. This send yields
    /// when the budget is spent, as the BEAM yields a sender whose reductions ran out
    /// inside `!`: its receivers run in between, and their mailboxes stay short. If the
    /// worker has nothing else to run, the turn is renewed in place instead (no yield),
    /// for eight budgets.
    ///
    /// Use it in a loop of sends that does not otherwise await; use [`Pid::send`]
    /// elsewhere (a reply, a request before a receive, a send from outside a process),
    /// where the next receive is the yield point anyway.
    ///
    /// The message is sent by this call, as by [`Pid::send`]; the future it returns is
    /// only the yield, ready at once unless the budget is spent. So the future carries
    /// no message, and a loop of awaited sends costs about what a loop of plain ones
    /// does (plus, per send, a load and a branch on whether the receiver is bounded).
    /// Not awaiting it (`#[must_use]` warns) only skips the yield, except on a full
    /// bounded mailbox or a busy peer, where the message is then dropped with the
    /// future.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let sum = rt.block_on(|mut cx: otter::Context<u64>| async move {
    ///     let me = cx.pid();
    ///     let counter = cx.spawn(move |mut c: otter::Context<u64>| async move {
    ///         let mut sum = 0;
    ///         for _ in 0..10_000 { sum += c.recv().await; }
    ///         me.send(sum);
    ///     });
    ///     for i in 0..10_000 {
    ///         cx.send(counter, i).await;
    ///     }
    ///     cx.recv().await
    /// });
    /// assert_eq!(sum.unwrap(), 49_995_000);
    /// ```
    // Always inlined, as `Pid::send` is: a loop of awaited sends then runs the send's
    // stream path in the caller's loop body (docs/design/0014-inlined-streaming-send.md).
    #[inline(always)]
    pub fn send<N: Send + 'static>(&mut self, to: Pid<N>, message: N) -> Sending<'_, M, N> {
        let waiting = match send::send_checked(to, message) {
            Ok(()) => None,
            Err(e) => yield_point::waiting(to, e),
        };
        Sending {
            owner: &mut self.owner,
            spent: crate::coop::budget_spent(),
            waiting,
        }
    }

    /// Takes one unit of this turn's budget, and yields if it is spent: the yield point
    /// of a loop that neither receives nor sends with [`Context::send`], such as one
    /// that spawns (each spawn takes a unit too, so such a loop yields every
    /// `BUDGET / 2` spawns) or computes. As [`Context::send`], it renews the turn in
    /// place if the worker has nothing else to run. tokio's
    /// `task::coop::consume_budget`; on the BEAM every function call is such a point.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let n = rt.block_on(|mut cx: otter::Context<()>| async move {
    ///     let mut n = 0;
    ///     for _ in 0..1000 {
    ///         cx.spawn(|_: otter::Context<()>| async {});
    ///         cx.consume_budget().await;
    ///         n += 1;
    ///     }
    ///     n
    /// });
    /// assert_eq!(n.unwrap(), 1000);
    /// ```
    #[inline]
    pub fn consume_budget(&mut self) -> ConsumeBudget<'_, M> {
        ConsumeBudget {
            owner: &mut self.owner,
            yielded: false,
        }
    }

    /// Sends `message` to `to` after `delay`, like Erlang's `erlang:send_after/3`.
    /// Cancel it with [`TimerRef::cancel`]. As in Erlang, the timer is cancelled when
    /// `to` exits (at once if `to` has already ended; a remote `to`'s timer runs to its
    /// deadline). The timer belongs to this process's runtime and costs one wheel entry,
    /// one allocation for the message's closure, and a key in `to`'s bonds.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// let got = rt.block_on(|mut cx: otter::Context<&'static str>| async move {
    ///     let t = cx.send_after(cx.pid(), "late", Duration::from_millis(50));
    ///     cx.send_after(cx.pid(), "soon", Duration::from_millis(1));
    ///     let first = cx.recv().await;
    ///     (first, t.cancel())
    /// });
    /// assert_eq!(got.unwrap(), ("soon", true));
    /// ```
    pub fn send_after<N: Send + 'static>(
        &self,
        to: Pid<N>,
        message: N,
        delay: Duration,
    ) -> TimerRef {
        let timer = self.timer();
        let raw = to.raw;
        let key = timer.insert(
            crate::timer::deadline_after(delay),
            Action::Run(Box::new(move || to.send(message))),
        );
        // Tied to a local destination, whose exit cancels it; one that has already
        // ended gets nothing, now rather than at the deadline.
        let tied = crate::timer::Tied::Once(Arc::downgrade(&timer), key);
        if let Err(tied) = crate::process::bonds::add_timer(raw, tied) {
            tied.cancel();
        }
        TimerRef {
            key,
            timer: Arc::downgrade(&timer),
        }
    }

    /// Sends a clone of `message` to `to` every `period` (Erlang's
    /// `timer:send_interval/3`), until [`IntervalRef::cancel`] or until `to` exits (a
    /// remote `to`: until a tick finds it gone). Periods are counted from the previous deadline, so the interval does not
    /// drift; the wheel's resolution is 1 ms (a shorter period counts as 1 ms). One wheel
    /// entry at a time, whatever the interval's length.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u8>| async move {
    ///     let t0 = Instant::now();
    ///     let tick = cx.send_interval(cx.pid(), 1, Duration::from_millis(2));
    ///     let mut n = 0;
    ///     while n < 5 { n += cx.recv().await; }
    ///     tick.cancel();
    ///     t0.elapsed() >= Duration::from_millis(10)
    /// });
    /// assert!(r.unwrap());
    /// ```
    pub fn send_interval<N: Clone + Send + 'static>(
        &self,
        to: Pid<N>,
        message: N,
        period: Duration,
    ) -> IntervalRef {
        // A plain send: a timer's message is never refused by a bounded mailbox
        // (`SpawnOptions::bounded_mailbox`); the error says the process has exited.
        let tick = move || send::send(to, message.clone()).is_ok();
        let (interval, handle) = crate::timer::interval::start(&self.timer(), period, tick);
        if let Err(tied) = bonds::add_timer(to.raw, crate::timer::Tied::Interval(handle)) {
            // `to` has ended: the interval stops now rather than at its first tick.
            tied.cancel();
        }
        interval
    }

    /// Registers `pid` under `name` on this runtime (Erlang's `register/2`). The name is
    /// released when the process exits, or by [`Context::unregister`].
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|mut cx: otter::Context<u8>| async move {
    ///     let me = cx.pid();
    ///     cx.register("main", me).unwrap();
    ///     assert_eq!(cx.register("main", me), Err(otter::RegisterError::NameTaken));
    ///     assert_eq!(cx.whereis::<u8>("main"), Some(me));
    ///     cx.send_named("main", 5u8).unwrap();
    ///     cx.recv().await
    /// });
    /// assert_eq!(r.unwrap(), 5);
    /// ```
    pub fn register<N: Send + 'static>(
        &self,
        name: impl Into<Arc<str>>,
        pid: Pid<N>,
    ) -> Result<(), RegisterError> {
        let rt = self.runtime();
        if !cell::mark_registered(pid.raw, rt) {
            return Err(RegisterError::NotAlive);
        }
        rt.services
            .registry
            .insert(name.into(), pid.raw, TypeId::of::<N>(), || {
                cell::is_running(pid.raw)
            })
    }

    /// Removes `name` from the registry (Erlang's `unregister/1`); false if it was not
    /// registered.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<()>| async move {
    ///     cx.register("x", cx.pid()).unwrap();
    ///     (cx.unregister("x"), cx.unregister("x"), cx.whereis::<()>("x"))
    /// });
    /// assert_eq!(r.unwrap(), (true, false, None));
    /// ```
    pub fn unregister(&self, name: &str) -> bool {
        self.runtime().services.registry.remove_name(name).is_some()
    }

    /// The pid registered as `name` with message type `N` (Erlang's `whereis/1`); `None`
    /// if no process has that name, or if it was registered with another message type.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<u32>| async move {
    ///     cx.register("me", cx.pid()).unwrap();
    ///     (cx.whereis::<u32>("me").is_some(), cx.whereis::<String>("me"))
    /// });
    /// assert_eq!(r.unwrap(), (true, None));
    /// ```
    pub fn whereis<N: 'static>(&self, name: &str) -> Option<Pid<N>> {
        self.runtime().services.registry.whereis(name)
    }

    /// The process registered as `name`, whatever its message type.
    pub(crate) fn name_holder(&self, name: &str) -> Option<crate::ProcessId> {
        self.runtime()
            .services
            .registry
            .holder(name)
            .map(crate::ProcessId)
    }

    /// The handle of this process's runtime: to spawn, look up and send to names from
    /// code that cannot hold this `Context` (a hyper `service_fn`, whose futures must be
    /// `Send` and may not borrow it; a closure given to a library).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<()>| async move {
    ///     cx.register("root", cx.pid()).unwrap();
    ///     let h = cx.handle();
    ///     std::thread::spawn(move || h.whereis::<()>("root").is_some()).join().unwrap()
    /// });
    /// assert!(r.unwrap());
    /// ```
    ///
    /// # Panics
    ///
    /// If called off its runtime's workers (a `Context` moved to a plain thread).
    pub fn handle(&self) -> crate::Handle {
        let shared = self.runtime();
        match crate::runtime::context::current_shared() {
            Some(s) if std::ptr::eq(Arc::as_ptr(&s), shared) => crate::Handle::of(s),
            _ => panic!("otter: Context::handle called off its runtime's workers"),
        }
    }

    /// Sends `message` to the process registered as `name` (Erlang's `Name ! Msg`). Hands
    /// the message back if no live process of that message type has the name (Erlang
    /// raises `badarg`).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<()>| async move { cx.send_named("nobody", 1u8) });
    /// assert_eq!(r.unwrap(), Err(otter::SendError(1)));
    /// ```
    pub fn send_named<N: Send + 'static>(
        &self,
        name: &str,
        message: N,
    ) -> Result<(), crate::SendError<N>> {
        self.runtime().services.registry.send_named(name, message)
    }

    /// Monitors `pid` (Erlang's `monitor(process, Pid)`): when it exits, this process
    /// gets a [`Down`] with the returned reference and the reason, as a message `M`.
    /// If it does not exist, the `Down` (reason `Noproc`) is sent at once. See the
    /// `monitor` module docs for the rules.
    ///
    /// ```
    /// use otter::{Context, Down, ExitReason, Runtime};
    /// #[derive(Debug)]
    /// enum Msg { Down(Down) }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let child = cx.spawn(|mut c: Context<u8>| async move {
    ///         if c.recv().await == 0 { panic!("zero") }
    ///     });
    ///     cx.monitor(child);
    ///     child.send(0);
    ///     let Msg::Down(d) = cx.recv().await;
    ///     d.reason
    /// });
    /// assert_eq!(r.unwrap(), ExitReason::Panic("zero".into()));
    /// ```
    pub fn monitor(&self, pid: impl Into<ProcessId>) -> MonitorRef
    where
        M: From<Down>,
    {
        let (reference, watcher) = watcher_of(self.pid(), pid.into().0);
        bonds::hold(self.owner.header(), reference.id, reference.target);
        arm(reference, watcher);
        reference
    }

    /// A new monitor of `target` by this process, and its watcher record.
    fn watcher(&self, target: RawPid) -> (MonitorRef, Watcher)
    where
        M: From<Down>,
    {
        watcher_of(self.pid(), target)
    }

    /// Spawns a process and monitors it in one step (Erlang's `spawn_monitor/1`): the
    /// monitor is set before the child can run, so its `Down` carries its real reason,
    /// never `Noproc`.
    ///
    /// ```
    /// use otter::{Context, Down, ExitReason, Runtime};
    /// enum Msg { Down(Down) }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let (child, mref) = cx.spawn_monitor(|_: Context<()>| async { ExitReason::Shutdown });
    ///     let Msg::Down(d) = cx.recv().await;
    ///     (d.reference == mref, d.pid == child.id(), d.reason)
    /// });
    /// assert_eq!(r.unwrap(), (true, true, ExitReason::Shutdown));
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime is shutting down.
    pub fn spawn_monitor<N, F, Fut>(&self, f: F) -> (Pid<N>, MonitorRef)
    where
        M: From<Down>,
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        self.spawn_monitor_opt(SpawnOptions::new(), f)
    }

    /// Spawns a process linked to this one (Erlang's `spawn_link/1`): the link exists
    /// before the child can run. See the `signal` module docs (crate docs, "Links and
    /// exit signals") for what a link does.
    ///
    /// ```
    /// use otter::{Context, ExitReason, Runtime};
    /// let rt = Runtime::new();
    /// // The child's crash ends its parent with the same reason.
    /// let r = rt.block_on(|mut cx: Context<()>| async move {
    ///     cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
    ///     cx.recv().await
    /// });
    /// assert_eq!(r, Err(ExitReason::Shutdown));
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime is shutting down.
    pub fn spawn_link<N, F, Fut>(&self, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        self.spawn_with(f, SpawnOptions::new().link(), |_| None)
    }

    /// Links this process with `pid` (Erlang's `link/1`): bidirectional, idempotent; when
    /// either exits, the other gets an exit signal with its reason. If `pid` does not
    /// exist, this process gets the exit signal `Noproc` from it: trapping exits, as a
    /// message; otherwise it exits `Noproc` at its next suspension point.
    ///
    /// ```
    /// use otter::{Context, Exit, ExitReason, Runtime};
    /// enum Msg { Exit(Exit), Go }
    /// impl From<Exit> for Msg { fn from(e: Exit) -> Msg { Msg::Exit(e) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     cx.trap_exit(true);
    ///     let child = cx.spawn(|mut c: Context<u8>| async move {
    ///         c.recv().await;
    ///         ExitReason::Shutdown
    ///     });
    ///     cx.link(child);
    ///     cx.link(child); // idempotent: one link, one signal
    ///     child.send(1);
    ///     let Msg::Exit(e) = cx.recv().await else { unreachable!() };
    ///     e.reason
    /// });
    /// assert_eq!(r.unwrap(), ExitReason::Shutdown);
    /// ```
    pub fn link(&self, pid: impl Into<ProcessId>) {
        bonds::link(self.pid().raw, pid.into().0);
    }

    /// Removes the link with `pid` (Erlang's `unlink/1`). Once it returns, the link has no
    /// more effect on this process; an `Exit` it already delivered stays in the mailbox.
    ///
    /// ```
    /// use otter::{Context, ExitReason, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<u8>| async move {
    ///     let me = cx.pid();
    ///     let child = cx.spawn_link(move |mut c: Context<()>| async move {
    ///         c.recv().await;
    ///         me.send(1);
    ///         ExitReason::Shutdown
    ///     });
    ///     cx.unlink(child);
    ///     child.send(());
    ///     cx.recv().await // the child's exit no longer ends us
    /// });
    /// assert_eq!(r, Ok(1));
    /// ```
    pub fn unlink(&self, pid: impl Into<ProcessId>) {
        bonds::unlink(self.pid().raw, pid.into().0);
    }

    /// Sets whether this process traps exits (Erlang's `process_flag(trap_exit, On)`);
    /// returns the previous setting. While it traps, exit signals (other than `exit`
    /// with `Kill`) arrive as [`Exit`] messages of its own type `M`.
    ///
    /// ```
    /// use otter::{Context, Exit, ExitReason, Runtime};
    /// enum Msg { Exit(Exit) }
    /// impl From<Exit> for Msg { fn from(e: Exit) -> Msg { Msg::Exit(e) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let was = cx.trap_exit(true);
    ///     cx.exit(cx.pid(), ExitReason::Shutdown);
    ///     let Msg::Exit(e) = cx.recv().await;
    ///     (was, e.reason)
    /// });
    /// assert_eq!(r.unwrap(), (false, ExitReason::Shutdown));
    /// ```
    pub fn trap_exit(&self, on: bool) -> bool
    where
        M: From<Exit>,
    {
        bonds::set_trap_exit(&self.owner, on)
    }

    /// Sends the exit signal `reason` to `pid` (Erlang's `exit/2`): `Kill` ends it with
    /// `Killed` even if it traps exits; otherwise a trapping process gets an [`Exit`]
    /// message, and one that does not trap exits with `reason` (`Normal` is ignored,
    /// except by the caller itself). The signal acts at the receiver's next suspension
    /// point; sent to the caller, at its next `.await` that waits.
    ///
    /// ```
    /// use otter::{Context, Down, Exit, ExitReason, Runtime};
    /// enum Msg { Down(Down), Exit(Exit) }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// impl From<Exit> for Msg { fn from(e: Exit) -> Msg { Msg::Exit(e) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     // Kill cannot be trapped.
    ///     let (victim, _) = cx.spawn_monitor(|mut c: Context<Msg>| async move {
    ///         c.trap_exit(true);
    ///         while let Msg::Exit(_) = c.recv().await {}
    ///     });
    ///     cx.exit(victim, ExitReason::Kill);
    ///     let Msg::Down(d) = cx.recv().await else { unreachable!() };
    ///     d.reason
    /// });
    /// assert_eq!(r.unwrap(), ExitReason::Killed);
    /// ```
    pub fn exit(&self, pid: impl Into<ProcessId>, reason: ExitReason) {
        bonds::signal(pid.into().0, self.pid().raw, reason, Kind::Exit);
    }

    /// Stops a monitor (Erlang's `demonitor/1`). Returns true if it was active: then no
    /// `Down` for it will come. False if it had fired: its `Down` is already in this
    /// process's mailbox (use [`Context::demonitor_flush`] to drop it too). False too,
    /// and nothing changes, if this process did not set the monitor: a monitor belongs
    /// to its watcher, as in Erlang.
    ///
    /// ```
    /// use otter::{Context, Down, Runtime};
    /// enum Msg { Down(Down), Tick }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let child = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
    ///     let m = cx.monitor(child);
    ///     let was_active = cx.demonitor(m);
    ///     child.send(());
    ///     cx.pid().send(Msg::Tick);
    ///     (was_active, matches!(cx.recv().await, Msg::Tick))
    /// });
    /// assert_eq!(r.unwrap(), (true, true));
    /// ```
    pub fn demonitor(&self, reference: MonitorRef) -> bool {
        if reference.owner != Some(self.pid().raw) {
            return false;
        }
        bonds::let_go(self.owner.header(), reference.id);
        bonds::remove_watcher(reference.target, reference.id)
    }

    /// Stops a monitor and removes its `Down` from the mailbox if it had already fired
    /// (Erlang's `demonitor(Ref, [flush])`): afterwards no `Down` for it is received.
    /// Returns true if the monitor was active.
    ///
    /// ```
    /// use otter::{Context, Down, DownMessage, Runtime};
    /// enum Msg { Down(Down), Tick }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// impl DownMessage for Msg {
    ///     fn as_down(&self) -> Option<&Down> { match self { Msg::Down(d) => Some(d), _ => None } }
    /// }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let child = cx.spawn(|_: Context<()>| async {});
    ///     let m = cx.monitor(child);
    ///     while !child.has_exited() { cx.yield_now().await; }
    ///     let active = cx.demonitor_flush(m);
    ///     cx.pid().send(Msg::Tick);
    ///     (active, matches!(cx.recv().await, Msg::Tick))
    /// });
    /// assert_eq!(r.unwrap(), (false, true));
    /// ```
    pub fn demonitor_flush(&mut self, reference: MonitorRef) -> bool
    where
        M: DownMessage,
    {
        if self.demonitor(reference) {
            return true;
        }
        let _ = self.try_recv_match(|m| m.as_down().is_some_and(|d| d.reference == reference));
        false
    }

    fn runtime(&self) -> &crate::scheduler::Shared {
        self.owner
            .runtime()
            .expect("otter: registry used by a process whose runtime has shut down")
    }

    fn runtime_timer(&self) -> &Arc<Timer> {
        &self
            .owner
            .runtime()
            .expect("otter: timer used by a process whose runtime has shut down")
            .services
            .timer
    }

    pub(crate) fn timer(&self) -> Arc<Timer> {
        self.runtime_timer().clone()
    }

    /// A [`Sleep`] until `deadline` on this process's runtime's timer, on the lane of
    /// the worker that calls this (`timer.rs`).
    pub(crate) fn sleep_until(&self, deadline: std::time::Instant) -> Sleep {
        self.runtime_timer().sleep(deadline)
    }
}

/// A new monitor of `target` held by `by`, and its watcher record.
fn watcher_of<M: From<Down> + Send + 'static>(by: Pid<M>, target: RawPid) -> (MonitorRef, Watcher) {
    let reference = MonitorRef::new(target, Some(by.raw));
    let watcher = Watcher {
        id: reference.id,
        owner: reference.owner,
        notify: Notify::Message(Box::new(move |down| {
            by.send(M::from(down));
            None
        })),
    };
    (reference, watcher)
}

/// Puts `watcher` on its target; a target already gone gets its `Down` with `Noproc`
/// at once, as Erlang's `monitor/2` does.
fn arm(reference: MonitorRef, watcher: Watcher) {
    if let Err(w) = bonds::add_watcher(reference.target, watcher) {
        let down = Down {
            reference,
            pid: ProcessId(reference.target),
            reason: crate::ExitReason::Noproc,
        };
        if let Some(waker) = w.notify(down) {
            waker.wake();
        }
    }
}

/// A monitor of `target` that `by` holds, set by another process: its reference now,
/// and what arms it. A caller that hands the reference to `by` before arming it knows
/// that the reference reaches `by` ahead of the `Down` (`os_signal.rs`: a stopper
/// spawned to watch a tree that its spawner may stop at once).
pub(crate) fn monitor_for<M: From<Down> + Send + 'static>(
    by: Pid<M>,
    target: ProcessId,
) -> (MonitorRef, impl FnOnce()) {
    let (reference, watcher) = watcher_of(by, target.0);
    (reference, move || {
        if let Some(p) = crate::process::cell::ProcessRef::new(by.raw) {
            bonds::hold(p.header(), reference.id, reference.target);
        }
        arm(reference, watcher)
    })
}
