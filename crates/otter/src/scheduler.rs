//! The scheduler behind a runtime (`runtime.rs`): worker threads, run queues, and the
//! ways in from outside.
//!
//! M:N scheduling on one worker thread per core (by default). Each worker has a local
//! run queue and a LIFO slot (`scheduler/queue.rs`) and a spawn stack
//! (`scheduler/spawn_stack.rs`); a global injector takes work from outside the workers;
//! idle workers steal half of a busy worker's queue and otherwise spin for a while, then
//! park (`scheduler/park.rs`). The order in which a worker picks its next process is in
//! `scheduler/worker.rs`.
//!
//! # The one circle of modules
//!
//! A runtime runs processes (`process/harness.rs`: `Task`), and a process schedules
//! itself on its runtime (its header points to [`Shared`]): the process core and the
//! scheduler import each other, as tokio's task and scheduler modules do. tokio's
//! wake-up calls its scheduler through the task's vtable, which here cost every
//! message 2–3% (docs/design/0047). Which modules are on each side, and the leaves
//! that import neither: ARCHITECTURE.md, "The tree".
//!
//! # Where a woken process goes
//!
//! * Woken by a message (or any waker) on one of its own runtime's workers: that
//!   worker's LIFO slot; a process displaced from the slot goes to the local queue.
//! * Spawned on a worker: its LIFO slot if empty, else its spawn stack or local queue
//!   (`spawn_stack.rs`, rule 1). The BEAM runs every spawn first in, first out.
//! * Yielding: the back of that worker's local queue.
//! * From any other thread: the injector, and a parked worker is woken unless one
//!   searches.
//!
//! "The back of the local queue" is the injector's once the local queue has overflowed,
//! so that a worker runs its processes in the order queued (`Shared::push_local`).
//!
//! Which placement wakes an idle worker, and why a LIFO placement nearly never does, is
//! `park.rs`'s rule ("The rule").

pub(crate) mod doze;
mod held;
pub(crate) mod park;
pub(crate) mod queue;
pub(crate) mod spawn_stack;
pub(crate) mod stand_in;
pub(crate) mod watchdog;
pub(crate) mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use crate::io::reactor::Reactor;
use crate::process::harness::Task;
use crate::runtime::context;
use crate::runtime::services::Services;
use park::Idle;
use queue::{Injector, LifoSlot, Local};

/// The part of a worker other threads may touch. Aligned to two cache lines so that
/// workers do not false-share their queue counters.
#[repr(align(128))]
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) local: Local<Task>,
    pub(crate) lifo: LifoSlot<Task>,
    /// Processes this worker spawned while its LIFO slot was taken, or stole from
    /// another's stack, run newest first (`spawn_stack.rs`).
    pub(crate) spawned: spawn_stack::SpawnStack,
    /// Turns this worker has started (`held.rs`), with [`STREAMING`]; only it writes.
    pub(crate) ticks: AtomicU64,
    /// The pid (`RawPid::to_word`) of the process the worker polls now or polled last,
    /// for `introspect`'s "Stuck processes": a store on the line `ticks` is on.
    pub(crate) polling: AtomicU64,
    /// Set while the worker parks in the reactor's OS poll rather than in
    /// `thread::park` (set before it registers as sleeping: `io.rs`).
    pub(crate) in_driver: AtomicBool,
    /// Set from the local queue found full until the injector is empty
    /// (`Shared::push_local`). Only this worker reads or writes it.
    overflowed: AtomicBool,
    /// Set while the worker's thread runs processes (and from its start); clear while it
    /// searches, parks or lies dormant. Only this worker writes it; the watchdog reads
    /// it: a worker whose thread has not started, or that is idle, is not held.
    pub(crate) busy: AtomicBool,
    /// Set while the worker parks until woken and no LIFO placement has woken it yet
    /// (`park.rs`, `Idle::begin_deep`).
    pub(crate) deep: crate::loom::AtomicBool,
    /// A spare thread stands in for this worker, held by one poll (`stand_in.rs`).
    pub(crate) stood_in_for: AtomicBool,
    /// A spare's slot: the worker it stands in for, or [`stand_in::DORMANT`].
    pub(crate) standing_in: AtomicUsize,
    /// Introspection's counters, written by this worker alone (`introspect.rs`).
    pub(crate) stats: crate::introspect::WorkerStats,
    thread: OnceLock<Thread>,
}

