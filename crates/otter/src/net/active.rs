//! Active mode: a socket's data arrives as mailbox messages, with flow control (Erlang's
//! `{active, once}` and `{active, N}`).
//!
//! # Design
//!
//! An active stream has a reader: a small process of its own, as an Erlang socket has a
//! port. It reads the socket only while its owner has asked for data (the credit of
//! `once` or `N`) and sends each chunk to the owner as a [`Tcp`] message, in the owner's
//! message type (`M: From<Tcp>`, as for `Down` and `Exit`), so selective receive works
//! across socket and process messages. With no credit the socket is not read: the
//! kernel's buffers fill and TCP makes the peer wait, instead of the owner's mailbox
//! growing. The owner writes through its [`ActiveTcpStream`] as before.
//!
//! The owner's requests reach the reader without messages: the credit and a stop flag
//! live beside the socket (`Shared`), under a lock with the reader's waker, so the reader
//! is never sent anything but its monitor's `Down`, and an idle active connection keeps no
//! mailbox block for it (a block of 31 slots, kept once allocated).
//!
//! The reader monitors its owner and ends when the owner ends or drops the stream; the
//! socket closes when both have let go of it. Its messages to the owner keep their order
//! (one sender), and `Closed` is its last.
//!
//! # Handing the stream to another process
//!
//! [`ActiveTcpStream::controlling_process`] (`gen_tcp:controlling_process/2`), called
//! by the owner, makes another process the owner: once it returns, the reader sends the
//! new owner everything it has not sent yet (a message being sent meanwhile is waited
//! for), monitors it instead, and a `Down` of the earlier owner no longer ends it. Then send it the stream (it is `Send`), or the stream stays with the
//! earlier owner while the messages go to the new one. Sending the stream without the
//! call moves the handle, not the messages: they still go to the process that turned
//! it active, and the reader ends when that process does.
//!
//! # Deliberate differences from `gen_tcp`
//!
//! * `{active, true}` (no flow control) is not offered: `Active::N(u32::MAX)` is the
//!   closest, with a `Passive` at its end.
//! * Each message names its socket by a [`SocketId`], not by the socket itself.
//! * A peer's half-close (its end shut for writing) ends the stream's messages with
//!   `Closed`, but the stream stays writable until dropped or shut down: `gen_tcp`'s
//!   `{exit_on_close, false}`, not its default.
//! * `controlling_process` does not move the messages already in the earlier owner's
//!   mailbox (OTP's does): its mailbox is typed, and its message type need not give a
//!   [`Tcp`] back. Hand the stream over before turning it active, or with the credit
//!   spent, to leave nothing behind.

use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};

use crate::monitor::MonitorRef;
use crate::net::tcp_stream::{Inner, TcpStream};
use crate::{Context, Down, Pid, ProcessId};

/// How much the owner asks for (`inet:setopts(S, [{active, ..}])`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Active {
    /// One message of data, then the socket is passive again (`{active, once}`); no
    /// `Passive` message follows.
    Once,
    /// `N` more messages of data, then a [`Tcp::Passive`] (`{active, N}`). Added to what
    /// is left if the stream is already in this mode, as in Erlang; a request that
    /// leaves no credit (`N(0)` on a passive stream) is answered with a `Passive` at once.
    N(u32),
}

/// Names one active socket in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SocketId(u64);

/// What an active socket sends its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tcp {
    /// Bytes that arrived (`{tcp, Socket, Data}`).
    Data(SocketId, Vec<u8>),
    /// The peer closed the connection, or it failed after an `Error`: the last message
    /// (`{tcp_closed, Socket}`).
    Closed(SocketId),
    /// A read failed (`{tcp_error, Socket, Reason}`); `Closed` follows.
    Error(SocketId, io::ErrorKind),
    /// The credit of `Active::N` is spent (`{tcp_passive, Socket}`).
    Passive(SocketId),
}

