//! Servers: Erlang's `gen_server`, typed.
//!
//! A server is a process that holds a state and answers requests. Implement [`Server`]
//! (`init`, `handle_call`, `handle_cast`, `handle_info`, `terminate`), start it with
//! [`start`] or [`start_link`] (synchronously: they return once `init` has finished),
//! and talk to it through its [`ServerRef`]: [`ServerRef::call`] waits for a reply,
//! [`ServerRef::cast`] does not, [`ServerRef::stop`] ends it.
//!
//! # Rules mirrored from OTP (`gen_server`, `gen.erl`, `proc_lib`)
//!
//! * **Synchronous start.** `start`/`start_link` spawn the server (linked to the caller
//!   for `start_link`, the link set before it runs), wait for `init`, and return its
//!   error if it failed. `init` returning `Err(reason)` is OTP 26's `{error, Reason}`:
//!   the start returns `Err(reason)` and the server exits `Normal`, so a linked caller
//!   is not taken down. A panic in `init` is a crash: the server exits `Panic`, which a
//!   linked caller that does not trap exits follows, as in Erlang.
//! * **Registered start.** [`start_link_named`] registers the name before `init` runs;
//!   a taken name fails the start with `RegisterError::NameTaken` as the reason.
//! * **Calls** follow `gen.erl`'s protocol: the caller monitors the server while it
//!   waits; the call returns the reply, or [`CallError::Exit`] with the server's reason
//!   if it exits first, [`CallError::Noproc`] if it does not exist, [`CallError::Timeout`]
//!   after the timeout (default 5 s, as OTP), and [`CallError::CallingSelf`] for a call
//!   from the server to itself. A reply never goes through the caller's mailbox, and a
//!   late reply never surfaces (`server/reply.rs`).
//! * **Deferred replies**: `handle_call` gets the caller's [`ReplyTo`] by value; reply
//!   now, or keep it and reply later from anywhere (`gen_server:reply/2`).
//! * **Stopping**: a handler returning [`Flow::Stop`] (`{stop, Reason, State}`), or
//!   [`ServerRef::stop`] (`gen_server:stop/3`), runs `terminate(reason)` and the server
//!   exits with `reason`. A panic in a handler also runs `terminate`, with the panic
//!   reason, before the server exits with it (OTP calls `terminate` on a crash too); a
//!   panic in `terminate` itself becomes the exit reason (gen_server re-raises it).
//! * **Parent exit**: a server that traps exits and gets an exit signal from its parent
//!   (the process that started it with `start_link`: a supervisor) runs `terminate`
//!   and exits with the same reason, without `handle_info` (how supervisors' `shutdown`
//!   works). Exits from other processes go to `handle_info` as [`Info::Exit`]. A server
//!   that does not trap exits is ended by the signal directly, without `terminate`.
//!
//! # Differences from OTP
//!
//! * The request, reply, cast and info types are the trait's associated types: calls are
//!   typed end to end, and there is no catch-all clause for unexpected messages.
//! * Handlers are `async`: a handler may await (call another server, sleep); the server
//!   handles its next message when the handler finishes, as a `gen_server` does.
//! * No `{reply, R, S, Timeout}` / hibernate / `code_change`: use
//!   [`Context::send_after`](crate::Context::send_after) for timeouts.
//! * `ReplyTo` is consumed by `reply`, so a request is answered at most once.
//! * A failed call or stop is a value ([`CallError`]) the caller handles, where
//!   `gen_server:call` exits the caller; `?` with `From<CallError> for ExitReason` gives
//!   Erlang's behaviour back.
//! * After a failed `start_link`, a caller that traps exits finds the server's `Exit`
//!   (reason `Normal` for init's `Err`, the panic for a crash) in its mailbox; OTP 26's
//!   `proc_lib` consumes it.

mod reply;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use crate::exit::ExitReason;
use crate::monitor::Down;
use crate::pid::{Pid, ProcessId, RawPid};
use crate::process::{Context, waker};
use crate::signal::Exit;

use reply::Pending;
pub use reply::{CallError, ReplyTo};

