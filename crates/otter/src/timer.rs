//! Timers: receive timeouts, [`Sleep`], `send_after` and periodic intervals.
//!
//! A runtime's timer is one shard per worker, plus one for every other thread
//! (`timer/shard.rs`: a timing wheel, `timer/wheel.rs`, under its own lock), as ERTS has
//! a timer wheel per scheduler: a timer lives on the shard of the worker that set it, so
//! workers that arm and cancel timeouts at once touch no common lock or cache line, and
//! a cancel from another worker takes that shard's lock (`shard.rs`'s rules). One timer
//! thread fires them all: it sleeps until the earliest deadline of every shard, and an
//! insert that files an earlier one wakes it (`timer/alarm.rs`). The thread is started
//! by the first timer a runtime is asked for, so a program that never uses a timeout
//! never has one, and a process that uses none pays nothing: there is no per-process
//! timer state.
//!
//! Deadlines are rounded *up* to whole milliseconds since the timer's start, so a timer
//! never fires early; it fires within a millisecond of its deadline plus the wake-up
//! latency of the timer thread, which sleeps until the start of the next due
//! millisecond.

pub(crate) mod alarm;
pub(crate) mod deferred;
pub(crate) mod interval;
pub(crate) mod shard;
pub(crate) mod wheel;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context as TaskContext, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::pid::RawPid;
use alarm::Alarm;
use deferred::DeferredDeadlines;
use shard::{NEVER, Shard};
use wheel::Key;

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Wake a waiting future.
    Wake(Waker),
    /// Run a closure (used to send a message).
    Run(Box<dyn FnOnce() + Send>),
}

impl std::fmt::Debug for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Wake(_) => f.write_str("Wake"),
            Action::Run(_) => f.write_str("Run"),
        }
    }
}

/// A runtime's timer service.
#[derive(Debug)]
pub(crate) struct Timer {
    start: Instant,
    /// One lane per worker, then the lane of every other thread.
    lanes: Box<[Arc<Lane>]>,
    alarm: Alarm,
    started: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Its thread's name.
    name: String,
    /// A simulation's timer: it never starts a thread; the simulation fires what is due
    /// on its own clock ([`Timer::fire_due`]).
    simulated: bool,
}

/// One shard of a timer, as a [`Sleep`] holds it: the shard, and the way to the timer
/// thread for an insert that files the shard's earliest deadline.
#[derive(Debug)]
pub(crate) struct Lane {
    shard: Shard<Action>,
    /// The deadlines of calls this lane's worker has not armed yet (`timer/deferred.rs`).
    deferred: DeferredDeadlines,
    start: Instant,
    timer: Weak<Timer>,
    index: u32,
}

impl Lane {
    fn insert(&self, deadline: Instant, action: Action) -> TimerKey {
        let ms = to_ms_ceil(self.start, deadline);
        let (key, earlier) = self.shard.insert(ms, action);
        if earlier && let Some(t) = self.timer.upgrade() {
            t.ensure_thread();
            t.alarm.deadline_filed(ms);
        }
        TimerKey {
            lane: self.index,
            key,
        }
    }
}

/// A timer tied to its destination, which cancels it when it exits (Erlang's rule for
/// timers aimed at a pid): a `send_after`'s entry, or an interval.
#[derive(Debug)]
pub(crate) enum Tied {
    /// A one-shot timer's entry.
    Once(Weak<Timer>, TimerKey),
    /// An interval, whatever entry it has pending now.
    Interval(interval::Handle),
}

impl Tied {
    /// Whether the timer may still send.
    pub(crate) fn is_pending(&self) -> bool {
        match self {
            Tied::Once(t, k) => t.upgrade().is_some_and(|t| t.is_pending(*k)),
            Tied::Interval(h) => h.is_running(),
        }
    }

    /// Cancels it; the message it held is dropped under a catch
    /// ([`Timer::cancel_quietly`]).
    pub(crate) fn cancel(self) {
        match self {
            Tied::Once(t, k) => {
                if let Some(t) = t.upgrade() {
                    t.cancel_quietly(k);
                }
            }
            Tied::Interval(h) => h.stop(),
        }
    }
}

