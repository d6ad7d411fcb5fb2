//! The node: a runtime's name in a cluster, its cookie, its registration in epmd, its
//! listener, and its table of connections.
//!
//! # Invariants
//!
//! * A runtime has at most one node, and a node belongs to one runtime: a remote pid
//!   is interned by the node whose connection decoded it (`remote.rs`), and a send to
//!   it goes out on that node's connection to the pid's node.
//! * At most one connection per peer node (the handshake's rule; simultaneous
//!   connection attempts are settled by `otter_dist::handshake::simultaneous_winner`), and
//!   one writer per connection: everything a process sends to a node, messages and
//!   signals alike, is encoded on the sending thread and queued in that writer's
//!   mailbox in program order, so per-pair order holds across the network.
//! * Only a local pid that was encoded into a term leaving this node, or a name
//!   registered here with [`Node::register`], can be sent to from another node: that
//!   is where the decoder for its message type is recorded (`Exported`). A message for
//!   any other local pid is dropped, as one for an exited process is.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::connect_error::{Closed, ConnectError};
use crate::dist::connection::{self, Connection};
use crate::dist::epmd;
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};
use crate::dist::simulated::{self, Listening, Registered};
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use crate::runtime::Handle;

/// How a message from another node reaches a local process of message type `M`:
/// decode the payload into `M` (or into `M::from(BadTerm)`) and send it.
#[derive(Clone, Copy)]
pub(crate) struct Exported {
    pub(crate) pid: RawPid,
    pub(crate) type_id: TypeId,
    pub(crate) deliver: fn(&Arc<NodeShared>, RawPid, &[u8]),
    /// A name exported by local name ([`Node::register_name`]): `pid` is unused, and
    /// each message goes to whoever holds the name in the runtime's registry then.
    pub(crate) by_local_name: bool,
}

impl Exported {
    /// The process a message to the exported name `name` goes to now.
    pub(crate) fn target(&self, node: &NodeShared, name: &Atom) -> Option<RawPid> {
        if self.by_local_name {
            node.handle.registry().lookup(name.as_str(), self.type_id)
        } else {
            Some(self.pid)
        }
    }
}

impl fmt::Debug for Exported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Exported({:?})", self.pid)
    }
}

/// The largest term a [`BadTerm`] keeps whole.
const MAX_BAD_TERM: usize = 1 << 20;

fn deliver<M>(node: &Arc<NodeShared>, to: RawPid, payload: &[u8])
where
    M: DeserializeOwned + From<BadTerm> + Send + 'static,
{
    let message = crate::dist::with_node(node, || match etf::from_slice::<M>(payload) {
        Ok(m) => Some(m),
        // A decoded term takes up to 50 times its encoding: a large one is not kept.
        Err(error) if payload.len() > MAX_BAD_TERM => Some(M::from(BadTerm {
            term: Term::atom("$otter_term_too_large"),
            error: error.to_string(),
        })),
        Err(error) => match Term::decode(payload) {
            Ok(term) => Some(M::from(BadTerm {
                term,
                error: error.to_string(),
            })),
            // A term, as the connection's reader checked, but nested deeper than a
            // `Term` may be (`etf::MAX_DEPTH`).
            Err(_) => Some(M::from(BadTerm {
                term: Term::atom("$otter_term_too_deep"),
                error: error.to_string(),
            })),
        },
    });
    if let Some(m) = message {
        let _ = Pid::<M>::from_raw(to).try_send(m);
    }
}

/// The configuration of a node: [`Node::builder`].
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    name: String,
    cookie: String,
    hidden: bool,
    tick_time: Duration,
    epmd_port: u16,
    busy_limit: usize,
    hard_limit: usize,
    #[cfg(feature = "tls")]
    tls: Option<crate::dist::TlsConfig>,
}

impl NodeBuilder {
    /// The cookie (Erlang's `-setcookie`). Without one, the node reads
    /// `~/.erlang.cookie` as `erl` does, and fails to start if there is none.
    pub fn cookie(mut self, cookie: impl Into<String>) -> Self {
        self.cookie = cookie.into();
        self
    }

