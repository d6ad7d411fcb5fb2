//! Servers reached without their type: code that holds only a pid (the dashboard)
//! asks a server, state machine or supervisor for its `sys` status and its log.
//!
//! A server's mailbox takes `ServerMsg<S>`, which names its type; a pid alone cannot
//! build one. So each server, once its `init` has succeeded, files in its runtime's
//! [`Servers`] a function instantiated for its own `S` that wraps an
//! [`Untyped`] request as its system message and sends it; a guard takes the entry out
//! when the loop ends, and when the process is killed (its future dropped). A pid's
//! generation is part of the key, so a process that took the slot since is never
//! reached through an old entry.
//!
//! Cost: at a server's start and end, a lock of one of [`SHARDS`] maps and an insert or
//! a remove; nothing per message. Only servers file themselves: a plain process pays
//! nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::pid::{Pid, RawPid};
use crate::scheduler::Shared;
use crate::server::{Server, ServerMsg};
use crate::sys::{Request, Untyped};

/// The shards of the table: starts on different workers rarely meet on one lock.
const SHARDS: usize = 16;

/// Sends an untyped request to the server `RawPid`, as its own type's system message;
/// false if the process has exited.
type SendFn = fn(RawPid, Untyped) -> bool;

/// The runtime's servers, by pid (module docs).
pub(crate) struct Servers {
    shards: [Mutex<HashMap<RawPid, SendFn>>; SHARDS],
}

impl Default for Servers {
    fn default() -> Self {
        Servers {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servers").finish_non_exhaustive()
    }
}

impl Servers {
    fn shard(&self, pid: RawPid) -> &Mutex<HashMap<RawPid, SendFn>> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let h = BuildHasherDefault::<DefaultHasher>::default().hash_one(pid);
        &self.shards[(h as usize) % SHARDS]
    }

    /// Sends `request` to the server `pid`: false if no server of this runtime has
    /// that pid (never was one, or has ended).
    pub(crate) fn send(&self, pid: RawPid, request: Untyped) -> bool {
        let send = self
            .shard(pid)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pid)
            .copied();
        send.is_some_and(|send| send(pid, request))
    }
}

/// A server's entry in [`Servers`], removed when dropped (module docs).
pub(crate) struct Filed {
    shared: Arc<Shared>,
    pid: RawPid,
}

/// Files the server `pid` of type `S` in its runtime's table until the guard drops.
pub(crate) fn file<S: Server>(shared: Arc<Shared>, pid: RawPid) -> Filed {
    shared
        .services
        .servers
        .shard(pid)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(pid, send_as::<S>);
    Filed { shared, pid }
}

impl Drop for Filed {
    fn drop(&mut self) {
        self.shared
            .services
            .servers
            .shard(self.pid)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.pid);
    }
}

/// [`SendFn`] for servers of type `S`. Never refused by a bounded mailbox, as the
/// typed `sys` requests are not (`sys.rs`).
fn send_as<S: Server>(pid: RawPid, request: Untyped) -> bool {
    let pid = Pid::<ServerMsg<S>>::from_raw(pid);
    crate::process::send::send(pid, ServerMsg::System(Box::new(Request(request.into())))).is_ok()
}
