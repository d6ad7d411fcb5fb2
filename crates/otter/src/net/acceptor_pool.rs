//! An acceptor pool (ranch's design): one listening socket, N acceptor processes under a
//! supervisor, one process per connection, started with one call.
//!
//! # Rules
//!
//! * The listener is opened by the caller and shared by the acceptors; each acceptor
//!   loops on `accept` and spawns the connection's process, which owns the stream.
//! * A connection's process is linked to the acceptor that accepted it, which traps
//!   exits: a connection that crashes closes its own socket (its values are dropped)
//!   and nothing else. When the pool stops, its acceptors stop, and their links end
//!   every connection they accepted (at once, unless the pool drains: "Graceful stop").
//! * An acceptor that fails is restarted by the supervisor (one_for_one, up to 10
//!   restarts in 10 s) on the same listener.
//! * A pool under an application's supervisor ([`AcceptorPool::child_spec`], ranch's
//!   `child_spec/5`) is a supervisor child that opens its listener at each start: a
//!   restarted pool listens again, on the address its first start bound (the port
//!   chosen for port 0 is kept, so clients find it where it was). A restart that finds
//!   the previous listener still open (its acceptors, killed with their supervisor, not
//!   all gone yet) takes it over rather than fail to bind the address it holds.
//! * Running out of descriptors (`EMFILE`, `ENFILE`) does not stop an acceptor: it waits
//!   100 ms, as ranch does, and accepts again once connections have closed.
//!
//! # Graceful stop
//!
//! [`AcceptorPool::graceful_stop`] (and, for a pool under an application's supervisor,
//! the stop of a pool made with [`AcceptorPool::child_spec_with_drain`], as in an
//! ordered stop of the tree: [`crate::os_signal::stop_on_signal`]) ends a pool as
//! axum's `with_graceful_shutdown` and ranch's `suspend_listener` plus a wait do:
//!
//! 1. The listener is closed at once: a new connection is refused (`ECONNREFUSED`),
//!    and one the kernel had queued but no acceptor had accepted is reset.
//! 2. The connections already accepted run on until the deadline (the first stop's
//!    time plus the drain); those that end by then end as they would have.
//! 3. At the deadline each connection still running gets the exit signal `Shutdown`
//!    from its acceptor, which waits for its exit: a process that does not trap exits
//!    ends there (its socket closed with its values); one that traps exits gets an
//!    [`Exit`] message and must end, or the stop waits for it.
//! 4. The acceptors exit with their supervisor's reason and the pool's supervisor exits
//!    (`Normal` for `graceful_stop`, so the process that started the pool goes on).
//!
//! The acceptors' shutdown is `Infinity` (the drain bounds it, see 3). A pool stopped
//! without a drain (no `graceful_stop`, no `child_spec_with_drain`) ends its connections
//! with its acceptors at once, through their links, as before.

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::monitor::{self, Notify, Watcher};
use crate::net::{TcpListener, TcpStream, tcp_listener};
use crate::process::bonds;
use crate::server::CallError;
use crate::supervisor::{self, ChildSpec, Shutdown, Strategy, SupervisorRef, SupervisorSpec};
use crate::{Context, Exit, ExitReason, IntoExitReason, ProcessId};

/// A running acceptor pool ([`start_acceptor_pool`]).
#[derive(Debug, Clone)]
pub struct AcceptorPool {
    supervisor: SupervisorRef,
    local_addr: SocketAddr,
    listening: Arc<Listening>,
}

/// The listening socket a pool's acceptors share, and its drain (module docs,
/// "Graceful stop").
#[derive(Debug)]
struct Listening {
    /// `None` once closed by a graceful stop: the acceptors then accept nothing more.
    socket: RwLock<Option<TcpListener>>,
    /// How long the connections may run on once the pool stops, if it drains at every
    /// stop ([`AcceptorPool::child_spec_with_drain`]).
    drain: Option<Duration>,
    /// When the drain ends: set by the first stop that drains, the same for every
    /// acceptor (they are stopped one after another).
    deadline: OnceLock<Instant>,
}

