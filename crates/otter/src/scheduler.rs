//! The runtime: worker threads, run queues, and the ways in from outside.
//!
//! M:N scheduling on one worker thread per core (by default). Each worker has a local
//! run queue and a LIFO slot (`scheduler/queue.rs`) and a spawn stack
//! (`scheduler/spawn_stack.rs`); a global injector takes work from outside the workers; idle workers steal half of a busy worker's queue and otherwise
//! spin for a while, then park (`scheduler/park.rs`). The order in which a worker picks
//! its next process is in `scheduler/worker.rs`.
//!
//! # The one circle of modules
//!
//! A runtime runs processes (`process/harness.rs`: `Task`), and a process schedules
//! itself on its runtime (its header points to [`Shared`]; a send, a wake-up and a
//! spawn push onto its queues). So `process/` and the scheduler import each other, as
//! tokio's task and scheduler modules do. Everything else depends on them one way
//! only; the modules below them (`signal.rs`, `mailbox/`, `timer/`, `io/`, `coop.rs`,
//! `tuning.rs`, pids, exit reasons) import neither (ARCHITECTURE.md, "The tree").
//!
//! # Where a woken process goes
//!
//! * Woken by a message (or any waker) on one of its own runtime's workers: that
//!   worker's LIFO slot; a process displaced from the slot goes to the local queue.
//! * Spawned on a worker: that worker's LIFO slot if it is empty (Go puts a new
//!   goroutine in its `runnext` the same way); else, for the turn's first spawn that
//!   finds the slot taken, the top of its spawn stack; else the back of the local queue.
//!   A chain of spawns (each process spawns the next and ends) then stays on one worker:
//!   a push onto the queue woke an idle worker, which stole the child, and the chain
//!   crossed cores at every link (docs/design/0022). The stack runs newest first, after
//!   the local queue: a process that spawns two children and waits for their replies is
//!   walked depth-first, where the back of the local queue walked it breadth-first and
//!   kept most of a fork-join tree alive at once (docs/design/0034). The BEAM runs every
//!   spawn first in, first out with everything else, and walks such a tree breadth-first.
//! * Yielding: the back of that worker's local queue.
//! * From any other thread: the injector, and a spinning or parked worker is woken.
//!
//! "The back of the local queue" is the back of the injector from the moment the local
//! queue is full until the injector is empty: a worker runs its processes in the order
//! they were queued, as a BEAM scheduler does, however many are runnable
//! (`Shared::push_local`).
//!
//! A push onto a local queue or a spawn stack wakes a parked worker if no worker is
//! searching (tokio's rule): the woken worker steals it if this one is still busy. A placement in the LIFO
//! slot wakes nobody while an idle worker watches the slots (it searches, or sleeps
//! short after seeing one occupied): a ring of messages stays on one warm worker
//! instead of paying a thread wake-up per hop, and an idle worker takes a LIFO process
//! only if its worker's poll runs long. With every idle worker parked until woken, the
//! placement wakes one, which then watches (`park.rs`, "The rule").
//!
//! # Shutdown
//!
//! 1. Set the shutdown flag, stop and join the watchdog thread (`scheduler/watchdog.rs`),
//!    and wake every worker; each returns after its current poll, or after the LIFO
//!    chain that poll is part of (at most `MAX_LIFO_POLLS` + 1 polls:
//!    `Worker::run_chain`).
//! 2. Join the workers; then, under the `spares` lock (no spare starts after the flag),
//!    take the spare threads, wake the dormant ones and join them all
//!    (`scheduler/stand_in.rs`); then stop the timer thread (dropping pending timers).
//! 3. End every process that is still alive (`process::harness::shutdown_processes`): their
//!    futures are dropped, which drops their `Context`s and everything they own.
//! 4. Drop the queues (which own nothing) and the shared state.
//!
//! A `Runtime` dropped on one of its own threads (a worker or the timer thread) sets the
//! flag and hands steps 1–4 to a new thread, since a thread cannot join itself.