/// The timeout of [`ServerRef::call`]: OTP's default for `gen_server:call/2`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The context a server's callbacks get: its process's context, whose messages are
/// [`ServerMsg`]s.
pub type ServerContext<S> = Context<ServerMsg<S>>;

/// What a handler tells the server loop to do next.
///
/// ```
/// use otter::server::Flow;
/// let f = Flow::Stop(otter::ExitReason::Normal);
/// assert!(matches!(f, Flow::Stop(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// Wait for the next message (`{noreply, State}`).
    Continue,
    /// Run `terminate(reason)`, then exit with `reason` (`{stop, Reason, State}`).
    Stop(ExitReason),
}

/// A message for `handle_info`: the server's own info type, or a system message.
///
/// ```
/// use otter::server::Info;
/// let i: Info<u8> = Info::Message(1);
/// assert!(matches!(i, Info::Message(1)));
/// ```
#[derive(Debug)]
pub enum Info<I> {
    /// A message sent with [`ServerRef::info`] (or to the server's pid).
    Message(I),
    /// A trapped exit signal, from a process other than the parent.
    Exit(Exit),
    /// A monitor set by the server fired.
    Down(Down),
}

/// The messages of a server's process. The server loop reads them; send them through
/// [`ServerRef`].
#[derive(Debug)]
pub enum ServerMsg<S: Server> {
    /// A call and the handle to reply through.
    Call(S::Call, ReplyTo<S::Reply>),
    /// A cast.
    Cast(S::Cast),
    /// A plain message.
    Info(S::Info),
    /// A trapped exit signal (boxed: rare, and it would double the size of every
    /// message of a server with small casts).
    Exit(Box<Exit>),
    /// A monitor's `Down` (boxed, as `Exit`).
    Down(Box<Down>),
    /// A request to stop with this reason (from [`ServerRef::stop`]; boxed, as `Exit`).
    Stop(Box<ExitReason>),
}

impl<S: Server> From<Exit> for ServerMsg<S> {
    fn from(e: Exit) -> Self {
        ServerMsg::Exit(Box::new(e))
    }
}

impl<S: Server> From<Down> for ServerMsg<S> {
    fn from(d: Down) -> Self {
        ServerMsg::Down(Box::new(d))
    }
}