/// A pending timer: its lane and its key there; cancel it with [`Timer::cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerKey {
    lane: u32,
    key: Key,
}

/// `at` in whole milliseconds since `start`, rounded up.
fn to_ms_ceil(start: Instant, at: Instant) -> u64 {
    let d = at.saturating_duration_since(start);
    let ms = d.as_millis() as u64;
    if d > Duration::from_millis(ms) {
        ms + 1
    } else {
        ms
    }
}

impl Timer {
    /// A timer with one shard per worker slot of `workers` (a runtime's workers and
    /// its spares, `scheduler/stand_in.rs`) and one for other threads, whose thread,
    /// started by the first timer, is called `name`.
    pub(crate) fn new(name: String, workers: usize) -> Arc<Timer> {
        Timer::build(name, workers, Instant::now(), false)
    }

    /// A simulation's timer (`sim.rs`), whose time starts at `start`: no thread; the
    /// simulation fires its timers ([`Timer::fire_due`]).
    pub(crate) fn simulated(name: String, workers: usize, start: Instant) -> Arc<Timer> {
        Timer::build(name, workers, start, true)
    }

    fn build(name: String, workers: usize, start: Instant, simulated: bool) -> Arc<Timer> {
        Arc::new_cyclic(|me| Timer {
            start,
            lanes: (0..=workers)
                .map(|i| {
                    Arc::new(Lane {
                        shard: Shard::new(),
                        deferred: DeferredDeadlines::default(),
                        start,
                        timer: me.clone(),
                        index: i as u32,
                    })
                })
                .collect(),
            alarm: Alarm::new(),
            started: AtomicBool::new(false),
            thread: Mutex::new(None),
            name,
            simulated,
        })
    }

    /// The deadlines worker slot `lane` deferred (`timer/deferred.rs`): the watchdog
    /// reads them when that worker is held, and a turn is renewed in place only while
    /// there are none.
    pub(crate) fn deferred(&self, lane: usize) -> &DeferredDeadlines {
        &self.lanes[lane].deferred
    }

    /// The earliest deadline filed, in milliseconds since the timer's start; `None`
    /// if no timer is pending.
    pub(crate) fn next_due(&self) -> Option<u64> {
        Some(self.earliest()).filter(|&at| at != NEVER)
    }

    /// Fires, on the calling thread, every timer due at `now_ms` (a simulation's step
    /// of time; the timer thread's loop for the others): what each wakes is scheduled
    /// from here. How many fired.
    pub(crate) fn fire_due(&self, now_ms: u64) -> usize {
        let mut due = Vec::new();
        for lane in self.lanes.iter() {
            lane.shard.advance(now_ms, &mut due);
        }
        let n = due.len();
        fire(due.drain(..));
        n
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// The lane of the calling thread: its own if it is a worker of this timer's
    /// runtime, else the lane of other threads.
    fn lane_here(&self) -> &Arc<Lane> {
        let (timer, index) = LANE.with(Cell::get);
        let i = if std::ptr::eq(timer, self) {
            index
        } else {
            self.lanes.len() - 1
        };
        &self.lanes[i]
    }

    /// Files `action` to run at `deadline` or later, on the calling thread's lane.
    pub(crate) fn insert(&self, deadline: Instant, action: Action) -> TimerKey {
        self.lane_here().insert(deadline, action)
    }

    /// A [`Sleep`] until `deadline` on the calling thread's lane.
    pub(crate) fn sleep(&self, deadline: Instant) -> Sleep {
        Sleep::new(self.lane_here().clone(), deadline)
    }

    /// Cancels a pending timer; false if it already fired (or was cancelled).
    pub(crate) fn cancel(&self, key: TimerKey) -> bool {
        self.take(key).is_some()
    }

    /// [`Timer::cancel`] for the runtime's own bookkeeping (a destination's exit, a
    /// `send_after` to a process that has ended): the message the timer held is
    /// dropped here, and a panic in its `Drop` is caught, as on the timer thread.
    pub(crate) fn cancel_quietly(&self, key: TimerKey) {
        if let Some(a) = self.take(key) {
            crate::unwind::catch_silently(move || drop(a));
        }
    }

    /// Takes a pending timer's action out of its shard (dropped by the caller, after
    /// the lock is released).
    fn take(&self, key: TimerKey) -> Option<Action> {
        self.lanes.get(key.lane as usize)?.shard.cancel(key.key)
    }

    /// Timers armed now, and timers fired since the start (introspection).
    pub(crate) fn counts(&self) -> (usize, u64) {
        self.lanes.iter().fold((0, 0), |(n, f), l| {
            let (ln, lf) = l.shard.counts();
            (n + ln, f + lf)
        })
    }

    /// Whether `key`'s timer has neither fired nor been cancelled.
    pub(crate) fn is_pending(&self, key: TimerKey) -> bool {
        self.lanes
            .get(key.lane as usize)
            .is_some_and(|l| l.shard.is_pending(key.key))
    }

    /// The least `next` of all shards: the timer thread wakes by then.
    fn earliest(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| l.shard.next())
            .min()
            .unwrap_or(NEVER)
    }

