//! The process cell: control block, mailbox and future in one allocation.
//!
//! # Layout
//!
//! ```text
//!  Cell<F, M> (repr(C), one Box per process; lines as when it starts on one)
//!  +-- line 0 ------------------------------------------------------+
//!  | mailbox tail (tail_index, tail_block, spare)                   |
//!  | Header: state, vtable, rt, pid, refs   <- *const Header, the task pointer
//!  +-- line 1 ------------------------------------------------------+
//!  |         gate, signalled, bonds   (the header ends here)        |
//!  | mailbox head (head_index, head_block, tail_seen)               |
//!  | stage: Running(F) | Finished   (continues on the next lines)   |
//!  +----------------------------------------------------------------+
//! ```
//!
//! The header lives in the gap the mailbox queue leaves between its producers' and its
//! consumer's fields (`Queue<M, Header>`, `mailbox/queue.rs`). So everything a sender
//! touches in the receiver's cell is in its first 48 bytes: the tail it CASes, the state
//! it wakes and `rt`, which it needs to schedule. That is one cache line when the cell
//! starts on a 64-byte boundary and at most two otherwise (with the header before the
//! queue it was always two). The cell is only 16-byte aligned: `align(64)` would send
//! every spawn down glibc's `posix_memalign` path for applications on the system
//! allocator. The receiver's fields (the head, the `signalled` flag its worker checks
//! before each poll, the start of its future) come after. The gap that kept tail and
//! head apart is no longer padding: the part before the future shrank from 144 to 112
//! bytes (the head gained `tail_seen`, 8 bytes).
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
//! * `mailbox`: `push` by any thread holding a reference (below); `pop` only through the
//!   one [`Owner`], which the process's [`Context`](crate::Context) holds.
//! * `stage`: only the worker that moved the state to `RUNNING` (poll, and drop at
//!   exit), or the runtime's shutdown once no worker runs.
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
//! [`waker`]), and waking a process that has exited finds a retired slot and does nothing.
//!
//! # Safety
//!
//! Every `unsafe` block below rests on the rules above; each names the one it uses.
//! Miri runs this module's unit tests and the integration tests that spawn processes.
#![allow(unsafe_code)]

use std::future::Future;
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, RawWaker, RawWakerVTable, Waker};

use crate::exit::{ExitReason, IntoExitReason};
use crate::mailbox::queue::{GAP_OFFSET, Queue, TryPopError};
use crate::monitor::{Down, Watcher};
use crate::pid::{Pid, RawPid};
use crate::process::gate::Gate;
use crate::process::state::{State, TransitionToIdle, TransitionToScheduled};
use crate::process::table::{self, TransitionToReleased};
use crate::scheduler::Shared;
use crate::signal::{Effect, Exit, Kind, effect};
use crate::unwind::{catch_panic, catch_silently};

/// The type-erased part of a process: what run queues and the table point to. It lives
/// in the gap of the process's mailbox, right after the queue's tail (module docs,
/// layout): the fields a sender touches (`state`, `rt`) come first, so that with the
/// tail they are the cell's first 48 bytes; those of links, monitors and exits follow.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) state: State,
    vtable: &'static VTable,
    rt: *const Shared,
    pub(crate) pid: RawPid,
    refs: AtomicUsize,
    /// `exiting`, `registered`, `has_bonds`: the flags that close the races between
    /// the exit and a name, link or monitor attached meanwhile (`process/gate.rs`).
    gate: Gate,
    /// Set (`Release`) when an exit signal has put a pending reason in `bonds`: the
    /// worker checks it before each poll.
    signalled: AtomicBool,
    /// Links, monitors, the trap flag and a pending exit; boxed on first use, so a
    /// process that uses none carries one word here.
    bonds: Mutex<Option<Box<Bonds>>>,
}

/// What a process has to do with others: the processes monitoring it, the processes
/// linked to it, whether it traps exits, and the reason of an exit signal that will end
/// it (`signal.rs`).
#[derive(Debug, Default)]
pub(crate) struct Bonds {
    watchers: Vec<Watcher>,
    links: Vec<RawPid>,
    trap: Option<TrapFn>,
    pending: Option<ExitReason>,
}

impl Bonds {
    /// The bonds of a child spawned linked to `link` and watched by `watcher`.
    pub(crate) fn new(link: Option<RawPid>, watcher: Option<Watcher>) -> Bonds {
        Bonds {
            links: link.into_iter().collect(),
            watchers: watcher.into_iter().collect(),
            ..Bonds::default()
        }
    }
}

/// Puts an `Exit` message in the mailbox of a trapping process.
///
/// # Safety
///
/// Stored only in the header of a `Cell<_, M>` by [`set_trap_exit`] for its own `M`, and
/// called only with a pointer to that same cell while a reference keeps it allocated.
#[derive(Clone, Copy, Debug)]
struct TrapFn(unsafe fn(NonNull<Header>, Exit));

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