/// A server's behaviour (Erlang's `gen_server` callback module).
///
/// ```
/// use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime};
///
/// struct Counter(u64);
/// enum Req { Get, Add(u64) }
///
/// impl Server for Counter {
///     type Args = u64;
///     type Call = Req;
///     type Reply = u64;
///     type Cast = u64;
///     type Info = ();
///
///     async fn init(start: u64, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
///         Ok(Counter(start))
///     }
///     async fn handle_call(&mut self, r: Req, from: ReplyTo<u64>, _: &mut ServerContext<Self>) -> Flow {
///         match r {
///             Req::Get => from.reply(self.0),
///             Req::Add(n) => { self.0 += n; from.reply(self.0) }
///         }
///         Flow::Continue
///     }
///     async fn handle_cast(&mut self, n: u64, _: &mut ServerContext<Self>) -> Flow {
///         self.0 += n;
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let c = server::start_link::<Counter, _>(&cx, 10).await.unwrap();
///     c.cast(5);
///     c.call(Req::Add(1)).await
/// });
/// assert_eq!(r.unwrap(), Ok(16));
/// ```
pub trait Server: Sized + Send + 'static {
    /// What `init` is started with.
    type Args: Send + 'static;
    /// The requests of calls.
    type Call: Send + 'static;
    /// The replies to calls.
    type Reply: Send + 'static;
    /// The messages of casts.
    type Cast: Send + 'static;
    /// Other messages the server accepts (timer messages, notifications).
    type Info: Send + 'static;

    /// Builds the state. The start returns when this finishes; `Err(reason)` fails it
    /// (the server then exits `Normal`).
    fn init(
        args: Self::Args,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = Result<Self, ExitReason>> + Send;

    /// Handles a call: reply through `from`, now or later.
    fn handle_call(
        &mut self,
        request: Self::Call,
        from: ReplyTo<Self::Reply>,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = Flow> + Send;

    /// Handles a cast. The default ignores it.
    fn handle_cast(
        &mut self,
        message: Self::Cast,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = Flow> + Send {
        let _ = (message, cx);
        async { Flow::Continue }
    }

    /// Handles any other message: an info message, a trapped exit (not from the
    /// parent), a `Down`. The default ignores it (OTP's default logs it).
    fn handle_info(
        &mut self,
        info: Info<Self::Info>,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = Flow> + Send {
        let _ = (info, cx);
        async { Flow::Continue }
    }

    /// Runs before the server exits with `reason` (stop, handler panic, parent exit).
    /// The default does nothing.
    fn terminate(
        &mut self,
        reason: &ExitReason,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (reason, cx);
        async {}
    }
}

/// A handle to a running server: its typed pid. Cheap to copy, `Send + Sync`.
///
/// ```
/// # use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = u8; type Reply = u8; type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, r: u8, f: ReplyTo<u8>, _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let s: server::ServerRef<Echo> = server::start(&cx, ()).await.unwrap();
///     (s.call(7).await, s.pid().is_alive())
/// });
/// assert_eq!(r.unwrap(), (Ok(7), true));
/// ```
pub struct ServerRef<S: Server> {
    pid: Pid<ServerMsg<S>>,
}

impl<S: Server> Clone for ServerRef<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Server> Copy for ServerRef<S> {}

impl<S: Server> PartialEq for ServerRef<S> {
    fn eq(&self, other: &Self) -> bool {
        self.pid == other.pid
    }
}

impl<S: Server> Eq for ServerRef<S> {}

impl<S: Server> std::fmt::Debug for ServerRef<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerRef({:?})", self.pid)
    }
}

impl<S: Server> From<Pid<ServerMsg<S>>> for ServerRef<S> {
    fn from(pid: Pid<ServerMsg<S>>) -> Self {
        ServerRef { pid }
    }
}

impl<S: Server> From<ServerRef<S>> for ProcessId {
    fn from(s: ServerRef<S>) -> ProcessId {
        s.pid.id()
    }
}

impl<S: Server> ServerRef<S> {
    /// The server's pid.
    ///
    /// See [`ServerRef`] for an example.
    pub fn pid(&self) -> Pid<ServerMsg<S>> {
        self.pid
    }

    /// The server's untyped id.
    ///
    /// See [`ServerRef`] for an example.
    pub fn id(&self) -> ProcessId {
        self.pid.id()
    }

    /// Calls the server and waits for its reply, at most [`DEFAULT_CALL_TIMEOUT`]
    /// (`gen_server:call/2`). Works from any process, and from any other async code
    /// whose wakers work (the caller's runtime times it; off any runtime, a
    /// process-wide timer).
    ///
    /// See [`Server`] for an example.
    pub async fn call(self, request: S::Call) -> Result<S::Reply, CallError> {
        self.call_timeout(request, Some(DEFAULT_CALL_TIMEOUT)).await
    }

    /// Calls the server and waits at most `timeout` (`None`: forever,
    /// `gen_server:call/3` with `infinity`). A reply after the timeout is dropped.
    ///
    /// ```
    /// # use otter::server::{self, CallError, Flow, ReplyTo, Server, ServerContext};
    /// # use otter::{Context, ExitReason, Runtime};
    /// # use std::time::Duration;
    /// struct Silent(Vec<ReplyTo<()>>);
    /// impl Server for Silent {
    ///     type Args = (); type Call = (); type Reply = (); type Cast = (); type Info = ();
    ///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Silent(vec![])) }
    ///     async fn handle_call(&mut self, _: (), f: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
    ///         self.0.push(f); // never replies
    ///         Flow::Continue
    ///     }
    /// }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let s = server::start::<Silent, _>(&cx, ()).await.unwrap();
    ///     s.call_timeout((), Some(Duration::from_millis(10))).await
    /// });
    /// assert_eq!(r.unwrap(), Err(CallError::Timeout));
    /// ```
    pub async fn call_timeout(
        self,
        request: S::Call,
        timeout: Option<Duration>,
    ) -> Result<S::Reply, CallError> {
        let target = self.pid.raw;
        let calling_self =
            std::future::poll_fn(|cx| Poll::Ready(waker::is_waker_of(cx.waker(), target))).await;
        if calling_self {
            return Err(CallError::CallingSelf);
        }
        let (mut pending, reply_to) = Pending::new();
        pending.watch(target, |r| Err(CallError::Exit(r)));
        // If the send fails the server has exited, and its watcher (added above, or
        // refused with `Noproc`) has already set the outcome: its real reason.
        let _ = self.pid.try_send(ServerMsg::Call(request, reply_to));
        pending.wait(timeout).await
    }

    /// Sends a cast (`gen_server:cast/2`): no reply, no error if the server is gone.
    ///
    /// See [`Server`] for an example.
    pub fn cast(&self, message: S::Cast) {
        self.pid.send(ServerMsg::Cast(message));
    }

    /// Sends a message for `handle_info` (Erlang's `Pid ! Msg` to a server).
    ///
    /// See [`Info`] for the other messages `handle_info` gets.
    pub fn info(&self, message: S::Info) {
        self.pid.send(ServerMsg::Info(message));
    }

    /// Stops the server with `reason` and waits for it to exit, at most `timeout`
    /// (`gen_server:stop/3`): `terminate` runs, then the server exits. Returns `Ok` if
    /// it exited with `reason`, `Err(Exit(other))` if it exited with another one,
    /// `Err(Noproc)` if it did not exist.
    ///
    /// ```
    /// # use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
    /// # use otter::{Context, ExitReason, Runtime};
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = u8; type Reply = u8; type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, r: u8, f: ReplyTo<u8>, _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let s = server::start::<Echo, _>(&cx, ()).await.unwrap();
    ///     let stopped = s.stop(ExitReason::Normal, None).await;
    ///     (stopped, s.call(1).await)
    /// });
    /// assert_eq!(r.unwrap(), (Ok(()), Err(server::CallError::Noproc)));
    /// ```
    pub async fn stop(
        self,
        reason: ExitReason,
        timeout: Option<Duration>,
    ) -> Result<(), CallError> {
        let (mut pending, _never) = Pending::<()>::new();
        let wanted = reason.clone();
        pending.watch(self.pid.raw, move |r| {
            if r == wanted {
                Ok(())
            } else {
                Err(CallError::Exit(r))
            }
        });
        let _ = self.pid.try_send(ServerMsg::Stop(Box::new(reason)));
        pending.wait(timeout).await
    }
}

/// Starts a server, not linked (`gen_server:start/3`): the server is spawned by this
/// call; the returned future resolves once `init` has finished.
///
/// See [`ServerRef`] for an example.
pub fn start<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    start_with(cx, args, false, None)
}

