//! Process groups: Erlang's `pg` (OTP 23+), speaking `pg`'s own protocol with the
//! scope processes of the other nodes, so that otter and Erlang nodes in one scope see
//! one membership.
//!
//! A [`Scope`] ([`Node::pg_scope`], Erlang's `pg:start(Scope)`) is a process
//! registered under the scope's name, for peers (`{Scope, Node}`). Processes of this
//! node join and leave groups of it ([`Scope::join`], [`Scope::leave`], several at
//! once with [`Scope::join_many`]; a process may join a group several times, and
//! leaves it once per join); a group is any term, created by its first join and gone
//! with its last member. Every node in the scope sees every member of every node it
//! is connected to ([`Scope::members`], [`Scope::local_members`],
//! [`Scope::which_groups`]), and a subscriber hears of each change
//! ([`Scope::monitor_scope`], [`Scope::monitor`]: an [`Update`] per join or leave). A
//! member that exits leaves its groups; a node that goes (its connection lost, or its
//! scope process stopped) takes its members with it.
//!
//! ```no_run
//! use otter::dist::etf::Atom;
//! use otter::dist::{BadTerm, Node};
//! use otter::{Context, Runtime};
//! # #[derive(serde::Serialize, serde::Deserialize)]
//! # enum Job { Run(u32), Bad }
//! # impl From<BadTerm> for Job { fn from(_: BadTerm) -> Job { Job::Bad } }
//! let rt = Runtime::new();
//! let node = Node::builder("otter@localhost").cookie("secret").start(&rt.handle()).unwrap();
//! let scope = node.pg_scope("pg").unwrap();
//! let worker = rt.handle().spawn(|mut cx: Context<Job>| async move { cx.recv().await; });
//! let workers = Atom::new("workers"); // Erlang's `workers`
//! scope.join(&workers, worker).unwrap();
//! // Every member, on this node and on the others connected: `pg:get_members(pg, workers)`.
//! for w in scope.members::<_, Job>(&workers) {
//!     w.send(Job::Run(1));
//! }
//! ```
//!
//! # The protocol
//!
//! Each node's scope process keeps every group's members; local changes go to every
//! peer scope as they happen, and a scope that discovers another is sent all its
//! local members (`pg/wire.rs` has the messages). Erlang's scope discovers peers on
//! `nodeup` from `net_kernel:monitor_nodes/1`, which a hidden node's connection does
//! not raise: so otter's scope sends `{discover, Self}` to `{Scope, Node}` whenever a
//! connection comes up (Erlang's answers an unknown peer's `discover` with a `sync`
//! and a `discover` of its own), on a hidden or a visible node alike. As in Erlang,
//! membership is not transitive: a node sees the members of the nodes it is connected
//! to, and otter connects on demand ([`Node::connect`]), so a node that should see a
//! cluster connects to each of its nodes. The tables and their invariants are in
//! `pg/scope.rs`.
//!
//! # Types
//!
//! A group holds pids of any type, as Erlang's do: [`Member`]'s docs give the rule.
//! [`Scope::members::<G, M>`](Scope::members) is the group's remote members (a send to
//! one encodes `M`) and its local members that joined as `Pid<M>`;
//! [`Scope::all_members`] gives them all, untyped. A local member must decode its
//! messages from terms (`M: DeserializeOwned + From<BadTerm>`): peers learn its pid
//! and may send to it, as to any pid that leaves the node.
//!
//! # Bad input
//!
//! A message to a scope from another node is checked before anything changes: it
//! must be one of `pg`'s, come from a scope process of the node whose connection it
//! came over, name only that node's processes as members (a node may join only its own
//! processes), and a `join` or `leave` must come from a scope this one knows (one that
//! has discovered or synced with it). Anything else is refused and reported (a `tracing` warning, `otter::dist`,
//! [`crate::report`]) once per peer node and kind of fault; the connection and the scope go on serving
//! everyone else. The decoder is fuzzed (`pg/tests.rs`).
//!
//! # Differences from Erlang
//!
//! * A join or leave is made on the caller's thread under the scope's lock, not by a
//!   call to the scope process: it has happened when the function returns, as Erlang's
//!   `pg:join/3` (a `gen_server:call`) has.
//! * A subscriber ([`Scope::monitor_scope`], [`Scope::monitor`]) gets [`Update`]s as
//!   messages of its own type (`N: From<Update>`), not `{Ref, join, Group, Pids}`
//!   tuples; it must be a process of this node, and its subscription ends with it
//!   (at the next update after its exit) or with [`Scope::demonitor`]. A subscriber
//!   with a bounded mailbox that is full misses the update (Erlang's mailboxes have
//!   no bound).
//! * `pg:start_link/1` links the scope to its caller; [`Node::pg_scope`] starts the
//!   scope on the node's runtime, unlinked, and returns the running one if there is
//!   one: it lives until [`Scope::stop`] or the runtime's end.
//! * The scope's name is one of the names the node exports to peers
//!   ([`Node::register`]'s): [`Node::pg_scope`] fails with [`PgError::NameTaken`] if
//!   another process has it, but a later [`Node::register`] of the name takes it from
//!   the scope (Erlang's `register/2` refuses a taken name), and peers' `discover`
//!   then goes to that process: leave the name to the scope.
//! * An Erlang scope that is started while a hidden otter node is connected discovers
//!   `nodes()` only, which leaves the otter node out. otter's scope sends `discover`
//!   again when a peer's scope exits while its node stays connected, which reaches
//!   a scope its supervisor restarted at once; a scope started later meets the otter
//!   scope at the next connection between the nodes (or make the otter node visible).

