//! A worker's spawn stack: the processes it spawned that found its LIFO slot taken.
//!
//! # Why a stack
//!
//! A process that spawns children and waits for their replies (a fork-join tree, a
//! parallel map) is walked in the order its new processes are taken. Taken first in,
//! first out, as the local queue takes them, the walk is breadth-first: every process of
//! a level is spawned, and alive, waiting for its children, before any of the next level
//! replies; fib(27) as processes kept most of its 392,835 processes alive at once (87
//! MB, five times slower: docs/design/0034). Taken newest first, the walk is depth-first:
//! a subtree is finished, and its processes gone, before its older sibling starts, and a
//! path's worth of processes is alive at once. Work-stealing runtimes built for such
//! trees (Cilk, rayon, Go's `runnext` for the newest goroutine) run the newest spawn
//! first for the same reason, and let idle workers steal the oldest, the largest
//! subtree, from the other end.
//!
//! # Rules
//!
//! 1. Only the owner pushes, and only processes spawned on it while its LIFO slot was
//!    occupied (`Shared::schedule_spawned`); a push wakes an idle worker as a push onto
//!    the local queue does (`park.rs`'s protocol: the stack's `len` is one of the queues
//!    its last look reads).
//! 2. The owner takes the newest ([`SpawnStack::pop_newest`]) once its LIFO slot and
//!    local queue are empty (`worker.rs`, "Which process runs next"): a process woken by
//!    a message still waits for no spawned one but the one running, as under 0019's rule.
//! 3. Every other [`GLOBAL_INTERVAL`] ticks the owner takes the oldest instead, so that a
//!    process spawned under a load that never empties the local queue, or below a
//!    stream of newer spawns, waits a bounded time.
//! 4. Thieves (searching workers, spares, a worker whose own queues are empty) take the
//!    oldest half ([`SpawnStack::steal_into`]): they run the oldest, a fork-join's
//!    largest unstarted subtree, and keep the rest on their own stack. The watchdog
//!    leaves a held worker's stack in place and wakes a worker to steal from it.
//!
//! A mutex-guarded deque: a push and a pop are an uncontended lock each, about what a
//! process's spawn already costs in allocation; the owner is the only frequent user.
//!
//! [`GLOBAL_INTERVAL`]: crate::scheduler::tuning::GLOBAL_INTERVAL

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::process::harness::Task;

/// One worker's spawn stack. See the module docs.
#[derive(Debug, Default)]
pub(crate) struct SpawnStack {
    tasks: Mutex<VecDeque<Task>>,
    /// `tasks.len()`, stored under the lock after each change: what lookers without the
    /// lock read (`Shared::has_work`, the empty checks before taking the lock).
    len: AtomicUsize,
}

impl SpawnStack {
    /// Pushes `task` as the newest (owner only).
    pub(crate) fn push(&self, task: Task) {
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        q.push_back(task);
        self.len.store(q.len(), Ordering::Release);
    }

    /// Takes the newest (owner only).
    #[inline]
    pub(crate) fn pop_newest(&self) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let t = q.pop_back();
        self.len.store(q.len(), Ordering::Release);
        t
    }

    /// Takes the oldest (the owner's bounded-wait turn, thieves, the watchdog).
    #[inline]
    pub(crate) fn pop_oldest(&self) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let t = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        t
    }

    /// Takes the oldest half (rounded up) for a thief whose own stack is `dst`: returns
    /// the oldest, to run, and pushes the others onto `dst` in their order, so that the
    /// thief too runs the newest of them first. One lock at a time: two workers stealing
    /// from each other cannot deadlock.
    pub(crate) fn steal_into(&self, dst: &SpawnStack) -> Option<Task> {
        if self.is_empty() {
            return None;
        }
        let mut taken = {
            let mut q = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            let n = q.len().div_ceil(2);
            let taken: VecDeque<Task> = q.drain(..n).collect();
            self.len.store(q.len(), Ordering::Release);
            taken
        };
        let first = taken.pop_front();
        if !taken.is_empty() {
            let mut d = dst.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            d.extend(taken);
            dst.len.store(d.len(), Ordering::Release);
        }
        first
    }

    /// Whether it holds nothing (a snapshot).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }
}
