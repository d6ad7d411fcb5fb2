//! The runtime's and its workers' counters (the module docs' rules 6 and 7): each
//! written by its one owner, read racily by [`Handle::runtime_info`](crate::Handle::runtime_info).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::exit::ExitReason;
use crate::scheduler::{STREAMING, Shared};

/// Exits counted by the kind of their reason.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exits {
    /// `Normal`.
    pub normal: u64,
    /// `Shutdown`, `ShutdownWith`.
    pub shutdown: u64,
    /// `Killed` (and `Kill`, if a process returns it).
    pub killed: u64,
    /// `Panic`.
    pub panic: u64,
    /// `Error`.
    pub error: u64,
    /// `Noproc`, `Noconnection`.
    pub other: u64,
}

impl Exits {
    /// Every exit counted.
    pub fn total(&self) -> u64 {
        self.normal + self.shutdown + self.killed + self.panic + self.error + self.other
    }

    fn add(&mut self, o: &Exits) {
        self.normal += o.normal;
        self.shutdown += o.shutdown;
        self.killed += o.killed;
        self.panic += o.panic;
        self.error += o.error;
        self.other += o.other;
    }
}

/// One worker's counters (a spare thread's too: `spare`).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Its index among the runtime's worker slots.
    pub index: usize,
    /// Whether it is a spare thread's slot (standing in for a worker held by one poll).
    pub spare: bool,
    /// Turns it has started (a poll each, or a turn renewed in place).
    pub polls: u64,
    /// Time spent running processes, up to its latest search (module docs).
    pub busy: Duration,
    /// Processes it took from another worker (a steal of half a queue counts once).
    pub steals: u64,
    /// Times it parked (slept until woken or for a short recheck).
    pub parks: u64,
    /// Processes spawned on it.
    pub spawns: u64,
    /// Processes that exited on it.
    pub exits: Exits,
    /// Sends from it to pids that named no process (dropped, as in Erlang).
    pub dead_sends: u64,
    /// Processes waiting to run on it at the read: its local queue, its LIFO slot and
    /// its spawn stack (a snapshot of each, racy against the worker).
    pub run_queue: usize,
}

/// A runtime's counters ([`Handle::runtime_info`](crate::Handle::runtime_info)).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// Live processes: spawned minus exited.
    pub processes: u64,
    /// Processes spawned since the start.
    pub spawns: u64,
    /// Exits since the start, by reason.
    pub exits: Exits,
    /// Sends from its workers to pids that named no process (a local pid that has
    /// exited, or a remote one whose node cannot be reached).
    pub dead_sends: u64,
    /// Processes waiting in the global queue (put there from outside the workers, or
    /// by a worker whose local queue was full) at the read.
    pub global_queue: usize,
    /// Time since the runtime started.
    pub uptime: Duration,
    /// Each worker slot that has run (spares that never started are left out).
    pub workers: Vec<WorkerInfo>,
    /// Timers armed now (`send_after`, intervals, sleeps, receive and call timeouts).
    pub timers: usize,
    /// Timers fired since the start.
    pub timers_fired: u64,
    /// Readiness events the reactor has dispatched since the start (0 without sockets).
    pub reactor_events: u64,
}

/// A per-worker counter: written by its worker only, with a load and a store.
#[derive(Debug, Default)]
struct Counter(AtomicU64);

impl Counter {
    #[inline]
    fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The counts a worker thread keeps for itself between flushes (module docs, rule 6):
/// a spawn or an exit adds to a thread-local, a few instructions with no lookup of
/// the worker, and [`flush`] copies the totals into the worker's [`WorkerStats`].
struct Local {
    spawns: Cell<u64>,
    exits: [Cell<u64>; 6],
    dead_sends: Cell<u64>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            spawns: Cell::new(0),
            exits: [const { Cell::new(0) }; 6],
            dead_sends: Cell::new(0),
        }
    };
}

fn bump(c: &Cell<u64>) {
    c.set(c.get().wrapping_add(1));
}

/// A process spawned on this thread, a worker's (`Shared::schedule_spawned`).
#[inline]
pub(crate) fn count_spawn() {
    LOCAL.with(|l| bump(&l.spawns));
}

/// A process that exits on this thread, a worker's (`Task::exit`).
#[inline]
pub(crate) fn count_exit(reason: &ExitReason) {
    let slot = exit_slot(reason);
    LOCAL.with(|l| bump(&l.exits[slot]));
}

/// A send to a pid that resolved to no process (a send from a thread that is no
/// worker is never flushed: it has no runtime to count in).
#[cold]
pub(crate) fn count_dead_send() {
    LOCAL.with(|l| bump(&l.dead_sends));
}

/// Copies this worker thread's counts into its `WorkerStats`: every
/// `GLOBAL_INTERVAL` ticks, when it starts a search, when a spare goes dormant, and
/// when it leaves. A thread is one worker slot for its whole life, so the totals are
/// that slot's.
pub(crate) fn flush(stats: &WorkerStats) {
    LOCAL.with(|l| {
        stats.spawns.set(l.spawns.get());
        for (to, from) in stats.exits.iter().zip(&l.exits) {
            to.set(from.get());
        }
        stats.dead_sends.set(l.dead_sends.get());
    });
}

/// A worker's counters (module docs, rule 6); in its `Remote`.
#[derive(Debug)]
pub(crate) struct WorkerStats {
    spawns: Counter,
    exits: [Counter; 6],
    steals: Counter,
    parks: Counter,
    busy_ns: Counter,
    dead_sends: Counter,
    /// Written by the watchdog only: the worker's tick it found unchanged for a
    /// watchdog period or more with the worker busy, and since when (ns from the
    /// runtime's start), or [`NOT_HELD`].
    pub(super) held_tick: AtomicU64,
    pub(super) held_since_ns: AtomicU64,
}

