//! The reply slots a worker thread keeps for its next call (rule 3 of `server/reply.rs`):
//! at most `CALL_SLOTS_PER_WORKER`, newest last, each still watching its server. A
//! thread-local of the worker's thread, set up by nothing and emptied by [`release`]
//! when the thread stops being a worker (`runtime/context.rs`, `leave_worker`), while
//! its runtime, whose bonds the watchers are in, is still held. On any other thread
//! nothing is kept.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use crate::pid::RawPid;
use crate::runtime::context::is_worker_thread;
use crate::tuning::CALL_SLOTS_PER_WORKER;

thread_local! {
    /// Reply slots of ended calls, each still watching its server, oldest first.
    static KEPT: RefCell<Vec<KeptSlot>> = const { RefCell::new(Vec::new()) };
}

/// A reply slot of an ended call (type-erased `server/reply.rs` slot), whose watcher
/// `id` is still in `server`'s bonds.
pub(crate) struct KeptSlot {
    pub(crate) server: RawPid,
    pub(crate) id: u64,
    pub(crate) slot: Arc<dyn Any + Send + Sync>,
}

impl KeptSlot {
    /// Takes the slot's watcher off its server (which may be gone: then nothing).
    fn unwatch(self) {
        crate::process::bonds::remove_watcher(self.server, self.id);
    }
}

/// Takes this worker's most recently kept slot of type `T` watching `server`; `None`
/// on a thread that is not a worker, or if there is none.
#[inline]
pub(crate) fn take<T: Any + Send + Sync>(server: RawPid) -> Option<(Arc<T>, u64)> {
    if !is_worker_thread() {
        return None;
    }
    let p = KEPT.with(|l| {
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
pub(crate) fn keep(p: KeptSlot) {
    if !is_worker_thread() {
        p.unwatch();
        return;
    }
    let evicted = KEPT.with(|l| {
        let mut l = l.borrow_mut();
        let evicted = (l.len() >= CALL_SLOTS_PER_WORKER).then(|| l.remove(0));
        l.push(p);
        evicted
    });
    if let Some(old) = evicted {
        old.unwatch();
    }
}

/// Lets go of every slot this thread keeps: it stops being a worker.
pub(crate) fn release() {
    let kept = KEPT.with(|l| std::mem::take(&mut *l.borrow_mut()));
    for p in kept {
        p.unwatch();
    }
}
