//! `sys`: look inside a running server, state machine or supervisor, as OTP's `sys`
//! module does, through system messages the server loop answers between its own.
//!
//! | Erlang | otter |
//! |---|---|
//! | `sys:get_state(Name)` | [`get_state`]`(server)` (`S: Clone`), [`get_state_with`]`(server, \|s\| ..)` |
//! | `sys:replace_state(Name, Fun)` | [`replace_state`]`(server, \|s\| ..)` |
//! | `sys:get_status(Name)` | [`get_status`]`(server)`: a [`Status`] |
//! | `sys:suspend(Name)`, `sys:resume(Name)` | [`suspend`]`(server)`, [`resume`]`(server)` |
//! | `sys:trace(Name, true)` (`*DBG*` lines) | [`trace`]`(server, true)`: `tracing` events, target `otter::sys` |
//! | `sys:statistics(Name, true \| false \| get)` | [`statistics`]`(server, on)`, [`get_statistics`]`(server)` |
//! | `sys:log(Name, {true, N} \| false \| get)` | [`log`]`(server, Some(n) \| None)`, [`get_log`]`(server)`: [`LogEvent`]s |
//! | `sys:get_status(Pid)`, `sys:log(Pid, get)` with only a pid | [`get_status_of`]`(handle, pid)`, [`get_log_of`]`(handle, pid)` |
//! | `sys:terminate(Name, Reason)`, `gen_server:stop/3` | [`stop`]`(server, reason, timeout)` |
//!
//! Each function takes a [`Target`]: a [`ServerRef`], a [`StatemRef`](crate::statem::StatemRef),
//! a [`SupervisorRef`], or what a lookup by name gives (`Option<ServerRef<S>>` from
//! [`Name::whereis`](crate::server::Name::whereis), through a process's `Context` or a
//! [`Handle`](crate::Handle) outside the runtime; `Option<SupervisorRef>` from
//! [`supervisor::whereis`](crate::supervisor::whereis)). A name nobody holds, and a
//! process that has exited, give [`SysError::Noproc`].
//!
//! # Rules mirrored from OTP (`sys`, `gen_server`'s system messages)
//!
//! * **System messages** travel in the server's mailbox, in order with its other
//!   messages: a request is answered when the server reaches it, between two of its
//!   own messages (never in the middle of a handler). Each waits at most
//!   [`DEFAULT_TIMEOUT`] (OTP's 5 s), then fails with [`SysError::Timeout`].
//! * **`get_state`** returns the server's state; a state machine's is `(state, data)`
//!   ([`Snapshot`]), a supervisor's is its [`Supervisor`](crate::supervisor::Supervisor).
//! * **`replace_state`** hands the function a copy of the state and installs what it
//!   returns (OTP's `StateFun`). A function that panics leaves the server running with
//!   its old state, and the caller gets [`SysError::CallbackFailed`] (OTP's
//!   `{callback_failed, ..}`). A state machine's new state runs no enter call.
//! * **Suspended**, a server handles system messages, a stop and its parent's exit
//!   signal only; every other message waits, in order, until [`resume`], and is then
//!   handled before any later one. A call to a suspended server so times out, as in
//!   OTP (the request is still handled at the resume; its late reply is dropped).
//! * **`stop`** (`sys:terminate`) is a system message too: it reaches a suspended
//!   server, which runs `terminate` and exits.
//! * **Debugging costs nothing when off** (OTP's empty debug list): the server loop
//!   looks at one flag per message, and counts, traces and stashes nothing; a system
//!   message that turns tracing, statistics or suspension on sends the server's
//!   messages through a debug path (`server/system.rs`) until all three are off.
//!
//! # Differences from OTP
//!
//! * Typed: `get_state` gives the state's own type (cloned; [`get_state_with`] reads
//!   it in place when it is not `Clone`), and [`replace_state`] needs `Clone`, which
//!   is what keeps the old state whole when the function panics.
//! * Trace events name a message by its kind and its Rust type, not its value (a
//!   server's messages need not be `Debug`). A reply is traced when the server's
//!   handler sends it (`from.reply(v)`, also a state machine's `Transition::reply`);
//!   OTP traces the replies returned from `handle_call`.
//! * Statistics have no `reductions`; messages out are the replies the server's
//!   handlers send.
//! * The messages a suspended server holds back are taken out of its mailbox into a
//!   queue of its own (its mailbox looks empty), where OTP leaves them in the mailbox.
//! * [`ServerMsg`] has a variant for system messages: a `match` on it that names
//!   every variant must name that one too.
//! * [`get_status`] shows the state through [`Server::format_status`] (OTP's
//!   `format_status/1` callback); by default, the state's type name.
//! * No `log`, `log_to_file`, `install`, `change_code`: `tracing` subscribers do the
//!   first three's work, and there is no hot code loading.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::exit::ExitReason;
use crate::pid::ProcessId;
use crate::server::{CallError, Pending, ReplyTo, Server, ServerMsg, ServerRef, requester};
use crate::statem::{Machine, StateMachine};
use crate::supervisor::SupervisorRef;

