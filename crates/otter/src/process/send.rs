//! The send path: from `pid.send(m)` to the message in the mailbox and the receiver
//! scheduled.
//!
//! A send looks the pid up in the table (a count on its slot keeps the cell allocated:
//! `process/cell.rs`, lifetime rule 1), pushes the message into the mailbox queue
//! (`mailbox/queue.rs`), and wakes the receiver if the message found it idle
//! (`process/state.rs`); the receiver goes to this worker's LIFO slot (`scheduler.rs`).
//! A stream of sends keeps the counts it takes in a per-thread cache instead of taking
//! one per message (below).
//!
//! # Which send, when
//!
//! Every send of a process takes one unit of its turn's budget (`coop.rs`:
//! it is counted in the poll's send count, which the stream cache keeps anyway, so a
//! plain send costs nothing more). The two forms differ only in whether they may yield:
//!
//! * [`Pid::send`] never yields, never blocks, never fails: a reply, a request
//!   followed by a receive, a send from a plain thread or from `Drop`. A process whose
//!   plain sends spent its budget yields at its next receive. [`Pid::try_send`] is the
//!   same, but tells when the message was not delivered: the process has exited, or
//!   its mailbox is bounded and full.
//! * [`Context::send`](crate::Context::send)`(pid, m).await` sends the same way, then
//!   yields if the budget is spent (the turn is renewed in place if nothing else waits
//!   for the worker): a loop of sends that does not otherwise await, so that its
//!   receivers run in between, as the BEAM yields a sender inside `!` when its
//!   reductions run out. With plain sends such a loop holds its worker and queues every
//!   message before a receiver on that worker runs.
//!
//! On a bounded mailbox (`mailbox/bound.rs`) plain sends go beyond the bound; the
//! awaitable send waits for room, and [`Pid::try_send`] refuses. Both read the bound
//! only when the receiver's vtable says it has one ([`send_checked`]), so a send to an
//! unbounded mailbox pays a load of the vtable's flag and a branch, and plain sends
//! pay nothing.
//!
//! To a remote pid whose node's connection is busy (`dist/connection.rs`, "Limits"),
//! the same three: the plain send queues, `try_send` refuses with `Full`, the
//! awaitable send waits until the connection is not busy. Only the miss branch (the
//! table does not resolve the pid) asks, so a local send pays nothing for it.
//!
//! [`Pid::message_queue_len`] reads a receiver's backlog through the same lookup (or the
//! count the stream cache keeps), so a fan-out can look before each send.
//!
//! # Safety
//!
//! Every `unsafe` block rests on the rules of `process/cell.rs`.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use crate::error::TrySendError;
use crate::mailbox::bound::MUTE_AT;
use crate::pid::{Pid, ProcessId, RawPid};
use crate::process::cell::{Header, Prefix, ProcessRef, cell_of, release_slot};
use crate::process::harness::Task;
use crate::process::state::TransitionToScheduled;
use crate::process::table;
use crate::remote::{Busy, RemoteSend};
use crate::runtime::context;
use crate::tuning::{SPILL_AFTER_SENDS, SPILL_INTERVAL, STREAM_AFTER, STREAM_ENTRIES};

impl<M> Pid<M> {
    /// Sends `message`. Never blocks; if the process has exited the message is dropped,
    /// as with Erlang's `!`.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let got = rt.block_on(|mut cx: otter::Context<&'static str>| async move {
    ///     cx.pid().send("hello");
    ///     cx.recv().await
    /// });
    /// assert_eq!(got.unwrap(), "hello");
    /// ```
    // Always inlined, with the stream path of `send` below: a loop of sends to one
    // process then runs in the caller's loop body. Why: see
    // docs/design/0014-inlined-streaming-send.md.
    #[inline(always)]
    pub fn send(&self, message: M)
    where
        M: Send + 'static,
    {
        let _ = send(*self, message);
    }

