//! The simulated network (`sim.rs`): TCP listeners and connections between the nodes
//! of one simulation, in memory, with latency, partitions and resets.
//!
//! # Model
//!
//! * Each node of a simulation has an IPv4 address (`10.0.0.N`) and a host name. A
//!   socket a node binds to `127.0.0.1` or `0.0.0.0` is bound to its own address; a
//!   connect to `127.0.0.1` stays on the node.
//! * A connection is two byte streams, one each way. What a write takes is in flight
//!   for a delay drawn from the latency range, then arrives in the reader's buffer. A
//!   stream's bytes arrive in the order written: a write's arrival is never earlier
//!   than the one before it. A close (`shutdown(Write)`, or the socket dropped) travels
//!   behind the bytes and reads as the end of the stream.
//! * A writer has at most [`WINDOW`] bytes in flight or unread: past that, a write
//!   would block until the reader reads (TCP's window, without its acknowledgements'
//!   delay).
//! * A connect to an address nobody listens on is `ConnectionRefused` at once; one
//!   across a partition is `TimedOut` at once (where TCP would retry for minutes). A
//!   connect that succeeds reaches the listener's backlog one delay later.
//! * Partitions: what travels between two cut nodes is held until the cut heals, then
//!   arrives one maximum delay later, in order, and nothing written after the heal
//!   overtakes it (TCP's retransmissions). A reset ends every connection between two
//!   nodes at once: reads fail with `ConnectionReset`, writes with `BrokenPipe`.
//! * Every arrival is an event in one queue ordered by (time, order of sending): the
//!   network is a function of the simulation's seed and its processes' actions.
//! * UDP has rules of its own (`network/udp.rs`): a datagram may be lost, and
//!   datagrams may overtake each other.
//!
//! # Readiness
//!
//! Sockets on this network keep the same [`Readiness`] as the OS's, and the network sets
//! its bits where the reactor would: an arrival sets `READABLE`, a close `READ_CLOSED`,
//! room in the window `WRITABLE`, a reset `ERROR`; the waiting processes are woken after
//! every lock is released.
//!
//! # Locks
//!
//! A connection's lock may be held while the network's is taken (a write files its
//! arrival); never the other way: the network hands events out of its lock before they
//! touch a connection.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Waker;

use crate::io::readiness::{ERROR, READ_CLOSED, READABLE, Readiness, WRITABLE, WRITE_CLOSED};

pub(crate) mod udp;

/// How many bytes a writer may have in flight or unread (module docs).
pub(crate) const WINDOW: usize = 64 * 1024;

/// The first port a connect's end takes.
const FIRST_EPHEMERAL: u16 = 49152;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn wake(wakers: impl IntoIterator<Item = Vec<Waker>>) {
    for w in wakers.into_iter().flatten() {
        w.wake();
    }
}

/// One simulation's network (module docs).
#[derive(Debug)]
pub(crate) struct Network {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The simulation's clock, in milliseconds.
    now: u64,
    /// The delays' range, in milliseconds.
    latency: (u64, u64),
    rng: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    events: HashMap<u64, Event>,
    /// Events between cut nodes, in the order sent.
    held: Vec<Event>,
    cut: HashSet<(Ipv4Addr, Ipv4Addr)>,
    /// After a heal, the earliest arrival between two nodes: what was held arrives
    /// first.
    floor: HashMap<(Ipv4Addr, Ipv4Addr), u64>,
    listeners: HashMap<SocketAddrV4, Weak<ListenerState>>,
    udp: HashMap<SocketAddrV4, udp::Target>,
    /// A datagram's chance of being lost, in millionths.
    loss: u64,
    ports: HashMap<Ipv4Addr, u16>,
    hosts: HashMap<String, Ipv4Addr>,
    /// The port mapper of every host: (host, node name) to port and creation; the
    /// last creation handed out.
    #[cfg_attr(not(feature = "dist"), allow(dead_code))]
    epmd: HashMap<(Ipv4Addr, String), (u16, u32)>,
    #[cfg_attr(not(feature = "dist"), allow(dead_code))]
    creation: u32,
    conns: Vec<Weak<Conn>>,
}