mod member;
mod scope;
mod table;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::etf::{self, Atom, Term};
use crate::dist::node::{Exported, Node, NodeEvent, exported};
use crate::error::TrySendError;
use crate::pid::{Pid, ProcessId};

pub use member::Member;
use scope::{Inbound, Shared};
use table::Key;

/// A node's running scopes, by name (`node.rs`).
pub(crate) type Scopes = Mutex<HashMap<Atom, Weak<Shared>>>;

/// A `pg` scope of this node (module docs). Cheap to clone; the scope runs until
/// [`Scope::stop`], not while a handle lives.
#[derive(Clone, Debug)]
pub struct Scope {
    shared: Arc<Shared>,
}

/// Whether an [`Update`] tells of a join or a leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The members joined the group (`{Ref, join, Group, Pids}`).
    Join,
    /// The members left it, or exited, or their node went (`{Ref, leave, Group, Pids}`).
    Leave,
}

/// A subscription of [`Scope::monitor_scope`] or [`Scope::monitor`] (Erlang's
/// reference of `pg:monitor_scope/1` and `pg:monitor/2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subscription(u64);

/// A change of a group, for a subscriber.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// The subscription it comes under.
    pub subscription: Subscription,
    /// Join or leave.
    pub event: Event,
    /// The group.
    pub group: Term,
    /// The members that joined or left (a process listed once per join).
    pub members: Vec<Member>,
}

/// Why a scope operation failed.
#[derive(Clone, Debug, PartialEq)]
pub enum PgError {
    /// A process of another node cannot join or leave here (Erlang's `{nolocal, Pid}`):
    /// it joins on its own node.
    NotLocal(ProcessId),
    /// The group does not encode as a term.
    Group(String),
    /// The scope name is not an atom (over 255 characters).
    BadName(String),
    /// Another process is registered under the scope's name for peers
    /// ([`Node::register`] and the like).
    NameTaken(String),
    /// The scope has stopped.
    Stopped,
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgError::NotLocal(p) => write!(f, "{p} is not a process of this node"),
            PgError::Group(e) => write!(f, "the group does not encode: {e}"),
            PgError::BadName(n) => write!(f, "{n:?} is not an atom"),
            PgError::NameTaken(n) => write!(f, "{n} is registered by another process"),
            PgError::Stopped => f.write_str("the scope has stopped"),
        }
    }
}

impl std::error::Error for PgError {}

