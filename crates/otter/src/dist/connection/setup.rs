//! How a connection comes up: the attempt this node makes (epmd's port, the TCP
//! connect, the handshake as initiator) and the ones it accepts, with the handshake's
//! rules for simultaneous attempts and for a peer that comes back (`alive`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::{Connection, Phase, run_reader};
use crate::dist::connect_error::{Closed, ConnectError, TlsHandshakeError};
use crate::dist::etf::Atom;
use crate::dist::link::Link;
use crate::dist::node::NodeShared;
use crate::dist::{epmd, handshake};
use crate::net::TcpStream;
use crate::process::Context;
use crate::timer::timeout;

/// The connection to `peer`, started if there is none. One that has gone down but is
/// still in the table (its `down` is telling its links and monitors) counts as none,
/// as it does for an accepted attempt: a `Node::connect` right after a connection's
/// loss, or a send, starts a new one instead of getting the old one's error.
pub(crate) fn get_or_connect(node: &Arc<NodeShared>, peer: &Atom) -> Arc<Connection> {
    let mut c = node
        .connections
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(conn) = c.get(peer)
        && !conn.is_gone()
    {
        return conn.clone();
    }
    let conn = Connection::new(node, peer.clone());
    if node.stopped.load(Ordering::Acquire) || *peer == node.name {
        drop(c);
        let why = if *peer == node.name {
            ConnectError::BadName(peer.as_str().to_string())
        } else {
            ConnectError::Closed(Closed::NodeStopped)
        };
        conn.down(node, why);
        return conn;
    }
    c.insert(peer.clone(), conn.clone());
    drop(c);
    let (n, k) = (node.clone(), conn.clone());
    node.handle
        .spawn(move |_: Context<()>| async move { run_connect(n, k).await });
    conn
}

async fn run_connect(node: Arc<NodeShared>, conn: Arc<Connection>) {
    let peer = conn.peer.as_str().to_string();
    let Some((alive, host)) = peer.split_once('@') else {
        conn.down(&node, ConnectError::BadName(peer));
        return;
    };
    let (alive, host) = (alive.to_string(), host.to_string());
    let looked = match crate::dist::simulated::network(&node.handle) {
        Some((net, ip)) => crate::dist::simulated::port_please(&net, ip, &host, &alive),
        None => {
            crate::blocking::spawn_blocking({
                let host = host.clone();
                move || epmd::port_please(&host, &alive).map(|a| a.port)
            })
            .await
        }
    };
    let port = match looked {
        Ok(port) => port,
        Err(e) => return conn.attempt_failed(&node, ConnectError::NotFound(Arc::new(e))),
    };
    let stream = match TcpStream::connect_host(format!("{host}:{port}")).await {
        Ok(s) => s,
        Err(e) => return conn.attempt_failed(&node, ConnectError::Io(Arc::new(e))),
    };
    let _ = stream.set_nodelay(true);
    let local = local_node(&node);
    // One time limit for TLS's handshake and distribution's.
    let deadline = crate::time::now() + SETUP_TIME;
    let mut link = match timeout(left(deadline), open_link(&node, stream, Some(&host))).await {
        Ok(Ok(link)) => link,
        Ok(Err(e)) => return conn.attempt_failed(&node, ConnectError::Tls(Arc::new(e))),
        Err(_) => return conn.attempt_failed(&node, ConnectError::Timeout { tls: true }),
    };
    let shook = timeout(
        left(deadline),
        handshake::connect_unless(&mut link, &local, &peer, || {
            let s = conn.state();
            matches!(s.phase, Phase::Pending) && !s.accepting
        }),
    )
    .await;
    match shook {
        Ok(Ok(_)) => run_reader(node, conn, link).await,
        Ok(Err(
            handshake::HandshakeError::Refused(handshake::Status::Nok)
            | handshake::HandshakeError::Withdrawn,
        )) => {
            // The peer is connecting to us at the same time, and its attempt wins:
            // this connection waits for it (its queued frames will go out on it), for
            // one handshake's time at most.
            drop(link);
            if timeout(SETUP_TIME, conn.wait_up()).await.is_err() {
                conn.attempt_failed(&node, ConnectError::Simultaneous);
            }
        }
        Ok(Err(e)) => conn.attempt_failed(&node, ConnectError::Handshake(Arc::new(e))),
        Err(_) => conn.attempt_failed(&node, ConnectError::Timeout { tls: false }),
    }
}

/// The handshake's time limit (OTP's `net_setuptime` default is 7 s).
const SETUP_TIME: Duration = Duration::from_secs(7);