/// Something in flight.
#[derive(Debug)]
enum Event {
    Bytes {
        conn: Arc<Conn>,
        to: usize,
        bytes: Vec<u8>,
    },
    Fin {
        conn: Arc<Conn>,
        to: usize,
    },
    Accept {
        listener: Weak<ListenerState>,
        end: End,
    },
    Datagram {
        from: SocketAddrV4,
        to: SocketAddrV4,
        bytes: Vec<u8>,
    },
    /// A datagram at its receiver (`fire_due` finds it under the lock).
    Arrived {
        at: Arc<udp::UdpState>,
        from: SocketAddrV4,
        bytes: Vec<u8>,
    },
}

impl Event {
    /// The nodes it travels between (in either order).
    fn link(&self) -> (Ipv4Addr, Ipv4Addr) {
        let (conn, to) = match self {
            Event::Bytes { conn, to, .. } | Event::Fin { conn, to } => (conn, *to),
            Event::Accept { end, .. } => (&end.conn, 1),
            Event::Datagram { from, to, .. } => return pair(*from.ip(), *to.ip()),
            Event::Arrived { at, from, .. } => return pair(*from.ip(), *at.addr().ip()),
        };
        pair(*conn.addrs[1 - to].ip(), *conn.addrs[to].ip())
    }
}

/// A link's key: its two nodes, lower first.
fn pair(a: Ipv4Addr, b: Ipv4Addr) -> (Ipv4Addr, Ipv4Addr) {
    if a <= b { (a, b) } else { (b, a) }
}

impl Network {
    /// A network whose delays come from `seed`, 1 to 5 ms by default.
    pub(crate) fn new(seed: u64) -> Arc<Network> {
        Arc::new(Network {
            state: Mutex::new(State {
                now: 0,
                latency: (1, 5),
                rng: seed,
                seq: 0,
                queue: BinaryHeap::new(),
                events: HashMap::new(),
                held: Vec::new(),
                cut: HashSet::new(),
                floor: HashMap::new(),
                listeners: HashMap::new(),
                udp: HashMap::new(),
                loss: 0,
                ports: HashMap::new(),
                hosts: HashMap::new(),
                epmd: HashMap::new(),
                creation: 0,
                conns: Vec::new(),
            }),
        })
    }

    /// Names a node's address.
    pub(crate) fn add_host(&self, name: &str, ip: Ipv4Addr) {
        lock(&self.state).hosts.insert(name.to_string(), ip);
    }

    /// The address of host `name` (a node's name, or a dotted address).
    pub(crate) fn resolve(&self, name: &str) -> Option<Ipv4Addr> {
        name.parse()
            .ok()
            .or_else(|| lock(&self.state).hosts.get(name).copied())
    }

    pub(crate) fn set_latency(&self, min_ms: u64, max_ms: u64) {
        lock(&self.state).latency = (min_ms.min(max_ms), max_ms.max(min_ms));
    }

    /// A datagram's chance of being lost (`network/udp.rs`), from 0 to 1.
    pub(crate) fn set_loss(&self, p: f64) {
        lock(&self.state).loss = (p.clamp(0.0, 1.0) * 1e6) as u64;
    }

    /// The simulation's clock moved.
    pub(crate) fn set_now(&self, ms: u64) {
        lock(&self.state).now = ms;
    }

    /// When the next event arrives, if any.
    pub(crate) fn next_due(&self) -> Option<u64> {
        lock(&self.state).queue.peek().map(|Reverse((at, _))| *at)
    }

    /// Delivers every event due by `now`, in order; how many.
    pub(crate) fn fire_due(&self, now: u64) -> usize {
        let mut due = Vec::new();
        {
            let mut s = lock(&self.state);
            s.now = s.now.max(now);
            while let Some(&Reverse((at, seq))) = s.queue.peek() {
                if at > now {
                    break;
                }
                s.queue.pop();
                let e = s.events.remove(&seq).expect("queued events are filed");
                let (a, b) = e.link();
                let cut = s.cut.contains(&pair(a, b));
                match e {
                    // UDP does not retransmit: what a cut meets is lost, and so is what
                    // reaches an address nobody has bound.
                    Event::Datagram { .. } if cut => {}
                    Event::Datagram { from, to, bytes } => {
                        if let Some(at) = s.udp.get(&to).and_then(Weak::upgrade) {
                            due.push(Event::Arrived { at, from, bytes });
                        }
                    }
                    e if cut => s.held.push(e),
                    e => due.push(e),
                }
            }
        }
        let n = due.len();
        for e in due {
            deliver(e);
        }
        n
    }