impl Listening {
    fn new(socket: TcpListener, drain: Option<Duration>) -> Listening {
        Listening {
            socket: RwLock::new(Some(socket)),
            drain,
            deadline: OnceLock::new(),
        }
    }

    fn is_open(&self) -> bool {
        self.socket
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Closes the socket (new connections are refused from now on).
    fn close(&self) {
        let socket = self
            .socket
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(socket);
    }

    /// The drain's deadline if this stop drains: set by a graceful stop, or now for a
    /// pool that drains at every stop.
    fn deadline(&self) -> Option<Instant> {
        match (self.deadline.get(), self.drain) {
            (Some(&t), _) => Some(t),
            (None, Some(d)) => Some(*self.deadline.get_or_init(|| Instant::now() + d)),
            (None, None) => None,
        }
    }
}

impl AcceptorPool {
    /// The address it listens on (the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The supervisor of the acceptors: to stop the pool, or to look at it.
    pub fn supervisor(&self) -> &SupervisorRef {
        &self.supervisor
    }

    /// Stops the pool gracefully (module docs, "Graceful stop"): closes the listener
    /// now, before the future is polled, lets the connections run until `drain` has
    /// passed, shuts down the ones still running, and resolves once the pool's
    /// supervisor has exited, `Normal`: the process that started the pool goes on.
    /// The errors are [`SupervisorRef::stop`]'s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use otter::net::{start_acceptor_pool, TcpStream};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let pool = start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 2, |_: Context<()>, mut s: TcpStream| async move {
    ///         let mut buf = [0u8; 4];
    ///         while s.read_exact(&mut buf).await.is_ok() {
    ///             if s.write_all(b"pong").await.is_err() { break; }
    ///         }
    ///     })
    ///     .await
    ///     .unwrap();
    ///     let addr = pool.local_addr();
    ///     let mut c = TcpStream::connect(addr).await.unwrap();
    ///     let mut back = [0u8; 4];
    ///     c.write_all(b"ping").await.unwrap();
    ///     c.read_exact(&mut back).await.unwrap(); // accepted: it has answered
    ///     let stopping = pool.graceful_stop(Duration::from_secs(5));
    ///     // Refused from now on; the connection already accepted goes on.
    ///     assert!(TcpStream::connect(addr).await.is_err());
    ///     c.write_all(b"ping").await.unwrap();
    ///     c.read_exact(&mut back).await.unwrap();
    ///     drop(c); // its process ends, and the stop with it
    ///     stopping.await.unwrap();
    ///     back
    /// });
    /// assert_eq!(&r.unwrap(), b"pong");
    /// ```
    pub fn graceful_stop(
        self,
        drain: Duration,
    ) -> impl Future<Output = Result<(), CallError>> + Send {
        let _ = self.listening.deadline.set(Instant::now() + drain);
        self.listening.close();
        self.supervisor.stop()
    }

    /// A child spec that runs the pool under a supervisor of the caller's (ranch's
    /// `child_spec/5`), and the handle that tells where it listens. Each start, in the
    /// parent supervisor's process, listens on `addr` (on the address the first start
    /// bound, after that) and starts the pool's supervisor of `acceptors` acceptors, as
    /// [`start_acceptor_pool`] does; the child is of kind supervisor (shutdown
    /// `Infinity`), so the parent's `which_children` gives it as a [`SupervisorRef`]. A
    /// listener that cannot be opened fails the start with the `io::Error` as reason
    /// ([`ExitReason::Error`]). The spec and its clones are for one pool: started again
    /// while a pool of theirs still holds the listener (under simple_one_for_one, say),
    /// they share that listener.
    ///
    /// ```
    /// use otter::net::{AcceptorPool, TcpStream};
    /// use otter::supervisor::{self, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let (pool, listening) = AcceptorPool::child_spec("echo", "127.0.0.1:0".parse().unwrap(), 4, |_: Context<()>, mut s: TcpStream| async move {
    ///         let mut buf = [0u8; 16];
    ///         while let Ok(n @ 1..) = s.read(&mut buf).await {
    ///             if s.write_all(&buf[..n]).await.is_err() { break; }
    ///         }
    ///     });
    ///     let app = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(pool)).await.unwrap();
    ///     let mut c = TcpStream::connect(listening.get().unwrap()).await.unwrap();
    ///     c.write_all(b"hi").await.unwrap();
    ///     let mut back = [0u8; 2];
    ///     c.read_exact(&mut back).await.unwrap();
    ///     app.stop().await.unwrap();
    ///     back
    /// });
    /// assert_eq!(&r.unwrap(), b"hi");
    /// ```
    pub fn child_spec<N, H, Fut>(
        id: impl Into<Arc<str>>,
        addr: SocketAddr,
        acceptors: usize,
        handler: H,
    ) -> (ChildSpec, ListenAddr)
    where
        N: Send + 'static,
        H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        supervised(id, addr, acceptors, None, handler)
    }