    /// Whether the node is hidden (the default): it connects only to the nodes it
    /// talks to, and does not appear in their `nodes()` (only in `nodes(hidden)`). A
    /// node that is not hidden is published as a cluster member, and answers `global`
    /// as a node with no global names ([`crate::dist`], "Visible nodes and `global`").
    pub fn hidden(mut self, hidden: bool) -> Self {
        self.hidden = hidden;
        self
    }

    /// `net_ticktime` (default 60 s, as in OTP): a peer silent for this long is
    /// taken as down; a tick is sent every quarter of it.
    pub fn tick_time(mut self, t: Duration) -> Self {
        self.tick_time = t;
        self
    }

    /// The bytes queued for a peer past which it is *busy* (Erlang's
    /// `dist_buf_busy_limit`, default 1024 KiB as in OTP; `+zdbbl` takes KiB, this
    /// takes bytes): an awaitable [`Context::send`](crate::Context::send) to one of
    /// its processes waits until the queue is written down to this limit, and
    /// [`Pid::try_send`](crate::Pid::try_send) hands the message back as `Full`;
    /// plain sends and signals are queued up to [`NodeBuilder::dist_buf_hard_limit`].
    /// The rules: `dist/connection.rs`, "Limits".
    ///
    /// ```
    /// let b = otter::dist::Node::builder("otter@localhost").dist_buf_busy_limit(4 << 20);
    /// # let _ = b;
    /// ```
    pub fn dist_buf_busy_limit(mut self, bytes: usize) -> Self {
        self.busy_limit = bytes;
        self
    }

    /// The bytes queued for a peer past which its connection is closed (default
    /// 64 MiB; at least the busy limit): the frame that finds more queued is not
    /// sent, and links and monitors across the connection fire `Noconnection`.
    /// Erlang has no such limit (its plain sends to a busy peer suspend too); only
    /// plain sends and signals can reach it, since awaitable sends wait at the busy
    /// limit.
    pub fn dist_buf_hard_limit(mut self, bytes: usize) -> Self {
        self.hard_limit = bytes;
        self
    }

    /// Distribution over TLS (feature `tls`), as `erl -proto_dist inet_tls`: every
    /// connection runs TLS, then the handshake inside it; plain peers are refused
    /// ([`TlsConfig`](crate::dist::TlsConfig), and the module docs' "TLS").
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, config: crate::dist::TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Starts the node on `handle`'s runtime: starts `epmd` if none answers (as `erl`
    /// does), listens on an ephemeral port, registers the name, and accepts
    /// connections. A runtime has at most one node.
    pub fn start(self, handle: &Handle) -> Result<Node, StartError> {
        Node::start(self, handle)
    }
}

/// Why a node did not start.
#[derive(Debug)]
pub enum StartError {
    /// The name is not one `erl -sname`/`-name` takes: `alive@host`, `alive` of ASCII
    /// letters, digits, `_` and `-`, `host` of printable characters (Latin-1, `!` to
    /// `ÿ`) but `@`, both non-empty, 255 characters at most (an atom).
    BadName(String),
    /// No cookie was given and `~/.erlang.cookie` could not be read.
    NoCookie(std::io::Error),
    /// The listener could not be opened.
    Listen(std::io::Error),
    /// `epmd` could not be started, or refused the registration (a node of that name
    /// is already registered, for instance).
    Epmd(String),
    /// The runtime already has a node.
    AlreadyStarted,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::BadName(n) => write!(
                f,
                "bad node name {n:?}: expected alive@host, alive of ASCII letters, digits, \
                 `_` and `-`, host of printable characters without spaces or `@`"
            ),
            StartError::NoCookie(e) => write!(f, "no cookie given and ~/.erlang.cookie: {e}"),
            StartError::Listen(e) => write!(f, "cannot listen: {e}"),
            StartError::Epmd(e) => write!(f, "epmd: {e}"),
            StartError::AlreadyStarted => f.write_str("this runtime already has a node"),
        }
    }
}

impl std::error::Error for StartError {}

/// A node event, as `monitor_node` and `net_kernel:monitor_nodes` report them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A connection to the node is up (`{nodeup, Node}`).
    Up(String),
    /// The connection to the node is down (`{nodedown, Node}`): it closed, failed, or
    /// the peer stopped ticking.
    Down(String),
}