/// [`WorkerStats::held_since_ns`] of a worker not held by one poll.
pub(super) const NOT_HELD: u64 = u64::MAX;

impl WorkerStats {
    /// The watchdog found the worker busy inside the poll that began tick `tick`,
    /// unchanged since `since` (a look at least a watchdog period later).
    pub(crate) fn held(&self, rt: &RuntimeStats, tick: u64, since: Instant) {
        if self.held_since_ns.load(Ordering::Relaxed) == NOT_HELD
            || self.held_tick.load(Ordering::Relaxed) != tick
        {
            let ns = since.saturating_duration_since(rt.start).as_nanos();
            self.held_tick.store(tick, Ordering::Relaxed);
            self.held_since_ns
                .store(u64::try_from(ns).unwrap_or(NOT_HELD - 1), Ordering::Relaxed);
        }
    }

    /// The watchdog saw the worker's tick move (or the worker idle): not held.
    pub(crate) fn not_held(&self) {
        if self.held_since_ns.load(Ordering::Relaxed) != NOT_HELD {
            self.held_since_ns.store(NOT_HELD, Ordering::Relaxed);
        }
    }

    /// A steal from another worker.
    pub(crate) fn stole(&self) {
        self.steals.add(1);
    }

    /// A park.
    pub(crate) fn parked(&self) {
        self.parks.add(1);
    }

    /// Time spent running processes.
    pub(crate) fn busy(&self, d: Duration) {
        self.busy_ns
            .add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    fn exits(&self) -> Exits {
        let e = &self.exits;
        Exits {
            normal: e[0].get(),
            shutdown: e[1].get(),
            killed: e[2].get(),
            panic: e[3].get(),
            error: e[4].get(),
            other: e[5].get(),
        }
    }
}

fn exit_slot(reason: &ExitReason) -> usize {
    match reason {
        ExitReason::Normal => 0,
        ExitReason::Shutdown | ExitReason::ShutdownWith(_) => 1,
        ExitReason::Kill | ExitReason::Killed => 2,
        ExitReason::Panic(_) => 3,
        ExitReason::Error(_) => 4,
        ExitReason::Noproc | ExitReason::Noconnection => 5,
    }
}

/// A runtime's own counters and its coarse clock; in its `Shared`.
#[derive(Debug)]
pub(crate) struct RuntimeStats {
    pub(super) start: Instant,
    /// Milliseconds from `start`, advanced by the watchdog and by workers coming back
    /// from a park (module docs, rule 4); only ever moved forward.
    clock_ms: AtomicU64,
    /// Spawns from threads that are not workers (a read-modify-write: they are few).
    outside_spawns: AtomicU64,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            spawns: Counter::default(),
            exits: Default::default(),
            steals: Counter::default(),
            parks: Counter::default(),
            busy_ns: Counter::default(),
            dead_sends: Counter::default(),
            held_tick: AtomicU64::new(0),
            held_since_ns: AtomicU64::new(NOT_HELD),
        }
    }
}

impl Default for RuntimeStats {
    fn default() -> Self {
        RuntimeStats {
            start: Instant::now(),
            clock_ms: AtomicU64::new(0),
            outside_spawns: AtomicU64::new(0),
        }
    }
}

impl RuntimeStats {
    /// Advances the coarse clock to `now` (several writers; it only moves forward, and
    /// a store is skipped while the millisecond has not changed).
    pub(crate) fn tick_clock(&self, now: Instant) {
        let ms = now.saturating_duration_since(self.start).as_millis() as u64;
        if ms > self.clock_ms.load(Ordering::Relaxed) {
            self.clock_ms.fetch_max(ms, Ordering::Relaxed);
        }
    }

    /// The coarse clock: what a spawn on a worker records.
    #[inline]
    pub(crate) fn coarse_ms(&self) -> u64 {
        self.clock_ms.load(Ordering::Relaxed)
    }

    /// A spawn from a thread that is not a worker.
    pub(crate) fn spawned_outside(&self) {
        self.outside_spawns.fetch_add(1, Ordering::Relaxed);
    }
}

pub(super) fn runtime_info(rt: &Shared) -> RuntimeInfo {
    let (timers, timers_fired) = rt.services.timer.counts();
    let mut spawns = rt.services.stats.outside_spawns.load(Ordering::Relaxed);
    let mut exits = Exits::default();
    let mut dead_sends = 0;
    let mut workers = Vec::new();
    for (index, w) in rt.workers.iter().enumerate() {
        let s = &w.stats;
        let info = WorkerInfo {
            index,
            spare: index >= rt.threads,
            polls: w.ticks.load(Ordering::Relaxed) & !STREAMING,
            busy: Duration::from_nanos(s.busy_ns.get()),
            steals: s.steals.get(),
            parks: s.parks.get(),
            spawns: s.spawns.get(),
            exits: s.exits(),
            dead_sends: s.dead_sends.get(),
            run_queue: w.local.len() + usize::from(!w.lifo.is_empty()) + w.spawned.len(),
        };
        spawns += info.spawns;
        dead_sends += info.dead_sends;
        exits.add(&info.exits);
        if index < rt.threads || info.polls > 0 || info.parks > 0 {
            workers.push(info);
        }
    }
    RuntimeInfo {
        // Read racily: an exit counted before its spawn's worker counter was read.
        processes: spawns.saturating_sub(exits.total()),
        spawns,
        exits,
        dead_sends,
        global_queue: rt.injector.len(),
        uptime: rt.services.stats.start.elapsed(),
        workers,
        timers,
        timers_fired,
        reactor_events: rt.io.get().map_or(0, |r| r.events()),
    }
}
