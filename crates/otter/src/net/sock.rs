//! What a [`TcpStream`](super::TcpStream), a [`TcpListener`](super::TcpListener) or a
//! [`UdpSocket`](super::UdpSocket) is made of: the OS's socket (mio's), or one of a
//! simulation's network (`io/network.rs`),
//! which a process of a [`Simulation`](crate::sim::Simulation) opens in its place.
//! Everything above this file is the same for both.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr};
use std::sync::Arc;

use crate::io::network::{self, Network};
use crate::io::reactor::Registration;
use crate::runtime::context;

/// A connection's socket.
#[derive(Debug)]
pub(crate) enum Sock {
    Os(mio::net::TcpStream),
    Sim(network::End),
}

impl Sock {
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Os(s) => {
                let mut s: &mio::net::TcpStream = s;
                s.read(buf)
            }
            Sock::Sim(e) => e.read(buf),
        }
    }

    pub(crate) fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Os(s) => {
                let mut s: &mio::net::TcpStream = s;
                s.write(buf)
            }
            Sock::Sim(e) => e.write(buf),
        }
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Sock::Os(s) => s.shutdown(how),
            Sock::Sim(e) => e.shutdown(how),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Sock::Os(s) => s.local_addr(),
            Sock::Sim(e) => Ok(e.local_addr()),
        }
    }

    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Sock::Os(s) => s.peer_addr(),
            Sock::Sim(e) => Ok(e.peer_addr()),
        }
    }

    /// A pending error, after a connect (a simulated connect has none: it fails at
    /// once or not at all).
    pub(crate) fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Sock::Os(s) => s.take_error(),
            Sock::Sim(_) => Ok(None),
        }
    }

    /// `TCP_NODELAY` (a simulated stream sends every write as it comes).
    pub(crate) fn set_nodelay(&self, on: bool) -> io::Result<()> {
        match self {
            Sock::Os(s) => s.set_nodelay(on),
            Sock::Sim(_) => Ok(()),
        }
    }

    pub(crate) fn nodelay(&self) -> io::Result<bool> {
        match self {
            Sock::Os(s) => s.nodelay(),
            Sock::Sim(_) => Ok(true),
        }
    }

    /// The kernel's buffer sizes (a simulated stream's window is fixed:
    /// `io/network.rs`'s `WINDOW`).
    pub(crate) fn set_buffer_size(&self, recv: bool, bytes: usize) -> io::Result<()> {
        match self {
            Sock::Os(s) if recv => socket2::SockRef::from(s).set_recv_buffer_size(bytes),
            Sock::Os(s) => socket2::SockRef::from(s).set_send_buffer_size(bytes),
            Sock::Sim(_) => Ok(()),
        }
    }

    /// Registers it where its readiness comes from.
    pub(crate) fn register(&mut self) -> io::Result<Registration> {
        match self {
            Sock::Os(s) => context::current_reactor()?.register(s),
            Sock::Sim(e) => Ok(Registration::simulated(e.readiness())),
        }
    }

    /// Takes it out of the OS poll before it closes.
    pub(crate) fn deregister(&mut self, reg: &Registration) {
        if let Sock::Os(s) = self {
            reg.deregister(s);
        }
    }
}

/// A listener's socket.
#[derive(Debug)]
pub(crate) enum Listen {
    Os(mio::net::TcpListener),
    Sim(network::Listener),
}

impl Listen {
    pub(crate) fn accept(&self) -> io::Result<(Sock, SocketAddr)> {
        match self {
            Listen::Os(l) => l.accept().map(|(s, a)| (Sock::Os(s), a)),
            Listen::Sim(l) => l.accept().map(|(e, a)| (Sock::Sim(e), a)),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Listen::Os(l) => l.local_addr(),
            Listen::Sim(l) => Ok(l.local_addr()),
        }
    }

    pub(crate) fn register(&mut self) -> io::Result<Registration> {
        match self {
            Listen::Os(l) => context::current_reactor()?.register(l),
            Listen::Sim(l) => Ok(Registration::simulated(l.readiness())),
        }
    }

    pub(crate) fn deregister(&mut self, reg: &Registration) {
        if let Listen::Os(l) = self {
            reg.deregister(l);
        }
    }
}

/// A UDP socket.
#[derive(Debug)]
pub(crate) enum Datagrams {
    Os(mio::net::UdpSocket),
    Sim(network::udp::Udp),
}

impl Datagrams {
    pub(crate) fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        match self {
            Datagrams::Os(s) => s.send_to(buf, target),
            Datagrams::Sim(u) => u.send_to(buf, target),
        }
    }

    pub(crate) fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match self {
            Datagrams::Os(s) => s.recv_from(buf),
            Datagrams::Sim(u) => u.recv_from(buf),
        }
    }

    pub(crate) fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        match self {
            Datagrams::Os(s) => s.connect(peer),
            Datagrams::Sim(u) => u.connect(peer),
        }
    }

    pub(crate) fn send(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Datagrams::Os(s) => s.send(buf),
            Datagrams::Sim(u) => u.send(buf),
        }
    }

    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Datagrams::Os(s) => s.recv(buf),
            Datagrams::Sim(u) => u.recv(buf),
        }
    }

    /// The kernel's buffer sizes (a simulated socket holds `network/udp.rs`'s `QUEUE`
    /// datagrams).
    pub(crate) fn set_buffer_size(&self, recv: bool, bytes: usize) -> io::Result<()> {
        match self {
            Datagrams::Os(s) if recv => socket2::SockRef::from(s).set_recv_buffer_size(bytes),
            Datagrams::Os(s) => socket2::SockRef::from(s).set_send_buffer_size(bytes),
            Datagrams::Sim(_) => Ok(()),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Datagrams::Os(s) => s.local_addr(),
            Datagrams::Sim(u) => Ok(u.local_addr()),
        }
    }

    pub(crate) fn register(&mut self) -> io::Result<Registration> {
        match self {
            Datagrams::Os(s) => context::current_reactor()?.register(s),
            Datagrams::Sim(u) => Ok(Registration::simulated(u.readiness())),
        }
    }

    pub(crate) fn deregister(&mut self, reg: &Registration) {
        if let Datagrams::Os(s) = self {
            reg.deregister(s);
        }
    }
}

/// The simulated network of the runtime whose process runs on this thread, and that
/// node's address; `None` on a normal runtime (or off any).
pub(crate) fn simulated() -> Option<(Arc<Network>, Ipv4Addr)> {
    let shared = context::current_shared()?;
    let sim = shared.services.simulated.as_ref()?;
    Some((sim.net.clone(), sim.ip))
}
