//! Child specifications (OTP's `child_spec()`): how to start a child, when to restart
//! it, how to stop it.

use std::any::TypeId;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::exit::ExitReason;
use crate::pid::ProcessId;
use crate::server::{self, Server, ServerMsg};
use crate::supervisor::{SupervisorContext, SupervisorSpec};

/// When a child that exited is restarted (OTP's `restart` key).
///
/// ```
/// use otter::ExitReason;
/// use otter::supervisor::Restart;
/// assert!(Restart::Transient.restarts_after(&ExitReason::Panic("x".into())));
/// assert!(!Restart::Transient.restarts_after(&ExitReason::Shutdown));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always (the default).
    Permanent,
    /// Only after an abnormal exit: not after `Normal`, `Shutdown` or `ShutdownWith`.
    Transient,
    /// Never; the child is forgotten when it exits.
    Temporary,
}

impl Restart {
    /// Whether a child with this restart type is restarted after exiting with `reason`.
    ///
    /// See [`Restart`] for an example.
    pub fn restarts_after(self, reason: &ExitReason) -> bool {
        match self {
            Restart::Permanent => true,
            Restart::Transient => !reason.is_shutdown(),
            Restart::Temporary => false,
        }
    }
}

/// How a child is stopped (OTP's `shutdown` key; a spec that sets none has its
/// [`ChildKind`]'s default). The supervisor monitors the child, then...
///
/// ```
/// use otter::supervisor::Shutdown;
/// assert_eq!(Shutdown::default(), Shutdown::Timeout(std::time::Duration::from_secs(5)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shutdown {
    /// ... kills it (`exit(child, kill)`).
    BrutalKill,
    /// ... sends `exit(child, shutdown)`, and kills it if it has not exited after this
    /// long. OTP's default for workers: 5 s.
    Timeout(Duration),
    /// ... sends `exit(child, shutdown)` and waits as long as it takes (the default for
    /// supervisors, whose own children take time to stop).
    Infinity,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown::Timeout(Duration::from_secs(5))
    }
}

/// Whether a child is a worker or a supervisor (OTP's `type` key). It is what
/// [`ChildInfo::kind`](crate::supervisor::ChildInfo::kind) and
/// [`count_children`](crate::supervisor::SupervisorRef::count_children) report, and it
/// chooses the child's default [`Shutdown`] (used unless [`ChildSpec::shutdown`] sets
/// one): a 5 s timeout for a worker, `Infinity` for a supervisor, as OTP's defaults.
/// It changes nothing else: a child is reachable as a
/// [`SupervisorRef`](crate::supervisor::SupervisorRef) only when its spec started a
/// supervisor itself ([`ChildSpec::supervisor`], [`ChildSpec::named_supervisor`]).
///
/// ```
/// use otter::supervisor::{ChildKind, Shutdown};
/// assert_ne!(ChildKind::Worker, ChildKind::Supervisor);
/// assert_eq!(ChildKind::Supervisor.default_shutdown(), Shutdown::Infinity);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildKind {
    /// Any process that is not a supervisor.
    Worker,
    /// A supervisor: its default shutdown is `Infinity`.
    Supervisor,
}

impl ChildKind {
    /// The shutdown of a child of this kind whose spec sets none (OTP's defaults:
    /// `5000` for a worker, `infinity` for a supervisor).
    ///
    /// See [`ChildKind`] for an example.
    pub fn default_shutdown(self) -> Shutdown {
        match self {
            ChildKind::Worker => Shutdown::default(),
            ChildKind::Supervisor => Shutdown::Infinity,
        }
    }
}

/// The future a start function returns: the child's id once it runs, linked to the
/// supervisor.
pub type StartFuture = Pin<Box<dyn Future<Output = Result<ProcessId, ExitReason>> + Send>>;

type StartFn = Arc<dyn Fn(&SupervisorContext) -> StartFuture + Send + Sync>;

