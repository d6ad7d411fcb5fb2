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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

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
    inner: Arc<Inner>,
    reader: Pid<ToReader>,
    id: SocketId,
}

/// What the reader receives.
#[derive(Debug)]
enum ToReader {
    Ask(Active),
    Stop,
    OwnerDown,
}

impl From<Down> for ToReader {
    fn from(_: Down) -> ToReader {
        ToReader::OwnerDown
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
        let inner = Arc::new(self.inner);
        let id = SocketId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let owner = cx.pid();
        let shared = inner.clone();
        let reader = cx.spawn(move |c: Context<ToReader>| read_loop(c, shared, owner, id, mode));
        ActiveTcpStream { inner, reader, id }
    }
}

impl ActiveTcpStream {
    /// Asks for more data (`inet:setopts(S, [{active, ..}])`).
    pub fn set_active(&self, mode: Active) {
        self.reader.send(ToReader::Ask(mode));
    }

    /// The id its messages carry.
    pub fn id(&self) -> SocketId {
        self.id
    }

    /// Writes all of `buf` (`gen_tcp:send/2`).
    pub async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf).await
    }

    /// Closes one or both directions (`gen_tcp:shutdown/2`).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.io.shutdown(how)
    }

    /// Sets `TCP_NODELAY`.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.io.set_nodelay(on)
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.peer_addr()
    }
}

impl Drop for ActiveTcpStream {
    fn drop(&mut self) {
        self.reader.send(ToReader::Stop);
    }
}

/// What the reader waits for.
enum Event {
    Message(ToReader),
    Read(io::Result<Vec<u8>>),
}

/// The reader process: reads while it has credit, sends the owner what it read.
async fn read_loop<M>(
    mut cx: Context<ToReader>,
    inner: Arc<Inner>,
    owner: Pid<M>,
    id: SocketId,
    mode: Active,
) where
    M: From<Tcp> + Send + 'static,
{
    cx.monitor(owner);
    let (mut credit, mut counted) = credit_of(mode);
    loop {
        let event = poll_fn(|task| {
            if let Some(m) = cx.try_recv() {
                return Poll::Ready(Event::Message(m));
            }
            if credit == 0 {
                // A message wakes the process: it is waiting on its mailbox.
                return Poll::Pending;
            }
            inner
                .reg
                .poll_io(crate::io::readiness::Direction::Read, task, || {
                    let mut chunk = [0u8; CHUNK];
                    let n = (&inner.io).read(&mut chunk)?;
                    Ok(chunk[..n].to_vec())
                })
                .map(Event::Read)
        })
        .await;
        match event {
            Event::Message(ToReader::Ask(mode)) => {
                let (c, n) = credit_of(mode);
                credit = if n && counted {
                    credit.saturating_add(c)
                } else {
                    c
                };
                counted = n;
            }
            Event::Message(ToReader::Stop | ToReader::OwnerDown) => return,
            Event::Read(Ok(data)) if data.is_empty() => {
                owner.send(M::from(Tcp::Closed(id)));
                return;
            }
            Event::Read(Ok(data)) => {
                owner.send(M::from(Tcp::Data(id, data)));
                credit -= 1;
                if credit == 0 && counted {
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
