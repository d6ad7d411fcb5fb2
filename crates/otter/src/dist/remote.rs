//! Remote pids: how a `Pid<M>` names a process on another node.
//!
//! A local pid is an index into the process table and a generation
//! (`process/table.rs`). A remote pid is the same two words with the top bit of the
//! index set ([`REMOTE`]): the rest of the index picks an entry of this module's table,
//! which holds the pid as Erlang knows it (node, id, serial, creation), and the
//! generation must match the entry's. So `Pid<M>` stays one `Copy` word pair, and a
//! local send never looks here: the process table has no index with the top bit set,
//! so a remote pid only ever reaches the send path's "not found" branch
//! (`process/send.rs`), which then routes it to distribution.
//!
//! # Invariants
//!
//! * One entry per remote pid while its node is connected: interning the same pid
//!   twice gives the same `RawPid`, so pids compare and hash as Erlang's do.
//! * An entry is retired (generation bumped, index reused) when the connection it came
//!   over goes down, or the connection to its own node: a pid is valid for the life of
//!   the connection it came over (the newest, if it came over several to its node: a
//!   connection that goes down as its peer comes back retires nothing the new one
//!   brought, [`retire_connection`]), so a peer cannot grow the table beyond what its
//!   connection holds, even with pids of nodes that never connect. A send
//!   to a retired pid is dropped, as a send to an exited process is. (Erlang keeps an
//!   external pid valid across a reconnection to the same node incarnation; otter does
//!   not: the crate docs list this difference.)
//! * A name's entry (`{Name, Node}`, [`intern_name`]) is not retired with the
//!   connection: it stands for the name, not for a process, and a send to it after the
//!   node is back goes by name again, as Erlang's does. Only local code interns names
//!   (`Node::remote_name`), never a peer, so they grow with what the program asks for,
//!   like atoms.
//! * The table's size is the number of distinct remote pids seen over the live
//!   connections, and the names asked for.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock, Weak};

use crate::dist::etf::{Atom, ExternalPid};
use crate::dist::node::NodeShared;
use crate::pid::RawPid;

/// The index bit that marks a remote pid (the core's, `pid.rs`). The process
/// table's indices stay below 2^26 (`process/table.rs`).
pub(crate) const REMOTE: u32 = crate::pid::REMOTE_BIT;

#[derive(Debug)]
struct Entry {
    /// The pid, and the local node whose connection it came over.
    pid: Option<(Weak<NodeShared>, ExternalPid)>,
    /// For a name's entry (`{Name, Node}`, [`intern_name`]): the name.
    name: Option<Atom>,
    /// The peer of that connection.
    via: Option<Atom>,
    /// That connection's id (`Connection::id`), 0 if not known: the pid was made by
    /// local code, or read outside a connection's reader. It goes with whichever
    /// connection to `via` or to its own node goes down first.
    conn: u64,
    generation: u32,
}

#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    by_pid: HashMap<Key, u32>,
    /// The entries of names: (local node, node, name).
    by_name: HashMap<(usize, Atom, Atom), u32>,
    free: Vec<u32>,
}

/// The id of a name's entry's `ExternalPid` (no process has it: ids stay below 2^28).
const NAME_ID: u32 = u32::MAX;

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(RwLock::default);

/// The local node (by address), and the pid's node, id, serial and creation.
type Key = (usize, Atom, u32, u32, u32);

fn key(local: &Arc<NodeShared>, p: &ExternalPid) -> Key {
    (
        Arc::as_ptr(local) as usize,
        p.node.clone(),
        p.id,
        p.serial,
        p.creation,
    )
}

/// The `RawPid` of a pid of another node, as `local` knows it from the connection to
/// `via` (the one being read on this thread, `dist::with_via`, if it is to `via`),
/// interned. An entry seen again over a newer connection is that connection's from then
/// on.
pub(crate) fn intern(local: &Arc<NodeShared>, pid: &ExternalPid, via: &Atom) -> RawPid {
    let k = key(local, pid);
    let conn = crate::dist::current_via_conn(via);
    let current = |t: &Table, i: u32| {
        let e = &t.entries[i as usize];
        (conn == 0 || e.conn == conn).then_some(RawPid {
            index: i | REMOTE,
            generation: e.generation,
        })
    };
    {
        let t = TABLE.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(raw) = t.by_pid.get(&k).and_then(|&i| current(&t, i)) {
            return raw;
        }
    }
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(&i) = t.by_pid.get(&k) {
        let e = &mut t.entries[i as usize];
        if conn != 0 {
            e.via = Some(via.clone());
            e.conn = conn;
        }
        return RawPid {
            index: i | REMOTE,
            generation: e.generation,
        };
    }
    let i = match t.free.pop() {
        Some(i) => {
            let e = &mut t.entries[i as usize];
            e.pid = Some((Arc::downgrade(local), pid.clone()));
            e.via = Some(via.clone());
            e.conn = conn;
            e.name = None;
            i
        }
        None => {
            t.entries.push(Entry {
                pid: Some((Arc::downgrade(local), pid.clone())),
                name: None,
                via: Some(via.clone()),
                conn,
                generation: 0,
            });
            (t.entries.len() - 1) as u32
        }
    };
    t.by_pid.insert(k, i);
    RawPid {
        index: i | REMOTE,
        generation: t.entries[i as usize].generation,
    }
}