    /// Sends `message` unless the process has exited ([`TrySendError::Exited`]) or its
    /// mailbox is bounded and full ([`TrySendError::Full`]); the message is handed back.
    /// Never blocks. A send to a mailbox that is not bounded is refused only if the
    /// process has exited. A send to a process of another node is refused with `Full`
    /// while the connection to that node is busy (Erlang's
    /// `erlang:send(Pid, Msg, [nosuspend])`; feature `dist`, the node's
    /// `dist_buf_busy_limit`). See
    /// [`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox) for
    /// what the bound refuses.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let pid = rt.handle().spawn(|_cx: otter::Context<u8>| async {});
    /// # let watcher = pid;
    /// // Once the process has exited, `try_send` tells us.
    /// while !watcher.has_exited() { std::thread::yield_now(); }
    /// assert_eq!(pid.try_send(1), Err(otter::TrySendError::Exited(1)));
    /// ```
    #[inline]
    pub fn try_send(&self, message: M) -> Result<(), TrySendError<M>>
    where
        M: Send + 'static,
    {
        send_checked(*self, message)
    }

    /// Whether the process is alive and not exiting (Erlang's `is_process_alive/1`).
    /// The answer can be stale as soon as it is returned. It is false:
    ///
    /// * from the moment the process's exit begins, before its links and monitors are
    ///   signalled: whoever has received its `Down` or its exit signal sees false;
    /// * once an exit signal that will end it has been sent (a `Kill`, or a reason it
    ///   does not trap): the sender sees false right after
    ///   [`Context::exit`](crate::Context::exit), as with Erlang's `exit(P, kill)`
    ///   followed by `is_process_alive(P)`.
    ///
    /// A process whose `is_alive` is false may still be running its exit; to wait for
    /// the exit's end (its pid no longer resolves), use [`Pid::has_exited`].
    ///
    /// ```
    /// use otter::{Context, Down, ExitReason, Runtime};
    /// struct Msg(Down);
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|mut cx: Context<Msg>| async move {
    ///     let (child, _) = cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
    ///     let before = child.is_alive();
    ///     cx.exit(child, ExitReason::Kill);
    ///     let after_kill = child.is_alive();
    ///     let Msg(_down) = cx.recv().await;
    ///     (before, after_kill, child.is_alive())
    /// });
    /// assert_eq!(r.unwrap(), (true, false, false));
    /// ```
    pub fn is_alive(&self) -> bool {
        self.id().is_alive()
    }

    /// Whether the process's exit is over: its name is released, its links and
    /// monitors are signalled and its pid no longer resolves, so a message to it is
    /// dropped ([`Pid::try_send`] hands it back), and a monitor or link set now gets
    /// `Noproc` at once. Once true, it stays true. The future's own locals are dropped
    /// right after, on the worker that ran the exit: a destructor's side effect may
    /// still be under way.
    ///
    /// Between [`Pid::is_alive`] turning false and this turning true the process is
    /// exiting; a loop that waits for a process to be gone waits on this one.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<()>| async move {
    ///     let child = cx.spawn(|_: otter::Context<u8>| async {});
    ///     while !child.has_exited() {
    ///         cx.yield_now().await;
    ///     }
    ///     child.try_send(1)
    /// });
    /// assert_eq!(r.unwrap(), Err(otter::TrySendError::Exited(1)));
    /// ```
    pub fn has_exited(&self) -> bool {
        self.id().has_exited()
    }

    /// How many messages wait in the process's queue: Erlang's
    /// `process_info(Pid, message_queue_len)`, `None` where Erlang's is `undefined` (the
    /// process has exited) or a `badarg` (a process of another node).
    ///
    /// Cheap enough to read before every send of a fan-out: two loads of positions the
    /// mailbox keeps anyway, and no read-modify-write when this worker's stream cache
    /// holds the pid (a process this poll has streamed to: module docs), else the
    /// lookup a send makes. Senders and the receiver count nothing.
    ///
    /// Unlike Erlang's, it is not exact: the receiver may take messages between the
    /// two loads, so the figure lies between the length at the end of the read and
    /// that plus what the receiver took during it; it is never negative. And it counts
    /// the queue only: messages a selective receive of the process looked at and left
    /// behind are counted by the process's own
    /// [`Context::message_queue_len`](crate::Context::message_queue_len), which is exact.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let r = rt.block_on(|cx: otter::Context<()>| async move {
    ///     // A process that never receives.
    ///     let idle = cx.spawn(|_: otter::Context<u32>| std::future::pending::<()>());
    ///     for i in 0..3 { idle.send(i); }
    ///     idle.message_queue_len()
    /// });
    /// assert_eq!(r.unwrap(), Some(3));
    /// ```
    #[inline]
    pub fn message_queue_len(&self) -> Option<usize> {
        queue_len(*self)
    }
}

impl ProcessId {
    /// Whether the process is alive and not exiting (see [`Pid::is_alive`]). A process
    /// of another node counts as alive while its node is connected.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let alive = rt.block_on(|cx: otter::Context<()>| async move { cx.pid().id().is_alive() });
    /// assert!(alive.unwrap());
    /// ```
    pub fn is_alive(&self) -> bool {
        if let Some(d) = crate::remote::of(self.0) {
            return d.is_connected(self.0);
        }
        crate::process::cell::is_alive(self.0)
    }