struct VTable {
    /// Polls the future. Caller: the worker that set `RUNNING`.
    poll: unsafe fn(NonNull<Header>, &mut TaskContext<'_>) -> Poll<ExitReason>,
    /// Drops the future in place. Caller: the worker running the exit, or shutdown.
    drop_future: unsafe fn(NonNull<Header>),
    /// Drops the mailbox and frees the cell. Caller: whoever released the last reference.
    dealloc: unsafe fn(NonNull<Header>),
}

enum Stage<F> {
    Running(F),
    Finished,
}

/// A process. The header lives in the mailbox's gap (see the module docs' layout).
#[repr(C, align(16))]
struct Cell<F, M> {
    mailbox: Queue<M, Header>,
    stage: std::cell::UnsafeCell<Stage<F>>,
}

/// The part of every `Cell<_, M>` a sender or the owner needs.
#[repr(C)]
struct Prefix<M> {
    mailbox: Queue<M, Header>,
}

impl<M> Prefix<M> {
    #[inline]
    fn header(&self) -> &Header {
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
/// The null check stays on the send path on purpose. Without it (an unchecked
/// `byte_sub`), LLVM moved the streaming sender's copy of the message to a stack
/// temporary before the tail's CAS, where its 16-byte load waited on the narrower stores
/// that built the message, and `counting` took 1.40 of the time (11 paired rounds;
/// the receiver's side, [`Owner::prefix`], is unchecked).
#[inline]
fn cell_of<T>(header: NonNull<Header>) -> NonNull<T> {
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
        poll: Self::poll,
        drop_future: Self::drop_future,
        dealloc: Self::dealloc,
    };

    /// # Safety
    ///
    /// `ptr` is a live `Cell<F, M>` and the caller is the worker that set `RUNNING`.
    unsafe fn poll(ptr: NonNull<Header>, cx: &mut TaskContext<'_>) -> Poll<ExitReason> {
        // SAFETY: caller's contract: a live `Cell<F, M>`.
        let cell = cell_of::<Self>(ptr);
        // SAFETY: as above.
        let cell = unsafe { cell.as_ref() };
        // SAFETY: `stage` is ours while `RUNNING` (module rules).
        let stage = unsafe { &mut *cell.stage.get() };
        let Stage::Running(fut) = stage else {
            return Poll::Ready(ExitReason::Normal);
        };
        // SAFETY: the future lives inside a heap cell that never moves until it is
        // dropped in place by `drop_future`: it is pinned.
        let fut = unsafe { Pin::new_unchecked(fut) };
        match catch_panic(|| fut.poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(out.into_exit_reason()),
            Err(reason) => Poll::Ready(reason),
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

// ===== spawning =====

/// Allocates, publishes and schedules a process running `f`'s future.
pub(crate) fn spawn<M, F, Fut>(rt: &Shared, f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(crate::Context<M>) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: IntoExitReason,
{
    spawn_bonded(rt, f, |_| None)
}

/// As [`spawn`], with the bonds `bonds(pid)` set before the process can run (for
/// `spawn_link` and `spawn_monitor`: the child cannot exit unseen). `bonds` runs before
/// the closure `f`, and must not fail.
pub(crate) fn spawn_bonded<M, F, Fut>(
    rt: &Shared,
    f: F,
    bonds: impl FnOnce(RawPid) -> Option<Bonds>,
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
            vtable: &Cell::<Fut, M>::VTABLE,
            rt,
            pid,
            refs: AtomicUsize::new(2),
            gate: Gate::new(bonds.is_some()),
            signalled: AtomicBool::new(false),
            bonds: Mutex::new(bonds),
        }));
    }
    // The header is `GAP_OFFSET` bytes into the cell (`cell_of`); the pointer derives
    // from `p`, so it may reach the whole allocation.
    let header =
        NonNull::new(p.wrapping_byte_add(GAP_OFFSET).cast::<Header>()).expect("Box is non-null");
    let owner = Owner {
        cell: header,
        _type: std::marker::PhantomData,
    };
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
    slot.cell.store(raw, Ordering::Relaxed);
    slot.word.publish();
    rt.schedule_spawned(Task(header));
    Pid::from_raw(pid)
}

// ===== sending and waking =====

/// A counted reference taken through the table; releases on drop.
struct Lookup {
    slot: &'static table::Slot,
    cell: NonNull<Header>,
}

impl Lookup {
    #[inline]
    fn new(pid: RawPid) -> Option<Lookup> {
        let slot = table::slot(pid.index)?;
        if !slot.word.acquire(pid.generation) {
            return None;
        }
        let cell = NonNull::new(slot.cell.load(Ordering::Acquire))?;
        Some(Lookup { slot, cell })
    }
}

impl Drop for Lookup {
    #[inline]
    fn drop(&mut self) {
        release_slot(self.slot, self.cell);
    }
}

#[inline]
fn release_slot(slot: &'static table::Slot, cell: NonNull<Header>) {
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
fn release_ref(cell: NonNull<Header>) {
    // SAFETY: the caller holds one of the references, so the cell is allocated.
    let h = unsafe { cell.as_ref() };
    if h.refs.fetch_sub(1, Ordering::Release) == 1 {
        std::sync::atomic::fence(Ordering::Acquire);
        let dealloc = h.vtable.dealloc;
        // SAFETY: that was the last reference; nobody else can reach the cell.
        unsafe { dealloc(cell) };
    }
}

// ===== the stream cache =====
//
// A send takes a table count and gives it back: two locked instructions around the
// mailbox's tail CAS. A process that streams to one receiver (`counting`) pays them on
// every message. So a worker keeps the count of a run of sends to one process for the
// rest of the poll: from the poll's `STREAM_AFTER + 1`-th send on, a send to the same
// pid as the send before it takes a count once and keeps it in `STREAM`, and the sends
// after it only check the slot's word (the pid still resolves) before they push.
//
// Rules:
// 1. Only a worker keeps a count, and only on a process of its own runtime: the
//    runtime's shutdown joins its workers before it waits for counts
//    (`shutdown_processes`), and every count kept is given back by then.
// 2. The worker gives the count back after every poll (`end_stream`, from
//    `Worker::run_task`) and at every turn renewed in place (`worker::renew_turn`),
//    and a send to another pid gives it back first. So a cell outlives its process's
//    exit by at most the rest of one turn of one sender, as it does for a sender caught
//    between its lookup and its release.
// 3. `STREAM` is cleared before a kept count is released: the release may free a cell,
//    whose messages' `Drop` may send. Such a send may keep a count again;
//    `end_stream` loops until none is kept.
// 4. The first `STREAM_AFTER` sends of a poll (all of a ring's or a ping-pong's) do
//    not look at the cache at all.

/// The stream cache of one thread: the target of its last streaming send and the
/// table count kept on it, if any (rules above).
#[derive(Clone, Copy)]
struct Stream {
    /// `RawPid::to_bits` of the last target; `u64::MAX` names none (index `u32::MAX`
    /// is past the table's end).
    last: u64,
    /// The slot and cell of `last` on which this thread holds a table count.
    held: Option<(&'static table::Slot, NonNull<Header>)>,
}

impl Stream {
    const NONE: Stream = Stream {
        last: u64::MAX,
        held: None,
    };
}

thread_local! {
    static STREAM: std::cell::Cell<Stream> = const { std::cell::Cell::new(Stream::NONE) };
}

/// Sends in one poll before `send` looks at the stream cache (rule 4). Small, so that a
/// stream is found early; more than the two or three sends of a request and its reply.
const STREAM_AFTER: u32 = 4;

/// Gives back the count the stream cache keeps, if any (rules 2 and 3). Called by the
/// worker after every poll.
#[inline]
pub(crate) fn end_stream() {
    while let Some((slot, cell)) = STREAM.with(std::cell::Cell::get).held {
        STREAM.with(|c| c.set(Stream::NONE));
        release_slot(slot, cell);
    }
}

/// Puts `message` in `pid`'s mailbox and schedules it; hands it back if it exited.
///
/// Inlined into every caller (with [`Pid::send`]), and so is a send to the pid whose
/// count the stream cache keeps: in a send loop, that path is the caller's loop body,
/// with the message built in place, and everything else ([`send_first`]'s lookup,
/// [`stream_miss`], the wake-up) is a call. Out of line, the streaming path was a
/// call with the message copied through memory and the result handed back the same
/// way. Inlined, `counting` runs 31 fewer instructions a message (callgrind) and takes
/// 0.79–0.87 of the time (ARCHITECTURE.md, "The stream's send, inlined").
#[inline(always)]
pub(crate) fn send<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), M> {
    let sent = crate::scheduler::worker::count_send();
    if sent > STREAM_AFTER {
        let spill = crate::scheduler::worker::spills_at(sent);
        let s = STREAM.with(std::cell::Cell::get);
        if s.last == pid.raw.to_bits() {
            if let Some((slot, cell)) = s.held {
                if !slot.word.is_alive(pid.raw.generation) {
                    return Err(message);
                }
                // SAFETY: the count the cache keeps holds the cell until `end_stream`,
                // after this call.
                unsafe { deliver_streamed(cell, message, spill) };
                return Ok(());
            }
        }
        return stream_miss(pid, message, spill);
    }
    send_first(pid, message)
}

/// `send` among the first [`STREAM_AFTER`] sends of a poll (a ring's hop, a request,
/// a reply): a lookup that takes a table count and gives it back.
#[inline]
fn send_first<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), M> {
    let Some(lookup) = Lookup::new(pid.raw) else {
        return Err(message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops, after
    // this call. No spill: `sent` is at most `STREAM_AFTER`, below `SPILL_AFTER_SENDS`.
    unsafe { deliver(lookup.cell, message, false) };
    Ok(())
}

/// A streaming send whose pid's count the cache does not keep: it looks the pid up,
/// and keeps the count if the send before went to the same pid. It reads the cache
/// itself rather than take the caller's copy, so that the caller's inlined fast path
/// keeps the cache's fields in registers instead of spilling them for this call.
#[inline(never)]
fn stream_miss<M: Send + 'static>(pid: Pid<M>, message: M, spill: bool) -> Result<(), M> {
    let s = STREAM.with(std::cell::Cell::get);
    let bits = pid.raw.to_bits();
    if s.last != bits {
        // A new target: forget the old one (rule 3: before its count goes back).
        STREAM.with(|c| {
            c.set(Stream {
                last: bits,
                held: None,
            });
        });
        if let Some((slot, cell)) = s.held {
            release_slot(slot, cell);
        }
    }
    let Some(lookup) = Lookup::new(pid.raw) else {
        return Err(message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops or moves
    // into the cache, after this call.
    unsafe { deliver(lookup.cell, message, spill) };
    if s.last == bits {
        keep(lookup);
    }
    Ok(())
}

/// The second send in a row to one pid: keeps its count in the stream cache if this
/// thread is a worker of the process's runtime (rule 1); else gives it back.
#[cold]
fn keep(lookup: Lookup) {
    // SAFETY: the count `lookup` holds keeps the cell allocated.
    let h = unsafe { lookup.cell.as_ref() };
    if crate::scheduler::worker::current_index(h.rt).is_some()
        && STREAM.with(std::cell::Cell::get).held.is_none()
    {
        let held = Some((lookup.slot, lookup.cell));
        std::mem::forget(lookup);
        STREAM.with(|c| {
            c.set(Stream {
                last: h.pid.to_bits(),
                held,
            });
        });
    }
}

/// Pushes `message` and wakes the receiver.
///
/// # Safety
///
/// `cell` is a `Cell<_, M>` (a `Pid<M>` only names cells whose mailbox holds `M`) and
/// the caller holds a table count on it.
#[inline(always)]
unsafe fn deliver<M: Send + 'static>(cell: NonNull<Header>, message: M, spill: bool) {
    // SAFETY: a `Pid<M>` only names cells whose mailbox holds `M` (`Pid::from_raw` is
    // called only by `spawn` with its own `M`), and `Prefix<M>` has the offsets of every
    // `Cell<_, M>` (module docs). The count we hold keeps it allocated.
    let prefix = unsafe { cell_of::<Prefix<M>>(cell).as_ref() };
    prefix.mailbox.push(message);
    wake_by_message(prefix.header(), cell, spill);
}

/// The receiver's side of a delivery: schedules it if the message found it idle, and
/// hands the LIFO slot to the local queue on the sends `worker::spills_at` names.
/// `h` is `cell`'s header, and the caller holds a table count on `cell`.
#[inline(always)]
fn wake_by_message(h: &Header, cell: NonNull<Header>, spill: bool) {
    let wake = h.state.transition_to_scheduled_by_message();
    if wake == TransitionToScheduled::Push || spill {
        // SAFETY: the count the caller holds makes shutdown wait for it before it frees
        // the runtime (`shutdown_processes` step 2), and the process was alive when the
        // count was taken, so its runtime is alive.
        let rt = unsafe { &*h.rt };
        if wake == TransitionToScheduled::Push {
            rt.schedule(Task(cell));
        }
        if spill {
            rt.spill_lifo();
        }
    }
}

/// [`deliver`] for a stream: the wake-up, which a stream rarely needs, is out of line.
///
/// # Safety
///
/// As for [`deliver`].
#[inline(always)]
unsafe fn deliver_streamed<M: Send + 'static>(cell: NonNull<Header>, message: M, spill: bool) {
    // SAFETY: as in `deliver`.
    let prefix = unsafe { cell_of::<Prefix<M>>(cell).as_ref() };
    prefix.mailbox.push(message);
    if prefix.header().state.is_wake_pending() && !spill {
        return;
    }
    wake_streamed(cell, spill);
}

/// The rest of [`deliver_streamed`], out of line. The caller holds a count on `cell`.
#[inline(never)]
fn wake_streamed(cell: NonNull<Header>, spill: bool) {
    // SAFETY: the caller's count keeps the cell allocated.
    let h = unsafe { cell.as_ref() };
    wake_by_message(h, cell, spill);
}

/// Schedules the process if it was idle. The caller holds a reference.
#[inline]
fn schedule(cell: NonNull<Header>) {
    // SAFETY: the caller holds a reference (lifetime rules), so the cell is allocated.
    let h = unsafe { cell.as_ref() };
    if h.state.transition_to_scheduled() == TransitionToScheduled::Push {
        // SAFETY: the process is not `DONE` (we just moved it idle -> scheduled), so the
        // runtime is alive (module rules: shutdown marks processes done first).
        let rt = unsafe { &*h.rt };
        rt.schedule(Task(cell));
    }
}

/// Marks `pid` as having a registered name, if it is alive on runtime `rt`; returns
/// whether it was. See `registry.rs` for the protocol.
pub(crate) fn mark_registered(pid: RawPid, rt: &Shared) -> bool {
    let Some(lookup) = Lookup::new(pid) else {
        return false;
    };
    // SAFETY: the count held by `lookup` keeps the cell allocated.
    let h = unsafe { lookup.cell.as_ref() };
    if !ptr::eq(h.rt, rt) {
        return false;
    }
    h.gate.announce_name();
    true
}

/// Whether `pid` resolves to a process that has not started exiting (the registry's
/// read of the gate protocol, after `mark_registered`).
pub(crate) fn is_running(pid: RawPid) -> bool {
    Lookup::new(pid).is_some_and(|l| {
        // SAFETY: the count held by `l` keeps the cell allocated.
        let h = unsafe { l.cell.as_ref() };
        h.gate.is_open()
    })
}

/// Runs `f` on the bonds of the process `lookup` holds, under their lock.
fn with_bonds<R>(lookup: &Lookup, f: impl FnOnce(&Header, &mut Option<Box<Bonds>>) -> R) -> R {
    // SAFETY: the count held by `lookup` keeps the cell allocated.
    let h = unsafe { lookup.cell.as_ref() };
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    f(h, &mut bonds)
}

/// Adds a watcher to `target`; hands it back if `target` does not exist or is exiting
/// (the caller then sends `Noproc`).
pub(crate) fn add_watcher(target: RawPid, watcher: Watcher) -> Result<(), Watcher> {
    let Some(lookup) = Lookup::new(target) else {
        return Err(watcher);
    };
    with_bonds(&lookup, |h, bonds| {
        if !h.gate.attach_bond() {
            return Err(watcher);
        }
        bonds.get_or_insert_default().watchers.push(watcher);
        Ok(())
    })
}

/// Removes watcher `id` from `target`; false if it is no longer there (its `Down` has
/// been delivered: see `monitor.rs`).
pub(crate) fn remove_watcher(target: RawPid, id: u64) -> bool {
    let Some(lookup) = Lookup::new(target) else {
        return false;
    };
    with_bonds(&lookup, |_, bonds| {
        let Some(b) = bonds.as_mut() else {
            return false;
        };
        match b.watchers.iter().position(|x| x.id == id) {
            Some(i) => {
                drop(b.watchers.swap_remove(i));
                true
            }
            None => false,
        }
    })
}

/// Records the link `me` -> `other` on `me`'s side (idempotent).
fn add_link(lookup: &Lookup, other: RawPid) {
    with_bonds(lookup, |h, bonds| {
        h.gate.mark_own_bond();
        let links = &mut bonds.get_or_insert_default().links;
        if !links.contains(&other) {
            links.push(other);
        }
    });
}

/// Records a link to the child `other` on the side of the running process `me`, before
/// the child runs (`spawn_link`).
pub(crate) fn link_one_side(me: RawPid, other: RawPid) {
    if let Some(mine) = Lookup::new(me) {
        add_link(&mine, other);
    }
}

/// Removes the link to `other` from the bonds; whether it was there.
fn remove_link(bonds: &mut Option<Box<Bonds>>, other: RawPid) -> bool {
    let Some(b) = bonds.as_mut() else {
        return false;
    };
    match b.links.iter().position(|&p| p == other) {
        Some(i) => {
            b.links.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Links the running process `me` with `other` (`signal.rs` has the rules). Our side
/// first: once `other` records us, its exit signal must find the link here. If `other`
/// is gone or exiting, our side is undone and we get the signal `Noproc` from it.
pub(crate) fn link(me: RawPid, other: RawPid) {
    if me == other {
        return;
    }
    let Some(mine) = Lookup::new(me) else {
        return;
    };
    add_link(&mine, other);
    let linked = Lookup::new(other).is_some_and(|theirs| {
        with_bonds(&theirs, |h, bonds| {
            // The gate's protocol with the exit, under the lock the exit takes.
            if !h.gate.attach_bond() {
                return false;
            }
            let links = &mut bonds.get_or_insert_default().links;
            if !links.contains(&me) {
                links.push(me);
            }
            true
        })
    });
    // If the link is no longer on our side, `other`'s exit signal already took it.
    if !linked && with_bonds(&mine, |_, bonds| remove_link(bonds, other)) {
        drop(mine);
        signal(me, other, ExitReason::Noproc, Kind::Exit);
    }
}

/// Removes the link between `me` and `other`, both sides. Afterwards no signal through
/// it reaches `me` (a link signal must find its link: [`signal`]).
pub(crate) fn unlink(me: RawPid, other: RawPid) {
    if let Some(mine) = Lookup::new(me) {
        with_bonds(&mine, |_, bonds| remove_link(bonds, other));
    }
    if let Some(theirs) = Lookup::new(other) {
        with_bonds(&theirs, |_, bonds| remove_link(bonds, me));
    }
}

/// Sets or clears the trap flag of the process owning `owner`; returns the old value.
pub(crate) fn set_trap_exit<M: From<Exit> + Send + 'static>(owner: &Owner<M>, on: bool) -> bool {
    let h = owner.prefix().header();
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    let new = on.then_some(TrapFn(deliver_exit::<M>));
    match bonds.as_mut() {
        Some(b) => std::mem::replace(&mut b.trap, new).is_some(),
        None if on => {
            *bonds = Some(Box::new(Bonds {
                trap: new,
                ..Bonds::default()
            }));
            false
        }
        None => false,
    }
}

/// Sends the exit signal `reason` of `kind` from `from` to `to`, and applies the
/// receipt rule (`signal::effect`) at once, under `to`'s bonds lock: the trap flag read
/// is the one in force when the signal arrives.
pub(crate) fn signal(to: RawPid, from: RawPid, reason: ExitReason, kind: Kind) {
    let Some(lookup) = Lookup::new(to) else {
        return;
    };
    let terminate = with_bonds(&lookup, |h, bonds| {
        if kind == Kind::Link && !remove_link(bonds, from) {
            return false; // unlinked: the signal has no effect
        }
        let trap = bonds.as_ref().and_then(|b| b.trap);
        match effect(kind, reason, trap.is_some(), to == from) {
            Effect::Ignore => false,
            Effect::Message(reason) => {
                let trap = trap.expect("trapping");
                let exit = Exit {
                    from: crate::ProcessId(from),
                    reason,
                };
                // SAFETY: `trap` was stored in this cell's header by `set_trap_exit`
                // for its own message type (`TrapFn`), and `lookup` keeps it allocated.
                unsafe { (trap.0)(lookup.cell, exit) };
                false
            }
            Effect::Terminate(reason) => {
                let b = bonds.get_or_insert_default();
                if b.pending.is_none() {
                    b.pending = Some(reason);
                    h.signalled.store(true, Ordering::Release);
                }
                true
            }
        }
    });
    if terminate {
        schedule(lookup.cell);
    }
}

/// Whether `waker` is the waker of process `pid` (a call from the server to itself).
pub(crate) fn is_waker_of(waker: &Waker, pid: RawPid) -> bool {
    waker.will_wake(&self::waker(pid))
}

/// Wakes the process named by `pid`, if it is still alive.
fn wake_pid(pid: RawPid) {
    if let Some(lookup) = Lookup::new(pid) {
        schedule(lookup.cell);
    }
}

/// The waker of the process `pid`: the pid itself in the data pointer; no allocation,
/// no reference count.
pub(crate) fn waker(pid: RawPid) -> Waker {
    // SAFETY: `WAKER_VTABLE`'s functions treat the data pointer as plain bits and never
    // dereference it, so any pointer value satisfies the `RawWaker` contract.
    unsafe { Waker::from_raw(raw_waker(pid.to_bits())) }
}

fn raw_waker(bits: u64) -> RawWaker {
    RawWaker::new(ptr::without_provenance(bits as usize), &WAKER_VTABLE)
}

static WAKER_VTABLE: RawWakerVTable = RawWakerVTable::new(
    |data| raw_waker(data as usize as u64),
    |data| wake_pid(RawPid::from_bits(data as usize as u64)),
    |data| wake_pid(RawPid::from_bits(data as usize as u64)),
    |_| {},
);

// ===== the owner (receiving end) =====

/// The receiving end of a mailbox and the owner reference of its cell (lifetime rule
/// 2). Held by the process's `Context`; there is exactly one per process.
pub(crate) struct Owner<M> {
    cell: NonNull<Header>,
    _type: std::marker::PhantomData<M>,
}

// SAFETY: the owner moves with the process's future between workers. It gives access
// to `Queue<M>::pop` (messages of type `M: Send` move to the owner's thread) and to the
// header's atomics; the reference it holds keeps the cell alive on any thread. It is not
// `Sync`: `pop` needs `&mut self`, which keeps the queue single-consumer.
unsafe impl<M: Send> Send for Owner<M> {}

impl<M> std::fmt::Debug for Owner<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner").finish_non_exhaustive()
    }
}

impl<M> Owner<M> {
    /// [`cell_of`] without its null check, which cost a compare and a branch on every
    /// receive.
    #[inline(always)]
    fn prefix(&self) -> &Prefix<M> {
        // SAFETY: `spawn` derived `self.cell` from the cell's allocation, `GAP_OFFSET`
        // bytes in, and the owner reference keeps that allocation alive: stepping back
        // stays inside it.
        let prefix = unsafe { self.cell.byte_sub(GAP_OFFSET) };
        // SAFETY: as above, live; `spawn` made it a `Cell<_, M>`, whose prefix is
        // `Prefix<M>`.
        unsafe { prefix.cast::<Prefix<M>>().as_ref() }
    }

    /// The pid of this process. The owner of a `Cell<_, M>` is made by `spawn` with its
    /// own `M`, so the pid names a mailbox of `M` (the rule of `Pid::from_raw`).
    #[inline]
    pub(crate) fn pid(&self) -> Pid<M> {
        Pid::from_raw(self.prefix().header().pid)
    }

    /// Takes the oldest message that is ready. Called only by the running process.
    ///
    /// A message whose slot is reserved but not yet written (`TryPopError::InFlight`)
    /// reads as none, and the process schedules itself so that it looks again after
    /// this poll: its sender may have skipped the wake-up (`process/state.rs`).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<M> {
        // SAFETY: `&mut self` on the one `Owner` of this mailbox makes us its only
        // consumer.
        match unsafe { self.prefix().mailbox.pop() } {
            Ok(m) => Some(m),
            Err(TryPopError::Empty) => None,
            Err(TryPopError::InFlight) => {
                self.schedule_self();
                None
            }
        }
    }

    /// The running process's budget is spent: true if it goes on with a new turn in
    /// place (`worker::renew_turn`), false if it yields (it is scheduled again, and the
    /// receive returns `Pending`). Not in place if an exit signal waits for it, which
    /// the worker applies before a poll (`Task::run`).
    ///
    /// The runtime comes from the worker's thread-local, not from the header: the
    /// header's first line holds the mailbox's tail, which a sender streaming to this
    /// process writes on every message, so reading `state` or `rt` there took that line
    /// from the sender's core once a budget (`perf`, `counting`: 5% of the counter's
    /// samples on that one load). `signalled` sits on the receiver's own line.
    #[cold]
    #[inline(never)]
    pub(crate) fn budget_spent(&self) -> bool {
        let h = self.prefix().header();
        let rt = crate::scheduler::worker::current_runtime();
        if rt.is_null() {
            // Not on a worker: the `Context` was moved out of its process to a plain
            // thread. There is no turn to yield, and nothing would poll this receive
            // again: it takes what is there.
            return true;
        }
        if !h.signalled.load(Ordering::Acquire) {
            // A process is polled only by the workers of its own runtime (`block_on`
            // spawns its root and refuses to run on a worker).
            debug_assert!(ptr::eq(rt, h.rt));
            // SAFETY: not null, so this thread is a worker and its `run` holds the
            // runtime (`worker::current_runtime`).
            if crate::scheduler::worker::renew_turn(unsafe { &*rt }) {
                return true;
            }
        }
        self.schedule_self();
        false
    }

    /// Schedules this process again: a yield when the budget ran out, or a second look
    /// at a message in flight (`pop`).
    pub(crate) fn schedule_self(&self) {
        schedule(self.cell);
    }

    /// The runtime this process runs on, if it has not been shut down.
    pub(crate) fn runtime(&self) -> Option<&Shared> {
        let h = self.prefix().header();
        if h.state.is_done() {
            return None;
        }
        // SAFETY: not done, so the runtime is alive (module rules). The reference is
        // used only while the process runs, i.e. before shutdown can mark it done.
        Some(unsafe { &*h.rt })
    }
}

impl<M> Drop for Owner<M> {
    fn drop(&mut self) {
        release_ref(self.cell);
    }
}

// ===== running =====

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
        if h.signalled.load(Ordering::Acquire) {
            let pending = h
                .bonds
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .and_then(|b| b.pending.clone());
            if let Some(reason) = pending {
                self.exit(reason);
                return RunOutcome::Exited;
            }
        }
        // Dropping this waker would do nothing (it holds no reference, see [`waker`])
        // but through an indirect call, on every poll: it is not dropped.
        let waker = std::mem::ManuallyDrop::new(waker(h.pid));
        let mut cx = TaskContext::from_waker(&waker);
        // SAFETY: we set `RUNNING`, so the stage is ours; the cell is live (`Task`).
        let poll = unsafe { (h.vtable.poll)(self.0, &mut cx) };
        match poll {
            Poll::Pending => match h.state.transition_to_idle() {
                TransitionToIdle::Idle => RunOutcome::Idle,
                TransitionToIdle::Reschedule => RunOutcome::Reschedule(self),
            },
            Poll::Ready(reason) => {
                self.exit(reason);
                RunOutcome::Exited
            }
        }
    }

