//! A connection to another node: two processes around one TCP socket.
//!
//! * The **reader** owns the connection's life: it runs the handshake (either side),
//!   then reads frames (a 4-byte length; length 0 is a tick; else `'p'`, a control
//!   term and an optional payload term) and acts on each one in order (`otter_dist::control`).
//!   When the socket closes, fails, or carries something that is not a frame, the
//!   reader takes the connection down ([`Connection::down`]).
//! * The **writer** is the only process that writes to the socket. A process that
//!   sends to another node encodes the frame itself, on its own thread, and sends it
//!   to the writer's mailbox: mailbox order is per-sender order, so the messages and
//!   signals one process sends to another node arrive in the order they were sent.
//!   Frames sent while the handshake runs wait in the mailbox. The writer copies
//!   small frames from its mailbox into one buffer per write, and writes a large one
//!   from its own buffer (`pump.rs`'s `write_frames`): a frame's payload is written
//!   once, where its sender encodes it, and copied by no one on the way out.
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
//! [`MAX_CONTROL`], both ways: [`frame`] refuses to build a larger frame (an
//! [`EncodeError::FrameTooLarge`](etf::EncodeError::FrameTooLarge) for the sender)
//! rather than send one the peer would drop the connection for. The reader's buffer grows only as bytes arrive
//! (to at most twice what has arrived, never by what a length field claims), and is
//! kept while large frames keep coming (`pump.rs`'s `SMALL_FRAMES_TO_SHRINK`).
//!
//! The bytes queued for the writer and not yet written (`queued`) have two limits,
//! the node's [`NodeBuilder::dist_buf_busy_limit`](crate::dist::NodeBuilder::dist_buf_busy_limit)
//! and [`NodeBuilder::dist_buf_hard_limit`](crate::dist::NodeBuilder::dist_buf_hard_limit):
//!
//! * Past the **busy limit** the peer is *busy* (Erlang's `busy_dist_port`): a message
//!   sent with the awaitable [`Context::send`](crate::Context::send) waits, holding
//!   its message, until the writer has written the queue down to the limit, then is
//!   queued; [`Pid::try_send`](crate::Pid::try_send) hands it back as `Full` (Erlang's
//!   `erlang:send(Pid, Msg, [nosuspend])`). Everything else is queued: plain sends
//!   (`pid.send`, [`Node::send_named`](crate::dist::Node::send_named), sends from
//!   outside a process, which have no awaitable form), and every signal, reply and
//!   control message: they are sent from code that cannot wait (an exit, a `Down`,
//!   the reader's answers), where Erlang may suspend the sender of a link or a
//!   monitor too.
//! * Past the **hard limit** the connection is closed: the frame that finds more than
//!   the hard limit queued is not queued, and the connection goes down as it does
//!   when the peer leaves (`Noconnection` to links and monitors). Until then nothing
//!   queued is dropped. Erlang has no hard limit: its plain sends suspend too.
//!
//! So with awaitable senders only, at most the busy limit plus one message per
//! sender that saw the peer not busy at once waits in memory.
//!
//! ## Busy: the wake-up protocol
//!
//! The state is `queued` (bytes) and `flags` (`WAITING`, `CLOSED`). The peer is busy
//! while `queued` exceeds the busy limit and `CLOSED` is not set. An awaitable sender
//! that finds it busy ([`Connection::wait_not_busy`]):
//! 1. files its waker in `busy_waiters`;
//! 2. sets `WAITING` with a `SeqCst` read-modify-write;
//! 3. reads `queued` again (`SeqCst`): if the peer is not busy now (or `CLOSED` was
//!    set), it sends; else it waits.
//!
//! The writer, after each write to the socket, takes the bytes written off `queued`
//! with a `SeqCst` read-modify-write, then reads `flags` (`SeqCst`): if `WAITING` is
//! set and `queued` is at or under the busy limit, it clears `WAITING`, then takes
//! the waiters and wakes them all (each sends one message, or files itself again).
//!
//! The two read-modify-writes and the loads after them form a Dekker pair: either the
//! writer's load sees `WAITING` (and wakes the sender once the queue is under the
//! limit), or the sender's step 3 sees the writer's subtraction. A waiter filed after
//! the writer took the list sets `WAITING` after the writer cleared it, so its step 3
//! sees the queue the writer left, or the next write wakes it. [`Connection::down`]
//! sets `CLOSED` by a read-modify-write, then wakes every waiter: a sender whose step
//! 2 came later reads `CLOSED` and does not wait (its message goes where messages on
//! a closed connection go: nowhere).
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
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;