impl Node {
    /// The `pg` scope `name` of this node, started if it is not running (Erlang's
    /// `pg:start(Scope)`; the default scope of `kernel` is `"pg"`). It discovers the
    /// scopes of the same name on every node this one is or gets connected to.
    pub fn pg_scope(&self, name: &str) -> Result<Scope, PgError> {
        let atom = Atom::try_new(name).ok_or_else(|| PgError::BadName(name.to_string()))?;
        let node = &self.shared;
        let mut scopes = node.pg.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = scopes.get(&atom).and_then(Weak::upgrade) {
            if !s.lock().stopped && s.pid.is_alive() {
                return Ok(Scope { shared: s });
            }
            // Stopped, or its process was killed: its name is free (a no-op if
            // stopped already).
            s.stop();
        }
        if node
            .names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&atom)
        {
            return Err(PgError::NameTaken(name.to_string()));
        }
        let pid = node.handle.spawn(scope::run);
        let shared = Arc::new(Shared::new(atom.clone(), node.clone(), pid));
        pid.send(Inbound::Start(shared.clone()));
        let e = Exported {
            pid: pid.raw,
            type_id: TypeId::of::<Inbound>(),
            deliver: scope::deliver,
            by_local_name: false,
        };
        node.export(e);
        node.export_name(name, e);
        scopes.insert(atom, Arc::downgrade(&shared));
        drop(scopes);
        // Every connection that comes up from now, and those up already (one may be
        // both: a second `discover` is answered with a `sync`, no harm).
        self.monitor_nodes(None, move |e| {
            pid.try_send(Inbound::Node(e.clone())).is_ok()
        });
        for n in self.nodes() {
            pid.send(Inbound::Node(NodeEvent::Up(n)));
        }
        Ok(Scope { shared })
    }
}

impl Scope {
    /// The scope's name.
    pub fn name(&self) -> &str {
        self.shared.name.as_str()
    }

    /// The scope process (its peers monitor it; its exit is the scope's end).
    pub fn id(&self) -> ProcessId {
        self.shared.pid.id()
    }

    /// The group `group` as a term.
    fn term<G: Serialize + ?Sized>(&self, group: &G) -> Result<Term, PgError> {
        let bytes = crate::dist::with_node(&self.shared.node, || etf::to_vec(group))
            .map_err(|e| PgError::Group(e.to_string()))?;
        Term::decode(&bytes).map_err(|e| PgError::Group(e.to_string()))
    }

    /// `pid` joins `group` (Erlang's `pg:join(Scope, Group, Pid)`); every peer scope is
    /// told. A process may join a group more than once: it is then listed, and must
    /// leave, once per join. A process that has exited joins and is removed at once.
    pub fn join<G, M>(&self, group: &G, pid: Pid<M>) -> Result<(), PgError>
    where
        G: Serialize + ?Sized,
        M: DeserializeOwned + From<BadTerm> + Send + 'static,
    {
        self.join_many(group, &[pid])
    }

    /// Every pid of `pids` joins `group` (`pg:join(Scope, Group, [Pid])`; the same pid
    /// may be there more than once). Nothing joins if one is of another node.
    pub fn join_many<G, M>(&self, group: &G, pids: &[Pid<M>]) -> Result<(), PgError>
    where
        G: Serialize + ?Sized,
        M: DeserializeOwned + From<BadTerm> + Send + 'static,
    {
        let group = self.term(group)?;
        if let Some(p) = pids.iter().find(|p| p.raw.is_remote()) {
            return Err(PgError::NotLocal(p.id()));
        }
        if pids.is_empty() {
            return Ok(());
        }
        let members: Vec<Member> = pids.iter().map(|p| Member::local::<M>(p.raw)).collect();
        for p in pids {
            self.shared.node.export(exported::<M>(p.raw));
        }
        let mut st = self.shared.lock();
        if st.stopped {
            return Err(PgError::Stopped);
        }
        self.shared.join_local(&mut st, &group, &members);
        Ok(())
    }

    /// `pid` leaves `group` once (`pg:leave(Scope, Group, Pid)`); false if it had not
    /// joined it (`not_joined`).
    pub fn leave<G, M>(&self, group: &G, pid: Pid<M>) -> Result<bool, PgError>
    where
        G: Serialize + ?Sized,
        M: Send + 'static,
    {
        self.leave_many(group, &[pid])
    }

    /// Every pid of `pids` leaves `group` once per listing (`pg:leave(Scope, Group,
    /// [Pid])`); false if none of them had joined it (`not_joined`).
    pub fn leave_many<G, M>(&self, group: &G, pids: &[Pid<M>]) -> Result<bool, PgError>
    where
        G: Serialize + ?Sized,
        M: Send + 'static,
    {
        let group = self.term(group)?;
        if let Some(p) = pids.iter().find(|p| p.raw.is_remote()) {
            return Err(PgError::NotLocal(p.id()));
        }
        let members: Vec<Member> = pids.iter().map(|p| Member::local::<M>(p.raw)).collect();
        let mut st = self.shared.lock();
        if st.stopped {
            return Err(PgError::Stopped);
        }
        Ok(self.shared.leave_local(&mut st, &group, &members))
    }

