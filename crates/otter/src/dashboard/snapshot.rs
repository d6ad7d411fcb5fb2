//! A snapshot of the processes for the page: the top [`TOP`] processes by each key,
//! each counter's delta since the previous snapshot, and the supervision tree; taken
//! by a walk of the table ([`Handle::processes`]) at most once per
//! [`SNAPSHOT_MAX_AGE`], when a request asks for it.
//!
//! A walk keeps, besides the snapshot, each process's polls and messages received
//! (for the next walk's deltas): a few words per process, not the processes' info. A
//! process the previous walk did not see (spawned since) has its totals as its
//! deltas; on the first walk every delta is 0.
//!
//! # Bounded cost
//!
//! A walk costs in proportion to the processes (on the order of 100 to 300 ns each,
//! most of it [`Handle::processes`]'s own reading), so on a large node a walk a second
//! would cost more than the dashboard may ([`WALK_SHARE`]). The next walk therefore
//! waits for [`SNAPSHOT_MAX_AGE`] or for the last walk's time divided by
//! [`WALK_SHARE`], whichever is longer: a node of 100,000 processes whose walk takes
//! 15 ms is walked every 3 s, and the page shows the snapshot's age. The maps of the
//! previous counters are kept from walk to walk (cleared, not freed) and hashed with a
//! multiply-rotate hash of the pid's two words, not SipHash: a pid is not chosen by a
//! client.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::json;
use super::{SNAPSHOT_MAX_AGE, TOP, TREE_CHILDREN};
use crate::introspect::{Kind, ProcessInfo, Status};
use crate::pid::ProcessId;
use crate::runtime::Handle;

/// The most of one core the walks may take on average: the next walk waits for the
/// last one's time divided by this (module docs, "Bounded cost").
pub const WALK_SHARE: f64 = 0.005;

/// A multiply-rotate hash for pids (module docs): the table's own keys, not a
/// client's.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type PidMap<V> = HashMap<ProcessId, V, BuildHasherDefault<PidHasher>>;

/// What `/api/processes` sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SortKey {
    /// Message queue length.
    Queue,
    /// Polls since the previous snapshot (then polls in all).
    Polls,
    /// Memory in all.
    Memory,
    /// Messages received since the previous snapshot (then in all).
    Received,
}

impl SortKey {
    pub(super) const ALL: [SortKey; 4] = [
        SortKey::Queue,
        SortKey::Polls,
        SortKey::Memory,
        SortKey::Received,
    ];

    pub(super) fn parse(s: &str) -> Option<SortKey> {
        Some(match s {
            "queue" => SortKey::Queue,
            "polls" => SortKey::Polls,
            "memory" => SortKey::Memory,
            "received" => SortKey::Received,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            SortKey::Queue => "queue",
            SortKey::Polls => "polls",
            SortKey::Memory => "memory",
            SortKey::Received => "received",
        }
    }

    fn of(self, r: &Row) -> (u64, u64) {
        match self {
            SortKey::Queue => (r.queue as u64, 0),
            SortKey::Polls => (r.polls_delta, r.polls),
            SortKey::Memory => (r.memory as u64, 0),
            SortKey::Received => (r.received_delta, r.received),
        }
    }
}

/// One process in the top table.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pid: ProcessId,
    name: Option<Arc<str>>,
    kind: Kind,
    status: Status,
    queue: usize,
    polls: u64,
    polls_delta: u64,
    received: u64,
    received_delta: u64,
    memory: usize,
}

/// A row in a heap, ordered by its key, then by pid (so equal keys keep a fixed order).
#[derive(Debug)]
struct Ranked {
    key: (u64, u64),
    row: Row,
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        (self.key, self.row.pid) == (o.key, o.row.pid)
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // The lower pid ranks higher among equals: older processes first.
        (self.key, Reverse(self.row.pid)).cmp(&(o.key, Reverse(o.row.pid)))
    }
}

/// One snapshot.
#[derive(Debug)]
pub(super) struct Snapshot {
    taken: Instant,
    /// How long the walk took.
    cost: Duration,
    /// Time since the previous snapshot, if there was one.
    interval: Option<Duration>,
    /// Processes seen by the walk.
    total: usize,
    /// The top rows per key (in [`SortKey::ALL`]'s order), highest first.
    top: [Vec<Row>; 4],
    /// The supervision tree, as JSON.
    tree: String,
    /// Cycles of processes calling each other (`introspect`'s "Calls").
    deadlocks: Vec<Vec<ProcessId>>,
}

