//! The call protocol: one reply slot per call (`gen.erl`'s `do_call`, without the
//! mailbox).
//!
//! # Rules
//!
//! * A call sends `Call(request)` to the server, the request holding a [`ReplyTo`], and
//!   waits on a one-shot slot shared with that `ReplyTo`; the reply goes into the slot, never into the caller's
//!   mailbox, so waiting for it scans nothing, and a reply that comes after the caller
//!   stopped waiting (timeout, or the call future dropped) is dropped with the slot: no
//!   stray message, ever.
//! * While it waits, the caller monitors the server (as `gen:call` does), but with a
//!   watcher that writes into the slot instead of sending a `Down`: if the server exits
//!   first, the call ends with [`CallError::Exit`] and the server's reason; if the server
//!   does not exist, with [`CallError::Noproc`] at once.
//! * The first outcome wins: a reply, the server's exit, or the timeout. A reply sent
//!   just before the server exits is returned (Erlang: the reply message is ahead of the
//!   `'DOWN'`).
//! * `ReplyTo` is consumed by [`ReplyTo::reply`]: a request is answered at most once.
//!   Dropping it unanswered does nothing (as forgetting `From` does in Erlang): the
//!   caller gets the timeout, or the server's exit.
//!
//! # Cost
//!
//! Per call: one slot allocation, one watcher (a boxed closure) added to and removed
//! from the server's bonds under their lock. The timeout costs a timer-wheel entry
//! only for a call that waits long: on a worker, a timeout of at least
//! `DEFER_TIMER_AFTER` (`scheduler/tuning.rs`) is deferred (its deadline goes into the
//! worker's list, `scheduler/context.rs`), and armed in the wheel only if the call still
//! waits at the worker's second flush after it, every `GLOBAL_INTERVAL` ticks and before
//! the worker parks. So a timeout fires on time, unless the caller's worker is
//! stuck in one long poll past it, which delays the arming by that poll. A shorter
//! timeout, or a call made off the workers, arms its timer at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use crate::exit::ExitReason;
use crate::monitor::{Down, MonitorRef, Watcher};
use crate::pid::RawPid;
use crate::scheduler::tuning::DEFER_TIMER_AFTER;
use crate::signal::bonds;
use crate::timer::{Deferred, Expire, Sleep, Timer, TimerKey};

/// Why a call did not return a reply (Erlang's `gen_server:call/3` exits with these).
///
/// ```
/// use otter::server::CallError;
/// assert_eq!(CallError::Timeout.to_string(), "call timed out");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No reply within the timeout (Erlang `timeout`). A later reply is dropped.
    Timeout,
    /// The server exited with this reason before replying.
    Exit(ExitReason),
    /// The server does not exist (Erlang `noproc`).
    Noproc,
    /// A server called itself, which could only time out (Erlang `calling_self`).
    CallingSelf,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("call timed out"),
            CallError::Exit(r) => write!(f, "server exited: {r}"),
            CallError::Noproc => f.write_str("no such server (noproc)"),
            CallError::CallingSelf => f.write_str("a server called itself"),
        }
    }
}

impl std::error::Error for CallError {}

impl From<CallError> for ExitReason {
    /// The reason a caller that does not handle the error would exit with.
    fn from(e: CallError) -> ExitReason {
        match e {
            CallError::Exit(r) => r,
            CallError::Noproc => ExitReason::Noproc,
            other => ExitReason::error(other),
        }
    }
}

struct SlotState<R> {
    outcome: Option<Result<R, CallError>>,
    waker: Option<Waker>,
    /// The caller stopped waiting: later outcomes are dropped.
    abandoned: bool,
    /// The timer a deferred deadline armed (in the caller's runtime's timer), cancelled
    /// when the call ends first.
    armed: Option<TimerKey>,
}

/// The one-shot meeting point of a call and its reply.
struct Slot<R> {
    state: Mutex<SlotState<R>>,
    /// Set (under the lock) once the call has an outcome or is abandoned: what a
    /// worker's flush of deferred deadlines reads without the lock.
    settled: AtomicBool,
}

