//! The call protocol: a reply slot per call, reused by the next call to the same server
//! (`gen.erl`'s `do_call`, without the mailbox).
//!
//! # Rules
//!
//! 1. A call sends `Call(request)` to the server, the request holding a [`ReplyTo`], and
//!    waits on a slot shared with that `ReplyTo`; the reply goes into the slot, never
//!    into the caller's mailbox, so waiting for it scans nothing. While it waits, the
//!    caller's slot is watched by the server (a watcher in the server's bonds, as
//!    `gen:call`'s monitor): if the server exits first, the call ends with
//!    [`CallError::Exit`] and the server's reason; if it does not exist, with
//!    [`CallError::Noproc`] at once. The first outcome wins: a reply, the server's exit,
//!    or the timeout. A reply sent just before the server exits is returned (Erlang:
//!    the reply message is ahead of the `'DOWN'`).
//! 2. **No late reply left behind.** A slot's outcome cell (`reply/outcome.rs`, lock
//!    free) holds the tag of its latest call and whether that call still waits. An
//!    outcome is stored only for the call it names, while it waits, by the one answer
//!    that wins it; anything else is dropped where it arrives. A call that stops
//!    waiting (timeout, or its future dropped, as when the caller is killed) ends it in
//!    the cell and drops an outcome that came meanwhile.
//! 3. **A slot serves the next call only when nothing of the last is left.** When a
//!    plain call ends and the only references to its slot are the caller's and its
//!    watcher's (no `ReplyTo` anywhere: answered and dropped, or dropped unanswered),
//!    the slot goes to the worker's kept slots (`reply/kept.rs`, at most
//!    `CALL_SLOTS_PER_WORKER`, the oldest let go first), its watcher still on the
//!    server. The worker's next call to that server (same reply type) takes it, bumps
//!    the tag and sets `WAITING`: no allocation, no lock on the server. So a `ReplyTo`
//!    always answers its slot's latest call and needs no tag (a request is one word
//!    larger than its payload, as before); a slot still referenced by a `ReplyTo` (a
//!    timed-out call the server still holds) is let go, its watcher removed. A deferred
//!    deadline holds no reference to the slot (its address and tag only name it), and
//!    a timer is the caller's own `Sleep`.
//! 4. **The server's exit between two calls.** It takes every watcher, kept ones
//!    included: a kept slot's watcher marks it unwatched, and the next call lets it go
//!    and watches the server anew, which gives `Noproc` if it is gone. Its exit during a
//!    call ends that call with its reason. The two sides are a Dekker pair: the caller
//!    publishes its call in the cell, then (after a full barrier) reads `watched`; the
//!    exit clears `watched`, then (after a full fence) ends any call waiting in the
//!    cell. So either the caller sees the exit and lets go of the slot, or the exit
//!    sees the call (the loom model `tests/loom_reply.rs`).
//! 5. A kept slot belongs to the worker, not to a caller: a caller that ends leaves no
//!    watcher of its own on the server; a server has at most `CALL_SLOTS_PER_WORKER`
//!    idle watchers per worker thread (spare threads included, `scheduler/stand_in.rs`),
//!    removed when the worker lets the slot go (full list, or the worker's end) or
//!    when the server exits.
//! 6. `ReplyTo` is consumed by [`ReplyTo::reply`]: a request is answered at most once.
//!    It lets go of the slot before it wakes the caller, so a caller woken on another
//!    worker finds the slot free to keep. Dropping it unanswered does nothing (as
//!    forgetting `From` does in Erlang): the caller gets the timeout, or the server's
//!    exit. `start` and `stop` use a slot of their own with a watcher that maps the exit
//!    reason (removed when they end, never kept).
//! 7. **Signal order from an exiting server.** A server's exit sends its exit signals to
//!    linked processes before it ends the calls that watch it (`process/bonds.rs`'s
//!    `notify_exit`), as Erlang's `'EXIT'` to a linked caller comes before the
//!    `'DOWN'` that ends its `gen_server:call` or `stop`. A call ended by the exit
//!    does not return past a pending exit signal that will end its caller: it yields
//!    and the signal is applied first (a caller linked to a server that does not trap
//!    exits never sees `stop(Shutdown)` return).
//!
//! # Cost
//!
//! A call that finds a kept slot: two locked instructions on the slot's word (the
//! start's swap, the reply's compare-and-swap; the take is a load and a store), the
//! `ReplyTo`'s reference count, and the request and the wake-up. Otherwise one slot
//! allocation and its watcher added under the server's bonds lock; a slot that cannot
//! be kept costs the watcher's removal too. The timeout costs a timer-wheel entry only
//! for a call that waits long: on a worker, a timeout of at least `DEFER_TIMER_AFTER`
//! (`tuning.rs`) is deferred: the caller's pid, the slot's address and the
//! tag go into the worker's list (`timer/deferred.rs`), and the call takes them out
//! when it ends there, with no locked instruction. A call still waiting at the worker's
//! second flush after it (every `GLOBAL_INTERVAL` ticks, and before the worker parks)
//! is woken, and that poll arms its own `Sleep`, `timeout` from then: it fires on time
//! or later, never earlier, and later only by the time from the call to that poll (two
//! flushes; or, if a process then holds the caller's worker in one long poll, the
//! watchdog's look at that worker, which wakes the call elsewhere: `WATCHDOG` to twice
//! that). A shorter timeout, a call made off the workers, or one polled with a waker
//! that is not its process's, arms its `Sleep` at once.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use crate::exit::ExitReason;
use crate::loom::full_fence;
use crate::monitor::{CallWatch, Notify, Watcher};
use crate::pid::RawPid;
use crate::process::bonds;
use crate::timer::Sleep;
use crate::tuning::DEFER_TIMER_AFTER;

