//! What a node does with each control message it receives (the reader's side of
//! `connection.rs`), in the order they arrive.

use std::sync::{Arc, PoisonError};

use crate::dist::connection::{Connection, monitor_id};
use crate::dist::control::{Control, Target};
use crate::dist::etf::{Atom, ExternalPid, ExternalRef, Term};
use crate::dist::node::NodeShared;
use crate::dist::{reason, remote};
use crate::monitor::{Down, Notify, Watcher, next_id};
use crate::process::bonds;
use crate::signal::Kind;
use crate::unwind::catch_panic;

/// Acts on `c`. An error (a signal that claims to come from a process of another node
/// than the peer) takes the connection down.
pub(crate) fn control(
    node: &Arc<NodeShared>,
    conn: &Arc<Connection>,
    c: Control,
    payload: &[u8],
) -> Result<(), String> {
    if let Some(from) = c.sender()
        && from.node != conn.peer
    {
        return Err(format!(
            "a signal from {from:?}, not a process of {}",
            conn.peer
        ));
    }
    crate::dist::with_via(&conn.peer, conn.id, || act(node, conn, c, payload));
    Ok(())
}

fn act(node: &Arc<NodeShared>, conn: &Arc<Connection>, c: Control, payload: &[u8]) {
    match c {
        Control::Send { to } => {
            if let Some(raw) = node.local_pid(&to) {
                let e = node
                    .exported
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&raw)
                    .copied();
                if let Some(e) = e {
                    // User code (`Deserialize`, `From<BadTerm>`): a panic loses this
                    // message, not the connection.
                    let _ = catch_panic(|| (e.deliver)(node, raw, payload));
                }
            }
        }
        Control::RegSend { from, to } => reg_send(node, from, &to, payload),
        Control::AliasSend { alias, .. } => {
            crate::dist::call::alias_reply(node, &conn.peer, &alias, payload)
        }
        Control::Link { from, to } => {
            let remote = remote::intern(node, &from, &conn.peer);
            let accepted = node.local_pid(&to).is_some_and(|local| {
                conn.add_link(local, remote) && {
                    let ok = bonds::attach_link(local, remote, false);
                    if !ok {
                        conn.remove_link(local, remote);
                    }
                    ok
                }
            });
            if !accepted {
                conn.send_control(
                    node,
                    &Control::Exit {
                        from: to,
                        to: from,
                        reason: Some(Term::atom("noproc")),
                    },
                );
            }
        }
        Control::Exit {
            from,
            to,
            reason: r,
        } => {
            if let Some(local) = node.local_pid(&to) {
                let remote = remote::intern(node, &from, &conn.peer);
                conn.remove_link(local, remote);
                let r = r.map_or(crate::ExitReason::Normal, |t| reason::from_term(&t));
                let _ = catch_panic(|| bonds::signal(local, remote, r, Kind::Link));
            }
        }
        Control::Exit2 {
            from,
            to,
            reason: r,
        } => {
            if let Some(local) = node.local_pid(&to) {
                let remote = remote::intern(node, &from, &conn.peer);
                let r = r.map_or(crate::ExitReason::Normal, |t| reason::from_term(&t));
                let _ = catch_panic(|| bonds::signal(local, remote, r, Kind::Exit));
            }
        }
        Control::Unlink { from, to } => unlink(node, conn, &from, &to),
        Control::UnlinkId { id, from, to } => {
            unlink(node, conn, &from, &to);
            conn.send_control(
                node,
                &Control::UnlinkIdAck {
                    id,
                    from: to,
                    to: from,
                },
            );
        }
        Control::UnlinkIdAck { .. } => {}
        Control::Monitor {
            from,
            to,
            reference,
        } => monitor(node, conn, from, to, reference),
        Control::Demonitor { reference, .. } => {
            if let Some((local, id)) = conn.remove_watched(&reference) {
                bonds::remove_watcher(local, id);
            }
        }
        Control::MonitorExit {
            reference,
            reason: r,
            ..
        } => {
            if crate::dist::erpc::monitor_exit(node, &conn.peer, &reference, r.as_ref()) {
                return;
            }
            if crate::dist::call::monitor_exit(
                node,
                &conn.peer,
                &reference,
                r.as_ref()
                    .map_or(crate::ExitReason::Normal, reason::from_term),
            ) {
                return;
            }
            if monitor_id(node, &reference).is_none() {
                return;
            }
            if let Some((target, watcher)) = conn.remove_watching(&reference) {
                let down = Down {
                    reference: watcher.reference(target),
                    pid: crate::ProcessId(target),
                    reason: r.map_or(crate::ExitReason::Normal, |t| reason::from_term(&t)),
                };
                if let Ok(Some(w)) = catch_panic(|| watcher.notify(down)) {
                    w.wake();
                }
            }
        }
        Control::SpawnRequest {
            req_id,
            from,
            module,
            function,
            arity,
            opts,
            ..
        } => crate::dist::erpc::spawn_request(
            node, conn, req_id, from, &module, &function, arity, &opts, payload,
        ),
        Control::SpawnReply { req_id, result, .. } => {
            crate::dist::erpc::spawn_reply(node, &conn.peer, &req_id, result)
        }
        Control::Other(..) => {}
    }
}

