//! Blocking work off the workers (the BEAM's dirty schedulers, tokio's `spawn_blocking`):
//! a file read, a DNS lookup, a computation of many milliseconds, run on a bounded pool
//! of threads and awaited by the process that asked for it.
//!
//! ```
//! use otter::{Context, Runtime};
//! let rt = Runtime::new();
//! let n = rt.block_on(|_: Context<()>| async {
//!     // The worker runs other processes while this one waits.
//!     otter::blocking::spawn_blocking(|| std::fs::read_dir(".").map(|d| d.count()))
//!         .await
//!         .unwrap()
//! });
//! assert!(n.unwrap() > 0);
//! ```
//!
//! # Rules
//!
//! * A worker never blocks in the job: the process waits for its result like for a
//!   message, and is woken when the job ends.
//! * At most 64 threads (`MAX_BLOCKING_THREADS`, `tuning.rs`) run jobs at
//!   once, per runtime; more jobs wait in a FIFO queue. A thread idle for 10 s
//!   (`BLOCKING_KEEP_ALIVE`) ends, so an idle runtime holds none.
//! * A job that panics makes the awaiting process panic with the same payload: the
//!   process exits with that reason, the pool and the runtime go on.
//! * A process that stops waiting (it exits, or drops the future) does not stop the job;
//!   its result is dropped.
//! * Off a worker (no runtime), a job runs on a thread of its own.
//! * In a [`Simulation`](crate::sim::Simulation), a job runs at once, inside the poll
//!   that submits it: its result is ready at the first await, and the run stays
//!   deterministic (the simulation's one thread waits for the job meanwhile).
//! * Dropping the runtime does not wait for its jobs: those queued or running then
//!   still run to their end, on the pool's threads, which end after them; their
//!   results are dropped. (tokio's `Runtime` drop waits for its `spawn_blocking`
//!   tasks; a job that never returns would make otter's shutdown hang with it.)

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::tuning::{BLOCKING_KEEP_ALIVE, MAX_BLOCKING_THREADS};

type Job = Box<dyn FnOnce() + Send>;

/// A runtime's pool of blocking threads.
#[derive(Debug)]
pub(crate) struct Pool {
    state: Mutex<PoolState>,
    work: Condvar,
    /// Its threads' name.
    name: String,
    /// A simulation's pool: each job runs at once on the submitting thread.
    inline: bool,
}

/// `idle` counts the threads waiting for a job that no submit has claimed yet: a submit
/// that notifies one claims it (`idle` down, `claimed` up), so the next submit, before
/// the woken thread has run, starts a thread of its own rather than notify the same
/// idle one twice, which left its job queued behind the first. A thread that wakes
/// takes a claim if there is one, else leaves `idle` itself (a timeout, or a spurious
/// wake-up: any waiting thread serves a claim as well as another).
#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
    claimed: usize,
    shutdown: bool,
}

impl fmt::Debug for PoolState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolState")
            .field("queued", &self.queue.len())
            .field("threads", &self.threads)
            .field("idle", &self.idle)
            .field("claimed", &self.claimed)
            .finish()
    }
}

impl Pool {
    /// A pool whose threads are called `name`; no thread until its first job.
    pub(crate) fn new(name: String) -> Pool {
        Pool {
            state: Mutex::default(),
            work: Condvar::new(),
            name,
            inline: false,
        }
    }

    /// A simulation's pool (`sim.rs`): no thread; each job runs at once, inside the
    /// poll that submits it.
    pub(crate) fn inline(name: String) -> Pool {
        Pool {
            inline: true,
            ..Pool::new(name)
        }
    }

