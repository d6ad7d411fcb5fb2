//! The worker's per-thread state (tokio's `runtime/context.rs`).
//!
//! | state | set by | read by |
//! |---|---|---|
//! | the runtime and index of the worker this thread is | `worker::run` | `Shared::schedule` (where a wake-up goes), the stream cache (rule 1), `budget_spent` |
//! | the worker's runtime, counted | `worker::run` | sockets opened by its processes (`net`) |
//! | reply slots kept for the next call to the same server, each watching it | `server/reply.rs` | `server/reply.rs`; emptied by `leave_worker` |
//!
//! The state a send or a receive reads is `const`-initialised and needs no destructor,
//! so each access is one thread-local load, with no lazy initialisation. Per-thread
//! state that is not the worker's stays with the module whose rules it follows: the
//! stream cache (`process/send.rs`), the reason of the exit being run
//! (`process/harness.rs`), the turn's budget and send count (`coop.rs`), the process
//! table's cache of free indices (`process/table.rs`, built for the loom models too),
//! and the worker's timer and the timer thread's own marker (`timer.rs`); the worker
//! sets the last three on entering.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crate::pid::RawPid;
use crate::scheduler::Shared;
use crate::timer::Timer;
use crate::timer::deferred::DeferredDeadlines;
use crate::tuning::CALL_SLOTS_PER_WORKER;

thread_local! {
    /// The runtime and index of the worker this thread is, if it is one. The pointer is
    /// only compared, or dereferenced while `worker::run` holds the runtime.
    static WORKER: Cell<(*const Shared, usize)> = const { Cell::new((std::ptr::null(), 0)) };
    /// The runtime of this worker, counted, for what needs more than the pointer in
    /// `WORKER` (the reactor, created on first use).
    static WORKER_SHARED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    /// Reply slots of ended calls, each still watching its server, oldest first
    /// (`server/reply.rs`): at most `CALL_SLOTS_PER_WORKER`.
    static CALL_SLOTS: RefCell<Vec<PooledSlot>> = const { RefCell::new(Vec::new()) };
}

// ===== the worker =====

/// Makes this thread worker `index` of `shared`, with its runtime's timer; until
/// [`leave_worker`]. The caller holds `shared` until then.
pub(crate) fn enter_worker(shared: &Arc<Shared>, index: usize, timer: Arc<Timer>) {
    WORKER.with(|c| c.set((Arc::as_ptr(shared), index)));
    crate::timer::set_current(Some((timer, index)));
    WORKER_SHARED.with(|s| *s.borrow_mut() = Some(shared.clone()));
    crate::coop::enter();
}

/// Undoes [`enter_worker`], before the worker lets go of its runtime.
pub(crate) fn leave_worker() {
    WORKER.with(|c| c.set((std::ptr::null(), 0)));
    crate::coop::leave();
    crate::timer::set_current(None);
    WORKER_SHARED.with(|s| s.borrow_mut().take());
    let pooled = CALL_SLOTS.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for p in pooled {
        p.unwatch();
    }
}

/// The runtime whose worker this thread is, counted (`Context::handle`).
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    WORKER_SHARED.with(|s| s.borrow().clone())
}

/// The blocking pool of the runtime whose worker this thread is (`blocking.rs`).
pub(crate) fn current_blocking_pool() -> Option<Arc<crate::blocking::Pool>> {
    WORKER_SHARED.with(|s| s.borrow().as_ref().map(|shared| shared.blocking.clone()))
}

/// The reactor of the runtime whose worker this thread is, created on first use
/// (`io.rs`).
pub(crate) fn current_reactor() -> std::io::Result<Arc<crate::io::reactor::Reactor>> {
    WORKER_SHARED.with(|s| match s.borrow().as_ref() {
        Some(shared) => shared.reactor(),
        None => Err(std::io::Error::other(
            "otter: sockets are opened by processes running on an otter runtime's workers",
        )),
    })
}