use crate::dist::connect_error::{Closed, ConnectError};
use crate::dist::control::Control;
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef};
use crate::dist::link::Link;
use crate::dist::node::{NodeEvent, NodeShared};
use crate::dist::remote;
use crate::monitor::{Down, Watcher};
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use crate::process::bonds;
use crate::signal::Kind;
use crate::unwind::catch_panic;

mod pump;
mod setup;

use pump::{run_reader, run_ticker, run_writer};
pub(crate) use setup::{Refusals, get_or_connect, start_acceptor};

/// The largest frame accepted from a peer: a longer length field is taken as garbage,
/// and the connection is dropped.
pub(crate) const MAX_FRAME: usize = 64 << 20;

/// The largest control term accepted (a control message is a short tuple).
pub(crate) const MAX_CONTROL: usize = 64 << 10;

/// The default busy limit (Erlang's `dist_buf_busy_limit`, 1024 KiB): module docs,
/// "Limits".
pub(crate) const DEFAULT_BUSY_LIMIT: usize = 1 << 20;

/// The default hard limit: module docs, "Limits".
pub(crate) const DEFAULT_HARD_LIMIT: usize = 64 << 20;

/// A sender waits for the peer to be not busy (module docs, "Busy").
const WAITING: u8 = 1;
/// The connection went down: nobody waits on it any more.
const CLOSED: u8 = 2;

/// What the writer's mailbox holds.
#[derive(Clone)]
pub(crate) enum Out {
    /// The socket, once the handshake is done.
    Socket(Link),
    /// The reader left TLS records for the peer (`link.rs`): write them.
    Flush,
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
    socket: Option<Link>,
    /// Why this node closed the socket ([`Connection::close`]), for the reader to
    /// take the connection down with, rather than the end of input it then reads.
    closing: Option<Closed>,
}

/// A connection to one peer node.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) peer: Atom,
    /// This connection among all of the process's, for what must name it rather than
    /// its peer: a call sent over it ends with it, not with the peer's next connection
    /// (`call.rs`, `erpc/client.rs`).
    pub(crate) id: u64,
    node: Weak<NodeShared>,
    writer: Pid<Out>,
    state: Mutex<State>,
    /// Frames the reader has read; the ticker watches it.
    received: AtomicU64,
    /// Traffic, for introspection ([`Node::peers`](crate::dist::Node::peers)): bytes the
    /// reader has read in frames (written by the reader alone, a load and a store), and
    /// frames and bytes the writer has written (by the writer alone).
    bytes_in: AtomicU64,
    frames_out: AtomicU64,
    bytes_out: AtomicU64,
    /// Bytes queued for the writer and not yet written (module docs, "Limits").
    queued: AtomicUsize,
    /// `WAITING` and `CLOSED` (module docs, "Busy").
    flags: AtomicU8,
    /// Senders waiting for the peer to be not busy.
    busy_waiters: Mutex<Vec<Waker>>,
    /// The node's limits, copied here: a send reads them without the node.
    busy_limit: usize,
    hard_limit: usize,
    next_unlink: AtomicU64,
}