    /// The exit sequence, in this order:
    /// 1. mark the process `exiting`: no new name, monitor or link attaches to it;
    /// 2. release its registered name;
    /// 3. send the exit signal to every linked process (outside our bonds lock: the
    ///    receiver's lock is taken, and no thread ever holds two bonds locks), then the
    ///    `Down` of every monitor (under our lock: `monitor.rs`); so a `Down` seen means
    ///    the link signals have been applied;
    /// 4. retire the slot: the pid stops resolving, so no new message or wake-up can
    ///    reach the process (we keep a count for ourselves);
    /// 5. mark the state `DONE`, so in-flight wake-ups do nothing;
    /// 6. drop the future (its locals, its `Context`: the owner reference);
    /// 7. release our count; the last reference frees the cell and its mailbox.
    fn exit(self, reason: ExitReason) {
        let h = self.header();
        let slot = table::slot(h.pid.index).expect("live process has a slot");
        let closed = h.gate.close();
        if closed.registered {
            // SAFETY: the process is not done yet (we are running it), so its runtime
            // is alive (module rules).
            let rt = unsafe { &*h.rt };
            rt.registry.remove_pid(h.pid);
        }
        if closed.has_bonds {
            signal_bonds(h, &reason);
        }
        slot.word.retire();
        h.state.transition_to_done();
        let drop_future = h.vtable.drop_future;
        EXIT_REASON.with(|r| *r.borrow_mut() = Some(reason));
        // SAFETY: we were the running worker and the process is now done: nobody else
        // polls or drops the future.
        unsafe { drop_future(self.0) };
        EXIT_REASON.with(|r| r.borrow_mut().take());
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
            signal_bonds(h, &ExitReason::Killed);
        }
        h.state.transition_to_done();
        let drop_future = h.vtable.drop_future;
        // SAFETY: no worker runs (they are joined) and the state is done: no one else
        // polls or drops this future.
        unsafe { drop_future(cell) };
        release_slot(slot, cell);
    }
}

