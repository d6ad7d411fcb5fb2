//! `global` on a visible node: a built-in process registered as `global_name_server`
//! that speaks the handshake of OTP's `global` (protocol version 8) for a node that
//! holds no global names, so that Erlang peers sync with the otter node instead of
//! waiting for it for ever.
//!
//! # Why
//!
//! A visible node's Erlang peers get `nodeup` for it, and their `global_name_server`
//! starts a handshake with `{global_name_server, OtterNode}`: it sends its
//! `init_connect`, waits for the otter node's, then its locker sets a lock on both
//! nodes (a `gen_server` call `{set_lock, Id}` to each node's server) and waits for the
//! other side's `lock_set`; then both exchange their names, resolve conflicts, and
//! each adds the other to its known nodes. `global:sync()` returns once every node of
//! `nodes()` is synced; `global:register_name/2` locks every known node. Without an
//! answer, `global:sync()` on every Erlang peer hangs, and so does its locker.
//!
//! # What the server does
//!
//! The messages and answers are in `global/wire.rs`. In short, the otter node takes
//! the passive side of each step: it sends its own `init_connect` when a connection
//! comes up (once per connection, with a fresh tag, and again with a new tag when the
//! peer cancels and restarts its side), answers a peer locker's `lock_set` with its own
//! and with an `exchange` of no names, answers the peer's `exchange` with a `resolved`
//! of no operations, tells the nodes the peer knows that it is `in_sync` with them (as
//! Erlang's `sync_others` does, connecting to them), and answers every lock request
//! `true`, every registration `yes`. Its tags are checked: a `lock_set` or `exchange`
//! of an earlier handshake (another tag) is ignored.
//!
//! # Invariants
//!
//! * The node holds no names and no locks: it sends no names in `exchange`, its
//!   `resolved` has no operations, and its known nodes are `[]`. The names it hears
//!   of are a view for [`Node::global_whereis_name`] (`global/names.rs`), never sent.
//! * A message must come from the node it names (`init_connect`'s, `exchange`'s and
//!   `resolved`'s `Node`, `lock_set`'s locker): anything else, and anything not one of
//!   `global`'s messages, is refused and reported (a `tracing` warning of target
//!   `otter::dist`) once per peer node and kind of fault, [`MAX_LOGGED`] in all.
//! * The server runs on visible nodes only, from the node's start for its life: a
//!   hidden node's peers never start `global`'s handshake with it. Its name is one of
//!   the names the node exports ([`Node::register`]'s): a later registration of
//!   `global_name_server` takes the name from it, and the peers' handshakes then go
//!   to that process.

pub(crate) mod names;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::dist::connection;
use crate::dist::control::Control;
use crate::dist::etf::{Atom, ExternalPid, Term};
use crate::dist::node::{Exported, Node, NodeEvent, NodeShared};
use crate::monitor::Down;
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use wire::{Message, WireError};

/// The name of the server, on every node.
pub(crate) const NAME: &str = "global_name_server";

/// The most distinct faults the server logs (peer node, kind); after that, none.
const MAX_LOGGED: usize = 1024;

/// What the server receives.
pub(crate) enum Inbound {
    /// A message from another node's process, decoded on the connection's reader
    /// (`via`: the peer of that connection; `conn`: the connection, to tell a call
    /// that came over one since gone).
    Peer {
        via: Atom,
        conn: Option<std::sync::Weak<connection::Connection>>,
        message: Result<Message, WireError>,
    },
    /// A connection came up or went down.
    Node(NodeEvent),
    /// A pid that holds a global name exited, or its node went (`global/names.rs`).
    Down(Down),
}

impl From<Down> for Inbound {
    fn from(d: Down) -> Inbound {
        Inbound::Down(d)
    }
}

/// Starts the server of a visible node and registers it for peers: before the node
/// accepts connections, so that the first peer finds it.
pub(crate) fn start(node: &Node) {
    let shared = node.shared.clone();
    let pid = shared.handle.spawn({
        let shared = shared.clone();
        move |cx: Context<Inbound>| run(cx, shared)
    });
    let e = Exported {
        pid: pid.raw,
        type_id: std::any::TypeId::of::<Inbound>(),
        deliver,
        by_local_name: false,
    };
    shared.export(e);
    shared.export_name(NAME, e);
    node.monitor_nodes(None, move |e| {
        pid.try_send(Inbound::Node(e.clone())).is_ok()
    });
}