mod by_pid;
pub use by_pid::{get_log_of, get_status_of};

/// How long a `sys` request waits for its answer: OTP's default for `sys` functions.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a `sys` request failed.
///
/// ```
/// use otter::sys::SysError;
/// assert_eq!(SysError::Noproc.to_string(), "no such process (noproc)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysError {
    /// No answer within [`DEFAULT_TIMEOUT`] (a busy or suspended server: OTP's
    /// `timeout`).
    Timeout,
    /// The server exited with this reason before it answered.
    Exit(ExitReason),
    /// No such process: it has exited, or no server has the name (OTP's `noproc`).
    Noproc,
    /// A server asked it of itself, which could only time out (OTP's `calling_self`).
    CallingSelf,
    /// The function given to [`replace_state`] or [`get_state_with`] panicked with
    /// this reason; the server runs on with its old state (OTP's `callback_failed`).
    CallbackFailed(ExitReason),
}

impl fmt::Display for SysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SysError::Timeout => f.write_str("sys request timed out"),
            SysError::Exit(r) => write!(f, "process exited: {r}"),
            SysError::Noproc => f.write_str("no such process (noproc)"),
            SysError::CallingSelf => f.write_str("a process asked sys of itself"),
            SysError::CallbackFailed(r) => write!(f, "the state function failed: {r}"),
        }
    }
}

impl std::error::Error for SysError {}

impl From<CallError> for SysError {
    fn from(e: CallError) -> SysError {
        match e {
            CallError::Timeout => SysError::Timeout,
            CallError::Exit(r) => SysError::Exit(r),
            CallError::Noproc => SysError::Noproc,
            CallError::CallingSelf => SysError::CallingSelf,
            // Not from `sys`: system messages are never refused.
            CallError::Full => SysError::Timeout,
        }
    }
}

/// Whether a server handles its messages or only system messages (OTP's `running` /
/// `suspended`).
///
/// ```
/// use otter::sys::Mode;
/// assert_ne!(Mode::Running, Mode::Suspended);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Handles every message.
    Running,
    /// Handles system messages only, until [`resume`].
    Suspended,
}

/// What [`get_status`] reports (OTP's `{status, Pid, {module, Mod}, [PDict, SysState,
/// Parent, Dbg, Misc]}`).
///
/// See [`get_status`] for an example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The server's process.
    pub pid: ProcessId,
    /// The name it was started under, if any.
    pub name: Option<Arc<str>>,
    /// Its Rust type (OTP's `{module, Mod}`): `otter::statem::Machine<..>` for a state
    /// machine, `otter::supervisor::Supervisor` for a supervisor.
    pub behaviour: &'static str,
    /// Running or suspended.
    pub mode: Mode,
    /// The process that started it linked (a supervisor), if any.
    pub parent: Option<ProcessId>,
    /// Whether [`trace`] is on.
    pub trace: bool,
    /// Whether [`statistics`] are on.
    pub statistics: bool,
    /// The state, as [`Server::format_status`] shows it.
    pub state: String,
}

/// What [`get_statistics`] reports (OTP's `{ok, [{start_time, _}, {current_time, _},
/// {messages_in, _}, {messages_out, _}]}`).
///
/// See [`get_statistics`] for an example.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statistics {
    /// When statistics were turned on.
    pub start_time: SystemTime,
    /// When the server answered.
    pub current_time: SystemTime,
    /// Messages handled since then (system messages not counted).
    pub messages_in: u64,
    /// Replies its handlers sent since then.
    pub messages_out: u64,
}

