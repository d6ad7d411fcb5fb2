//! Servers: Erlang's `gen_server`, typed per request.
//!
//! A server is a process that holds a state and answers requests. Implement [`Server`]
//! (`init`, `handle_call`, `handle_cast`, `handle_info`, `terminate`), start it with
//! [`Server::start_link`] (or `start`, `start_link_named`: synchronously, they return
//! once `init` has finished), and talk to it through its [`ServerRef`]:
//! [`ServerRef::call`] waits for a reply, [`ServerRef::cast`] does not,
//! [`ServerRef::stop`] ends it. A server registered under a [`Name`] is called by name
//! ([`Name::call`]), resolved again at each call.
//!
//! # A reply type per request
//!
//! Each variant of a server's `Call` enum carries the [`ReplyTo`] its answer goes
//! through, typed by what that request returns: `Get(ReplyTo<u64>)`,
//! `Open(String, ReplyTo<Result<(), Exists>>)`. The caller passes the variant's
//! constructor (`s.call(Req::Get)`, `s.call(|r| Req::Add(5, r))`) and gets that type
//! back; a handler can only answer a request with its own type, so one request can never
//! "return" another's answer, and both are checked at compile time. This is ractor's
//! reply port in each variant, rather than kameo's `impl Message<M> for A { type Reply }`:
//! it keeps one `handle_call` that matches on the request, as a `gen_server`'s
//! `handle_call/3` clauses do, the reply handle is `From`, kept by value for a deferred
//! reply, and a call costs what it did with one reply type (no boxed message or handler
//! future per call, which the trait-per-message design needs to put different requests
//! in one mailbox).
//!
//! ```compile_fail
//! # use otter::server::{Flow, ReplyTo, Server, ServerContext};
//! # use otter::{Context, ExitReason, Runtime};
//! struct Counter(u64);
//! enum Req { Get(ReplyTo<u64>), Name(ReplyTo<String>) }
//! impl Server for Counter {
//!     type Args = (); type Call = Req; type Cast = (); type Info = ();
//!     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(0)) }
//!     async fn handle_call(&mut self, r: Req, _: &mut ServerContext<Self>) -> Flow {
//!         match r {
//!             Req::Get(from) => from.reply(self.0),
//!             Req::Name(from) => from.reply("counter".to_string()),
//!         }
//!         Flow::Continue
//!     }
//! }
//! let rt = Runtime::new();
//! rt.block_on(|cx: Context<()>| async move {
//!     let c = Counter::start_link(&cx, ()).await.unwrap();
//!     // `Get` answers a u64: asking it for a String does not compile.
//!     let name: Result<String, _> = c.call(Req::Get).await;
//! });
//! ```
//!
//! # Rules mirrored from OTP (`gen_server`, `gen.erl`, `proc_lib`)
//!
//! * **Synchronous start.** `start`/`start_link` spawn the server (linked to the caller
//!   for `start_link`, the link set before it runs), wait for `init`, and return its
//!   error if it failed. `init` returning `Err(reason)` is OTP 26's `{error, Reason}`:
//!   the start returns `Err(reason)` and the server exits `Normal`, so a linked caller
//!   is not taken down. A panic in `init` is a crash: the server exits `Panic`, which a
//!   linked caller that does not trap exits follows, as in Erlang.
//! * **Registered start.** [`Server::start_link_named`] registers the name before `init`
//!   runs; a name that another process holds fails the start with [`AlreadyStarted`]
//!   and that process's id as the reason (`{error, {already_started, Pid}}`; get it
//!   with [`ExitReason::downcast_ref`]). A server that already has a name fails with
//!   `RegisterError::AlreadyNamed`.
//! * **Calls** follow `gen.erl`'s protocol: the caller monitors the server while it
//!   waits; the call returns the reply, or [`CallError::Exit`] with the server's reason
//!   if it exits first, [`CallError::Noproc`] if it does not exist, [`CallError::Timeout`]
//!   after the timeout (default 5 s, as OTP), and [`CallError::CallingSelf`] for a call
//!   from the server to itself. A reply never goes through the caller's mailbox, and a
//!   late reply never surfaces (`server/reply.rs`).
//! * **Calls by name** (`gen_server:call(Name, Request)`): [`Name::call`] looks the name
//!   up at each call, so a server restarted under the same name is reached by the next
//!   call; [`CallError::Noproc`] if no server has the name.
//! * **Deferred replies**: the request carries the caller's [`ReplyTo`] by value; reply
//!   now, or keep it and reply later from anywhere (`gen_server:reply/2`).
//! * **Stopping**: a handler returning [`Flow::Stop`] (`{stop, Reason, State}`), or
//!   [`ServerRef::stop`] (`gen_server:stop/3`), runs `terminate(reason)` and the server
//!   exits with `reason`. A panic in a handler also runs `terminate`, with the panic
//!   reason, before the server exits with it (OTP calls `terminate` on a crash too); a
//!   panic in `terminate` itself becomes the exit reason (gen_server re-raises it).
//! * **System messages** ([`sys`](crate::sys): `get_state`, `replace_state`,
//!   `get_status`, `suspend`/`resume`, `trace`, `statistics`) come through the mailbox
//!   as [`ServerMsg::System`] and are answered by the server loop between two
//!   messages, never by a callback; a suspended server handles only those, a stop
//!   and its parent's exit (`server/system.rs`).
//! * **Parent exit**: a server that traps exits and gets an exit signal from its parent
//!   (the process that started it with `start_link`: a supervisor) runs `terminate`
//!   and exits with the same reason, without `handle_info` (how supervisors' `shutdown`
//!   works). Exits from other processes go to `handle_info` as [`Info::Exit`]. A server
//!   that does not trap exits is ended by the signal directly, without `terminate`.
//!
//! # Differences from OTP
//!
//! * The request, cast and info types are the trait's associated types, and each request
//!   carries a [`ReplyTo`] of its own reply type: calls are typed end to end, per
//!   request, and there is no catch-all clause for unexpected messages.
//! * Handlers are `async`: a handler may await (call another server, sleep); the server
//!   handles its next message when the handler finishes, as a `gen_server` does.
//! * No `{reply, R, S, Timeout}` / hibernate / `code_change`: use
//!   [`Context::send_after`](crate::Context::send_after) for timeouts. A handler replies
//!   through the request's `ReplyTo` (there is no `{reply, Reply, State}`).
//! * `ReplyTo` is consumed by `reply`, so a request is answered at most once.
//! * A failed call or stop is a value ([`CallError`]) the caller handles, where
//!   `gen_server:call` exits the caller; `?` with `From<CallError> for ExitReason` gives
//!   Erlang's behaviour back.
//! * Names are typed ([`Name<S>`]) and per runtime, so a call by name takes the caller's
//!   context (to find the runtime), and finds only a server of that type.
//! * After a failed `start_link`, a caller that traps exits finds the server's `Exit`
//!   (reason `Normal` for init's `Err`, the panic for a crash) in its mailbox; OTP 26's
//!   `proc_lib` consumes it.