pub(crate) mod context;
pub(crate) mod deferred;
pub(crate) mod doze;
mod handle;
mod held;
pub(crate) mod park;
pub(crate) mod queue;
pub(crate) mod spawn_stack;
pub(crate) mod stand_in;
pub(crate) mod watchdog;
pub(crate) mod worker;

pub use handle::Handle;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::task::Poll;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use crate::Context;
use crate::error::BuildError;
use crate::exit::ExitReason;
use crate::io::reactor::Reactor;
use crate::process::harness::{self, Task};
use crate::timer::Timer;
use park::Idle;
use park::MAX_THREADS;
use queue::{Injector, LifoSlot, Local};

/// The part of a worker other threads may touch. Aligned to two cache lines so that
/// workers do not false-share their queue counters.
#[repr(align(128))]
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) local: Local,
    pub(crate) lifo: LifoSlot,
    /// Processes this worker spawned while its LIFO slot was taken, run newest first
    /// (`spawn_stack.rs`).
    pub(crate) spawned: spawn_stack::SpawnStack,
    /// Processes this worker has started polling, the watchdog's sign of progress; and
    /// [`STREAMING`] while the current poll streams (only this worker writes it).
    pub(crate) ticks: AtomicU64,
    /// The pid (`RawPid::to_word`) of the process the worker polls now or polled last:
    /// a store per poll beside `ticks`, on the line it writes anyway (`introspect`'s
    /// "Stuck processes").
    pub(crate) polling: AtomicU64,
    /// Set while the worker parks in the reactor's OS poll rather than in
    /// `thread::park` (set before it registers as sleeping: `io.rs`).
    pub(crate) in_driver: AtomicBool,
    /// Set when the local queue was found full, until the injector is empty: the
    /// worker's pushes go to the injector meanwhile (`Shared::push_local`). Only this
    /// worker reads or writes it.
    overflowed: AtomicBool,
    /// Set from the worker thread's start and while it runs processes; clear before
    /// the thread starts and while it searches, parks or lies dormant. Only this worker
    /// writes it; the watchdog reads it (`stand_in.rs`): a worker whose thread has not
    /// started yet is not held.
    pub(crate) busy: AtomicBool,
    /// Set while the worker parks until woken and no LIFO placement has woken it yet
    /// (`park.rs`, `Idle::begin_deep`).
    pub(crate) deep: crate::loom::AtomicBool,
    /// A spare thread stands in for this worker, held by one poll (`stand_in.rs`).
    pub(crate) stood_in_for: AtomicBool,
    /// A spare's slot: the worker it stands in for, or [`stand_in::DORMANT`].
    pub(crate) standing_in: AtomicUsize,
    /// Deadlines of calls waiting on this worker, not yet armed (`deferred.rs`): only
    /// this worker writes them; the watchdog reads them when the worker is held.
    pub(crate) deferred: deferred::DeferredDeadlines,
    /// Introspection's counters, written by this worker alone (`introspect.rs`).
    pub(crate) stats: crate::introspect::WorkerStats,
    thread: OnceLock<Thread>,
}

/// The bit of [`Remote::ticks`] set while the worker's current poll streams: it has
/// spilled its LIFO process at least once (`spill_lifo`), so its sends hand that slot's
/// process on every `SPILL_INTERVAL` sends, and no idle worker takes it earlier as
/// stuck (`Worker::take_stuck_lifo`): taken at once, the receiver of a stream would run
/// beside its sender one message at a time, each message's cache line crossing cores
/// (the chase of docs/design/0012; 0022). The next turn clears it.
pub(crate) const STREAMING: u64 = 1 << 63;

