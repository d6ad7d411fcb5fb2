//! The supervisor's client side: [`SupervisorRef`] and its typed requests (OTP's
//! `supervisor:start_child/2`, `terminate_child/2`, `restart_child/2`, `delete_child/2`,
//! `which_children/1`, `count_children/1`), the answers they get, and the start
//! functions. The supervisor process that answers them is `supervisor.rs`.

use std::any::TypeId;
use std::sync::Arc;

use crate::exit::ExitReason;
use crate::pid::{Pid, ProcessId};
use crate::server::{self, CallError, ReplyTo, Server, ServerMsg, ServerRef};
use crate::supervisor::{ChildKind, ChildSpec, Supervisor, SupervisorSpec};

/// A running child, as [`SupervisorRef::which_children`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// The spec's id.
    pub id: Arc<str>,
    /// The child's process, `None` if it is not running (terminated, or restarting).
    pub pid: Option<ProcessId>,
    /// Worker or supervisor.
    pub kind: ChildKind,
    /// The running child as a supervisor, if it is one (started by
    /// [`ChildSpec::supervisor`]): to send it requests in turn.
    pub supervisor: Option<SupervisorRef>,
    /// The message type of the child's mailbox, when its spec knows it.
    pub(super) message: Option<TypeId>,
}

impl ChildInfo {
    /// The running child as a server of type `S`: `None` if it is not running, or if it
    /// was not started as an `S` ([`ChildSpec::server`], [`ChildSpec::named_server`]).
    ///
    /// See [`SupervisorRef::child`] for an example.
    pub fn server<S: Server>(&self) -> Option<ServerRef<S>> {
        let pid = self.pid?;
        (self.message == Some(TypeId::of::<ServerMsg<S>>()))
            .then(|| ServerRef::from(Pid::from_raw(pid.0)))
    }
}

/// The counts of [`SupervisorRef::count_children`] (OTP's `[{specs, _}, {active, _},
/// {supervisors, _}, {workers, _}]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildCounts {
    /// Child specs, running or not.
    pub specs: usize,
    /// Children running.
    pub active: usize,
    /// Specs of supervisors.
    pub supervisors: usize,
    /// Specs of workers.
    pub workers: usize,
}

/// Why a supervisor request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildError {
    /// No child with that id, or no simple_one_for_one child with that pid (OTP's
    /// `not_found`).
    NotFound,
    /// A child with that id exists already (`already_present`), or runs
    /// (`already_started`, with its pid).
    AlreadyPresent(Option<ProcessId>),
    /// The child is running; stop it first (`delete_child`, `restart_child`).
    Running,
    /// The child's restart failed and the supervisor is trying again; terminate it
    /// first (`delete_child`, `restart_child`; OTP's `restarting`).
    Restarting,
    /// A request by child id to a simple_one_for_one supervisor, whose children have
    /// no ids of their own (OTP's `simple_one_for_one`): use the pid.
    SimpleOneForOne,
    /// The start function failed with this reason.
    StartFailed(ExitReason),
    /// [`SupervisorRef::start_server_child`] was given a spec that does not start a
    /// server of the type asked for (see there); nothing was started.
    WrongType,
    /// The call to the supervisor failed.
    Call(CallError),
}

impl std::fmt::Display for ChildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildError::NotFound => f.write_str("no such child"),
            ChildError::AlreadyPresent(_) => f.write_str("a child with this id exists"),
            ChildError::Running => f.write_str("the child is running"),
            ChildError::Restarting => f.write_str("the child is being restarted"),
            ChildError::SimpleOneForOne => {
                f.write_str("simple_one_for_one children are found by pid, not id")
            }
            ChildError::StartFailed(r) => write!(f, "the child failed to start: {r}"),
            ChildError::WrongType => f.write_str("the spec does not start a server of this type"),
            ChildError::Call(e) => write!(f, "supervisor call failed: {e}"),
        }
    }
}

impl std::error::Error for ChildError {}