    fn ensure_thread(self: &Arc<Self>) {
        if self.simulated || self.started.load(Ordering::Acquire) {
            return;
        }
        let mut t = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if t.is_some() || self.alarm.is_stopped() {
            return;
        }
        let me = Arc::downgrade(self);
        *t = std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || run(me))
            .ok();
        self.started.store(true, Ordering::Release);
    }

    /// Whether the calling thread is this timer's thread.
    pub(crate) fn is_current_thread(&self) -> bool {
        TIMER_THREAD.with(|t| std::ptr::eq(t.get(), self))
    }

    /// Stops the thread and drops pending timers. Called by the runtime's shutdown, on
    /// a thread other than the timer's own (`Runtime::drop` sees to that).
    pub(crate) fn shutdown(&self) {
        assert!(
            !self.is_current_thread(),
            "otter: a timer cannot be shut down from its own thread"
        );
        self.alarm.stop();
        if let Some(t) = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = t.join();
        }
        // Each pending message is dropped under a catch, as the timer thread's are: a
        // panicking `Drop` of one must neither abort the shutdown nor leak the rest.
        for lane in self.lanes.iter() {
            for action in lane.shard.drain() {
                crate::unwind::catch_silently(move || drop(action));
            }
        }
    }
}

/// The instant `after` from now. A duration too long for `Instant` (`Duration::MAX`,
/// Erlang's `infinity`) gives an instant about 30 years ahead instead of a panic: a
/// timer that never fires in the life of the program, which the wheel files like any
/// other (re-filed every two years).
pub(crate) fn deadline_after(after: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    let now = crate::time::now();
    now.checked_add(after.min(FAR))
        .or_else(|| now.checked_add(Duration::from_secs(24 * 3600)))
        .unwrap_or(now)
}

/// A timer for code that runs outside any runtime's workers (a call made from a
/// foreign executor): one per OS process, started on first use, never shut down.
fn global() -> &'static Timer {
    static GLOBAL: std::sync::OnceLock<Arc<Timer>> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| Timer::new("otter-timer".into(), 0))
}