    /// The members of `group`, typed (`pg:get_members(Scope, Group)`): every remote
    /// member, and the local members that joined as `Pid<M>` ([`Member`]'s rule). A
    /// process is listed once per join. Empty if the group has none (or does not
    /// encode).
    pub fn members<G, M>(&self, group: &G) -> Vec<Pid<M>>
    where
        G: Serialize + ?Sized,
        M: Serialize + Send + 'static,
    {
        self.all_members(group)
            .iter()
            .filter_map(Member::pid)
            .collect()
    }

    /// The members of `group` on this node that joined as `Pid<M>`
    /// (`pg:get_local_members(Scope, Group)`).
    pub fn local_members<G, M>(&self, group: &G) -> Vec<Pid<M>>
    where
        G: Serialize + ?Sized,
        M: Serialize + Send + 'static,
    {
        self.with_group(group, |g| g.local.iter().filter_map(Member::pid).collect())
    }

    /// Every member of `group`, untyped.
    pub fn all_members<G: Serialize + ?Sized>(&self, group: &G) -> Vec<Member> {
        self.with_group(group, |g| g.all.clone())
    }

    fn with_group<G: Serialize + ?Sized, R: Default>(
        &self,
        group: &G,
        f: impl FnOnce(&table::Group) -> R,
    ) -> R {
        let Ok(t) = self.term(group) else {
            return R::default();
        };
        let key = Key::of(&t);
        self.shared
            .lock()
            .groups
            .get(&key)
            .map(f)
            .unwrap_or_default()
    }

    /// Every group with a member (`pg:which_groups(Scope)`), in no order.
    pub fn which_groups(&self) -> Vec<Term> {
        let st = self.shared.lock();
        st.groups.iter().map(|(_, g)| g.name.clone()).collect()
    }

    /// Every group with a member of this node (`pg:which_local_groups(Scope)`).
    pub fn which_local_groups(&self) -> Vec<Term> {
        let st = self.shared.lock();
        st.groups
            .iter()
            .filter(|(_, g)| !g.local.is_empty())
            .map(|(_, g)| g.name.clone())
            .collect()
    }

    /// Subscribes `pid` to every change of the scope (`pg:monitor_scope(Scope)`): it
    /// gets an [`Update`] per join and leave, as an `N`. The scope's groups and
    /// members now come with the subscription: nothing is missed between the two.
    pub fn monitor_scope<N>(&self, pid: Pid<N>) -> (Subscription, Vec<(Term, Vec<Member>)>)
    where
        N: From<Update> + Send + 'static,
    {
        let mut st = self.shared.lock();
        let now = st
            .groups
            .iter()
            .map(|(_, g)| (g.name.clone(), g.all.clone()))
            .collect();
        let s = self.shared.subscribe(&mut st, None, sink(pid));
        (s, now)
    }

    /// Subscribes `pid` to the changes of `group` (`pg:monitor(Scope, Group)`), as
    /// [`Scope::monitor_scope`]; with the group's members now.
    pub fn monitor<G, N>(
        &self,
        group: &G,
        pid: Pid<N>,
    ) -> Result<(Subscription, Vec<Member>), PgError>
    where
        G: Serialize + ?Sized,
        N: From<Update> + Send + 'static,
    {
        let key = Key::of(&self.term(group)?);
        let mut st = self.shared.lock();
        let now = st
            .groups
            .get(&key)
            .map(|g| g.all.clone())
            .unwrap_or_default();
        let s = self.shared.subscribe(&mut st, Some(key), sink(pid));
        Ok((s, now))
    }

    /// Ends a subscription (`pg:demonitor(Scope, Ref)`); false if there was none. Updates
    /// already sent stay in the subscriber's mailbox.
    pub fn demonitor(&self, s: Subscription) -> bool {
        self.shared.unsubscribe(s)
    }

    /// Stops the scope: its process exits, so peer scopes forget this node's members
    /// (their monitor of it fires), and this node forgets every member. A later
    /// [`Node::pg_scope`] of the name starts a new one.
    pub fn stop(&self) {
        self.shared.stop();
    }

    /// Whether the scope has stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.lock().stopped
    }
}

fn sink<N: From<Update> + Send + 'static>(pid: Pid<N>) -> Box<dyn Fn(Update) -> bool + Send> {
    Box::new(move |u| !matches!(pid.try_send(N::from(u)), Err(TrySendError::Exited(_))))
}
