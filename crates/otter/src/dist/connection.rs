//! A connection to another node: two processes around one TCP socket.
//!
//! * The **reader** owns the connection's life: it runs the handshake (either side),
//!   then reads frames (a 4-byte length; length 0 is a tick; else `'p'`, a control
//!   term and an optional payload term) and acts on each one in order (`control.rs`).
//!   When the socket closes, fails, or carries something that is not a frame, the
//!   reader takes the connection down ([`Connection::down`]).
//! * The **writer** is the only process that writes to the socket. A process that
//!   sends to another node encodes the frame itself, on its own thread, and sends it
//!   to the writer's mailbox: mailbox order is per-sender order, so the messages and
//!   signals one process sends to another node arrive in the order they were sent.
//!   Frames sent while the handshake runs wait in the mailbox. The writer drains its
//!   mailbox into one buffer per write.
//! * The **ticker**, woken every quarter of `net_ticktime`, asks the writer for a tick
//!   (sent if it wrote nothing since the last one), and closes the socket when the
//!   reader has read nothing for four quarters (Erlang's ticker). It is a process of its
//!   own so that a writer blocked on a peer that does not read cannot hide the silence.
//!
//! One `Connection` per peer, from the first attempt to the end: when both nodes
//! connect at once and the peer's attempt wins (`ok_simultaneous`), that attempt takes
//! over this pending connection, with the frames queued in its writer, its links and
//! its waiters; our own attempt, refused, then leaves it alone. A peer that comes back
//! while its old connection still looks up (`alive`, answered `true`) replaces it: the
//! old one goes down first.
//!
//! # Limits
//!
//! A frame's length is at most [`MAX_FRAME`], its control term at most
//! [`MAX_CONTROL`]; the reader's buffer grows only as bytes arrive. At most
//! [`MAX_QUEUED`] bytes wait for a peer that does not read; beyond, the connection is
//! closed (Erlang suspends the senders instead: `busy_dist_port`).
//!
//! # Going down
//!
//! [`Connection::down`] runs once: the connection leaves the node's table, the writer
//! stops, every link between a local process and a process of the peer gets the exit
//! signal `Noconnection`, every monitor of a remote process gets its `Down` with
//! `Noconnection`, every monitor the peer held on local processes is removed, the
//! peer's pids are retired (`remote.rs`), and the node watchers hear `Down`.

use std::collections::{HashMap, HashSet};
use std::future::poll_fn;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;

use crate::dist::control::Control;
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};
use crate::dist::node::{ConnectError, NodeEvent, NodeShared};
use crate::dist::{epmd, handshake, remote};
use crate::monitor::{Down, Watcher};
use crate::net::{SharedStream, TcpStream};
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use crate::signal::Kind;
use crate::signal::bonds;
use crate::timer::Sleep;
use crate::unwind::catch_panic;

/// The largest frame accepted from a peer: a longer length field is taken as garbage,
/// and the connection is dropped.
pub(crate) const MAX_FRAME: usize = 64 << 20;

/// The largest control term accepted (a control message is a short tuple).
pub(crate) const MAX_CONTROL: usize = 64 << 10;

/// The bytes that may wait in a connection's writer for a peer that does not read.
pub(crate) const MAX_QUEUED: usize = 64 << 20;

/// What the writer's mailbox holds.
#[derive(Clone)]
pub(crate) enum Out {
    /// The socket, once the handshake is done.
    Socket(Arc<SharedStream>),
    /// A frame, length included.
    Frame(Vec<u8>),
    /// A quarter of `net_ticktime` has passed.
    Tick,
    /// Close the socket and stop.
    Close,
}