/// One event a server logged while its log was on ([`log`], [`get_log`]; OTP's
/// `sys:log/2`): a message it handled, or a reply its handler sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogEvent {
    /// When the server logged it.
    pub at: SystemTime,
    /// A message in, or a reply out.
    pub direction: Direction,
    /// `call`, `cast`, `info`, `exit`, `down`, `stop`, `timeout`, or `reply`: as the
    /// trace events' `kind` ([`trace`]).
    pub kind: &'static str,
    /// The message's Rust type (its value is not kept: a server's messages need not be
    /// `Debug`, and the log holds no message alive).
    pub message: &'static str,
}

/// Which way a [`LogEvent`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// A message the server handled.
    In,
    /// A reply its handler sent.
    Out,
}

/// A system message (opaque): what the functions of [`sys`](self) send. The server
/// loop answers it; a server never sees it.
pub struct Request<S: Server>(pub(crate) Kind<S>);

impl<S: Server> fmt::Debug for Request<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Kind::Inspect(_) => "Request(GetState)",
            Kind::Replace(_) => "Request(ReplaceState)",
            Kind::Status(_) => "Request(GetStatus)",
            Kind::Suspend(_) => "Request(Suspend)",
            Kind::Resume(_) => "Request(Resume)",
            Kind::Trace(..) => "Request(Trace)",
            Kind::Statistics(..) => "Request(Statistics)",
            Kind::GetStatistics(_) => "Request(GetStatistics)",
            Kind::Log(..) => "Request(Log)",
            Kind::GetLog(_) => "Request(GetLog)",
        })
    }
}

/// The system messages. The closures are built by the caller: they catch a panic of
/// the user's function and reply themselves, so the server runs them as they are.
pub(crate) enum Kind<S: Server> {
    Inspect(Box<dyn FnOnce(&S) + Send>),
    Replace(Box<dyn FnOnce(&mut S) + Send>),
    Status(ReplyTo<Status>),
    Suspend(ReplyTo<()>),
    Resume(ReplyTo<()>),
    Trace(bool, ReplyTo<()>),
    Statistics(bool, ReplyTo<()>),
    GetStatistics(ReplyTo<Option<Statistics>>),
    Log(Option<usize>, ReplyTo<()>),
    GetLog(ReplyTo<Vec<LogEvent>>),
}

/// The system messages that do not name the server's type: what code that holds only
/// a pid may send (`server/untyped.rs`).
pub(crate) enum Untyped {
    Status(ReplyTo<Status>),
    GetLog(ReplyTo<Vec<LogEvent>>),
}

impl<S: Server> From<Untyped> for Kind<S> {
    fn from(u: Untyped) -> Kind<S> {
        match u {
            Untyped::Status(r) => Kind::Status(r),
            Untyped::GetLog(r) => Kind::GetLog(r),
        }
    }
}

/// What a `sys` function is sent to: a server's handle, or the result of a lookup by
/// name (`None`: [`SysError::Noproc`]).
///
/// ```
/// # use otter::server::{Flow, Name, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # #[derive(Clone)] struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// use otter::sys::{self, SysError};
/// const ECHO: Name<Echo> = Name::new("echo");
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let missing = sys::get_status(ECHO.whereis(&cx)).await.map(|_| ());
///     let echo = Echo::start_link_named(&cx, ECHO, ()).await.unwrap();
///     let by_ref = sys::get_status(echo).await.unwrap().pid;
///     let by_name = sys::get_status(ECHO.whereis(&cx)).await.unwrap().pid;
///     (missing, by_ref == by_name)
/// });
/// assert_eq!(r.unwrap(), (Err(SysError::Noproc), true));
/// ```
pub trait Target {
    /// The server type of the process.
    type Server: Server;
    /// The server, if there is one.
    fn server(self) -> Option<ServerRef<Self::Server>>;
}

impl<S: Server> Target for ServerRef<S> {
    type Server = S;
    fn server(self) -> Option<ServerRef<S>> {
        Some(self)
    }
}

impl<S: Server> Target for Option<ServerRef<S>> {
    type Server = S;
    fn server(self) -> Option<ServerRef<S>> {
        self
    }
}

impl Target for SupervisorRef {
    type Server = crate::supervisor::Supervisor;
    fn server(self) -> Option<ServerRef<Self::Server>> {
        Some(SupervisorRef::server(&self))
    }
}

impl Target for Option<SupervisorRef> {
    type Server = crate::supervisor::Supervisor;
    fn server(self) -> Option<ServerRef<Self::Server>> {
        self.map(|s| SupervisorRef::server(&s))
    }
}

