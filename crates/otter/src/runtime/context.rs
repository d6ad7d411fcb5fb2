//! The worker's per-thread state (tokio's `runtime/context.rs`).
//!
//! | state | set by | read by |
//! |---|---|---|
//! | the runtime and index of the worker this thread is | `worker::run` | `Shared::schedule` (where a wake-up goes), the stream cache (rule 1), `budget_spent` |
//! | the worker's runtime, counted | `worker::run` | sockets opened by its processes (`net`: the reactor, created here with the first), blocking jobs (`blocking.rs`), `Context::handle` |
//!
//! The state a send or a receive reads is `const`-initialised and needs no destructor,
//! so each access is one thread-local load, with no lazy initialisation. Per-thread
//! state that is not the worker's stays with the module whose rules it follows: the
//! stream cache (`process/send.rs`), the reason of the exit being run
//! (`process/harness.rs`), the turn's budget and send count (`coop.rs`), the process
//! table's cache of free indices (`process/table.rs`, built for the loom models too),
//! the worker's timer lane, with its deferred deadlines, and the timer thread's own
//! marker (`timer.rs`), and the reply slots kept for the next call
//! (`server/reply/kept.rs`). The worker sets the budget's and the timer's on entering,
//! and lets go of the kept slots on leaving.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crate::scheduler::Shared;
use crate::timer::Timer;

thread_local! {
    /// The runtime and index of the worker this thread is, if it is one. The pointer is
    /// only compared, or dereferenced while `worker::run` holds the runtime.
    static WORKER: Cell<(*const Shared, usize)> = const { Cell::new((std::ptr::null(), 0)) };
    /// The runtime of this worker, counted, for what needs more than the pointer in
    /// `WORKER` (the reactor, created on first use).
    static WORKER_SHARED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
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
    // The kept slots' watchers are in this runtime's bonds: let go while it is held.
    crate::server::reply::kept::release();
    WORKER_SHARED.with(|s| s.borrow_mut().take());
}

/// The runtime whose worker this thread is, counted (`Context::handle`).
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    WORKER_SHARED.with(|s| s.borrow().clone())
}

/// The blocking pool of the runtime whose worker this thread is (`blocking.rs`).
pub(crate) fn current_blocking_pool() -> Option<Arc<crate::blocking::Pool>> {
    WORKER_SHARED.with(|s| {
        s.borrow()
            .as_ref()
            .map(|shared| shared.services.blocking.clone())
    })
}

/// The reactor of the runtime whose worker this thread is, created on first use
/// (`io.rs`).
pub(crate) fn current_reactor() -> std::io::Result<Arc<crate::io::reactor::Reactor>> {
    WORKER_SHARED.with(|s| match s.borrow().as_ref() {
        Some(shared) => reactor(shared),
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
#[inline]
pub(crate) fn is_worker_thread() -> bool {
    !current_runtime().is_null()
}

// The running turn's budget and send count are `coop.rs`'s (a leaf); the units of a
// turn renewed for a sender, `tuning.rs`'s `SENDER_TURN_RENEWED`.

/// `shared`'s reactor, created now if this is the runtime's first socket.
fn reactor(shared: &Shared) -> std::io::Result<Arc<crate::io::reactor::Reactor>> {
    if shared.services.simulated.is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "otter: a Simulation's runtime has no reactor: its sockets are its network's",
        ));
    }
    if let Some(r) = shared.io.get() {
        return Ok(r.clone());
    }
    let r =
        crate::io::reactor::Reactor::new(crate::tuning::IO_EVENTS, crate::tuning::IO_FEW_EVENTS)?;
    // Two first sockets at once: one reactor wins, the other is dropped unused.
    let _ = shared.io.set(Arc::new(r));
    Ok(shared.io.get().expect("set above").clone())
}