/// State shared by a runtime's workers, handles and processes.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The runtime's workers, then as many slots for spare threads (`stand_in.rs`).
    pub(crate) workers: Box<[Remote]>,
    /// How many of `workers` are the runtime's own ([`Builder::threads`]).
    pub(crate) threads: usize,
    /// The spare threads started so far; their start and the shutdown take this lock.
    pub(crate) spares: Mutex<Vec<JoinHandle<()>>>,
    /// Where dormant spares wait for their slot to be claimed or for the shutdown.
    pub(crate) dormant: (Mutex<()>, Condvar),
    /// The thread that looks for workers held by one poll (`scheduler/watchdog.rs`).
    pub(crate) watchdog: watchdog::Watchdog,
    /// The workers' thread name, which the spares' names extend.
    thread_name: String,
    pub(crate) injector: Injector,
    pub(crate) idle: Idle,
    shutdown: AtomicBool,
    /// Spawns from outside the workers in progress (shutdown waits for them).
    outside_spawns: AtomicUsize,
    pub(crate) timer: Arc<Timer>,
    pub(crate) registry: crate::registry::Registry,
    pub(crate) servers: crate::server::untyped::Servers, // reached by pid alone
    /// Introspection's runtime counters and coarse clock (`introspect.rs`).
    pub(crate) stats: crate::introspect::RuntimeStats,
    /// Whether a distribution node runs on this runtime (one at most).
    pub(crate) has_node: std::sync::atomic::AtomicBool,
    /// The reactor, created with the first socket (`io.rs`).
    pub(crate) io: OnceLock<Arc<Reactor>>,
    /// The blocking pool (`blocking.rs`); no thread until its first job.
    pub(crate) blocking: Arc<crate::blocking::Pool>,
    /// How long a worker out of work searches before it may park ([`Builder::busy_wait`]).
    pub(crate) busy_wait: Duration,
    /// Whether process threads enter tokio's context ([`Builder::tokio_context`]).
    #[cfg(feature = "tokio")]
    pub(crate) tokio_context: bool,
}

impl Shared {
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// The reactor, created now if this is the runtime's first socket.
    pub(crate) fn reactor(&self) -> std::io::Result<Arc<Reactor>> {
        if let Some(r) = self.io.get() {
            return Ok(r.clone());
        }
        let r = Arc::new(Reactor::new(
            crate::tuning::IO_EVENTS,
            crate::tuning::IO_FEW_EVENTS,
        )?);
        // Two first sockets at once: one reactor wins, the other is dropped unused.
        let _ = self.io.set(r);
        Ok(self.io.get().expect("set above").clone())
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

    /// After a process went into this worker's empty LIFO slot: if no idle worker will
    /// look at the slot should this poll run long (none searches or sleeps short) and
    /// one is parked until woken, wakes that one (`park.rs`, "The rule"). One load on
    /// the ring's and ping-pong's path while another worker watches.
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
    /// worker to take it (see `worker::SPILL_AFTER_SENDS` and `worker::SPILL_INTERVAL`).
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
                let w = &self.workers[i];
                crate::introspect::count_spawn();
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
                self.stats.spawned_outside();
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
        self.injector.push(task);
        self.wake_one();
    }

    /// Wakes one spinning worker, or else unparks one parked worker, if any.
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

    /// Wakes every dormant spare thread to look at its slot and the shutdown flag
    /// (`stand_in.rs`). The lock orders this after the change the caller made: a spare
    /// looks at both under it before it waits.
    pub(crate) fn wake_dormant(&self) {
        drop(
            self.dormant
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.dormant.1.notify_all();
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
}

/// Configures and starts a [`Runtime`].
///
/// ```
/// let rt = otter::Runtime::builder().threads(2).build().unwrap();
/// assert_eq!(rt.threads(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    threads: Option<usize>,
    name: String,
    busy_wait: Duration,
    #[cfg(feature = "tokio")]
    tokio_context: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            threads: None,
            name: "otter-worker".into(),
            busy_wait: Duration::ZERO,
            #[cfg(feature = "tokio")]
            tokio_context: false,
        }
    }
}