    /// Queues `job`; starts a thread for it if none is idle and the bound allows.
    fn submit(self: &Arc<Self>, job: Job) {
        if self.inline {
            job();
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.shutdown {
            // The runtime is ending: run it on a thread of its own, as off a runtime.
            drop(s);
            std::thread::spawn(job);
            return;
        }
        s.queue.push_back(job);
        if s.idle > 0 {
            s.idle -= 1;
            s.claimed += 1;
            self.work.notify_one();
        } else if s.threads < MAX_BLOCKING_THREADS {
            s.threads += 1;
            let pool = self.clone();
            let started = std::thread::Builder::new()
                .name(self.name.clone())
                .spawn(move || pool.serve());
            if started.is_err() {
                // Out of threads: the queued job waits for a running one; with none
                // running, nothing would take it, so run it here (the caller's thread).
                s.threads -= 1;
                if s.threads == 0 {
                    let job = s.queue.pop_back().expect("pushed above");
                    drop(s);
                    job();
                }
            }
        }
    }

    fn serve(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(job) = s.queue.pop_front() {
                drop(s);
                job();
                s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            if s.shutdown {
                break;
            }
            s.idle += 1;
            let (next, timeout) = self
                .work
                .wait_timeout(s, BLOCKING_KEEP_ALIVE)
                .unwrap_or_else(PoisonError::into_inner);
            s = next;
            if s.claimed > 0 {
                s.claimed -= 1;
            } else {
                s.idle -= 1;
            }
            if timeout.timed_out() && s.queue.is_empty() {
                break;
            }
        }
        s.threads -= 1;
    }

    /// The runtime ends: idle threads end; queued and running jobs still run.
    pub(crate) fn shutdown(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .shutdown = true;
        self.work.notify_all();
    }
}

/// Runs `f` on the runtime's blocking pool; the future gives its result. See the module
/// docs.
pub fn spawn_blocking<T, F>(f: F) -> Blocking<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot = Arc::new(Mutex::new(Outcome::Running(None)));
    let done = slot.clone();
    let job: Job = Box::new(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let mut s = done.lock().unwrap_or_else(PoisonError::into_inner);
        let Outcome::Running(waker) = std::mem::replace(&mut *s, Outcome::Done(r)) else {
            unreachable!("a job ends once")
        };
        drop(s);
        if let Some(w) = waker {
            w.wake();
        }
    });
    match crate::runtime::context::current_blocking_pool() {
        Some(pool) => pool.submit(job),
        None => {
            std::thread::spawn(job);
        }
    }
    Blocking { slot }
}

enum Outcome<T> {
    Running(Option<Waker>),
    Done(std::thread::Result<T>),
    Taken,
}

/// The result of a job on the blocking pool ([`spawn_blocking`]).
pub struct Blocking<T> {
    slot: Arc<Mutex<Outcome<T>>>,
}

impl<T> fmt::Debug for Blocking<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blocking").finish_non_exhaustive()
    }
}

impl<T> Future for Blocking<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut s = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *s {
            Outcome::Running(w) => {
                match w {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Outcome::Done(_) => {
                let Outcome::Done(r) = std::mem::replace(&mut *s, Outcome::Taken) else {
                    unreachable!("matched above")
                };
                drop(s);
                match r {
                    Ok(v) => Poll::Ready(v),
                    // The job's panic is the process's: it exits with that reason.
                    Err(payload) => std::panic::resume_unwind(payload),
                }
            }
            Outcome::Taken => panic!("a Blocking future polled after it gave its result"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;
    use std::sync::{Arc, PoisonError};
    use std::time::Duration;

    use super::Pool;

    /// Two jobs submitted while one thread is idle run at once: the second starts a
    /// thread of its own instead of waiting behind the first (here the first waits for
    /// the second, and would wait for good).
    #[test]
    fn two_jobs_submitted_beside_one_idle_thread_run_at_once() {
        let pool = Arc::new(Pool::new("blocking-test".into()));
        let (done, finished) = channel();
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv().unwrap();
        // The thread that ran it goes back to wait (a condition, not a duration).
        while pool
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .idle
            != 1
        {
            std::thread::yield_now();
        }
        let (go, wait) = channel();
        let (result, results) = channel();
        pool.submit(Box::new(move || {
            result
                .send(wait.recv_timeout(Duration::from_secs(20)).is_ok())
                .unwrap()
        }));
        pool.submit(Box::new(move || go.send(()).unwrap()));
        assert!(
            results.recv().unwrap(),
            "the second job waited behind the first"
        );
        pool.shutdown();
    }
}
