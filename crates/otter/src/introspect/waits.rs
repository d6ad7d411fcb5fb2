//! Who waits on whom, and who holds a worker: [`Handle::stuck`](crate::Handle::stuck)
//! and [`Handle::deadlocks`](crate::Handle::deadlocks) (the module docs' "Calls" and
//! "Stuck processes").

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::ProcessInfo;
use super::counters::NOT_HELD;
use crate::pid::{ProcessId, RawPid};
use crate::scheduler::{STREAMING, Shared};

/// A process inside one long poll ([`Handle::stuck`](crate::Handle::stuck)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// The process.
    pub pid: ProcessId,
    /// The worker slot it holds (a spare's slot if a spare thread polls it).
    pub worker: usize,
    /// How long it has been inside this poll, at least (the watchdog's first look
    /// after the poll began, at most a watchdog period late).
    pub polling_for: Duration,
}

pub(super) fn stuck(rt: &Shared, min: Duration) -> Vec<Stuck> {
    let now = rt.services.stats.start.elapsed();
    let mut out = Vec::new();
    for (worker, w) in rt.workers.iter().enumerate() {
        let s = &w.stats;
        let since = s.held_since_ns.load(Ordering::Relaxed);
        if since == NOT_HELD
            || !w.busy.load(Ordering::Relaxed)
            || w.ticks.load(Ordering::Relaxed) & !STREAMING != s.held_tick.load(Ordering::Relaxed)
        {
            continue;
        }
        let polling_for = now.saturating_sub(Duration::from_nanos(since));
        let pid = RawPid::from_word(w.polling.load(Ordering::Relaxed));
        if polling_for >= min && pid != RawPid::OUTSIDE {
            out.push(Stuck {
                pid: ProcessId(pid),
                worker,
                polling_for,
            });
        }
    }
    out
}

/// The cycles of the wait-for graph of calls (each caller waits on one server at a
/// time), each from its lowest pid, sorted.
pub(super) fn deadlocks(processes: impl Iterator<Item = ProcessInfo>) -> Vec<Vec<ProcessId>> {
    cycles(processes.flat_map(|p| {
        let server = p.pid;
        p.callers.into_iter().map(move |c| (c, server))
    }))
}

/// The cycles of a wait-for graph given as (caller, server) edges, each caller waiting
/// on one server (a later edge of the same caller replaces an earlier one): each cycle
/// once, from its lowest pid, sorted.
pub(crate) fn cycles(
    waits: impl IntoIterator<Item = (ProcessId, ProcessId)>,
) -> Vec<Vec<ProcessId>> {
    let waits: HashMap<ProcessId, ProcessId> = waits.into_iter().collect();
    // Walk from each process along its waits; a walk that comes back to a process of
    // its own path has found a cycle. Each process is finished once.
    let mut done: HashSet<ProcessId> = HashSet::new();
    let mut cycles = Vec::new();
    let mut starts: Vec<ProcessId> = waits.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        let mut path: Vec<ProcessId> = Vec::new();
        let mut at = start;
        loop {
            if done.contains(&at) {
                break;
            }
            if let Some(i) = path.iter().position(|&p| p == at) {
                let mut cycle = path[i..].to_vec();
                let lowest = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
                cycle.rotate_left(lowest);
                cycles.push(cycle);
                break;
            }
            path.push(at);
            match waits.get(&at) {
                Some(&next) => at = next,
                None => break,
            }
        }
        done.extend(path);
    }
    cycles.sort();
    cycles
}