/// A peer's handshake: our tag for it, and its tag for us once its `init_connect`
/// came.
struct Peer {
    my_tag: i64,
    his_tag: Option<Term>,
}

struct Server {
    node: Arc<NodeShared>,
    pid: Pid<Inbound>,
    /// The monitors of the names the node has heard of.
    names: names::Table,
    /// The server's pid as peers know it (also the node's "locker").
    me: ExternalPid,
    /// The peers whose connection is up, by node.
    peers: HashMap<Atom, Peer>,
    next_tag: i64,
    logged: HashSet<(Atom, &'static str)>,
}

async fn run(mut cx: Context<Inbound>, node: Arc<NodeShared>) {
    let me = node.external_pid(cx.pid().raw);
    let mut s = Server {
        node,
        pid: cx.pid(),
        names: names::Table::default(),
        me,
        peers: HashMap::new(),
        next_tag: 1,
        logged: HashSet::new(),
    };
    loop {
        match cx.recv().await {
            Inbound::Node(NodeEvent::Up(n)) => {
                if let Some(n) = Atom::try_new(&n)
                    && !s.peers.contains_key(&n)
                {
                    s.connect(&n);
                }
            }
            Inbound::Node(NodeEvent::Down(n)) => {
                if let Some(n) = Atom::try_new(&n) {
                    s.peers.remove(&n);
                }
            }
            Inbound::Peer { via, conn, message } => s.message(&via, conn, message),
            Inbound::Down(d) => s.names.down(&s.node, &d),
        }
    }
}

impl Server {
    /// Starts this side of the handshake with `peer`: a fresh tag, our `init_connect`.
    fn connect(&mut self, peer: &Atom) {
        if *peer == self.node.name {
            return;
        }
        let my_tag = self.next_tag;
        self.next_tag += 1;
        let his_tag = self.peers.remove(peer).and_then(|p| p.his_tag);
        self.peers.insert(peer.clone(), Peer { my_tag, his_tag });
        let m = wire::init_connect(&self.node.name, my_tag, &self.me);
        self.send(peer, &m, false);
    }

    /// Sends `payload` to `{global_name_server, peer}`: over the connection that is up
    /// (Erlang's `noconnect`), or connecting if `connect`.
    fn send(&self, peer: &Atom, payload: &[u8], connect: bool) {
        let conn = if connect {
            Some(connection::get_or_connect(&self.node, peer))
        } else {
            connection::get(&self.node, peer).filter(|c| c.is_up())
        };
        let Some(c) = conn else { return };
        let control = Control::RegSend {
            from: self.me.clone(),
            to: Atom::new(NAME),
        };
        if let Ok(f) = connection::frame_raw(&control, payload) {
            c.send_frame(f);
        }
    }

    /// Whether `tag` is our tag of the handshake with `peer` now.
    fn current(&self, peer: &Atom, tag: Option<&Term>) -> bool {
        self.peers
            .get(peer)
            .is_some_and(|p| tag.is_none_or(|t| *t == Term::Int(p.my_tag)))
    }

