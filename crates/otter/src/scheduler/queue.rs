//! Run queues: each worker's bounded local queue (one producer, stealing consumers), the
//! global injector, and the LIFO slot.
//!
//! # Local queue protocol
//!
//! A ring of [`LOCAL_CAP`] atomic task pointers with two monotonic 64-bit counters:
//! `tail` (written only by the owner) and `head` (advanced by CAS by the owner's pops
//! and by thieves). Counters never wrap in practice, so a CAS on `head` cannot suffer
//! ABA.
//!
//! 1. **Push** (owner): if `tail - head < LOCAL_CAP`, store the task at `tail % CAP`
//!    (`Relaxed`), then `tail + 1` (`Release`). A full queue hands the task back
//!    (where it goes then: `Shared::push_local`).
//! 2. **Pop** (owner) and **steal** (thief): read `head` and `tail` (`Acquire`), read
//!    the `n` slots from `head`, then CAS `head` from `head` to `head + n`. If the CAS
//!    succeeds, the values read are the tasks at those positions: while `head` still
//!    equalled the value read, the owner could not overwrite them, because it only
//!    writes positions below `head + LOCAL_CAP`, and those positions are below `tail`.
//!    If the CAS fails, the values are discarded and the operation retried.
//! 3. A thief takes half of the victim's queue (rounded up), runs the first (the
//!    oldest) and pushes the rest onto its own queue: one CAS moves many tasks.
//!
//! Slots are `AtomicPtr`, so a racing read of a slot being overwritten is a stale value,
//! not a data race; the CAS in (2) discards it. The one `unsafe` operation is turning a
//! pointer taken out of a slot back into a [`Task`]: each pointer put in is taken out
//! exactly once, by the CAS that moves `head` past it.
//!
//! The LIFO slot is one `AtomicPtr` per worker. Only its owner fills it; the owner, a
//! thief rescuing the task from a stuck worker and the watchdog take it by `swap`, so
//! no two get it.
#![allow(unsafe_code)]
#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

#[cfg(not(loom))]
use std::collections::VecDeque;
#[cfg(not(loom))]
use std::sync::{Mutex, PoisonError};