impl Builder {
    /// Worker threads (default: the number of cores, `available_parallelism`; at most
    /// 2,047, else [`build`](Builder::build) says [`BuildError::TooManyThreads`]). While
    /// a poll holds a worker (a process that computes without awaiting, or blocks in a
    /// system call), a spare thread stands in for that worker, so up to `2n` threads
    /// may run processes (the crate docs' "Differences from Erlang").
    ///
    /// ```
    /// let rt = otter::Runtime::builder().threads(1).build().unwrap();
    /// assert_eq!(rt.threads(), 1);
    /// ```
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }

    /// The name of the runtime's threads (default `otter-worker`): workers `{name}-0`,
    /// `{name}-1` ..., spares `{name}-spare-0` ..., and `{name}-watchdog`,
    /// `{name}-timer` and `{name}-blocking`. Linux shows the first 15 bytes.
    ///
    /// ```
    /// let rt = otter::Runtime::builder().thread_name("bench").build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long a worker that runs out of work keeps looking for more (the other
    /// workers' queues, and the OS for its sockets) before it may sleep, whatever else
    /// runs: the BEAM's scheduler busy wait (`erl +sbwt`). Default zero.
    ///
    /// Past it, a worker searches on only while another worker runs processes (one may
    /// hand it work), and for no longer than it was busy before its search (so
    /// searching at most doubles the CPU a program uses); then it sleeps, in the OS's
    /// poll if sockets are in use, as tokio's and Go's workers do. A busy wait buys
    /// latency with CPU: with 200 µs (otter's rule before this setting), one
    /// connection's echo made 3.5× the round trips it makes with zero on a 2-vCPU VM,
    /// but a server whose requests come less than 200 µs apart keeps its core busy (at
    /// 20,000 requests a second, 48 CPU-seconds per million against 19 with zero, and
    /// tokio's 17: docs/design/0025-idle-cpu-at-partial-load.md).
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::builder()
    ///     .busy_wait(Duration::from_micros(200))
    ///     .build()
    ///     .unwrap();
    /// # drop(rt);
    /// ```
    pub fn busy_wait(mut self, d: Duration) -> Self {
        self.busy_wait = d;
        self
    }

    /// Runs every process inside the context of otter's tokio runtime
    /// ([`compat::handle`](crate::compat::handle)), so that tokio code works in a process
    /// as written: `tokio::spawn`, `tokio::time::timeout`, `tokio::net` (feature `tokio`;
    /// default off). Each thread that runs processes enters the context once, when it
    /// starts, so a poll costs nothing more; what it changes is where tokio's own
    /// events come from (the tokio runtime's thread, as with
    /// [`compat::tokio`](crate::compat::tokio)). Off, such code panics with tokio's
    /// "no reactor running", and the process's exit reason names both fixes.
    ///
    /// ```
    /// let rt = otter::Runtime::builder().tokio_context(true).build().unwrap();
    /// let r = rt.block_on(|_: otter::Context<()>| async {
    ///     let t = std::time::Duration::from_millis(1);
    ///     tokio::time::timeout(t, std::future::pending::<()>()).await.is_err()
    /// });
    /// assert!(r.unwrap());
    /// ```
    #[cfg(feature = "tokio")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
    pub fn tokio_context(mut self, on: bool) -> Self {
        self.tokio_context = on;
        self
    }

    /// Starts the runtime's worker threads.
    ///
    /// ```
    /// let rt = otter::Runtime::builder().build().unwrap();
    /// assert!(rt.threads() >= 1);
    /// ```
    pub fn build(self) -> Result<Runtime, BuildError> {
        crate::unwind::install_panic_hook();
        let n = match self.threads {
            Some(0) => return Err(BuildError::ZeroThreads),
            Some(n) if n > MAX_THREADS => return Err(BuildError::TooManyThreads(MAX_THREADS)),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS)),
        };
        let shared = Arc::new(Shared {
            workers: (0..2 * n)
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
                    deferred: Default::default(),
                    stats: Default::default(),
                    thread: OnceLock::new(),
                })
                .collect(),
            threads: n,
            spares: Mutex::new(Vec::new()),
            dormant: (Mutex::new(()), Condvar::new()),
            watchdog: Default::default(),
            thread_name: self.name.clone(),
            injector: Injector::default(),
            idle: Idle::new(n),
            shutdown: AtomicBool::new(false),
            outside_spawns: AtomicUsize::new(0),
            timer: Timer::new(format!("{}-timer", self.name), 2 * n),
            registry: Default::default(),
            servers: Default::default(),
            stats: Default::default(),
            has_node: Default::default(),
            io: OnceLock::new(),
            blocking: Arc::new(crate::blocking::Pool::new(format!(
                "{}-blocking",
                self.name
            ))),
            busy_wait: self.busy_wait,
            #[cfg(feature = "tokio")]
            tokio_context: self.tokio_context,
        });
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let s = shared.clone();
            let h = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || worker::run(s, i));
            match h {
                Ok(h) => {
                    let _ = shared.workers[i].thread.set(h.thread().clone());
                    threads.push(h);
                }
                Err(e) => {
                    let rt = Runtime { shared, threads };
                    drop(rt);
                    return Err(BuildError::Spawn(e.to_string()));
                }
            }
        }
        if let Err(e) = watchdog::Watchdog::start(&shared, format!("{}-watchdog", self.name)) {
            let rt = Runtime { shared, threads };
            drop(rt);
            return Err(BuildError::Spawn(e.to_string()));
        }
        Ok(Runtime { shared, threads })
    }
}