thread_local! {
    /// The timer whose thread this is; null on any other thread. Only compared. (Kept
    /// here, not in `runtime/context.rs`: the timer depends on nothing of the
    /// scheduler.)
    static TIMER_THREAD: Cell<*const Timer> = const { Cell::new(std::ptr::null()) };
    /// The timer of the runtime whose worker this thread is (a counted reference:
    /// using it never touches a runtime that may be gone). Set by the worker.
    static WORKER_TIMER: std::cell::RefCell<Option<Arc<Timer>>> = const { std::cell::RefCell::new(None) };
    /// That timer (only compared) and this worker's lane in it.
    static LANE: Cell<(*const Timer, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// This thread is worker `index` of the runtime whose timer is `timer` (`None`: no
/// longer).
pub(crate) fn set_current(timer: Option<(Arc<Timer>, usize)>) {
    let lane = match &timer {
        Some((t, i)) => (Arc::as_ptr(t), *i),
        None => (std::ptr::null(), 0),
    };
    LANE.with(|l| l.set(lane));
    WORKER_TIMER.with(|t| *t.borrow_mut() = timer.map(|(t, _)| t));
}

/// A [`Sleep`] until `deadline` on the timer of the runtime whose worker this thread
/// is, else on the process-wide one: a caller's timeouts run on its own runtime's
/// timer, never on a server's.
pub(crate) fn sleep_here(deadline: Instant) -> Sleep {
    WORKER_TIMER.with(|t| match &*t.borrow() {
        Some(t) => t.sleep(deadline),
        None => global().sleep(deadline),
    })
}

/// This worker's deferred deadlines (`timer/deferred.rs`), if this thread is a worker.
/// `try_with`: a call's future may be dropped while this thread's locals are torn down
/// (a runtime's last reference let go there).
#[inline]
fn with_deferred<T>(f: impl FnOnce(&DeferredDeadlines) -> T) -> Option<T> {
    WORKER_TIMER
        .try_with(|t| {
            let t = t.borrow();
            Some(f(&t.as_ref()?.lanes[LANE.with(Cell::get).1].deferred))
        })
        .ok()
        .flatten()
}

/// Lists the deadline of call `tag` of the slot at `slot` (its address, never
/// dereferenced), made by process `pid`, on this worker instead of arming a timer: the
/// call arms it later if it still waits ([`flush_deferred`], or the watchdog's look at
/// a held worker). False on a thread that is not a worker, or with the list full.
#[inline]
pub(crate) fn defer(pid: RawPid, slot: usize, tag: u64) -> bool {
    with_deferred(|d| d.push(pid, slot, tag)).unwrap_or(false)
}

/// Takes the deadline of call `tag` of the slot at `slot` out of this worker's list,
/// if it is among the last few: the call ended before its flush. It is nearly always
/// the last one deferred; one not found (deferred on another worker, or behind many
/// calls started at once) costs its process one needless wake-up at a flush.
#[inline]
pub(crate) fn undefer(slot: usize, tag: u64) {
    with_deferred(|d| d.remove(slot, tag));
}

/// Wakes, through `wake`, the callers whose deadlines have lived through one flush
/// already (`all`: every one, before the worker parks and no flush may come for a long
/// time), so that each call still waiting arms its own timer at its next poll
/// (`server/reply.rs`); the others are marked for the next flush. Whether it woke any.
pub(crate) fn flush_deferred(all: bool, wake: impl FnMut(RawPid)) -> bool {
    with_deferred(|d| d.flush(all, wake)).unwrap_or(false)
}

fn run(timer: Weak<Timer>) {
    crate::unwind::abort_on_unwind("the timer thread", || run_timer(timer));
}

fn run_timer(timer: Weak<Timer>) {
    TIMER_THREAD.with(|t| t.set(timer.as_ptr()));
    let mut due = Vec::new();
    loop {
        let Some(t) = timer.upgrade() else { return };
        if t.alarm.is_stopped() {
            return;
        }
        let now = t.now_ms();
        for lane in t.lanes.iter() {
            lane.shard.advance(now, &mut due);
        }
        if due.is_empty() {
            let at = t.earliest();
            if at <= now {
                continue;
            }
            // Until the millisecond `at` begins, not `at - now` whole milliseconds:
            // `now` is rounded down, and that wait overslept by up to a millisecond (a
            // user's trial measured timers 1.15 to 1.33 ms late at the median on an idle
            // runtime).
            let wait = (at != NEVER).then(|| {
                (t.start + Duration::from_millis(at)).saturating_duration_since(Instant::now())
            });
            if !t.alarm.sleep(at, wait, || t.earliest()) {
                return;
            }
            continue;
        }
        drop(t);
        fire(due.drain(..));
    }
}

/// Runs the actions of timers that are due, in order.
fn fire(due: impl Iterator<Item = Action>) {
    for a in due {
        match a {
            Action::Wake(w) => w.wake(),
            Action::Run(f) => {
                crate::unwind::catch_silently(f);
            }
        }
    }
}

/// Runs `future` for at most `duration` (the `Timeout` argument of `gen_tcp:recv/3`,
/// `accept/2`, `connect/4`, and of any other wait; tokio's `time::timeout`): its output,
/// or [`Elapsed`] once the deadline, counted from this call, has passed first; then
/// `future` is dropped. A free function, so that it can wrap a future that borrows the
/// process's context. Timed by the runtime of the worker that first polls it while it
/// waits (off any runtime, by the process-wide fallback timer, as a call's timeout),
/// and, as [`Sleep`], for the task that polled it then: await it in the process that
/// made it.
///
/// A socket read, accept or connect cut short this way loses nothing: the bytes or the
/// connection not taken are there for the next call (a connect's socket is closed). A
/// `write_all` cut short may have written part of its buffer, as `gen_tcp:send` with a
/// `send_timeout`.
///
/// ```
/// use std::time::Duration;
/// use otter::{Context, Elapsed, Runtime, timeout};
/// let rt = Runtime::new();
/// let r = rt.block_on(|mut cx: Context<u8>| async move {
///     let quick = timeout(Duration::from_secs(5), async { 7 }).await;
///     let never = timeout(Duration::from_millis(10), cx.recv()).await;
///     (quick, never)
/// });
/// assert_eq!(r.unwrap(), (Ok(7), Err(Elapsed)));
/// ```
pub fn timeout<F: Future>(
    duration: Duration,
    future: F,
) -> impl Future<Output = Result<F::Output, Elapsed>> {
    let deadline = deadline_after(duration);
    async move {
        let mut future = std::pin::pin!(future);
        let mut sleep: Option<Sleep> = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = future.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            let sleep = sleep.get_or_insert_with(|| sleep_here(deadline));
            if sleep.poll_elapsed(cx) {
                return Poll::Ready(Err(Elapsed));
            }
            Poll::Pending
        })
        .await
    }
}