    /// As [`AcceptorPool::child_spec`], for a pool that drains whenever it stops (its
    /// parent stops it, at a restart of its siblings or in an ordered stop of the
    /// tree): the listener closes at once and the connections run on for `drain`
    /// before they are shut down (module docs, "Graceful stop"). Give the pool's child
    /// spec a shutdown longer than `drain` if it is not `Infinity` (the default of a
    /// supervisor child).
    ///
    /// ```
    /// use std::time::Duration;
    /// use otter::net::{AcceptorPool, TcpStream};
    /// use otter::supervisor::{self, Strategy, SupervisorSpec};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let (pool, listening) = AcceptorPool::child_spec_with_drain("web", "127.0.0.1:0".parse().unwrap(), 2, Duration::from_secs(5), |_: Context<()>, mut s: TcpStream| async move {
    ///         let mut buf = [0u8; 4];
    ///         if s.write_all(b"hi").await.is_ok() && s.read_exact(&mut buf).await.is_ok() {
    ///             let _ = s.write_all(b"pong").await;
    ///         }
    ///     });
    ///     let app = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(pool)).await.unwrap();
    ///     let mut c = TcpStream::connect(listening.get().unwrap()).await.unwrap();
    ///     let mut hi = [0u8; 2];
    ///     c.read_exact(&mut hi).await.unwrap(); // accepted: it has spoken
    ///     c.write_all(b"ping").await.unwrap();
    ///     // The stop lets the connection finish (for up to 5 s) before it returns.
    ///     app.stop().await.unwrap();
    ///     let mut back = [0u8; 4];
    ///     c.read_exact(&mut back).await.unwrap();
    ///     back
    /// });
    /// assert_eq!(&r.unwrap(), b"pong");
    /// ```
    pub fn child_spec_with_drain<N, H, Fut>(
        id: impl Into<Arc<str>>,
        addr: SocketAddr,
        acceptors: usize,
        drain: Duration,
        handler: H,
    ) -> (ChildSpec, ListenAddr)
    where
        N: Send + 'static,
        H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        supervised(id, addr, acceptors, Some(drain), handler)
    }
}

/// The child spec of [`AcceptorPool::child_spec`] and
/// [`AcceptorPool::child_spec_with_drain`].
fn supervised<N, H, Fut>(
    id: impl Into<Arc<str>>,
    addr: SocketAddr,
    acceptors: usize,
    drain: Option<Duration>,
    handler: H,
) -> (ChildSpec, ListenAddr)
where
    N: Send + 'static,
    H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    let listening = ListenAddr::default();
    let bound = listening.clone();
    let handler = Arc::new(handler);
    let last: Mutex<Weak<Listening>> = Mutex::new(Weak::new());
    let spec = ChildSpec::new(id, move |sup| {
        let started = open(&bound, &last, addr, drain).map(|listener| {
            supervisor::start_link(sup, pool_spec(listener, handler.clone(), acceptors))
        });
        async move {
            let pool = started.map_err(ExitReason::error)?.await?;
            Ok(pool.id())
        }
    })
    .starts_supervisor();
    (spec, listening)
}

/// Where a pool started by [`AcceptorPool::child_spec`] listens: `None` until its
/// first start has bound its address, then that address, which every restart binds
/// again.
#[derive(Clone, Debug, Default)]
pub struct ListenAddr(Arc<OnceLock<SocketAddr>>);

