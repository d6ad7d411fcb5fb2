//! The process cell: control block, mailbox and future in one allocation, and the
//! counted references that keep it alive.
//!
//! The rest of a process's life is in the files beside this one, each with the same
//! rules: the send path (`send.rs`), the pid as a waker (`waker.rs`), the receiving end
//! (`owner.rs`), and polling and the exit (`harness.rs`). Links, monitors and
//! `trap_exit` are safe code (`process/bonds.rs`) that reaches a cell only through a
//! [`ProcessRef`] and the header's lock-protected `bonds`.
//!
//! # Layout
//!
//! ```text
//!  Cell<F, M> (repr(C), one Box per process; lines as when it starts on one)
//!  +-- line 0 ------------------------------------------------------+
//!  | mailbox tail (tail_index, tail_block, spare)                   |
//!  | Header: state, vtable, rt, pid, refs   <- *const Header, the task pointer
//!  +-- line 1 ------------------------------------------------------+
//!  |         gate, signalled, bound, bonds   (the header ends here) |
//!  | mailbox head (head_index, head_block, tail_seen)               |
//!  | counters: polls, parent, born, kind, restarts (introspection)  |
//!  | stage: Running(F) | Finished   (continues on the next lines)   |
//!  +----------------------------------------------------------------+
//! ```
//!
//! The header lives in the gap the mailbox queue leaves between its producers' and its
//! consumer's fields (`Queue<M, Header>`, `mailbox/queue.rs`). So everything a sender
//! touches in the receiver's cell is in its first 48 bytes: the tail it CASes, the state
//! it wakes and `rt`, which it needs to schedule. That is one cache line when the cell
//! starts on a 64-byte boundary and at most two otherwise. The cell is only 16-byte
//! aligned: `align(64)` would send every spawn down glibc's `posix_memalign` path for
//! applications on the system allocator. The receiver's fields (the head, the
//! `signalled` flag its worker checks before each poll, the start of its future) come
//! after. Layout history and figures: docs/design/0003-cell-layout.md.
//!
//! Everything type-specific goes through the header's `vtable`, so run queues, wakers
//! and the table handle processes as `*const Header`. A sender knows `M` from its
//! `Pid<M>` and reaches the mailbox through the `Prefix<M>` view ([`cell_of`]), whose
//! offsets are those of every `Cell<_, M>` because the struct is `repr(C)` and
//! `Queue<M, Header>`'s layout does not depend on `M`.
//!
//! # Who may touch what
//!
//! * `header.state`: any thread (atomic protocol of `process/state.rs`).
//! * `header.gate`, `header.signalled`, `header.bonds`: any thread holding a reference
//!   (atomics, and a mutex; `process/bonds.rs` has their rules).
//! * `mailbox`: `push` by any thread holding a reference (below); `pop` only through the
//!   one [`Owner`], which the process's [`Context`](crate::Context) holds.
//! * `stage`: only the worker that moved the state to `RUNNING` (poll, and drop at
//!   exit), or the runtime's shutdown once no worker runs.
//! * `counters` (`introspect.rs`): `polls` stored by the worker that set `RUNNING`,
//!   `parent` and `born` written before publication; `kind` stored by the process's
//!   behaviour, `restarts` by the supervisor that started it.
//!   Read by any thread holding a reference, `Relaxed`.
//! * `header.rt`: read by whoever schedules the process. The runtime outlives every
//!   process that is not `DONE`: shutdown marks each process done, after waiting for
//!   in-flight lookups, before it frees the runtime.
//!
//! # Lifetime
//!
//! Two references keep a cell allocated, counted in `header.refs` (initially 2):
//! 1. the *slot reference*: the process table's word (`process/table.rs`) counts the
//!    process while it is alive plus every in-flight sender, and every worker's stream
//!    cache that keeps a count on it until its poll ends (the stream cache's rules,
//!    below `send`); when that count drains after the process retired, the slot
//!    reference is released;
//! 2. the *owner reference*: the [`Owner`] inside the process's `Context`, released when
//!    the `Context` is dropped (normally with the future, at exit).
//!
//! Whoever releases the last one frees the cell: the remaining messages are dropped and
//! the memory returned. Wakers hold no reference at all: a waker is a pid (see
//! [`waker`](super::waker)), and waking a process that has exited finds a retired slot
//! and does nothing.
//!
//! # Safety
//!
//! Every `unsafe` block here and in the sibling files named above rests on the rules
//! above; each names the one it uses. Miri runs this module's unit tests, which spawn,
//! send, exit and shut down processes.
#![allow(unsafe_code)]

