//! The outgoing side: a send, link, unlink, exit signal or monitor whose other end is
//! a remote pid, from the core's "not a local process" branches (`process/send.rs`,
//! `process/bonds.rs`), through the core's door [`crate::remote::Distribution`], which
//! [`install`] opens when a node starts.
//!
//! A send to a remote `Pid<M>` needs `M`'s encoder, but `Pid::send` asks only
//! `M: Send`: the encoder is found by `M`'s `TypeId` in a table filled by every way a
//! remote `Pid<M>` comes to be ([`register_encoder`] is called by `Pid<M>`'s
//! `Deserialize` and by `Node::remote_pid`, both of which require `M: Serialize`).
//! So every remote `Pid<M>` that exists has its encoder registered.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use serde::Serialize;

use crate::dist::connection::{self, monitor_ref};
use crate::dist::control::{Control, Target};
use crate::dist::etf::{self, ExternalPid};
use crate::dist::{reason, remote};
use crate::exit::ExitReason;
use crate::monitor::{Down, Watcher};
use crate::pid::RawPid;
use crate::remote::{Busy, RemoteSend};
use crate::signal::Kind;

type Encode = fn(&dyn Any, &mut Vec<u8>) -> Result<(), etf::EncodeError>;

static ENCODERS: RwLock<Option<HashMap<TypeId, Encode>>> = RwLock::new(None);

fn encode_any<M: Serialize + 'static>(
    m: &dyn Any,
    out: &mut Vec<u8>,
) -> Result<(), etf::EncodeError> {
    match m.downcast_ref::<M>() {
        Some(m) => etf::encode_into(m, out),
        None => unreachable!("the encoder of a type is only called with that type"),
    }
}

/// Records how to encode an `M` for a remote process.
pub(crate) fn register_encoder<M: Serialize + 'static>() {
    let id = TypeId::of::<M>();
    if ENCODERS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|t| t.contains_key(&id))
    {
        return;
    }
    ENCODERS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .insert(id, encode_any::<M>);
}

/// The distribution as the core sees it (`remote.rs`): this module's functions.
struct Route;

impl crate::remote::Distribution for Route {
    fn is_connected(&self, pid: RawPid) -> bool {
        is_connected(pid)
    }

    fn send(&self, to: RawPid, message: &dyn Any, busy: Busy<'_>) -> RemoteSend {
        send(to, message, busy)
    }

    fn monitor(&self, target: RawPid, watcher: Watcher) {
        monitor(target, watcher);
    }

    fn demonitor(&self, target: RawPid, id: u64) -> bool {
        demonitor(target, id)
    }

    fn watching(&self, target: RawPid, id: u64) -> bool {
        watching(target, id)
    }

    fn link(&self, from: RawPid, to: RawPid) -> Result<(), ExitReason> {
        link(from, to)
    }

    fn unlink(&self, from: RawPid, to: RawPid) {
        unlink(from, to);
    }

    fn exit_signal(&self, to: RawPid, from: RawPid, reason: ExitReason, kind: Kind) {
        exit_signal(to, from, reason, kind);
    }

    fn fmt_pid(&self, raw: RawPid, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match remote::resolve(raw) {
            Some((_, p)) => write!(f, "<{}.{}.{}>", p.node, p.id, p.serial),
            None => write!(
                f,
                "<remote.{}.{}>",
                raw.index & !remote::REMOTE,
                raw.generation
            ),
        }
    }
}

/// Opens the core's door to remote pids (a node's start; once per program).
pub(crate) fn install() {
    static ROUTE: Route = Route;
    crate::remote::install(&ROUTE);
}