/// The `RawPid` standing for the name `name` on `node` (`{Name, Node}`), as `local`
/// knows it, interned: sends to it go by name, monitors monitor the name.
pub(crate) fn intern_name(local: &Arc<NodeShared>, node: &Atom, name: &Atom) -> RawPid {
    let k = (Arc::as_ptr(local) as usize, node.clone(), name.clone());
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    let pid = ExternalPid {
        node: node.clone(),
        id: NAME_ID,
        serial: 0,
        creation: 0,
    };
    if let Some(&i) = t.by_name.get(&k) {
        let e = &mut t.entries[i as usize];
        // The key holds the local node's address: an entry of a node since dropped,
        // whose address `local` now has, is taken over, and the old node's pids of it
        // resolve to nothing.
        if e.pid.as_ref().is_none_or(|(n, _)| n.strong_count() == 0) {
            e.pid = Some((Arc::downgrade(local), pid));
            e.generation = e.generation.wrapping_add(1);
        }
        return RawPid {
            index: i | REMOTE,
            generation: e.generation,
        };
    }
    let entry = (Some((Arc::downgrade(local), pid)), Some(name.clone()));
    let i = match t.free.pop() {
        Some(i) => {
            let e = &mut t.entries[i as usize];
            (e.pid, e.name) = entry;
            e.via = Some(node.clone());
            e.conn = 0;
            i
        }
        None => {
            t.entries.push(Entry {
                pid: entry.0,
                name: entry.1,
                via: Some(node.clone()),
                conn: 0,
                generation: 0,
            });
            (t.entries.len() - 1) as u32
        }
    };
    t.by_name.insert(k, i);
    RawPid {
        index: i | REMOTE,
        generation: t.entries[i as usize].generation,
    }
}

/// The name a remote `RawPid` stands for, if it is a name's entry.
pub(crate) fn name_of(raw: RawPid) -> Option<Atom> {
    if raw.index & REMOTE == 0 {
        return None;
    }
    let t = TABLE.read().unwrap_or_else(PoisonError::into_inner);
    let e = t.entries.get((raw.index & !REMOTE) as usize)?;
    if e.generation != raw.generation {
        return None;
    }
    e.name.clone()
}

/// The local node and the Erlang pid a remote `RawPid` names, if its entry is still
/// live.
pub(crate) fn resolve(raw: RawPid) -> Option<(Arc<NodeShared>, ExternalPid)> {
    if raw.index & REMOTE == 0 {
        return None;
    }
    let t = TABLE.read().unwrap_or_else(PoisonError::into_inner);
    let e = t.entries.get((raw.index & !REMOTE) as usize)?;
    if e.generation != raw.generation {
        return None;
    }
    let (node, pid) = e.pid.as_ref()?;
    Some((node.upgrade()?, pid.clone()))
}

/// The connection `conn` to `peer` went down: retires, of the pids `local` knows,
/// every one that came over it, and every pid of `peer` that came over a connection
/// to another node or over none known; a pid of `peer` that came over a newer
/// connection to `peer` stays. Names' entries stay (module docs).
pub(crate) fn retire_connection(local: &Arc<NodeShared>, peer: &Atom, conn: u64) {
    let me = Arc::as_ptr(local) as usize;
    let mut t = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    let Table {
        entries,
        by_pid,
        free,
        ..
    } = &mut *t;
    by_pid.retain(|k, &mut i| {
        let e = &mut entries[i as usize];
        let via_peer = e.via.as_ref() == Some(peer);
        // Came over it; or over an unknown connection to the peer; or a pid of the
        // peer that came over another node's connection (or none known).
        let retired = k.0 == me
            && (e.conn == conn || (e.conn == 0 && via_peer) || (!via_peer && &k.1 == peer));
        if !retired {
            return true;
        }
        e.via = None;
        e.conn = 0;
        e.pid = None;
        e.generation = e.generation.wrapping_add(1);
        free.push(i);
        false
    });
}

#[cfg(test)]
mod tests {
    //! A connection that goes down as its peer comes back retires the pids it brought,
    //! not those the new connection brought.

    use super::*;
    use crate::Runtime;
    use crate::dist::tests::test_node;

    #[test]
    fn a_connections_end_retires_the_pids_it_brought_and_not_the_next_ones() {
        let rt = Runtime::builder().threads(1).build().unwrap();
        let node = test_node(&rt);
        let local = &node.shared;
        let (peer, third) = (Atom::new("peer@host"), Atom::new("third@host"));
        let pid = |node: &Atom, id| ExternalPid {
            node: node.clone(),
            id,
            serial: 0,
            creation: 1,
        };
        let over = |conn, via: &Atom, p: &ExternalPid| {
            crate::dist::with_via(via, conn, || intern(local, p, via))
        };
        // Over the first connection to the peer: one pid only seen there, one seen
        // again over the second, and a pid of the peer that came over a third node.
        let old_only = over(1, &peer, &pid(&peer, 1));
        let seen_again = over(1, &peer, &pid(&peer, 2));
        assert_eq!(over(2, &peer, &pid(&peer, 2)), seen_again);
        let new_only = over(2, &peer, &pid(&peer, 3));
        let via_third = over(3, &third, &pid(&peer, 4));
        let of_third = over(3, &third, &pid(&third, 5));

        // The first connection goes down after the second came up.
        retire_connection(local, &peer, 1);

        assert!(resolve(old_only).is_none());
        assert!(
            resolve(via_third).is_none(),
            "a pid of the peer via a third node"
        );
        assert!(resolve(seen_again).is_some());
        assert!(resolve(new_only).is_some());
        assert!(resolve(of_third).is_some());

        // The second goes down: the rest of the peer's pids go, the third node's stay.
        retire_connection(local, &peer, 2);
        assert!(resolve(seen_again).is_none() && resolve(new_only).is_none());
        assert!(resolve(of_third).is_some());
        retire_connection(local, &third, 3);
        assert!(resolve(of_third).is_none());
    }
}
