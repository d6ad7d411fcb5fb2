//! A UDP socket owned by a process (`gen_udp` in passive mode).

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;

use crate::io::reactor::Registration;
use crate::io::readiness::Direction;
use crate::net::sock::{self, Datagrams};

/// A UDP socket (see [`crate::net`]). Closed when dropped.
pub struct UdpSocket {
    io: Datagrams,
    reg: Registration,
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local", &self.io.local_addr().ok())
            .finish()
    }
}

impl UdpSocket {
    /// Binds `addr` (IPv4 or IPv6; port 0 picks a free port), without `SO_REUSEADDR`
    /// (`gen_udp:open/2`'s default, `{reuseaddr, false}`): a port in use is
    /// `AddrInUse`. (On Linux, two UDP sockets with `SO_REUSEADDR` may bind one port, and
    /// the newer one then takes every datagram sent to it: a second instance of a
    /// service would start and silently starve the first.) Must run in a process on an
    /// otter runtime.
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
        if let Some((net, ip)) = sock::simulated() {
            return UdpSocket::of(Datagrams::Sim(net.bind_udp(ip, addr)?));
        }
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )?;
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        UdpSocket::of(Datagrams::Os(mio::net::UdpSocket::from_std(socket.into())))
    }

    fn of(mut io: Datagrams) -> io::Result<UdpSocket> {
        let reg = io.register()?;
        Ok(UdpSocket { io, reg })
    }

    /// Sends one datagram to `target` (`gen_udp:send/4`).
    pub async fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        poll_fn(|cx| {
            self.reg
                .poll_io(Direction::Write, cx, || self.io.send_to(buf, target))
        })
        .await
    }

    /// Waits for one datagram (`gen_udp:recv/2`): its length and sender. A datagram
    /// longer than `buf` is cut to its length.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| {
            self.reg
                .poll_io(Direction::Read, cx, || self.io.recv_from(buf))
        })
        .await
    }

    /// Sets the one peer that `send` goes to and `recv` hears from (`gen_udp:connect/3`).
    pub fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        self.io.connect(peer)
    }

    /// Sends one datagram to the connected peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.reg.poll_io(Direction::Write, cx, || self.io.send(buf))).await
    }

    /// Waits for one datagram from the connected peer.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.reg.poll_io(Direction::Read, cx, || self.io.recv(buf))).await
    }

    /// Sets the kernel's receive buffer size (`{recbuf, N}`).
    pub fn set_recv_buffer_size(&self, bytes: usize) -> io::Result<()> {
        self.io.set_buffer_size(true, bytes)
    }

    /// Sets the kernel's send buffer size (`{sndbuf, N}`).
    pub fn set_send_buffer_size(&self, bytes: usize) -> io::Result<()> {
        self.io.set_buffer_size(false, bytes)
    }

    /// The address it is bound to: the port chosen for port 0.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        self.io.deregister(&self.reg);
    }
}