impl ListenAddr {
    /// The address the pool listens on (the port chosen for port 0), once it has
    /// started.
    ///
    /// See [`AcceptorPool::child_spec`] for an example.
    pub fn get(&self) -> Option<SocketAddr> {
        self.0.get().copied()
    }
}

/// The listener for a (re)start of a supervised pool: the previous one if its
/// acceptors still hold it open, else a new one on the address the first start bound.
fn open(
    bound: &ListenAddr,
    last: &Mutex<Weak<Listening>>,
    addr: SocketAddr,
    drain: Option<Duration>,
) -> io::Result<Arc<Listening>> {
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(listening) = last.upgrade().filter(|l| l.is_open()) {
        return Ok(listening);
    }
    let socket = TcpListener::bind(bound.get().unwrap_or(addr))?;
    let _ = bound.0.set(socket.local_addr()?);
    let listening = Arc::new(Listening::new(socket, drain));
    *last = Arc::downgrade(&listening);
    Ok(listening)
}

/// The pool's supervisor: `acceptors` acceptors (at least one) on `listener`,
/// restarted one for one, up to 10 times in 10 s; their shutdown is `Infinity`, since
/// a draining acceptor bounds its own stop (module docs, "Graceful stop").
fn pool_spec<N, H, Fut>(
    listener: Arc<Listening>,
    handler: Arc<H>,
    acceptors: usize,
) -> SupervisorSpec
where
    N: Send + 'static,
    H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    let mut spec = SupervisorSpec::new(Strategy::OneForOne).intensity(10, Duration::from_secs(10));
    for i in 0..acceptors.max(1) {
        let (listener, handler) = (listener.clone(), handler.clone());
        spec = spec.child(
            ChildSpec::process(format!("acceptor-{i}"), move || {
                let (listener, handler) = (listener.clone(), handler.clone());
                move |cx: Context<Linked>| accept_loop(cx, listener, handler)
            })
            .shutdown(Shutdown::Infinity),
        );
    }
    spec
}

/// What an acceptor receives: the exits of the connections it linked, and the exit
/// signal of its supervisor.
#[derive(Debug)]
struct Linked(Exit);

impl From<Exit> for Linked {
    fn from(e: Exit) -> Linked {
        Linked(e)
    }
}

/// Listens on `addr` and starts `acceptors` acceptor processes under a supervisor
/// linked to the caller; each connection runs `handler(cx, stream)` in a process of its
/// own, with message type `N` (for instance [`Tcp`](crate::net::Tcp) messages, for an
/// active stream). The pool lives as long as its caller, as an OTP supervisor linked
/// to its parent does: started from `block_on`'s root process, it stops (and refuses
/// connections) when that process returns; start it from a process that stays, or
/// under an application's supervisor.
///
/// ```
/// use otter::net::{start_acceptor_pool, TcpStream};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let pool = start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 4, |_: Context<()>, mut s: TcpStream| async move {
///         let mut buf = [0u8; 16];
///         while let Ok(n @ 1..) = s.read(&mut buf).await {
///             if s.write_all(&buf[..n]).await.is_err() { break; }
///         }
///     })
///     .await
///     .unwrap();
///     let mut c = TcpStream::connect(pool.local_addr()).await.unwrap();
///     c.write_all(b"hi").await.unwrap();
///     let mut back = [0u8; 2];
///     c.read_exact(&mut back).await.unwrap();
///     back
/// });
/// assert_eq!(&r.unwrap(), b"hi");
/// ```
pub fn start_acceptor_pool<M, N, H, Fut>(
    cx: &Context<M>,
    addr: SocketAddr,
    acceptors: usize,
    handler: H,
) -> impl Future<Output = io::Result<AcceptorPool>> + Send + use<M, N, H, Fut>
where
    M: Send + 'static,
    N: Send + 'static,
    H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    // Bound now, in the caller: the listener needs the caller's runtime.
    let started = TcpListener::bind(addr).and_then(|listener| {
        let local_addr = listener.local_addr()?;
        let listening = Arc::new(Listening::new(listener, None));
        let spec = pool_spec(listening.clone(), Arc::new(handler), acceptors);
        Ok((supervisor::start_link(cx, spec), local_addr, listening))
    });
    async move {
        let (started, local_addr, listening) = started?;
        let supervisor = started.await.map_err(|reason| {
            io::Error::other(format!("the acceptor pool did not start: {reason}"))
        })?;
        close_on_exit(supervisor, &listening);
        Ok(AcceptorPool {
            supervisor,
            local_addr,
            listening,
        })
    }
}