/// A request to a supervisor (sent by [`SupervisorRef`]'s methods), each with the
/// handle its typed answer goes through.
#[derive(Debug)]
pub enum Request {
    /// `start_child/2`: the child's pid.
    StartChild(ChildSpec, ReplyTo<Result<ProcessId, ChildError>>),
    /// `terminate_child/2` by id.
    TerminateChild(Arc<str>, ReplyTo<Result<(), ChildError>>),
    /// `terminate_child/2` by pid (simple_one_for_one children).
    TerminatePid(ProcessId, ReplyTo<Result<(), ChildError>>),
    /// `restart_child/2`: the child's new pid.
    RestartChild(Arc<str>, ReplyTo<Result<ProcessId, ChildError>>),
    /// `delete_child/2`.
    DeleteChild(Arc<str>, ReplyTo<Result<(), ChildError>>),
    /// `which_children/1`: the children, in start order.
    WhichChildren(ReplyTo<Vec<ChildInfo>>),
    /// One static child by id (`which_children/1`, filtered).
    Child(Arc<str>, ReplyTo<Result<ChildInfo, ChildError>>),
    /// `count_children/1`.
    CountChildren(ReplyTo<ChildCounts>),
}

/// A handle to a running supervisor.
///
/// ```
/// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let n = rt.block_on(|cx: Context<()>| async move {
///     let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne)).await.unwrap();
///     for _ in 0..3 {
///         sup.start_child(ChildSpec::process("worker", || |mut c: Context<()>| async move {
///             c.recv().await
///         })).await.unwrap();
///     }
///     sup.which_children().await.unwrap().len()
/// });
/// assert_eq!(n.unwrap(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupervisorRef {
    pub(super) server: ServerRef<Supervisor>,
}

impl From<SupervisorRef> for ProcessId {
    fn from(s: SupervisorRef) -> ProcessId {
        s.server.id()
    }
}

/// A supervisor found as a server (e.g. by `server::whereis` under its registered name).
impl From<ServerRef<Supervisor>> for SupervisorRef {
    fn from(server: ServerRef<Supervisor>) -> SupervisorRef {
        SupervisorRef { server }
    }
}

impl SupervisorRef {
    /// The supervisor's process id.
    ///
    /// See [`SupervisorRef`] for an example.
    pub fn id(&self) -> ProcessId {
        self.server.id()
    }

    /// The supervisor as a server.
    ///
    /// See [`SupervisorRef`] for an example.
    pub fn server(&self) -> ServerRef<Supervisor> {
        self.server
    }

    /// Stops the supervisor and waits for it to exit (OTP's `supervisor:stop/1`, that
    /// is `gen_server:stop(Sup, normal, infinity)`): it stops its children in reverse
    /// start order, each by its [`Shutdown`](crate::supervisor::Shutdown) (so subtrees
    /// stop theirs first), then exits with reason `Normal`. A `Normal` exit signal does
    /// not end a linked process that does not trap exits, so the process that started
    /// the tree with [`start_link`] goes on after this returns (one that traps exits
    /// finds an `Exit` with reason `Normal` in its mailbox). Returns `Err(Noproc)` if the
    /// supervisor was not running, `Err(Exit(reason))` if it exited with another reason
    /// meanwhile.
    ///
    /// To stop it with another reason, stop it as a server
    /// (`sup.server().stop(reason, timeout)`, OTP's `supervisor:stop/3`): as in OTP, the
    /// exit signal of a reason other than `Normal` ends a linked caller that does not trap
    /// exits, so unlink first ([`Context::unlink`](crate::Context::unlink)) or trap exits.
    ///
    /// ```
    /// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, ExitReason, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let spec = SupervisorSpec::new(Strategy::OneForOne)
    ///         .child(ChildSpec::process("a", || |mut c: Context<()>| async move { c.recv().await }));
    ///     let top = supervisor::start_link(&cx, spec).await.unwrap();
    ///     let child = top.which_children().await.unwrap()[0].pid.unwrap();
    ///     top.stop().await.unwrap();
    ///     child.is_alive() // the caller is still here to look
    /// });
    /// assert_eq!(r, Ok(false));
    /// ```
    pub async fn stop(self) -> Result<(), CallError> {
        self.server.stop(ExitReason::Normal, None).await
    }