mod name;
pub(crate) mod reply;
mod run;
mod system;
pub(crate) mod untyped;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use crate::error::TrySendError;
use crate::exit::ExitReason;
use crate::monitor::{Down, DownMessage};
use crate::pid::{Pid, ProcessId, RawPid};
use crate::process::{Context, SpawnOptions, waker};
use crate::signal::Exit;

pub use name::{Lookup, Name};
pub(crate) use reply::Pending;
pub use reply::{CallError, ReplyTo};
pub(crate) use system::{hooked as reply_hooked, replied as reply_seen};

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
/// [`ServerRef`]. Non-exhaustive: the loop may learn new kinds (system messages came
/// this way), so a match on it outside the crate ends with `_`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerMsg<S: Server> {
    /// A call; the request holds the handle to reply through.
    Call(S::Call),
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
    /// A timeout that a behaviour built on the server loop set for itself (a
    /// [`statem`](crate::statem)'s timeouts), handled by that behaviour.
    #[doc(hidden)]
    Timeout(crate::statem::TimeoutTag),
    /// A system message ([`sys`](crate::sys)), answered by the server loop between
    /// messages; the server never sees it (boxed, as `Exit`).
    System(Box<crate::sys::Request<S>>),
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

/// So that a server can [`demonitor_flush`](crate::Context::demonitor_flush)
/// (`erlang:demonitor(Ref, [flush])` in a `gen_server`).
impl<S: Server> DownMessage for ServerMsg<S> {
    fn as_down(&self) -> Option<&Down> {
        match self {
            ServerMsg::Down(d) => Some(d),
            _ => None,
        }
    }
}

