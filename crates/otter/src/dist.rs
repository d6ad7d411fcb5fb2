//! Distribution: an otter node in an Erlang cluster, over Erlang's own distribution
//! protocol (feature `dist`, on by default).
//!
//! A [`Node`] gives a runtime a name (`otter@host`), registers it in `epmd` (started
//! if none answers, as `erl` does), accepts and makes connections with the version 6
//! handshake and a cookie, and from then on the processes of the runtime and those of
//! the cluster's Erlang (and otter) nodes talk as local processes do:
//!
//! * **Sending.** A `Pid<M>` may name a process of another node: `pid.send(m)`
//!   encodes `m` as an Erlang term and queues it on the connection; the awaitable
//!   `cx.send(pid, m).await` waits first while the peer is busy (its queue over
//!   [`NodeBuilder::dist_buf_busy_limit`]: "Differences from Erlang" below). A local send pays
//!   nothing for this: remote pids are never found in the process table, and only the
//!   send path's "no such process" branch looks further (`dist/remote.rs`).
//!   [`Node::send_named`] is `{Name, Node} ! Msg`, and [`Node::remote_name`] gives a
//!   `Pid<M>` standing for `{Name, Node}` (sends go by name, a monitor of it is
//!   Erlang's `monitor(process, {Name, Node})`). Given the node's own name, these and
//!   [`Node::call`] act locally, as `{Name, node()}` does in Erlang, on the names the
//!   node exports to its peers (`dist/local.rs`).
//! * **Receiving.** A process receives from other nodes once its pid has gone out in a
//!   term (a `Pid<M>` inside a message), or under a name registered with
//!   [`Node::register`]; each message is decoded into its type `M`, and a term that
//!   does not decode arrives as `M::from(`[`BadTerm`]`)`, never as a panic. A process
//!   of type [`etf::Term`] takes anything. [`Node::register_name`] exports a name of
//!   the runtime's own registry instead: messages go to whoever holds it then (Erlang
//!   has one registry; here the name follows the local one, so a process restarted
//!   under it is reached again).
//! * **Links, monitors and exits** cross nodes with Erlang's rules: `cx.link`,
//!   `cx.monitor`, `cx.exit` on a remote pid send `LINK`, `MONITOR_P`, `EXIT2`; a
//!   remote process's exit comes back as an exit signal or a `Down`; a lost
//!   connection fires every link and monitor across it with `Noconnection`.
//!   [`Node::monitor_node`] and [`Node::monitor_nodes`] report `NodeEvent::Up`/`Down`.
//! * **gen_server calls**, both ways: [`Node::call`] calls an Erlang `gen_server`;
//!   a [`RemoteServer`] registered with [`Node::register_server`] (that server) or
//!   [`Node::register_server_name`] (whichever server holds the local name, as OTP's
//!   `{local, Name}`: a supervised server keeps its callers across restarts) answers
//!   `gen_server:call({Name, Node}, Request)` and `gen_server:cast`. `net_adm:ping/1` from Erlang
//!   answers `pong`.
//!   An [`ErlangServer`] is a `RemoteServer` whose own `Call` and `Cast` are what
//!   other nodes send: one request enum for Rust and Erlang callers, the reply handle
//!   made by the runtime; [`shapes`] has Erlang's `{ok, T}` / `{error, E}` and
//!   tagged tuples as types.
//! * **erpc and rpc**, both ways: [`Node::register_rpc`] (a sync closure) and
//!   [`Node::register_rpc_async`] (a future on the call's process) give a Rust function
//!   a module and function name that Erlang's `erpc:call(Node, M, F, Args)`,
//!   `erpc:cast`, `rpc:call` and `rpc:cast` reach, the arguments decoded with serde
//!   (`(i64, i64)` for `[A, B]`); what it raises ([`Raise`]) comes back in `erpc`'s
//!   classes (`error`/`exit`/`throw`, `{badrpc, _}` for `rpc`), an unregistered
//!   function as `error:undef`, arguments that do not decode as
//!   `error:function_clause`. A small built-in set answers an operator's first
//!   questions (`erlang:processes/0`, `process_info/2`, `registered/0`, `memory/0`,
//!   `system_info(process_count)`). [`Node::erpc_call`] and [`Node::erpc_cast`] call
//!   Erlang functions, failures as [`ErpcError`]. The wire protocol (a distributed
//!   spawn: `SPAWN_REQUEST`/`SPAWN_REPLY` and the monitor's exit) and the tables are in
//!   `dist/erpc.rs`.
//! * **Process groups**: [`Node::pg_scope`] runs a scope of Erlang's `pg` (OTP 23+)
//!   that speaks `pg`'s protocol with the scopes of the same name on the connected
//!   nodes, Erlang's and otter's: one membership, typed `Pid<M>` members, join and
//!   leave notices, members gone with their process or their node ([`pg`]).
//! * **System messages**: the same registered servers answer OTP's `sys` from other
//!   nodes (`sys:get_state({Name, Node})` gives [`Server::format_status`](crate::server::Server::format_status)'s text,
//!   `sys:get_status`, `sys:suspend`/`resume`, `sys:trace`, `sys:statistics`) and
//!   `gen_server:stop({Name, Node})`; `sys:replace_state` is refused (an Erlang fun
//!   cannot run here). The table is in `dist/system.rs`.
//! * **Supervisors**: a supervisor registered with [`Node::register_supervisor`]
//!   answers `supervisor:which_children({Name, Node})` and `count_children` in OTP's
//!   shapes, its child supervisors through their pids ([`SupervisorRequest`]).
//! * **Reply addresses in terms**: an [`Alias`] (Erlang's `alias()`, any reference
//!   in a term) can be sent to (`Alias ! Msg`), and a [`CallFrom`] (the `From` of a
//!   `{'$gen_call', From, Request}` a plain process receives) answered with
//!   `gen_server:reply`'s rule: to the caller's alias for `[alias | Ref]` tags, to
//!   its pid for plain reference tags.
//!
//! # Terms
//!
//! Messages are Rust types that derive serde's `Serialize`/`Deserialize`; the mapping
//! to Erlang terms is in [`etf`]. `Pid<M>` maps to a pid, and so does a server's
//! [`ServerRef`](crate::server::ServerRef) when the server is a [`RemoteServer`]
//! (Erlang can then call, monitor and link to it by pid).
//!
//! # Security
//!
//! Plain Erlang distribution is not encrypted, and the cookie is its only
//! authentication: a peer that knows it can do anything the protocol allows (here:
//! send to exported processes, link, monitor, send exit signals). Run it on a trusted
//! network, or with TLS (next section). The cookie is checked both ways in the
//! handshake, over TLS too: a peer with a wrong cookie is refused, reported (a
//! `tracing` warning of target `otter::dist`, [`crate::report`]), and nothing it sent
//! is delivered. Bad input
//! after the handshake (a frame that does not decode, a frame over 64 MiB or a control
//! term over 64 KiB, a signal that claims a sender of another node) drops the
//! connection: its links and monitors fire `Noconnection`, and the node goes on. The
//! term decoder bounds every allocation by the bytes present and nesting at
//! [`etf::MAX_DEPTH`]; atoms are values (there is no atom table to fill). A message
//! nested deeper than that is refused alone: its receiver gets `M::from(BadTerm)`
//! whose term is the atom `'$otter_term_too_deep'`, and the connection stays up.
//!
//! # TLS
//!
//! With the feature `tls`, [`NodeBuilder::tls`] makes every connection of the node
//! TLS (rustls), as `erl -proto_dist inet_tls` does, and interoperates with it: the
//! TLS handshake first, then the distribution handshake inside it (with 4-byte
//! lengths, as `inet_tls_dist` frames it), the cookie still checked. Both sides show a
//! certificate and verify the other's against the CA certificates given; a node
//! connecting also checks that the peer's certificate names the host part of its node
//! name. A TLS node refuses plain peers, and says why: a plain node's handshake at its
//! listener fails with "the peer did not speak TLS" (reported as above), its own
//! attempt to reach a plain node fails with an error that asks whether the peer is set
//! up for TLS; a plain otter node that receives a TLS hello says "the peer started
//! TLS". Details: [`TlsConfig`].
//!
//! A two-node setup, step by step (one CA, one certificate per host; the same files
//! serve both nodes here since they run on one host):
//!
//! 1. Make a CA and a node certificate that names the host (with `-sname`, the short
//!    host name; add `localhost` and the IP if peers use them), for instance with
//!    `openssl`:
//!    ```text
//!    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
//!        -subj /CN=cluster-ca -keyout ca.key -out ca.pem
//!    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
//!        -subj /CN=$(hostname -s) -keyout node.key -out node.csr
//!    openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 \
//!        -extfile <(printf "subjectAltName=DNS:$(hostname -s),DNS:localhost,IP:127.0.0.1") \
//!        -out node.pem
//!    ```
//! 2. Tell `erl` about them in `ssl_dist.conf` (OTP's `-ssl_dist_optfile`):
//!    ```text
//!    [{server, [{certfile, "node.pem"}, {keyfile, "node.key"}, {cacertfile, "ca.pem"},
//!               {verify, verify_peer}, {fail_if_no_peer_cert, true}]},
//!     {client, [{certfile, "node.pem"}, {keyfile, "node.key"}, {cacertfile, "ca.pem"},
//!               {verify, verify_peer}]}].
//!    ```
//!    and start it: `erl -sname erl -setcookie secret -proto_dist inet_tls
//!    -ssl_dist_optfile ssl_dist.conf`.
//! 3. Start the otter node on the same three files:
//!    ```no_run
//!    # fn main() -> Result<(), Box<dyn std::error::Error>> {
//!    use otter::dist::{Node, TlsConfig};
//!    let rt = otter::Runtime::new();
//!    let tls = TlsConfig::from_pem_files("node.pem", "node.key", "ca.pem")?;
//!    let host = "myhost"; // `hostname -s`
//!    let node = Node::builder(format!("otter@{host}"))
//!        .cookie("secret")
//!        .tls(tls)
//!        .start(&rt.handle())?;
//!    # let _ = node;
//!    # Ok(()) }
//!    ```
//! 4. From the Erlang shell, `net_adm:ping('otter@myhost')` answers `pong`; a node
//!    started without `-proto_dist inet_tls` gets `pang`.
//!
//! `tests/dist_tls.rs` does the same with certificates it makes, against real `erl`
//! nodes, both ways.
//!
//! # Visible nodes and `global`
//!
//! A hidden node (the default) connects only to the nodes it talks to, and its peers'
//! `global` leaves it alone. A visible node (`hidden(false)`) is a cluster member: it is
//! in `nodes()` on its Erlang peers and raises `nodeup` for `net_kernel:monitor_nodes`,
//! and each peer's `global_name_server` starts `global`'s handshake with it (locks
//! on both nodes, an exchange of names), which `global:sync()` waits for. So a
//! visible node runs a built-in process registered as `global_name_server`
//! (`dist/global.rs`) that answers that handshake as a node with no global names
//! would:
//!
//! * `global:sync()` on its Erlang peers returns, the otter node among their synced
//!   nodes; a peer that hears of it from another (`global`'s `new_nodes`) connects
//!   to it and syncs too, as in an all-Erlang cluster.
//! * Global names registered among the Erlang nodes work while it is connected:
//!   `global:register_name/2` locks every known node, the otter node included, and
//!   the otter node grants every lock and accepts every registration, so
//!   `global:whereis_name/1` and `global:registered_names/0` on Erlang nodes are what
//!   they would be without it.
//! * [`Node::global_whereis_name`] and [`Node::global_registered_names`] read the
//!   names the node has heard of: those its peers listed when they synced with it,
//!   registered and unregistered since (every registration calls every known node),
//!   and those their joins with other nodes brought; a name goes when its process
//!   exits or the connection to its node goes, as on an Erlang node. On a hidden node
//!   they find nothing.
//!
//! What it does not do:
//!
//! * Register global names: there is no `global:register_name` on the otter side, and
//!   the node tells its peers it holds no names. Registering would need what the otter
//!   server leaves out: a lock table that refuses a lock held by another requester and
//!   frees the locks of a requester that exits or whose node goes (the server grants
//!   every lock, so the Erlang nodes alone arbitrate `global`'s locks, the otter
//!   node's boss role included); the active side of the handshake and a list of known
//!   nodes, to lock them all (`global:trans`'s `set_lock` calls to every known node,
//!   then `{register, Name, Pid, Method}` to each, this node included); its own names
//!   sent in `exchange`; and the resolution of a name clash found in an exchange,
//!   which runs the name's `Method`, an Erlang fun, on the node of one of the two
//!   pids (`rpc:call(Node, global, resolve_it, ...)`): for an otter pid, only the
//!   default methods (`global:random_exit_name/3` and its kind) could be honoured, by
//!   their names.
//! * `global:set_lock/1,2` and `global:trans/2` run among the Erlang nodes: the otter
//!   node says yes to every lock, so a lock is exclusive only through the Erlang nodes
//!   it is also set on (every `global` lock includes the caller's own node).
//! * `prevent_overlapping_partitions` (OTP 25's default): the server ignores
//!   `lost_connection` notices, so the otter node does not disconnect from a node
//!   that another node lost; Erlang peers that get such a notice about the otter node
//!   do disconnect from it, as they would from an Erlang node.
//! * `global_groups` are not known to the otter node.
//!
//! Known defect: an Erlang peer's `global` locker has been seen (twice, in CI, around
//! reconnections under load) to log a `set_lock` reply from the otter node as an
//! unexpected message: the reply reached it after its `gen_server:multi_call` had
//! given the otter node up. `global` goes on, and syncs and registrations succeed; the
//! cause is not found.
//!
//! # Differences from Erlang
//!
//! * A remote pid is valid for the life of the connection it came over: after the
//!   connection goes down, sends to it are dropped even if the node comes back
//!   (Erlang keeps it valid for the same node incarnation). The pid of
//!   [`Node::remote_name`] is not a process's: it stands for `{Name, Node}`, and sends
//!   to it go by name again once the node is back.
//! * The node is hidden by default ([`NodeBuilder::hidden`]). A visible node takes
//!   part in `global` as a node that holds no names ("Visible nodes and `global`"
//!   above): it looks names up, but cannot register them.
//! * `{Name, node()}` ([`Node::call`], [`Node::send_named`], [`Node::remote_name`]
//!   given the node's own name) reaches the names exported to peers
//!   ([`Node::register`] and the like), not the runtime's typed local registry
//!   (Erlang has one registry): the message is encoded and decoded as for a peer.
//! * A message whose frame is larger than 64 MiB is refused both ways (Erlang has no
//!   such limit): on the way in the connection drops, as above; on the way out the
//!   sender gets [`etf::EncodeError::FrameTooLarge`] ([`Node::send_named`],
//!   [`Node::call`]; `try_send` to a remote pid hands the message back, `send` drops
//!   it and reports it, a `tracing` warning of target `otter::dist`) and the connection
//!   stays up.
//! * A node name is checked as `erl -sname`/`-name` checks it ([`StartError::BadName`]).
//! * [`etf::Term`] is a Rust tree: one that local code builds tens of thousands of
//!   levels deep overflows the worker's stack when it is dropped or encoded, which
//!   aborts the OS process (Rust's recursive drop; an Erlang term has no such limit).
//!   Terms from the wire stop at [`etf::MAX_DEPTH`].
//! * No `sys` messages: `sys:get_state({Name, Node})` and `gen_server:stop` on a
//!   [`RemoteServer`] time out (the server sees them as a [`BadTerm`]). A call whose
//!   request does not decode is answered `{error, {bad_call, Request}}` by default
//!   ([`RemoteServer::bad_call`]), as by an Erlang server's catch-all clause; an OTP
//!   server without one would crash instead, and its caller exit.
//! * A distributed spawn on an otter node runs only `erpc`'s entry points, for the
//!   functions registered with [`Node::register_rpc`] (and the built-in set): any
//!   other (`spawn(OtterNode, M, F, A)`) is refused with `notsup`. A function
//!   registered for `erpc` has one arity: other argument counts are
//!   `function_clause`, not `undef`. A function called on an Erlang node by
//!   [`Node::erpc_call`] has the calling process as its group leader, which answers no
//!   I/O: one that prints waits until the call's timeout.
//! * No atom cache, no fragmented messages (otter does not announce those
//!   capabilities, so peers do not use them).
//! * Backpressure (`busy_dist_port`): once more than
//!   [`NodeBuilder::dist_buf_busy_limit`] bytes (default 1024 KiB, OTP's) wait for a
//!   peer, it is busy: the awaitable `cx.send(pid, m).await` to its processes waits
//!   until the queue is written down to the limit, as Erlang suspends the sender,
//!   and `pid.try_send(m)` hands the message back as `Full` (Erlang's
//!   `erlang:send(Pid, Msg, [nosuspend])`). Plain sends never wait, as they never
//!   block anywhere (`pid.send`, [`Node::send_named`], and every send from outside a
//!   process, which has no awaitable form): they queue up to
//!   [`NodeBuilder::dist_buf_hard_limit`] (default 64 MiB), and the first frame past
//!   it closes the connection (`Noconnection` to links and monitors); Erlang has no
//!   hard limit and suspends plain senders too. Signals, replies and control
//!   messages are never held back. Nothing queued is dropped while the connection is
//!   up. The rules and the wake-up protocol: `dist/connection.rs`, "Limits".
//! * Exit reasons map to terms as [`RemoteReason`]'s docs say: the atoms of
//!   `ExitReason`'s variants, `{shutdown, _}`, `{panic, <<Message>>}`, and any other
//!   term as `ExitReason::Error(RemoteReason(term))`.
//! * A link to [`Node::remote_name`]'s pid is refused with `Noproc` (Erlang's `link/1`
//!   takes pids only).