type NodeWatcher = Box<dyn Fn(&NodeEvent) -> bool + Send + Sync>;

/// The shared state of a node.
pub(crate) struct NodeShared {
    pub(crate) name: Atom,
    pub(crate) creation: u32,
    pub(crate) cookie: String,
    pub(crate) hidden: bool,
    pub(crate) tick_time: Duration,
    /// [`NodeBuilder::dist_buf_busy_limit`] and [`NodeBuilder::dist_buf_hard_limit`].
    pub(crate) busy_limit: usize,
    pub(crate) hard_limit: usize,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<crate::dist::TlsConfig>, // NodeBuilder::tls
    pub(crate) handle: Handle,
    pub(crate) connections: Mutex<HashMap<Atom, Arc<Connection>>>,
    pub(crate) names: RwLock<HashMap<Atom, Exported>>,
    pub(crate) exported: RwLock<HashMap<RawPid, Exported>>,
    exported_sweep_at: AtomicU32,
    watchers: Mutex<Vec<(Option<String>, NodeWatcher)>>,
    pub(crate) registration: Mutex<Option<Registered>>,
    /// The port it listens on.
    pub(crate) port: u16,
    /// Calls from other nodes being served (`remote_server.rs`).
    pub(crate) remote_calls: std::sync::atomic::AtomicUsize,
    /// Set by [`Node::stop`]: no connection is made or accepted any more.
    pub(crate) stopped: std::sync::atomic::AtomicBool,
    /// Calls to other nodes' servers waiting for replies (`call.rs`).
    pub(crate) calls: crate::dist::call::Calls,
    /// Functions registered for `erpc`/`rpc`, and this node's calls (`erpc.rs`).
    pub(crate) erpc: crate::dist::erpc::State,
    /// Reference numbers this node hands out (monitors, calls).
    next_ref: std::sync::atomic::AtomicU64,
    /// Monitors of this node's own exported names, by monitor id: the process that
    /// held the name when the monitor was set (`local.rs`).
    pub(crate) local_monitors: Mutex<HashMap<u64, RawPid>>,
    /// The running `pg` scopes (`pg.rs`), the refused connections reported so far
    /// (`connection/setup.rs`), the global names a visible node has heard of
    /// (`global/names.rs`).
    pub(crate) pg: crate::dist::pg::Scopes,
    pub(crate) refusals: crate::dist::connection::Refusals,
    pub(crate) global: crate::dist::global::names::Names,
}

impl fmt::Debug for NodeShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// An otter node in an Erlang cluster (see the [module docs](crate::dist)). Cheap to
/// clone. It runs until [`Node::stop`] or the end of its runtime (whose processes hold
/// its connections and its acceptor).
#[derive(Clone, Debug)]
pub struct Node {
    pub(crate) shared: Arc<NodeShared>,
}