/// What [`get_state`] returns and [`replace_state`] replaces: a copy of the state. A
/// server's is the server itself (`S: Clone`); a state machine's is `(state, data)`,
/// as OTP's `gen_statem` gives `{State, Data}`.
///
/// See [`get_state`] for an example.
pub trait Snapshot: Server {
    /// The copy.
    type Snapshot: Send + 'static;
    /// Copies the state.
    fn snapshot(&self) -> Self::Snapshot;
    /// Replaces the state with `new`.
    fn restore(&mut self, new: Self::Snapshot);
}

impl<S: Server + Clone> Snapshot for S {
    type Snapshot = S;
    fn snapshot(&self) -> S {
        self.clone()
    }
    fn restore(&mut self, new: S) {
        *self = new;
    }
}

impl<S: StateMachine + Clone> Snapshot for Machine<S>
where
    S::State: Clone,
{
    type Snapshot = (S::State, S);
    fn snapshot(&self) -> (S::State, S) {
        (self.state().clone(), self.data().clone())
    }
    fn restore(&mut self, (state, data): (S::State, S)) {
        self.replace(state, data);
    }
}

/// Sends system message `make(reply)` to `server` and waits for the reply (the
/// protocol of [`ServerRef::call`]).
async fn request<S: Server, R: Send + 'static>(
    server: Option<ServerRef<S>>,
    make: impl FnOnce(ReplyTo<R>) -> Kind<S>,
) -> Result<R, SysError> {
    let Some(server) = server else {
        return Err(SysError::Noproc);
    };
    let target = server.pid().raw;
    let waker = requester(target).await?;
    let (pending, reply_to) = Pending::call(target, waker);
    // A failed send: the server has exited, and its watcher has set the outcome.
    // Never refused by a bounded mailbox: the runtime's control of a process must not
    // depend on its load (`SpawnOptions::bounded_mailbox`).
    let _ = crate::process::send::send(
        server.pid(),
        ServerMsg::System(Box::new(Request(make(reply_to)))),
    );
    Ok(pending.wait(Some(DEFAULT_TIMEOUT)).await?)
}

/// Runs `f`, a function of the caller's, in the server: a panic in it is
/// [`SysError::CallbackFailed`], and the server runs on.
fn catching<R>(f: impl FnOnce() -> R) -> Result<R, SysError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|p| SysError::CallbackFailed(crate::unwind::panic_reason(p)))
}

/// A copy of the server's state (`sys:get_state/1`): the server itself for a server,
/// `(state, data)` for a state machine ([`Snapshot`]).
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime, sys};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Counter(u64);
/// impl Server for Counter {
///     type Args = u64; type Call = ReplyTo<u64>; type Cast = u64; type Info = ();
///     async fn init(n: u64, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(n)) }
///     async fn handle_call(&mut self, from: ReplyTo<u64>, _: &mut ServerContext<Self>) -> Flow {
///         from.reply(self.0);
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
///     let c = Counter::start_link(&cx, 1).await.unwrap();
///     c.cast(2);
///     sys::get_state(c).await
/// });
/// assert_eq!(r.unwrap(), Ok(Counter(3)));
/// ```
pub async fn get_state<T: Target>(target: T) -> Result<<T::Server as Snapshot>::Snapshot, SysError>
where
    T::Server: Snapshot,
{
    get_state_with(target, |s: &T::Server| s.snapshot()).await
}

/// Runs `f` on the server's state, in the server, and returns what it returns: reads a
/// state that is not `Clone`, or a part of it. A panic in `f` is
/// [`SysError::CallbackFailed`]; the server runs on.
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime, sys};
///
/// struct Sessions(Vec<std::net::TcpStream>); // not Clone
/// impl Server for Sessions {
///     type Args = (); type Call = ReplyTo<()>; type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Sessions(vec![])) }
///     async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
///         from.reply(());
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let s = Sessions::start_link(&cx, ()).await.unwrap();
///     sys::get_state_with(s, |s: &Sessions| s.0.len()).await
/// });
/// assert_eq!(r.unwrap(), Ok(0));
/// ```
pub async fn get_state_with<T, R, F>(target: T, f: F) -> Result<R, SysError>
where
    T: Target,
    R: Send + 'static,
    F: FnOnce(&T::Server) -> R + Send + 'static,
{
    request(target.server(), |reply| {
        Kind::Inspect(Box::new(move |s: &T::Server| {
            reply.reply(catching(|| f(s)))
        }))
    })
    .await?
}

