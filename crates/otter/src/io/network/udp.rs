//! UDP on a simulation's network (`io/network.rs`): datagrams, each delivered after a
//! delay drawn like a stream's, or lost. Rules beyond the network's:
//!
//! * A datagram is lost with the network's loss probability (drawn from its seed), when
//!   it crosses a partition (sent or arriving while cut: UDP does not retransmit), when
//!   nothing is bound to its address on arrival, or when the receiver already holds
//!   [`QUEUE`] datagrams (the kernel's buffer full).
//! * Datagrams between two sockets may arrive out of order (each has its own delay), as
//!   UDP's may.
//! * A connected socket (`connect`) sends to its peer and keeps only what its peer sent.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::{Arc, Mutex, Weak};

use super::{Network, local, lock, wake};
use crate::io::readiness::{READABLE, Readiness, WRITABLE};

/// How many datagrams a socket holds unread before it drops what arrives.
pub(crate) const QUEUE: usize = 256;

/// A bound UDP socket on the network.
#[derive(Debug)]
pub(crate) struct Udp {
    net: Arc<Network>,
    state: Arc<UdpState>,
}

#[derive(Debug)]
pub(crate) struct UdpState {
    addr: SocketAddrV4,
    readiness: Arc<Readiness>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<(SocketAddrV4, Vec<u8>)>,
    peer: Option<SocketAddrV4>,
}

impl UdpState {
    pub(super) fn addr(&self) -> SocketAddrV4 {
        self.addr
    }

    /// A datagram from `from` arrives.
    pub(super) fn arrive(&self, from: SocketAddrV4, bytes: Vec<u8>) {
        {
            let mut i = lock(&self.inner);
            if i.peer.is_some_and(|p| p != from) || i.queue.len() >= QUEUE {
                return;
            }
            i.queue.push_back((from, bytes));
        }
        wake(self.readiness.set(READABLE));
    }
}

impl Network {
    /// Binds a UDP socket for node `ip` at `addr` (port 0 picks one).
    pub(crate) fn bind_udp(
        self: &Arc<Self>,
        ip: std::net::Ipv4Addr,
        addr: SocketAddr,
    ) -> io::Result<Udp> {
        let mut s = lock(&self.state);
        let at = s.bound(ip, addr)?;
        if s.udp.get(&at).is_some_and(|u| u.strong_count() > 0) {
            return Err(io::ErrorKind::AddrInUse.into());
        }
        let state = Arc::new(UdpState {
            addr: at,
            readiness: Arc::new(Readiness::default()),
            inner: Mutex::default(),
        });
        let _ = state.readiness.set(WRITABLE);
        s.udp.insert(at, Arc::downgrade(&state));
        Ok(Udp {
            net: self.clone(),
            state,
        })
    }
}

impl Udp {
    pub(crate) fn readiness(&self) -> Arc<Readiness> {
        self.state.readiness.clone()
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.state.addr)
    }

    /// Sends one datagram (never blocks: what the network cannot take, it loses).
    pub(crate) fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        let to = local(*self.state.addr.ip(), target)?;
        lock(&self.net.state).send_datagram(self.state.addr, to, buf.to_vec());
        Ok(buf.len())
    }

    pub(crate) fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        let (from, bytes) = lock(&self.state.inner)
            .queue
            .pop_front()
            .ok_or(io::ErrorKind::WouldBlock)?;
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Ok((n, SocketAddr::V4(from)))
    }

    pub(crate) fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        let peer = local(*self.state.addr.ip(), peer)?;
        let mut i = lock(&self.state.inner);
        i.peer = Some(peer);
        i.queue.retain(|(from, _)| *from == peer);
        Ok(())
    }

    pub(crate) fn send(&self, buf: &[u8]) -> io::Result<usize> {
        let peer = lock(&self.state.inner)
            .peer
            .ok_or(io::ErrorKind::NotConnected)?;
        self.send_to(buf, SocketAddr::V4(peer))
    }

    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_from(buf).map(|(n, _)| n)
    }
}

impl Drop for Udp {
    fn drop(&mut self) {
        let mut s = lock(&self.net.state);
        if s.udp
            .get(&self.state.addr)
            .is_some_and(|u| std::ptr::eq(u.as_ptr(), Arc::as_ptr(&self.state)))
        {
            s.udp.remove(&self.state.addr);
        }
    }
}

/// What the network's events need of UDP.
pub(super) type Target = Weak<UdpState>;