impl Node {
    /// A node named `name` (`alive@host`, as `erl -sname`/`-name` take it).
    pub fn builder(name: impl Into<String>) -> NodeBuilder {
        NodeBuilder {
            name: name.into(),
            cookie: String::new(),
            hidden: true,
            tick_time: Duration::from_secs(60),
            epmd_port: std::env::var("ERL_EPMD_PORT")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(4369),
            busy_limit: connection::DEFAULT_BUSY_LIMIT,
            hard_limit: connection::DEFAULT_HARD_LIMIT,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    fn start(b: NodeBuilder, handle: &Handle) -> Result<Node, StartError> {
        let alive = check_name(&b.name).ok_or_else(|| StartError::BadName(b.name.clone()))?;
        let cookie = if b.cookie.is_empty() {
            let home = std::env::var("HOME").unwrap_or_default();
            std::fs::read_to_string(format!("{home}/.erlang.cookie"))
                .map(|c| c.trim().to_string())
                .map_err(StartError::NoCookie)?
        } else {
            b.cookie.clone()
        };
        let (listener, port, creation, registration) = match simulated::network(handle) {
            Some((net, ip)) => {
                let host = b.name.split_once('@').map_or("", |(_, h)| h);
                simulated::start(&net, ip, alive, host)?
            }
            None => {
                let listener =
                    std::net::TcpListener::bind(("0.0.0.0", 0)).map_err(StartError::Listen)?;
                let port = listener.local_addr().map_err(StartError::Listen)?.port();
                epmd::ensure_running(b.epmd_port).map_err(|e| StartError::Epmd(e.to_string()))?;
                let registration = epmd::register(alive, port, b.hidden)
                    .map_err(|e| StartError::Epmd(e.to_string()))?;
                let creation = registration.creation();
                (
                    Listening::Os(listener),
                    port,
                    creation,
                    Registered::Epmd(registration),
                )
            }
        };
        let shared = Arc::new(NodeShared {
            name: Atom::new(&b.name),
            creation,
            cookie,
            hidden: b.hidden,
            tick_time: b.tick_time,
            busy_limit: b.busy_limit,
            hard_limit: b.hard_limit,
            #[cfg(feature = "tls")]
            tls: b.tls.clone(),
            handle: handle.clone(),
            connections: Mutex::new(HashMap::new()),
            names: RwLock::new(HashMap::new()),
            exported: RwLock::new(HashMap::new()),
            exported_sweep_at: AtomicU32::new(1024),
            watchers: Mutex::new(Vec::new()),
            registration: Mutex::new(Some(registration)),
            port,
            remote_calls: Default::default(),
            stopped: Default::default(),
            calls: Default::default(),
            erpc: Default::default(),
            next_ref: std::sync::atomic::AtomicU64::new(1),
            local_monitors: Mutex::new(HashMap::new()),
            pg: Default::default(),
            refusals: Default::default(),
            global: Default::default(),
        });
        if !handle.set_node() {
            return Err(StartError::AlreadyStarted);
        }
        crate::dist::route::install();
        let node = Node { shared };
        if !b.hidden {
            // Before the first connection: peers start `global`'s handshake on `nodeup`.
            crate::dist::global::start(&node);
        }
        connection::start_acceptor(&node.shared, listener).map_err(StartError::Listen)?;
        Ok(node)
    }

    /// The node's name, `alive@host`.
    pub fn name(&self) -> &str {
        self.shared.name.as_str()
    }

    /// Each connection's traffic and output queue (introspection: Erlang's
    /// `erlang:port_info/2` of a distribution port, or `inet:getstat/1`), sorted by node
    /// name. Counted by the connection's reader and writer, one writer each.
    pub fn peers(&self) -> Vec<PeerInfo> {
        let c = self
            .shared
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<PeerInfo> = c
            .values()
            .filter(|c| c.is_up())
            .map(|c| c.peer_info())
            .collect();
        drop(c);
        v.sort_by(|a, b| a.node.cmp(&b.node));
        v
    }

    /// The nodes this node is connected to.
    pub fn nodes(&self) -> Vec<String> {
        let c = self
            .shared
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<String> = c
            .iter()
            .filter(|(_, c)| c.is_up())
            .map(|(n, _)| n.as_str().to_string())
            .collect();
        v.sort();
        v
    }

    /// Connects to `node` (`net_kernel:connect_node/1`) and waits until the handshake
    /// is done; right after [`Node::disconnect`], a new connection, as in Erlang. Sends
    /// and signals connect on demand as well; this is for a caller that wants to know.
    pub async fn connect(&self, node: &str) -> Result<(), ConnectError> {
        let Some(peer) = Atom::try_new(node) else {
            return Err(ConnectError::BadName(node.to_string()));
        };
        loop {
            let conn = connection::get_or_connect(&self.shared, &peer);
            if conn.closed_here().is_none() {
                return conn.wait_up().await;
            }
            conn.wait_gone().await;
        }
    }

    /// Closes the connection to `node` (`erlang:disconnect_node/1`); its links and
    /// monitors fire with `Noconnection`. Whether there was one.
    pub fn disconnect(&self, node: &str) -> bool {
        let Some(peer) = Atom::try_new(node) else {
            return false;
        };
        let conn = self
            .shared
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&peer)
            .cloned();
        match conn {
            Some(c) => {
                c.close(Closed::Disconnected);
                true
            }
            None => false,
        }
    }

    /// Registers `pid` under `name` for other nodes: `{Name, ThisNode} ! Msg` from
    /// Erlang decodes `Msg` into `M` and sends it to `pid`. A term that does not
    /// decode into `M` arrives as `M::from(BadTerm)`. Replaces an earlier
    /// registration of the name.
    ///
    /// # Panics
    ///
    /// If `name` is longer than 255 characters (Erlang's limit for an atom).
    pub fn register<M>(&self, name: &str, pid: Pid<M>)
    where
        M: DeserializeOwned + From<BadTerm> + Send + 'static,
    {
        let e = exported::<M>(pid.raw);
        self.shared.export_name(name, e);
    }

    /// Registers `name` for other nodes as the name of whichever process holds it in
    /// this runtime's registry ([`Context::register`](crate::Context::register), with
    /// message type `M`) when a message arrives: `{Name, ThisNode} ! Msg` from Erlang
    /// decodes `Msg` into `M` and sends it there, and is dropped while no process of
    /// that type has the name. In Erlang the two registries are one; here a name
    /// exported this way follows the local one, so a process restarted under its name
    /// is reached again. Replaces an earlier registration of the name.
    ///
    /// # Panics
    ///
    /// If `name` is longer than 255 characters (Erlang's limit for an atom).
    pub fn register_name<M>(&self, name: &str)
    where
        M: DeserializeOwned + From<BadTerm> + Send + 'static,
    {
        let e = Exported {
            by_local_name: true,
            ..exported::<M>(RawPid {
                index: 0,
                generation: 0,
            })
        };
        self.shared.export_name(name, e);
    }

    /// Removes a name registered with [`Node::register`]; whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        let Some(name) = Atom::try_new(name) else {
            return false;
        };
        self.shared
            .names
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&name)
            .is_some()
    }

    /// Sends `message` to the process registered as `name` on `node`
    /// (`{Name, Node} ! Message`), connecting first if needed. As in Erlang, the send
    /// does not fail if there is no such process or node: the message is dropped.
    /// `from` is the pid the peer sees as the sender. An error only if `message`
    /// cannot be encoded. Given this node's own name, the message goes to the process
    /// exported under `name` here, as `{Name, node()} ! Message` does (`local.rs`).
    /// Like `pid.send`, it never waits: to a busy peer the message is queued, up to
    /// [`NodeBuilder::dist_buf_hard_limit`]; a process that should wait sends to
    /// [`Node::remote_name`]'s pid with the awaitable
    /// [`Context::send`](crate::Context::send) instead.
    pub fn send_named<M: Serialize + ?Sized, F>(
        &self,
        from: Pid<F>,
        name: &str,
        node: &str,
        message: &M,
    ) -> Result<(), etf::EncodeError> {
        let too_long = |s: &str| etf::EncodeError::AtomTooLong(s.to_string());
        let peer = Atom::try_new(node).ok_or_else(|| too_long(node))?;
        let to = Atom::try_new(name).ok_or_else(|| too_long(name))?;
        let control = crate::dist::control::Control::RegSend {
            from: self.shared.external_pid(from.raw),
            to,
        };
        if peer == self.shared.name {
            // `{Name, node()} ! Message` (`local.rs`).
            let payload = crate::dist::with_node(&self.shared, || etf::to_vec(message))?;
            crate::dist::local::deliver(&self.shared, &control, &payload);
            return Ok(());
        }
        let conn = connection::get_or_connect(&self.shared, &peer);
        let frame =
            crate::dist::with_node(&self.shared, || connection::frame(&control, Some(message)))?;
        conn.send_frame(frame);
        Ok(())
    }

    /// A typed pid for a process of another node known by its Erlang pid (from a
    /// [`Term`]); sends to it encode `M`.
    pub fn remote_pid<M: Serialize + Send + 'static>(&self, pid: &ExternalPid) -> Pid<M> {
        crate::dist::route::register_encoder::<M>();
        Pid::from_raw(crate::dist::remote::intern(&self.shared, pid, &pid.node))
    }

    /// A pid standing for the process registered as `name` on `node` (Erlang's
    /// `{Name, Node}`): a send to it goes by name (`{Name, Node} ! Msg`, to whichever
    /// process holds the name when it arrives), [`Context::monitor`](crate::Context::monitor)
    /// on it monitors the name (`monitor(process, {Name, Node})`: `Noproc` if no process
    /// has it, the holder's exit reason otherwise), and the `Down` names this pid.
    /// Erlang links to pids only: a link to it is answered with the exit signal
    /// `Noproc`. Given this node's own name, it stands for the name exported here
    /// (`local.rs`): sends reach its holder, a monitor monitors its holder.
    pub fn remote_name<M: Serialize + Send + 'static>(&self, name: &str, node: &str) -> Pid<M> {
        crate::dist::route::register_encoder::<M>();
        let (Some(name), Some(node)) = (Atom::try_new(name), Atom::try_new(node)) else {
            // Not atoms: a pid that resolves to nothing (sends are dropped).
            return Pid::from_raw(RawPid {
                index: crate::dist::remote::REMOTE | (u32::MAX >> 1),
                generation: u32::MAX,
            });
        };
        Pid::from_raw(crate::dist::remote::intern_name(&self.shared, &node, &name))
    }

    /// Calls `monitor` for every node event, until it returns false
    /// (`net_kernel:monitor_nodes/1`); only the events of `node` if one is given. The
    /// events are those of connections that came up: a connection attempt that fails
    /// is no event here ([`Node::monitor_node`] reports it to its process).
    pub fn monitor_nodes(
        &self,
        node: Option<&str>,
        monitor: impl Fn(&NodeEvent) -> bool + Send + Sync + 'static,
    ) {
        self.shared
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((node.map(str::to_string), Box::new(monitor)));
    }

    /// Sends every node event to `pid` as a message (`net_kernel:monitor_nodes(true)`),
    /// while `pid` lives.
    pub fn monitor_nodes_to<M: From<NodeEvent> + Send + 'static>(&self, pid: Pid<M>) {
        self.monitor_nodes(None, move |e| pid.try_send(M::from(e.clone())).is_ok());
    }

    /// Monitors `node` for `pid` (`monitor_node(Node, true)`): `pid` gets
    /// `NodeEvent::Down(node)` once, when the connection goes down, or at once if it
    /// cannot be made (no epmd knows the name, the name is none, the handshake fails),
    /// as Erlang's `nodedown`. Only `pid` hears of a connection that never came up:
    /// the watchers of [`Node::monitor_nodes`] hear of connections that were up.
    pub fn monitor_node<M: From<NodeEvent> + Send + 'static>(&self, pid: Pid<M>, node: &str) {
        let down = {
            let node = node.to_string();
            move || {
                let _ = pid.try_send(M::from(NodeEvent::Down(node.clone())));
            }
        };
        let Some(peer) = Atom::try_new(node) else {
            down();
            return;
        };
        let conn = connection::get_or_connect(&self.shared, &peer);
        // Both the watcher (the connection goes down after it was up) and the waiter
        // (it never comes up) may see the end: the first to see it reports it.
        let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let name = node.to_string();
        let (f, report) = (fired.clone(), down.clone());
        self.monitor_nodes(Some(node), move |e| {
            if f.load(Ordering::Acquire) {
                return false;
            }
            if matches!(e, NodeEvent::Down(n) if *n == name) {
                if !f.swap(true, Ordering::AcqRel) {
                    report();
                }
                return false;
            }
            true
        });
        if conn.is_up() {
            return;
        }
        self.shared.handle.spawn(move |_: Context<()>| async move {
            if conn.wait_up().await.is_err() && !fired.swap(true, Ordering::AcqRel) {
                down();
            }
        });
    }

    /// Stops the node: unregisters from epmd, closes every connection (their links and
    /// monitors fire with `Noconnection`).
    pub fn stop(&self) {
        self.shared.stop();
    }
}

