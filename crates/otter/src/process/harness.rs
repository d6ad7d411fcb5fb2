//! Running a process: a poll, and the exit sequence when it ends (tokio's `harness`).
//!
//! A [`Task`] is a process in a run queue. A worker runs it ([`Task::run`]): moves its
//! state to running, applies a pending exit signal instead of polling, polls the future
//! under `catch_unwind` with the pid as its waker, and on `Ready` runs the exit. The
//! runtime's shutdown ends the processes that never finished ([`shutdown_processes`]).
//!
//! # Safety
//!
//! Every `unsafe` block rests on the rules of `process/cell.rs`, but one, which rests
//! on the next section's.
//!
//! # The reason of the exit being run
//!
//! A future that reports its own end (the root of `block_on`) learns, when it is
//! dropped at its process's exit, the reason of that exit
//! ([`exit_reason_of_dropping`]). [`Task::exit`] records the *address* of its `reason`
//! in a thread-local (`EXIT_REASON`) just before it drops the future, and a
//! guard clears it just after, by return or by unwind; `reason` is neither moved nor
//! mutated in between, and only shared references to it exist. So a non-null address
//! read on this thread points to a live reason. Recording the address, not a moved
//! copy, keeps the reason where the poll wrote it: a moved copy was a wide load of
//! narrowly stored bytes, whose store-forwarding stall cost a spawn and exit a fifth
//! of its time (docs/design/0041, 0046).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;
use std::task::{Context as TaskContext, Poll};

use crate::exit::ExitReason;
use crate::process::bonds;
use crate::process::cell::{Header, release_slot};
use crate::process::state::TransitionToIdle;
use crate::process::table;
use crate::process::waker::waker;
use crate::scheduler::Shared;

/// A process in a run queue. Not a reference: a queued process is alive (it exits
/// only while running), and the table's `ALIVE` count keeps it allocated.
pub(crate) struct Task(NonNull<Header>);

// SAFETY: a task is a pointer to a cell whose future and messages are `Send` (bounds of
// `spawn`); the state protocol hands the future to one worker at a time.
unsafe impl Send for Task {}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.header().fmt(f)
    }
}

thread_local! {
    /// The address of the reason of the exit whose future this thread drops now (module
    /// docs, "The reason of the exit being run"); null elsewhere.
    static EXIT_REASON: Cell<*const ExitReason> = const { Cell::new(ptr::null()) };
}

fn set_exit_reason(reason: *const ExitReason) {
    EXIT_REASON.with(|r| r.set(reason));
}

fn exit_reason() -> *const ExitReason {
    EXIT_REASON.with(Cell::get)
}

/// Clears the recorded address of the exit's reason when dropped (module docs, "The
/// reason of the exit being run").
struct Dropping;

impl Drop for Dropping {
    fn drop(&mut self) {
        set_exit_reason(ptr::null());
    }
}

/// While a process's future is dropped at its exit, the reason it exits with; `None`
/// elsewhere (and during shutdown). Lets a future that reports its own end (the root
/// of `block_on`) report the reason of an exit signal.
pub(crate) fn exit_reason_of_dropping() -> Option<ExitReason> {
    let reason = exit_reason();
    // SAFETY: non-null only between `Task::exit`'s record and its guard's clear on this
    // thread, while the reason it points to lives, unmoved, in that frame (module docs).
    unsafe { reason.as_ref() }.cloned()
}

/// What the worker does after running a task.
#[must_use]
#[derive(Debug)]
pub(crate) enum RunOutcome {
    /// It waits for a wake-up.
    Idle,
    /// It was woken while running or yielded: queue it again.
    Reschedule(Task),
    /// It exited.
    Exited,
}

impl Task {
    /// The task of the process `cell`.
    ///
    /// # Safety
    ///
    /// The process is alive and the caller moved its state to scheduled (it queues it
    /// once): a queued process is alive until it runs.
    #[inline]
    pub(crate) unsafe fn new(cell: NonNull<Header>) -> Task {
        Task(cell)
    }

    pub(crate) fn into_raw(self) -> *mut Header {
        self.0.as_ptr()
    }

