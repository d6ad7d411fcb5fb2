//! A TCP connection owned by a process (`gen_tcp` socket in passive mode). Reading by
//! readiness (`readable`, then `try_read`): `net.rs`'s module docs.

use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::io::reactor::Registration;
use crate::io::readiness::Direction;
use crate::net::sock::{self, Sock};

/// A TCP connection, read and written by the process that owns it (see [`crate::net`]).
///
/// Closed when dropped. Implements `futures-io`'s `AsyncRead` and `AsyncWrite`, so the
/// ecosystem's codecs and adapters work on it.
pub struct TcpStream {
    pub(super) inner: Inner,
}

/// The socket and its registration; deregistered before it closes. Shared with the
/// reader process once the stream is active (`net/active.rs`), and between a
/// distribution connection's reader and writer (`dist/connection.rs`).
#[derive(Debug)]
pub(crate) struct Inner {
    pub(super) io: Sock,
    pub(super) reg: Registration,
    /// `gen_tcp`'s `send_timeout`, in nanoseconds; zero: none. An atomic because an
    /// active stream's owner and its reader share the socket.
    send_timeout: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Out of the OS poll before the descriptor closes (`io.rs`'s invariant).
        self.io.deregister(&self.reg);
    }
}

impl Inner {
    pub(crate) fn poll_read_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let len = buf.len();
        self.reg
            .poll_transfer(Direction::Read, cx, len, || self.io.read(buf))
    }

    pub(crate) fn poll_write_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.reg
            .poll_transfer(Direction::Write, cx, buf.len(), || self.io.write(buf))
    }

    /// Writes all of `buf`, within the send timeout if one is set.
    pub(crate) async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        self.within_send_timeout(async {
            let mut buf = buf;
            while !buf.is_empty() {
                match poll_fn(|cx| self.poll_write_buf(cx, buf)).await? {
                    0 => return Err(io::ErrorKind::WriteZero.into()),
                    n => buf = &buf[n..],
                }
            }
            Ok(())
        })
        .await
    }

    pub(super) fn set_send_timeout(&self, timeout: Option<Duration>) {
        let nanos = timeout.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        self.send_timeout.store(nanos, Ordering::Relaxed);
    }

    pub(super) fn send_timeout(&self) -> Option<Duration> {
        match self.send_timeout.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }

    /// Runs a write under the send timeout (`TcpStream::set_send_timeout`): past it, the
    /// stream is shut down for writing and the write fails with `TimedOut`.
    async fn within_send_timeout<T>(
        &self,
        write: impl Future<Output = io::Result<T>>,
    ) -> io::Result<T> {
        let nanos = self.send_timeout.load(Ordering::Relaxed);
        if nanos == 0 {
            return write.await;
        }
        match crate::timer::timeout(Duration::from_nanos(nanos), write).await {
            Ok(written) => written,
            Err(_) => {
                // How much of the data went out is unknown: nothing more may follow it.
                let _ = self.io.shutdown(Shutdown::Write);
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "send_timeout: the peer took too long to take the data; \
                     the stream is shut down for writing",
                ))
            }
        }
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.inner.io.local_addr().ok())
            .field("peer", &self.inner.io.peer_addr().ok())
            .finish()
    }
}

impl Inner {
    /// Shuts down one or both directions (`gen_tcp:shutdown/2`).
    #[cfg(feature = "dist")]
    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.io.shutdown(how)
    }
}

impl TcpStream {
    /// The socket, to be shared by two processes of the crate (one reads, one writes).
    #[cfg(feature = "dist")]
    pub(crate) fn into_shared(self) -> std::sync::Arc<Inner> {
        std::sync::Arc::new(self.inner)
    }