/// A TCP stream in active mode (see the module docs). Dropping it closes the socket.
#[derive(Debug)]
pub struct ActiveTcpStream {
    shared: Arc<Shared>,
    id: SocketId,
}

/// The socket, and the owner's requests to the reader.
#[derive(Debug)]
struct Shared {
    inner: Inner,
    flow: Mutex<Flow>,
    /// Held by the reader from taking its owner's sender to the end of the send, and by
    /// `controlling_process` while it changes the owner: once that returns, nothing
    /// goes to the earlier owner. Taken before `flow`, never while `flow` is held.
    sending: Mutex<()>,
}

/// What the owner asked for, and the reader's waker if it waits for that.
#[derive(Debug)]
struct Flow {
    /// Messages of data the reader may still send.
    credit: u32,
    /// Whether the credit is `Active::N`'s (a `Passive` at its end).
    counted: bool,
    /// `Active::N` requests that left no credit: a `Passive` is due at once for each
    /// (`{active, 0}`), however many came before the reader got to them.
    passive_due: u32,
    /// The owner dropped the stream.
    stopped: bool,
    /// Who the messages go to.
    owner: Owner,
    /// The reader, waiting for credit or the stop.
    waiter: Option<Waker>,
}

/// Whom the reader sends to and monitors; replaced by `controlling_process`.
struct Owner {
    id: ProcessId,
    /// Sends a message in the owner's own type.
    deliver: Arc<dyn Fn(Tcp) + Send + Sync>,
    /// Monitors the owner from the reader (typed as the owner's pid is): taken by the
    /// reader when the owner changes.
    monitor: Option<MonitorOwner>,
}

/// Sets the reader's monitor on its owner.
type MonitorOwner = Box<dyn FnOnce(&Context<OwnerDown>) -> MonitorRef + Send>;

impl Owner {
    fn of<M>(pid: Pid<M>) -> Owner
    where
        M: From<Tcp> + Send + 'static,
    {
        Owner {
            id: pid.id(),
            deliver: Arc::new(move |t| pid.send(M::from(t))),
            monitor: Some(Box::new(move |c: &Context<OwnerDown>| c.monitor(pid))),
        }
    }
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Changes the flow and wakes the reader if it waits.
    fn update(&self, f: impl FnOnce(&mut Flow)) {
        let waiter = {
            let mut flow = self.flow.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut flow);
            flow.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }
}

/// What the reader receives: only its monitors' signals, naming the process that exited.
#[derive(Debug)]
struct OwnerDown(ProcessId);

impl From<Down> for OwnerDown {
    fn from(d: Down) -> OwnerDown {
        OwnerDown(d.pid)
    }
}

/// The largest chunk one `Data` message carries.
const CHUNK: usize = 16 * 1024;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl TcpStream {
    /// Turns the stream active for the calling process: its data arrives as [`Tcp`]
    /// messages, `mode` saying how many (`inet:setopts(S, [{active, once}])`).
    pub fn into_active<M>(self, cx: &Context<M>, mode: Active) -> ActiveTcpStream
    where
        M: From<Tcp> + Send + 'static,
    {
        let (credit, counted) = credit_of(mode);
        let shared = Arc::new(Shared {
            inner: self.inner,
            sending: Mutex::new(()),
            flow: Mutex::new(Flow {
                credit,
                counted,
                passive_due: u32::from(counted && credit == 0),
                stopped: false,
                owner: Owner::of(cx.pid()),
                waiter: None,
            }),
        });
        let id = SocketId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let theirs = shared.clone();
        cx.spawn(move |c: Context<OwnerDown>| read_loop(c, theirs, id));
        ActiveTcpStream { shared, id }
    }
}