/// The bit of [`Remote::ticks`] set while the worker's current poll streams: it has
/// spilled its LIFO process (`spill_lifo`) and hands that slot's process on every
/// `SPILL_INTERVAL` sends, so no idle worker takes it earlier as stuck: taken at once,
/// a stream's receiver would run beside its sender one message at a time, each
/// message's cache line crossing cores (docs/design/0012, 0022). Nor does the poll get
/// a spare (`stand_in.rs`, rule 2). The next turn clears it.
pub(crate) const STREAMING: u64 = 1 << 63;

/// State shared by a runtime's workers, handles and processes.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The runtime's workers, then as many slots for spare threads (`stand_in.rs`).
    pub(crate) workers: Box<[Remote]>,
    /// How many of `workers` are the runtime's own ([`Builder::threads`]).
    pub(crate) threads: usize,
    /// The spare threads started so far. Their start, their wait while dormant and the
    /// shutdown take this lock (`stand_in.rs`, rules 1 and 5).
    pub(crate) spares: Mutex<Vec<JoinHandle<()>>>,
    /// Where dormant spares wait, under the `spares` lock.
    pub(crate) dormant: Condvar,
    /// The thread that looks for workers held by one poll (`scheduler/watchdog.rs`).
    pub(crate) watchdog: watchdog::Watchdog,
    /// The workers' thread name, which the spares' names extend.
    thread_name: String,
    pub(crate) injector: Injector,
    pub(crate) idle: Idle,
    shutdown: AtomicBool,
    /// Spawns from outside the workers in progress (the shutdown waits for them).
    pub(crate) outside_spawns: AtomicUsize,
    /// The reactor, created with the first socket (`runtime/context.rs`,
    /// `current_reactor`): where workers park while sockets are in use (`io.rs`).
    pub(crate) io: OnceLock<Arc<Reactor>>,
    /// How long a worker out of work searches before it may park ([`Builder::busy_wait`]).
    pub(crate) busy_wait: Duration,
    /// What the runtime gives its processes besides running them (`runtime/services.rs`).
    pub(crate) services: Services,
}

impl Shared {
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// The reactor, if one is in use: what a worker polls.
    #[inline]
    pub(crate) fn reactor_in_use(&self) -> Option<&Reactor> {
        self.io.get().map(|r| &**r).filter(|r| r.in_use())
    }

    /// Schedules a woken process: see the module docs.
    #[inline]
    pub(crate) fn schedule(&self, task: Task) {
        match context::current_index(self) {
            Some(i) => match self.workers[i].lifo.replace(task) {
                Some(prev) => self.push_local(i, prev),
                None => self.watch_lifo(),
            },
            None => self.inject(task),
        }
    }

    /// After a process went into this worker's empty LIFO slot: wakes a worker parked
    /// until woken if no idle worker watches the slots (`park.rs`, "The rule").
    #[inline]
    fn watch_lifo(&self) {
        if self.idle.lifo_unwatched() {
            self.wake_deep();
        }
    }

    #[cold]
    fn wake_deep(&self) {
        for (v, w) in self.workers.iter().enumerate() {
            if self.idle.claim_deep(&w.deep) {
                self.unpark(v);
                return;
            }
        }
    }

    /// Moves the current worker's LIFO process to its local queue and wakes a parked
    /// worker to take it (on the sends `process/send.rs`'s `spills_at` names).
    #[cold]
    pub(crate) fn spill_lifo(&self) {
        if let Some(i) = context::current_index(self) {
            let ticks = &self.workers[i].ticks;
            ticks.store(ticks.load(Ordering::Relaxed) | STREAMING, Ordering::Relaxed);
            if let Some(t) = self.workers[i].lifo.take() {
                self.push_local(i, t);
            }
        }
    }