    /// Cuts the link between `a` and `b` (module docs, "Partitions").
    pub(crate) fn partition(&self, a: Ipv4Addr, b: Ipv4Addr) {
        if a != b {
            lock(&self.state).cut.insert(pair(a, b));
        }
    }

    /// Heals the link between `a` and `b`: what was held arrives one maximum delay
    /// from now, before anything sent later.
    pub(crate) fn heal(&self, a: Ipv4Addr, b: Ipv4Addr) {
        let mut s = lock(&self.state);
        let link = pair(a, b);
        if !s.cut.remove(&link) {
            return;
        }
        let at = s.now + s.latency.1;
        let held = std::mem::take(&mut s.held);
        for e in held {
            let (x, y) = e.link();
            if pair(x, y) == link {
                s.file(at, e);
            } else {
                s.held.push(e);
            }
        }
        let f = s.floor.entry(link).or_default();
        *f = (*f).max(at);
    }

    /// Ends every connection between `a` and `b` (module docs).
    pub(crate) fn reset(&self, a: Ipv4Addr, b: Ipv4Addr) {
        let link = pair(a, b);
        let conns: Vec<Arc<Conn>> = {
            let mut s = lock(&self.state);
            s.conns.retain(|c| c.strong_count() > 0);
            s.conns.iter().filter_map(Weak::upgrade).collect()
        };
        for c in conns {
            if pair(*c.addrs[0].ip(), *c.addrs[1].ip()) == link {
                lock(&c.state).reset = true;
                wake(c.readiness[0].set(ERROR | READ_CLOSED | WRITE_CLOSED));
                wake(c.readiness[1].set(ERROR | READ_CLOSED | WRITE_CLOSED));
            }
        }
    }

    /// Drops everything in flight (the simulation ends), outside the lock: the ends in
    /// it close.
    pub(crate) fn clear(&self) {
        let (events, held) = {
            let mut s = lock(&self.state);
            s.queue.clear();
            (std::mem::take(&mut s.events), std::mem::take(&mut s.held))
        };
        drop((events, held));
    }

    /// Host `ip` went down (its node crashed): as its OS would, closes every socket
    /// it had (its listeners stop listening; each connection's far end reads the end
    /// of the stream, and its own end reads nothing more), whatever still holds them;
    /// and its port mapper forgets its nodes.
    pub(crate) fn host_down(self: &Arc<Self>, ip: Ipv4Addr) {
        let conns: Vec<Arc<Conn>> = {
            let mut s = lock(&self.state);
            s.epmd.retain(|(host, _), _| *host != ip);
            s.listeners.retain(|at, _| *at.ip() != ip);
            s.udp.retain(|at, _| *at.ip() != ip);
            s.conns.retain(|c| c.strong_count() > 0);
            s.conns.iter().filter_map(Weak::upgrade).collect()
        };
        for conn in conns {
            for side in 0..2 {
                if *conn.addrs[side].ip() == ip {
                    let end = End {
                        net: Arc::downgrade(self),
                        conn: conn.clone(),
                        side,
                    };
                    let _ = end.shutdown(Shutdown::Both);
                }
            }
        }
    }

