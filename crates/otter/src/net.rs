//! Sockets owned by processes (Erlang's `gen_tcp`, passive mode), on the runtime's own
//! reactor (`io.rs`).
//!
//! A process opens a socket with [`TcpListener::bind`], [`TcpStream::connect`] or
//! [`UdpSocket::bind`] and
//! reads and writes it with `.await`, in the process, as Erlang's `{active, false}`
//! sockets are read with `gen_tcp:recv`. A read that finds no data suspends the process,
//! not its worker: the worker runs other processes and the reactor wakes this one when
//! the socket is ready, exactly as a message would.
//!
//! # Ownership: Erlang's controlling process, in Rust
//!
//! A socket is a value the process owns: it is closed when the value is dropped, and a
//! process's values are dropped when it exits, however it exits (returning, a panic, an
//! exit signal, `kill`, the runtime's shutdown). Erlang's `controlling_process/2` is a
//! move: send the [`TcpStream`] to another process in a message; it is `Send`. An
//! [`ActiveTcpStream`] also needs [`ActiveTcpStream::controlling_process`] before it is
//! sent, so that its messages follow it.
//!
//! # Timeouts
//!
//! `gen_tcp`'s `Timeout` arguments are one function here: [`crate::timeout`] around the
//! `accept`, `connect`, `read` or any other wait (`timeout(d, s.read(&mut buf)).await??`,
//! `Elapsed` being an `io::Error` of kind `TimedOut`). A read, accept or connect cut
//! short loses nothing.
//!
//! # Two ways to read, both Erlang's
//!
//! * **Passive** ([`TcpStream::read`], `{active, false}` and `gen_tcp:recv`): the process
//!   reads when it wants to. Or it waits for the socket to be readable
//!   ([`TcpStream::readable`], without reading) and then reads without waiting
//!   ([`TcpStream::try_read`]), as with tokio, so that it holds no buffer while it waits.
//! * **Active with flow control** ([`TcpStream::into_active`], `{active, once | N}`): the
//!   data arrives as [`Tcp`] messages in the process's own mailbox, only as many as it
//!   asked for; until it asks again the socket is not read, and TCP holds the peer back.
//!
//! # Waiting for readiness, then trying without waiting
//!
//! Besides `read` and `write`, which wait and then move bytes, a [`TcpStream`] offers
//! tokio's pair: [`TcpStream::readable`] waits until the socket can be read, without
//! reading, and [`TcpStream::try_read`] reads what is there now or answers `WouldBlock`
//! ([`writable`](TcpStream::writable) and [`try_write`](TcpStream::try_write) the same
//! for writes). A process that waits this way holds no buffer while it waits: it can read
//! into a buffer it borrows only between the `try_read` and its use of the bytes (one per
//! worker thread, say), which is how a server keeps thousands of idle connections cheap.
//!
//! No event is lost (`io/readiness.rs` has the protocol): a `try_read` that answers
//! `WouldBlock` clears the readiness it saw, unless an event came since, so the next
//! `readable()` waits for a new event, or returns at once if one came meanwhile. A
//! readiness is a hint, not a promise: after `readable()`, `try_read` may still answer
//! `WouldBlock`; loop back to `readable()` then. A `try_read` with no `readable()` before
//! it may answer `WouldBlock` although bytes have arrived: it makes no system call unless
//! the runtime has seen the socket ready since the last `WouldBlock`.
//!
//! # Deliberate differences from `gen_tcp`
//!
//! * Errors are `std::io::Error` values (`ConnectionRefused`, `AddrInUse`,
//!   `ConnectionReset`, ...), the Rust names of Erlang's `econnrefused`, `eaddrinuse`,
//!   `econnreset`; a read of 0 bytes is the peer's close (`{error, closed}`).
//! * Addresses are resolved before the call (`SocketAddr`): no DNS lookup on a worker.
//!
//! ```
//! use otter::net::{TcpListener, TcpStream};
//! use otter::{Context, Runtime};
//! let rt = Runtime::new();
//! let echoed = rt.block_on(|mut cx: Context<()>| async move {
//!     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     // One process per connection, as in Erlang.
//!     cx.spawn(move |_: Context<()>| async move {
//!         let (mut conn, _) = listener.accept().await.unwrap();
//!         let mut buf = [0; 64];
//!         let n = conn.read(&mut buf).await.unwrap();
//!         conn.write_all(&buf[..n]).await.unwrap();
//!     });
//!     let mut client = TcpStream::connect(addr).await.unwrap();
//!     client.write_all(b"ping").await.unwrap();
//!     let mut buf = [0; 4];
//!     client.read_exact(&mut buf).await.unwrap();
//!     buf
//! });
//! assert_eq!(&echoed.unwrap(), b"ping");
//! ```

mod acceptor_pool;
mod active;
pub(crate) mod sock;
pub(crate) mod tcp_listener;
mod tcp_stream;
mod udp_socket;

pub use acceptor_pool::{AcceptorPool, ListenAddr, start_acceptor_pool};
pub use active::{Active, ActiveTcpStream, SocketId, Tcp};
pub use tcp_listener::TcpListener;
pub use tcp_stream::TcpStream;
pub use udp_socket::UdpSocket;

#[cfg(feature = "dist")]
pub(crate) use tcp_stream::Inner as SharedStream;