/// What [`timeout`] returns when the deadline came first. Turns into an `io::Error` of kind `TimedOut`, so that a socket operation under
/// a timeout reads as `gen_tcp`'s `{error, timeout}`:
/// `otter::timeout(d, stream.read(&mut buf)).await??`.
///
/// ```
/// assert_eq!(std::io::Error::from(otter::Elapsed).kind(), std::io::ErrorKind::TimedOut);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// A future that completes at a deadline: [`Context::sleep`](crate::Context::sleep).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = otter::Runtime::new();
/// let waited = rt.block_on(|cx: otter::Context<()>| async move {
///     let t0 = Instant::now();
///     cx.sleep(Duration::from_millis(5)).await;
///     t0.elapsed()
/// });
/// assert!(waited.unwrap() >= Duration::from_millis(5));
/// ```
#[derive(Debug)]
pub struct Sleep {
    lane: Arc<Lane>,
    deadline: Instant,
    key: Option<TimerKey>,
}

impl Sleep {
    fn new(lane: Arc<Lane>, deadline: Instant) -> Sleep {
        Sleep {
            lane,
            deadline,
            key: None,
        }
    }

    /// Whether the deadline has passed; registers `cx`'s waker otherwise (once).
    pub(crate) fn poll_elapsed(&mut self, cx: &mut TaskContext<'_>) -> bool {
        if crate::time::now() >= self.deadline {
            return true;
        }
        if self.key.is_none() {
            let key = self
                .lane
                .insert(self.deadline, Action::Wake(cx.waker().clone()));
            self.key = Some(key);
        }
        false
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.get_mut().poll_elapsed(cx) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.lane.shard.cancel(k.key);
        }
    }
}