/// Sends `message` to the remote pid `to`, waiting for a busy connection as `busy`
/// says (`dist/connection.rs`, "Limits"); `Refused` if the pid is retired, or it
/// cannot be encoded (the core hands it back to the sender).
fn send(to: RawPid, message: &dyn Any, busy: Busy<'_>) -> RemoteSend {
    let Some((node, pid)) = remote::resolve(to) else {
        return RemoteSend::Refused;
    };
    let Some(encode) = ENCODERS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|t| t.get(&message.type_id()).copied())
    else {
        return RemoteSend::Refused;
    };
    if pid.node == node.name {
        // `{Name, node()}` (`local.rs`); no other pid of this node is remote.
        let Some(name) = remote::name_of(to) else {
            return RemoteSend::Refused;
        };
        let mut payload = Vec::new();
        if let Err(e) = crate::dist::with_node(&node, || encode(message, &mut payload)) {
            crate::report::dist_fault(
                "send_failed",
                &format_args!("a message to {to:?} was not sent: {e}"),
            );
            return RemoteSend::Refused;
        }
        let control = Control::RegSend {
            from: connection::node_pid(&node),
            to: name,
        };
        crate::dist::local::deliver(&node, &control, &payload);
        return RemoteSend::Sent;
    }
    let conn = connection::get_or_connect(&node, &pid.node);
    let busy = match busy {
        Busy::Queue => false,
        Busy::Refuse => conn.is_busy(),
        Busy::Wait(waker) => conn.is_busy() && conn.wait_not_busy(waker),
    };
    if busy {
        return RemoteSend::Busy;
    }
    let peer = pid.node.clone();
    let control = match remote::name_of(to) {
        Some(name) => Control::RegSend {
            from: connection::node_pid(&node),
            to: name,
        },
        None => Control::Send { to: pid },
    };
    let frame = crate::dist::with_node(&node, || {
        connection::frame_with(&control, |out| encode(message, out))
    });
    match frame {
        Ok(f) => {
            conn.send_frame(f);
            RemoteSend::Sent
        }
        Err(e) => {
            // A message that cannot be a term (nested deeper than `etf::MAX_DEPTH`, a
            // `Serialize` error) or a frame (over `MAX_FRAME`): `try_send` hands it back; a plain `send` would lose
            // it without a word.
            crate::report::dist_fault(
                "send_failed",
                &format_args!("a message to {to:?} on {peer} was not sent: {e}"),
            );
            RemoteSend::Refused
        }
    }
}

/// What a monitor of `raw` names on the peer: the name of a name's entry, or the pid.
fn target_of(raw: RawPid, pid: ExternalPid) -> Target {
    match remote::name_of(raw) {
        Some(name) => Target::Name(name),
        None => Target::Pid(pid),
    }
}

/// Whether the node of a remote pid is connected (`Pid::is_alive` of a remote pid).
pub(crate) fn is_connected(to: RawPid) -> bool {
    remote::resolve(to).is_some_and(|(node, pid)| {
        if pid.node == node.name {
            return !node.stopped.load(std::sync::atomic::Ordering::Acquire);
        }
        node.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pid.node)
            .is_some_and(|c| c.is_up())
    })
}

/// `local` links to the remote `to` (its side is already recorded). Refused, with the
/// reason of the exit signal the caller then gets: `Noconnection` if the pid is
/// retired or its node cannot be reached, `Noproc` for a name (`Node::remote_name`).
pub(crate) fn link(local: RawPid, to: RawPid) -> Result<(), ExitReason> {
    let Some((node, pid)) = remote::resolve(to) else {
        return Err(ExitReason::Noconnection);
    };
    if remote::name_of(to).is_some() {
        // Erlang links to pids only (`link({Name, Node})` is badarg).
        return Err(ExitReason::Noproc);
    }
    let conn = connection::get_or_connect(&node, &pid.node);
    if !conn.add_link(local, to) {
        return Err(ExitReason::Noconnection);
    }
    let from = node.external_pid(local);
    conn.send_control(&node, &Control::Link { from, to: pid });
    Ok(())
}