    #[cfg(feature = "dist")]
    /// Registers node `alive` of host `ip` at `port` with the host's port mapper: the
    /// node's creation, or `AddrInUse` if the name is taken.
    pub(crate) fn epmd_register(&self, ip: Ipv4Addr, alive: &str, port: u16) -> io::Result<u32> {
        let mut s = lock(&self.state);
        let key = (ip, alive.to_string());
        if s.epmd.contains_key(&key) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("the name {alive} is registered on {ip} already"),
            ));
        }
        s.creation += 1;
        let creation = s.creation;
        s.epmd.insert(key, (port, creation));
        Ok(creation)
    }

    #[cfg(feature = "dist")]
    /// Unregisters the node `alive` of host `ip` that registered as `creation` (not a
    /// node of that name registered since, after a crash).
    pub(crate) fn epmd_unregister(&self, ip: Ipv4Addr, alive: &str, creation: u32) {
        let mut s = lock(&self.state);
        let key = (ip, alive.to_string());
        if s.epmd.get(&key).is_some_and(|&(_, c)| c == creation) {
            s.epmd.remove(&key);
        }
    }

    #[cfg(feature = "dist")]
    /// The port of node `alive` on `host`, as its port mapper answers node `from`.
    pub(crate) fn epmd_lookup(&self, from: Ipv4Addr, host: &str, alive: &str) -> io::Result<u16> {
        let ip = self.resolve(host).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no host {host} in the simulation"),
            )
        })?;
        let s = lock(&self.state);
        if s.cut.contains(&pair(from, ip)) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{from} and {ip} are partitioned"),
            ));
        }
        s.epmd
            .get(&(ip, alive.to_string()))
            .map(|&(port, _)| port)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no node {alive} on {host}"),
                )
            })
    }

    /// Listens on `addr` for node `ip` (module docs: `127.0.0.1` and `0.0.0.0` are the
    /// node's own address; port 0 picks one).
    pub(crate) fn listen(self: &Arc<Self>, ip: Ipv4Addr, addr: SocketAddr) -> io::Result<Listener> {
        let mut s = lock(&self.state);
        let at = s.bound(ip, addr)?;
        if s.listeners.get(&at).is_some_and(|l| l.strong_count() > 0) {
            return Err(io::ErrorKind::AddrInUse.into());
        }
        let state = Arc::new(ListenerState {
            addr: at,
            readiness: Arc::new(Readiness::default()),
            backlog: Mutex::new(VecDeque::new()),
        });
        s.listeners.insert(at, Arc::downgrade(&state));
        Ok(Listener {
            net: self.clone(),
            state,
        })
    }

    /// Connects node `ip` to `addr` (module docs).
    pub(crate) fn connect(self: &Arc<Self>, ip: Ipv4Addr, addr: SocketAddr) -> io::Result<End> {
        let to = local(ip, addr)?;
        let mut s = lock(&self.state);
        if s.cut.contains(&pair(ip, *to.ip())) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{ip} and {} are partitioned", to.ip()),
            ));
        }
        let Some(listener) = s
            .listeners
            .get(&to)
            .filter(|l| l.strong_count() > 0)
            .cloned()
        else {
            return Err(io::ErrorKind::ConnectionRefused.into());
        };
        let from = SocketAddrV4::new(ip, s.ephemeral(ip));
        let conn = Arc::new(Conn {
            addrs: [from, to],
            readiness: [
                Arc::new(Readiness::default()),
                Arc::new(Readiness::default()),
            ],
            state: Mutex::new(ConnState::default()),
        });
        let _ = conn.readiness[0].set(WRITABLE);
        let _ = conn.readiness[1].set(WRITABLE);
        // The list keeps the connections a reset or a crash may end: those ended
        // since go at each doubling.
        if s.conns.len() >= 64 && s.conns.len().is_power_of_two() {
            s.conns.retain(|c| c.strong_count() > 0);
        }
        s.conns.push(Arc::downgrade(&conn));
        let server = End {
            net: Arc::downgrade(self),
            conn: conn.clone(),
            side: 1,
        };
        let at = s.delay(ip, *to.ip(), 0);
        s.file(
            at,
            Event::Accept {
                listener,
                end: server,
            },
        );
        Ok(End {
            net: Arc::downgrade(self),
            conn,
            side: 0,
        })
    }
}

impl State {
    /// The address a socket of node `ip` binding `addr` gets (module docs; port 0
    /// picks one).
    fn bound(&mut self, ip: Ipv4Addr, addr: SocketAddr) -> io::Result<SocketAddrV4> {
        let at = local(ip, addr)?;
        Ok(match at.port() {
            0 => SocketAddrV4::new(ip, self.ephemeral(ip)),
            _ => at,
        })
    }