impl Snapshot {
    /// `/api/processes`: the first `limit` rows by `key`.
    pub(super) fn processes_json(&self, key: SortKey, limit: usize) -> String {
        let rows = &self.top[SortKey::ALL.iter().position(|k| *k == key).unwrap_or(0)];
        let mut out = String::from("{");
        json::num(&mut out, true, "total", self.total);
        json::text(&mut out, false, "sort", key.name());
        json::num(&mut out, false, "age_ms", self.taken.elapsed().as_millis());
        json::num(&mut out, false, "walk_us", self.cost.as_micros());
        json::key(&mut out, false, "interval_ms");
        match self.interval {
            Some(d) => out.push_str(&d.as_millis().to_string()),
            None => out.push_str("null"),
        }
        json::key(&mut out, false, "rows");
        out.push('[');
        for (i, r) in rows.iter().take(limit).enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            write_brief(&mut out, r.pid, r.name.as_deref(), r.kind);
            json::text(&mut out, false, "status", status_name(r.status));
            json::num(&mut out, false, "queue", r.queue);
            json::num(&mut out, false, "polls", r.polls);
            json::num(&mut out, false, "polls_delta", r.polls_delta);
            json::num(&mut out, false, "received", r.received);
            json::num(&mut out, false, "received_delta", r.received_delta);
            json::num(&mut out, false, "memory", r.memory);
            out.push('}');
        }
        out.push_str("]}");
        out
    }

    /// `/api/tree`.
    /// The cycles of calls the walk found.
    pub(super) fn deadlocks(&self) -> &[Vec<ProcessId>] {
        &self.deadlocks
    }

    pub(super) fn tree_json(&self) -> &str {
        &self.tree
    }
}

/// The walker's state: the latest snapshot and each process's counters at it.
#[derive(Debug, Default)]
pub(super) struct Walker {
    latest: Option<Arc<Snapshot>>,
    previous: PidMap<(u64, u64)>,
    /// The map before `previous`, kept for its allocation.
    spare: PidMap<(u64, u64)>,
}

impl Walker {
    /// The latest snapshot if it is young enough (module docs, "Bounded cost"), else a
    /// new one.
    pub(super) fn snapshot(&mut self, handle: &Handle) -> Arc<Snapshot> {
        let now = Instant::now();
        if let Some(s) = &self.latest
            && now.saturating_duration_since(s.taken)
                < SNAPSHOT_MAX_AGE.max(s.cost.div_f64(WALK_SHARE))
        {
            return s.clone();
        }
        let s = Arc::new(self.walk(handle, now));
        self.latest = Some(s.clone());
        s
    }

    fn walk(&mut self, handle: &Handle, now: Instant) -> Snapshot {
        let first = self.latest.is_none();
        let mut next = std::mem::take(&mut self.spare);
        next.clear();
        let mut heaps: [BinaryHeap<Reverse<Ranked>>; 4] = Default::default();
        let mut tree = Tree::default();
        let mut waits = Vec::new();
        let mut total = 0;
        for info in handle.processes() {
            total += 1;
            waits.extend(info.callers.iter().map(|&c| (c, info.pid)));
            let (polls_before, received_before) = match self.previous.get(&info.pid) {
                Some(&p) => p,
                None if first => (info.polls, info.messages_received),
                None => (0, 0),
            };
            next.insert(info.pid, (info.polls, info.messages_received));
            tree.add(&info);
            let row = Row {
                pid: info.pid,
                name: info.name,
                kind: info.kind,
                status: info.status,
                queue: info.message_queue_len,
                polls: info.polls,
                polls_delta: info.polls.saturating_sub(polls_before),
                received: info.messages_received,
                received_delta: info.messages_received.saturating_sub(received_before),
                memory: info.memory.total(),
            };
            for (heap, key) in heaps.iter_mut().zip(SortKey::ALL) {
                let ranked = Ranked {
                    key: key.of(&row),
                    row: row.clone(),
                };
                if heap.len() < TOP {
                    heap.push(Reverse(ranked));
                } else if heap.peek().is_some_and(|Reverse(min)| ranked > *min) {
                    heap.pop();
                    heap.push(Reverse(ranked));
                }
            }
        }
        self.spare = std::mem::replace(&mut self.previous, next);
        let top = heaps.map(|h| {
            // `into_sorted_vec` of `Reverse` is highest first.
            h.into_sorted_vec()
                .into_iter()
                .map(|Reverse(r)| r.row)
                .collect()
        });
        Snapshot {
            taken: now,
            cost: now.elapsed(),
            interval: self
                .latest
                .as_ref()
                .map(|s| now.saturating_duration_since(s.taken)),
            total,
            top,
            tree: tree.to_json(),
            deadlocks: crate::introspect::cycles(waits),
        }
    }
}

