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
//! # Deliberate differences from `gen_tcp`
//!
//! * `{active, true}` (no flow control) is not offered: `Active::N(u32::MAX)` is the
//!   closest, with a `Passive` at its end.
//! * Each message names its socket by a [`SocketId`], not by the socket itself.

use std::future::poll_fn;
use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};

use crate::net::tcp_stream::{Inner, TcpStream};
use crate::{Context, Down, Pid};

/// How much the owner asks for (`inet:setopts(S, [{active, ..}])`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Active {
    /// One message of data, then the socket is passive again (`{active, once}`); no
    /// `Passive` message follows.
    Once,
    /// `N` more messages of data, then a [`Tcp::Passive`] (`{active, N}`). Added to what
    /// is left if the stream is already in this mode, as in Erlang.
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
}

/// What the owner asked for, and the reader's waker if it waits for that.
#[derive(Debug)]
struct Flow {
    /// Messages of data the reader may still send.
    credit: u32,
    /// Whether the credit is `Active::N`'s (a `Passive` at its end).
    counted: bool,
    /// The owner dropped the stream.
    stopped: bool,
    /// The reader, waiting for credit or the stop.
    waiter: Option<Waker>,
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

/// What the reader receives: only its monitor's signal.
#[derive(Debug)]
struct OwnerDown;

impl From<Down> for OwnerDown {
    fn from(_: Down) -> OwnerDown {
        OwnerDown
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
            flow: Mutex::new(Flow {
                credit,
                counted,
                stopped: false,
                waiter: None,
            }),
        });
        let id = SocketId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let owner = cx.pid();
        let theirs = shared.clone();
        cx.spawn(move |c: Context<OwnerDown>| read_loop(c, theirs, owner, id));
        ActiveTcpStream { shared, id }
    }
}

impl ActiveTcpStream {
    /// Asks for more data (`inet:setopts(S, [{active, ..}])`).
    pub fn set_active(&self, mode: Active) {
        let (c, n) = credit_of(mode);
        self.shared.update(|flow| {
            flow.credit = if n && flow.counted {
                flow.credit.saturating_add(c)
            } else {
                c
            };
            flow.counted = n;
        });
    }

    /// The id its messages carry.
    pub fn id(&self) -> SocketId {
        self.id
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
    Read(io::Result<Vec<u8>>),
}

/// The reader process: reads while it has credit, sends the owner what it read.
async fn read_loop<M>(mut cx: Context<OwnerDown>, shared: Arc<Shared>, owner: Pid<M>, id: SocketId)
where
    M: From<Tcp> + Send + 'static,
{
    cx.monitor(owner);
    let inner = &shared.inner;
    loop {
        let event = poll_fn(|task| {
            if cx.try_recv().is_some() {
                return Poll::Ready(Event::Stop); // the owner is down
            }
            {
                let mut flow = shared.flow.lock().unwrap_or_else(PoisonError::into_inner);
                if flow.stopped {
                    return Poll::Ready(Event::Stop);
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
                    (&inner.io).read(&mut chunk)
                })
                .map(|r| Event::Read(r.map(|n| chunk[..n].to_vec())))
        })
        .await;
        match event {
            Event::Stop => return,
            Event::Read(Ok(data)) if data.is_empty() => {
                owner.send(M::from(Tcp::Closed(id)));
                return;
            }
            Event::Read(Ok(data)) => {
                // The credit is spent before the owner can see the data, so that a
                // `set_active` it makes on seeing it counts after the spending.
                let passive = {
                    let mut flow = shared.flow.lock().unwrap_or_else(PoisonError::into_inner);
                    flow.credit = flow.credit.saturating_sub(1);
                    flow.credit == 0 && flow.counted
                };
                owner.send(M::from(Tcp::Data(id, data)));
                if passive {
                    owner.send(M::from(Tcp::Passive(id)));
                }
            }
            Event::Read(Err(e)) => {
                owner.send(M::from(Tcp::Error(id, e.kind())));
                owner.send(M::from(Tcp::Closed(id)));
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
