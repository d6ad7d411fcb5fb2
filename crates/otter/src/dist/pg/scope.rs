//! A scope's state and its process: local joins and leaves (on the caller's thread,
//! under the scope's lock), and what the scope process does with peers' messages,
//! connections coming up, and the `Down`s of members and peers.
//!
//! # Invariants
//!
//! * Every change of the tables, and every message to peers that tells of one, happens
//!   under [`Shared::state`]'s lock: the order in which peers are told is the order of
//!   the changes, as if one process (Erlang's scope server) made them all. A peer is
//!   told of a local change by a `join`/`leave` if it is in `peers` when the change is
//!   made, or by the `sync` it gets when it is added: never by both, never by neither.
//! * A local member is monitored once, however many groups it joined (`Local`): its
//!   `Down` removes it from each of them, once per join, and tells every peer.
//! * A peer (another node's scope process) is in `peers` from its first `discover` or
//!   `sync` until its monitor fires (it exited, or the connection went down:
//!   `Noconnection`); with it go its members. Only its own node's pids are taken from
//!   it, and only from the connection to that node: anything else is refused and
//!   logged once per peer node and kind of fault ([`MAX_LOGGED`] in all).
//! * Lock order: the scope's lock, then a process's bonds lock (monitoring a member) or
//!   a connection's. Nothing holds one of those while taking the scope's: a member's
//!   exit and a connection's loss only send to the scope process.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::dist::connection;
use crate::dist::control::Control;
use crate::dist::etf::{Atom, ExternalPid, Term};
use crate::dist::node::{NodeEvent, NodeShared};
use crate::dist::pg::member::Member;
use crate::dist::pg::table::{Groups, Key};
use crate::dist::pg::wire::{self, Message, WireError};
use crate::dist::pg::{Event, Subscription, Update};
use crate::monitor::{Down, MonitorRef};
use crate::pid::{Pid, ProcessId, RawPid};
use crate::process::Context;

/// The most distinct faults a scope logs (peer node, kind); after that, none.
const MAX_LOGGED: usize = 1024;

/// What the scope process receives.
pub(crate) enum Inbound {
    /// Its state: the first message, sent by whoever spawned it.
    Start(Arc<Shared>),
    /// A message from another node's scope process, decoded on the connection's reader
    /// (`via`: the peer of that connection).
    Peer {
        via: Atom,
        message: Result<Message, WireError>,
    },
    /// A connection came up or went down.
    Node(NodeEvent),
    /// A monitored member or peer exited.
    Down(Down),
    /// [`Scope::stop`](crate::dist::pg::Scope::stop).
    Stop,
}

impl From<Down> for Inbound {
    fn from(d: Down) -> Inbound {
        Inbound::Down(d)
    }
}

/// A local member: its monitor, and the groups it joined (once per join).
#[derive(Debug)]
struct Local {
    monitor: MonitorRef,
    member: Member,
    groups: Vec<Key>,
}

/// Another node's scope process: its monitor, and its members by group.
#[derive(Debug)]
struct Peer {
    monitor: MonitorRef,
    groups: HashMap<Key, (Term, Vec<Member>)>,
}

/// Where an update goes: false once its process has exited.
type Sink = Box<dyn Fn(Update) -> bool + Send>;