/// Erlang's external term format with its serde mapping: the `otter-otp-dist` crate's
/// (`otter_dist::etf`), which holds the distribution's protocol (ARCHITECTURE.md,
/// "Distribution").
pub use otter_dist::etf;
// The rest of the protocol, as the modules below name it (`crate::dist::handshake`..).
use otter_dist::{control, epmd, handshake};

mod alias;
mod bad_term;
mod call;
mod connect_error;
pub(crate) mod connection;
mod erpc;
#[cfg(test)]
mod fuzz;
mod global;
mod link;
mod local;
mod node;
pub mod pg;
pub(crate) mod pid_serde;
mod reason;
mod receive;
pub(crate) mod remote;
mod remote_server;
mod remote_supervisor;
pub(crate) mod route;
pub mod shapes;
mod simulated;
mod system;
#[cfg(test)]
mod tests;
#[cfg(feature = "tls")]
mod tls;
mod wire_error;

use std::cell::RefCell;
use std::sync::Arc;

pub use alias::{Alias, AliasError, CallFrom};
pub use bad_term::BadTerm;
pub use call::RemoteCallError;
pub use connect_error::{Closed, ConnectError, EpmdError, HandshakeError, TlsHandshakeError};
pub use erpc::{ErpcError, MAX_IN_FLIGHT, Raise};
pub use node::{Node, NodeBuilder, NodeEvent, PeerInfo, StartError};
pub use reason::RemoteReason;
pub use remote_server::{BadCall, ErlangRequest, ErlangServer, RemoteServer};
pub use remote_supervisor::{SupervisorReply, SupervisorRequest};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::{TlsConfig, TlsError};