/// A server's behaviour (Erlang's `gen_server` callback module).
///
/// Each request of `Call` carries the [`ReplyTo`] of its own reply type (see the module
/// docs); the caller passes the variant's constructor and gets that type back.
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime};
///
/// struct Counter(u64);
///
/// enum Req {
///     Get(ReplyTo<u64>),
///     Add(u64, ReplyTo<u64>),
/// }
///
/// impl Server for Counter {
///     type Args = u64;
///     type Call = Req;
///     type Cast = u64;
///     type Info = ();
///
///     async fn init(start: u64, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
///         Ok(Counter(start))
///     }
///     async fn handle_call(&mut self, request: Req, _: &mut ServerContext<Self>) -> Flow {
///         match request {
///             Req::Get(from) => from.reply(self.0),
///             Req::Add(n, from) => {
///                 self.0 += n;
///                 from.reply(self.0)
///             }
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
///     let c = Counter::start_link(&cx, 10).await.unwrap();
///     c.cast(5);
///     let added = c.call(|from| Req::Add(1, from)).await;
///     (added, c.call(Req::Get).await)
/// });
/// assert_eq!(r.unwrap(), (Ok(16), Ok(16)));
/// ```
pub trait Server: Sized + Send + 'static {
    /// What `init` is started with.
    type Args: Send + 'static;
    /// The requests of calls: usually an enum whose variants each carry the
    /// [`ReplyTo`] their answer goes through.
    type Call: Send + 'static;
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

    /// Handles a call: reply through the request's [`ReplyTo`], now or later.
    fn handle_call(
        &mut self,
        request: Self::Call,
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

    /// Writes the state for [`sys::get_status`](crate::sys::get_status) (OTP's
    /// `format_status/1` callback): what an operator reads of it. The default writes the
    /// state's type name (a state need not be `Debug`); a `Debug` state writes itself
    /// with `fmt::Debug::fmt(self, f)`.
    ///
    /// See [`sys::get_status`](crate::sys::get_status) for an example.
    fn format_status(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::any::type_name::<Self>())
    }

    /// Runs once the start has returned, before the first message: how a
    /// [`statem`](crate::statem) makes its first state's enter call and runs its
    /// initial actions without holding up its starter. Not for servers.
    #[doc(hidden)]
    fn after_init(&mut self, cx: &mut ServerContext<Self>) -> impl Future<Output = Flow> + Send {
        let _ = cx;
        async { Flow::Continue }
    }

    /// Handles a [`ServerMsg::Timeout`]: a [`statem`](crate::statem)'s timeouts. Not for
    /// servers.
    #[doc(hidden)]
    fn handle_timeout(
        &mut self,
        tag: crate::statem::TimeoutTag,
        cx: &mut ServerContext<Self>,
    ) -> impl Future<Output = Flow> + Send {
        let _ = (tag, cx);
        async { Flow::Continue }
    }

    /// Starts this server, not linked (`gen_server:start/3`): [`start`]. Not meant to be
    /// overridden.
    ///
    /// See [`ServerRef`] for an example.
    fn start<M: Send + 'static>(
        cx: &Context<M>,
        args: Self::Args,
    ) -> impl Future<Output = Result<ServerRef<Self>, ExitReason>> + Send + use<Self, M> {
        start_with(cx, args, SpawnOptions::new(), None)
    }

    /// Starts this server linked to the caller (`gen_server:start_link/3`):
    /// [`start_link`]. Not meant to be overridden.
    ///
    /// See [`Server`] for an example.
    fn start_link<M: Send + 'static>(
        cx: &Context<M>,
        args: Self::Args,
    ) -> impl Future<Output = Result<ServerRef<Self>, ExitReason>> + Send + use<Self, M> {
        start_with(cx, args, SpawnOptions::new().link(), None)
    }

    /// Starts this server linked to the caller and registered as `name`
    /// (`gen_server:start_link({local, Name}, ...)`): [`start_link_named`]. Not meant to
    /// be overridden.
    ///
    /// See [`Name`] for an example.
    fn start_link_named<M: Send + 'static, N: Into<Name<Self>>>(
        cx: &Context<M>,
        name: N,
        args: Self::Args,
    ) -> impl Future<Output = Result<ServerRef<Self>, ExitReason>> + Send + use<Self, M, N> {
        start_with(
            cx,
            args,
            SpawnOptions::new().link(),
            Some(name.into().into_arc()),
        )
    }
}

