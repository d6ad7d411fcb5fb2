//! The name registry: `register`, `whereis`, `unregister`, and sending to a name
//! (Erlang's `erlang:register/2` and friends).
//!
//! One registry per runtime (Erlang: per node). A name maps to one process and a process
//! has at most one name, as in Erlang. Names are typed: the registry keeps the message
//! type of the registered pid, and [`Context::whereis`](crate::Context::whereis) finds a
//! name only under that type, so a lookup can never produce a `Pid<M>` of the wrong `M`.
//!
//! # Release at exit, and the race with `register`
//!
//! `register` announces the name through the process's exit gate (`process/gate.rs`),
//! then, under the registry's lock, checks that the gate is still open and inserts the
//! name. The exit closes the gate, then, if a name was announced, removes it under the
//! registry's lock — before its links and monitors are signalled and before its pid is
//! retired, as the reference manual requires. The gate's fenced Dekker pair makes either
//! the exit see the announcement (and its removal, ordered by the lock, comes after the
//! insert) or `register` see the exit and refuse: a name never outlives its process
//! (loom model: `tests/loom_gate.rs`).
//!
//! The map is behind a `RwLock`: lookups share it; it is off the message hot path
//! (a name is resolved once, then the pid is used).

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use crate::pid::RawPid;

/// Why [`Context::register`](crate::Context::register) failed.
///
/// ```
/// let e = otter::RegisterError::NameTaken;
/// assert_eq!(e.to_string(), "the name is already registered");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// Another process has this name.
    NameTaken,
    /// The process already has a name (a process has at most one, as in Erlang).
    AlreadyNamed,
    /// The process has exited (or belongs to another runtime).
    NotAlive,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegisterError::NameTaken => "the name is already registered",
            RegisterError::AlreadyNamed => "the process already has a registered name",
            RegisterError::NotAlive => "the process is not alive on this runtime",
        })
    }
}

impl std::error::Error for RegisterError {}

#[derive(Debug)]
struct Entry {
    pid: RawPid,
    message_type: TypeId,
}

#[derive(Debug, Default)]
struct Inner {
    by_name: HashMap<Arc<str>, Entry>,
    by_pid: HashMap<RawPid, Arc<str>>,
}

/// A runtime's registry.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    inner: RwLock<Inner>,
}

impl Registry {
    /// Inserts `name → pid`. The caller has set the process's `registered` flag;
    /// `still_alive` is asked under the lock, after the insert, and a dead process's
    /// name is removed again (the module docs' race).
    pub(crate) fn insert(
        &self,
        name: Arc<str>,
        pid: RawPid,
        message_type: TypeId,
        still_alive: impl FnOnce() -> bool,
    ) -> Result<(), RegisterError> {
        let mut g = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        if g.by_name.contains_key(&name) {
            return Err(RegisterError::NameTaken);
        }
        if g.by_pid.contains_key(&pid) {
            return Err(RegisterError::AlreadyNamed);
        }
        if !still_alive() {
            return Err(RegisterError::NotAlive);
        }
        g.by_pid.insert(pid, name.clone());
        g.by_name.insert(name, Entry { pid, message_type });
        Ok(())
    }

    /// The pid registered as `name`, if its message type is `message_type`.
    pub(crate) fn lookup(&self, name: &str, message_type: TypeId) -> Option<RawPid> {
        let g = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        g.by_name
            .get(name)
            .filter(|e| e.message_type == message_type)
            .map(|e| e.pid)
    }

    /// The process of message type `N` registered as `name` (`whereis/1`).
    pub(crate) fn whereis<N: 'static>(&self, name: &str) -> Option<crate::Pid<N>> {
        self.lookup(name, TypeId::of::<N>())
            .map(crate::Pid::from_raw)
    }

    /// Sends to the process of message type `N` registered as `name` (`Name ! Msg`), or
    /// hands the message back.
    pub(crate) fn send_named<N: Send + 'static>(
        &self,
        name: &str,
        message: N,
    ) -> Result<(), crate::SendError<N>> {
        match self.whereis::<N>(name) {
            // `Name ! Msg` is a plain send: beyond a bounded mailbox's bound.
            Some(pid) => crate::process::send::send(pid, message).map_err(crate::SendError),
            None => Err(crate::SendError(message)),
        }
    }

    /// The pid registered as `name`, whatever its message type.
    pub(crate) fn holder(&self, name: &str) -> Option<RawPid> {
        let g = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        g.by_name.get(name).map(|e| e.pid)
    }

    /// Removes `name`; returns the pid it named.
    pub(crate) fn remove_name(&self, name: &str) -> Option<RawPid> {
        let mut g = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let e = g.by_name.remove(name)?;
        g.by_pid.remove(&e.pid);
        Some(e.pid)
    }

    /// Removes the name of `pid`, if it has one (its exit).
    /// The name `pid` is registered under, if any (introspection's reverse look-up).
    pub(crate) fn name_of(&self, pid: RawPid) -> Option<Arc<str>> {
        let g = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        g.by_pid.get(&pid).cloned()
    }

    /// Fills each `(pid, name)` with the pid's name, under one read lock (a snapshot's
    /// window).
    pub(crate) fn fill_names<'a>(
        &self,
        pids: impl Iterator<Item = (RawPid, &'a mut Option<Arc<str>>)>,
    ) {
        let g = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        if g.by_pid.is_empty() {
            return;
        }
        for (pid, name) in pids {
            *name = g.by_pid.get(&pid).cloned();
        }
    }

    pub(crate) fn remove_pid(&self, pid: RawPid) {
        let mut g = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(name) = g.by_pid.remove(&pid) {
            g.by_name.remove(&name);
        }
    }
}