/// Starts a server linked to the caller (`gen_server:start_link/3`): spawned by this
/// call, the link set before it runs; the future resolves once `init` has finished. The caller becomes the server's parent (see the module docs).
///
/// See [`Server`] for an example.
pub fn start_link<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    start_with(cx, args, true, None)
}

/// Starts a server linked to the caller and registered as `name` before `init` runs
/// (`gen_server:start_link({local, Name}, ...)`). Find it with [`whereis`].
///
/// ```
/// # use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = u8; type Reply = u8; type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, r: u8, f: ReplyTo<u8>, _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     server::start_link_named::<Echo, _, _>(&cx, "echo", ()).await.unwrap();
///     let again = server::start_link_named::<Echo, _, _>(&cx, "echo", ()).await;
///     let s = server::whereis::<Echo, _>(&cx, "echo").unwrap();
///     (s.call(3).await, again.is_err())
/// });
/// assert_eq!(r.unwrap(), (Ok(3), true));
/// ```
pub fn start_link_named<S: Server, M: Send + 'static, N: Into<Arc<str>>>(
    cx: &Context<M>,
    name: N,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M, N> {
    start_with(cx, args, true, Some(name.into()))
}

/// The server registered as `name` on the caller's runtime, if any.
///
/// See [`start_link_named`] for an example.
pub fn whereis<S: Server, M: Send + 'static>(cx: &Context<M>, name: &str) -> Option<ServerRef<S>> {
    cx.whereis::<ServerMsg<S>>(name).map(ServerRef::from)
}