/// A handle to a running server: its typed pid. Cheap to copy, `Send + Sync`.
///
/// ```
/// # use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let s: server::ServerRef<Echo> = Echo::start(&cx, ()).await.unwrap();
///     (s.call(|f| (7, f)).await, s.pid().is_alive())
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
    /// The server whose process is `pid` (a distribution node's registered server).
    #[cfg(feature = "dist")]
    pub(crate) fn from_pid(pid: Pid<ServerMsg<S>>) -> ServerRef<S> {
        ServerRef { pid }
    }

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
    /// (`gen_server:call/2`). `request` builds the request around the reply handle: a
    /// variant's constructor (`Req::Get`) or a closure (`|r| Req::Add(5, r)`); the reply
    /// type is that handle's. Works from any process, and from any other async code
    /// whose wakers work (the caller's runtime times it; off any runtime, a
    /// process-wide timer).
    ///
    /// See [`Server`] for an example.
    pub async fn call<R: Send + 'static>(
        self,
        request: impl FnOnce(ReplyTo<R>) -> S::Call,
    ) -> Result<R, CallError> {
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
    ///     type Args = (); type Call = ReplyTo<()>; type Cast = (); type Info = ();
    ///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Silent(vec![])) }
    ///     async fn handle_call(&mut self, f: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
    ///         self.0.push(f); // never replies
    ///         Flow::Continue
    ///     }
    /// }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let s = Silent::start(&cx, ()).await.unwrap();
    ///     s.call_timeout(|f| f, Some(Duration::from_millis(10))).await
    /// });
    /// assert_eq!(r.unwrap(), Err(CallError::Timeout));
    /// ```
    pub async fn call_timeout<R: Send + 'static>(
        self,
        request: impl FnOnce(ReplyTo<R>) -> S::Call,
        timeout: Option<Duration>,
    ) -> Result<R, CallError> {
        let target = self.pid.raw;
        // The slot gets the waker before it is shared.
        let waker = requester(target).await?;
        let (pending, reply_to) = Pending::call(target, waker);
        // If the send fails the server has exited, and its watcher (on it, or refused
        // with `Noproc`) has already set the outcome: its real reason. A full bounded
        // mailbox refuses the request: the call fails at once (the request, with its
        // `ReplyTo`, goes before the `Pending`, so the slot may serve the next call).
        if let Err(TrySendError::Full(request)) =
            self.pid.try_send(ServerMsg::Call(request(reply_to)))
        {
            drop(request);
            drop(pending);
            return Err(CallError::Full);
        }
        pending.wait(timeout).await
    }

    /// Sends a cast (`gen_server:cast/2`): no reply, no error if the server is gone.
    ///
    /// See [`Server`] for an example.
    pub fn cast(&self, message: S::Cast) {
        self.pid.send(ServerMsg::Cast(message));
    }

    /// Sends a cast unless the server's bounded mailbox is full (handed back as
    /// [`TrySendError::Full`]) or the server has exited (`Exited`). A plain
    /// [`ServerRef::cast`] goes beyond the bound
    /// ([`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox)).
    ///
    /// See [`start_opt`] for an example.
    pub fn try_cast(&self, message: S::Cast) -> Result<(), TrySendError<S::Cast>> {
        self.pid
            .try_send(ServerMsg::Cast(message))
            .map_err(|e| match e {
                TrySendError::Full(ServerMsg::Cast(m)) => TrySendError::Full(m),
                TrySendError::Exited(ServerMsg::Cast(m)) => TrySendError::Exited(m),
                _ => unreachable!("the message handed back is the one sent"),
            })
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
    /// `Err(Noproc)` if it did not exist, and `Err(CallingSelf)` at once, stopping
    /// nothing, when the server asks it of itself (it would wait for its own exit; OTP
    /// exits with `calling_self`). A server stops itself by returning [`Flow::Stop`].
    ///
    /// ```
    /// # use otter::server::{self, Flow, ReplyTo, Server, ServerContext};
    /// # use otter::{Context, ExitReason, Runtime};
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let s = Echo::start(&cx, ()).await.unwrap();
    ///     let stopped = s.stop(ExitReason::Normal, None).await;
    ///     (stopped, s.call(|f| (1, f)).await)
    /// });
    /// assert_eq!(r.unwrap(), (Ok(()), Err(server::CallError::Noproc)));
    /// ```
    pub async fn stop(
        self,
        reason: ExitReason,
        timeout: Option<Duration>,
    ) -> Result<(), CallError> {
        requester(self.pid.raw).await?;
        let (mut pending, _never) = Pending::<()>::new();
        let wanted = reason.clone();
        pending.watch(self.pid.raw, move |r| {
            if r == wanted {
                Ok(())
            } else {
                Err(CallError::Exit(r))
            }
        });
        // Never refused by a bounded mailbox (`SpawnOptions::bounded_mailbox`).
        let _ = crate::process::send::send(self.pid, ServerMsg::Stop(Box::new(reason)));
        pending.wait(timeout).await
    }
}

