//! A worker's spawn stack: a turn's spawn that found the LIFO slot taken, newest first.
//!
//! # Why a stack
//!
//! A process that spawns children and waits for their replies (a fork-join tree, a
//! parallel map) is walked in the order its new processes are taken. First in, first
//! out, the walk is breadth-first: a whole level is alive, waiting for its children,
//! before any of the next level replies. Newest first, it is depth-first: a subtree is
//! done, its processes gone, before its older sibling starts, and a path's worth of
//! processes is alive at once (`forkjoin` in the bench crate; docs/design/0034). Cilk,
//! rayon and Go's `runnext` run the newest spawn first for the same reason, and let
//! idle workers steal the oldest, the largest subtree, from the other end.
//!
//! # Rules
//!
//! 1. **What goes on it.** A spawn takes the worker's LIFO slot if it is empty
//!    (`Shared::schedule_spawned`), so that a chain of spawns stays on one worker
//!    (docs/design/0022); the turn's first spawn that finds it taken goes on the stack,
//!    stamped with the worker's turn count (`Remote::ticks`); any further one of the
//!    same turn goes to the back of the local queue, in spawn order. A binary fork-join
//!    is two spawns a turn, so its whole walk goes through the slot and the stack; a
//!    loop that spawns many (a supervisor's children) queues them as the BEAM does, and
//!    a woken process queued behind them waits once per process ahead of it (0019).
//!    Only the owner pushes, and a push wakes an idle worker as a push onto the local
//!    queue does (`park.rs`).
//! 2. **The newest, after the queue.** The owner takes the newest once its LIFO slot
//!    and local queue are empty (step 4 of `worker.rs`, "Which process runs next"), but
//!    for rule 3.
//! 3. **Aging.** A newest that has waited [`SPAWN_WAIT_TICKS`] turns of other processes
//!    moves to the back of the local queue at the owner's next pick: a LIFO chain that
//!    spawns nothing, with an empty local queue, would otherwise keep it waiting for
//!    ever. A fork-join's newest is younger (its walk pushes every turn or two). The
//!    oldest is taken at some injector turns (`Worker::stack_turn`), so that newer
//!    spawns cannot keep it waiting without bound either.
//! 4. **Thieves** take the oldest half ([`SpawnStack::steal_into`]): they run the
//!    oldest and keep the rest on their own stack, stamped with their own turn count.
//!    The watchdog leaves a held worker's stack in place for them: poured into the
//!    first-in, first-out injector, it would turn the walk breadth-first.
//!
//! A mutex-guarded deque: a turn pushes at most once, next to a spawn's allocation, and
//! the owner is the only frequent user.
//!
//! [`SPAWN_WAIT_TICKS`]: crate::tuning::SPAWN_WAIT_TICKS

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::process::harness::Task;

/// One worker's spawn stack. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct SpawnStack {
    /// Each process with its stamp: the owner's tick count when it was pushed (or
    /// stolen onto this stack).
    tasks: Mutex<VecDeque<(Task, u64)>>,
    /// `tasks.len()`, stored under the lock after each change: what lookers without the
    /// lock read (`Shared::has_work`, the empty checks before taking the lock).
    len: AtomicUsize,
    /// The newest's stamp, stored under the lock with `len` (meaningless when empty).
    newest_stamp: AtomicU64,
}

impl SpawnStack {
    /// Stores `len` and the newest's stamp after a change to `q`, under its lock.
    fn publish(&self, q: &VecDeque<(Task, u64)>) {
        if let Some((_, stamp)) = q.back() {
            self.newest_stamp.store(*stamp, Ordering::Relaxed);
        }
        self.len.store(q.len(), Ordering::Release);
    }

    /// Pushes `task` as the newest, stamped with the owner's tick count `stamp` (owner
    /// only).
    pub(crate) fn push(&self, task: Task, stamp: u64) {
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        q.push_back((task, stamp));
        self.publish(&q);
    }

    /// The newest's stamp, if any (owner only: a thief may take it meanwhile).
    #[inline]
    pub(crate) fn newest_stamp(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.newest_stamp.load(Ordering::Relaxed))
    }

    /// Takes the newest (owner only).
    #[inline]
    pub(crate) fn pop_newest(&self) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let t = q.pop_back();
        self.publish(&q);
        t.map(|(t, _)| t)
    }

    /// Takes the oldest (the owner's injector turn, a spare stepping back).
    #[inline]
    pub(crate) fn pop_oldest(&self) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let t = q.pop_front();
        self.publish(&q);
        t.map(|(t, _)| t)
    }

    /// Takes the oldest half (rounded up) for a thief whose own stack is `dst` and whose
    /// tick count is `stamp`: returns the oldest, to run, and pushes the others onto
    /// `dst` in their order. One lock at a time: two workers stealing from each other
    /// cannot deadlock.
    pub(crate) fn steal_into(&self, dst: &SpawnStack, stamp: u64) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut taken = {
            let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            let n = q.len().div_ceil(2);
            let taken: VecDeque<(Task, u64)> = q.drain(..n).collect();
            self.publish(&q);
            taken
        };
        let first = taken.pop_front();
        if !taken.is_empty() {
            let mut d = dst.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            // The thief's stamps: another worker's tick counts mean nothing here.
            d.extend(taken.into_iter().map(|(t, _)| (t, stamp)));
            dst.publish(&d);
        }
        first.map(|(t, _)| t)
    }

    /// Whether it holds nothing (a snapshot).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// Processes on the stack now (a snapshot, for introspection).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}