impl NodeShared {
    /// Registers `name` for other nodes (replacing an earlier registration): what
    /// [`Node::register`] and its kind do. Panics past Erlang's 255 characters.
    pub(crate) fn export_name(&self, name: &str, e: Exported) {
        self.names
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(Atom::new(name), e);
    }

    /// This node's pid term for a local pid.
    pub(crate) fn external_pid(&self, raw: RawPid) -> ExternalPid {
        if let Some((_, p)) = crate::dist::remote::resolve(raw) {
            return p;
        }
        ExternalPid {
            node: self.name.clone(),
            id: raw.index,
            serial: raw.generation,
            creation: self.creation,
        }
    }

    /// The local pid a pid term of this node names, if it is one (an index with the
    /// remote bit is none: `remote.rs`).
    pub(crate) fn local_pid(&self, p: &ExternalPid) -> Option<RawPid> {
        (p.node == self.name
            && p.creation == self.creation
            && p.id & crate::dist::remote::REMOTE == 0)
            .then_some(RawPid {
                index: p.id,
                generation: p.serial,
            })
    }

    /// A fresh reference of this node.
    pub(crate) fn make_ref(&self) -> ExternalRef {
        let n = self.next_ref.fetch_add(1, Ordering::Relaxed);
        ExternalRef {
            node: self.name.clone(),
            creation: self.creation,
            id: vec![n as u32 & 0x3ffff, (n >> 18) as u32, (n >> 50) as u32],
        }
    }