/// Spawns the server now; the future waits for `init` (and borrows nothing, so the
/// caller's `Context` is not held across the wait).
fn start_with<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
    link: bool,
    name: Option<Arc<str>>,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    let (mut pending, ack) = Pending::<ServerRef<S>>::new();
    let parent = link.then_some(cx.pid().id().0);
    // A failed start resolves only once the server has exited (its watcher fired, after
    // its name was released), with the reason `init` gave: a retry can take the name
    // again at once (proc_lib's `sync_start` waits for the `'DOWN'` likewise).
    let failure: Arc<Mutex<Option<ExitReason>>> = Arc::default();
    let failed = failure.clone();
    cx.spawn_with(
        move |scx: ServerContext<S>| serve::<S>(scx, args, ack, failed, parent, name),
        link,
        |child| {
            Some(pending.watcher(child, move |r| {
                let reason = failure
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                Err(CallError::Exit(reason.unwrap_or(r)))
            }))
        },
    );
    async move {
        match pending.wait(None).await {
            Ok(server) => Ok(server),
            Err(CallError::Exit(reason)) => Err(reason),
            Err(e) => Err(e.into()),
        }
    }
}

/// Runs a callback's future, turning a panic into `Err(reason)` (the future is pinned
/// on this stack frame: no allocation per message).
pub(crate) async fn catch<F: Future>(fut: F) -> Result<F::Output, ExitReason> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(
        move |cx| match crate::unwind::catch_panic(|| fut.as_mut().poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(reason) => Poll::Ready(Err(reason)),
        },
    )
    .await
}

/// The server loop: `init`, acknowledge, then one message at a time.
async fn serve<S: Server>(
    mut cx: ServerContext<S>,
    args: S::Args,
    ack: ReplyTo<ServerRef<S>>,
    failure: Arc<Mutex<Option<ExitReason>>>,
    parent: Option<RawPid>,
    name: Option<Arc<str>>,
) -> ExitReason {
    // A failed start: record why, and exit `Normal` (the start learns the reason when
    // our exit fires its watcher).
    let fail = |reason: ExitReason| {
        *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        ExitReason::Normal
    };
    if let Some(name) = name
        && let Err(e) = cx.register(name, cx.pid())
    {
        return fail(ExitReason::error(e));
    }
    let mut state = match catch(S::init(args, &mut cx)).await {
        Ok(Ok(state)) => state,
        Ok(Err(reason)) => return fail(reason),
        // A crash in `init`: the start sees it through its watcher.
        Err(panic) => return panic,
    };
    ack.reply(ServerRef::from(cx.pid()));
    loop {
        let message = cx.recv().await;
        let handled = match message {
            ServerMsg::Call(request, from) => {
                catch(state.handle_call(request, from, &mut cx)).await
            }
            ServerMsg::Cast(m) => catch(state.handle_cast(m, &mut cx)).await,
            ServerMsg::Info(m) => catch(state.handle_info(Info::Message(m), &mut cx)).await,
            ServerMsg::Down(d) => catch(state.handle_info(Info::Down(*d), &mut cx)).await,
            ServerMsg::Exit(e) if Some(e.from.0) == parent => Ok(Flow::Stop(e.reason)),
            ServerMsg::Exit(e) => catch(state.handle_info(Info::Exit(*e), &mut cx)).await,
            ServerMsg::Stop(reason) => Ok(Flow::Stop(*reason)),
        };
        let reason = match handled {
            Ok(Flow::Continue) => continue,
            Ok(Flow::Stop(reason)) => reason,
            Err(panic) => panic,
        };
        // A panic in `terminate` becomes the exit reason (gen_server re-raises it).
        return match catch(state.terminate(&reason, &mut cx)).await {
            Ok(()) => reason,
            Err(panic) => panic,
        };
    }
}