fn unlink(node: &Arc<NodeShared>, conn: &Connection, from: &ExternalPid, to: &ExternalPid) {
    if let Some(local) = node.local_pid(to) {
        let remote = remote::intern(node, from, &conn.peer);
        conn.remove_link(local, remote);
        bonds::unlink_one_side(local, remote);
    }
}

fn monitor(
    node: &Arc<NodeShared>,
    conn: &Arc<Connection>,
    from: ExternalPid,
    to: Target,
    reference: ExternalRef,
) {
    let local = match &to {
        Target::Pid(p) => node.local_pid(p),
        Target::Name(n) => node
            .names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(n)
            .copied()
            .and_then(|e| e.target(node, n)),
    };
    let exit = |reason: Term| Control::MonitorExit {
        from: to.clone(),
        to: from.clone(),
        reference: reference.clone(),
        reason: Some(reason),
    };
    let Some(local) = local else {
        // The node's own services live as long as the node: their monitors never
        // fire (the peer sees `noconnection` if the connection goes).
        if matches!(&to, Target::Name(n) if SERVICES.contains(&n.as_str())) {
            return;
        }
        conn.send_control(node, &exit(Term::atom("noproc")));
        return;
    };
    if conn.is_watched(&reference) {
        // The same reference twice: the monitor is already there.
        return;
    }
    let id = next_id();
    let (weak_node, weak_conn) = (Arc::downgrade(node), Arc::downgrade(conn));
    let (t2, f2, r2) = (to.clone(), from.clone(), reference.clone());
    let watcher = Watcher {
        id,
        owner: None,
        notify: Notify::Message(Box::new(move |down: Down| {
            if let (Some(n), Some(c)) = (weak_node.upgrade(), weak_conn.upgrade()) {
                c.remove_watched(&r2);
                c.send_control(
                    &n,
                    &Control::MonitorExit {
                        from: t2,
                        to: f2,
                        reference: r2,
                        reason: Some(reason::to_term(&down.reason)),
                    },
                );
            }
            None
        })),
    };
    // A monitor read after the connection went down has no one to answer (the reader
    // may still be acting on frames read before).
    if !conn.add_watched(&reference, local, id) {
        return;
    }
    if let Err(w) = bonds::add_watcher(local, watcher) {
        conn.remove_watched(&reference);
        drop(w);
        conn.send_control(node, &exit(Term::atom("noproc")));
    } else if conn.is_gone() {
        // Gone since it was recorded: the teardown may have passed the watcher by.
        bonds::remove_watcher(local, id);
    }
}

/// The largest request the node's own services decode.
const SERVICE_REQUEST: usize = 64 << 10;

/// The names the node answers itself (`reg_send`).
const SERVICES: [&str; 2] = ["net_kernel", "rex"];

/// A message to a registered name: the node's own services, or a name registered
/// with `Node::register`.
fn reg_send(node: &Arc<NodeShared>, from: ExternalPid, to: &Atom, payload: &[u8]) {
    let e = node
        .names
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(to)
        .copied();
    if let Some(e) = e {
        // A name exported by local name that nobody holds now: dropped, as a send to
        // a name nobody holds.
        if let Some(pid) = e.target(node, to) {
            let _ = catch_panic(|| (e.deliver)(node, pid, payload));
        }
        return;
    }
    let _ = from;
    let peer = crate::dist::current_via();
    match to.as_str() {
        // `net_adm:ping/1`: `{'$gen_call', From, {is_auth, Node}}` answered `yes`.
        "net_kernel" if payload.len() <= SERVICE_REQUEST => {
            if let Ok(Term::Tuple(t)) = Term::decode(payload)
                && t.len() == 3
                && t[0] == Term::atom("$gen_call")
            {
                reply_gen_call(node, &t[1], Term::atom("yes"));
            }
        }
        // `rpc:call/4` through `rex`, from a peer without `DFLAG_SPAWN` (`erpc.rs`).
        "rex" if payload.len() <= SERVICE_REQUEST => {
            if let Some(peer) = peer {
                crate::dist::erpc::rex(node, &peer, payload);
            }
        }
        _ => {}
    }
}

/// Answers a `gen_server` call whose `From` is `from` (`{Pid, Tag}`), as
/// [`CallFrom::reply`](crate::dist::CallFrom::reply) does (`alias.rs`).
pub(crate) fn reply_gen_call(node: &Arc<NodeShared>, from: &Term, reply: Term) {
    let Term::Tuple(f) = from else { return };
    let [Term::Pid(pid), tag] = &f[..] else {
        return;
    };
    let message = Term::Tuple(vec![tag.clone(), reply]);
    let mut payload = Vec::new();
    message.encode(&mut payload);
    let sent = match crate::dist::alias::alias_of(tag) {
        Some(alias) => crate::dist::alias::send_to_alias(node, alias, &payload),
        None => crate::dist::alias::send_to_pid(node, pid, &payload),
    };
    if let Err(e) = sent {
        // The caller's monitor or timeout ends its call, as if the server had crashed.
        crate::report::dist_fault(
            "reply_failed",
            &format_args!("a reply to {pid:?} was not sent: {e}"),
        );
    }
}