/// Step 3 of the exit (and of a shutdown's discard): the exit signal to every linked
/// process, then a `Down` to every monitor. User code runs here (`From<Down>`,
/// `From<Exit>`): a panic in it loses that one notification, never the exit. Wakers that
/// watchers hand back are woken after our lock is released, so no foreign code runs
/// under it.
fn signal_bonds(h: &Header, reason: &ExitReason) {
    let links = {
        let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        bonds.as_mut().map(|b| std::mem::take(&mut b.links))
    };
    for to in links.into_iter().flatten() {
        signal(to, h.pid, reason.clone(), Kind::Link);
    }
    let mut wake = Vec::new();
    {
        // Under the lock, so that a `demonitor` after us finds every `Down` already
        // delivered (`monitor.rs`).
        let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        let watchers = bonds.as_mut().map(|b| std::mem::take(&mut b.watchers));
        for watcher in watchers.into_iter().flatten() {
            let down = Down {
                reference: watcher.reference(h.pid),
                pid: crate::ProcessId(h.pid),
                reason: reason.clone(),
            };
            if let Ok(Some(waker)) = catch_panic(|| (watcher.notify)(down)) {
                wake.push(waker);
            }
        }
    }
    for waker in wake {
        waker.wake();
    }
}

thread_local! {
    /// The reason of the process whose future this thread is dropping at its exit.
    static EXIT_REASON: std::cell::RefCell<Option<ExitReason>> =
        const { std::cell::RefCell::new(None) };
}