    /// Records that `raw` may be sent to from other nodes, as a process of message
    /// type `M` (its pid was encoded into a term leaving the node).
    pub(crate) fn export(&self, e: Exported) {
        let mut t = self
            .exported
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        t.insert(e.pid, e);
        // Forget the exited processes once the table has doubled since the last sweep.
        let at = self.exported_sweep_at.load(Ordering::Relaxed) as usize;
        if t.len() >= at {
            t.retain(|pid, _| crate::pid::ProcessId(*pid).is_alive());
            self.exported_sweep_at
                .store((t.len() * 2).max(1024) as u32, Ordering::Relaxed);
        }
    }

    /// Reports a node event to the watchers, and drops those that are done.
    pub(crate) fn node_event(&self, e: &NodeEvent) {
        let node = match e {
            NodeEvent::Up(n) | NodeEvent::Down(n) => n.as_str(),
        };
        let mut w = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        w.retain(|(only, f)| {
            if only.as_deref().is_some_and(|o| o != node) {
                return true;
            }
            f(e)
        });
    }

    pub(crate) fn stop(&self) {
        if self.stopped.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wakes the acceptor, which sees `stopped` and closes the listener.
        match simulated::network(&self.handle) {
            Some((net, ip)) => drop(net.connect(ip, (ip, self.port).into())),
            None => drop(std::net::TcpStream::connect(("127.0.0.1", self.port))),
        }
        self.registration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let conns: Vec<_> = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for c in conns {
            c.close(Closed::NodeStopped);
        }
    }
}