    fn ephemeral(&mut self, ip: Ipv4Addr) -> u16 {
        let p = self.ports.entry(ip).or_insert(FIRST_EPHEMERAL);
        let port = *p;
        *p = if *p == u16::MAX {
            FIRST_EPHEMERAL
        } else {
            *p + 1
        };
        port
    }

    /// When something sent now from `a` to `b` arrives, never before `after`.
    fn delay(&mut self, a: Ipv4Addr, b: Ipv4Addr, after: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let r = crate::rng::splitmix(self.rng);
        let (lo, hi) = self.latency;
        let d = lo + r % (hi - lo + 1);
        let floor = self.floor.get(&pair(a, b)).copied().unwrap_or(0);
        (self.now + d).max(after).max(floor)
    }

    /// Sends a datagram from `from` to `to`: lost (module docs of `network/udp.rs`), or
    /// filed to arrive after a delay of its own.
    fn send_datagram(&mut self, from: SocketAddrV4, to: SocketAddrV4, bytes: Vec<u8>) {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let lost = crate::rng::splitmix(self.rng) % 1_000_000 < self.loss;
        if lost || self.cut.contains(&pair(*from.ip(), *to.ip())) {
            return;
        }
        let at = self.delay(*from.ip(), *to.ip(), 0);
        self.file(at, Event::Datagram { from, to, bytes });
    }

    fn file(&mut self, at: u64, e: Event) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq)));
        self.events.insert(self.seq, e);
    }
}

/// `addr` as bound or reached from node `ip`.
fn local(ip: Ipv4Addr, addr: SocketAddr) -> io::Result<SocketAddrV4> {
    match addr.ip() {
        IpAddr::V4(a) if a.is_loopback() || a.is_unspecified() => {
            Ok(SocketAddrV4::new(ip, addr.port()))
        }
        IpAddr::V4(a) => Ok(SocketAddrV4::new(a, addr.port())),
        IpAddr::V6(_) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the simulated network has IPv4 addresses only",
        )),
    }
}

fn deliver(e: Event) {
    match e {
        Event::Bytes { conn, to, bytes } => {
            {
                let mut s = lock(&conn.state);
                let h = &mut s.to[to];
                h.in_flight -= bytes.len();
                h.buf.extend(bytes);
            }
            wake(conn.readiness[to].set(READABLE));
        }
        Event::Fin { conn, to } => {
            lock(&conn.state).to[to].fin = true;
            wake(conn.readiness[to].set(READABLE | READ_CLOSED));
        }
        Event::Arrived { at, from, bytes } => at.arrive(from, bytes),
        Event::Datagram { .. } => unreachable!("a datagram is resolved before it is delivered"),
        Event::Accept { listener, end } => {
            // A listener closed since: the end drops, and its close reaches the client.
            if let Some(l) = listener.upgrade() {
                lock(&l.backlog).push_back(end);
                wake(l.readiness.set(READABLE));
            }
        }
    }
}

/// A connection: its two ends' addresses (0 the connecting side, 1 the accepted),
/// readiness and streams.
#[derive(Debug)]
pub(crate) struct Conn {
    addrs: [SocketAddrV4; 2],
    readiness: [Arc<Readiness>; 2],
    state: Mutex<ConnState>,
}

#[derive(Debug, Default)]
struct ConnState {
    /// `to[s]`: the stream towards side `s`.
    to: [Stream; 2],
    reset: bool,
}

/// One way of a connection.
#[derive(Debug, Default)]
struct Stream {
    /// Arrived, not yet read.
    buf: VecDeque<u8>,
    in_flight: usize,
    /// The close has arrived.
    fin: bool,
    /// The sender has closed it (the close may still be in flight).
    closed: bool,
    /// The receiver has shut it down for reading: its reads end.
    shut: bool,
    /// The latest arrival filed.
    last_at: u64,
}

/// One end of a connection, what a simulated `TcpStream` holds.
#[derive(Debug)]
pub(crate) struct End {
    /// Weak: the network's queue holds ends (an accept in flight).
    net: Weak<Network>,
    conn: Arc<Conn>,
    side: usize,
}