/// The waker of the poll that makes a request of `target` and goes on to wait for it;
/// `CallingSelf` if that poll is `target`'s own, which would wait for itself (OTP's
/// `calling_self`).
pub(crate) async fn requester(target: RawPid) -> Result<std::task::Waker, CallError> {
    let waker = std::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())).await;
    if waker::is_waker_of(&waker, target) {
        Err(CallError::CallingSelf)
    } else {
        Ok(waker)
    }
}

/// Starts a server, not linked (`gen_server:start/3`): the server is spawned by this
/// call; the returned future resolves once `init` has finished. Usually called as
/// [`Server::start`] (`Echo::start(&cx, args)`).
///
/// See [`ServerRef`] for an example.
pub fn start<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    start_with(cx, args, SpawnOptions::new(), None)
}

/// Starts a server linked to the caller (`gen_server:start_link/3`): spawned by this
/// call, the link set before it runs; the future resolves once `init` has finished. The
/// caller becomes the server's parent (see the module docs). Usually called as
/// [`Server::start_link`].
///
/// See [`Server`] for an example.
pub fn start_link<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    start_with(cx, args, SpawnOptions::new().link(), None)
}

/// Starts a server with `options` (`gen_server:start/4` with `{spawn_opt, ...}`):
/// linked to the caller if [`SpawnOptions::link`] (then it is [`start_link`]), with a
/// bounded mailbox if [`SpawnOptions::bounded_mailbox`], whose rules say what a full
/// server refuses: a call fails with [`CallError::Full`], a [`ServerRef::try_cast`]
/// hands the cast back.
///
/// ```
/// # use otter::server::{self, CallError, Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime, SpawnOptions};
/// struct Slow;
/// impl Server for Slow {
///     type Args = (); type Call = ReplyTo<()>; type Cast = u32; type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Slow) }
///     async fn handle_call(&mut self, f: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
///         f.reply(());
///         Flow::Continue
///     }
///     async fn handle_cast(&mut self, _: u32, cx: &mut ServerContext<Self>) -> Flow {
///         cx.sleep(std::time::Duration::from_secs(3600)).await; // stuck
///         Flow::Continue
///     }
/// }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let s = server::start_opt::<Slow, _>(&cx, (), SpawnOptions::new().bounded_mailbox(2)).await.unwrap();
///     s.cast(1); // taken, and the server is stuck in it (or about to be)
///     while s.try_cast(2).is_ok() {} // fills the mailbox
///     let refused = s.try_cast(3);
///     (refused, s.call(|f| f).await)
/// });
/// assert_eq!(r.unwrap(), (Err(otter::TrySendError::Full(3)), Err(CallError::Full)));
/// ```
pub fn start_opt<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
    options: SpawnOptions,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    start_with(cx, args, options, None)
}