pub(crate) mod kept;
mod outcome;

use outcome::{Answer, OutcomeCell};

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
    /// The server's mailbox is bounded and full: the request was not sent
    /// ([`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox)). No
    /// Erlang counterpart: there, the call would wait in the queue.
    Full,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("call timed out"),
            CallError::Exit(r) => write!(f, "server exited: {r}"),
            CallError::Noproc => f.write_str("no such server (noproc)"),
            CallError::CallingSelf => f.write_str("a server called itself"),
            CallError::Full => f.write_str("the server's mailbox is full"),
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

/// How the server's exit ends a call that waits on the slot (`None` in the slot: with
/// [`CallError::Exit`] and the reason).
type OnExit<R> = Box<dyn FnOnce(ExitReason) -> Result<R, CallError> + Send>;

/// The meeting point of a call and its reply; serves one call after another (module
/// docs, rules 1–3). The outcome and the caller's waker pass through a lock-free cell
/// (`reply/outcome.rs`); the locks here are taken only off the common path: a timer
/// armed for a long call, and a start's or stop's exit mapping.
struct Slot<R> {
    outcome: OutcomeCell<Result<R, CallError>>,
    /// The slot's watcher is on its server (cleared by the server's exit). With the
    /// cell's word, a Dekker pair (rule 4): the caller publishes `WAITING`, then reads
    /// this; the exit clears this, then fills whatever call waits.
    watched: AtomicBool,
    on_exit: Mutex<Option<OnExit<R>>>,
    /// The process that made the latest call through this slot (its pid's bits), or
    /// [`NO_CALLER`] (a call from outside any process): what introspection reports as
    /// waiting on the server (`introspect.rs`, "Calls"). A store per call, by the caller.
    caller: AtomicU64,
}

/// [`Slot::caller`] when no process made the call.
const NO_CALLER: u64 = u64::MAX;

impl<R> Slot<R> {
    fn new(tag: u64, waker: Option<Waker>, watched: bool) -> Slot<R> {
        Slot {
            outcome: OutcomeCell::waiting(tag, waker),
            watched: AtomicBool::new(watched),
            on_exit: Mutex::new(None),
            caller: AtomicU64::new(NO_CALLER),
        }
    }

    /// Whether call `tag` still waits.
    fn waiting(&self, tag: u64) -> bool {
        self.outcome.is_waiting(tag)
    }

    fn fill(&self, tag: u64, outcome: Result<R, CallError>) {
        if let Some(w) = self.set(tag, outcome) {
            w.wake();
        }
    }

    /// Sets the outcome of call `tag` if it still waits (rule 2: else the outcome is
    /// dropped here); hands back the caller's waker, for the caller of `set` to wake
    /// (outside any lock it holds).
    fn set(&self, tag: u64, outcome: Result<R, CallError>) -> Option<Waker> {
        self.outcome.fill(Answer::Tag(tag), outcome).ok().flatten()
    }