/// What is left of the time to `deadline` (none once it has passed).
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(crate::time::now())
}

/// The stream a handshake runs over: the TCP connection itself, or TLS over it
/// when the node is set up for TLS (`tls.rs`): as the client to `host` (the host
/// part of the peer's name) when this node connects, as the server when `host` is
/// `None`.
async fn open_link(
    node: &NodeShared,
    stream: TcpStream,
    host: Option<&str>,
) -> Result<Link, TlsHandshakeError> {
    let sock = stream.into_shared();
    #[cfg(feature = "tls")]
    if let Some(tls) = &node.tls {
        let link = match host {
            Some(host) => crate::dist::tls::connect(tls, sock, host).await?,
            None => crate::dist::tls::accept(tls, sock).await?,
        };
        return Ok(Link::Tls(Arc::new(link)));
    }
    let _ = (node, host);
    Ok(Link::Tcp(sock))
}

fn local_node(node: &NodeShared) -> handshake::LocalNode {
    let local =
        handshake::LocalNode::new(node.name.as_str(), node.creation, node.hidden, &node.cookie);
    #[cfg(feature = "tls")]
    if node.tls.is_some() {
        return local.over_tls();
    }
    local
}

/// Spawns the acceptor process on `listener`.
pub(crate) fn start_acceptor(
    node: &Arc<NodeShared>,
    listener: crate::dist::simulated::Listening,
) -> std::io::Result<()> {
    let weak = Arc::downgrade(node);
    node.handle.spawn(move |cx: Context<()>| async move {
        let Ok(listener) = listener.open() else {
            return;
        };
        loop {
            let (stream, _) = listener.accept_next().await;
            let Some(node) = weak.upgrade() else {
                return;
            };
            if node.stopped.load(Ordering::Acquire) {
                // Dropping the listener closes it.
                return;
            }
            cx.spawn(move |_: Context<()>| run_accept(node, stream));
        }
    });
    Ok(())
}

async fn run_accept(node: Arc<NodeShared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let local = local_node(&node);
    let peer_addr = stream.peer_addr();
    let deadline = crate::time::now() + SETUP_TIME;
    let mut link = match timeout(left(deadline), open_link(&node, stream, None)).await {
        Ok(Ok(link)) => link,
        Ok(Err(e)) => return refused(&node, &peer_addr, &format!("TLS: {e}")),
        Err(_) => return refused(&node, &peer_addr, "the TLS handshake timed out"),
    };
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
    let shook = timeout(left(deadline), handshake::accept(&mut link, &local, decide)).await;
    let conn = match (chosen, replaces, &shook) {
        (Some(conn), _, _) => conn,
        (None, Some(old), Ok(Ok(peer))) => {
            // `alive` answered `true`: the old connection is dead to the peer.
            old.close(Closed::Replaced);
            old.down(&node, ConnectError::Closed(Closed::Replaced));
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
        Ok(Ok(_)) => run_reader(node, conn, link).await,
        Ok(Err(e)) => {
            let peer = conn.peer.as_str().to_string();
            node.refusals
                .report(node.name.as_str(), peer, "handshake", &e.to_string());
            conn.state().accepting = false;
            conn.down(&node, ConnectError::Handshake(Arc::new(e)));
        }
        Err(_) => {
            conn.state().accepting = false;
            conn.down(&node, ConnectError::Timeout { tls: false });
        }
    }
}

/// A connection refused before its peer named itself (its TLS handshake failed):
/// reported by its IP address (not its port, which each attempt changes).
fn refused(node: &NodeShared, addr: &std::io::Result<std::net::SocketAddr>, why: &str) {
    let peer = match addr {
        Ok(a) => a.ip().to_string(),
        Err(_) => "an unknown address".to_string(),
    };
    node.refusals.report(node.name.as_str(), peer, "tls", why);
}

/// The refused connections a node has reported: each peer (its node name, else its IP
/// address) and kind of refusal once, and at most [`MAX_REFUSALS_LOGGED`] in the node's
/// life, so that a peer that keeps trying cannot flood the log.
#[derive(Default, Debug)]
pub(crate) struct Refusals(std::sync::Mutex<std::collections::HashSet<(String, &'static str)>>);

/// The most refusals a node reports ([`Refusals`]).
const MAX_REFUSALS_LOGGED: usize = 1024;

impl Refusals {
    fn report(&self, node: &str, peer: String, kind: &'static str, why: &str) {
        let first = {
            let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            seen.len() < MAX_REFUSALS_LOGGED && seen.insert((peer.clone(), kind))
        };
        if first {
            crate::report::connection_refused(node, &peer, why);
        }
    }
}