/// `local` unlinks from the remote `to` (its side is already removed).
pub(crate) fn unlink(local: RawPid, to: RawPid) {
    let Some((node, pid)) = remote::resolve(to) else {
        return;
    };
    let Some(conn) = connection::get(&node, &pid.node) else {
        return;
    };
    if conn.remove_link(local, to) {
        let from = node.external_pid(local);
        let id = conn.next_unlink_id();
        conn.send_control(&node, &Control::UnlinkId { id, from, to: pid });
    }
}

/// An exit signal from `from` (local) to the remote `to`.
pub(crate) fn exit_signal(to: RawPid, from: RawPid, r: ExitReason, kind: Kind) {
    let Some((node, pid)) = remote::resolve(to) else {
        return;
    };
    let Some(conn) = connection::get(&node, &pid.node) else {
        return;
    };
    if kind == Kind::Link && !conn.remove_link(from, to) {
        return;
    }
    let from = node.external_pid(from);
    let reason = Some(reason::to_term(&r));
    let c = match kind {
        Kind::Link => Control::Exit {
            from,
            to: pid,
            reason,
        },
        Kind::Exit => Control::Exit2 {
            from,
            to: pid,
            reason,
        },
    };
    conn.send_control(&node, &c);
}

/// A monitor of the remote `target` by `watcher.owner`. If the pid is retired or the
/// node cannot be reached, the `Down` says `Noconnection`.
pub(crate) fn monitor(target: RawPid, watcher: Watcher) {
    let refused = |w: Watcher, reason| {
        let down = Down {
            reference: w.reference(target),
            pid: crate::ProcessId(target),
            reason,
        };
        if let Some(waker) = w.notify(down) {
            waker.wake();
        }
    };
    let Some((node, pid)) = remote::resolve(target) else {
        return refused(watcher, ExitReason::Noconnection);
    };
    let Some(owner) = watcher.owner else {
        return refused(watcher, ExitReason::Noproc);
    };
    if pid.node == node.name {
        // `{Name, node()}`: its holder, here (`local.rs`).
        let Some(name) = remote::name_of(target) else {
            return refused(watcher, ExitReason::Noproc);
        };
        if let Err(w) = crate::dist::local::monitor(&node, target, &name, watcher) {
            refused(w, ExitReason::Noproc);
        }
        return;
    }
    let conn = connection::get_or_connect(&node, &pid.node);
    let reference = monitor_ref(&node, watcher.id);
    if let Err(w) = conn.add_watching(&reference, target, watcher) {
        return refused(w, ExitReason::Noconnection);
    }
    let from = node.external_pid(owner);
    conn.send_control(
        &node,
        &Control::Monitor {
            from,
            to: target_of(target, pid),
            reference,
        },
    );
}

/// Whether the monitor `id` of the remote `target` is still active: its `Down` not yet
/// delivered, nor the monitor removed.
pub(crate) fn watching(target: RawPid, id: u64) -> bool {
    let Some((node, pid)) = remote::resolve(target) else {
        return false;
    };
    if pid.node == node.name {
        return crate::dist::local::watching(&node, id);
    }
    connection::get(&node, &pid.node).is_some_and(|c| c.is_watching(&monitor_ref(&node, id)))
}

/// Removes a monitor of the remote `target`; false if its `Down` was delivered.
pub(crate) fn demonitor(target: RawPid, id: u64) -> bool {
    let Some((node, pid)) = remote::resolve(target) else {
        return false;
    };
    if pid.node == node.name {
        return crate::dist::local::demonitor(&node, id);
    }
    let reference = monitor_ref(&node, id);
    let Some(conn) = connection::get(&node, &pid.node) else {
        return false;
    };
    let Some((_, w)) = conn.remove_watching(&reference) else {
        return false;
    };
    if let Some(owner) = w.owner {
        let from = node.external_pid(owner);
        conn.send_control(
            &node,
            &Control::Demonitor {
                from,
                to: target_of(target, pid),
                reference,
            },
        );
    }
    true
}
