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
//!   every connection they accepted.
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

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::task::Poll;
use std::time::Duration;

use crate::net::{TcpListener, TcpStream, tcp_listener};
use crate::supervisor::{self, ChildSpec, Strategy, SupervisorRef, SupervisorSpec};
use crate::{Context, Exit, ExitReason, IntoExitReason};

/// A running acceptor pool ([`start_acceptor_pool`]).
#[derive(Debug, Clone)]
pub struct AcceptorPool {
    supervisor: SupervisorRef,
    local_addr: SocketAddr,
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
        let listening = ListenAddr::default();
        let bound = listening.clone();
        let handler = Arc::new(handler);
        let last: Mutex<Weak<TcpListener>> = Mutex::new(Weak::new());
        let spec = ChildSpec::new(id, move |sup| {
            let started = open(&bound, &last, addr).map(|listener| {
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
/// acceptors still hold it, else a new one on the address the first start bound.
fn open(
    bound: &ListenAddr,
    last: &Mutex<Weak<TcpListener>>,
    addr: SocketAddr,
) -> io::Result<Arc<TcpListener>> {
    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(listener) = last.upgrade() {
        return Ok(listener);
    }
    let listener = Arc::new(TcpListener::bind(bound.get().unwrap_or(addr))?);
    let _ = bound.0.set(listener.local_addr()?);
    *last = Arc::downgrade(&listener);
    Ok(listener)
}

/// The pool's supervisor: `acceptors` acceptors (at least one) on `listener`,
/// restarted one for one, up to 10 times in 10 s.
fn pool_spec<N, H, Fut>(
    listener: Arc<TcpListener>,
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
        spec = spec.child(ChildSpec::process(format!("acceptor-{i}"), move || {
            let (listener, handler) = (listener.clone(), handler.clone());
            move |cx: Context<Linked>| accept_loop(cx, listener, handler)
        }));
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
        let spec = pool_spec(Arc::new(listener), Arc::new(handler), acceptors);
        Ok((supervisor::start_link(cx, spec), local_addr))
    });
    async move {
        let (started, local_addr) = started?;
        let supervisor = started.await.map_err(|reason| {
            io::Error::other(format!("the acceptor pool did not start: {reason}"))
        })?;
        Ok(AcceptorPool {
            supervisor,
            local_addr,
        })
    }
}

/// One acceptor: accepts, spawns each connection's process linked to itself, and
/// forgets the exits of those processes; any other exit signal (its supervisor's)
/// ends it with that signal's reason, as it would a process that does not trap.
async fn accept_loop<N, H, Fut>(
    mut cx: Context<Linked>,
    listener: Arc<TcpListener>,
    handler: Arc<H>,
) -> ExitReason
where
    N: Send + 'static,
    H: Fn(Context<N>, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    cx.trap_exit(true);
    let mut connections = HashSet::new();
    loop {
        let accepted = poll_fn(|task| {
            while let Some(Linked(exit)) = cx.try_recv() {
                if !connections.remove(&exit.from) {
                    return Poll::Ready(Err(exit.reason));
                }
            }
            std::pin::pin!(listener.accept()).poll(task).map(Ok)
        })
        .await;
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(reason) => return reason,
        };
        match accepted {
            Ok((stream, _)) => {
                let handler = handler.clone();
                let pid = cx.spawn_link(move |c: Context<N>| handler(c, stream));
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