/// Starts a server linked to the caller and registered as `name` before `init` runs
/// (`gen_server:start_link({local, Name}, ...)`). Usually called as
/// [`Server::start_link_named`]; call it by name with [`Name::call`].
///
/// See [`Name`] for an example.
pub fn start_link_named<S: Server, M: Send + 'static, N: Into<Name<S>>>(
    cx: &Context<M>,
    name: N,
    args: S::Args,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M, N> {
    start_with(
        cx,
        args,
        SpawnOptions::new().link(),
        Some(name.into().into_arc()),
    )
}

/// The server of type `S` registered as `name` on the caller's runtime, if any
/// (`whereis/1`). [`Name::whereis`] is the same with a typed name.
///
/// See [`Name`] for an example.
pub fn whereis<S: Server, M: Send + 'static>(cx: &Context<M>, name: &str) -> Option<ServerRef<S>> {
    cx.whereis::<ServerMsg<S>>(name).map(ServerRef::from)
}

/// Spawns the server now; the future waits for `init` (and borrows nothing, so the
/// caller's `Context` is not held across the wait).
fn start_with<S: Server, M: Send + 'static>(
    cx: &Context<M>,
    args: S::Args,
    options: SpawnOptions,
    name: Option<Arc<str>>,
) -> impl Future<Output = Result<ServerRef<S>, ExitReason>> + Send + use<S, M> {
    let link = options.is_linked();
    let (mut pending, ack) = Pending::<ServerRef<S>>::new();
    let parent = link.then_some(cx.pid().id().0);
    // A failed start resolves only once the server has exited (its watcher fired, after
    // its name was released), with the reason `init` gave: a retry can take the name
    // again at once (proc_lib's `sync_start` waits for the `'DOWN'` likewise).
    let failure: Arc<Mutex<Option<ExitReason>>> = Arc::default();
    let failed = failure.clone();
    cx.spawn_with(
        move |scx: ServerContext<S>| run::serve::<S>(scx, args, ack, failed, parent, name),
        options,
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

/// Why a registered start failed: a process already has the name (OTP's
/// `{error, {already_started, Pid}}`), this one. The reason inside
/// [`ExitReason::Error`]; [`ExitReason::downcast_ref`] gets it.
///
/// ```
/// # use otter::server::{self, AlreadyStarted, Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Cache;
/// # impl Server for Cache {
/// #     type Args = (); type Call = ((), ReplyTo<()>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Cache) }
/// #     async fn handle_call(&mut self, (_, f): ((), ReplyTo<()>), _: &mut ServerContext<Self>) -> Flow { f.reply(()); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let first = Cache::start_link_named(&cx, "cache", ()).await.unwrap();
///     let again = Cache::start_link_named(&cx, "cache", ()).await.unwrap_err();
///     again.downcast_ref::<AlreadyStarted>() == Some(&AlreadyStarted(first.pid().id()))
/// });
/// assert!(r.unwrap());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyStarted(pub ProcessId);

impl std::fmt::Display for AlreadyStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "already started: {:?} has the name", self.0)
    }
}

impl std::error::Error for AlreadyStarted {}

/// Runs a callback's future, turning a panic into `Err(reason)` (the future is pinned
/// on this stack frame: no allocation per message).
pub(crate) async fn catch<F: Future>(fut: F) -> Result<F::Output, ExitReason> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(crate::unwind::panic_reason(payload))),
        }
    })
    .await
}