/// The supervision tree as a walk gathers it.
#[derive(Debug, Default)]
struct Tree {
    /// Each supervisor (and acceptor): its own supervisor, name, and children (at
    /// most [`TREE_CHILDREN`], and how many more).
    supervisors: PidMap<Node>,
}

#[derive(Debug, Default)]
struct Node {
    /// Set once the supervisor itself is seen by the walk.
    seen: Option<(Option<Arc<str>>, Option<ProcessId>)>,
    children: Vec<(ProcessId, Option<Arc<str>>, Kind)>,
    more: usize,
}

impl Tree {
    fn add(&mut self, info: &ProcessInfo) {
        if info.kind == Kind::Supervisor {
            self.supervisors.entry(info.pid).or_default().seen =
                Some((info.name.clone(), info.supervisor));
        }
        // A connection hangs under the acceptor that accepted it (and linked it), as
        // a worker under its supervisor.
        let up = match info.kind {
            Kind::Connection => info.parent,
            _ => info.supervisor,
        };
        if let Some(sup) = up {
            let node = self.supervisors.entry(sup).or_default();
            if node.children.len() < TREE_CHILDREN {
                node.children.push((info.pid, info.name.clone(), info.kind));
            } else {
                node.more += 1;
            }
        }
    }

    /// `{"roots":[node..]}`, a node `{"pid","id","name","kind","children":[node..],"more":N}`;
    /// the roots are the supervisors with no live supervisor, in pid order; children
    /// are in the table's order (not their start order: a slot is reused).
    fn to_json(&self) -> String {
        let mut roots: Vec<ProcessId> = self
            .supervisors
            .iter()
            .filter_map(|(pid, n)| match n.seen {
                Some((_, None)) => Some(*pid),
                Some((_, Some(parent))) if !self.supervisors.contains_key(&parent) => Some(*pid),
                _ => None,
            })
            .collect();
        roots.sort();
        let mut out = String::from("{\"roots\":[");
        for (i, pid) in roots.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let name = self.supervisors[&pid]
                .seen
                .as_ref()
                .and_then(|s| s.0.clone());
            self.write_node(&mut out, pid, name.as_deref(), Kind::Supervisor);
        }
        out.push_str("]}");
        out
    }

    fn write_node(&self, out: &mut String, pid: ProcessId, name: Option<&str>, kind: Kind) {
        out.push('{');
        write_brief(out, pid, name, kind);
        json::key(out, false, "children");
        out.push('[');
        let node = self
            .supervisors
            .get(&pid)
            .filter(|_| matches!(kind, Kind::Supervisor | Kind::Acceptor));
        if let Some(node) = node {
            for (i, (child, name, kind)) in node.children.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                self.write_node(out, *child, name.as_deref(), *kind);
            }
        }
        out.push(']');
        json::num(out, false, "more", node.map_or(0, |n| n.more));
        out.push('}');
    }
}

/// `"pid":"<0.I.G>","id":"0.I.G","name":..,"kind":..` (the first fields of an object).
pub(super) fn write_brief(out: &mut String, pid: ProcessId, name: Option<&str>, kind: Kind) {
    let text = pid.to_string();
    json::text(out, true, "pid", &text);
    json::text(out, false, "id", text.trim_matches(['<', '>']));
    json::opt_text(out, false, "name", name);
    json::text(out, false, "kind", kind_name(kind));
}

pub(super) fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Process => "process",
        Kind::Server => "server",
        Kind::Statem => "statem",
        Kind::Supervisor => "supervisor",
        Kind::Acceptor => "acceptor",
        Kind::Connection => "connection",
    }
}

pub(super) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Running => "running",
        Status::Runnable => "runnable",
        Status::Waiting => "waiting",
        Status::Exiting => "exiting",
    }
}