/// How to start, restart and stop one child.
///
/// The start function runs in the supervisor's process, and must start the child
/// **linked** to it (`spawn_link`, `server::start_link`): the link is how the supervisor
/// learns of the child's exit. [`ChildSpec::server`], [`ChildSpec::process`] and
/// [`ChildSpec::supervisor`] do that for you.
///
/// ```
/// use otter::supervisor::{ChildSpec, Restart, Shutdown};
/// use otter::Context;
/// let spec = ChildSpec::process("waiter", || |mut cx: Context<()>| async move {
///     cx.recv().await
/// })
/// .restart(Restart::Transient)
/// .shutdown(Shutdown::BrutalKill);
/// assert_eq!(spec.id(), "waiter");
/// ```
#[derive(Clone)]
pub struct ChildSpec {
    pub(crate) id: Arc<str>,
    pub(crate) start: StartFn,
    pub(crate) restart: Restart,
    /// Set by [`ChildSpec::shutdown`]; `None`: the kind's default.
    shutdown: Option<Shutdown>,
    pub(crate) kind: ChildKind,
    /// The message type of the child's mailbox, set by the constructors that start it
    /// themselves ([`ChildSpec::server`], [`ChildSpec::supervisor`], ...), so that
    /// `which_children` may type the child's pid as a `ServerRef` or `SupervisorRef` (a
    /// mailbox of another type must never be sent them). Not `kind`, which only
    /// describes the child, as OTP's `type` key.
    pub(crate) message: Option<TypeId>,
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown_of())
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A worker started by `start`, which must link the child to the supervisor (the
    /// context it gets is the supervisor's). Permanent, 5 s shutdown.
    ///
    /// ```
    /// use otter::supervisor::ChildSpec;
    /// use otter::Context;
    /// let spec = ChildSpec::new("raw", |sup| {
    ///     let pid = sup.spawn_link(|mut cx: Context<u8>| async move { cx.recv().await; });
    ///     async move { Ok(pid.id()) }
    /// });
    /// assert_eq!(spec.id(), "raw");
    /// ```
    pub fn new<F, Fut>(id: impl Into<Arc<str>>, start: F) -> ChildSpec
    where
        F: Fn(&SupervisorContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ProcessId, ExitReason>> + Send + 'static,
    {
        ChildSpec {
            id: id.into(),
            start: Arc::new(move |cx| Box::pin(start(cx))),
            restart: Restart::Permanent,
            shutdown: None,
            kind: ChildKind::Worker,
            message: None,
        }
    }

    /// A process child: `make()` builds the process function for each (re)start, spawned
    /// linked to the supervisor. The start does not wait for the process to run (there is
    /// no `init` to wait for): a child that must trap exits before it can be stopped,
    /// to clean up, should be a [`Server`], whose `init` the supervisor awaits.
    ///
    /// See [`ChildSpec`] for an example.
    pub fn process<N, F, Fut>(
        id: impl Into<Arc<str>>,
        make: impl Fn() -> F + Send + Sync + 'static,
    ) -> ChildSpec
    where
        N: Send + 'static,
        F: FnOnce(crate::Context<N>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: crate::IntoExitReason,
    {
        let mut c = ChildSpec::new(id, move |sup| {
            let pid = sup.spawn_link(make()).id();
            async move { Ok(pid) }
        });
        c.message = Some(TypeId::of::<N>());
        c
    }

    /// A [`Server`] child, started with `server::start_link` and `args()` (see
    /// [`ChildSpec::named_server`] for a registered one).
    ///
    /// ```
    /// # use otter::server::{Flow, ReplyTo, Server, ServerContext};
    /// # use otter::ExitReason;
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// use otter::supervisor::ChildSpec;
    /// let spec = ChildSpec::server::<Echo>("echo", || ());
    /// assert_eq!(spec.id(), "echo");
    /// ```
    pub fn server<S: Server>(
        id: impl Into<Arc<str>>,
        args: impl Fn() -> S::Args + Send + Sync + 'static,
    ) -> ChildSpec {
        let mut c = ChildSpec::new(id, move |sup| {
            let started = S::start_link(sup, args());
            async move { started.await.map(|s| s.id()) }
        });
        c.message = Some(TypeId::of::<ServerMsg<S>>());
        c
    }

    /// A [`Server`] child registered under `name` (re-registered at each restart, so
    /// clients calling it by name, [`server::Name::call`], reach the new instance).
    ///
    /// ```
    /// # use otter::server::{Flow, ReplyTo, Server, ServerContext};
    /// # use otter::ExitReason;
    /// # struct Echo;
    /// # impl Server for Echo {
    /// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
    /// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
    /// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
    /// # }
    /// use otter::supervisor::ChildSpec;
    /// let spec = ChildSpec::named_server::<Echo>("echo", "echo_server", || ());
    /// assert_eq!(spec.id(), "echo");
    /// ```
    pub fn named_server<S: Server>(
        id: impl Into<Arc<str>>,
        name: impl Into<server::Name<S>>,
        args: impl Fn() -> S::Args + Send + Sync + 'static,
    ) -> ChildSpec {
        let name: server::Name<S> = name.into();
        let mut c = ChildSpec::new(id, move |sup| {
            let started = S::start_link_named(sup, name.clone(), args());
            async move { started.await.map(|s| s.id()) }
        });
        c.message = Some(TypeId::of::<ServerMsg<S>>());
        c
    }

    /// A supervisor child (a subtree): `spec()` builds its specification at each start.
    /// Shutdown `Infinity`, as OTP's default for supervisors. While it runs, its parent's
    /// [`which_children`](crate::supervisor::SupervisorRef::which_children) gives it as
    /// a [`SupervisorRef`](crate::supervisor::SupervisorRef) too.
    ///
    /// ```
    /// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let n = rt.block_on(|cx: Context<()>| async move {
    ///     let sub = ChildSpec::supervisor("sub", || SupervisorSpec::new(Strategy::OneForOne));
    ///     let top = SupervisorSpec::new(Strategy::OneForOne).child(sub);
    ///     let top = supervisor::start_link(&cx, top).await.unwrap();
    ///     let sub = top.which_children().await.unwrap()[0].supervisor.unwrap();
    ///     sub.which_children().await.unwrap().len()
    /// });
    /// assert_eq!(n.unwrap(), 0);
    /// ```
    pub fn supervisor(
        id: impl Into<Arc<str>>,
        spec: impl Fn() -> SupervisorSpec + Send + Sync + 'static,
    ) -> ChildSpec {
        ChildSpec::new(id, move |sup| {
            let started = crate::supervisor::start_link(sup, spec());
            async move { started.await.map(|s| s.id()) }
        })
        .starts_supervisor()
    }

    /// A supervisor child registered under `name` (`supervisor:start_link({local, Name},
    /// ...)` as a child's start function): registered again at each restart, so
    /// [`supervisor::whereis`](crate::supervisor::whereis) finds the new instance. As
    /// [`ChildSpec::supervisor`] otherwise. A name that another process holds fails the
    /// start ([`AlreadyStarted`](crate::server::AlreadyStarted), see
    /// [`Server::start_link_named`]).
    ///
    /// ```
    /// use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let sub = ChildSpec::named_supervisor("sub", "conns", || SupervisorSpec::new(Strategy::SimpleOneForOne));
    ///     let top = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(sub)).await.unwrap();
    ///     top.which_children().await.unwrap()[0].supervisor == supervisor::whereis(&cx, "conns")
    /// });
    /// assert!(r.unwrap());
    /// ```
    pub fn named_supervisor(
        id: impl Into<Arc<str>>,
        name: impl Into<Arc<str>>,
        spec: impl Fn() -> SupervisorSpec + Send + Sync + 'static,
    ) -> ChildSpec {
        let name: Arc<str> = name.into();
        ChildSpec::new(id, move |sup| {
            let started = crate::supervisor::start_link_named(sup, name.clone(), spec());
            async move { started.await.map(|s| s.id()) }
        })
        .starts_supervisor()
    }

    /// Marks a spec whose start function starts a supervisor (and nothing else): its
    /// kind, and the type tag that lets `which_children` give it as a `SupervisorRef`.
    pub(crate) fn starts_supervisor(mut self) -> ChildSpec {
        self.kind = ChildKind::Supervisor;
        self.message = Some(TypeId::of::<ServerMsg<crate::supervisor::Supervisor>>());
        self
    }

    /// Sets the restart type.
    ///
    /// See [`ChildSpec`] for an example.
    pub fn restart(mut self, restart: Restart) -> ChildSpec {
        self.restart = restart;
        self
    }

    /// Sets the shutdown (by default, the kind's: [`ChildKind::default_shutdown`]).
    ///
    /// See [`ChildSpec`] for an example.
    pub fn shutdown(mut self, shutdown: Shutdown) -> ChildSpec {
        self.shutdown = Some(shutdown);
        self
    }

    /// Sets the child's kind (OTP's `type`): for a child that is a supervisor started
    /// by a start function of its own ([`ChildSpec::new`]), or a worker that supervises
    /// nothing. A shutdown not set with [`ChildSpec::shutdown`] becomes the kind's
    /// default, whichever is called first.
    ///
    /// ```
    /// use otter::supervisor::{self, ChildCounts, ChildKind, ChildSpec, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     // A subtree started by hand: the parent counts it as a supervisor.
    ///     let sub = ChildSpec::new("sub", |sup| {
    ///         let started = supervisor::start_link(sup, SupervisorSpec::new(Strategy::OneForOne));
    ///         async move { started.await.map(|s| s.id()) }
    ///     })
    ///     .kind(ChildKind::Supervisor);
    ///     let top = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(sub)).await.unwrap();
    ///     top.count_children().await.unwrap()
    /// });
    /// assert_eq!(r.unwrap(), ChildCounts { specs: 1, active: 1, supervisors: 1, workers: 0 });
    /// ```
    pub fn kind(mut self, kind: ChildKind) -> ChildSpec {
        self.kind = kind;
        self
    }

    /// How the child is stopped: as set by [`ChildSpec::shutdown`], else its kind's
    /// default.
    pub(crate) fn shutdown_of(&self) -> Shutdown {
        self.shutdown.unwrap_or(self.kind.default_shutdown())
    }

    /// The child's id, unique among its supervisor's static children.
    ///
    /// See [`ChildSpec`] for an example.
    pub fn id(&self) -> &str {
        &self.id
    }
}
