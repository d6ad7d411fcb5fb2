//! A runtime's public face: [`Builder`], [`Runtime`] and [`Handle`]. What runs behind
//! them (the workers, their queues, parking, the watchdog) is the scheduler's
//! (`scheduler.rs`); what the runtime gives its processes besides running them is
//! `runtime/services.rs`'s, and which runtime's worker a thread is, `runtime/context.rs`'s.
//! This module configures the runtime, starts its threads, runs a root process for
//! `block_on`, and stops it on drop.
//!
//! # Shutdown
//!
//! Dropping the `Runtime` runs [`shut_down`]:
//!
//! 1. Set the shutdown flag, wait for spawns from outside that are in progress, stop
//!    and join the watchdog thread (`scheduler/watchdog.rs`), and wake every worker;
//!    each returns after its current poll, or after the LIFO chain that poll is part of.
//! 2. Join the workers; then, under the `spares` lock (no spare starts after the flag),
//!    take the spare threads, wake the dormant ones and join them all
//!    (`scheduler/stand_in.rs`); then stop the timer thread (dropping pending timers)
//!    and the blocking pool.
//! 3. End every process that is still alive (`process::harness::shutdown_processes`):
//!    retire its slot, wait for in-flight senders to leave, send its links and monitors
//!    the reason `Killed` (only watchers on other runtimes, or calls from outside any,
//!    still hear it), drop its future (its `Context` and everything it owns), release it.
//! 4. Drop the queues (which own nothing) and the shared state.
//!
//! A thread cannot join itself: a `Runtime` dropped on one of its own threads (by a
//! process it runs, or by the timer thread dropping a message that holds it) sets the
//! flag and hands steps 1–4 to a new thread, `otter-shutdown`; if that thread cannot
//! start, the runtime is leaked, not freed under a live pid.

pub(crate) mod context;
mod handle;
pub(crate) mod root;
pub(crate) mod services;

pub use handle::Handle;

use std::future::Future;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Context;
use crate::error::BuildError;
use crate::exit::ExitReason;
use crate::scheduler::Shared;
use crate::scheduler::park::MAX_THREADS;
use crate::scheduler::watchdog::Watchdog;
use root::{Root, RootSlot};
use services::Services;

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
        let services = Services::new(
            Shared::slots(n),
            &self.name,
            #[cfg(feature = "tokio")]
            self.tokio_context,
            None,
        );
        let shared = Arc::new(Shared::new(n, &self.name, self.busy_wait, services));
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            match shared.start_worker(i) {
                Ok(h) => threads.push(h),
                Err(e) => {
                    let rt = Runtime { shared, threads };
                    drop(rt);
                    return Err(BuildError::Spawn(e.to_string()));
                }
            }
        }
        if let Err(e) = Watchdog::start(&shared, format!("{}-watchdog", self.name)) {
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
        let slot = Arc::new(RootSlot::new());
        self.handle().spawn(Root::new(f, slot.clone()));
        slot.wait()
    }
}

impl Drop for Runtime {
    /// Shuts the runtime down (the module docs, "Shutdown"). On one of the runtime's own
    /// threads (a worker, when a process drops the `Runtime` it runs on, or the timer
    /// thread, when a timer drops a message that holds it) the joins would wait for
    /// the calling thread itself: the shutdown begins at once and finishes on a thread
    /// of its own, and `drop` returns. Nothing is freed before every thread that could
    /// touch it has been joined.
    fn drop(&mut self) {
        let shared = self.shared.clone();
        let threads = std::mem::take(&mut self.threads);
        let own_thread = context::current_index(Arc::as_ptr(&shared)).is_some()
            || shared.services.timer.is_current_thread();
        if !own_thread {
            crate::unwind::abort_on_unwind("the runtime's shutdown", || {
                shut_down(&shared, threads);
            });
            return;
        }
        shared.begin_shutdown();
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

/// The shutdown's steps (module docs), on a thread that is none of the runtime's:
/// `threads` are the workers'.
pub(crate) fn shut_down(shared: &Shared, threads: Vec<JoinHandle<()>>) {
    shared.stop_threads(threads);
    shared.services.timer.shutdown();
    shared.services.blocking.shutdown();
    crate::process::harness::shutdown_processes(shared);
    shared.drop_queued();
}