    /// Whether the process's exit is over (see [`Pid::has_exited`]). A process of
    /// another node counts as exited once its node is disconnected.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let gone = rt.block_on(|cx: otter::Context<()>| async move { cx.pid().id().has_exited() });
    /// assert!(!gone.unwrap());
    /// ```
    pub fn has_exited(&self) -> bool {
        if let Some(d) = crate::remote::of(self.0) {
            return !d.is_connected(self.0);
        }
        !table::slot(self.0.index).is_some_and(|s| s.word.is_alive(self.0.generation))
    }
}

// # The stream cache
//
// A send takes a table count and gives it back: two locked instructions around the
// mailbox's tail CAS. A process that streams to one receiver (`counting`), or spreads a
// stream over several (`counting receivers=60`), pays them on every message. So a
// worker keeps the counts a poll's streaming sends took until the poll ends: from the
// poll's `STREAM_AFTER + 1`-th send on, a send looks at the entry of `KEPT`
// (below) its pid's index picks (index mod `STREAM_ENTRIES`). If the
// entry holds the pid's count, the send only checks the slot's word (the pid still
// resolves) before it pushes; else it takes a count and keeps it there, giving back the
// count of the receiver the entry held before.
//
// Rules:
// 1. Only a worker keeps a count, and only on a process of its own runtime: the
//    runtime's shutdown joins its workers before it waits for counts
//    (`shutdown_processes`), and every count kept is given back by then.
// 2. The worker gives the counts back after every poll (`end_stream`, from
//    `Worker::run_task`) and at every turn renewed in place (`worker::renew_turn`),
//    and a send to another pid of the same entry gives that entry's back first. So a
//    cell outlives its process's exit by at most the rest of one turn of one sender, as
//    it does for a sender caught between its lookup and its release.
// 3. Each kept count is in exactly one entry, and an entry is emptied before its count
//    is released: the release may free a cell, whose messages' `Drop` may send. Such a
//    send may keep a count again; `end_stream` loops until none is kept.
// 4. The first `STREAM_AFTER` sends of a poll (all of a ring's or a ping-pong's) do
//    not look at the cache at all.
//
// Measured, and what was tried first: docs/design/0009-stream-cache.md (one entry),
// docs/design/0018-fan-out.md (several).

/// An entry of the stream cache: a pid and the table count this thread keeps on it, if
/// any (rules above).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stream {
    /// `RawPid::to_bits` of the pid; `u64::MAX` names none (index `u32::MAX` is past
    /// the table's end).
    last: u64,
    /// The slot and cell of `last` on which this thread holds a table count.
    held: Option<(&'static table::Slot, NonNull<Header>)>,
}

impl Stream {
    pub(crate) const NONE: Stream = Stream {
        last: u64::MAX,
        held: None,
    };
}

thread_local! {
    /// This thread's stream cache: its entries, one a pid index modulo
    /// `STREAM_ENTRIES`...
    static KEPT: [Cell<Stream>; STREAM_ENTRIES] =
        const { [const { Cell::new(Stream::NONE) }; STREAM_ENTRIES] };
    /// ...and which of them hold a table count, a bit each.
    static KEPT_HELD: Cell<u64> = const { Cell::new(0) };
}

/// Entry `i` of this thread's stream cache (`i < STREAM_ENTRIES`).
#[inline(always)]
fn kept(i: usize) -> Stream {
    KEPT.with(|k| k[i].get())
}

/// Puts `s`, which holds a count, in entry `i`; returns what the entry held.
#[inline]
fn replace_kept(i: usize, s: Stream) -> Stream {
    KEPT_HELD.with(|h| h.set(h.get() | 1 << i));
    KEPT.with(|k| k[i].replace(s))
}

/// Empties entry `i`; returns what it held.
#[inline]
fn take_kept(i: usize) -> Stream {
    KEPT_HELD.with(|h| h.set(h.get() & !(1 << i)));
    KEPT.with(|k| k[i].replace(Stream::NONE))
}

/// Which entries of this thread's stream cache hold a count, a bit each.
#[inline(always)]
fn kept_held() -> u64 {
    KEPT_HELD.with(Cell::get)
}

/// Gives back the counts the stream cache keeps, if any (rules 2 and 3). Called by the
/// worker after every poll; one load if the poll kept none.
#[inline]
pub(crate) fn end_stream() {
    loop {
        let held = kept_held();
        if held == 0 {
            return;
        }
        if let Some((slot, cell)) = take_kept(held.trailing_zeros() as usize).held {
            release_slot(slot, cell);
        }
    }
}

/// Puts `message` in `pid`'s mailbox and schedules it; hands it back if it exited.
///
/// Inlined into every caller (with [`Pid::send`]), and so is a send to a pid whose
/// count the stream cache keeps: in a send loop, that path is the caller's loop body,
/// with the message built in place, and everything else ([`send_first`]'s lookup,
/// [`stream_miss`], the wake-up) is a call.
/// Why inlined: docs/design/0014-inlined-streaming-send.md.
#[inline(always)]
pub(crate) fn send<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), M> {
    let sent = crate::coop::count_send();
    if sent > STREAM_AFTER {
        let spill = spills_at(sent);
        let i = pid.raw.index as usize % STREAM_ENTRIES;
        let e = kept(i);
        if e.last == pid.raw.to_bits()
            && let Some((slot, cell)) = e.held
        {
            if !slot.word.is_alive(pid.raw.generation) {
                return Err(message);
            }
            // SAFETY: the count the cache keeps holds the cell until `end_stream`
            // or the entry's reuse, after this call.
            unsafe { deliver_streamed(cell, message, spill) };
            return Ok(());
        }
        return stream_miss(pid, message, spill);
    }
    send_first(pid, message)
}