#[derive(Debug)]
enum Phase {
    Pending,
    Up,
    Gone(ConnectError),
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// The peer's attempt took this pending connection over (`ok_simultaneous`): our
    /// own attempt's failure must not take it down.
    accepting: bool,
    /// Links between a local process (first) and a process of the peer.
    links: HashSet<(RawPid, RawPid)>,
    /// Monitors local processes hold on the peer's processes, by reference words.
    watching: HashMap<Vec<u32>, (RawPid, Watcher)>,
    /// Monitors the peer holds on local processes: its reference, our target and the
    /// watcher id there.
    watched: HashMap<Vec<u32>, (RawPid, u64)>,
    waiters: Vec<Waker>,
    socket: Option<Arc<SharedStream>>,
}

/// A connection to one peer node.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) peer: Atom,
    node: Weak<NodeShared>,
    writer: Pid<Out>,
    state: Mutex<State>,
    /// Frames the reader has read; the ticker watches it.
    received: AtomicU64,
    /// Bytes queued for the writer and not yet written.
    queued: std::sync::atomic::AtomicUsize,
    next_unlink: AtomicU64,
}

impl Connection {
    fn new(node: &Arc<NodeShared>, peer: Atom) -> Arc<Connection> {
        Arc::new_cyclic(|me: &Weak<Connection>| {
            let me = me.clone();
            let writer = node
                .handle
                .spawn(move |cx: Context<Out>| run_writer(cx, me));
            Connection {
                peer,
                node: Arc::downgrade(node),
                writer,
                state: Mutex::new(State {
                    phase: Phase::Pending,
                    accepting: false,
                    links: HashSet::new(),
                    watching: HashMap::new(),
                    watched: HashMap::new(),
                    waiters: Vec::new(),
                    socket: None,
                }),
                received: AtomicU64::new(0),
                queued: Default::default(),
                next_unlink: AtomicU64::new(1),
            }
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_up(&self) -> bool {
        matches!(self.state().phase, Phase::Up)
    }

    pub(crate) fn is_gone(&self) -> bool {
        matches!(self.state().phase, Phase::Gone(_))
    }

    /// Waits until the handshake is done or has failed.
    pub(crate) async fn wait_up(&self) -> Result<(), ConnectError> {
        poll_fn(|cx| {
            let mut s = self.state();
            match &s.phase {
                Phase::Up => Poll::Ready(Ok(())),
                Phase::Gone(e) => Poll::Ready(Err(e.clone())),
                Phase::Pending => {
                    s.waiters.push(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// Queues a frame for the writer; closes the connection if the peer has left more
    /// than [`MAX_QUEUED`] bytes unread.
    pub(crate) fn send_frame(&self, frame: Vec<u8>) {
        let before = self.queued.fetch_add(frame.len(), Ordering::Relaxed);
        if before > MAX_QUEUED {
            self.close("the peer does not read");
            return;
        }
        self.writer.send(Out::Frame(frame));
    }

    /// Encodes and queues a control message without payload.
    pub(crate) fn send_control(&self, node: &Arc<NodeShared>, c: &Control) {
        if let Ok(f) = crate::dist::with_node(node, || frame::<()>(c, None)) {
            self.send_frame(f);
        }
    }

    /// Closes the socket; the reader then takes the connection down.
    pub(crate) fn close(&self, why: &str) {
        let socket = self.state().socket.clone();
        match socket {
            Some(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            None => {
                if let Some(node) = self.node.upgrade() {
                    self.down(&node, ConnectError::Io(why.to_string()));
                }
            }
        }
    }

    /// The handshake is done: the writer gets the socket, the waiters and the node
    /// watchers hear it. False if the connection was closed meanwhile (the node
    /// stopped, `disconnect`): then nothing changes and the caller drops the socket.
    fn set_up(self: &Arc<Self>, node: &Arc<NodeShared>, socket: Arc<SharedStream>) -> bool {
        let waiters = {
            let mut s = self.state();
            if !matches!(s.phase, Phase::Pending) || node.stopped.load(Ordering::Acquire) {
                return false;
            }
            s.phase = Phase::Up;
            s.accepting = false;
            s.socket = Some(socket.clone());
            std::mem::take(&mut s.waiters)
        };
        self.writer.send(Out::Socket(socket));
        let me = Arc::downgrade(self);
        let tick = (node.tick_time / 4).max(Duration::from_millis(10));
        node.handle
            .spawn(move |cx: Context<()>| run_ticker(cx, me, tick));
        for w in waiters {
            w.wake();
        }
        let up = NodeEvent::Up(self.peer.as_str().to_string());
        let _ = catch_panic(|| node.node_event(&up));
        true
    }

    /// Our own attempt failed: the connection goes down, unless the peer's attempt has
    /// taken it over.
    fn attempt_failed(&self, node: &Arc<NodeShared>, why: ConnectError) {
        if self.state().accepting {
            return;
        }
        self.down(node, why);
    }

    /// Takes the connection down (module docs). Runs once.
    pub(crate) fn down(&self, node: &Arc<NodeShared>, why: ConnectError) {
        let (was_up, links, watching, watched, waiters) = {
            let mut s = self.state();
            if matches!(s.phase, Phase::Gone(_)) {
                return;
            }
            let was_up = matches!(s.phase, Phase::Up);
            s.phase = Phase::Gone(why);
            s.socket = None;
            (
                was_up,
                std::mem::take(&mut s.links),
                std::mem::take(&mut s.watching),
                std::mem::take(&mut s.watched),
                std::mem::take(&mut s.waiters),
            )
        };
        self.writer.send(Out::Close);
        // User code runs here (`From<Exit>`, `From<Down>`, node watchers): a panic in
        // it loses that one notification, never the rest of the teardown.
        for (local, remote) in links {
            let _ = catch_panic(|| {
                bonds::signal(local, remote, crate::ExitReason::Noconnection, Kind::Link)
            });
        }
        for (_, (target, watcher)) in watching {
            let down = Down {
                reference: watcher.reference(target),
                pid: crate::ProcessId(target),
                reason: crate::ExitReason::Noconnection,
            };
            if let Ok(Some(w)) = catch_panic(|| watcher.notify(down)) {
                w.wake();
            }
        }
        for (_, (local, id)) in watched {
            bonds::remove_watcher(local, id);
        }
        crate::dist::call::connection_down(node, &self.peer);
        remote::retire_node(node, &self.peer);
        // Last: until here no new connection to the peer can start, so what was just
        // retired belonged to this one.
        {
            let mut c = node
                .connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if c.get(&self.peer).is_some_and(|x| std::ptr::eq(&**x, self)) {
                c.remove(&self.peer);
            }
        }
        for w in waiters {
            w.wake();
        }
        if was_up {
            let e = NodeEvent::Down(self.peer.as_str().to_string());
            let _ = catch_panic(|| node.node_event(&e));
        }
    }

    // Links and monitors of local processes on the peer's processes (`hooks.rs`).

    pub(crate) fn add_link(&self, local: RawPid, remote: RawPid) -> bool {
        let mut s = self.state();
        if matches!(s.phase, Phase::Gone(_)) {
            return false;
        }
        s.links.insert((local, remote));
        true
    }

    pub(crate) fn remove_link(&self, local: RawPid, remote: RawPid) -> bool {
        self.state().links.remove(&(local, remote))
    }

    pub(crate) fn next_unlink_id(&self) -> u64 {
        self.next_unlink.fetch_add(1, Ordering::Relaxed)
    }

    /// Records a monitor of `target` (a pid of the peer); hands the watcher back if
    /// the connection is gone.
    pub(crate) fn add_watching(
        &self,
        reference: &ExternalRef,
        target: RawPid,
        watcher: Watcher,
    ) -> Result<(), Watcher> {
        let mut s = self.state();
        if matches!(s.phase, Phase::Gone(_)) {
            return Err(watcher);
        }
        s.watching.insert(reference.id.clone(), (target, watcher));
        Ok(())
    }

    pub(crate) fn add_watched(&self, reference: &ExternalRef, local: RawPid, id: u64) {
        self.state()
            .watched
            .insert(reference.id.clone(), (local, id));
    }

    pub(crate) fn is_watched(&self, reference: &ExternalRef) -> bool {
        self.state().watched.contains_key(&reference.id)
    }

    pub(crate) fn remove_watched(&self, reference: &ExternalRef) -> Option<(RawPid, u64)> {
        self.state().watched.remove(&reference.id)
    }

    pub(crate) fn remove_watching(&self, reference: &ExternalRef) -> Option<(RawPid, Watcher)> {
        self.state().watching.remove(&reference.id)
    }
}

/// The reference term of a local monitor (its id, on this node).
pub(crate) fn monitor_ref(node: &NodeShared, id: u64) -> ExternalRef {
    ExternalRef {
        node: node.name.clone(),
        creation: node.creation,
        id: vec![
            (id as u32) & 0x3ffff,
            (id >> 18) as u32,
            (id >> 50) as u32 | 0x8000,
        ],
    }
}

/// The id of a local monitor from its reference term, if it is one of ours.
pub(crate) fn monitor_id(node: &NodeShared, r: &ExternalRef) -> Option<u64> {
    if r.node != node.name || r.id.len() != 3 || r.id[2] & 0x8000 == 0 {
        return None;
    }
    Some(u64::from(r.id[0]) | u64::from(r.id[1]) << 18 | u64::from(r.id[2] & 0x7fff) << 50)
}

/// Builds a frame: length, `'p'`, the control term, the payload term if any.
pub(crate) fn frame<M: Serialize + ?Sized>(
    c: &Control,
    payload: Option<&M>,
) -> Result<Vec<u8>, etf::EncodeError> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&[0, 0, 0, 0, b'p']);
    c.encode().encode(&mut out);
    if let Some(p) = payload {
        etf::encode_into(p, &mut out)?;
    }
    let len = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Builds a frame whose payload is already encoded (131 included).
pub(crate) fn frame_raw(c: &Control, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + payload.len());
    out.extend_from_slice(&[0, 0, 0, 0, b'p']);
    c.encode().encode(&mut out);
    out.extend_from_slice(payload);
    let len = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// The connection to `peer`, if there is one.
pub(crate) fn get(node: &NodeShared, peer: &Atom) -> Option<Arc<Connection>> {
    node.connections
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(peer)
        .cloned()
}

/// The connection to `peer`, started if there is none.
pub(crate) fn get_or_connect(node: &Arc<NodeShared>, peer: &Atom) -> Arc<Connection> {
    let mut c = node
        .connections
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(conn) = c.get(peer) {
        return conn.clone();
    }
    let conn = Connection::new(node, peer.clone());
    if node.stopped.load(Ordering::Acquire) || *peer == node.name {
        drop(c);
        let why = if *peer == node.name {
            "a node does not connect to itself"
        } else {
            "this node has stopped"
        };
        conn.down(node, ConnectError::Io(why.into()));
        return conn;
    }
    c.insert(peer.clone(), conn.clone());
    drop(c);
    let (n, k) = (node.clone(), conn.clone());
    node.handle
        .spawn(move |cx: Context<()>| async move { run_connect(cx, n, k).await });
    conn
}

async fn run_connect(cx: Context<()>, node: Arc<NodeShared>, conn: Arc<Connection>) {
    let peer = conn.peer.as_str().to_string();
    let Some((alive, host)) = peer.split_once('@') else {
        conn.down(
            &node,
            ConnectError::NotFound(format!("bad node name {peer}")),
        );
        return;
    };
    let (alive, host) = (alive.to_string(), host.to_string());
    let looked = crate::blocking::spawn_blocking({
        let host = host.clone();
        move || epmd::port_please(&host, &alive).map_err(|e| e.to_string())
    })
    .await;
    let port = match looked {
        Ok(a) => a.port,
        Err(e) => return conn.attempt_failed(&node, ConnectError::NotFound(e)),
    };
    let mut stream = match TcpStream::connect_host(format!("{host}:{port}")).await {
        Ok(s) => s,
        Err(e) => return conn.attempt_failed(&node, ConnectError::Io(e.to_string())),
    };
    let _ = stream.set_nodelay(true);
    let local = local_node(&node);
    let shook = with_timeout(
        cx.sleep(SETUP_TIME),
        handshake::connect_unless(&mut stream, &local, &peer, || {
            let s = conn.state();
            matches!(s.phase, Phase::Pending) && !s.accepting
        }),
    )
    .await;
    match shook {
        Ok(Ok(_)) => run_reader(node, conn, stream).await,
        Ok(Err(
            handshake::HandshakeError::Refused(handshake::Status::Nok)
            | handshake::HandshakeError::Withdrawn,
        )) => {
            // The peer is connecting to us at the same time, and its attempt wins:
            // this connection waits for it (its queued frames will go out on it), for
            // one handshake's time at most.
            drop(stream);
            let arrived = with_timeout(cx.sleep(SETUP_TIME), conn.wait_up()).await;
            if arrived.is_err() {
                conn.attempt_failed(
                    &node,
                    ConnectError::Handshake("the peer's own connection did not come".into()),
                );
            }
        }
        Ok(Err(e)) => conn.attempt_failed(&node, ConnectError::Handshake(e.to_string())),
        Err(()) => conn.attempt_failed(&node, ConnectError::Handshake("timed out".into())),
    }
}

/// The handshake's time limit (OTP's `net_setuptime` default is 7 s).
const SETUP_TIME: Duration = Duration::from_secs(7);

async fn with_timeout<T>(mut sleep: Sleep, f: impl Future<Output = T>) -> Result<T, ()> {
    let mut f = std::pin::pin!(f);
    poll_fn(|t| {
        if let Poll::Ready(v) = f.as_mut().poll(t) {
            return Poll::Ready(Ok(v));
        }
        match std::pin::Pin::new(&mut sleep).poll(t) {
            Poll::Ready(()) => Poll::Ready(Err(())),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

fn local_node(node: &NodeShared) -> handshake::LocalNode {
    handshake::LocalNode::new(node.name.as_str(), node.creation, node.hidden, &node.cookie)
}

/// Spawns the acceptor process on `listener`.
pub(crate) fn start_acceptor(
    node: &Arc<NodeShared>,
    listener: std::net::TcpListener,
) -> io::Result<()> {
    let weak = Arc::downgrade(node);
    node.handle.spawn(move |cx: Context<()>| async move {
        let Ok(listener) = crate::net::TcpListener::from_std(listener) else {
            return;
        };
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let Some(node) = weak.upgrade() else {
                return;
            };
            if node.stopped.load(Ordering::Acquire) {
                // Dropping the listener closes it.
                return;
            }
            cx.spawn(move |cx: Context<()>| run_accept(cx, node, stream));
        }
    });
    Ok(())
}

async fn run_accept(cx: Context<()>, node: Arc<NodeShared>, mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let local = local_node(&node);
    // The connection this handshake brings up, and the one it replaces (`alive`).
    let mut chosen: Option<Arc<Connection>> = None;
    let mut replaces: Option<Arc<Connection>> = None;
    let decide = |peer: &str| {
        let Some(peer) = Atom::try_new(peer) else {
            return handshake::Status::NotAllowed;
        };
        if node.stopped.load(Ordering::Acquire) || peer == node.name {
            return handshake::Status::NotAllowed;
        }
        let mut c = node
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match c.get(&peer).cloned() {
            Some(existing) if existing.is_up() => {
                // The peer says whether its old connection is gone (`true`): then
                // this one replaces it once the handshake is done.
                replaces = Some(existing);
                handshake::Status::Alive
            }
            Some(existing)
                if !existing.is_gone()
                    && !handshake::simultaneous_winner(node.name.as_str(), peer.as_str()) =>
            {
                // Their attempt wins: it takes our pending connection over (module
                // docs); ours will be refused by them.
                existing.state().accepting = true;
                chosen = Some(existing);
                handshake::Status::OkSimultaneous
            }
            Some(existing) if !existing.is_gone() => handshake::Status::Nok,
            _ => {
                let conn = Connection::new(&node, peer.clone());
                c.insert(peer, conn.clone());
                chosen = Some(conn);
                handshake::Status::Ok
            }
        }
    };
    let shook = with_timeout(
        cx.sleep(SETUP_TIME),
        handshake::accept(&mut stream, &local, decide),
    )
    .await;
    let conn = match (chosen, replaces, &shook) {
        (Some(conn), _, _) => conn,
        (None, Some(old), Ok(Ok(peer))) => {
            // `alive` answered `true`: the old connection is dead to the peer.
            old.close("replaced by a new connection from the peer");
            old.down(&node, ConnectError::Io("the peer reconnected".into()));
            let conn = Connection::new(&node, Atom::new(&peer.name));
            node.connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(conn.peer.clone(), conn.clone());
            conn
        }
        _ => return,
    };
    match shook {
        Ok(Ok(_)) => run_reader(node, conn, stream).await,
        Ok(Err(e)) => {
            eprintln!(
                "otter: refused a connection from {}: {e}",
                conn.peer.as_str()
            );
            conn.state().accepting = false;
            conn.down(&node, ConnectError::Handshake(e.to_string()));
        }
        Err(()) => {
            conn.state().accepting = false;
            conn.down(&node, ConnectError::Handshake("timed out".into()));
        }
    }
}

/// The writer process (module docs).
async fn run_writer(mut cx: Context<Out>, conn: Weak<Connection>) {
    // Frames queued during the handshake stay in the mailbox, in order.
    let Out::Socket(socket) = cx
        .recv_match(|m| matches!(m, Out::Socket(_) | Out::Close))
        .await
    else {
        return;
    };
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut wrote_since_tick = false;
    loop {
        match cx.recv().await {
            Out::Frame(f) => {
                buf.extend_from_slice(&f);
                let mut close = false;
                while buf.len() < 64 << 10 {
                    match cx.try_recv() {
                        Some(Out::Frame(f)) => buf.extend_from_slice(&f),
                        Some(Out::Close) => {
                            close = true;
                            break;
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                let written = socket.write_all(&buf).await;
                if let Some(c) = conn.upgrade() {
                    c.queued.fetch_sub(buf.len(), Ordering::Relaxed);
                }
                if written.is_err() || close {
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                    return;
                }
                buf.clear();
                wrote_since_tick = true;
            }
            Out::Tick => {
                if !wrote_since_tick && socket.write_all(&[0, 0, 0, 0]).await.is_err() {
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                    return;
                }
                wrote_since_tick = false;
            }
            Out::Close => {
                let _ = socket.shutdown(std::net::Shutdown::Both);
                return;
            }
            Out::Socket(_) => {}
        }
    }
}

/// The ticker process (module docs): every quarter of `net_ticktime`, a tick for the
/// writer to send if it is idle, and the silence check.
async fn run_ticker(mut cx: Context<()>, conn: Weak<Connection>, quarter: Duration) {
    let _interval = cx.send_interval(cx.pid(), (), quarter);
    let mut last = u64::MAX;
    let mut silent = 0;
    loop {
        cx.recv().await;
        let Some(c) = conn.upgrade() else { return };
        if c.is_gone() {
            return;
        }
        let r = c.received.load(Ordering::Relaxed);
        if r == last {
            silent += 1;
            if silent >= 4 {
                c.close("the peer stopped ticking (net_ticktime)");
                return;
            }
        } else {
            silent = 0;
            last = r;
        }
        c.writer.send(Out::Tick);
    }
}

/// The reader loop (module docs), from the end of the handshake to the connection's
/// end. However it ends (an error, the socket's close, or a panic in user code it ran),
/// the connection goes down.
async fn run_reader(node: Arc<NodeShared>, conn: Arc<Connection>, stream: TcpStream) {
    struct Down(Arc<NodeShared>, Arc<Connection>, Option<String>);
    impl Drop for Down {
        fn drop(&mut self) {
            let why = self.2.take().unwrap_or_else(|| "the reader failed".into());
            self.1.down(&self.0, ConnectError::Io(why));
        }
    }
    let socket = stream.into_shared();
    if !conn.set_up(&node, socket.clone()) {
        let _ = socket.shutdown(std::net::Shutdown::Both);
        return;
    }
    let mut guard = Down(node.clone(), conn.clone(), None);
    const CHUNK: usize = 64 << 10;
    let mut buf = vec![0u8; CHUNK];
    let (mut start, mut end) = (0usize, 0usize);
    let why = 'read: loop {
        // Every whole frame in the buffer.
        while end - start >= 4 {
            let mut len = [0u8; 4];
            len.copy_from_slice(&buf[start..start + 4]);
            let len = u32::from_be_bytes(len) as usize;
            if len > MAX_FRAME {
                break 'read format!("a frame of {len} bytes");
            }
            if end - start < 4 + len {
                break;
            }
            conn.received.fetch_add(1, Ordering::Relaxed);
            if len > 0
                && let Err(e) = handle_frame(&node, &conn, &buf[start + 4..start + 4 + len])
            {
                break 'read e;
            }
            start += 4 + len;
        }
        if start == end {
            (start, end) = (0, 0);
            if buf.len() > CHUNK {
                // A large frame is done: give its memory back.
                buf.truncate(CHUNK);
                buf.shrink_to_fit();
            }
        } else if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                (start, end) = (0, end - start);
            } else {
                // A frame longer than the buffer: grow as its bytes arrive, never by
                // what its length field claims.
                buf.resize(buf.len() * 2, 0);
            }
        }
        match poll_fn(|cx| socket.poll_read_buf(cx, &mut buf[end..])).await {
            Ok(0) => break "closed by the peer".to_string(),
            Ok(n) => end += n,
            Err(e) => break e.to_string(),
        }
    };
    let _ = socket.shutdown(std::net::Shutdown::Both);
    guard.2 = Some(why);
}

/// Acts on one frame (`'p'`, control, payload). An error takes the connection down.
fn handle_frame(node: &Arc<NodeShared>, conn: &Arc<Connection>, f: &[u8]) -> Result<(), String> {
    let Some((&b'p', rest)) = f.split_first() else {
        return Err("a frame that is not a pass-through message".into());
    };
    let used = etf::skip_prefix(rest).map_err(|e| format!("control: {e}"))?;
    if used > MAX_CONTROL {
        return Err(format!("a control term of {used} bytes"));
    }
    let control = Term::decode(&rest[..used]).map_err(|e| format!("control: {e}"))?;
    let payload = &rest[used..];
    let op = match &control {
        Term::Tuple(e) => match e.first() {
            Some(Term::Int(op)) => *op,
            _ => return Err("a control message without an op".into()),
        },
        _ => return Err("a control message that is not a tuple".into()),
    };
    if Control::op_has_payload(op) {
        etf::skip_prefix(payload)
            .ok()
            .filter(|&n| n == payload.len())
            .ok_or_else(|| "a payload that is not one term".to_string())?;
    } else if !payload.is_empty() {
        return Err(format!("bytes after control message {op}"));
    }
    // The PAYLOAD_ forms carry their reason as the payload.
    let payload_term = if matches!(op, 24..=28) {
        Some(Term::decode(payload).map_err(|e| format!("payload: {e}"))?)
    } else {
        None
    };
    let c = Control::decode(&control, payload_term.as_ref()).map_err(|e| e.0)?;
    crate::dist::receive::control(node, conn, c, payload)
}

/// The pid the node's own messages (replies of `net_kernel`, for instance) come from.
pub(crate) fn node_pid(node: &NodeShared) -> ExternalPid {
    ExternalPid {
        node: node.name.clone(),
        id: 0,
        serial: 0,
        creation: node.creation,
    }
}
