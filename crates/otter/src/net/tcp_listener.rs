//! A listening TCP socket owned by a process (`gen_tcp:listen/2`).

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;

use crate::io::reactor::Registration;
use crate::io::readiness::Direction;
use crate::net::TcpStream;
use crate::net::sock::{self, Listen};

/// How many connections the kernel queues before they are accepted.
const BACKLOG: i32 = 1024;

/// A listening socket (see [`crate::net`]). Closed when dropped.
pub struct TcpListener {
    io: Listen,
    reg: Registration,
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local", &self.io.local_addr().ok())
            .finish()
    }
}

impl TcpListener {
    /// Listens on `addr` (IPv4 or IPv6; port 0 picks a free port), with `SO_REUSEADDR`
    /// set as Erlang's `{reuseaddr, true}` does and a backlog of 1,024. A port in use
    /// is `AddrInUse`. Must run in a process on an otter runtime.
    pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
        if let Some((net, ip)) = sock::simulated() {
            return TcpListener::of(Listen::Sim(net.listen(ip, addr)?));
        }
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(BACKLOG)?;
        TcpListener::of(Listen::Os(mio::net::TcpListener::from_std(socket.into())))
    }

    /// Registers `io` where its readiness comes from.
    pub(crate) fn of(mut io: Listen) -> io::Result<TcpListener> {
        let reg = io.register()?;
        Ok(TcpListener { io, reg })
    }

    /// Takes over a listening socket opened before the runtime was at hand (a
    /// distribution node learns its port before it starts its acceptor).
    #[cfg(any(feature = "dist", feature = "dashboard"))]
    pub(crate) fn from_std(l: std::net::TcpListener) -> io::Result<TcpListener> {
        l.set_nonblocking(true)?;
        TcpListener::of(Listen::Os(mio::net::TcpListener::from_std(l)))
    }

    /// Waits for the next connection (`gen_tcp:accept/1`). The new stream belongs to
    /// the calling process; hand it to another by sending it.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, peer) =
            poll_fn(|cx| self.reg.poll_io(Direction::Read, cx, || self.io.accept())).await?;
        Ok((TcpStream::new(stream)?, peer))
    }

    /// Accepts the next connection as an acceptor's loop does: an accept that failed
    /// for want of descriptors waits [`OUT_OF_DESCRIPTORS_PAUSE`] and tries again, and
    /// any other failure (a connection reset before it was accepted) is skipped. The
    /// acceptor pool, whose loop also watches for its stop, applies the same rule itself.
    /// (Used by the distribution's and the dashboard's acceptors.)
    #[cfg(any(feature = "dist", feature = "dashboard"))]
    pub(crate) async fn accept_next(&self) -> (TcpStream, SocketAddr) {
        loop {
            match self.accept().await {
                Ok(accepted) => return accepted,
                Err(e) if out_of_descriptors(&e) => {
                    let at = crate::timer::deadline_after(OUT_OF_DESCRIPTORS_PAUSE);
                    crate::timer::sleep_here(at).await;
                }
                Err(_) => {}
            }
        }
    }

    /// The address it listens on (`inet:sockname/1`): the port chosen for port 0.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        self.io.deregister(&self.reg);
    }
}

/// How long an acceptor waits when an accept failed for want of descriptors or
/// memory: the connection stays in the listener's backlog, so accepting again at once
/// would fail again at once, and the acceptor would spin (ranch waits likewise).
pub(crate) const OUT_OF_DESCRIPTORS_PAUSE: std::time::Duration =
    std::time::Duration::from_millis(100);

/// Whether an accept failed for want of descriptors or kernel memory (`EMFILE`,
/// `ENFILE`, `ENOBUFS`, `ENOMEM`), a state that lasts until something is freed.
pub(crate) fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}