    /// # Safety
    ///
    /// `ptr` came from [`Task::into_raw`] and is consumed once.
    pub(crate) unsafe fn from_raw(ptr: *mut Header) -> Task {
        // SAFETY: caller's contract: a non-null pointer from `into_raw`.
        Task(unsafe { NonNull::new_unchecked(ptr) })
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: a queued process is alive and allocated (see `Task`'s docs).
        unsafe { self.0.as_ref() }
    }

    /// Polls the process once and, if it finished, runs its exit.
    pub(crate) fn run(self) -> RunOutcome {
        let h = self.header();
        h.state.transition_to_running();
        // An exit signal ends the process before its next poll (`signal.rs`). The flag
        // was stored before the RMW on `state` that scheduled us, which our RMW above
        // reads (or a later one): it is visible here.
        if h.signalled.load(Ordering::Acquire)
            && let Some(reason) = bonds::pending_exit(h)
        {
            self.exit(&reason);
            return RunOutcome::Exited;
        }
        // Dropping this waker would do nothing (it holds no reference: `waker.rs`)
        // but through an indirect call, on every poll: it is not dropped.
        // Measured: docs/design/0005-ring-hop-cost.md.
        let waker = ManuallyDrop::new(waker(h.pid));
        let mut cx = TaskContext::from_waker(&waker);
        // SAFETY: we set `RUNNING`, so the stage is ours; the cell is live (`Task`).
        let mut poll = ManuallyDrop::new(unsafe { (h.vtable.poll)(self.0, &mut cx) });
        // The reason is read where the poll wrote it: moved out, it was copied with a
        // load wider than the poll's stores, a store-forwarding stall on every exit
        // (docs/design/0046). A `Pending` owns nothing, so only `Ready` is dropped.
        match &*poll {
            Poll::Pending => match h.state.transition_to_idle() {
                TransitionToIdle::Idle => RunOutcome::Idle,
                TransitionToIdle::Reschedule => RunOutcome::Reschedule(self),
            },
            Poll::Ready(reason) => {
                self.exit(reason);
                // SAFETY: dropped once, and `poll` is not used after.
                unsafe { ManuallyDrop::drop(&mut poll) };
                RunOutcome::Exited
            }
        }
    }

    /// The exit sequence, in this order:
    /// 1. mark the process `exiting`: no new name, monitor or link attaches to it, and
    ///    `Pid::is_alive` is false from here on (so for whoever sees a signal of step 3);
    /// 2. release its registered name;
    /// 3. send the exit signal to every linked process (outside our bonds lock: the
    ///    receiver's lock is taken, and no thread ever holds two bonds locks), then the
    ///    `Down` of every monitor (under our lock: `monitor.rs`); so a `Down` seen means
    ///    the link signals have been applied;
    /// 4. retire the slot: the pid stops resolving, so no new message or wake-up can
    ///    reach the process (we keep a count for ourselves); `Pid::has_exited` is true
    ///    from here on;
    /// 5. mark the state `DONE`, so in-flight wake-ups do nothing;
    /// 6. drop the future (its locals, its `Context`: the owner reference);
    /// 7. release our count; the last reference frees the cell and its mailbox.
    fn exit(self, reason: &ExitReason) {
        let h = self.header();
        let slot = table::slot(h.pid.index).expect("live process has a slot");
        let closed = h.gate.close();
        crate::introspect::count_exit(reason);
        if closed.registered {
            // SAFETY: the process is not done yet (we are running it), so its runtime
            // is alive (module rules).
            let rt = unsafe { &*h.rt };
            rt.services.registry.remove_pid(h.pid);
        }
        if closed.has_bonds {
            bonds::notify_exit(h, reason);
        }
        slot.word.retire();
        h.state.transition_to_done();
        let drop_future = h.vtable.drop_future;
        // Module docs, "The reason of the exit being run".
        set_exit_reason(reason);
        let dropping = Dropping;
        // SAFETY: we were the running worker and the process is now done: nobody else
        // polls or drops the future.
        unsafe { drop_future(self.0) };
        drop(dropping);
        release_slot(slot, self.0);
    }

    /// Shutdown's end for a process that never finished: as [`Task::exit`], but the
    /// caller (the runtime's drop, with every worker joined) has retired the slot and
    /// waited for in-flight lookups.
    fn discard(cell: NonNull<Header>, slot: &'static table::Slot) {
        // SAFETY: the caller holds the retire count, so the cell is allocated.
        let h = unsafe { cell.as_ref() };
        // Watchers and links on other runtimes (or outside any) learn of the end; the
        // ones on this runtime are retired too, and their notifications do nothing.
        if h.gate.close().has_bonds {
            bonds::notify_exit(h, &ExitReason::Killed);
        }
        h.state.transition_to_done();
        let drop_future = h.vtable.drop_future;
        // SAFETY: no worker runs (they are joined) and the state is done: no one else
        // polls or drops this future.
        unsafe { drop_future(cell) };
        release_slot(slot, cell);
    }
}

/// Ends every process of runtime `rt` that is still alive. Called by the runtime's
/// shutdown after every worker has been joined.
///
/// 1. Find the runtime's live processes in the table and retire each one, so no new
///    message or wake-up can reach it.
/// 2. Wait until in-flight lookups (senders on other threads) have released their
///    counts: after that nobody schedules these processes, so `rt` is no longer used.
/// 3. Drop each future and release the process.
pub(crate) fn shutdown_processes(rt: &Shared) {
    let mut mine = Vec::new();
    for index in 0..table::high_water() {
        let Some(slot) = table::slot(index) else {
            continue;
        };
        let generation = slot.word.generation();
        if !slot.word.acquire(generation) {
            continue;
        }
        let cell =
            NonNull::new(slot.cell.load(Ordering::Acquire).cast::<Header>()).expect("published");
        // SAFETY: our count keeps the cell allocated.
        let belongs = ptr::eq(unsafe { cell.as_ref() }.rt, rt);
        if belongs {
            slot.word.retire();
            mine.push((slot, cell));
        }
        release_slot(slot, cell);
    }
    for (slot, _) in &mine {
        // Only our retire count and senders already inside `send` remain.
        while slot.word.count() > 1 {
            std::thread::yield_now();
        }
    }
    for (slot, cell) in mine {
        Task::discard(cell, slot);
    }
}