    /// Opens a connection to `addr` (`gen_tcp:connect/3`). A closed port is
    /// `ConnectionRefused`. Must run in a process on an otter runtime.
    pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
        if let Some((net, ip)) = sock::simulated() {
            return TcpStream::new(Sock::Sim(net.connect(ip, addr)?));
        }
        let stream = TcpStream::new(Sock::Os(mio::net::TcpStream::connect(addr)?))?;
        // The connect completes when the socket becomes writable: then it either has
        // an error or a peer (mio's documented protocol; a spurious wake-up has
        // neither yet).
        poll_fn(|cx| {
            loop {
                let inner = &stream.inner;
                let Poll::Ready(seen) = inner.reg.poll_ready(Direction::Write, cx) else {
                    return Poll::Pending;
                };
                if let Some(e) = inner.io.take_error()? {
                    return Poll::Ready(Err(e));
                }
                match inner.io.peer_addr() {
                    Ok(_) => return Poll::Ready(Ok(())),
                    Err(e)
                        if e.kind() == io::ErrorKind::NotConnected
                            || e.raw_os_error() == Some(libc_einprogress()) =>
                    {
                        inner.reg.clear(Direction::Write, seen);
                    }
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        })
        .await?;
        Ok(stream)
    }

    /// Resolves `host` (`"name:port"`) on the blocking pool (`crate::blocking`: no DNS
    /// lookup on a worker), then connects to its addresses in turn, as
    /// `gen_tcp:connect/3` does with a host name. The last address's error if none
    /// answers; `InvalidInput` if the name resolves to nothing.
    pub async fn connect_host(host: impl Into<String>) -> io::Result<TcpStream> {
        let host = host.into();
        if let Some((net, _)) = sock::simulated() {
            // The simulation's host names: its nodes'.
            let (name, port) = host
                .rsplit_once(':')
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "expected host:port"))?;
            let port = port
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a bad port"))?;
            let ip = net.resolve(name).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "the name has no address")
            })?;
            return TcpStream::connect(SocketAddr::from((ip, port))).await;
        }
        let addrs = crate::blocking::spawn_blocking(move || {
            std::net::ToSocketAddrs::to_socket_addrs(&host).map(Vec::from_iter)
        })
        .await?;
        let mut last = io::Error::new(io::ErrorKind::InvalidInput, "the name has no address");
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Registers an open connection with the current runtime's reactor (or, for a
    /// simulated one, with its network's readiness).
    pub(crate) fn new(mut io: Sock) -> io::Result<TcpStream> {
        let reg = io.register()?;
        Ok(TcpStream {
            inner: Inner {
                io,
                reg,
                send_timeout: AtomicU64::new(0),
            },
        })
    }

    /// Reads what has arrived, up to `buf.len()` bytes, waiting for at least one
    /// (`gen_tcp:recv(S, 0)`). `Ok(0)`: the peer closed its side.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read_buf(cx, buf)).await
    }

    /// Reads exactly `buf.len()` bytes (`gen_tcp:recv(S, N)`); `UnexpectedEof` if the
    /// peer closes first.
    pub async fn read_exact(&mut self, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read(buf).await? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => buf = &mut buf[n..],
            }
        }
        Ok(())
    }

    /// Waits until the socket is readable (bytes have arrived, the peer closed, or an
    /// error is pending), without reading. Then [`TcpStream::try_read`] reads; if it
    /// answers `WouldBlock` (a stale readiness), wait again.
    ///
    /// The process holds nothing but this future while it waits, so a buffer can be
    /// borrowed for the read alone:
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::io::ErrorKind;
    /// use otter::net::{TcpListener, TcpStream};
    /// use otter::{Context, Runtime};
    ///
    /// thread_local! {
    ///     // One buffer per worker thread, not per connection.
    ///     static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; 16 * 1024]);
    /// }
    ///
    /// let rt = Runtime::new();
    /// let total = rt.block_on(|mut cx: Context<usize>| async move {
    ///     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let root = cx.pid();
    ///     cx.spawn(move |_: Context<()>| async move {
    ///         let (conn, _) = listener.accept().await.unwrap();
    ///         let mut total = 0;
    ///         loop {
    ///             conn.readable().await.unwrap();
    ///             // The buffer is not held across an `.await`: the process may go on
    ///             // on another worker.
    ///             match SCRATCH.with_borrow_mut(|buf| conn.try_read(buf)) {
    ///                 Ok(0) => break, // the peer closed
    ///                 Ok(n) => total += n,
    ///                 Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
    ///                 Err(e) => panic!("{e}"),
    ///             }
    ///         }
    ///         root.send(total);
    ///     });
    ///     let mut client = TcpStream::connect(addr).await.unwrap();
    ///     client.write_all(b"hello").await.unwrap();
    ///     drop(client);
    ///     cx.recv().await
    /// });
    /// assert_eq!(total.unwrap(), 5);
    /// ```
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| {
            self.inner
                .reg
                .poll_ready(Direction::Read, cx)
                .map(|_| Ok(()))
        })
        .await
    }

    /// Reads what has arrived, up to `buf.len()` bytes, without waiting. `Ok(0)`: the
    /// peer closed its side. `WouldBlock`: nothing to read now (or the runtime has not
    /// seen the socket readable since the last `WouldBlock`); the readiness it saw is
    /// cleared, so the next [`TcpStream::readable`] waits for a new event, or returns at
    /// once if one came in between: no event is lost.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use otter::net::{TcpListener, TcpStream};
    /// use otter::{Context, Runtime};
    ///
    /// let rt = Runtime::new();
    /// let got = rt.block_on(|_: Context<()>| async move {
    ///     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    ///     let (server, _) = listener.accept().await.unwrap();
    ///     let mut buf = [0; 16];
    ///     // Nothing sent yet.
    ///     assert_eq!(server.try_read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
    ///     client.write_all(b"hi").await.unwrap();
    ///     loop {
    ///         server.readable().await.unwrap();
    ///         match server.try_read(&mut buf) {
    ///             Ok(n) => return buf[..n].to_vec(),
    ///             Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
    ///             Err(e) => panic!("{e}"),
    ///         }
    ///     }
    /// });
    /// assert_eq!(got.unwrap(), b"hi");
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let inner = &self.inner;
        let len = buf.len();
        inner
            .reg
            .try_transfer(Direction::Read, len, || inner.io.read(buf))
    }

    /// Waits until the socket is writable (the kernel's send buffer has room, the peer
    /// closed its side for reading, or an error is pending), without writing. Then
    /// [`TcpStream::try_write`] writes; if it answers `WouldBlock`, wait again.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| {
            self.inner
                .reg
                .poll_ready(Direction::Write, cx)
                .map(|_| Ok(()))
        })
        .await
    }

    /// Writes what the kernel's send buffer takes now, up to `buf.len()` bytes, without
    /// waiting. `WouldBlock`: it takes nothing now (or the runtime has not seen the
    /// socket writable since the last `WouldBlock`); the readiness it saw is cleared, as
    /// for [`TcpStream::try_read`], so the next [`TcpStream::writable`] waits for room.
    ///
    /// ```
    /// use otter::net::{TcpListener, TcpStream};
    /// use otter::{Context, Runtime};
    ///
    /// let rt = Runtime::new();
    /// let got = rt.block_on(|_: Context<()>| async move {
    ///     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    ///     let (mut server, _) = listener.accept().await.unwrap();
    ///     let mut msg: &[u8] = b"hello";
    ///     while !msg.is_empty() {
    ///         client.writable().await.unwrap();
    ///         match client.try_write(msg) {
    ///             Ok(n) => msg = &msg[n..],
    ///             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
    ///             Err(e) => panic!("{e}"),
    ///         }
    ///     }
    ///     let mut buf = [0; 5];
    ///     server.read_exact(&mut buf).await.unwrap();
    ///     buf
    /// });
    /// assert_eq!(&got.unwrap(), b"hello");
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        let inner = &self.inner;
        inner
            .reg
            .try_transfer(Direction::Write, buf.len(), || inner.io.write(buf))
    }

    /// Writes some of `buf`, waiting until the socket takes at least one byte (within
    /// the send timeout, if one is set).
    pub async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let inner = &self.inner;
        inner
            .within_send_timeout(poll_fn(|cx| inner.poll_write_buf(cx, buf)))
            .await
    }

    /// Sets how long a write may wait for the peer to take its data (`gen_tcp`'s
    /// `{send_timeout, T}` with `{send_timeout_close, true}`): a [`write`](Self::write)
    /// or [`write_all`](Self::write_all) that has not finished by then fails with
    /// `TimedOut`, and the stream is shut down for writing, since how much of the data
    /// went out is unknown. `None` (the default, as `gen_tcp`'s `infinity`): a write
    /// waits as long as the peer does not read. Applies to this stream's writes and, once
    /// it is active, to its [`ActiveTcpStream`](crate::net::ActiveTcpStream)'s; the
    /// poll-based `AsyncWrite` traits are not timed (wrap them in [`crate::timeout`]).
    /// A zero duration counts as `None`.
    ///
    /// Differs from `gen_tcp`: its default `send_timeout_close` is `false`, which
    /// leaves a stream whose state is unknown open; here it is always closed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|_: otter::Context<()>| async {
    ///     let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let _peer = std::net::TcpStream::connect(addr).unwrap(); // never reads
    ///     let (mut stream, _) = listener.accept().await.unwrap();
    ///     stream.set_send_timeout(Some(Duration::from_millis(20)));
    ///     let big = vec![0u8; 64 << 20];
    ///     stream.write_all(&big).await.unwrap_err().kind()
    /// });
    /// assert_eq!(r.unwrap(), std::io::ErrorKind::TimedOut);
    /// ```
    pub fn set_send_timeout(&self, timeout: Option<Duration>) {
        self.inner.set_send_timeout(timeout);
    }

    /// The send timeout ([`TcpStream::set_send_timeout`]).
    pub fn send_timeout(&self) -> Option<Duration> {
        self.inner.send_timeout()
    }

    /// Writes all of `buf` (`gen_tcp:send/2`).
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf).await
    }

    /// Closes one or both directions (`gen_tcp:shutdown/2`).
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.io.shutdown(how)
    }

    /// Sets `TCP_NODELAY` (Erlang's `{nodelay, true}`).
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.io.set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.io.nodelay()
    }

    /// Sets the kernel's receive buffer size (`{recbuf, N}`).
    pub fn set_recv_buffer_size(&self, bytes: usize) -> io::Result<()> {
        self.inner.io.set_buffer_size(true, bytes)
    }

    /// Sets the kernel's send buffer size (`{sndbuf, N}`).
    pub fn set_send_buffer_size(&self, bytes: usize) -> io::Result<()> {
        self.inner.io.set_buffer_size(false, bytes)
    }

    /// This end's address (`inet:sockname/1`).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.local_addr()
    }

    /// The peer's address (`inet:peername/1`).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.peer_addr()
    }

    fn poll_read_buf(&mut self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_read_buf(cx, buf)
    }

    fn poll_write_buf(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.inner.poll_write_buf(cx, buf)
    }
}