/// An otter runtime: worker threads running processes.
///
/// Dropping it shuts it down: every worker is stopped and joined, and every process
/// still alive is ended (its future dropped), so nothing is leaked.
///
/// ```
/// let rt = otter::Runtime::new();
/// let sum = rt.block_on(|cx: otter::Context<u64>| async move {
///     let me = cx.pid();
///     for i in 1..=10 {
///         cx.spawn(move |_child: otter::Context<()>| async move { me.send(i) });
///     }
///     let mut cx = cx;
///     let mut sum = 0;
///     for _ in 0..10 {
///         sum += cx.recv().await;
///     }
///     sum
/// });
/// assert_eq!(sum.unwrap(), 55);
/// ```
#[derive(Debug)]
pub struct Runtime {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    /// A runtime with one worker per core.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// assert_eq!(rt.block_on(|_cx: otter::Context<()>| async { "up" }), Ok("up"));
    /// ```
    ///
    /// # Panics
    ///
    /// If the operating system refuses to start a thread; use [`Runtime::builder`] to
    /// handle that as an error.
    pub fn new() -> Runtime {
        Builder::default()
            .build()
            .unwrap_or_else(|e| panic!("otter: {e}"))
    }

    /// A [`Builder`] to configure a runtime.
    ///
    /// ```
    /// let rt = otter::Runtime::builder().threads(2).thread_name("app").build().unwrap();
    /// # drop(rt);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The number of worker threads.
    ///
    /// ```
    /// let rt = otter::Runtime::builder().threads(3).build().unwrap();
    /// assert_eq!(rt.threads(), 3);
    /// ```
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// A handle to spawn processes from outside the runtime.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let handle = rt.handle();
    /// let pid = handle.spawn(|_cx: otter::Context<()>| async {});
    /// # let _ = pid;
    /// ```
    pub fn handle(&self) -> Handle {
        Handle::of(self.shared.clone())
    }