impl End {
    pub(crate) fn readiness(&self) -> Arc<Readiness> {
        self.conn.readiness[self.side].clone()
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.conn.addrs[self.side])
    }

    pub(crate) fn peer_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.conn.addrs[1 - self.side])
    }

    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let mut s = lock(&self.conn.state);
            if s.reset {
                return Err(io::ErrorKind::ConnectionReset.into());
            }
            let h = &mut s.to[self.side];
            if h.shut {
                return Ok(0);
            }
            if h.buf.is_empty() {
                return if h.fin || buf.is_empty() {
                    Ok(0)
                } else {
                    Err(io::ErrorKind::WouldBlock.into())
                };
            }
            let n = buf.len().min(h.buf.len());
            for (d, b) in buf.iter_mut().zip(h.buf.drain(..n)) {
                *d = b;
            }
            n
        };
        // Room in the window: the writer may go on.
        wake(self.conn.readiness[1 - self.side].set(WRITABLE));
        Ok(n)
    }

    pub(crate) fn write(&self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let other = 1 - self.side;
        let mut s = lock(&self.conn.state);
        if s.reset {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let h = &mut s.to[other];
        if h.closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let room = WINDOW.saturating_sub(h.in_flight + h.buf.len());
        if room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let Some(network) = self.net.upgrade() else {
            return Err(io::ErrorKind::BrokenPipe.into());
        };
        let n = room.min(buf.len());
        h.in_flight += n;
        let mut net = lock(&network.state);
        let at = net.delay(
            *self.conn.addrs[self.side].ip(),
            *self.conn.addrs[other].ip(),
            h.last_at,
        );
        h.last_at = at;
        let bytes = buf[..n].to_vec();
        net.file(
            at,
            Event::Bytes {
                conn: self.conn.clone(),
                to: other,
                bytes,
            },
        );
        Ok(n)
    }

    /// Closes the writing side (its close follows the bytes written), the reading
    /// side (reads then end at once, as after the OS's `SHUT_RD`), or both.
    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if how != Shutdown::Write {
            lock(&self.conn.state).to[self.side].shut = true;
            wake(self.conn.readiness[self.side].set(READ_CLOSED));
        }
        if how != Shutdown::Read {
            self.close_write();
        }
        Ok(())
    }

    fn close_write(&self) {
        let other = 1 - self.side;
        let mut s = lock(&self.conn.state);
        let h = &mut s.to[other];
        if std::mem::replace(&mut h.closed, true) {
            return;
        }
        let Some(network) = self.net.upgrade() else {
            return;
        };
        let mut net = lock(&network.state);
        let at = net.delay(
            *self.conn.addrs[self.side].ip(),
            *self.conn.addrs[other].ip(),
            h.last_at,
        );
        h.last_at = at;
        net.file(
            at,
            Event::Fin {
                conn: self.conn.clone(),
                to: other,
            },
        );
    }
}

impl Drop for End {
    fn drop(&mut self) {
        self.close_write();
    }
}

/// A listening socket on the network.
#[derive(Debug)]
pub(crate) struct Listener {
    net: Arc<Network>,
    state: Arc<ListenerState>,
}

#[derive(Debug)]
pub(crate) struct ListenerState {
    addr: SocketAddrV4,
    readiness: Arc<Readiness>,
    backlog: Mutex<VecDeque<End>>,
}

impl Listener {
    pub(crate) fn readiness(&self) -> Arc<Readiness> {
        self.state.readiness.clone()
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.state.addr)
    }

    /// The next connection in the backlog, or `WouldBlock`.
    pub(crate) fn accept(&self) -> io::Result<(End, SocketAddr)> {
        let end = lock(&self.state.backlog)
            .pop_front()
            .ok_or(io::ErrorKind::WouldBlock)?;
        let peer = end.peer_addr();
        Ok((end, peer))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut s = lock(&self.net.state);
        if s.listeners
            .get(&self.state.addr)
            .is_some_and(|l| std::ptr::eq(l.as_ptr(), Arc::as_ptr(&self.state)))
        {
            s.listeners.remove(&self.state.addr);
        }
    }
}