use crate::loom::{AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
use crate::process::harness::Task;
#[cfg(not(loom))]
use std::sync::atomic::AtomicUsize;

/// What a run queue holds: an owned value that converts to and from a raw pointer
/// ([`Task`]; a `Box` in the loom models).
pub trait Item: Sized {
    /// Gives up ownership as a non-null pointer.
    fn into_raw(self) -> *mut ();
    /// Takes back ownership.
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw` of the same type and is taken back once.
    unsafe fn from_raw(ptr: *mut ()) -> Self;
}

#[cfg(not(loom))]
impl Item for Task {
    fn into_raw(self) -> *mut () {
        Task::into_raw(self).cast()
    }
    unsafe fn from_raw(ptr: *mut ()) -> Self {
        // SAFETY: forwarded caller's contract.
        unsafe { Task::from_raw(ptr.cast()) }
    }
}

pub(crate) use crate::tuning::LOCAL_CAP;

/// One worker's local run queue. See the module docs.
pub struct Local<T: Item> {
    head: AtomicU64,
    tail: AtomicU64,
    buf: Box<[AtomicPtr<()>]>,
    _items: std::marker::PhantomData<T>,
}

// SAFETY: a `Local` moves owned items between threads (push on the owner, pop or steal
// on any thread), like a channel: `T: Send` is what that needs. All shared state is
// atomic.
unsafe impl<T: Item + Send> Sync for Local<T> {}
// SAFETY: as above.
unsafe impl<T: Item + Send> Send for Local<T> {}

impl<T: Item> std::fmt::Debug for Local<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").field("len", &self.len()).finish()
    }
}

impl<T: Item> Local<T> {
    /// An empty queue.
    pub fn new() -> Local<T> {
        Local {
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            buf: (0..LOCAL_CAP)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            _items: std::marker::PhantomData,
        }
    }

    /// Tasks queued now (a snapshot).
    pub(crate) fn len(&self) -> usize {
        let tail = self.tail.load(Ordering::Acquire);
        let head = self.head.load(Ordering::Acquire);
        tail.saturating_sub(head) as usize
    }

    /// Step (1). Owner only.
    pub fn push(&self, task: T) -> Result<(), T> {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        if tail - head >= LOCAL_CAP as u64 {
            return Err(task);
        }
        self.buf[(tail % LOCAL_CAP as u64) as usize].store(task.into_raw(), Ordering::Relaxed);
        self.tail.store(tail + 1, Ordering::Release);
        Ok(())
    }

    /// Takes up to `max` tasks from the head in one CAS (step 2); `f` receives each.
    fn take(&self, max: usize, mut f: impl FnMut(T)) -> usize {
        let mut grabbed: [*mut (); LOCAL_CAP / 2] = [std::ptr::null_mut(); LOCAL_CAP / 2];
        let max = max.min(LOCAL_CAP / 2);
        loop {
            let head = self.head.load(Ordering::Acquire);
            let tail = self.tail.load(Ordering::Acquire);
            let avail = tail.saturating_sub(head) as usize;
            if avail == 0 {
                return 0;
            }
            let n = avail.min(max);
            for (i, g) in grabbed.iter_mut().enumerate().take(n) {
                *g = self.buf[((head + i as u64) % LOCAL_CAP as u64) as usize]
                    .load(Ordering::Relaxed);
            }
            if self
                .head
                .compare_exchange(head, head + n as u64, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                for &p in &grabbed[..n] {
                    // SAFETY: the successful CAS moved `head` past these positions, so
                    // each pointer is taken out exactly once (module docs, step 2), and
                    // every pointer in a slot came from `Item::into_raw` in `push`.
                    f(unsafe { T::from_raw(p) });
                }
                return n;
            }
        }
    }

    /// Takes the oldest task. Owner only (thieves use [`Local::steal_into`]).
    pub fn pop(&self) -> Option<T> {
        loop {
            let head = self.head.load(Ordering::Acquire);
            let tail = self.tail.load(Ordering::Acquire);
            if head >= tail {
                return None;
            }
            let p = self.buf[(head % LOCAL_CAP as u64) as usize].load(Ordering::Relaxed);
            if self
                .head
                .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                // SAFETY: as in `take`: the CAS hands this position to us alone.
                return Some(unsafe { T::from_raw(p) });
            }
        }
    }

    /// Step (3): moves half of `self`'s tasks into `dst` (the thief's own queue, of which
    /// the caller is the owner) and returns one of them to run now.
    pub fn steal_into(&self, dst: &Local<T>) -> Option<T> {
        let want = self.len().div_ceil(2).min(LOCAL_CAP / 2);
        if want == 0 {
            return None;
        }
        let mut first = None;
        self.take(want, |t| match first {
            None => first = Some(t),
            // A thief steals only with its own queue empty, and takes at most half a
            // queue: this push cannot fail, and a task dropped would be a process lost.
            Some(_) => assert!(dst.push(t).is_ok(), "a thief's queue overflowed"),
        });
        first
    }
}

impl<T: Item> Drop for Local<T> {
    fn drop(&mut self) {
        // For `Task` this drops nothing (a task is not a reference: the processes are
        // ended by the runtime's shutdown through the process table); for boxed items in
        // the models it frees them.
        while self.pop().is_some() {}
    }
}

/// The global queue: spawns and wake-ups from outside the runtime's workers, and
/// overflow. A mutex, as in tokio and Go: it is off the hot path (a worker's own
/// spawns and wake-ups go to its local queue), and `len` lets idle workers skip it.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct Injector {
    queue: Mutex<VecDeque<TaskPtr>>,
    len: AtomicUsize,
}

/// A task parked in the injector. The pointer is a `Task` that was `into_raw`ed.
#[cfg(not(loom))]
#[derive(Debug)]
struct TaskPtr(*mut ());

// SAFETY: a `TaskPtr` is a `Task` in raw form, and `Task` is `Send`.
#[cfg(not(loom))]
unsafe impl Send for TaskPtr {}

#[cfg(not(loom))]
impl Injector {
    pub(crate) fn push(&self, task: Task) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.push_back(TaskPtr(Item::into_raw(task)));
        self.len.store(q.len(), Ordering::Release);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// Tasks queued now (a snapshot, for introspection).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Takes the oldest task and moves up to `batch` more into `dst`.
    pub(crate) fn pop_into(&self, dst: &Local<Task>, batch: usize) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let first = q.pop_front();
        for _ in 0..batch {
            let Some(p) = q.pop_front() else { break };
            // SAFETY: every pointer in the injector came from `Task::into_raw` in
            // `push` and is taken out once, under the lock.
            if let Err(t) = dst.push(unsafe { <Task as Item>::from_raw(p.0) }) {
                q.push_front(TaskPtr(Item::into_raw(t)));
                break;
            }
        }
        self.len.store(q.len(), Ordering::Release);
        // SAFETY: as above.
        first.map(|p| unsafe { <Task as Item>::from_raw(p.0) })
    }
}

/// A worker's LIFO slot: the process most recently woken or spawned by the running
/// process (module docs). Loom model: `tests/loom_run_queue.rs`.
pub struct LifoSlot<T: Item>(AtomicPtr<()>, std::marker::PhantomData<T>);

// SAFETY: the slot moves an owned item from the owner to whichever thread takes it,
// like a channel of one: `T: Send` is what that needs. The state is one atomic.
unsafe impl<T: Item + Send> Sync for LifoSlot<T> {}
// SAFETY: as above.
unsafe impl<T: Item + Send> Send for LifoSlot<T> {}

impl<T: Item> std::fmt::Debug for LifoSlot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifoSlot")
            .field("empty", &self.is_empty())
            .finish()
    }
}

impl<T: Item> LifoSlot<T> {
    /// An empty slot.
    pub fn new() -> LifoSlot<T> {
        LifoSlot(
            AtomicPtr::new(std::ptr::null_mut()),
            std::marker::PhantomData,
        )
    }

    /// Puts `task` in the slot, returning the task it displaces. Owner only.
    #[inline]
    pub fn replace(&self, task: T) -> Option<T> {
        // An empty slot can only be filled by its owner (thieves only take), so a plain
        // store suffices: no read-modify-write on the ring's and ping-pong's hot path.
        if self.0.load(Ordering::Relaxed).is_null() {
            self.0.store(task.into_raw(), Ordering::Release);
            return None;
        }
        let old = self.0.swap(task.into_raw(), Ordering::AcqRel);
        // SAFETY: a non-null value in the slot is an `into_raw` of a `T`, and `swap`
        // hands it to exactly one taker.
        (!old.is_null()).then(|| unsafe { T::from_raw(old) })
    }

    /// Empties the slot. Owner, or a thread rescuing a stuck owner's process.
    pub fn take(&self) -> Option<T> {
        if self.0.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let old = self.0.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: as in `replace`.
        (!old.is_null()).then(|| unsafe { T::from_raw(old) })
    }

    /// Whether the slot is empty (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.0.load(Ordering::Acquire).is_null()
    }
}

impl<T: Item> Drop for LifoSlot<T> {
    fn drop(&mut self) {
        // As for `Local`: nothing for `Task`, the boxed item of a model or test.
        drop(self.take());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A boxed test task, so Miri checks every pointer round trip and that nothing leaks.
    #[derive(Debug, PartialEq)]
    struct B(Box<usize>);

    impl Item for B {
        fn into_raw(self) -> *mut () {
            Box::into_raw(self.0).cast()
        }
        unsafe fn from_raw(ptr: *mut ()) -> Self {
            // SAFETY: `ptr` came from `into_raw` above (the trait's contract).
            B(unsafe { Box::from_raw(ptr.cast()) })
        }
    }

    #[test]
    fn local_is_fifo_and_full_at_capacity() {
        let q: Local<B> = Local::new();
        for i in 0..LOCAL_CAP {
            assert!(q.push(B(Box::new(i))).is_ok());
        }
        let back = q.push(B(Box::new(LOCAL_CAP))).unwrap_err();
        assert_eq!(*back.0, LOCAL_CAP, "a full queue hands the task back");
        for i in 0..LOCAL_CAP {
            assert_eq!(q.pop(), Some(B(Box::new(i))));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn steal_takes_the_older_half_and_leaves_the_rest_in_order() {
        let victim: Local<B> = Local::new();
        for i in 0..10 {
            assert!(victim.push(B(Box::new(i))).is_ok());
        }
        let thief: Local<B> = Local::new();
        let first = victim.steal_into(&thief).expect("work to steal");
        // Half of 10 moved: one to run now, four onto the thief's queue.
        assert_eq!(thief.len() + 1, 5);
        assert_eq!(victim.len(), 5);
        let mut seen = vec![*first.0];
        while let Some(t) = thief.pop() {
            seen.push(*t.0);
        }
        while let Some(t) = victim.pop() {
            seen.push(*t.0);
        }
        assert_eq!(
            seen,
            (0..10).collect::<Vec<_>>(),
            "each task once, in order"
        );
    }

    #[test]
    fn lifo_slot_hands_each_task_out_once() {
        let slot: LifoSlot<B> = LifoSlot::new();
        assert!(slot.is_empty());
        assert_eq!(slot.replace(B(Box::new(1))), None);
        assert_eq!(slot.replace(B(Box::new(2))), Some(B(Box::new(1))));
        assert!(!slot.is_empty());
        assert_eq!(slot.take(), Some(B(Box::new(2))));
        assert_eq!(slot.take(), None);
        assert!(slot.is_empty());
    }
}