    fn message(
        &mut self,
        via: &Atom,
        conn: Option<std::sync::Weak<connection::Connection>>,
        message: Result<Message, WireError>,
    ) {
        let m = match message {
            Ok(m) => m,
            Err(e) => {
                return self.log_once(via, "malformed", || {
                    format!("a message from {via} refused: {e}")
                });
            }
        };
        if *via == self.node.name {
            return;
        }
        let named = match &m {
            Message::InitConnect { node, .. }
            | Message::Exchange { node, .. }
            | Message::Resolved { node, .. }
            | Message::CancelConnect { node, .. } => Some(node),
            Message::LockSet { locker, .. } => Some(&locker.node),
            _ => None,
        };
        if let Some(n) = named
            && n != via
        {
            return self.log_once(via, "forged node", || {
                format!("a message from {via} claims to come from {n}: refused")
            });
        }
        match m {
            Message::InitConnect { node, his_tag } => {
                if !self.peers.contains_key(&node) {
                    if !connection::get(&self.node, &node).is_some_and(|c| c.is_up()) {
                        // Read before its connection went down: the next connection
                        // brings a new `init_connect`.
                        return;
                    }
                    // Its connection's `Up` has not reached us yet.
                    self.connect(&node);
                }
                if let Some(p) = self.peers.get_mut(&node) {
                    p.his_tag = Some(his_tag);
                }
            }
            Message::LockSet { locker, set, tag } => {
                let node = locker.node.clone();
                if !set || !self.current(&node, tag.as_ref()) {
                    return;
                }
                let Some(his_tag) = self.peers.get(&node).and_then(|p| p.his_tag.clone()) else {
                    return;
                };
                let reply = wire::lock_set(&self.me, tag.as_ref().map(|_| &his_tag));
                self.send(&node, &reply, false);
                self.send(&node, &wire::exchange(&self.node.name, &his_tag), false);
            }
            Message::Exchange { node, names, tag } => {
                if !self.current(&node, Some(&tag)) {
                    return;
                }
                for (name, pid) in names {
                    self.names.insert(&self.node, self.pid, name, pid);
                }
                if let Some(his_tag) = self.peers.get(&node).and_then(|p| p.his_tag.clone()) {
                    self.send(&node, &wire::resolved(&self.node.name, &his_tag), false);
                }
            }
            Message::Resolved { known, .. } => self.sync_others(known),
            Message::NewNodes { nodes, ops } => {
                self.sync_others(nodes);
                for op in ops {
                    match op {
                        wire::Op::Insert(name, pid) => {
                            self.names.insert(&self.node, self.pid, name, pid)
                        }
                        wire::Op::Delete(name) => self.names.delete(&self.node, &name),
                    }
                }
            }
            Message::CancelConnect { node, tag } => {
                if self.current(&node, Some(&tag)) {
                    self.connect(&node);
                }
            }
            Message::Call { from, request } => {
                // A call that came over a connection since gone is not answered: its
                // caller's monitor has fired (`noconnection`), and a late reply on the
                // next connection would reach a locker that has moved on.
                let current = connection::get(&self.node, via);
                let same = conn
                    .and_then(|c| c.upgrade())
                    .zip(current)
                    .is_some_and(|(c, now)| Arc::ptr_eq(&c, &now) && now.is_up());
                if !same {
                    return;
                }
                let reply = request.reply();
                match request {
                    wire::Request::Register { name, pid } => {
                        self.names.insert(&self.node, self.pid, name, pid)
                    }
                    wire::Request::Unregister { name } => self.names.delete(&self.node, &name),
                    wire::Request::Other(r) => {
                        return self.log_once(via, "unknown call", || {
                            format!("a call {r} from {via} not answered")
                        });
                    }
                    _ => {}
                }
                if let Some(reply) = reply {
                    crate::dist::receive::reply_gen_call(&self.node, &from, reply);
                }
            }
            Message::Ignored(_) => {}
        }
    }

    /// Erlang's `sync_others`: the nodes a peer knows hear that this one is in sync
    /// with them (they wait for it in `global:sync()`); connecting, as Erlang does.
    fn sync_others(&self, nodes: Vec<Atom>) {
        let m = wire::in_sync(&self.node.name);
        for n in nodes {
            if n != self.node.name {
                self.send(&n, &m, true);
            }
        }
    }

    fn log_once(&mut self, via: &Atom, kind: &'static str, line: impl FnOnce() -> String) {
        if self.logged.len() >= MAX_LOGGED || !self.logged.insert((via.clone(), kind)) {
            return;
        }
        let line = format!("{NAME}: {} (logged once per node and kind)", line());
        crate::report::dist_fault("global", &line);
    }
}

/// How a message from another node reaches the server: decoded here, on the
/// connection's reader, with the peer it came from (`node.rs`'s `Exported`).
fn deliver(node: &Arc<NodeShared>, to: RawPid, payload: &[u8]) {
    let via = crate::dist::current_via().unwrap_or_else(|| node.name.clone());
    let conn = connection::get(node, &via).map(|c| Arc::downgrade(&c));
    let message = wire::decode(payload);
    let _ = Pid::<Inbound>::from_raw(to).try_send(Inbound::Peer { via, conn, message });
}