    /// A call with no timeout (a supervisor's requests take as long as its children's
    /// starts and shutdowns); a failed call is [`ChildError::Call`].
    async fn request<R: Send + 'static>(
        self,
        request: impl FnOnce(ReplyTo<R>) -> Request,
    ) -> Result<R, ChildError> {
        self.server
            .call_timeout(request, None)
            .await
            .map_err(ChildError::Call)
    }

    /// Adds and starts a child (`supervisor:start_child/2`); its pid.
    ///
    /// See [`SupervisorRef`] for an example.
    pub async fn start_child(self, spec: ChildSpec) -> Result<ProcessId, ChildError> {
        self.request(|r| Request::StartChild(spec, r)).await?
    }

    /// Adds and starts a server child, and gives it back typed: Elixir's
    /// `DynamicSupervisor.start_child/2` with the pid as a [`ServerRef<S>`]. `spec` must
    /// start an `S` ([`ChildSpec::server`] or [`ChildSpec::named_server`] of type `S`),
    /// else `Err(WrongType)` and nothing is started; otherwise as
    /// [`SupervisorRef::start_child`] (on a simple_one_for_one supervisor, or a static
    /// one). The handle is that instance's: after a restart the child runs under a new
    /// pid, found with [`SupervisorRef::child`] (static children) or a
    /// [`named_server`](ChildSpec::named_server)'s name.
    ///
    /// ```
    /// # use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
    /// # use otter::ExitReason;
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne)).await.unwrap();
    ///     let echo: ServerRef<Echo> = sup.start_server_child(ChildSpec::server::<Echo>("echo", || ())).await.unwrap();
    ///     echo.call(|f| (5, f)).await
    /// });
    /// assert_eq!(r.unwrap(), Ok(5));
    /// ```
    pub async fn start_server_child<S: Server>(
        self,
        spec: ChildSpec,
    ) -> Result<ServerRef<S>, ChildError> {
        if spec.message != Some(TypeId::of::<ServerMsg<S>>()) {
            return Err(ChildError::WrongType);
        }
        let pid = self.start_child(spec).await?;
        // Started by the spec's own start function, which started an `S`.
        Ok(ServerRef::from(Pid::from_raw(pid.0)))
    }

    /// Stops a child by id and keeps its spec (`terminate_child/2`); a temporary
    /// child's spec goes too. A child whose restart keeps failing stays stopped (the
    /// supervisor's retry leaves it alone) until [`SupervisorRef::restart_child`].
    /// `Err(SimpleOneForOne)` on a simple_one_for_one supervisor: use
    /// [`SupervisorRef::terminate_pid`].
    ///
    /// See [`start_link`] for an example.
    pub async fn terminate_child(self, id: &str) -> Result<(), ChildError> {
        let id: Arc<str> = id.into();
        self.request(|r| Request::TerminateChild(id, r)).await?
    }

    /// Stops a simple_one_for_one child by pid, and forgets it (`terminate_child/2`
    /// with a pid). As OTP: `Ok` if `pid` has already exited (nothing left to stop),
    /// also when its restart is failing (it is then found by the pid it had);
    /// `Err(NotFound)` if `pid` is alive but not a child, and on a supervisor of any
    /// other strategy (stop its children by id).
    ///
    /// See [`SupervisorRef`] for an example of dynamic children.
    pub async fn terminate_pid(self, pid: ProcessId) -> Result<(), ChildError> {
        self.request(|r| Request::TerminatePid(pid, r)).await?
    }

    /// Starts a stopped child again (`restart_child/2`). `Err(Running)` if it runs,
    /// `Err(Restarting)` while the supervisor retries a failed restart,
    /// `Err(SimpleOneForOne)` on a simple_one_for_one supervisor.
    ///
    /// See [`start_link`] for an example.
    pub async fn restart_child(self, id: &str) -> Result<ProcessId, ChildError> {
        let id: Arc<str> = id.into();
        self.request(|r| Request::RestartChild(id, r)).await?
    }

    /// Removes a stopped child's spec (`delete_child/2`). Errors as
    /// [`SupervisorRef::restart_child`].
    ///
    /// See [`start_link`] for an example.
    pub async fn delete_child(self, id: &str) -> Result<(), ChildError> {
        let id: Arc<str> = id.into();
        self.request(|r| Request::DeleteChild(id, r)).await?
    }

    /// The children, in start order (`which_children/1`).
    ///
    /// See [`SupervisorRef`] for an example.
    pub async fn which_children(self) -> Result<Vec<ChildInfo>, ChildError> {
        self.request(Request::WhichChildren).await
    }

    /// The static child `id`, typed as the server it runs: `Ok(None)` if it is not
    /// running, or is not a server of type `S`; `Err(NotFound)` if there is no such
    /// child, `Err(SimpleOneForOne)` on a simple_one_for_one supervisor. The answer
    /// comes after the exit signals that reached the supervisor before this request, so
    /// after a child's crash it gives the restarted child, with no polling.
    ///
    /// ```
    /// # use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
    /// # use otter::ExitReason;
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let spec = SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::server::<Echo>("echo", || ()));
    ///     let sup = supervisor::start_link(&cx, spec).await.unwrap();
    ///     let echo: ServerRef<Echo> = sup.child("echo").await.unwrap().unwrap();
    ///     echo.call(|f| (5, f)).await
    /// });
    /// assert_eq!(r.unwrap(), Ok(5));
    /// ```
    pub async fn child<S: Server>(self, id: &str) -> Result<Option<ServerRef<S>>, ChildError> {
        let id: Arc<str> = id.into();
        let info = self.request(|r| Request::Child(id, r)).await??;
        Ok(info.server())
    }

    /// How many children there are, by kind and state (`count_children/1`).
    ///
    /// ```
    /// use otter::supervisor::{self, ChildCounts, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let spec = SupervisorSpec::new(Strategy::OneForOne)
    ///         .child(ChildSpec::process("w", || |mut c: Context<()>| async move { c.recv().await }))
    ///         .child(ChildSpec::supervisor("s", || SupervisorSpec::new(Strategy::OneForOne)));
    ///     let sup = supervisor::start_link(&cx, spec).await.unwrap();
    ///     sup.terminate_child("w").await.unwrap();
    ///     sup.count_children().await.unwrap()
    /// });
    /// assert_eq!(r.unwrap(), ChildCounts { specs: 2, active: 1, supervisors: 1, workers: 1 });
    /// ```
    pub async fn count_children(self) -> Result<ChildCounts, ChildError> {
        // Counted in the supervisor: no list of every child built for it.
        self.request(Request::CountChildren).await
    }
}