/// The alive part of `name` if it is a node name `erl` takes (`net_kernel`'s
/// `valid_name_head` for the part before `@`, its host name check, and `inet_tcp`'s
/// one `@`): see [`StartError::BadName`].
fn check_name(name: &str) -> Option<&str> {
    let (alive, host) = name.split_once('@')?;
    let alive_ok = !alive.is_empty()
        && alive
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| ('!'..='\u{ff}').contains(&c) && c != '@');
    (alive_ok && host_ok && Atom::try_new(name).is_some()).then_some(alive)
}

/// The decoder record of a local process of message type `M`.
pub(crate) fn exported<M>(pid: RawPid) -> Exported
where
    M: DeserializeOwned + From<BadTerm> + Send + 'static,
{
    Exported {
        pid,
        type_id: TypeId::of::<M>(),
        deliver: deliver::<M>,
        by_local_name: false,
    }
}

/// One connection's traffic and output queue ([`Node::peers`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's name.
    pub node: String,
    /// Frames read from it, ticks included.
    pub frames_in: u64,
    /// Bytes read from it in frames (length words included).
    pub bytes_in: u64,
    /// Frames written to it, ticks excluded.
    pub frames_out: u64,
    /// Bytes written to it.
    pub bytes_out: u64,
    /// Bytes queued for it and not yet written.
    pub queued: usize,
    /// Whether `queued` is past the busy limit
    /// ([`NodeBuilder::dist_buf_busy_limit`]): awaited sends to it wait.
    pub busy: bool,
}