/// Replaces the server's state with what `f` makes of a copy of it, and returns the
/// new state (`sys:replace_state/2`). If `f` panics the server keeps its old state,
/// runs on, and this returns [`SysError::CallbackFailed`].
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime, sys};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Counter(u64);
/// impl Server for Counter {
///     type Args = (); type Call = ReplyTo<u64>; type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(0)) }
///     async fn handle_call(&mut self, from: ReplyTo<u64>, _: &mut ServerContext<Self>) -> Flow {
///         from.reply(self.0);
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let c = Counter::start_link(&cx, ()).await.unwrap();
///     let new = sys::replace_state(c, |_| Counter(41)).await;
///     let failed = sys::replace_state(c, |_| -> Counter { panic!("no") }).await.is_err();
///     (new, failed, c.call(|f| f).await)
/// });
/// assert_eq!(r.unwrap(), (Ok(Counter(41)), true, Ok(41)));
/// ```
pub async fn replace_state<T, F>(
    target: T,
    f: F,
) -> Result<<T::Server as Snapshot>::Snapshot, SysError>
where
    T: Target,
    T::Server: Snapshot,
    F: FnOnce(<T::Server as Snapshot>::Snapshot) -> <T::Server as Snapshot>::Snapshot
        + Send
        + 'static,
{
    request(target.server(), |reply| {
        Kind::Replace(Box::new(move |s: &mut T::Server| {
            reply.reply(catching(|| {
                // `f` works on a copy: if it panics, `s` is untouched.
                let new = f(s.snapshot());
                s.restore(new);
                s.snapshot()
            }))
        }))
    })
    .await?
}

/// The server's status (`sys:get_status/1`): its pid, name, type, mode, parent,
/// debug flags and its state as [`Server::format_status`] writes it.
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::sys::{self, Mode};
/// use otter::{Context, ExitReason, Runtime};
/// use std::fmt;
///
/// struct Counter(u64);
/// impl Server for Counter {
///     type Args = (); type Call = ReplyTo<u64>; type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(7)) }
///     async fn handle_call(&mut self, from: ReplyTo<u64>, _: &mut ServerContext<Self>) -> Flow {
///         from.reply(self.0);
///         Flow::Continue
///     }
///     fn format_status(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         write!(f, "count = {}", self.0)
///     }
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let c = Counter::start_link_named(&cx, "counter", ()).await.unwrap();
///     sys::get_status(c).await.unwrap()
/// });
/// let status = r.unwrap();
/// assert_eq!((status.mode, status.state.as_str()), (Mode::Running, "count = 7"));
/// assert_eq!(status.name.as_deref(), Some("counter"));
/// ```
pub async fn get_status<T: Target>(target: T) -> Result<Status, SysError> {
    request(target.server(), Kind::Status).await
}

/// Suspends the server (`sys:suspend/1`): until [`resume`], it answers system messages
/// (and a stop, and its parent's exit) only, and its other messages wait in its
/// mailbox, in order.
///
/// ```
/// use std::time::Duration;
/// use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime, sys};
///
/// struct Echo;
/// impl Server for Echo {
///     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
///     async fn handle_call(&mut self, (n, from): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow {
///         from.reply(n);
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let e = Echo::start_link(&cx, ()).await.unwrap();
///     sys::suspend(e).await.unwrap();
///     let waited = e.call_timeout(|f| (1, f), Some(Duration::from_millis(20))).await;
///     sys::resume(e).await.unwrap();
///     (waited, e.call(|f| (2, f)).await)
/// });
/// assert_eq!(r.unwrap(), (Err(CallError::Timeout), Ok(2)));
/// ```
pub async fn suspend<T: Target>(target: T) -> Result<(), SysError> {
    request(target.server(), Kind::Suspend).await
}

/// Resumes a suspended server (`sys:resume/1`): it handles the messages that waited,
/// in order. Resuming a running server does nothing.
///
/// See [`suspend`] for an example.
pub async fn resume<T: Target>(target: T) -> Result<(), SysError> {
    request(target.server(), Kind::Resume).await
}