use std::future::Future;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};

use crate::exit::{ExitReason, IntoExitReason};
use crate::introspect::{Counters, Status};
use crate::mailbox::queue::{GAP_OFFSET, Queue};
use crate::pid::{Pid, RawPid};
use crate::process::bonds::Bonds;
use crate::process::gate::Gate;
use crate::process::harness::Task;
use crate::process::owner::Owner;
use crate::process::state::{State, TransitionToScheduled};
use crate::process::table::{self, TransitionToReleased};
use crate::scheduler::Shared;
use crate::signal::Exit;
use crate::unwind::{catch_panic, catch_silently, panic_reason};

/// The type-erased part of a process: what run queues and the table point to. It lives
/// in the gap of the process's mailbox, right after the queue's tail (module docs,
/// layout): the fields a sender touches (`state`, `rt`) come first, so that with the
/// tail they are the cell's first 48 bytes; those of links, monitors and exits follow.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    pub(super) vtable: &'static VTable,
    pub(super) rt: *const Shared,
    pub(crate) pid: RawPid,
    refs: AtomicUsize,
    /// `exiting`, `registered`, `has_bonds`: the flags that close the races between
    /// the exit and a name, link or monitor attached meanwhile (`process/gate.rs`).
    pub(crate) gate: Gate,
    /// Set (`Release`) when an exit signal has put a pending reason in `bonds`: the
    /// worker checks it before each poll.
    pub(crate) signalled: AtomicBool,
    /// The bound of a bounded mailbox and its waiting flags (`mailbox/bound.rs`); 0
    /// for an unbounded one, and then never written. It fills the padding before
    /// `bonds`, on the receiver's line: senders read it only when `vtable.bounded`.
    pub(crate) bound: AtomicU32,
    /// Links, monitors, the trap flag and a pending exit; boxed on first use, so a
    /// process that uses none carries one word here.
    pub(crate) bonds: Mutex<Option<Box<Bonds>>>,
}

// The bound word sits in padding: the header keeps the size the layout above counts on.
const _: () = assert!(std::mem::size_of::<Header>() == 64);

/// How an exit signal becomes a message for a process that traps exits: the
/// delivery function of its own message type, and the pid it was made for.
/// [`ProcessRef::deliver_trapped`] calls it only on that pid's cell, so safe code
/// (`process/bonds.rs`) may store and copy it freely.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TrapFn {
    deliver: unsafe fn(NonNull<Header>, Exit),
    pid: RawPid,
}

impl TrapFn {
    /// The trap function of the process `pid`.
    ///
    /// # Safety
    ///
    /// `pid` names a `Cell<_, M>` (its `Owner<M>` asks).
    pub(super) unsafe fn new<M: From<Exit> + Send + 'static>(pid: RawPid) -> TrapFn {
        TrapFn {
            deliver: deliver_exit::<M>,
            pid,
        }
    }
}

/// The trap function of a `Cell<_, M>`.
///
/// # Safety
///
/// `cell` is a live `Cell<_, M>` (see [`TrapFn`]).
unsafe fn deliver_exit<M: From<Exit> + Send + 'static>(cell: NonNull<Header>, exit: Exit) {
    // SAFETY: caller's contract: a live `Cell<_, M>`, whose prefix is `Prefix<M>`.
    let prefix = cell_of::<Prefix<M>>(cell);
    // SAFETY: as above.
    let prefix = unsafe { prefix.as_ref() };
    // User code (`From<Exit>`) runs under the receiver's bonds lock: a panic in it drops
    // this one message and goes no further.
    if let Ok(message) = catch_panic(|| M::from(exit)) {
        prefix.mailbox.push(message);
        schedule(cell);
    }
}