impl ActiveTcpStream {
    /// Asks for more data (`inet:setopts(S, [{active, ..}])`). An `Active::N` that
    /// leaves no credit (`N(0)` on a passive stream) sends a [`Tcp::Passive`] at once, as
    /// `{active, 0}` sends `{tcp_passive, S}`.
    pub fn set_active(&self, mode: Active) {
        let (c, n) = credit_of(mode);
        self.shared.update(|flow| {
            flow.credit = if n && flow.counted {
                flow.credit.saturating_add(c)
            } else {
                c
            };
            flow.counted = n;
            if n && flow.credit == 0 {
                flow.passive_due = flow.passive_due.saturating_add(1);
            }
        });
    }

    /// Makes `to` the stream's owner (`gen_tcp:controlling_process/2`): once this
    /// returns, every message not sent yet goes to `to`, in its own message type, and
    /// the reader lives as long as `to` does, no longer as long as the earlier owner.
    /// Call it, then send `to` the stream. Messages already sent stay where they are
    /// (see the module docs). If `to` does not exist, the reader stops at once: no
    /// more messages, and the socket closes when the stream is dropped. Whoever holds
    /// the stream may call it (Erlang answers `{error, not_owner}` to any other caller:
    /// here, holding the stream is owning it).
    ///
    /// ```
    /// use otter::net::{Active, ActiveTcpStream, Tcp, TcpListener};
    /// use otter::{Context, Runtime};
    /// #[derive(Debug)]
    /// enum Msg { Tcp(Tcp), Stream(ActiveTcpStream) }
    /// impl From<Tcp> for Msg { fn from(t: Tcp) -> Msg { Msg::Tcp(t) } }
    /// let rt = Runtime::new();
    /// let got = rt.block_on(|cx: Context<()>| async move {
    ///     let l = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let addr = l.local_addr().unwrap();
    ///     std::thread::spawn(move || {
    ///         use std::io::Write;
    ///         std::net::TcpStream::connect(addr).unwrap().write_all(b"hi").unwrap();
    ///     });
    ///     let (s, _) = l.accept().await.unwrap();
    ///     let (tx, rx) = std::sync::mpsc::channel();
    ///     let worker = cx.spawn(move |mut c: Context<Msg>| async move {
    ///         let Msg::Stream(s) = c.recv().await else { return };
    ///         s.set_active(Active::Once);
    ///         loop {
    ///             // `N(0)`'s `Passive` may come first.
    ///             if let Msg::Tcp(Tcp::Data(_, d)) = c.recv().await {
    ///                 break tx.send(d).unwrap();
    ///             }
    ///         }
    ///     });
    ///     // The acceptor hands the connection on, and ends.
    ///     cx.spawn(move |c: Context<Msg>| async move {
    ///         let s = s.into_active(&c, Active::N(0));
    ///         s.controlling_process(worker);
    ///         worker.send(Msg::Stream(s));
    ///     });
    ///     rx.recv().unwrap()
    /// });
    /// assert_eq!(got.unwrap(), b"hi");
    /// ```
    pub fn controlling_process<M>(&self, to: Pid<M>)
    where
        M: From<Tcp> + Send + 'static,
    {
        let _sending = self
            .shared
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.shared.update(|flow| flow.owner = Owner::of(to));
    }

    /// The id its messages carry.
    pub fn id(&self) -> SocketId {
        self.id
    }

    /// Sets how long a write may wait for the peer to take its data: as
    /// [`TcpStream::set_send_timeout`] (`gen_tcp`'s `send_timeout`).
    pub fn set_send_timeout(&self, timeout: Option<std::time::Duration>) {
        self.shared.inner.set_send_timeout(timeout);
    }

    /// The send timeout ([`ActiveTcpStream::set_send_timeout`]).
    pub fn send_timeout(&self) -> Option<std::time::Duration> {
        self.shared.inner.send_timeout()
    }

    /// Writes all of `buf` (`gen_tcp:send/2`).
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.shared.inner.write_all(buf).await
    }

    /// Closes one or both directions (`gen_tcp:shutdown/2`).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.shared.inner.io.shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.shared.inner.io.set_nodelay(on)
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shared.inner.io.local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.shared.inner.io.peer_addr()
    }
}