#[derive(Default)]
pub(crate) struct State {
    pub(crate) groups: Groups,
    local: HashMap<RawPid, Local>,
    peers: HashMap<ExternalPid, Peer>,
    /// The peers by their monitor's id.
    peer_monitors: HashMap<u64, ExternalPid>,
    /// `monitor_scope` subscribers.
    scope_subs: Vec<(u64, Sink)>,
    /// `monitor(Group)` subscribers, by group.
    group_subs: HashMap<Key, Vec<(u64, Sink)>>,
    /// Which group each subscription watches (`None`: the scope).
    subs: HashMap<u64, Option<Key>>,
    logged: HashSet<(Atom, &'static str)>,
    pub(crate) stopped: bool,
}

/// A scope: its name, its process, its tables.
pub(crate) struct Shared {
    pub(crate) name: Atom,
    pub(crate) node: Arc<NodeShared>,
    pub(crate) pid: Pid<Inbound>,
    /// The scope process's pid as peers know it.
    me: ExternalPid,
    state: Mutex<State>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Shared {
    pub(crate) fn new(name: Atom, node: Arc<NodeShared>, pid: Pid<Inbound>) -> Shared {
        let me = node.external_pid(pid.raw);
        Shared {
            name,
            node,
            pid,
            me,
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // ===== local changes (the caller's thread) =====

    /// Joins `members` (local, alive or not) to `group`, and tells the peers. A member
    /// already gone is removed again when its `Noproc` comes.
    pub(crate) fn join_local(&self, st: &mut State, group: &Term, members: &[Member]) {
        let key = Key::of(group);
        for m in members {
            match st.local.get_mut(&m.raw) {
                Some(l) => l.groups.push(key.clone()),
                None => {
                    let (monitor, arm) = crate::process::monitor_for(self.pid, m.id());
                    st.local.insert(
                        m.raw,
                        Local {
                            monitor,
                            member: *m,
                            groups: vec![key.clone()],
                        },
                    );
                    arm();
                }
            }
        }
        st.groups.join(&key, group, members, true);
        notify(st, &key, group, Event::Join, members);
        let pids: Vec<ExternalPid> = members
            .iter()
            .map(|m| self.node.external_pid(m.raw))
            .collect();
        self.broadcast(st, &wire::join(&self.me, group, &pids));
    }

    /// Removes one join of each of `members` from `group`; false if none had joined
    /// it (Erlang's `not_joined`).
    pub(crate) fn leave_local(&self, st: &mut State, group: &Term, members: &[Member]) -> bool {
        let key = Key::of(group);
        let mut left = Vec::with_capacity(members.len());
        for m in members {
            let Some(l) = st.local.get_mut(&m.raw) else {
                continue;
            };
            let Some(i) = l.groups.iter().position(|k| *k == key) else {
                continue;
            };
            l.groups.swap_remove(i);
            left.push(l.member);
            if l.groups.is_empty() {
                let l = st.local.remove(&m.raw).expect("just found");
                crate::process::bonds::remove_watcher(m.raw, l.monitor.id);
            }
        }
        if left.is_empty() {
            return false;
        }
        st.groups.leave(&key, &left, true);
        notify(st, &key, group, Event::Leave, &left);
        let pids: Vec<ExternalPid> = left.iter().map(|m| self.node.external_pid(m.raw)).collect();
        self.broadcast(
            st,
            &wire::leave(&self.me, &pids, std::slice::from_ref(group)),
        );
        true
    }

    /// Subscribes `sink` to the changes of `group` (`None`: of every group).
    pub(crate) fn subscribe(&self, st: &mut State, group: Option<Key>, sink: Sink) -> Subscription {
        let id = crate::monitor::next_id();
        match &group {
            None => st.scope_subs.push((id, sink)),
            Some(k) => st.group_subs.entry(k.clone()).or_default().push((id, sink)),
        }
        st.subs.insert(id, group);
        Subscription(id)
    }

    /// Ends a subscription; false if there was none.
    pub(crate) fn unsubscribe(&self, s: Subscription) -> bool {
        let mut st = self.lock();
        match st.subs.remove(&s.0) {
            None => false,
            Some(None) => {
                st.scope_subs.retain(|(id, _)| *id != s.0);
                true
            }
            Some(Some(k)) => {
                if let Some(v) = st.group_subs.get_mut(&k) {
                    v.retain(|(id, _)| *id != s.0);
                    if v.is_empty() {
                        st.group_subs.remove(&k);
                    }
                }
                true
            }
        }
    }

    // ===== the scope process =====

    /// Sends `payload` to another node's process, if the connection to its node is up
    /// (pg's `noconnect`: a scope never makes a connection).
    fn send_to(&self, to: &ExternalPid, payload: &[u8]) {
        if let Some(c) = connection::get(&self.node, &to.node)
            && c.is_up()
            && let Ok(f) = connection::frame_raw(&Control::Send { to: to.clone() }, payload)
        {
            c.send_frame(f);
        }
    }

    fn broadcast(&self, st: &State, payload: &[u8]) {
        for p in st.peers.keys() {
            self.send_to(p, payload);
        }
    }

    /// `{discover, Self}` to `{Scope, Node}`: a connection to `node` came up. Erlang's
    /// scope does it on `nodeup`, which a hidden node's connection does not raise on
    /// the Erlang side: so this side always starts.
    fn discover(&self, node: &str) {
        let Some(peer) = Atom::try_new(node) else {
            return;
        };
        if peer == self.node.name {
            return;
        }
        if let Some(c) = connection::get(&self.node, &peer)
            && c.is_up()
            && let Ok(f) = connection::frame_raw(
                &Control::RegSend {
                    from: self.me.clone(),
                    to: self.name.clone(),
                },
                &wire::discover(&self.me),
            )
        {
            c.send_frame(f);
        }
    }

    /// Our local members by group, for a `sync`.
    fn local_groups(&self, st: &State) -> Vec<(Term, Vec<ExternalPid>)> {
        st.groups
            .iter()
            .filter(|(_, g)| !g.local.is_empty())
            .map(|(_, g)| {
                let pids = g
                    .local
                    .iter()
                    .map(|m| self.node.external_pid(m.raw))
                    .collect();
                (g.name.clone(), pids)
            })
            .collect()
    }

    /// Adds `peer` (pid of `via`'s scope) if it is new: monitors it. Whether it was new.
    fn add_peer(&self, st: &mut State, peer: &ExternalPid, via: &Atom) -> bool {
        if st.peers.contains_key(peer) {
            return false;
        }
        let raw = crate::dist::remote::intern(&self.node, peer, via);
        let (monitor, arm) = crate::process::monitor_for(self.pid, ProcessId(raw));
        st.peer_monitors.insert(monitor.id, peer.clone());
        st.peers.insert(
            peer.clone(),
            Peer {
                monitor,
                groups: HashMap::new(),
            },
        );
        arm();
        true
    }

    fn message(&self, via: &Atom, message: Result<Message, WireError>) {
        let mut st = self.lock();
        if st.stopped {
            return;
        }
        let m = match message {
            Ok(m) => m,
            Err(e) => {
                return self.log_once(&mut st, via, "malformed", || {
                    format!("a message from {via} refused: {e}")
                });
            }
        };
        if *via == self.node.name {
            return self.log_once(&mut st, via, "own", || {
                "a pg message from this node itself ignored".to_string()
            });
        }
        if !connection::get(&self.node, via).is_some_and(|c| c.is_up()) {
            // Read before its connection went down: the peer's `Down` follows, and a
            // monitor set now would connect again (a scope never connects).
            return;
        }
        if m.peer().node != *via {
            return self.log_once(&mut st, via, "forged peer", || {
                format!(
                    "a message from {via} claims to come from {}, a process of another node: refused",
                    Term::Pid(m.peer().clone())
                )
            });
        }
        if let Some(p) = m.members().find(|p| p.node != *via) {
            return self.log_once(&mut st, via, "forged member", || {
                format!(
                    "{via} names {}, a process of another node, as its member \
                     (a node may only join its own processes): refused",
                    Term::Pid(p.clone())
                )
            });
        }
        let intern = |pids: &[ExternalPid]| -> Vec<Member> {
            pids.iter()
                .map(|p| Member::remote(crate::dist::remote::intern(&self.node, p, via)))
                .collect()
        };
        match m {
            Message::Discover { peer } => {
                self.send_to(&peer, &wire::sync(&self.me, &self.local_groups(&st)));
                if self.add_peer(&mut st, &peer, via) {
                    self.send_to(&peer, &wire::discover(&self.me));
                }
            }
            Message::Sync { peer, groups } => {
                self.add_peer(&mut st, &peer, via);
                let mut new: HashMap<Key, (Term, Vec<Member>)> = HashMap::new();
                for (g, pids) in groups {
                    let members = intern(&pids);
                    new.entry(Key::of(&g))
                        .or_insert_with(|| (g, Vec::new()))
                        .1
                        .extend(members);
                }
                sync(&mut st, &peer, new);
            }
            Message::Join { peer, group, pids } => {
                if !st.peers.contains_key(&peer) {
                    return self.outside(&mut st, via, "join");
                }
                if pids.is_empty() {
                    return;
                }
                let members = intern(&pids);
                let key = Key::of(&group);
                st.groups.join(&key, &group, &members, false);
                let p = st.peers.get_mut(&peer).expect("checked");
                p.groups
                    .entry(key.clone())
                    .or_insert_with(|| (group.clone(), Vec::new()))
                    .1
                    .extend_from_slice(&members);
                notify(&mut st, &key, &group, Event::Join, &members);
            }
            Message::Leave { peer, pids, groups } => {
                if !st.peers.contains_key(&peer) {
                    return self.outside(&mut st, via, "leave");
                }
                let members = intern(&pids);
                for group in groups {
                    let key = Key::of(&group);
                    let gone = remove_remote(&mut st, &peer, &key, &members);
                    if !gone.is_empty() {
                        notify(&mut st, &key, &group, Event::Leave, &gone);
                    }
                }
            }
        }
    }

    fn outside(&self, st: &mut State, via: &Atom, what: &'static str) {
        self.log_once(st, via, what, || {
            format!(
                "a {what} from a scope of {via} that is not in this scope's overlay \
                 (no discover or sync from it): ignored"
            )
        });
    }

    fn down(&self, d: Down) {
        let mut st = self.lock();
        if let Some(peer) = st.peer_monitors.remove(&d.reference.id) {
            let Some(p) = st.peers.remove(&peer) else {
                return;
            };
            for (key, (group, members)) in p.groups {
                let gone = st.groups.leave(&key, &members, false);
                if !gone.is_empty() {
                    notify(&mut st, &key, &group, Event::Leave, &gone);
                }
            }
            drop(st);
            // Its scope exited, its node is still there: a scope restarted by its
            // supervisor answers this (Erlang's new scope discovers `nodes()`, which
            // leaves out a hidden node).
            self.discover(peer.node.as_str());
            return;
        }
        let raw = d.pid.0;
        if st
            .local
            .get(&raw)
            .is_none_or(|l| l.monitor.id != d.reference.id)
        {
            // It left every group before its `Down` came.
            return;
        }
        let l = st.local.remove(&raw).expect("just found");
        // The names first: a group joined twice may be gone after its first leave.
        let named: Vec<(&Key, Term)> = l
            .groups
            .iter()
            .filter_map(|k| Some((k, st.groups.get(k)?.name.clone())))
            .collect();
        let mut names = Vec::with_capacity(named.len());
        for (key, name) in named {
            st.groups.leave(key, &[l.member], true);
            notify(&mut st, key, &name, Event::Leave, &[l.member]);
            names.push(name);
        }
        let pid = self.node.external_pid(raw);
        self.broadcast(&st, &wire::leave(&self.me, &[pid], &names));
    }

    fn log_once(
        &self,
        st: &mut State,
        via: &Atom,
        kind: &'static str,
        line: impl FnOnce() -> String,
    ) {
        if st.logged.len() >= MAX_LOGGED || !st.logged.insert((via.clone(), kind)) {
            return;
        }
        let line = format!(
            "pg scope {}: {} (logged once per node and kind)",
            self.name,
            line()
        );
        crate::report::dist_fault("pg", &line);
    }

    /// The scope stops: its members are forgotten (peers drop them when its process's
    /// monitor fires), its name is free again at once; then its process exits.
    pub(crate) fn stop(&self) {
        let mut st = self.lock();
        if st.stopped {
            return;
        }
        st.stopped = true;
        for (raw, l) in st.local.drain() {
            crate::process::bonds::remove_watcher(raw, l.monitor.id);
        }
        for (_, p) in st.peers.drain() {
            crate::process::bonds::remove_watcher(p.monitor.target, p.monitor.id);
        }
        st.peer_monitors.clear();
        st.groups.clear();
        st.scope_subs.clear();
        st.group_subs.clear();
        st.subs.clear();
        drop(st);
        let mut names = self
            .node
            .names
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if names.get(&self.name).is_some_and(|e| e.pid == self.pid.raw) {
            names.remove(&self.name);
        }
        drop(names);
        self.pid.send(Inbound::Stop);
    }
}

/// Replaces what `peer` said it has with `new` (`pg.erl`'s `handle_sync`): groups it
/// no longer lists lose its members, the others get the difference.
fn sync(st: &mut State, peer: &ExternalPid, new: HashMap<Key, (Term, Vec<Member>)>) {
    let old = std::mem::take(&mut st.peers.get_mut(peer).expect("added").groups);
    for (key, (group, members)) in &old {
        if !new.contains_key(key) {
            let gone = st.groups.leave(key, members, false);
            if !gone.is_empty() {
                notify(st, key, group, Event::Leave, &gone);
            }
        }
    }
    for (key, (group, members)) in &new {
        let before = old.get(key).map(|(_, m)| m.as_slice()).unwrap_or(&[]);
        let removed = minus(before, members);
        let added = minus(members, before);
        if !removed.is_empty() {
            let gone = st.groups.leave(key, &removed, false);
            if !gone.is_empty() {
                notify(st, key, group, Event::Leave, &gone);
            }
        }
        if !added.is_empty() {
            st.groups.join(key, group, &added, false);
            notify(st, key, group, Event::Join, &added);
        }
    }
    st.peers.get_mut(peer).expect("added").groups = new;
}

/// `a -- b`: `a` without one listing of each of `b`.
fn minus(a: &[Member], b: &[Member]) -> Vec<Member> {
    let mut out = a.to_vec();
    for m in b {
        if let Some(i) = out.iter().position(|x| x == m) {
            out.swap_remove(i);
        }
    }
    out
}

/// Removes one listing of each of `members` from `peer`'s `key` group, in its record
/// and in the table; the ones that were there.
fn remove_remote(st: &mut State, peer: &ExternalPid, key: &Key, members: &[Member]) -> Vec<Member> {
    let Some(p) = st.peers.get_mut(peer) else {
        return Vec::new();
    };
    let Some((_, theirs)) = p.groups.get_mut(key) else {
        return Vec::new();
    };
    let mut gone = Vec::with_capacity(members.len());
    for m in members {
        if let Some(i) = theirs.iter().position(|x| x == m) {
            theirs.swap_remove(i);
            gone.push(*m);
        }
    }
    if theirs.is_empty() {
        p.groups.remove(key);
    }
    st.groups.leave(key, &gone, false)
}

/// Tells the subscribers of the scope and of `key` that `members` joined or left.
fn notify(st: &mut State, key: &Key, group: &Term, event: Event, members: &[Member]) {
    let State {
        scope_subs,
        group_subs,
        subs,
        ..
    } = st;
    let update = |id: u64| Update {
        subscription: Subscription(id),
        event,
        group: group.clone(),
        members: members.to_vec(),
    };
    // User code (`N::from(Update)`): a subscriber whose conversion panics is dropped.
    let send =
        |id: u64, sink: &Sink| crate::unwind::catch_panic(|| sink(update(id))).unwrap_or(false);
    scope_subs.retain(|(id, sink)| send(*id, sink) || subs.remove(id).is_none());
    if let Some(v) = group_subs.get_mut(key) {
        v.retain(|(id, sink)| send(*id, sink) || subs.remove(id).is_none());
        if v.is_empty() {
            group_subs.remove(key);
        }
    }
}

/// The scope process (module docs).
pub(crate) async fn run(mut cx: Context<Inbound>) {
    let shared = match cx.recv().await {
        Inbound::Start(s) => s,
        _ => return,
    };
    loop {
        match cx.recv().await {
            Inbound::Peer { via, message } => shared.message(&via, message),
            Inbound::Node(NodeEvent::Up(node)) => shared.discover(&node),
            // The peers' monitors fire with `Noconnection`.
            Inbound::Node(NodeEvent::Down(_)) => {}
            Inbound::Down(d) => shared.down(d),
            Inbound::Stop => break,
            Inbound::Start(_) => {}
        }
    }
    // After `Scope::stop`; or from elsewhere, a no-op.
    shared.stop();
}

/// How a message from another node reaches the scope process: decoded here, on the
/// connection's reader, with the peer it came from (`node.rs`'s `Exported`).
pub(crate) fn deliver(node: &Arc<NodeShared>, to: RawPid, payload: &[u8]) {
    let via = crate::dist::current_via().unwrap_or_else(|| node.name.clone());
    let message = wire::decode(payload);
    let _ = Pid::<Inbound>::from_raw(to).try_send(Inbound::Peer { via, message });
}