/// [`send`] for a send that respects a bounded mailbox's bound (`mailbox/bound.rs`):
/// refuses with `Full` when the receiver's mailbox is bounded and full, `Exited` when
/// the pid does not resolve. The same paths as `send`, with the bound's test before
/// each push.
#[inline(always)]
pub(crate) fn send_checked<M: Send + 'static>(
    pid: Pid<M>,
    message: M,
) -> Result<(), TrySendError<M>> {
    let sent = crate::coop::count_send();
    if sent > STREAM_AFTER {
        let spill = spills_at(sent);
        let i = pid.raw.index as usize % STREAM_ENTRIES;
        let e = kept(i);
        if e.last == pid.raw.to_bits()
            && let Some((slot, cell)) = e.held
        {
            if !slot.word.is_alive(pid.raw.generation) {
                return Err(TrySendError::Exited(message));
            }
            // SAFETY: the count the cache keeps holds the cell until `end_stream`
            // or the entry's reuse, after this call; a `Pid<M>` names a `Cell<_, M>`.
            if unsafe { is_full::<M>(cell) } {
                return Err(TrySendError::Full(message));
            }
            // SAFETY: as above.
            unsafe { deliver_streamed(cell, message, spill) };
            return Ok(());
        }
        return stream_miss_checked(pid, message, spill);
    }
    let Some(lookup) = ProcessRef::new(pid.raw) else {
        return not_local_checked(pid, message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops, after
    // this call; a `Pid<M>` names a `Cell<_, M>`.
    if unsafe { is_full::<M>(lookup.cell) } {
        return Err(TrySendError::Full(message));
    }
    // SAFETY: as above. No spill, as in `send_first`.
    unsafe { deliver(lookup.cell, message, false) };
    Ok(())
}

/// [`stream_miss`] for [`send_checked`].
#[inline(never)]
fn stream_miss_checked<M: Send + 'static>(
    pid: Pid<M>,
    message: M,
    spill: bool,
) -> Result<(), TrySendError<M>> {
    let Some(lookup) = ProcessRef::new(pid.raw) else {
        return not_local_checked(pid, message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops or moves
    // into the cache, after this call; a `Pid<M>` names a `Cell<_, M>`.
    let refused = unsafe { is_full::<M>(lookup.cell) };
    if refused {
        keep(pid.raw.index as usize % STREAM_ENTRIES, lookup);
        return Err(TrySendError::Full(message));
    }
    // SAFETY: as above.
    unsafe { deliver(lookup.cell, message, spill) };
    keep(pid.raw.index as usize % STREAM_ENTRIES, lookup);
    Ok(())
}

/// Whether the mailbox of `cell` is bounded and full (`mailbox/bound.rs`): the
/// vtable's flag, and only if it is set the bound word and the queue's length.
///
/// # Safety
///
/// `cell` is a `Cell<_, M>` and the caller holds a table count on it.
#[inline(always)]
unsafe fn is_full<M>(cell: NonNull<Header>) -> bool {
    // SAFETY: caller's contract.
    let h = unsafe { cell.as_ref() };
    // SAFETY: caller's contract.
    h.vtable.bounded && unsafe { is_full_slow::<M>(cell) }
}

/// The rest of [`is_full`], out of line.
///
/// # Safety
///
/// As for [`is_full`].
#[inline(never)]
unsafe fn is_full_slow<M>(cell: NonNull<Header>) -> bool {
    // SAFETY: caller's contract: a `Cell<_, M>`, whose prefix is `Prefix<M>`, held.
    let prefix = unsafe { cell_of::<Prefix<M>>(cell).as_ref() };
    let word = prefix.header().bound.load(Ordering::Acquire);
    crate::mailbox::bound::is_full(word, prefix.mailbox.len())
}

/// Steps 1 and 2 of the wait for room (`mailbox/bound.rs`) for the process woken by
/// `waker`, in `pid`'s mailbox; nothing if `pid` does not resolve (the retry says
/// `Exited`).
pub(crate) fn wait_for_room<M>(pid: Pid<M>, waker: &std::task::Waker) {
    if let Some(p) = ProcessRef::new(pid.raw) {
        let h = p.header();
        crate::mailbox::bound::wait_for_room(h.pid, &h.bound, waker);
    }
}

/// `send` among the first [`STREAM_AFTER`] sends of a poll (a ring's hop, a request,
/// a reply): a lookup that takes a table count and gives it back.
#[inline]
fn send_first<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), M> {
    let Some(lookup) = ProcessRef::new(pid.raw) else {
        return not_local(pid, message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops, after
    // this call. No spill: `sent` is at most `STREAM_AFTER`, below `SPILL_AFTER_SENDS`.
    unsafe { deliver(lookup.cell, message, false) };
    Ok(())
}

/// A streaming send to a pid whose entry of the cache does not hold its count: looks
/// the pid up, and keeps the count in the entry (rules above). It computes the entry
/// itself rather than take the caller's, so that the caller's inlined fast path does
/// not spill more registers for this call.
#[inline(never)]
fn stream_miss<M: Send + 'static>(pid: Pid<M>, message: M, spill: bool) -> Result<(), M> {
    let Some(lookup) = ProcessRef::new(pid.raw) else {
        return not_local(pid, message);
    };
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops or moves
    // into the cache, after this call.
    unsafe { deliver(lookup.cell, message, spill) };
    keep(pid.raw.index as usize % STREAM_ENTRIES, lookup);
    Ok(())
}

/// [`Pid::message_queue_len`]: through the count the stream cache keeps on `pid` if
/// it keeps one, else through a lookup's count.
#[inline]
fn queue_len<M>(pid: Pid<M>) -> Option<usize> {
    let e = kept(pid.raw.index as usize % STREAM_ENTRIES);
    if e.last == pid.raw.to_bits()
        && let Some((slot, cell)) = e.held
    {
        if !slot.word.is_alive(pid.raw.generation) {
            return None;
        }
        // SAFETY: the count the cache keeps holds the cell until `end_stream` or the
        // entry's reuse, after this call; a `Pid<M>` names a `Cell<_, M>` (`deliver`).
        let prefix = unsafe { cell_of::<Prefix<M>>(cell).as_ref() };
        return Some(prefix.mailbox.len());
    }
    let lookup = ProcessRef::new(pid.raw)?;
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops, after
    // this line; a `Pid<M>` names a `Cell<_, M>` (`deliver`).
    let prefix = unsafe { cell_of::<Prefix<M>>(lookup.cell).as_ref() };
    Some(prefix.mailbox.len())
}

/// The look of an awaited send that spent the budget (`mailbox/bound.rs`, "Muting"):
/// a process this poll has streamed to (the stream cache keeps a count on it) whose
/// unbounded queue is past [`MUTE_AT`](crate::mailbox::bound::MUTE_AT), if any. It
/// reads at most [`MUTE_LOOKS`] entries, the next after the one the thread's previous
/// look read: a fan-out over many receivers has each looked at within as many turns,
/// for the price of one receiver's queue ends (two loads) a turn.
#[cold]
#[inline(never)]
pub(crate) fn flooded() -> Option<RawPid> {
    thread_local! {
        static NEXT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    let held = kept_held();
    if held == 0 {
        return None;
    }
    let start = NEXT.with(std::cell::Cell::get);
    // The held entries from `start` on, then those before it.
    let mut rotated = held.rotate_right(start);
    for _ in 0..MUTE_LOOKS {
        if rotated == 0 {
            break;
        }
        let i = (rotated.trailing_zeros() + start) as usize % STREAM_ENTRIES;
        rotated &= rotated - 1;
        NEXT.with(|n| n.set((i as u32 + 1) % STREAM_ENTRIES as u32));
        let e = kept(i);
        if let Some((slot, cell)) = e.held {
            let pid = RawPid::from_bits(e.last);
            // SAFETY: the count the cache keeps holds the cell until `end_stream` or
            // the entry's reuse, after this call.
            if slot.word.is_alive(pid.generation) && unsafe { queue_past_mute(cell, MUTE_AT) } {
                return Some(pid);
            }
        }
    }
    None
}

/// Stream cache entries a muting look reads at most ([`flooded`]).
const MUTE_LOOKS: usize = 1;

/// Whether the unbounded queue of the process `cell` holds more than `limit` messages.
///
/// # Safety
///
/// The caller holds a table count on `cell`.
unsafe fn queue_past_mute(cell: NonNull<Header>, limit: usize) -> bool {
    // SAFETY: caller's contract.
    let h = unsafe { cell.as_ref() };
    // SAFETY: caller's contract.
    !h.vtable.bounded && unsafe { crate::process::cell::queue_len(cell) } > limit
}

/// Muting (`mailbox/bound.rs`, "Muting"), a muted sender's look: whether the sender
/// woken by `waker` keeps waiting for `pid`'s queue to drain to half of
/// [`MUTE_AT`](crate::mailbox::bound::MUTE_AT). It files itself as a waiter (the
/// protocol's steps 1 and 2) before its last look (step 3). Never for a bounded
/// mailbox (its bound rules) or a pid that no longer resolves.
#[cold]
#[inline(never)]
pub(crate) fn still_muted(pid: RawPid, waker: &std::task::Waker) -> bool {
    let Some(lookup) = ProcessRef::new(pid) else {
        return false;
    };
    let half = MUTE_AT / 2;
    // SAFETY: the count `lookup` holds keeps the cell allocated until it drops, after
    // this function.
    if !unsafe { queue_past_mute(lookup.cell, half) } {
        return false;
    }
    let h = lookup.header();
    crate::mailbox::bound::wait_for_room(h.pid, &h.bound, waker);
    // SAFETY: as above.
    unsafe { queue_past_mute(lookup.cell, half) }
}

/// A send to a pid the process table does not resolve: a process of another node
/// (`remote.rs`), or one that has exited (the message is handed back).
#[cold]
#[inline(never)]
fn not_local<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), M> {
    not_local_as(pid, message, Busy::Queue).map_err(|e| match e {
        TrySendError::Full(m) | TrySendError::Exited(m) => m,
    })
}

/// [`not_local`] for [`send_checked`]: a remote pid whose node's connection is busy
/// refuses with `Full` (`dist/connection.rs`, "Limits").
#[cold]
#[inline(never)]
fn not_local_checked<M: Send + 'static>(pid: Pid<M>, message: M) -> Result<(), TrySendError<M>> {
    not_local_as(pid, message, Busy::Refuse)
}

/// The awaitable send's retry to a remote pid whose node's connection was busy: sends
/// unless it is still busy, and then files `waker` to be woken once it is not
/// (`dist/connection.rs`, "Busy"), handing the message back as `Full`.
pub(crate) fn send_remote_or_wait<M: Send + 'static>(
    pid: Pid<M>,
    message: M,
    waker: &std::task::Waker,
) -> Result<(), TrySendError<M>> {
    not_local_as(pid, message, Busy::Wait(waker))
}

fn not_local_as<M: Send + 'static>(
    pid: Pid<M>,
    message: M,
    busy: Busy<'_>,
) -> Result<(), TrySendError<M>> {
    match crate::remote::of(pid.raw).map(|d| d.send(pid.raw, &message, busy)) {
        Some(RemoteSend::Sent) => Ok(()),
        Some(RemoteSend::Busy) => Err(TrySendError::Full(message)),
        Some(RemoteSend::Refused) | None => {
            crate::introspect::count_dead_send();
            Err(TrySendError::Exited(message))
        }
    }
}