/// `EINPROGRESS` on Linux, which some kernels report from `getpeername` while a
/// non-blocking connect is still under way.
fn libc_einprogress() -> i32 {
    115
}

/// tokio's read trait (feature `tokio`): hand an otter socket to a tokio-based library
/// (hyper through `hyper_util::rt::TokioIo`, a tokio codec). otter's own reactor drives
/// it: no tokio runtime or [`compat::tokio`](crate::compat::tokio) context is needed.
///
/// A read goes into the buffer's initialized room when it has some; otherwise (hyper
/// hands a fresh, uninitialized `ReadBuf` to every read) into this thread's scratch
/// buffer, and what came is copied in. Zeroing the room first (`initialize_unfilled`),
/// as a reader without `unsafe` otherwise must, cleared hyper's whole 8 KiB read buffer
/// on every read, a request's few hundred bytes or none: 7% of a worker's time in the
/// `http` case (docs/design/0039). tokio's own sockets read into the uninitialized room
/// with `unsafe`, which this module does not use.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl tokio::io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let filled = buf.filled().len();
        if buf.initialized().len() > filled {
            let room = &mut buf.initialized_mut()[filled..];
            let n = std::task::ready!(this.poll_read_buf(cx, room))?;
            buf.advance(n);
            return Poll::Ready(Ok(()));
        }
        SCRATCH.with_borrow_mut(|scratch| {
            if scratch.is_empty() {
                scratch.resize(SCRATCH_BYTES, 0);
            }
            let want = buf.remaining().min(scratch.len());
            let n = std::task::ready!(this.poll_read_buf(cx, &mut scratch[..want]))?;
            buf.put_slice(&scratch[..n]);
            Poll::Ready(Ok(()))
        })
    }
}

/// The most a read into an uninitialized `ReadBuf` takes at once (see the `AsyncRead`
/// impl): hyper's reads are 8 KiB to start with.
#[cfg(feature = "tokio")]
const SCRATCH_BYTES: usize = 64 * 1024;

#[cfg(feature = "tokio")]
thread_local! {
    /// The scratch buffer of reads into an uninitialized `ReadBuf`: zeroed once per
    /// thread, on its first such read.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// tokio's write trait (feature `tokio`); see the `AsyncRead` impl. `poll_shutdown`
/// closes the writing half, as `gen_tcp:shutdown(S, write)` does.
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
impl tokio::io::AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        futures_io::AsyncWrite::poll_write(self, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures_io::AsyncWrite::poll_flush(self, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures_io::AsyncWrite::poll_close(self, cx)
    }
}

impl futures_io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_read_buf(cx, buf)
    }
}

impl futures_io::AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_buf(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: a write is in the kernel when it returns.
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.inner.io.shutdown(Shutdown::Write))
    }
}