/// Turns tracing on or off (`sys:trace/2`): while on, the server emits a `tracing`
/// event (target `otter::sys`, level info, fields `pid`, `name`, `event`, `kind`,
/// `message`) for each message it handles (`event = "in"`) and each reply its handlers
/// send (`event = "out"`), as OTP prints `*DBG*` lines.
///
/// ```
/// # use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime, sys};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let e = Echo::start_link(&cx, ()).await.unwrap();
///     sys::trace(e, true).await.unwrap();
///     // Logged when a subscriber is installed: "*DBG* <0.2.0> got call ((u8, ..))".
///     let v = e.call(|f| (1, f)).await;
///     sys::trace(e, false).await.unwrap();
///     (v, sys::get_status(e).await.unwrap().trace)
/// });
/// assert_eq!(r.unwrap(), (Ok(1), false));
/// ```
pub async fn trace<T: Target>(target: T, on: bool) -> Result<(), SysError> {
    request(target.server(), |r| Kind::Trace(on, r)).await
}

/// Keeps the last `keep` events of the server, messages in and replies out, or, with
/// `None`, stops and forgets them (`sys:log(Name, {true, N})`, `sys:log(Name, false)`;
/// OTP's `true` keeps 10). Read them with [`get_log`]. Off, nothing is kept.
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::sys::{self, Direction};
/// use otter::{Context, ExitReason, Runtime};
///
/// struct Echo;
/// impl Server for Echo {
///     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
///     async fn handle_call(&mut self, (n, from): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow {
///         from.reply(n);
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let log = rt.block_on(|cx: Context<()>| async move {
///     let e = Echo::start_link(&cx, ()).await.unwrap();
///     sys::log(e, Some(2)).await.unwrap();
///     for n in 0..3 {
///         e.call(|f| (n, f)).await.unwrap();
///     }
///     sys::get_log(e).await.unwrap()
/// });
/// let log = log.unwrap();
/// // The last two events: the third call in, its reply out.
/// assert_eq!(log.iter().map(|e| (e.direction, e.kind)).collect::<Vec<_>>(),
///            [(Direction::In, "call"), (Direction::Out, "reply")]);
/// ```
pub async fn log<T: Target>(target: T, keep: Option<usize>) -> Result<(), SysError> {
    request(target.server(), |r| Kind::Log(keep, r)).await
}

/// The events the server kept since [`log`] turned its log on, oldest first
/// (`sys:log(Name, get)`); empty when the log is off.
///
/// See [`log`] for an example.
pub async fn get_log<T: Target>(target: T) -> Result<Vec<LogEvent>, SysError> {
    request(target.server(), Kind::GetLog).await
}

/// Turns statistics on (counting from now) or off (`sys:statistics(Name, true |
/// false)`); read them with [`get_statistics`]. Off, nothing is counted.
///
/// See [`get_statistics`] for an example.
pub async fn statistics<T: Target>(target: T, on: bool) -> Result<(), SysError> {
    request(target.server(), |r| Kind::Statistics(on, r)).await
}

/// The statistics since [`statistics`] turned them on, `None` if they are off
/// (`sys:statistics(Name, get)`, `{ok, no_statistics}`).
///
/// ```
/// # use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime, sys};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let e = Echo::start_link(&cx, ()).await.unwrap();
///     let off = sys::get_statistics(e).await.unwrap();
///     sys::statistics(e, true).await.unwrap();
///     e.call(|f| (1, f)).await.unwrap();
///     e.call(|f| (2, f)).await.unwrap();
///     let on = sys::get_statistics(e).await.unwrap().unwrap();
///     (off, on.messages_in, on.messages_out)
/// });
/// assert_eq!(r.unwrap(), (None, 2, 2));
/// ```
pub async fn get_statistics<T: Target>(target: T) -> Result<Option<Statistics>, SysError> {
    request(target.server(), Kind::GetStatistics).await
}

/// Stops the server with `reason` and waits for it to exit, at most `timeout`
/// (`sys:terminate/3`, `gen_server:stop/3`): [`ServerRef::stop`], which a suspended
/// server answers too. `terminate` runs first.
///
/// ```
/// # use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime, sys};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let e = Echo::start_link(&cx, ()).await.unwrap();
///     sys::suspend(e).await.unwrap();
///     let stopped = sys::stop(e, ExitReason::Normal, None).await;
///     (stopped, sys::get_status(e).await.map(|_| ()))
/// });
/// assert_eq!(r.unwrap(), (Ok(()), Err(sys::SysError::Noproc)));
/// ```
pub fn stop<T: Target>(
    target: T,
    reason: ExitReason,
    timeout: Option<Duration>,
) -> impl Future<Output = Result<(), SysError>> + Send + use<T> {
    let server = target.server();
    async move {
        match server {
            Some(s) => Ok(s.stop(reason, timeout).await?),
            None => Err(SysError::Noproc),
        }
    }
}