/// While a process's future is dropped at its exit, the reason it exits with; `None`
/// elsewhere (and during shutdown). Lets a future that reports its own end (the root
/// of `block_on`) report the reason of an exit signal.
pub(crate) fn exit_reason_of_dropping() -> Option<ExitReason> {
    EXIT_REASON.with(|r| r.borrow().clone())
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
        let cell = NonNull::new(slot.cell.load(Ordering::Acquire)).expect("published");
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

#[cfg(test)]
mod tests {
    //! Small runtime runs that exercise every `unsafe` path of this module (spawn, send,
    //! wake, exit, free by the last sender, free by the owner, shutdown of blocked
    //! processes), sized for Miri.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::{Context, ExitReason, Runtime};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn spawn_send_exit_and_shutdown() {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Runtime::builder().threads(2).build().unwrap();
        let d = drops.clone();
        let r = rt.block_on(move |mut cx: Context<u32>| async move {
            let me = cx.pid();
            // Children that echo, exit, and leave messages behind.
            for i in 0..4 {
                let g = Counted(d.clone());
                let child = cx.spawn(move |mut c: Context<Counted>| async move {
                    let _g = g;
                    let _first = c.recv().await;
                    me.send(i);
                });
                child.send(Counted(d.clone()));
                child.send(Counted(d.clone())); // never received: freed with the cell
            }
            let mut sum = 0;
            for _ in 0..4 {
                sum += cx.recv().await;
            }
            // A child that panics.
            fn boom() {
                panic!("miri panic")
            }
            let p = cx.spawn(|_c: Context<()>| async { boom() });
            while p.is_alive() {
                cx.yield_now().await;
            }
            assert!(p.try_send(()).is_err());
            // Children blocked forever: ended by shutdown.
            for _ in 0..3 {
                let g = Counted(d.clone());
                cx.spawn(move |mut c: Context<u8>| async move {
                    let _g = g;
                    c.recv().await;
                });
            }
            sum
        });
        assert_eq!(r, Ok(6));
        drop(rt);
        // 4 guards + 8 messages + 3 blocked guards.
        assert_eq!(drops.load(Ordering::SeqCst), 15);
    }

    #[test]
    fn links_trapped_exits_and_kill() {
        use crate::{Down, Exit};
        #[derive(Debug)]
        enum Msg {
            Exit(Exit),
            Down(Down),
        }
        impl From<Exit> for Msg {
            fn from(e: Exit) -> Msg {
                Msg::Exit(e)
            }
        }
        impl From<Down> for Msg {
            fn from(d: Down) -> Msg {
                Msg::Down(d)
            }
        }
        let rt = Runtime::builder().threads(2).build().unwrap();
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            // A trapped exit is pushed through the trap function of our own cell.
            cx.trap_exit(true);
            let a = cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
            let Msg::Exit(e) = cx.recv().await else {
                panic!("expected an exit")
            };
            assert_eq!((e.from, e.reason), (a.id(), ExitReason::Shutdown));
            // Kill ends a waiting, trapping process; its monitor says Killed.
            let (b, _) = cx.spawn_monitor(|mut c: Context<Msg>| async move {
                c.trap_exit(true);
                while let Msg::Exit(_) = c.recv().await {}
            });
            cx.exit(b, ExitReason::Kill);
            let Msg::Down(d) = cx.recv().await else {
                panic!("expected a down")
            };
            assert_eq!(d.reason, ExitReason::Killed);
            // A link to a process that is gone: noproc, as a message.
            cx.link(b);
            let Msg::Exit(e) = cx.recv().await else {
                panic!("expected an exit")
            };
            e.reason
        });
        assert_eq!(r, Ok(ExitReason::Noproc));
    }

    #[test]
    fn a_stream_to_a_process_that_exits_loses_nothing() {
        // Sends past `STREAM_AFTER` keep one table count on their receiver until the
        // poll ends. The receiver exits mid-stream here (on the other worker) or after
        // it (on one): every message is received, handed back or dropped with the
        // cell, once the kept count goes back.
        for threads in [1, 2] {
            let drops = Arc::new(AtomicUsize::new(0));
            let rt = Runtime::builder().threads(threads).build().unwrap();
            let d = drops.clone();
            let r = rt.block_on(move |cx: Context<()>| async move {
                let child = cx.spawn(|mut c: Context<Counted>| async move {
                    c.recv().await;
                    c.recv().await;
                });
                let mut accepted = 0;
                for _ in 0..20 {
                    if child.try_send(Counted(d.clone())).is_ok() {
                        accepted += 1;
                    }
                }
                while child.is_alive() {
                    cx.yield_now().await;
                }
                for _ in 0..6 {
                    assert!(child.try_send(Counted(d.clone())).is_err());
                }
                accepted
            });
            assert!(r.unwrap() >= 2);
            drop(rt);
            assert_eq!(drops.load(Ordering::SeqCst), 26, "threads = {threads}");
        }
    }

    #[test]
    fn a_message_dropped_with_a_kept_cell_may_stream() {
        // Rule 3 of the stream cache: the kept count of a process that streamed to
        // itself frees its cell after the poll, and the `Drop` of the messages left in
        // it streams to another process, which keeps a count again.
        struct Bomb(crate::Pid<u8>);
        impl Drop for Bomb {
            fn drop(&mut self) {
                for _ in 0..6 {
                    self.0.send(1);
                }
            }
        }
        let rt = Runtime::builder().threads(1).build().unwrap();
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let me = cx.pid();
            let sink = cx.spawn(move |mut c: Context<u8>| async move {
                let mut n = 0;
                while n < 36 {
                    n += u32::from(c.recv().await);
                }
                me.send(n);
            });
            cx.spawn(move |c: Context<Bomb>| async move {
                for _ in 0..6 {
                    c.pid().send(Bomb(sink));
                }
            });
            cx.recv().await
        });
        assert_eq!(r, Ok(36));
    }

    #[test]
    fn links_and_monitors_cost_an_idle_process_one_word() {
        // Everything links, monitors, trap_exit and exit signals need is behind one
        // lazily boxed record: the header stays 64 bytes.
        assert_eq!(std::mem::size_of::<super::Header>(), 64);
        assert_eq!(
            std::mem::size_of::<std::sync::Mutex<Option<Box<super::Bonds>>>>(),
            16
        );
    }

    #[test]
    fn a_senders_fields_are_the_first_48_bytes_of_the_cell() {
        // The layout of the module docs: the queue's tail and the header's `state` and
        // `rt` come first, within 48 bytes; the exit's fields, the queue's head and the
        // future follow.
        use super::{GAP_OFFSET, Header, Prefix};
        use std::mem::offset_of;
        assert_eq!(
            std::mem::align_of::<super::Cell<std::future::Ready<()>, u64>>(),
            16
        );
        assert!(GAP_OFFSET + offset_of!(Header, state) + 8 <= 48);
        assert!(GAP_OFFSET + offset_of!(Header, rt) + 8 <= 48);
        assert!(GAP_OFFSET + offset_of!(Header, gate) >= 64);
        assert_eq!(std::mem::size_of::<Prefix<u64>>(), 112);
    }

    #[test]
    fn a_spawn_link_whose_closure_panics_leaks_nothing() {
        // The closure runs before the process is published: its panic unwinds through
        // `spawn`'s `Undo`, which must drop the header's boxed bonds (Miri checks leaks).
        let rt = Runtime::builder().threads(1).build().unwrap();
        let r = rt.block_on(|cx: Context<()>| async move {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cx.spawn_link(|_c: Context<()>| -> std::future::Ready<()> { panic!("closure") })
            }));
            built.is_err()
        });
        assert_eq!(r, Ok(true));
    }

    #[test]
    fn a_context_and_pid_kept_by_a_panicking_closure_stay_harmless() {
        // The closure may keep what `spawn` handed it before it panics: its pid must
        // never name the slot's next process, and its `Context` must keep the cell
        // allocated until it is dropped (Miri checks the use-after-free).
        let rt = Runtime::builder().threads(1).build().unwrap();
        let r = rt.block_on(|cx: Context<()>| async move {
            let mut kept: Option<(Context<u64>, crate::Pid<u64>)> = None;
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cx.spawn(|c: Context<u64>| -> std::future::Ready<()> {
                    let pid = c.pid();
                    kept = Some((c, pid));
                    panic!("closure")
                })
            }));
            assert!(built.is_err());
            let (kept_cx, kept_pid) = kept.take().unwrap();
            // The next spawn on this thread reuses the slot (the free-index cache is LIFO).
            let next = cx.spawn(|mut c: Context<u64>| async move {
                c.recv().await;
            });
            assert_eq!(next.raw.index, kept_pid.raw.index, "the slot was reused");
            let stale = kept_pid.try_send(7).is_err();
            assert!(next.try_send(1).is_ok());
            drop(kept_cx);
            stale
        });
        assert_eq!(r, Ok(true));
    }

    #[test]
    fn root_panic_is_its_exit_reason() {
        let rt = Runtime::builder().threads(1).build().unwrap();
        let r = rt.block_on(|_cx: Context<()>| async { panic!("root") });
        assert_eq!(r, Err::<(), _>(ExitReason::Panic("root".into())));
    }

    /// Counts its drop, then panics.
    struct Bomb(Arc<AtomicUsize>);
    impl Drop for Bomb {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("bomb");
        }
    }

    #[test]
    fn messages_whose_drop_panics_are_dropped_one_at_a_time() {
        // Two saved by a selective receive (the save area's drop) and two left queued
        // (the queue's drop when the cell is freed): each is dropped, none aborts.
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Runtime::builder().threads(1).build().unwrap();
        let d = drops.clone();
        let r = rt.block_on(move |mut cx: Context<crate::Down>| async move {
            let (child, _) = cx.spawn_monitor(|mut c: Context<Option<Bomb>>| async move {
                c.recv_match(|m| m.is_none()).await;
                std::future::pending::<()>().await
            });
            child.send(Some(Bomb(d.clone())));
            child.send(Some(Bomb(d.clone())));
            child.send(None);
            child.send(Some(Bomb(d.clone())));
            child.send(Some(Bomb(d.clone())));
            cx.exit(child, ExitReason::Shutdown);
            cx.recv().await.reason
        });
        assert_eq!(r, Ok(ExitReason::Shutdown));
        drop(rt);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn a_panic_payload_whose_drop_panics_is_an_exit_reason() {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Runtime::builder().threads(1).build().unwrap();
        let d = drops.clone();
        let r = rt.block_on(move |mut cx: Context<crate::Down>| async move {
            cx.spawn_monitor(move |_: Context<()>| async move {
                let payload: Result<(), Bomb> = Err(Bomb(d));
                if let Err(bomb) = payload {
                    std::panic::panic_any(bomb);
                }
            });
            cx.recv().await.reason
        });
        assert_eq!(
            r,
            Ok(ExitReason::Panic("<non-string panic payload>".into()))
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
