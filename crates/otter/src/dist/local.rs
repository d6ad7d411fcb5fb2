//! The node's own name: `{Name, node()}` from this node.
//!
//! In Erlang a send to `{Name, node()}` goes to the local registered process, and a
//! `gen_server:call` to it is a local call. Here [`Node::send_named`],
//! [`Node::call`] and [`Node::remote_name`] given the node's own name act the same
//! way, on what a peer's `{Name, ThisNode}` reaches: the names exported with
//! [`Node::register`], [`Node::register_name`], [`Node::register_server`] and
//! [`Node::register_server_name`]. The message is encoded and decoded as for a
//! peer (the receiver gets the same value either way, a term that does not decode
//! included), but no connection is made: [`deliver`] acts as the reader of a
//! connection from the node to itself would. A monitor of such a name (a call's,
//! or [`Context::monitor`](crate::Context::monitor) of `remote_name`'s pid) is a
//! monitor of the process that holds the name when it is set: `Noproc` at once if
//! none does (as Erlang's `monitor(process, {Name, node()})`).
//!
//! [`Node::send_named`]: crate::dist::Node::send_named
//! [`Node::call`]: crate::dist::Node::call
//! [`Node::remote_name`]: crate::dist::Node::remote_name
//! [`Node::register`]: crate::dist::Node::register
//! [`Node::register_name`]: crate::dist::Node::register_name
//! [`Node::register_server`]: crate::dist::Node::register_server
//! [`Node::register_server_name`]: crate::dist::Node::register_server_name

use std::sync::{Arc, PoisonError};

use crate::dist::control::Control;
use crate::dist::etf::Atom;
use crate::dist::node::NodeShared;
use crate::monitor::{Down, Notify, Watcher};
use crate::pid::RawPid;
use crate::unwind::catch_panic;

/// The local process the exported name `name` reaches now, if any.
pub(crate) fn holder(node: &NodeShared, name: &Atom) -> Option<RawPid> {
    let e = node
        .names
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .copied()?;
    e.target(node, name)
}

/// Acts on a message this node sends to itself (`SEND`, `REG_SEND`, `ALIAS_SEND`),
/// with its encoded payload, as a connection's reader acts on one from a peer.
/// Anything else is not sent to oneself, and is ignored.
pub(crate) fn deliver(node: &Arc<NodeShared>, c: &Control, payload: &[u8]) {
    match c {
        Control::Send { to } => {
            let Some(raw) = node.local_pid(to) else {
                return;
            };
            let e = node
                .exported
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&raw)
                .copied();
            if let Some(e) = e {
                // User code (`Deserialize`, `From<BadTerm>`): a panic loses this
                // message, as from a peer.
                let _ = catch_panic(|| (e.deliver)(node, raw, payload));
            }
        }
        Control::RegSend { to, .. } => {
            let e = node
                .names
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(to)
                .copied();
            if let Some(e) = e
                && let Some(pid) = e.target(node, to)
            {
                let _ = catch_panic(|| (e.deliver)(node, pid, payload));
            }
        }
        Control::AliasSend { alias, .. } => {
            crate::dist::call::alias_reply(node, &node.name, alias, payload);
        }
        _ => {}
    }
}

/// Monitors the holder of the exported `name` for `watcher`, the monitor of `stand_in`
/// (the pid that stands for `{Name, node()}`, which its `Down` names). `Err` hands the
/// watcher back if no process holds the name.
pub(crate) fn monitor(
    node: &Arc<NodeShared>,
    stand_in: RawPid,
    name: &Atom,
    watcher: Watcher,
) -> Result<(), Watcher> {
    let Some(holder) = holder(node, name) else {
        return Err(watcher);
    };
    let id = watcher.id;
    let owner = watcher.owner;
    let weak = Arc::downgrade(node);
    let wrapped = Watcher {
        id,
        owner,
        notify: Notify::Message(Box::new(move |down: Down| {
            if let Some(n) = weak.upgrade() {
                n.local_monitors
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
            let down = Down {
                reference: watcher.reference(stand_in),
                pid: crate::ProcessId(stand_in),
                reason: down.reason,
            };
            watcher.notify(down)
        })),
    };
    node.local_monitors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, holder);
    match crate::process::bonds::add_watcher(holder, wrapped) {
        Ok(()) => Ok(()),
        Err(w) => {
            node.local_monitors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            // The holder exited in between: its `Down` is `Noproc`.
            let waker = w.notify(Down {
                reference: crate::monitor::MonitorRef {
                    id,
                    target: stand_in,
                    owner,
                },
                pid: crate::ProcessId(stand_in),
                reason: crate::ExitReason::Noproc,
            });
            if let Some(w) = waker {
                w.wake();
            }
            Ok(())
        }
    }
}

/// Whether a monitor [`monitor`] set is still active.
pub(crate) fn watching(node: &NodeShared, id: u64) -> bool {
    let holder = node
        .local_monitors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .copied();
    holder.is_some_and(|h| crate::process::bonds::watching(h, id))
}

/// Removes a monitor [`monitor`] set; false if its `Down` was delivered.
pub(crate) fn demonitor(node: &NodeShared, id: u64) -> bool {
    let holder = node
        .local_monitors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
    holder.is_some_and(|h| crate::process::bonds::remove_watcher(h, id))
}