impl Connection {
    fn new(node: &Arc<NodeShared>, peer: Atom) -> Arc<Connection> {
        Arc::new_cyclic(|me: &Weak<Connection>| {
            let me = me.clone();
            let writer = node
                .handle
                .spawn(move |cx: Context<Out>| run_writer(cx, me));
            static IDS: AtomicU64 = AtomicU64::new(1);
            Connection {
                peer,
                id: IDS.fetch_add(1, Ordering::Relaxed),
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
                    closing: None,
                }),
                received: AtomicU64::new(0),
                bytes_in: AtomicU64::new(0),
                frames_out: AtomicU64::new(0),
                bytes_out: AtomicU64::new(0),
                queued: AtomicUsize::new(0),
                flags: AtomicU8::new(0),
                busy_waiters: Mutex::new(Vec::new()),
                busy_limit: node.busy_limit,
                hard_limit: node.hard_limit.max(node.busy_limit),
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
        self.wait_for(|phase| match phase {
            Phase::Up => Some(Ok(())),
            Phase::Gone(e) => Some(Err(e.clone())),
            Phase::Pending => None,
        })
        .await
    }

    /// Waits until the connection has gone down.
    pub(crate) async fn wait_gone(&self) {
        self.wait_for(|phase| matches!(phase, Phase::Gone(_)).then_some(()))
            .await;
    }

    /// Waits until `ready` answers for the phase; the waiters are woken at each change
    /// of it (`set_up`, `down`).
    async fn wait_for<R>(&self, ready: impl Fn(&Phase) -> Option<R>) -> R {
        poll_fn(|cx| {
            let mut s = self.state();
            match ready(&s.phase) {
                Some(r) => Poll::Ready(r),
                None => {
                    s.waiters.push(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// Queues a frame for the writer; closes the connection instead if more than the
    /// hard limit waits for the peer (module docs, "Limits").
    pub(crate) fn send_frame(&self, frame: Vec<u8>) {
        let before = self.queued.fetch_add(frame.len(), Ordering::SeqCst);
        if before > self.hard_limit {
            self.close(Closed::HardLimit);
            return;
        }
        self.writer.send(Out::Frame(frame));
    }

    /// Whether the peer is busy: more than the busy limit waits for it, and the
    /// connection is not closed (module docs, "Busy").
    pub(crate) fn is_busy(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > self.busy_limit
            && self.flags.load(Ordering::SeqCst) & CLOSED == 0
    }

    /// Steps 1 to 3 of a sender's wait (module docs, "Busy"): files `waker`, and
    /// tells whether the peer is still busy (then the sender waits: `waker` is woken
    /// once it is not, or the connection goes down).
    pub(crate) fn wait_not_busy(&self, waker: &Waker) -> bool {
        {
            let mut w = self
                .busy_waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !w.iter().any(|x| x.will_wake(waker)) {
                w.push(waker.clone());
            }
        }
        let flags = self.flags.fetch_or(WAITING, Ordering::SeqCst);
        flags & CLOSED == 0 && self.queued.load(Ordering::SeqCst) > self.busy_limit
    }

    /// The writer wrote `bytes` of queued frames: takes them off `queued`, and wakes
    /// the waiters if the peer is no longer busy (module docs, "Busy").
    pub(crate) fn written(&self, bytes: usize) {
        add(&self.bytes_out, bytes as u64);
        let now = self.queued.fetch_sub(bytes, Ordering::SeqCst) - bytes;
        if now <= self.busy_limit && self.flags.load(Ordering::SeqCst) & WAITING != 0 {
            self.flags.fetch_and(!WAITING, Ordering::SeqCst);
            self.wake_busy_waiters();
        }
    }

    /// The reader read a frame of `len` bytes (its length word included).
    pub(crate) fn read_frame(&self, len: usize) {
        add(&self.bytes_in, len as u64);
    }

    /// The writer took `n` frames from its mailbox.
    pub(crate) fn took_frames(&self, n: u64) {
        add(&self.frames_out, n);
    }

    /// The connection's traffic and queue, for [`Node::peers`](crate::dist::Node::peers).
    pub(crate) fn peer_info(&self) -> crate::dist::PeerInfo {
        crate::dist::PeerInfo {
            node: self.peer.as_str().to_string(),
            frames_in: self.received.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            frames_out: self.frames_out.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
            busy: self.queued.load(Ordering::Relaxed) > self.busy_limit,
        }
    }

    fn wake_busy_waiters(&self) {
        let waiters = std::mem::take(
            &mut *self
                .busy_waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for w in waiters {
            w.wake();
        }
    }

    /// Encodes and queues a control message without payload.
    pub(crate) fn send_control(&self, node: &Arc<NodeShared>, c: &Control) {
        if let Ok(f) = crate::dist::with_node(node, || frame::<()>(c, None)) {
            self.send_frame(f);
        }
    }

    /// Closes the socket; the reader then takes the connection down, with `why`.
    pub(crate) fn close(&self, why: Closed) {
        let socket = {
            let mut s = self.state();
            let socket = s.socket.clone();
            if socket.is_some() {
                s.closing.get_or_insert(why.clone());
            }
            socket
        };
        match socket {
            Some(s) => s.shutdown(),
            None => {
                if let Some(node) = self.node.upgrade() {
                    self.down(&node, ConnectError::Closed(why));
                }
            }
        }
    }

    /// Why this node closed the socket, if it did ([`Connection::close`]).
    pub(crate) fn closed_here(&self) -> Option<Closed> {
        self.state().closing.clone()
    }

    /// The handshake is done: the writer gets the socket, the waiters and the node
    /// watchers hear it. False if the connection was closed meanwhile (the node
    /// stopped, `disconnect`): then nothing changes and the caller drops the socket.
    fn set_up(self: &Arc<Self>, node: &Arc<NodeShared>, socket: Link) -> bool {
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
        let (was_up, report, links, watching, watched, waiters) = {
            let mut s = self.state();
            if matches!(s.phase, Phase::Gone(_)) {
                return;
            }
            // Reported after the lock (a subscriber is user code), if it was up.
            let was_up = matches!(s.phase, Phase::Up);
            let report = was_up.then(|| (why.reason_text(), why.is_lost()));
            s.phase = Phase::Gone(why);
            s.socket = None;
            (
                was_up,
                report,
                std::mem::take(&mut s.links),
                std::mem::take(&mut s.watching),
                std::mem::take(&mut s.watched),
                std::mem::take(&mut s.waiters),
            )
        };
        if let Some((said, lost)) = &report {
            let (here, peer) = (node.name.as_str(), self.peer.as_str());
            let _ = catch_panic(|| crate::report::connection_down(here, peer, said, *lost));
        }
        self.writer.send(Out::Close);
        // Senders waiting for the peer to be not busy stop waiting (module docs,
        // "Busy").
        self.flags.fetch_or(CLOSED, Ordering::SeqCst);
        self.wake_busy_waiters();
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
        crate::dist::call::connection_down(node, self.id);
        crate::dist::erpc::connection_down(node, self.id);
        remote::retire_connection(node, &self.peer, self.id);
        // Last: while this connection is in the table, a connection to the peer that
        // comes up or that this node starts takes its place there (`setup.rs`); it is
        // not removed.
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

    // Links and monitors of local processes on the peer's processes (`route.rs`).

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

    /// Records a monitor the peer holds on `local` (its watcher `id`); false, and
    /// nothing recorded, once the connection is gone (its teardown has removed, or is
    /// removing, the ones recorded).
    pub(crate) fn add_watched(&self, reference: &ExternalRef, local: RawPid, id: u64) -> bool {
        let mut s = self.state();
        if matches!(s.phase, Phase::Gone(_)) {
            return false;
        }
        s.watched.insert(reference.id.clone(), (local, id));
        true
    }

    pub(crate) fn is_watched(&self, reference: &ExternalRef) -> bool {
        self.state().watched.contains_key(&reference.id)
    }

    pub(crate) fn remove_watched(&self, reference: &ExternalRef) -> Option<(RawPid, u64)> {
        self.state().watched.remove(&reference.id)
    }

    pub(crate) fn is_watching(&self, reference: &ExternalRef) -> bool {
        self.state().watching.contains_key(&reference.id)
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

/// Builds a frame: length, `'p'`, the control term, the payload term if any. A frame
/// over [`MAX_FRAME`] is refused here, as the peer's reader would refuse it.
pub(crate) fn frame<M: Serialize + ?Sized>(
    c: &Control,
    payload: Option<&M>,
) -> Result<Vec<u8>, etf::EncodeError> {
    frame_with(c, |out| match payload {
        Some(p) => etf::encode_into(p, out),
        None => Ok(()),
    })
}

/// Builds a frame whose payload is already encoded (131 included); refused over
/// [`MAX_FRAME`] as [`frame`]'s.
pub(crate) fn frame_raw(c: &Control, payload: &[u8]) -> Result<Vec<u8>, etf::EncodeError> {
    build(c, 64 + payload.len(), |out| {
        out.extend_from_slice(payload);
        Ok(())
    })
}

/// Builds a frame whose payload `encode` appends to the frame itself (the payload is
/// written once, where it is sent from); refused over [`MAX_FRAME`] as [`frame`]'s.
pub(crate) fn frame_with(
    c: &Control,
    encode: impl FnOnce(&mut Vec<u8>) -> Result<(), etf::EncodeError>,
) -> Result<Vec<u8>, etf::EncodeError> {
    build(c, 128, encode)
}

/// Every frame: room for `capacity` bytes, the length word left blank, `'p'`, the
/// control term, what `encode` appends; then the length word, unless the frame is over
/// [`MAX_FRAME`].
fn build(
    c: &Control,
    capacity: usize,
    encode: impl FnOnce(&mut Vec<u8>) -> Result<(), etf::EncodeError>,
) -> Result<Vec<u8>, etf::EncodeError> {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(&[0, 0, 0, 0, b'p']);
    c.encode().encode(&mut out);
    encode(&mut out)?;
    let size = out.len() - 4;
    if size > MAX_FRAME {
        return Err(etf::EncodeError::FrameTooLarge {
            size,
            max: MAX_FRAME,
        });
    }
    // MAX_FRAME fits a u32.
    out[..4].copy_from_slice(&(size as u32).to_be_bytes());
    Ok(out)
}

/// The connection to `peer`, if there is one.
pub(crate) fn get(node: &NodeShared, peer: &Atom) -> Option<Arc<Connection>> {
    node.connections
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(peer)
        .cloned()
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

/// Adds `n` to a counter that has one writer (a load and a store, no read-modify-write).
fn add(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}
