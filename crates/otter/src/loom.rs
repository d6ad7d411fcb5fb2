//! The one place atomics and cells of the lock-free modules come from.
//!
//! Under `cfg(loom)` these are loom's instrumented types, so the loom models in
//! `tests/loom_*.rs` explore every interleaving of the real protocol code; otherwise
//! they are `std`'s. Only the protocol modules (`mailbox/queue.rs`, `process/state.rs`,
//! `process/table.rs`'s slot word, `process/gate.rs`, `scheduler/queue.rs`,
//! `scheduler/park.rs`, `scheduler/doze.rs`, `server/reply/outcome.rs`, `mailbox/bound.rs`'s
//! bound word, `timer/shard.rs` and `timer/alarm.rs`) import from here; the rest of
//! the crate uses `std` directly, because loom cannot model `static`s, threads it did
//! not start, or `catch_unwind`.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

#[cfg(loom)]
pub(crate) use ::loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// A spin-loop hint that, under loom, yields to the model so a waiting thread lets the
/// thread it waits for make progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    ::loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// `UnsafeCell` with loom's closure API, so the queue code reads the same under both.
#[cfg(loom)]
pub(crate) use ::loom::cell::UnsafeCell;

/// `UnsafeCell` with loom's closure API, so the queue code reads the same under both.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a mutable raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A full fence right after a read-modify-write by the same thread. On x86-64 outside
/// loom and Miri that RMW was a `lock`-prefixed instruction, already a full barrier, so
/// only the compiler needs holding back (Linux's `smp_mb__after_atomic`, which is
/// `barrier()` on x86); elsewhere, and under loom and Miri, a real `SeqCst` fence. Used
/// by the two halves of the message wake-up protocol (`process/state.rs`): the worker
/// after `State::transition_to_running`, once per poll, and the sender after reserving
/// its slot in `Queue::push`, once per message. The caveat is `full_fence`'s: x86's
/// ordering of locked instructions promises this, the C++ model does not (an RMW on one
/// location is no fence for others), so loom and Miri, which follow the model, check the
/// real fence, not this path.
#[inline(always)]
pub(crate) fn fence_after_rmw() {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    fence(Ordering::SeqCst);
}

/// A full (`SeqCst`) fence. On x86-64 outside loom and Miri it is a locked
/// compare-and-swap on a stack variable instead of `mfence`: both are full barriers on
/// x86, and the locked instruction is several times cheaper on current cores (the same
/// choice, and the same caveat that the C++ model does not promise it, as
/// crossbeam-epoch's `pin`). Used by the exit gate (`process/gate.rs`).
#[inline(always)]
pub(crate) fn full_fence() {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    {
        let local = std::sync::atomic::AtomicUsize::new(0);
        let _ =
            std::hint::black_box(&local).compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst);
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    fence(Ordering::SeqCst);
}
