//! A group member, and the rule that types it.
//!
//! Erlang's groups hold pids, of any process. otter's pids are typed (`Pid<M>`: the
//! process's mailbox holds `M`), so a [`Member`] keeps what the type of a pid can be
//! known from:
//!
//! * a **local** member joined as a `Pid<M>`: its `M` is recorded, and
//!   [`Member::pid::<M>`](Member::pid) gives it back only for that `M` (a local pid of
//!   another type is not a `Pid<M>`: a send would put an `M` in a mailbox of
//!   something else);
//! * a **remote** member (a process of another node, Erlang's or otter's): a send to
//!   it encodes the message as a term, which is all a remote process receives, so it
//!   is a `Pid<M>` for any `M: Serialize`, as any pid is for Erlang's `!`. What the
//!   process does with a term it does not expect is its own affair (an otter process
//!   gets `M::from(BadTerm)`, an Erlang one the term).
//!
//! So a group of mixed types is one group: [`Scope::members::<_, M>`](crate::dist::pg::Scope::members)
//! gives its remote members and its local members of type `M`, and
//! [`Scope::all_members`](crate::dist::pg::Scope::all_members) every member, untyped.

use std::any::TypeId;
use std::fmt;

use serde::Serialize;

use crate::pid::{Pid, ProcessId, RawPid};

/// A member of a group (module docs of `otter::dist::pg`: a pid, local or remote, and
/// for a local one the message type it joined with). Listed once per join: a process
/// that joined twice is there twice, as in Erlang.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Member {
    pub(crate) raw: RawPid,
    /// The message type a local member joined as; `None` for a remote one.
    pub(crate) ty: Option<TypeId>,
}

impl Member {
    /// A local member of message type `M`.
    pub(crate) fn local<M: 'static>(raw: RawPid) -> Member {
        Member {
            raw,
            ty: Some(TypeId::of::<M>()),
        }
    }

    /// A member of another node.
    pub(crate) fn remote(raw: RawPid) -> Member {
        Member { raw, ty: None }
    }

    /// The process, untyped (compare it with a [`Pid::id`] or a `Down`'s pid).
    pub fn id(&self) -> ProcessId {
        ProcessId(self.raw)
    }

    /// Whether it is a process of this node.
    pub fn is_local(&self) -> bool {
        self.ty.is_some()
    }

    /// The member as a `Pid<M>`: a remote member always (a send encodes `M`), a local
    /// one if it joined as a `Pid<M>`.
    pub fn pid<M: Serialize + Send + 'static>(&self) -> Option<Pid<M>> {
        match self.ty {
            Some(t) if t == TypeId::of::<M>() => Some(Pid::from_raw(self.raw)),
            Some(_) => None,
            None => {
                crate::dist::route::register_encoder::<M>();
                Some(Pid::from_raw(self.raw))
            }
        }
    }
}

impl fmt::Debug for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.raw, f)
    }
}