    /// Schedules a newly spawned process.
    #[inline]
    pub(crate) fn schedule_spawned(&self, task: Task) {
        match context::current_index(self) {
            Some(i) if self.workers[i].lifo.is_empty() => {
                crate::introspect::count_spawn();
                // Only this worker fills its slot: it is still empty.
                let _ = self.workers[i].lifo.replace(task);
                self.watch_lifo();
            }
            Some(i) => {
                crate::introspect::count_spawn();
                let w = &self.workers[i];
                let now = w.ticks.load(Ordering::Relaxed) & !STREAMING;
                if w.spawned.newest_stamp() == Some(now) {
                    // This turn has pushed one already: a loop of spawns queues the
                    // rest in spawn order (`spawn_stack.rs`, rule 1).
                    self.push_local(i, task);
                } else {
                    w.spawned.push(task, now);
                    self.wake_one();
                }
            }
            None => {
                self.services.stats.spawned_outside();
                self.inject(task);
            }
        }
    }

    /// Queues `task` behind every runnable process of worker `i` (the caller): at the
    /// back of its local queue, or, once that queue has overflowed and until the
    /// injector is empty again, at the back of the injector. The worker's order stays
    /// first in, first out under overflow: its local queue's processes were queued
    /// before what it put in the injector, and the worker moves the injector's oldest
    /// behind its own (`next_task`). tokio instead moves the oldest half of a full
    /// queue to the back of the injector, and those processes, the next to run, then
    /// wait for everything queued after them (docs/design/0023). A worker that has not
    /// overflowed keeps its own order: what another worker's overflow left in the
    /// injector is not ahead of its processes, as on the BEAM, where each scheduler
    /// has its own queue.
    #[inline]
    pub(crate) fn push_local(&self, i: usize, task: Task) {
        let w = &self.workers[i];
        if w.overflowed.load(Ordering::Relaxed) {
            if self.injector.is_empty() {
                w.overflowed.store(false, Ordering::Relaxed);
            } else {
                self.inject(task);
                return;
            }
        }
        match w.local.push(task) {
            Ok(()) => self.wake_one(),
            Err(task) => {
                w.overflowed.store(true, Ordering::Relaxed);
                self.inject(task);
            }
        }
    }

    pub(crate) fn inject(&self, task: Task) {
        // A debug build's check only (the tests'): in a release build it changed the
        // inlining around every schedule (docs/design/0045).
        #[cfg(debug_assertions)]
        if let Some(sim) = &self.services.simulated {
            sim.note_outside_wake();
        }
        self.injector.push(task);
        self.wake_one();
    }

    /// Unparks one parked worker, unless a worker searches (it will find the work) or
    /// none is parked (`park.rs`'s protocol).
    #[inline]
    pub(crate) fn wake_one(&self) {
        if let Some(w) = self.idle.pop_sleeper() {
            self.unpark(w);
        }
    }

    /// Wakes worker `w` from its park, in the OS poll or in `thread::park`.
    fn unpark(&self, w: usize) {
        if self.workers[w].in_driver.load(Ordering::SeqCst)
            && let Some(io) = self.io.get()
        {
            io.wake();
        }
        if let Some(t) = self.workers[w].thread.get() {
            t.unpark();
        }
    }

    /// Called by a spare that steps back (`io.rs`'s invariants): unless a worker parks
    /// in the OS poll, unparks every other worker. An unpark that finds its worker busy
    /// is a token its next park spends on one more look.
    pub(crate) fn hand_on_the_os(&self, me: usize) {
        if self.reactor_in_use().is_none()
            || self
                .workers
                .iter()
                .any(|w| w.in_driver.load(Ordering::SeqCst))
        {
            return;
        }
        for (i, w) in self.workers.iter().enumerate() {
            if i != me
                && let Some(t) = w.thread.get()
            {
                t.unpark();
            }
        }
    }