    /// [`Slot::set`] for the slot's latest call: what a [`ReplyTo`] answers (rule 3).
    fn set_current(&self, outcome: Result<R, CallError>) -> Option<Waker> {
        self.outcome.fill(Answer::Current, outcome).ok().flatten()
    }

    /// Ends call `tag`: its outcome, if any came.
    fn take(&self, tag: u64) -> Option<Result<R, CallError>> {
        self.outcome.take(tag)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Send> CallWatch for Slot<R> {
    fn waiting_caller(&self) -> Option<RawPid> {
        if !self.outcome.latest_waits() {
            return None;
        }
        let caller = self.caller.load(Ordering::Relaxed);
        (caller != NO_CALLER).then(|| RawPid::from_bits(caller))
    }

    fn server_exited(&self, reason: ExitReason) -> Option<Waker> {
        // Under the exiting server's lock: set the outcome now (what `demonitor`
        // relies on), leave the wake-up to the exit. The fence orders the clear before
        // the cell's read (rule 4's Dekker pair).
        self.watched.store(false, Ordering::Relaxed);
        full_fence();
        if !self.outcome.latest_waits() {
            return None;
        }
        let outcome = match (reason, lock(&self.on_exit).take()) {
            (ExitReason::Noproc, _) => Err(CallError::Noproc),
            (r, Some(on_exit)) => on_exit(r),
            (r, None) => Err(CallError::Exit(r)),
        };
        self.set_current(outcome)
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
    /// The slot of the call this answers: while this lives, the slot serves no other
    /// call (rule 3), so it needs no tag, and a request stays one word larger than its
    /// payload.
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
        // A debugged server's reply (`server/system.rs`, rule 3).
        if crate::server::reply_hooked() {
            crate::server::reply_seen::<R>();
        }
        let ReplyTo { slot } = self;
        let waker = slot.set_current(Ok(value));
        // Let go of the slot before the caller wakes: a caller woken on another worker
        // then finds it free to keep (rule 3).
        drop(slot);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether the caller still waits for this reply.
    ///
    /// See [`ReplyTo`] for an example of replying.
    pub fn is_waiting(&self) -> bool {
        self.slot.outcome.latest_waits()
    }
}

/// What a call's slot has to do with the server once the call ends.
enum Watch {
    /// Nothing: no watcher (refused, or never added).
    None,
    /// A watcher of this call alone: taken off the server when the call ends.
    Own { target: RawPid, id: u64 },
    /// A plain call's watcher: the slot is kept, watching, for the worker's next call to
    /// the server (rule 3).
    Kept { target: RawPid, id: u64 },
}

/// A call in progress, on the caller's side: the slot, and the watcher on the server.
pub(crate) struct Pending<R: Send + 'static> {
    /// Always `Some` until the drop moves it into the worker's kept slots.
    slot: Option<Arc<Slot<R>>>,
    tag: u64,
    watch: Watch,
    /// The slot's waker is the one of the poll that started the call.
    waker_set: bool,
    /// The outcome has been taken: the call is over.
    done: bool,
    /// A deadline for this call went into the worker's deferred list
    /// (`timer/deferred.rs`).
    deferred: bool,
}

impl<R: Send + 'static> Pending<R> {
    fn slot(&self) -> &Arc<Slot<R>> {
        self.slot
            .as_ref()
            .expect("a call's slot until it is dropped")
    }

    /// A new slot and its `ReplyTo`, without a watcher (the caller arranges one).
    pub(crate) fn new() -> (Pending<R>, ReplyTo<R>) {
        let slot = Arc::new(Slot::new(1, None, false));
        let reply = ReplyTo { slot: slot.clone() };
        let pending = Pending {
            slot: Some(slot),
            tag: 1,
            watch: Watch::None,
            waker_set: false,
            done: false,
            deferred: false,
        };
        (pending, reply)
    }

    /// A plain call to `target` by the poll whose waker is `waker`: a slot this worker
    /// kept watching `target` (rule 3), else a new one and its watcher on `target`
    /// (`Noproc` at once if `target` is gone).
    // Always inlined, as `Wait::poll` (docs/design/0044); the slow path is
    // `call_new_slot`.
    #[inline(always)]
    pub(crate) fn call(target: RawPid, waker: Waker) -> (Pending<R>, ReplyTo<R>) {
        let caller = crate::process::waker::pid_of(&waker).map_or(NO_CALLER, RawPid::to_bits);
        let mut waker = Some(waker);
        while let Some((slot, id)) = kept::take::<Slot<R>>(target) {
            if !slot.watched.load(Ordering::Relaxed) {
                // Its server has exited and taken the watcher: let go of it.
                continue;
            }
            let tag = slot.outcome.tag() + 1;
            let Some(w) = waker.take() else { break };
            // Before `begin`, whose barrier publishes it with the call.
            slot.caller.store(caller, Ordering::Relaxed);
            slot.outcome.begin(tag, w);
            // After the publication (`begin`'s barrier). If the server's exit cleared
            // `watched` before it, it found no call waiting: end this one (dropping
            // what an exit stored meanwhile) and let go of the slot. A new slot
            // follows, which finds the server gone; its first poll gives it a waker.
            if !slot.watched.load(Ordering::Relaxed) {
                drop(slot.take(tag));
                break;
            }
            let reply = ReplyTo { slot: slot.clone() };
            let pending = Pending {
                slot: Some(slot),
                tag,
                watch: Watch::Kept { target, id },
                waker_set: true,
                done: false,
                deferred: false,
            };
            return (pending, reply);
        }
        Self::call_new_slot(target, waker, caller)
    }

    /// [`Pending::call`] without a kept slot: a new one, and its watcher on `target`.
    #[cold]
    #[inline(never)]
    fn call_new_slot(
        target: RawPid,
        waker: Option<Waker>,
        caller: u64,
    ) -> (Pending<R>, ReplyTo<R>) {
        let waker_set = waker.is_some();
        let slot = Arc::new(Slot::new(1, waker, true));
        slot.caller.store(caller, Ordering::Relaxed);
        let id = crate::monitor::next_id();
        let watcher = Watcher {
            id,
            owner: None,
            notify: Notify::Call(slot.clone()),
        };
        let watch = if bonds::add_watcher(target, watcher).is_ok() {
            Watch::Kept { target, id }
        } else {
            slot.watched.store(false, Ordering::Relaxed);
            // Our own waker: the first poll finds the outcome without it.
            drop(slot.set(1, Err(CallError::Noproc)));
            Watch::None
        };
        let reply = ReplyTo { slot: slot.clone() };
        let pending = Pending {
            slot: Some(slot),
            tag: 1,
            watch,
            waker_set,
            done: false,
            deferred: false,
        };
        (pending, reply)
    }

    /// A watcher of `target` that ends this call with `on_exit(reason)` when it exits
    /// (`Noproc` if it does not exist), to be added by the caller; taken off `target`
    /// when the call ends.
    pub(crate) fn watcher(
        &mut self,
        target: RawPid,
        on_exit: impl FnOnce(ExitReason) -> Result<R, CallError> + Send + 'static,
    ) -> Watcher {
        let id = crate::monitor::next_id();
        *lock(&self.slot().on_exit) = Some(Box::new(on_exit));
        self.slot().watched.store(true, Ordering::Relaxed);
        self.watch = Watch::Own { target, id };
        Watcher {
            id,
            owner: None,
            notify: Notify::Call(self.slot().clone()),
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
            self.watch = Watch::None;
            self.slot().fill(self.tag, Err(CallError::Noproc));
        }
    }

    /// Waits for the outcome, at most `timeout` (`None`: forever): the future itself,
    /// not an `async fn` around it (docs/design/0044).
    #[inline]
    pub(crate) fn wait(self, timeout: Option<Duration>) -> Wait<R> {
        Wait {
            pending: self,
            timeout,
            sleep: None,
        }
    }

    /// Rule 7: the outcome is in and the server's exit ended the slot's watch, and an
    /// exit signal that will end the caller is pending (the exit sent it through a link
    /// before it filled the slot): the caller yields, and its worker applies the signal
    /// before the next poll. The signal's flag is stored before the slot's fill, which
    /// the caller's read of the outcome acquires. Off the common path: a slot still
    /// watched skips the look at the caller.
    fn exit_signal_first(&self, waker: &Waker) -> bool {
        if self.slot().watched.load(Ordering::Relaxed) {
            return false;
        }
        match crate::process::waker::pid_of(waker) {
            Some(me) if crate::process::cell::exit_pending(me) => {
                waker.wake_by_ref();
                true
            }
            _ => false,
        }
    }

    /// Takes the outcome (the call is over): the reply or the server's exit, or, if
    /// none came, `Timeout` (the timer fired, or the caller's `Sleep` elapsed).
    fn finish(&mut self) -> Result<R, CallError> {
        let outcome = self.slot().take(self.tag);
        self.done = true;
        outcome.unwrap_or(Err(CallError::Timeout))
    }
}

impl<R: Send + 'static> Drop for Pending<R> {
    fn drop(&mut self) {
        if self.deferred
            && let Some(slot) = &self.slot
        {
            // Most calls end on the worker that deferred their deadline, before its
            // flush: the entry goes now, and the flush has no wake-up to make for it.
            crate::timer::undefer(Arc::as_ptr(slot).addr(), self.tag);
        }
        if !self.done {
            // Abandoned (timeout of our own `Sleep` aside, the call future was dropped):
            // a later outcome for this tag is dropped by `set`, one already here now.
            drop(self.slot().take(self.tag));
        }
        match std::mem::replace(&mut self.watch, Watch::None) {
            Watch::None => {}
            Watch::Own { target, id } => {
                bonds::remove_watcher(target, id);
            }
            Watch::Kept { target, id } => {
                let Some(slot) = self.slot.take() else { return };
                // Ours and the watcher's: no `ReplyTo` of this call is left, so the slot
                // may serve the next one (rule 3). The fence pairs with the release of
                // the last other reference.
                if Arc::strong_count(&slot) == 2 {
                    std::sync::atomic::fence(Ordering::Acquire);
                    // Moved, not cloned: a `Pending` is dropped once.
                    kept::keep(kept::KeptSlot {
                        server: target,
                        id,
                        slot,
                    });
                } else {
                    bonds::remove_watcher(target, id);
                }
            }
        }
    }
}