impl Drop for ActiveTcpStream {
    fn drop(&mut self) {
        self.shared.update(|flow| flow.stopped = true);
    }
}

/// What the reader waits for.
enum Event {
    Stop,
    Passive,
    Read(io::Result<Vec<u8>>),
}

/// The reader process: reads while it has credit, sends the owner what it read.
async fn read_loop(mut cx: Context<OwnerDown>, shared: Arc<Shared>, id: SocketId) {
    let inner = &shared.inner;
    let mut watching: Option<MonitorRef> = None;
    // The owner's sender, kept until the owner changes (no reference count per message).
    let mut send = shared
        .flow
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .owner
        .deliver
        .clone();
    loop {
        let event = poll_fn(|task| {
            // A new owner (or the first): watch it instead. Outside the lock: a monitor's
            // or demonitor's lookup may be the last reference to a process that has
            // exited, whose freed mailbox may hold this very stream, whose drop takes
            // the lock.
            loop {
                let monitor = shared
                    .flow
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .owner
                    .monitor
                    .take();
                let Some(monitor) = monitor else { break };
                if let Some(r) = watching.take() {
                    cx.demonitor(r);
                }
                watching = Some(monitor(&cx));
            }
            {
                let mut flow = shared.flow.lock().unwrap_or_else(PoisonError::into_inner);
                // The owner is down; an earlier owner's `Down` is stale.
                while let Some(OwnerDown(who)) = cx.try_recv() {
                    if who == flow.owner.id {
                        return Poll::Ready(Event::Stop);
                    }
                }
                if flow.stopped {
                    return Poll::Ready(Event::Stop);
                }
                if flow.passive_due > 0 {
                    flow.passive_due -= 1;
                    return Poll::Ready(Event::Passive);
                }
                // Woken by `update` (more credit, or the stop, also while it waits for
                // the socket), by the socket, or by the monitor's message.
                if !flow
                    .waiter
                    .as_ref()
                    .is_some_and(|w| w.will_wake(task.waker()))
                {
                    flow.waiter = Some(task.waker().clone());
                }
                if flow.credit == 0 {
                    return Poll::Pending;
                }
            }
            let mut chunk = [0u8; CHUNK];
            inner
                .reg
                .poll_transfer(crate::io::readiness::Direction::Read, task, CHUNK, || {
                    inner.io.read(&mut chunk)
                })
                .map(|r| Event::Read(r.map(|n| chunk[..n].to_vec())))
        })
        .await;
        // Until the message is sent: `controlling_process` waits for it.
        let _sending = shared
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Under the lock: the credit spent (for data), and the owner now
        // (`controlling_process` may have changed it since the poll).
        let passive = {
            let mut flow = shared.flow.lock().unwrap_or_else(PoisonError::into_inner);
            if !Arc::ptr_eq(&send, &flow.owner.deliver) {
                send = flow.owner.deliver.clone();
            }
            // The credit is spent before the owner can see the data, so that a
            // `set_active` it makes on seeing it counts after the spending.
            if matches!(&event, Event::Read(Ok(data)) if !data.is_empty()) {
                flow.credit = flow.credit.saturating_sub(1);
                flow.credit == 0 && flow.counted
            } else {
                false
            }
        };
        match event {
            Event::Stop => return,
            Event::Passive => send(Tcp::Passive(id)),
            Event::Read(Ok(data)) if data.is_empty() => {
                send(Tcp::Closed(id));
                return;
            }
            Event::Read(Ok(data)) => {
                send(Tcp::Data(id, data));
                if passive {
                    send(Tcp::Passive(id));
                }
            }
            Event::Read(Err(e)) => {
                send(Tcp::Error(id, e.kind()));
                send(Tcp::Closed(id));
                return;
            }
        }
    }
}

/// The credit `mode` gives, and whether it is counted (`N`: a `Passive` at its end).
fn credit_of(mode: Active) -> (u32, bool) {
    match mode {
        Active::Once => (1, false),
        Active::N(n) => (n, true),
    }
}