/// This thread's worker index if it is a worker of `shared`. A raw pointer, so that a
/// sender can ask about a process's runtime without dereferencing it.
#[inline]
pub(crate) fn current_index(shared: *const Shared) -> Option<usize> {
    let (rt, index) = WORKER.with(Cell::get);
    std::ptr::eq(rt, shared).then_some(index)
}

/// The runtime this thread is a worker of; null on any other thread. While it is not
/// null it may be dereferenced: `worker::run` sets it from the `Arc<Shared>` it holds,
/// and clears it before it lets go of that `Arc`.
#[inline]
pub(crate) fn current_runtime() -> *const Shared {
    WORKER.with(Cell::get).0
}

/// Whether this thread is a worker of any otter runtime.
pub(crate) fn is_worker_thread() -> bool {
    !current_runtime().is_null()
}

// ===== deferred deadlines =====

/// This worker's deferred deadlines (`timer/deferred.rs`), if this thread is a
/// worker. `try_with`: a call's future may be dropped while this thread's locals are
/// torn down (a runtime's last reference let go there).
#[inline]
fn with_deferred<T>(f: impl FnOnce(&DeferredDeadlines) -> T) -> Option<T> {
    WORKER_SHARED
        .try_with(|s| {
            let s = s.borrow();
            let shared = s.as_ref()?;
            let index = WORKER.with(Cell::get).1;
            Some(f(&shared.workers[index].deferred))
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

/// Wakes the callers whose deadlines have lived through one flush already (`all`:
/// every one, before the worker parks and no flush may come for a long time), so that
/// each call still waiting arms its own timer at its next poll (`server/reply.rs`); the
/// others are marked for the next flush. Whether it woke any. What it wakes lands in
/// this worker's queues.
pub(crate) fn flush_deferred(all: bool) -> bool {
    with_deferred(|d| d.flush(all, |pid| crate::process::waker::waker(pid).wake())).unwrap_or(false)
}

// ===== reply slots kept for the next call =====

/// A reply slot of an ended call (type-erased `server/reply.rs` slot), whose watcher
/// `id` is still in `server`'s bonds.
pub(crate) struct PooledSlot {
    pub(crate) server: RawPid,
    pub(crate) id: u64,
    pub(crate) slot: Arc<dyn Any + Send + Sync>,
}

impl PooledSlot {
    /// Takes the slot's watcher off its server (which may be gone: then nothing).
    fn unwatch(self) {
        crate::process::bonds::remove_watcher(self.server, self.id);
    }
}

/// Takes this worker's most recently kept slot of type `T` watching `server`; `None`
/// on a thread that is not a worker, or if there is none.
#[inline]
pub(crate) fn take_call_slot<T: Any + Send + Sync>(server: RawPid) -> Option<(Arc<T>, u64)> {
    if current_runtime().is_null() {
        return None;
    }
    let p = CALL_SLOTS.with(|l| {
        let mut l = l.borrow_mut();
        let i = l
            .iter()
            .rposition(|p| p.server == server && p.slot.is::<T>())?;
        Some(l.remove(i))
    })?;
    let slot = Arc::downcast::<T>(p.slot).ok()?;
    Some((slot, p.id))
}

/// Keeps `p` for the next call on this worker; a full list lets go of its oldest slot.
/// On a thread that is not a worker, lets go of `p`. Letting go takes the watcher off
/// its server.
pub(crate) fn keep_call_slot(p: PooledSlot) {
    if current_runtime().is_null() {
        p.unwatch();
        return;
    }
    let evicted = CALL_SLOTS.with(|l| {
        let mut l = l.borrow_mut();
        let evicted = (l.len() >= CALL_SLOTS_PER_WORKER).then(|| l.remove(0));
        l.push(p);
        evicted
    });
    if let Some(old) = evicted {
        old.unwatch();
    }
}

// The running turn's budget and send count are `coop.rs`'s (a leaf); the units of a
// turn renewed for a sender, `tuning.rs`'s `SENDER_TURN_RENEWED`.