impl<R> Slot<R> {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState<R>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fill(&self, outcome: Result<R, CallError>) {
        if let Some(w) = self.set(outcome) {
            w.wake();
        }
    }

    /// Sets the outcome if it is the first and the caller still waits; hands back the
    /// caller's waker, for the caller of `set` to wake (outside any lock it holds).
    fn set(&self, outcome: Result<R, CallError>) -> Option<Waker> {
        let mut s = self.lock();
        if s.abandoned || s.outcome.is_some() {
            return None;
        }
        s.outcome = Some(outcome);
        self.settled.store(true, Ordering::Release);
        s.waker.take()
    }
}

impl<R: Send + 'static> Expire for Slot<R> {
    fn is_waiting(&self) -> bool {
        !self.settled.load(Ordering::Acquire)
    }

    fn expire(&self) {
        self.fill(Err(CallError::Timeout));
    }

    fn armed(&self, timer: &Arc<Timer>, key: TimerKey) {
        let mut s = self.lock();
        if s.abandoned {
            drop(s);
            timer.cancel(key);
        } else {
            s.armed = Some(key);
        }
    }
}

/// The handle a server replies through (Erlang's `From` in `handle_call`). Keep it to
/// reply later, from the server or from any other process or thread (Erlang's
/// `gen_server:reply/2`).
///
/// ```
/// use otter::server::{self, Flow, ReplyTo, Server};
/// use otter::{Context, Runtime};
/// // A server that answers each call with the next caller's request (deferred replies).
/// #[derive(Default)]
/// struct Swap(Option<(u32, ReplyTo<u32>)>);
/// struct Trade(u32, ReplyTo<u32>);
/// impl Server for Swap {
///     type Args = ();
///     type Call = Trade;
///     type Cast = ();
///     type Info = ();
///     async fn init(_: (), _: &mut server::ServerContext<Self>) -> Result<Self, otter::ExitReason> {
///         Ok(Swap::default())
///     }
///     async fn handle_call(&mut self, Trade(n, from): Trade, _: &mut server::ServerContext<Self>) -> Flow {
///         match self.0.take() {
///             None => self.0 = Some((n, from)),
///             Some((m, earlier)) => { earlier.reply(n); from.reply(m); }
///         }
///         Flow::Continue
///     }
/// }
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let s = Swap::start(&cx, ()).await.unwrap();
///     let other = cx.spawn(move |_: Context<()>| async move { s.call(|r| Trade(1, r)).await.unwrap(); });
///     let got = s.call(|r| Trade(2, r)).await;
///     let _ = other;
///     got
/// });
/// assert_eq!(r.unwrap(), Ok(1));
/// ```
pub struct ReplyTo<R> {
    slot: Arc<Slot<R>>,
}

impl<R> fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyTo").finish_non_exhaustive()
    }
}

impl<R> ReplyTo<R> {
    /// Sends the reply. Does nothing if the caller stopped waiting (timed out, or its
    /// call future was dropped) or already has an outcome (the server's exit).
    ///
    /// See [`ReplyTo`] for an example.
    pub fn reply(self, value: R) {
        self.slot.fill(Ok(value));
    }

    /// Whether the caller still waits for this reply.
    ///
    /// See [`ReplyTo`] for an example of replying.
    pub fn is_waiting(&self) -> bool {
        !self.slot.settled.load(Ordering::Acquire)
    }
}

/// A call in progress, on the caller's side: the slot, and the watcher on the server.
pub(crate) struct Pending<R> {
    slot: Arc<Slot<R>>,
    monitor: Option<MonitorRef>,
}