    /// Runs `f`'s future as a root process and waits, on this thread, for it to finish.
    /// Returns its value, or the reason it exited otherwise (a panic, or being killed).
    ///
    /// It blocks the calling thread: call it from `main` or a test, not from inside a
    /// process (that would hold a worker, and deadlock a one-worker runtime).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// assert_eq!(rt.block_on(|_cx: otter::Context<()>| async { 6 * 7 }), Ok(42));
    /// let r = rt.block_on(|_cx: otter::Context<()>| async { panic!("oops") });
    /// assert_eq!(r, Err::<(), _>(otter::ExitReason::Panic("oops".into())));
    /// ```
    pub fn block_on<M, T, F, Fut>(&self, f: F) -> Result<T, ExitReason>
    where
        M: Send + 'static,
        T: Send + 'static,
        F: FnOnce(Context<M>) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        assert!(
            !context::is_worker_thread(),
            "otter: block_on called on a worker thread (from inside a process, of this \
             runtime or another); it would block that worker until the root returns \
             (spawn a process and wait for its message instead)"
        );
        let slot = Arc::new(RootSlot {
            value: Mutex::new(None),
            done: Condvar::new(),
        });
        let s2 = slot.clone();
        self.handle().spawn(move |cx| Root {
            fut: Box::pin(f(cx)),
            slot: s2,
        });
        let mut g = slot.value.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = slot.done.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for Runtime {
    /// Shuts the runtime down (the module docs' steps). On one of the runtime's own
    /// threads (a worker, when a process drops the `Runtime` it runs on, or the timer
    /// thread, when a timer drops a message that holds it) the joins would wait for
    /// the calling thread itself: the shutdown begins at once and finishes on a thread
    /// of its own, and `drop` returns. Nothing is freed before every thread that could
    /// touch it has been joined.
    fn drop(&mut self) {
        let shared = self.shared.clone();
        let threads = std::mem::take(&mut self.threads);
        let own_thread = context::current_index(Arc::as_ptr(&shared)).is_some()
            || shared.timer.is_current_thread();
        if !own_thread {
            crate::unwind::abort_on_unwind("the runtime's shutdown", || {
                shut_down(&shared, threads);
            });
            return;
        }
        shared.shutdown.store(true, Ordering::SeqCst);
        let reaper = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("otter-shutdown".into())
            .spawn(move || {
                crate::unwind::abort_on_unwind("the runtime's shutdown", || {
                    shut_down(&reaper, threads);
                });
            });
        if spawned.is_err() {
            // No thread to finish on: the workers stop, but nothing is freed, since a
            // process may still be reached through a pid.
            eprintln!(
                "otter: a Runtime dropped on its own thread could not start its shutdown thread; leaking it"
            );
            std::mem::forget(shared);
        }
    }
}

/// The shutdown's steps (module docs), on a thread that is none of the runtime's.
fn shut_down(shared: &Shared, threads: Vec<JoinHandle<()>>) {
    shared.shutdown.store(true, Ordering::SeqCst);
    while shared.outside_spawns.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
    shared.watchdog.stop();
    for w in 0..shared.workers.len() {
        shared.unpark(w);
    }
    for t in threads {
        let _ = t.join();
    }
    // No spare starts once the flag is set (checked under this list's lock:
    // `stand_in.rs`): these are all of them. The dormant ones see the flag.
    let spares = std::mem::take(&mut *shared.spares.lock().unwrap_or_else(PoisonError::into_inner));
    shared.wake_dormant();
    for t in spares {
        let _ = t.join();
    }
    shared.timer.shutdown();
    shared.blocking.shutdown();
    harness::shutdown_processes(shared);
    while shared
        .injector
        .pop_into(&shared.workers[0].local, 0)
        .is_some()
    {}
}

struct RootSlot<T> {
    value: Mutex<Option<Result<T, ExitReason>>>,
    done: Condvar,
}

impl<T> RootSlot<T> {
    fn set(&self, r: Result<T, ExitReason>) {
        let mut g = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        if g.is_none() {
            *g = Some(r);
            self.done.notify_all();
        }
    }
}

/// The root process's future: reports its value or its end to `block_on`.
struct Root<Fut: Future> {
    fut: Pin<Box<Fut>>,
    slot: Arc<RootSlot<Fut::Output>>,
}

impl<Fut: Future> Future for Root<Fut> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let fut = this.fut.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                this.slot.set(Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                this.slot.set(Err(ExitReason::from_panic(&*payload)));
                std::panic::resume_unwind(payload)
            }
        }
    }
}

impl<Fut: Future> Drop for Root<Fut> {
    fn drop(&mut self) {
        // Dropped without a value: the process was ended from outside, by an exit
        // signal (its reason) or by the runtime's shutdown (`Killed`).
        let reason = harness::exit_reason_of_dropping().unwrap_or(ExitReason::Killed);
        self.slot.set(Err(reason));
    }
}