/// No larger than it must be: a call's future is moved as a whole, and a few bytes
/// more turned that move into a `memcpy` call (callgrind, `pingpong style=server`).
pub(crate) struct Wait<R: Send + 'static> {
    pending: Pending<R>,
    /// The timeout, until a poll turns it into this `sleep`: the first, or, for a
    /// deferred one (the module docs' cost), the next.
    timeout: Option<Duration>,
    sleep: Option<Sleep>,
}

impl<R: Send + 'static> Future for Wait<R> {
    type Output = Result<R, CallError>;

    // Always inlined into each call site: with two callers of one reply type LLVM
    // kept it out of line, and `#[inline]` did not change that (docs/design/0044).
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let p = &mut this.pending;
        if !p.slot().waiting(p.tag)
            || (!std::mem::take(&mut p.waker_set) && !p.slot().outcome.register(p.tag, cx.waker()))
        {
            if p.exit_signal_first(cx.waker()) {
                return Poll::Pending;
            }
            return Poll::Ready(p.finish());
        }
        if let Some(timeout) = this.timeout {
            if !p.deferred
                && timeout >= DEFER_TIMER_AFTER
                && let Some(pid) = crate::process::waker::pid_of(cx.waker())
                && crate::timer::defer(pid, Arc::as_ptr(p.slot()).addr(), p.tag)
            {
                // Polled again while it still waits (the worker's flush, or the
                // watchdog's look at a held worker, asks for that): the timer is armed
                // then.
                p.deferred = true;
                return Poll::Pending;
            }
            this.timeout = None;
            // The caller's runtime times the call (never the server's, which may be
            // gone); outside any runtime, the process-wide fallback timer.
            this.sleep = Some(crate::timer::sleep_here(crate::timer::deadline_after(
                timeout,
            )));
        }
        if let Some(sleep) = &mut this.sleep
            && sleep.poll_elapsed(cx)
        {
            // A reply may have raced with the deadline: it wins.
            if !p.slot().waiting(p.tag) && p.exit_signal_first(cx.waker()) {
                return Poll::Pending;
            }
            return Poll::Ready(p.finish());
        }
        Poll::Pending
    }
}