impl<R: Send + 'static> Pending<R> {
    /// A new slot and its `ReplyTo`, without a watcher (the caller arranges one).
    pub(crate) fn new() -> (Pending<R>, ReplyTo<R>) {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                outcome: None,
                waker: None,
                abandoned: false,
                armed: None,
            }),
            settled: AtomicBool::new(false),
        });
        let reply = ReplyTo { slot: slot.clone() };
        (
            Pending {
                slot,
                monitor: None,
            },
            reply,
        )
    }

    /// A watcher of `target` that ends this call with `on_exit(reason)` when it exits
    /// (`Noproc` if it does not exist), to be added by the caller.
    pub(crate) fn watcher(
        &mut self,
        target: RawPid,
        on_exit: impl FnOnce(ExitReason) -> Result<R, CallError> + Send + 'static,
    ) -> Watcher {
        let reference = MonitorRef::new(target, None);
        self.monitor = Some(reference);
        let slot = self.slot.clone();
        Watcher {
            id: reference.id,
            owner: None,
            notify: Box::new(move |down: Down| {
                let outcome = match down.reason {
                    ExitReason::Noproc => Err(CallError::Noproc),
                    r => on_exit(r),
                };
                // Under the exiting server's lock: set the outcome now (what
                // `demonitor` relies on), leave the wake-up to the exit.
                slot.set(outcome)
            }),
        }
    }

    /// Watches `target` with [`Pending::watcher`]; if it is gone, the outcome is
    /// `Noproc` at once.
    pub(crate) fn watch(
        &mut self,
        target: RawPid,
        on_exit: impl FnOnce(ExitReason) -> Result<R, CallError> + Send + 'static,
    ) {
        let w = self.watcher(target, on_exit);
        if bonds::add_watcher(target, w).is_err() {
            self.monitor = None;
            self.slot.fill(Err(CallError::Noproc));
        }
    }

    /// Waits for the outcome, at most `timeout` (`None`: forever).
    pub(crate) async fn wait(self, timeout: Option<Duration>) -> Result<R, CallError> {
        Wait {
            pending: self,
            timeout,
            sleep: None,
        }
        .await
    }
}

impl<R> Drop for Pending<R> {
    fn drop(&mut self) {
        let armed = {
            let mut s = self.slot.lock();
            s.abandoned = true;
            self.slot.settled.store(true, Ordering::Release);
            s.waker = None;
            s.armed.take()
        };
        // Armed by the caller's worker in its runtime's timer: the caller ends the call
        // on a worker of that runtime. (Off it, the timer fires later and finds the call
        // abandoned.)
        if let Some(key) = armed
            && let Some(timer) = crate::scheduler::context::current_timer()
        {
            timer.cancel(key);
        }
        if let Some(m) = self.monitor.take() {
            bonds::remove_watcher(m.target, m.id);
        }
    }
}

/// No larger than it must be: a call's future is moved as a whole, and a few bytes
/// more turned that move into a `memcpy` call (callgrind, `pingpong style=server`).
struct Wait<R> {
    pending: Pending<R>,
    /// The timeout, until the first poll turns it into a deadline: deferred to the
    /// worker (the module docs' cost), or this `sleep`.
    timeout: Option<Duration>,
    sleep: Option<Sleep>,
}

impl<R: Send + 'static> Future for Wait<R> {
    type Output = Result<R, CallError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        {
            let mut s = this.pending.slot.lock();
            if let Some(outcome) = s.outcome.take() {
                return Poll::Ready(outcome);
            }
            match &s.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => s.waker = Some(cx.waker().clone()),
            }
        }
        if let Some(timeout) = this.timeout.take() {
            let deadline = crate::timer::deadline_after(timeout);
            if timeout >= DEFER_TIMER_AFTER {
                let d = Deferred {
                    deadline,
                    target: this.pending.slot.clone(),
                };
                if crate::scheduler::context::defer(d).is_ok() {
                    return Poll::Pending;
                }
            }
            // The caller's runtime times the call (never the server's, which may be
            // gone); outside any runtime, the process-wide fallback timer.
            let timer =
                crate::scheduler::context::current_timer().unwrap_or_else(crate::timer::global);
            this.sleep = Some(Sleep::new(timer, deadline));
        }
        if let Some(sleep) = &mut this.sleep
            && sleep.poll_elapsed(cx)
        {
            // A reply may have raced with the deadline: it wins.
            let mut s = this.pending.slot.lock();
            return Poll::Ready(s.outcome.take().unwrap_or(Err(CallError::Timeout)));
        }
        Poll::Pending
    }
}
