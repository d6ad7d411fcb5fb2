//! The global names a visible node has heard of, for [`Node::global_whereis_name`]
//! and [`Node::global_registered_names`]: a view of the cluster's `global` registry,
//! kept by the server from what its peers tell it.
//!
//! # Rules
//!
//! * A name comes in with a peer's `exchange` (every name that peer knows, once its
//!   lock is set), with a registration (`{register, Name, Pid, Method}`, a call every
//!   registering node makes to every known node), and with `new_nodes`' `insert`
//!   operations; it goes with `unregister`, with `new_nodes`' `delete` operations, and
//!   when its pid's monitor fires (the process exited, or the connection to its node
//!   went down), as each Erlang node's `global_name_server` does with its own monitors.
//! * Each pid that holds a name is monitored once, however many names it holds; its
//!   monitor is removed with its last name.
//! * The node's own names stay out of `exchange` (the server tells peers it holds
//!   none): the view is never a source of names for a peer, so a clash between two
//!   names is resolved by the Erlang nodes, and the view learns the outcome from their
//!   operations.
//! * Names are keyed by their term as otter encodes it: two encodings of one Erlang
//!   term (an atom in Latin-1 or UTF-8) are one name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::dist::etf::{self, ExternalPid, Term};
use crate::dist::global::Inbound;
use crate::dist::node::{Node, NodeShared};
use crate::monitor::{Down, MonitorRef};
use crate::pid::{Pid, ProcessId};

/// The names, by key: what the API reads (`node.rs` holds it).
pub(crate) type Names = Mutex<HashMap<Vec<u8>, (Term, ExternalPid)>>;

fn key(t: &Term) -> Vec<u8> {
    let mut out = Vec::new();
    t.encode(&mut out);
    out
}

/// The server's side of the view: the monitors of the pids that hold names.
#[derive(Default)]
pub(crate) struct Table {
    /// Each pid's monitor, and how many names it holds.
    held: HashMap<ExternalPid, (MonitorRef, usize)>,
    /// The pids by their monitor's id.
    by_monitor: HashMap<u64, ExternalPid>,
}

impl Table {
    /// `name` is `pid`'s now (replacing whichever pid had it).
    pub(crate) fn insert(
        &mut self,
        node: &Arc<NodeShared>,
        server: Pid<Inbound>,
        name: Term,
        pid: ExternalPid,
    ) {
        let target = if let Some(raw) = node.local_pid(&pid) {
            raw
        } else if pid.node == node.name {
            // A pid of this node's earlier incarnation, or none: no process.
            return self.delete(node, &name);
        } else {
            crate::dist::remote::intern(node, &pid, &pid.node)
        };
        let k = key(&name);
        let old = lock(node).insert(k, (name, pid.clone()));
        match old {
            Some((_, p)) if p == pid => return,
            Some((_, p)) => self.release(&p),
            None => {}
        }
        match self.held.get_mut(&pid) {
            Some((_, n)) => *n += 1,
            None => {
                let (monitor, arm) = crate::process::monitor_for(server, ProcessId(target));
                self.by_monitor.insert(monitor.id, pid.clone());
                self.held.insert(pid, (monitor, 1));
                arm();
            }
        }
    }

    /// `name` is no one's now.
    pub(crate) fn delete(&mut self, node: &Arc<NodeShared>, name: &Term) {
        let old = lock(node).remove(&key(name));
        if let Some((_, p)) = old {
            self.release(&p);
        }
    }

    /// One name fewer for `pid`: its monitor goes with its last.
    fn release(&mut self, pid: &ExternalPid) {
        let Some((_, n)) = self.held.get_mut(pid) else {
            return;
        };
        *n -= 1;
        if *n == 0
            && let Some((monitor, _)) = self.held.remove(pid)
        {
            self.by_monitor.remove(&monitor.id);
            crate::process::bonds::remove_watcher(monitor.target, monitor.id);
        }
    }

    /// A monitored pid exited or its node went: its names go.
    pub(crate) fn down(&mut self, node: &Arc<NodeShared>, d: &Down) {
        let Some(pid) = self.by_monitor.remove(&d.reference.id) else {
            return;
        };
        self.held.remove(&pid);
        lock(node).retain(|_, (_, p)| *p != pid);
    }
}

fn lock(node: &NodeShared) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, (Term, ExternalPid)>> {
    node.global.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Node {
    /// The pid registered in `global` as `name` in the cluster this visible node is
    /// part of (Erlang's `global:whereis_name(Name)`), as far as the node has heard
    /// (`dist/global/names.rs`); `None` if none, or if the node is hidden (a hidden
    /// node takes no part in `global`). A send to the pid encodes `M`; a process of
    /// this node registered from Erlang is found only as the type it was exported as.
    ///
    /// The node cannot register names itself: the module docs of [`crate::dist`],
    /// "Visible nodes and `global`".
    pub fn global_whereis_name<N, M>(&self, name: &N) -> Option<Pid<M>>
    where
        N: Serialize + ?Sized,
        M: Serialize + Send + 'static,
    {
        let bytes = crate::dist::with_node(&self.shared, || etf::to_vec(name)).ok()?;
        let term = Term::decode(&bytes).ok()?;
        let pid = lock(&self.shared).get(&key(&term))?.1.clone();
        match self.shared.local_pid(&pid) {
            // A process of this node: typed as it was exported, or not at all.
            Some(raw) => {
                let exported = self
                    .shared
                    .exported
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&raw)
                    .copied()?;
                (exported.type_id == std::any::TypeId::of::<M>()).then(|| Pid::from_raw(raw))
            }
            None => Some(self.remote_pid(&pid)),
        }
    }

    /// Every name registered in `global` that this visible node has heard of
    /// (`global:registered_names()`), in no order; empty on a hidden node.
    pub fn global_registered_names(&self) -> Vec<Term> {
        lock(&self.shared)
            .values()
            .map(|(t, _)| t.clone())
            .collect()
    }
}