/// Starts a supervisor linked to the caller (`supervisor:start_link/2`); resolves once
/// every child has started, or with the reason the start failed.
///
/// ```
/// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let spec = SupervisorSpec::new(Strategy::OneForOne)
///         .child(ChildSpec::process("a", || |mut c: Context<()>| async move { c.recv().await }));
///     let sup = supervisor::start_link(&cx, spec).await.unwrap();
///     sup.terminate_child("a").await.unwrap();
///     let stopped = sup.which_children().await.unwrap()[0].pid.is_none();
///     sup.restart_child("a").await.unwrap();
///     let running = sup.which_children().await.unwrap()[0].pid.is_some();
///     let busy = sup.delete_child("a").await;
///     (stopped, running, busy)
/// });
/// assert_eq!(r.unwrap(), (true, true, Err(supervisor::ChildError::Running)));
/// ```
pub fn start_link<M: Send + 'static>(
    cx: &crate::Context<M>,
    spec: SupervisorSpec,
) -> impl std::future::Future<Output = Result<SupervisorRef, ExitReason>> + Send + use<M> {
    let started = server::start_link::<Supervisor, M>(cx, spec);
    async move { started.await.map(|server| SupervisorRef { server }) }
}

/// As [`start_link`], registered as `name`.
///
/// ```
/// use otter::supervisor::{self, Strategy, SupervisorSpec};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let sup = supervisor::start_link_named(&cx, "top", SupervisorSpec::new(Strategy::OneForAll)).await.unwrap();
///     cx.whereis::<otter::server::ServerMsg<supervisor::Supervisor>>("top") == Some(sup.server().pid())
/// });
/// assert!(r.unwrap());
/// ```
pub fn start_link_named<M: Send + 'static, N: Into<Arc<str>>>(
    cx: &crate::Context<M>,
    name: N,
    spec: SupervisorSpec,
) -> impl std::future::Future<Output = Result<SupervisorRef, ExitReason>> + Send + use<M, N> {
    let started = server::start_link_named::<Supervisor, M, _>(cx, name.into().to_string(), spec);
    async move { started.await.map(|server| SupervisorRef { server }) }
}

/// The supervisor registered as `name` on the caller's runtime, if any (`whereis/1`,
/// typed as a supervisor).
///
/// ```
/// use otter::supervisor::{self, Strategy, SupervisorSpec};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let sup = supervisor::start_link_named(&cx, "top", SupervisorSpec::new(Strategy::OneForAll)).await.unwrap();
///     (supervisor::whereis(&cx, "top") == Some(sup), supervisor::whereis(&cx, "other"))
/// });
/// assert_eq!(r.unwrap(), (true, None));
/// ```
pub fn whereis<M: Send + 'static>(cx: &crate::Context<M>, name: &str) -> Option<SupervisorRef> {
    server::whereis::<Supervisor, M>(cx, name).map(SupervisorRef::from)
}