/// Closes the pool's listener when its supervisor exits, however it stops: the
/// [`AcceptorPool`] handle shares the listener, and a connection the kernel queued but
/// no acceptor took would otherwise wait, neither accepted nor refused, for as long as
/// a handle lives (ranch closes its listening socket with its listener supervisor).
fn close_on_exit(supervisor: SupervisorRef, listening: &Arc<Listening>) {
    let weak = Arc::downgrade(listening);
    let watcher = Watcher {
        id: monitor::next_id(),
        owner: None,
        notify: Notify::Message(Box::new(move |_| {
            if let Some(l) = weak.upgrade() {
                l.close();
            }
            None
        })),
    };
    if bonds::add_watcher(supervisor.id().0, watcher).is_err() {
        // Already gone.
        listening.close();
    }
}

/// One acceptor: accepts, spawns each connection's process linked to itself, and
/// forgets the exits of those processes; any other exit signal (its supervisor's)
/// ends it with that signal's reason, as it would a process that does not trap, after
/// a drain if the pool drains at this stop (module docs, "Graceful stop").
async fn accept_loop<N, H, Fut>(
    mut cx: Context<Linked>,
    listening: Arc<Listening>,
    handler: Arc<H>,
) -> ExitReason
where
    N: Send + 'static,
    H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    crate::introspect::set_kind(cx.pid().id().0, crate::introspect::Kind::Acceptor);
    cx.trap_exit(true);
    let mut connections = HashSet::new();
    loop {
        let accepted = poll_fn(|task| {
            while let Some(Linked(exit)) = cx.try_recv() {
                if !connections.remove(&exit.from) {
                    return Poll::Ready(Err(exit.reason));
                }
            }
            let socket = listening
                .socket
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            match socket.as_ref() {
                Some(listener) => std::pin::pin!(listener.accept()).poll(task).map(Ok),
                // Closed by a graceful stop: the exit signal that follows wakes it.
                None => Poll::Pending,
            }
        })
        .await;
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(reason) => return drain(&mut cx, &listening, connections, reason).await,
        };
        match accepted {
            Ok((stream, _)) => {
                let handler = handler.clone();
                let pid = cx.spawn_link(move |c: Context<N>| handler(c, stream));
                // Set by the acceptor: the handler is the user's code.
                crate::introspect::set_kind(pid.id().0, crate::introspect::Kind::Connection);
                connections.insert(pid.id());
            }
            Err(e) if tcp_listener::out_of_descriptors(&e) => {
                cx.sleep(tcp_listener::OUT_OF_DESCRIPTORS_PAUSE).await;
            }
            // A connection reset before it was accepted, and the like: the next one.
            Err(_) => {}
        }
    }
}

/// An acceptor's stop: if the pool drains at this stop, closes the listener, waits for
/// the connections until the deadline, shuts down the ones still running and waits for
/// their exits (module docs, "Graceful stop"). Then `reason`, its supervisor's; a pool
/// that does not drain leaves its connections to the acceptor's links.
async fn drain(
    cx: &mut Context<Linked>,
    listening: &Listening,
    mut connections: HashSet<ProcessId>,
    reason: ExitReason,
) -> ExitReason {
    let Some(deadline) = listening.deadline() else {
        return reason;
    };
    listening.close();
    while !connections.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        match cx.recv_timeout(left).await {
            Some(Linked(exit)) => {
                connections.remove(&exit.from);
            }
            None => break,
        }
    }
    for &c in &connections {
        cx.exit(c, ExitReason::Shutdown);
    }
    while !connections.is_empty() {
        let Linked(exit) = cx.recv().await;
        connections.remove(&exit.from);
    }
    reason
}