/// Keeps `lookup`'s count in entry `i` of the stream cache if this thread is a worker
/// of the process's runtime (rule 1), and gives back the count the entry held; else
/// gives `lookup`'s back.
#[inline]
fn keep(i: usize, lookup: ProcessRef) {
    let h = lookup.header();
    if context::current_index(h.rt).is_none() {
        return;
    }
    let new = Stream {
        last: h.pid.to_bits(),
        held: Some((lookup.slot, lookup.cell)),
    };
    // The count moves into the cache, which releases it (`end_stream`, or the next
    // `keep` into this entry).
    std::mem::forget(lookup);
    // Rule 3: the old count is in no entry before it goes back.
    if let Some((slot, cell)) = replace_kept(i, new).held {
        release_slot(slot, cell);
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

/// Whether a poll's `sent`-th send spills its worker's LIFO slot
/// (`Shared::spill_lifo`): the `SPILL_AFTER_SENDS`-th, and every `SPILL_INTERVAL`-th
/// after it.
#[inline(always)]
fn spills_at(sent: u32) -> bool {
    sent & (SPILL_INTERVAL - 1) == SPILL_AFTER_SENDS
}

/// The receiver's side of a delivery: schedules it if the message found it idle, and
/// hands the LIFO slot to the local queue on the sends [`spills_at`] names.
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
            // SAFETY: the message moved it idle -> scheduled: it is ours to queue.
            rt.schedule(unsafe { Task::new(cell) });
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

#[cfg(test)]
mod tests {
    use super::{SPILL_AFTER_SENDS, SPILL_INTERVAL, spills_at};

    #[test]
    fn a_long_poll_spills_at_the_first_spill_and_every_interval_after() {
        let spills: Vec<u32> = (1..=3 * SPILL_INTERVAL + SPILL_AFTER_SENDS)
            .filter(|&n| spills_at(n))
            .collect();
        assert_eq!(
            spills,
            [0, 1, 2, 3].map(|k| k * SPILL_INTERVAL + SPILL_AFTER_SENDS)
        );
    }
}