impl std::fmt::Debug for Header {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Header")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

pub(super) struct VTable {
    /// Whether the process's mailbox is bounded (`mailbox/bound.rs`): the one thing a
    /// send that respects the bound reads before it pushes, from the sender's line
    /// (the header's `vtable` field) and a static; the bound itself is in `bound`.
    pub(super) bounded: bool,
    /// Polls the future. Caller: the worker that set `RUNNING`.
    pub(super) poll: unsafe fn(NonNull<Header>, &mut TaskContext<'_>) -> Poll<ExitReason>,
    /// Drops the future in place. Caller: the worker running the exit, or shutdown.
    pub(super) drop_future: unsafe fn(NonNull<Header>),
    /// Drops the mailbox and frees the cell. Caller: whoever released the last reference.
    dealloc: unsafe fn(NonNull<Header>),
    /// Reads the mailbox and the counters for introspection. Caller: anyone holding a
    /// reference.
    inspect: unsafe fn(NonNull<Header>) -> Inspected,
    /// The queue's length, two loads (a muted sender's look, `mailbox/bound.rs`).
    /// Caller: anyone holding a reference.
    queue_len: unsafe fn(NonNull<Header>) -> usize,
    /// The introspection counters. Caller: anyone holding a reference, for as long as
    /// it holds it.
    counters: unsafe fn(NonNull<Header>) -> NonNull<Counters>,
}

enum Stage<F> {
    Running(F),
    Finished,
}

/// A process. The header lives in the mailbox's gap (see the module docs' layout); the
/// introspection counters follow the mailbox, beside the receiver's fields.
#[repr(C, align(16))]
struct Cell<F, M> {
    mailbox: Queue<M, Header>,
    counters: Counters,
    stage: std::cell::UnsafeCell<Stage<F>>,
}

/// The part of every `Cell<_, M>` a sender or the owner needs.
#[repr(C)]
pub(super) struct Prefix<M> {
    pub(super) mailbox: Queue<M, Header>,
    pub(super) counters: Counters,
}

/// What a cell's `inspect` reads, with no type in it.
pub(crate) struct Inspected {
    queue_len: usize,
    received: u64,
    blocks: usize,
    block_bytes: usize,
    cell_bytes: usize,
    polls: u64,
    parent: RawPid,
    born: u64,
    saved: usize,
    saved_bytes: usize,
}

impl<M> Prefix<M> {
    #[inline]
    pub(super) fn header(&self) -> &Header {
        self.mailbox.gap()
    }
}

/// From a process's header (the task pointer) to its cell, as a `Prefix<M>` or a
/// `Cell<F, M>`: the header sits `GAP_OFFSET` bytes into its cell (the mailbox is the
/// cell's first field, and `Queue::with_gap` checks the offset).
///
/// Dereferencing the result is sound only if `header` was derived from the cell's
/// allocation, as every header pointer is (in `spawn`), and not from a `&Header`, whose
/// provenance covers the header alone.
///
/// The null check stays on the send path on purpose (the receiver's side,
/// [`Owner::prefix`], is unchecked): docs/design/0015-unchecked-pointer-steps.md.
#[inline]
pub(super) fn cell_of<T>(header: NonNull<Header>) -> NonNull<T> {
    let cell = header.as_ptr().wrapping_byte_sub(GAP_OFFSET);
    NonNull::new(cell.cast()).expect("a header is never at address 0..GAP_OFFSET")
}

impl<F, M> Cell<F, M>
where
    F: Future + Send + 'static,
    F::Output: IntoExitReason,
    M: Send + 'static,
{
    const VTABLE: VTable = VTable {
        bounded: false,
        poll: Self::poll,
        drop_future: Self::drop_future,
        dealloc: Self::dealloc,
        inspect: Self::inspect,
        queue_len: Self::queue_len,
        counters: Self::counters,
    };

    /// [`Self::VTABLE`] for a process spawned with a bounded mailbox.
    const VTABLE_BOUNDED: VTable = VTable {
        bounded: true,
        ..Self::VTABLE
    };

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>`, kept allocated by the caller's reference.
    unsafe fn counters(ptr: NonNull<Header>) -> NonNull<Counters> {
        let cell = cell_of::<Self>(ptr);
        // SAFETY: caller's contract: a live `Cell<F, M>`; taking a field's address
        // reads nothing.
        NonNull::from(unsafe { &cell.as_ref().counters })
    }

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>`, kept allocated by the caller's reference.
    unsafe fn queue_len(ptr: NonNull<Header>) -> usize {
        // SAFETY: caller's contract: a live `Cell<F, M>`.
        unsafe { cell_of::<Self>(ptr).as_ref() }.mailbox.len()
    }

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>`, kept allocated by the caller's reference.
    unsafe fn inspect(ptr: NonNull<Header>) -> Inspected {
        // SAFETY: caller's contract: a live `Cell<F, M>`.
        let cell = cell_of::<Self>(ptr);
        // SAFETY: as above; the fields read are atomics or written before publication.
        let cell = unsafe { cell.as_ref() };
        let q = cell.mailbox.stats();
        let saved = cell.counters.saved();
        Inspected {
            queue_len: q.len,
            received: q.popped as u64,
            blocks: q.blocks,
            block_bytes: q.block_bytes,
            cell_bytes: std::mem::size_of::<Self>(),
            polls: cell.counters.polls(),
            parent: cell.counters.parent(),
            born: cell.counters.born(),
            saved,
            saved_bytes: if saved == 0 {
                0
            } else {
                std::mem::size_of::<crate::mailbox::saved::Saved<M>>()
                    + saved * std::mem::size_of::<Option<M>>()
            },
        }
    }

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>` and the caller is the worker that set `RUNNING`.
    unsafe fn poll(ptr: NonNull<Header>, cx: &mut TaskContext<'_>) -> Poll<ExitReason> {
        // SAFETY: caller's contract: a live `Cell<F, M>`.
        let cell = cell_of::<Self>(ptr);
        // SAFETY: as above.
        let cell = unsafe { cell.as_ref() };
        cell.counters.count_poll();
        // SAFETY: `stage` is ours while `RUNNING` (module rules).
        let stage = unsafe { &mut *cell.stage.get() };
        let Stage::Running(fut) = stage else {
            return Poll::Ready(ExitReason::Normal);
        };
        // SAFETY: the future lives inside a heap cell that never moves until it is
        // dropped in place by `drop_future`: it is pinned.
        let fut = unsafe { Pin::new_unchecked(fut) };
        // `catch_unwind` itself, not `catch_panic`: matching the poll's result directly
        // keeps every poll two to four instructions shorter (callgrind, `pingpong`).
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(out.into_exit_reason()),
            // SAFETY: caller's contract: a live process, whose header is never moved.
            Err(payload) => Poll::Ready(crashed(unsafe { ptr.as_ref() }.pid, payload)),
        }
    }

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>` whose future no worker is polling, and nobody
    /// drops it concurrently (module rules: the exit's worker, or shutdown).
    unsafe fn drop_future(ptr: NonNull<Header>) {
        // SAFETY: caller's contract: a live `Cell<F, M>`.
        let cell = cell_of::<Self>(ptr);
        // SAFETY: as above.
        let cell = unsafe { cell.as_ref() };
        // SAFETY: caller's contract gives exclusive access to `stage`.
        let stage = unsafe { &mut *cell.stage.get() };
        // A panicking destructor must not unwind into the worker; the parts of the
        // future it did not get to are leaked, as async-task does.
        catch_silently(|| {
            *stage = Stage::Finished;
        });
        // If the drop panicked, `stage` may still read `Running` with a half-dropped
        // future: overwrite it without dropping again.
        // SAFETY: exclusive access as above; `write` does not drop the old value.
        unsafe { ptr::write(stage, Stage::Finished) };
    }

    /// # Safety
    ///
    /// `ptr` is a `Cell<F, M>` allocated by [`spawn`] whose last reference the caller
    /// has just released: nothing else can reach it.
    unsafe fn dealloc(ptr: NonNull<Header>) {
        // SAFETY: caller's contract: we own the allocation made by `Box` in `spawn`.
        let cell = cell_of::<Self>(ptr);
        // SAFETY: as above.
        let cell = unsafe { Box::from_raw(cell.as_ptr()) };
        // Undelivered messages are dropped here; a panicking `Drop` of a message must
        // not take the thread that happened to free the cell with it.
        catch_silently(move || drop(cell));
    }
}

/// A process's poll panicked: its exit reason, reported (`report.rs`).
#[cold]
#[inline(never)]
fn crashed(pid: RawPid, payload: Box<dyn std::any::Any + Send>) -> ExitReason {
    let reason = panic_reason(payload);
    crate::report::process_crashed(crate::pid::ProcessId(pid), &reason);
    reason
}

// ===== spawning =====

/// Allocates, publishes and schedules a process running `f`'s future.
/// `parent` is the spawning process, or `RawPid::OUTSIDE` (introspection's parent).
pub(crate) fn spawn<M, F, Fut>(rt: &Shared, parent: RawPid, f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(crate::Context<M>) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    spawn_bonded(rt, parent, f, |_| None, 0)
}

/// As [`spawn`], with the bonds `bonds(pid)` set before the process can run (for
/// `spawn_link` and `spawn_monitor`: the child cannot exit unseen). `bonds` runs before
/// the closure `f`, and must not fail. `bound` is the mailbox's bound word
/// (`mailbox/bound.rs`: 0 for an unbounded mailbox).
pub(crate) fn spawn_bonded<M, F, Fut>(
    rt: &Shared,
    parent: RawPid,
    f: F,
    bonds: impl FnOnce(RawPid) -> Option<Bonds>,
    bound: u32,
) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(crate::Context<M>) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    let index = table::alloc_index();
    let slot = table::slot(index).expect("allocated index has a slot");
    let pid = RawPid {
        index,
        generation: slot.word.generation(),
    };
    let bonds = bonds(pid).map(Box::new);
    // Take the raw pointer first: every pointer handed out below derives from it, so no
    // later `Box` retag invalidates them (Stacked Borrows).
    let p: *mut Cell<Fut, M> = Box::into_raw(Box::<Cell<Fut, M>>::new_uninit()).cast();
    // SAFETY: `p` points to memory we own; taking a field's address reads nothing.
    let mailbox_field = unsafe { &raw mut (*p).mailbox };
    // SAFETY: we initialise the mailbox (with the header in its gap), then the stage,
    // through raw pointers, before anything reads them.
    unsafe {
        mailbox_field.write(Queue::with_gap(Header {
            state: State::new_scheduled(),
            vtable: if bound == 0 {
                &Cell::<Fut, M>::VTABLE
            } else {
                &Cell::<Fut, M>::VTABLE_BOUNDED
            },
            rt,
            pid,
            refs: AtomicUsize::new(2),
            gate: Gate::new(bonds.is_some()),
            signalled: AtomicBool::new(false),
            bound: AtomicU32::new(bound),
            bonds: Mutex::new(bonds),
        }));
    }
    // The coarse clock: a spawn reads no clock (`introspect.rs`, rule 4).
    let born = rt.services.stats.coarse_ms();
    // SAFETY: `p` points to memory we own; taking a field's address reads nothing.
    let counters_field = unsafe { &raw mut (*p).counters };
    // SAFETY: as above; nobody reads the counters before the process is published.
    unsafe { counters_field.write(Counters::new(parent, born)) };
    // The header is `GAP_OFFSET` bytes into the cell (`cell_of`); the pointer derives
    // from `p`, so it may reach the whole allocation.
    let header =
        NonNull::new(p.wrapping_byte_add(GAP_OFFSET).cast::<Header>()).expect("Box is non-null");
    // SAFETY: `header` derives from the cell's allocation, which is a `Cell<_, M>`,
    // and this is the owner reference counted in `refs`.
    let owner = unsafe { Owner::<M>::new(header) };
    // SAFETY: `p` points to memory we own; taking a field's address reads nothing.
    let stage_field = unsafe { &raw mut (*p).stage };
    // SAFETY: the stage reads `Finished` until the future is built, so that the cell is
    // complete (and `dealloc` may drop it) whatever the closure does.
    unsafe { stage_field.write(std::cell::UnsafeCell::new(Stage::Finished)) };
    // Building the future runs user code (the closure), which may panic. It may also
    // have kept the `Context` (moved out through a captured `&mut`) or copied the pid,
    // so `Undo` ends the process as an exit would, minus what an unpublished process
    // never had: mark it done (a kept `Context` finds no runtime), bump the slot's
    // generation (a kept pid never resolves, even once the slot is reused), give the
    // index back and release the slot reference. The owner reference, dropped during
    // the unwinding or by whoever kept the `Context`, frees the cell (`dealloc`).
    struct Undo {
        index: u32,
        slot: &'static table::Slot,
        header: NonNull<Header>,
    }
    impl Drop for Undo {
        fn drop(&mut self) {
            // SAFETY: the slot reference, released last below, keeps the cell allocated.
            let h = unsafe { self.header.as_ref() };
            h.state.transition_to_done();
            self.slot.word.discard();
            table::free_index(self.index);
            release_ref(self.header);
        }
    }
    let undo = Undo {
        index,
        slot,
        header,
    };
    let fut = f(crate::Context::new(owner));
    std::mem::forget(undo);
    // SAFETY: the stage holds `Finished`, which owns nothing, so overwriting it drops
    // nothing; the process is not published, so nobody reads the stage yet.
    unsafe { stage_field.write(std::cell::UnsafeCell::new(Stage::Running(fut))) };
    let raw = header.as_ptr();
    slot.cell.store(raw.cast(), Ordering::Relaxed);
    slot.word.publish();
    // SAFETY: the process is published and scheduled: a queued process is alive.
    rt.schedule_spawned(unsafe { Task::new(header) });
    Pid::from_raw(pid)
}

// ===== references =====

/// A counted reference to a process, taken through the table while its pid resolves
/// (one of the counts of lifetime rule 1): the cell stays allocated while it is held,
/// and it is released on drop. The one way safe code reaches a process's header.
pub(crate) struct ProcessRef {
    pub(super) slot: &'static table::Slot,
    pub(super) cell: NonNull<Header>,
}

impl ProcessRef {
    /// A reference to the process `pid`, if it is alive (it may be exiting).
    #[inline]
    pub(crate) fn new(pid: RawPid) -> Option<ProcessRef> {
        let slot = table::slot(pid.index)?;
        if !slot.word.acquire(pid.generation) {
            return None;
        }
        let cell = NonNull::new(slot.cell.load(Ordering::Acquire).cast::<Header>())?;
        Some(ProcessRef { slot, cell })
    }

    /// The process's header.
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the count we hold keeps the cell allocated (lifetime rule 1).
        unsafe { self.cell.as_ref() }
    }

    /// Schedules the process if it was idle.
    pub(crate) fn schedule(&self) {
        schedule(self.cell);
    }

    /// Hands the exit signal `exit` to the process as a message, through its trap
    /// function; does nothing if `trap` was made for another process.
    pub(crate) fn deliver_trapped(&self, trap: TrapFn, exit: Exit) {
        if trap.pid != self.header().pid {
            debug_assert!(false, "a trap function used on another process");
            return;
        }
        // SAFETY: `trap` was made for this pid (checked), whose cell is a `Cell<_, M>`
        // of the `M` it was made with (`TrapFn::new`); our count keeps it allocated.
        unsafe { (trap.deliver)(self.cell, exit) };
    }
}

impl Drop for ProcessRef {
    #[inline]
    fn drop(&mut self) {
        release_slot(self.slot, self.cell);
    }
}

#[inline]
pub(super) fn release_slot(slot: &'static table::Slot, cell: NonNull<Header>) {
    if slot.word.release() == TransitionToReleased::Free {
        let index = {
            // SAFETY: the slot reference (lifetime rule 1) is still counted in `refs`,
            // so the cell is allocated.
            let h = unsafe { cell.as_ref() };
            h.pid.index
        };
        table::free_index(index);
        release_ref(cell);
    }
}

/// Releases one of the two references of the lifetime rules; frees on the last.
pub(super) fn release_ref(cell: NonNull<Header>) {
    // SAFETY: the caller holds one of the references, so the cell is allocated.
    let h = unsafe { cell.as_ref() };
    if h.refs.fetch_sub(1, Ordering::Release) == 1 {
        std::sync::atomic::fence(Ordering::Acquire);
        let dealloc = h.vtable.dealloc;
        // SAFETY: that was the last reference; nobody else can reach the cell.
        unsafe { dealloc(cell) };
    }
}

/// Schedules the process if it was idle. The caller holds a reference.
#[inline]
pub(super) fn schedule(cell: NonNull<Header>) {
    // SAFETY: the caller holds a reference (lifetime rules), so the cell is allocated.
    let h = unsafe { cell.as_ref() };
    if h.state.transition_to_scheduled() == TransitionToScheduled::Push {
        // SAFETY: the process is not `DONE` (we just moved it idle -> scheduled), so the
        // runtime is alive (module rules: shutdown marks processes done first).
        let rt = unsafe { &*h.rt };
        // SAFETY: we moved it idle -> scheduled: it is alive and ours to queue.
        rt.schedule(unsafe { Task::new(cell) });
    }
}

/// Marks `pid` as having a registered name, if it is alive on runtime `rt`; returns
/// whether it was. See `registry.rs` for the protocol.
pub(crate) fn mark_registered(pid: RawPid, rt: &Shared) -> bool {
    let Some(process) = ProcessRef::new(pid) else {
        return false;
    };
    let h = process.header();
    if !ptr::eq(h.rt, rt) {
        return false;
    }
    h.gate.announce_name();
    true
}

/// Whether `pid` resolves to a process that has not started exiting (the registry's
/// read of the gate protocol, after `mark_registered`).
pub(crate) fn is_running(pid: RawPid) -> bool {
    ProcessRef::new(pid).is_some_and(|p| p.header().gate.is_open())
}

/// Whether `pid` resolves to a process that is alive in Erlang's sense
/// (`is_process_alive/1`): its exit has not begun (the gate is open) and no exit signal
/// that will end it is pending (`signalled`, set under its bonds lock by the signal's
/// sender, so the sender itself sees it at once). The exit closes the gate before it
/// signals any link or monitor, so whoever has seen one of those signals sees false.
pub(crate) fn is_alive(pid: RawPid) -> bool {
    ProcessRef::new(pid).is_some_and(|p| {
        let h = p.header();
        h.gate.is_open() && !h.signalled.load(Ordering::Acquire)
    })
}

/// Whether an exit signal that will end `pid` is pending (its worker applies it before
/// the next poll, `process/harness.rs`). A call that learns of its server's exit asks
/// this before it returns (`server/reply.rs`, rule 7).
pub(crate) fn exit_pending(pid: RawPid) -> bool {
    ProcessRef::new(pid).is_some_and(|p| p.header().signalled.load(Ordering::Acquire))
}

// ===== introspection =====

/// The queue length of the process `cell`, whatever its message type (a muted
/// sender's look, `mailbox/bound.rs`).
///
/// # Safety
///
/// The caller holds a reference on `cell` (a table count).
pub(crate) unsafe fn queue_len(cell: NonNull<Header>) -> usize {
    // SAFETY: caller's contract: a live cell, held.
    let queue_len = unsafe { cell.as_ref() }.vtable.queue_len;
    // SAFETY: caller's contract; `queue_len` is this cell's own type's.
    unsafe { queue_len(cell) }
}

/// What introspection reads of one process (`introspect.rs`), with no type in it.
pub(crate) struct Sample {
    pub(crate) pid: RawPid,
    pub(crate) kind: u8,
    pub(crate) status: Status,
    pub(crate) queue_len: usize,
    pub(crate) received: u64,
    pub(crate) blocks: usize,
    pub(crate) block_bytes: usize,
    pub(crate) cell_bytes: usize,
    pub(crate) polls: u64,
    pub(crate) restarts: u32,
    pub(crate) parent: RawPid,
    pub(crate) born: u64,
    pub(crate) saved: usize,
    pub(crate) saved_bytes: usize,
    pub(crate) bonds: crate::process::bonds::Sample,
}

impl ProcessRef {
    /// Reads the process for introspection, if it runs on `rt`.
    fn sample(&self, rt: &Shared) -> Option<Sample> {
        let h = self.header();
        if !ptr::eq(h.rt, rt) {
            return None;
        }
        // SAFETY: our count keeps the cell allocated; `inspect` is its own type's.
        let i = unsafe { (h.vtable.inspect)(self.cell) };
        let state = h.state.load();
        let status = if !h.gate.is_open() || h.signalled.load(Ordering::Relaxed) || state.done {
            Status::Exiting
        } else if state.running {
            Status::Running
        } else if state.scheduled {
            Status::Runnable
        } else {
            Status::Waiting
        };
        Some(Sample {
            pid: h.pid,
            kind: self.counters().kind(),
            status,
            queue_len: i.queue_len,
            received: i.received,
            blocks: i.blocks,
            block_bytes: i.block_bytes,
            cell_bytes: i.cell_bytes,
            polls: i.polls,
            restarts: u32::from(self.counters().restarts()),
            parent: i.parent,
            born: i.born,
            saved: i.saved,
            saved_bytes: i.saved_bytes,
            bonds: crate::process::bonds::sample(h),
        })
    }
}

/// Reads the live process `pid` of runtime `rt` (`None`: gone, remote, or another
/// runtime's). It runs on meanwhile: the count we take only keeps its cell allocated.
pub(crate) fn sample(rt: &Shared, pid: RawPid) -> Option<Sample> {
    ProcessRef::new(pid)?.sample(rt)
}

/// Reads whatever live process of `rt` holds table slot `index` now (a snapshot's walk).
pub(crate) fn sample_slot(rt: &Shared, index: u32) -> Option<Sample> {
    let slot = table::slot(index)?;
    let pid = RawPid {
        index,
        generation: slot.word.generation(),
    };
    sample(rt, pid)
}

impl ProcessRef {
    /// The process's introspection counters, while this reference is held.
    fn counters(&self) -> &Counters {
        // SAFETY: our count keeps the cell allocated; `counters` is its own type's.
        let counters = unsafe { (self.header().vtable.counters)(self.cell) };
        // SAFETY: the counters live as long as the cell, which our count keeps (the
        // borrow cannot outlive `self`); they are atomics or never written again.
        unsafe { counters.as_ref() }
    }
}

/// The kind byte of the live process `pid`.
pub(crate) fn kind_of(pid: RawPid) -> Option<u8> {
    ProcessRef::new(pid).map(|p| p.counters().kind())
}

/// Sets the kind byte of `pid` (the process itself, at its behaviour's start).
pub(crate) fn set_kind(pid: RawPid, kind: u8) {
    if let Some(p) = ProcessRef::new(pid) {
        p.counters().set_kind(kind);
    }
}

/// Records the restarts before the child `pid` (its supervisor, once).
pub(crate) fn set_restarts(pid: RawPid, restarts: u16) {
    if let Some(p) = ProcessRef::new(pid) {
        p.counters().set_restarts(restarts);
    }
}

#[cfg(test)]
mod tests;