use node::NodeShared;

thread_local! {
    /// The node encoding or decoding on this thread (`Pid<M>`'s serde needs it).
    static CURRENT: RefCell<Option<Arc<NodeShared>>> = const { RefCell::new(None) };
    /// The peer whose connection the terms being decoded came over, and that
    /// connection's id (`remote.rs`: entries are retired with that connection).
    static VIA: RefCell<Option<(etf::Atom, u64)>> = const { RefCell::new(None) };
}

/// Runs `f` while decoding what came over the connection `conn` (its id) to `peer`.
pub(crate) fn with_via<R>(peer: &etf::Atom, conn: u64, f: impl FnOnce() -> R) -> R {
    let old = VIA.with(|c| c.replace(Some((peer.clone(), conn))));
    struct Restore(Option<(etf::Atom, u64)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let old = self.0.take();
            VIA.with(|c| *c.borrow_mut() = old);
        }
    }
    let _restore = Restore(old);
    f()
}

/// The peer set by [`with_via`] on this thread, if any.
pub(crate) fn current_via() -> Option<etf::Atom> {
    VIA.with(|c| c.borrow().as_ref().map(|(peer, _)| peer.clone()))
}

/// The id of the connection to `peer` set by [`with_via`] on this thread; 0 if none
/// is, or one to another peer.
pub(crate) fn current_via_conn(peer: &etf::Atom) -> u64 {
    VIA.with(|c| match &*c.borrow() {
        Some((p, id)) if p == peer => *id,
        _ => 0,
    })
}

/// Runs `f` with `node` as the node that encodes and decodes pids.
pub(crate) fn with_node<R>(node: &Arc<NodeShared>, f: impl FnOnce() -> R) -> R {
    let old = CURRENT.with(|c| c.replace(Some(node.clone())));
    struct Restore(Option<Arc<NodeShared>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let old = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = old);
        }
    }
    let _restore = Restore(old);
    f()
}

/// The node set by [`with_node`] on this thread, if any.
pub(crate) fn current_node() -> Option<Arc<NodeShared>> {
    CURRENT.with(|c| c.borrow().clone())
}