    /// Whether any queue holds work (the parking protocol's last look; LIFO slots are
    /// the worker's to look at, `worker.rs`).
    pub(crate) fn has_work(&self) -> bool {
        !self.injector.is_empty()
            || self
                .workers
                .iter()
                .any(|w| w.local.len() > 0 || !w.spawned.is_empty())
    }

    /// The state of a runtime of `n` workers (at most `MAX_THREADS`) whose threads are
    /// named after `name`, with its `services` (built for [`Shared::slots`]`(n)`); no
    /// thread started yet.
    pub(crate) fn new(n: usize, name: &str, busy_wait: Duration, services: Services) -> Shared {
        Shared {
            workers: (0..Shared::slots(n))
                .map(|_| Remote {
                    local: Local::new(),
                    lifo: LifoSlot::new(),
                    spawned: Default::default(),
                    ticks: AtomicU64::new(0),
                    polling: AtomicU64::new(crate::pid::RawPid::OUTSIDE.to_word()),
                    in_driver: AtomicBool::new(false),
                    overflowed: AtomicBool::new(false),
                    busy: AtomicBool::new(false),
                    deep: crate::loom::AtomicBool::new(false),
                    stood_in_for: AtomicBool::new(false),
                    standing_in: AtomicUsize::new(stand_in::DORMANT),
                    stats: Default::default(),
                    thread: OnceLock::new(),
                })
                .collect(),
            threads: n,
            spares: Mutex::new(Vec::new()),
            dormant: Condvar::new(),
            watchdog: Default::default(),
            thread_name: name.to_string(),
            injector: Injector::default(),
            idle: Idle::new(n),
            shutdown: AtomicBool::new(false),
            outside_spawns: AtomicUsize::new(0),
            io: OnceLock::new(),
            busy_wait,
            services,
        }
    }

    /// The worker slots of a runtime of `n` workers: its own, then one spare slot for
    /// each (`stand_in.rs`, rule 1). The timer keeps a lane per slot.
    pub(crate) const fn slots(n: usize) -> usize {
        2 * n
    }

    /// Starts worker `i`'s thread.
    pub(crate) fn start_worker(self: &Arc<Shared>, i: usize) -> std::io::Result<JoinHandle<()>> {
        let s = Arc::clone(self);
        let h = std::thread::Builder::new()
            .name(format!("{}-{i}", self.thread_name))
            .spawn(move || worker::run(s, i))?;
        let _ = self.workers[i].thread.set(h.thread().clone());
        Ok(h)
    }

    /// Sets the shutdown flag: every thread of the runtime stops at its next look
    /// (`runtime.rs`, "Shutdown", step 1, for a `Runtime` dropped on one of its own
    /// threads).
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    /// Steps 1 and 2 of the runtime's shutdown (`runtime.rs`, "Shutdown") up to the
    /// spares joined, on a thread that is none of the runtime's; `threads` are the
    /// workers'. A LIFO chain is at most `MAX_LIFO_POLLS` + 1 polls (`Worker::run_chain`).
    pub(crate) fn stop_threads(&self, threads: Vec<JoinHandle<()>>) {
        self.shutdown.store(true, Ordering::SeqCst);
        while self.outside_spawns.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        self.watchdog.stop();
        for w in 0..self.workers.len() {
            self.unpark(w);
        }
        for t in threads {
            let _ = t.join();
        }
        // No spare starts once the flag is set (checked under this list's lock:
        // `stand_in.rs`, rule 5): these are all of them. The dormant ones see the flag.
        let spares = {
            let mut list = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
            self.dormant.notify_all();
            std::mem::take(&mut *list)
        };
        for t in spares {
            let _ = t.join();
        }
    }

    /// Drops what the injector still holds, once every process has ended (step 4).
    pub(crate) fn drop_queued(&self) {
        while self.injector.pop_into(&self.workers[0].local, 0).is_some() {}
    }
}
