//! The mailbox's signal queue: unbounded, many producers, one consumer, messages inline.
//!
//! # Shape
//!
//! A linked list of blocks of [`BLOCK_CAP`] slots (the design of crossbeam-channel's
//! `list` flavour, reduced to a single consumer). Every message is moved into a slot of
//! the current block: nothing is boxed per message, and one block allocation is shared
//! by `BLOCK_CAP` messages. The first block is allocated by the first push, so an idle
//! process that was never sent anything owns no block at all (the `memory` workload).
//!
//! Positions are counted in *laps* of `LAP = BLOCK_CAP + 1`: offsets `0..BLOCK_CAP` name
//! slots, and the extra offset `BLOCK_CAP` means "the next block is being installed;
//! wait". Position `p` lives in block number `p / LAP` at slot `p % LAP`.
//!
//! # Protocol and invariants
//!
//! 1. A producer reserves position `p` by a compare-and-swap of `tail_index` from `p`
//!    to `p + 1`. It dereferences the block only after that CAS succeeds: a failed CAS
//!    means its `tail_block` read may be stale, and nothing was touched.
//! 2. The producer that reserves the last slot of a block (offset `BLOCK_CAP - 1`)
//!    installs the next block before writing its message: it stores `tail_block`, then
//!    moves `tail_index` past the marker offset, then stores the old block's `next`.
//!    Producers that meanwhile read the marker offset spin until the install is visible.
//! 3. A producer writes the value and then sets the slot's `ready` flag (`Release`).
//!    That store is its last access to the block.
//! 4. The consumer reads slots in position order and only after seeing `ready`
//!    (`Acquire`). A slot reserved but not yet ready reads as [`TryPopError::InFlight`],
//!    never as [`TryPopError::Empty`]: its producer may already have decided not to wake
//!    the receiver (the reservation, not the `ready` store, is the event of the wake-up
//!    protocol in `process/state.rs`), so the receiver must look again, and FIFO order
//!    per queue holds because it takes nothing past that slot meanwhile. `Empty` means
//!    that no position at or after the head was reserved when the consumer last loaded
//!    `tail_index`.
//! 5. The consumer leaves a block after taking its last slot, and from then on owns it
//!    (to recycle or free, rule 7). By (3) every producer that reserved a slot in it
//!    has finished with it, and by (2) `next` was stored before the last slot's
//!    `ready`, so the consumer can follow it without waiting.
//! 6. The very first block is installed by the producer that wins the CAS of
//!    `tail_block` from null; it also publishes the block in `head_block` for the
//!    consumer, which is the only other writer of `head_block`.
//! 7. A block the consumer has left is recycled, not freed, if the consumer keeps up
//!    (below) and the queue's `spare` is empty: the consumer clears its `ready` flags
//!    and `next`, then stores it in `spare` by a compare-and-swap from null
//!    (`Release`). A producer about to install a block takes the spare by a swap to
//!    null (`Acquire`) and only then uses it; a spare it did not use goes back the same
//!    way, or is freed. Whoever holds the pointer owns the block, and ownership moves
//!    only by those atomic exchanges, so no block is used by two owners (no ABA: the
//!    pointer is never compared while in use).
//!
//! Recycling matters because the producer allocates and the consumer frees: on
//! different threads, glibc's allocator serialises them on its arena lock. The cost is
//! at most one extra block per mailbox that ever filled one. The consumer recycles only
//! while it keeps up, within [`RECYCLE_WITHIN`] positions of the tail it last saw (a
//! ring, a ping-pong: one block goes round and stays hot in both caches); a consumer
//! far behind a stream frees the block instead: the producer would write, thousands of
//! messages ahead, a block left dirty in the consumer's cache, and each give-back takes
//! the producers' tail line (where `spare` sits) from them. For the same reason a
//! producer looks at `spare` before it swaps: an empty spare costs it no write.
//! Why, with the figures: docs/design/0002-mailbox-blocks-and-recycling.md.
//!
//! 8. The consumer keeps `tail_seen`, a copy of `tail_index` from its last look. While
//!    `head_index` is behind it, positions up to it have been reserved, and the consumer
//!    reads their slots as in (4). When it catches up, it loads `tail_index` again before
//!    touching the block, and equal means empty: no slot is even reserved. A stale
//!    load can only miss a reservation whose producer will still wake the receiver: the
//!    load comes after the fence that follows the receiver's `transition_to_running`, and
//!    the wake-up protocol (`process/state.rs`) makes the reservation of any producer
//!    that skipped the wake-up visible to it.
//!    Whenever `head_index < tail_seen`, the head's slot is reserved, so a pop that finds
//!    it not ready reports `InFlight` without looking at the tail (4).
//!    `tail_seen` moves only once `head_block` is seen non-null, so a pop below it
//!    needs no null check: a reservation can be visible before the first block's
//!    install (6), and such a look leaves `tail_seen` as it was and reports `InFlight`.
//!    "Catches up" is `head_index >= tail_seen`, not `==`: the look may find the tail at
//!    a block's marker offset (2), one past the block's last slot, and the head then
//!    skips the marker; with `==` the consumer would never look at the tail again.
//!    A receiver that empties its mailbox (a ring, a ping-pong) then checks the tail's
//!    line, which its sender has just written, instead of the next slot's, which may sit
//!    on a line untouched since the block's previous use; a streaming receiver looks
//!    at the tail once per batch it catches up with, not once per message.
//!    Measured: docs/design/0005-ring-hop-cost.md.
//!
//! `head_index`, `head_block` and `tail_seen` are the consumer's, accessed `Relaxed`.
//! They are atomics only because `pop` takes `&self`: for `head_block`, so that the one
//! publication in (6) needs no `unsafe`.
//!
//! # Safety
//!
//! The `unsafe` blocks rely on (1)–(8) and on the single-consumer contract of
//! [`Queue::pop`], which is `unsafe fn` for that reason. The loom model in
//! `tests/loom_mailbox.rs` checks the protocol with `BLOCK_CAP = 2`, and Miri runs the
//! unit tests at the bottom of this file.
#![allow(unsafe_code)]
#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;

use crate::loom::{AtomicPtr, AtomicUsize, Ordering, UnsafeCell, fence_after_rmw, spin_hint};

/// Why [`Queue::pop`] returned no message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryPopError {
    /// Nothing was reserved past the head at the consumer's last look at `tail_index`:
    /// a producer that reserves a slot from now on follows the wake-up protocol.
    Empty,
    /// The head's slot is reserved but its producer has not written it yet (rule 4):
    /// it will, within a few instructions unless its thread is preempted, and it may
    /// not wake the receiver, so the receiver must pop again.
    InFlight,
}

/// Slots per block. 31 keeps a block of 16-byte messages under 1 KiB (crossbeam uses the
/// same figure); under loom it shrinks to 2 so the models cross block boundaries.
/// Other sizes measured: docs/design/0002-mailbox-blocks-and-recycling.md.
#[cfg(not(loom))]
pub(crate) const BLOCK_CAP: usize = 31;
#[cfg(loom)]
pub(crate) const BLOCK_CAP: usize = 2;

/// Positions per block: the slots plus the "next block being installed" marker.
const LAP: usize = BLOCK_CAP + 1;

/// How close behind the producers (positions from the head to `tail_seen`) the consumer
/// must be for a block it leaves to be recycled (rule 7).
const RECYCLE_WITHIN: usize = crate::tuning::RECYCLE_WITHIN_BLOCKS * LAP;

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// 0 until the producer has written `value`, then 1. Reset to 0 only by the consumer,
    /// when it recycles the whole block (rule 7).
    ready: AtomicUsize,
}

struct Block<T> {
    next: AtomicPtr<Block<T>>,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    /// Makes a block the consumer has left fit for reuse: every slot empty, no `next`.
    /// Every value in it has been read out, so nothing needs dropping.
    fn reset(&self) {
        self.next.store(ptr::null_mut(), Ordering::Relaxed);
        for slot in &self.slots {
            slot.ready.store(0, Ordering::Relaxed);
        }
    }

    fn alloc() -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                ready: AtomicUsize::new(0),
            }),
        }))
    }
}

/// An unbounded MPSC queue of `T` stored inline in linked blocks. See the module docs.
///
/// Layout: the producers' fields first, then a gap `G`, then the consumer's fields at
/// least [`HEAD_DISTANCE`] bytes after the producers'. Every pop stores `head_index`,
/// every push CASes `tail_index`: on one cache line the two would bounce it between the
/// sender's and the receiver's cores on every message. With `head_index` 64 bytes after
/// `tail_index` and the queue 16-byte aligned, the 16 bytes of tail and the 24 of head
/// can never share a line (a process cell puts them 88 bytes apart, which needs no
/// alignment at all). Measured: docs/design/0003-cell-layout.md.
///
/// The gap need not be wasted: its owner may keep data there (`with_gap`, `gap`). A
/// process cell keeps its control block in it, so that a sender finds the receiver's
/// state right after the tail it CASes (`process/cell.rs`). `G` must be at least 40
/// bytes, which `with_gap` checks at compile time; the default is 40 bytes of padding.
#[repr(C)]
pub struct Queue<T, G = [u64; 5]> {
    tail_index: AtomicUsize,
    tail_block: AtomicPtr<Block<T>>,
    /// A block for the next install, recycled by the consumer (rule 7), or null. Rarely
    /// touched, so it sits with the tail rather than on the consumer's line.
    spare: AtomicPtr<Block<T>>,
    gap: G,
    head_index: AtomicUsize,
    head_block: AtomicPtr<Block<T>>,
    /// The consumer's copy of `tail_index` from its last look (rule 8).
    tail_seen: AtomicUsize,
    _owns: PhantomData<T>,
}

/// Least bytes from `tail_index` to `head_index` (see [`Queue`]'s layout note).
const HEAD_DISTANCE: usize = 64;

/// Bytes from the start of a [`Queue`] to its gap: the same for every `T` and `G` of
/// alignment 8 or less (the fields before it are three words).
pub const GAP_OFFSET: usize = 24;

// SAFETY: values of `T` are moved in by producers and out by the one consumer, so `T`
// crosses threads but is never shared: `T: Send` is all that is needed, as for
// `std::sync::mpsc::Sender<T>`. The protocol fields are atomics.
unsafe impl<T: Send, G: Send> Send for Queue<T, G> {}
// SAFETY: as above; `&Queue` only allows `push` (any thread) and the `unsafe` `pop`,
// whose caller guarantees a single consumer.
unsafe impl<T: Send, G: Sync> Sync for Queue<T, G> {}

impl<T, G> std::fmt::Debug for Queue<T, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl<T> Queue<T> {
    /// An empty queue with a gap of padding; allocates nothing. (Processes use
    /// `with_gap`; the unit tests and the loom model use this.)
    #[cfg_attr(not(any(test, loom)), allow(dead_code))]
    pub fn new() -> Self {
        Queue::with_gap([0; 5])
    }
}

impl<T, G> Queue<T, G> {
    /// An empty queue keeping `gap` between its producers' and its consumer's fields;
    /// allocates nothing.
    pub fn with_gap(gap: G) -> Self {
        const {
            assert!(
                std::mem::offset_of!(Self, head_index) - std::mem::offset_of!(Self, tail_index)
                    >= HEAD_DISTANCE
                    && std::mem::offset_of!(Self, tail_index) == 0
                    && std::mem::offset_of!(Self, gap) == GAP_OFFSET,
                "the gap must be at least 40 bytes, aligned to at most 8"
            )
        };
        Queue {
            tail_index: AtomicUsize::new(0),
            tail_block: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            gap,
            head_index: AtomicUsize::new(0),
            head_block: AtomicPtr::new(ptr::null_mut()),
            tail_seen: AtomicUsize::new(0),
            _owns: PhantomData,
        }
    }

    /// What the owner keeps in the gap.
    #[inline]
    pub fn gap(&self) -> &G {
        &self.gap
    }

    /// A block to install: the recycled spare if there is one (rule 7), else a new one.
    /// The load first: a swap on an empty spare would write the tail's line for nothing.
    fn take_block(&self) -> *mut Block<T> {
        if self.spare.load(Ordering::Relaxed).is_null() {
            return Block::alloc();
        }
        let b = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if b.is_null() { Block::alloc() } else { b }
    }

    /// Gives an empty, unpublished block to `spare`, or frees it if `spare` is taken.
    fn give_back(&self, block: *mut Block<T>) {
        if self
            .spare
            .compare_exchange(ptr::null_mut(), block, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: the caller owns `block` and it is reachable from nowhere else.
            drop(unsafe { Box::from_raw(block) });
        }
    }

    /// Appends `value`. Never blocks (it may spin for the few instructions another
    /// producer needs to install a block) and allocates at most one block per
    /// `BLOCK_CAP` pushes, none while the consumer keeps up (rule 7).
    ///
    /// The reservation (rule 1) is followed by a `SeqCst` fence (`fence_after_rmw`: free
    /// on x86-64, where the CAS is a locked instruction), before the value is written.
    /// It is the sender's half of the wake-up protocol (`process/state.rs`): the
    /// caller's loads after `push` are ordered after the reservation, and a consumer
    /// that loads `tail_index` after its own fence and misses it has published
    /// something the caller will see. Whatever the consumer finds at the reserved slot
    /// meanwhile reads as `InFlight` (rule 4), never as empty.
    ///
    /// Inlined, and only the common case: the first turn of `push_slow`'s loop when the
    /// slot is not a block's last and the block is installed; everything else is out of
    /// line, so that the send paths inlining it stay short.
    #[inline(always)]
    pub fn push(&self, value: T) {
        // The loop's first turn when it is the common one: a slot that is not the
        // block's last, in a block already installed.
        let tail = self.tail_index.load(Ordering::Acquire);
        let block = self.tail_block.load(Ordering::Acquire);
        let offset = tail % LAP;
        if !block.is_null()
            && offset + 1 < BLOCK_CAP
            && self
                .tail_index
                .compare_exchange_weak(tail, tail + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // The wake-up protocol's fence (see `push`'s docs).
            fence_after_rmw();
            // SAFETY: as in `push_slow`'s [1]-[3]: the CAS reserved position `tail` of
            // `block`, which stays live until our `ready` store.
            unsafe { write_slot(block, offset, value) };
            return;
        }
        self.push_slow(value);
    }

    /// `push`'s loop: the first block, the last slot of a block, a lost CAS.
    #[inline(never)]
    fn push_slow(&self, value: T) {
        let mut spare: *mut Block<T> = ptr::null_mut();
        let mut tail = self.tail_index.load(Ordering::Acquire);
        let mut block = self.tail_block.load(Ordering::Acquire);
        loop {
            let offset = tail % LAP;
            if offset == BLOCK_CAP {
                // Step (2) in progress elsewhere: wait for the new block.
                spin_hint();
                tail = self.tail_index.load(Ordering::Acquire);
                block = self.tail_block.load(Ordering::Acquire);
                continue;
            }
            if offset + 1 == BLOCK_CAP && spare.is_null() {
                // We may take the last slot: have the next block ready before the CAS so
                // the window in which others spin on the marker stays short.
                spare = self.take_block();
            }
            if block.is_null() {
                // Step (6): the first push ever installs the first block.
                let first = if spare.is_null() {
                    self.take_block()
                } else {
                    std::mem::replace(&mut spare, ptr::null_mut())
                };
                match self.tail_block.compare_exchange(
                    ptr::null_mut(),
                    first,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => self.head_block.store(first, Ordering::Release),
                    Err(_) => spare = first,
                }
                // Re-read in the usual order, index first: a block read before the index
                // may belong to an earlier lap than the index (found by the loom model).
                tail = self.tail_index.load(Ordering::Acquire);
                block = self.tail_block.load(Ordering::Acquire);
                continue;
            }
            match self.tail_index.compare_exchange_weak(
                tail,
                tail + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // The wake-up protocol's fence (see `push`'s docs).
                    fence_after_rmw();
                    if offset + 1 == BLOCK_CAP {
                        // Step (2): we own the last slot, so we install the next block.
                        let next = std::mem::replace(&mut spare, ptr::null_mut());
                        debug_assert!(!next.is_null());
                        self.tail_block.store(next, Ordering::Release);
                        self.tail_index.store(tail + 2, Ordering::Release);
                        // SAFETY: our CAS reserved a slot of `block`, so the consumer cannot
                        // free it before we set that slot's `ready` below (step 5).
                        unsafe { (*block).next.store(next, Ordering::Release) };
                    }
                    // SAFETY: [1] the CAS reserved position `tail`, so no other producer
                    // writes this slot; [2] the block is live until we set `ready` (step 5);
                    // [3] the consumer reads `value` only after `ready` (step 4).
                    unsafe { write_slot(block, offset, value) };
                    if !spare.is_null() {
                        // We own `spare` and never published it.
                        self.give_back(spare);
                    }
                    return;
                }
                Err(current) => {
                    tail = current;
                    block = self.tail_block.load(Ordering::Acquire);
                }
            }
        }
    }

    /// How many messages were in the queue when it was read: pushed (their positions
    /// reserved, rule 1) and not yet popped. Two loads and no read-modify-write: the
    /// head, then the tail, each converted from positions to messages (a block's marker
    /// offset holds none). By the consumer, exact at its load of the tail (the head is
    /// its own). By any other thread, an estimate: between the count at its load of the
    /// tail and that plus the messages popped between its two loads; never below zero.
    #[inline]
    #[allow(clippy::len_without_is_empty)] // emptiness is `pop`'s `Empty`
    pub fn len(&self) -> usize {
        // `Acquire`: the tail's load comes after the head's, so the tail read is at
        // least as far on as the head read (the head never passes the tail).
        let head = self.head_index.load(Ordering::Acquire);
        let tail = self.tail_index.load(Ordering::Acquire);
        messages_before(tail).saturating_sub(messages_before(head))
    }

    /// Takes the oldest message, or says why there is none (see [`TryPopError`]).
    ///
    /// # Safety
    ///
    /// Only one thread at a time may call `pop` (single consumer); the caller's exclusive
    /// ownership of the receiving end (`&mut` on the mailbox owner) ensures it.
    pub unsafe fn pop(&self) -> Result<T, TryPopError> {
        let index = self.head_index.load(Ordering::Relaxed);
        if index >= self.tail_seen.load(Ordering::Relaxed) {
            // Rule 8: every position we know of is taken; look at the tail before the
            // block, whose next slot may sit on a cache line nobody has touched lately.
            let tail = self.tail_index.load(Ordering::Acquire);
            if tail == index {
                return Err(TryPopError::Empty);
            }
            if self.head_block.load(Ordering::Acquire).is_null() {
                // Reserved, but the first block's install (rule 6) is not visible yet;
                // `tail_seen` stays, so the next pop looks again (rule 8).
                return Err(TryPopError::InFlight);
            }
            self.tail_seen.store(tail, Ordering::Relaxed);
        }
        // Rule 8: `head_block` was seen non-null before `tail_seen` last moved, and it
        // only ever moves to a block's `next`, which is never null when followed (5).
        let block = self.head_block.load(Ordering::Acquire);
        debug_assert!(!block.is_null());
        let offset = index % LAP;
        debug_assert!(offset < BLOCK_CAP);
        // SAFETY: the consumer frees a block only after leaving it (step 5), and we are
        // the only consumer (caller's contract), so `block` is live.
        let slots = unsafe { &(*block).slots };
        // SAFETY: `offset` is a slot, never the marker offset: the head starts at 0 and
        // steps over the marker when it leaves a block (`index + 2` below).
        let slot = unsafe { slots.get_unchecked(offset) };
        if slot.ready.load(Ordering::Acquire) == 0 {
            return Err(TryPopError::InFlight);
        }
        // SAFETY: `ready` was set after the value was written (step 3), and nobody else
        // reads or writes this slot again.
        let value = slot.value.with_mut(|v| unsafe { ptr::read(v.cast::<T>()) });
        if offset + 1 == BLOCK_CAP {
            // SAFETY: live as above; `next` was stored before this slot's `ready` (step 2).
            let next = unsafe { (*block).next.load(Ordering::Acquire) };
            debug_assert!(!next.is_null());
            self.head_block.store(next, Ordering::Relaxed);
            self.head_index.store(index + 2, Ordering::Relaxed);
            // Rule 7: recycle only while we keep up with the producers (`tail_seen` is
            // above `index` here: the slot we read was reserved).
            if self.tail_seen.load(Ordering::Relaxed) - index < RECYCLE_WITHIN {
                // SAFETY: every slot of `block` was reserved and made ready, so no
                // producer touches it again (step 5); we leave it now, so we own it.
                unsafe { (*block).reset() };
                self.give_back(block);
            } else {
                // SAFETY: as above, we own it; it is reachable from nowhere else.
                drop(unsafe { Box::from_raw(block) });
            }
        } else {
            self.head_index.store(index + 1, Ordering::Relaxed);
        }
        Ok(value)
    }
}

/// What [`Queue::stats`] reads.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Messages in the queue (as [`Queue::len`]).
    pub len: usize,
    /// Messages popped since the queue was made.
    pub popped: usize,
    /// Blocks allocated now: from the head's to the tail's, and the spare.
    pub blocks: usize,
    /// The bytes of one block.
    pub block_bytes: usize,
}

impl<T, G> Queue<T, G> {
    /// The queue's counts, read by any thread with loads only (introspection): the
    /// head, then the tail, as [`Queue::len`]; exact for the consumer, an estimate for
    /// any other thread.
    pub fn stats(&self) -> Stats {
        let head = self.head_index.load(Ordering::Acquire);
        let tail = self.tail_index.load(Ordering::Acquire);
        let mut blocks = if self.tail_block.load(Ordering::Relaxed).is_null() {
            0
        } else {
            (tail / LAP).saturating_sub(head / LAP) + 1
        };
        if !self.spare.load(Ordering::Relaxed).is_null() {
            blocks += 1;
        }
        Stats {
            len: messages_before(tail).saturating_sub(messages_before(head)),
            popped: messages_before(head),
            blocks,
            block_bytes: std::mem::size_of::<Block<T>>(),
        }
    }
}

/// Messages at positions before `p`: `BLOCK_CAP` a lap, none at the marker offset.
#[inline(always)]
fn messages_before(p: usize) -> usize {
    p / LAP * BLOCK_CAP + (p % LAP).min(BLOCK_CAP)
}

/// Writes `value` into slot `offset` of `block` and sets its `ready` flag (rule 3): the
/// producer's last access to the block.
///
/// # Safety
///
/// The caller's CAS reserved that slot of the live `block`, and nothing has written it.
#[inline(always)]
unsafe fn write_slot<T>(block: *mut Block<T>, offset: usize, value: T) {
    // SAFETY: caller's contract: the block is live until our `ready` store (rule 5).
    let slot = unsafe { &(*block).slots[offset] };
    // SAFETY: caller's contract: we are the slot's only accessor, and the consumer reads
    // `value` only after `ready` (rule 4).
    slot.value
        .with_mut(|v| unsafe { v.write(MaybeUninit::new(value)) });
    slot.ready.store(1, Ordering::Release);
}

impl<T, G> Drop for Queue<T, G> {
    fn drop(&mut self) {
        // `&mut self`: no producer is running, and every reserved slot is ready.
        let tail = self.tail_index.load(Ordering::Relaxed);
        let mut index = self.head_index.load(Ordering::Relaxed);
        let mut block = self.head_block.load(Ordering::Relaxed);
        if block.is_null() {
            block = self.tail_block.load(Ordering::Relaxed);
        }
        while index != tail {
            let offset = index % LAP;
            if offset == BLOCK_CAP {
                // SAFETY: `block` is live (never freed before we leave it) and no longer
                // reachable once we move on.
                let next = unsafe { (*block).next.load(Ordering::Relaxed) };
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(block) });
                block = next;
            } else {
                // SAFETY: positions head..tail were all written (no producer is mid-push
                // under `&mut self`) and not yet read.
                let slot = unsafe { &(*block).slots[offset] };
                // One at a time, each under `catch_unwind`: a message whose `Drop`
                // panics must not unwind past the rest (a second panic while unwinding
                // would abort); what a panicking drop did not get to is leaked.
                crate::unwind::catch_silently(|| {
                    // SAFETY: as above: the value is initialised and read exactly once.
                    slot.value
                        .with_mut(|v| unsafe { ptr::drop_in_place(v.cast::<T>()) });
                });
            }
            index += 1;
        }
        if !block.is_null() {
            // SAFETY: the last block, reached and left by nobody else.
            drop(unsafe { Box::from_raw(block) });
        }
        let spare = self.spare.load(Ordering::Relaxed);
        if !spare.is_null() {
            // SAFETY: the spare is owned by the queue (rule 7) and reachable from nowhere
            // else.
            drop(unsafe { Box::from_raw(spare) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;

    #[test]
    fn dropping_the_queue_drops_each_message_even_if_one_panics() {
        struct Bomb(Arc<StdAtomicUsize>);
        impl Drop for Bomb {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
                panic!("bomb");
            }
        }
        let drops = Arc::new(StdAtomicUsize::new(0));
        let q = Queue::new();
        // Across a block boundary, so the blocks are freed past the panics too.
        for _ in 0..BLOCK_CAP + 2 {
            q.push(Bomb(drops.clone()));
        }
        drop(q);
        assert_eq!(drops.load(Ordering::SeqCst), BLOCK_CAP + 2);
    }

    #[test]
    fn fifo_across_blocks() {
        let q = Queue::new();
        for i in 0..(BLOCK_CAP * 3 + 5) {
            q.push(i);
        }
        for i in 0..(BLOCK_CAP * 3 + 5) {
            // SAFETY: single consumer (this thread).
            assert_eq!(unsafe { q.pop() }.ok(), Some(i));
        }
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }.ok(), None);
    }

    #[test]
    fn recycled_blocks_come_back_empty() {
        // Drain each block before the next fills, so every install after the first two
        // takes the consumer's spare: a stale `ready` flag would pop a value twice.
        let q = Queue::new();
        let mut next = 0;
        for round in 0..6 {
            for i in 0..BLOCK_CAP + round {
                q.push(round * 1000 + i);
            }
            for i in 0..BLOCK_CAP + round {
                // SAFETY: single consumer (this thread).
                assert_eq!(unsafe { q.pop() }.ok(), Some(round * 1000 + i));
                next += 1;
            }
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }.ok(), None, "round {round}");
        }
        assert!(next > 3 * BLOCK_CAP);
        assert!(
            !q.spare.load(Ordering::Relaxed).is_null(),
            "no block was recycled"
        );
    }

    #[test]
    fn a_consumer_that_caught_up_sees_the_next_push() {
        // Rule 8: after a pop that found the queue empty (head caught up with
        // tail_seen), the next pop looks at the tail again, in and across blocks.
        let q = Queue::new();
        for i in 0..(BLOCK_CAP * 2 + 3) {
            // SAFETY: single consumer (this thread).
            assert_eq!(unsafe { q.pop() }.ok(), None);
            q.push(i);
            q.push(i + 1000);
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }.ok(), Some(i));
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }.ok(), Some(i + 1000));
        }
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }.ok(), None);
    }

    #[test]
    fn a_reserved_slot_reads_in_flight_until_written() {
        // Rule 4: a slot reserved and not yet written is `InFlight`, not `Empty`, both
        // when the consumer finds it by looking at the tail and when it already knew
        // of it (`head_index < tail_seen`).
        let q = Queue::new();
        // SAFETY: single consumer (this thread).
        assert_eq!(unsafe { q.pop() }, Err(TryPopError::Empty));
        q.push(10);
        // A producer's reservation of position 1, stopped before it writes the slot.
        assert_eq!(q.tail_index.fetch_add(1, Ordering::AcqRel), 1);
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Ok(10));
        for _ in 0..2 {
            // SAFETY: single consumer.
            assert_eq!(unsafe { q.pop() }, Err(TryPopError::InFlight));
        }
        // The producer finishes: it writes position 1 and sets `ready` (rule 3).
        let block = q.tail_block.load(Ordering::Acquire);
        // SAFETY: the block is live (the queue holds it) and position 1 is ours.
        let slot = unsafe { &(*block).slots[1] };
        // SAFETY: as above: nobody else writes this slot.
        slot.value
            .with_mut(|v| unsafe { v.write(MaybeUninit::new(11)) });
        slot.ready.store(1, Ordering::Release);
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Ok(11));
        // SAFETY: single consumer.
        assert_eq!(unsafe { q.pop() }, Err(TryPopError::Empty));
    }

    #[test]
    fn len_counts_pushed_and_not_popped_across_blocks() {
        let q = Queue::new();
        assert_eq!(q.len(), 0);
        let n = BLOCK_CAP * 3 + 5;
        for i in 0..n {
            q.push(i);
            assert_eq!(q.len(), i + 1);
        }
        for i in 0..n {
            // SAFETY: single consumer (this thread).
            assert_eq!(unsafe { q.pop() }.ok(), Some(i));
            assert_eq!(q.len(), n - i - 1);
        }
        q.push(7);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn empty_queue_allocates_nothing_and_drops() {
        let q: Queue<String> = Queue::new();
        // SAFETY: single consumer.
        assert!(unsafe { q.pop() }.ok().is_none());
        drop(q);
    }

    #[test]
    fn drop_releases_unread_messages() {
        struct Counted(Arc<StdAtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let drops = Arc::new(StdAtomicUsize::new(0));
        let q = Queue::new();
        let n = BLOCK_CAP * 2 + 3;
        for _ in 0..n {
            q.push(Counted(drops.clone()));
        }
        // SAFETY: single consumer.
        drop(unsafe { q.pop() }.ok());
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        drop(q);
        assert_eq!(drops.load(Ordering::Relaxed), n);
    }

    #[test]
    fn many_producers_keep_per_producer_order() {
        let producers = if cfg!(miri) { 3 } else { 4 };
        let per = if cfg!(miri) { 40 } else { 20_000 };
        let q = Arc::new(Queue::new());
        let handles: Vec<_> = (0..producers)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..per {
                        q.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = vec![0; producers];
        let mut got = 0;
        while got < producers * per {
            // SAFETY: this thread is the only consumer.
            if let Ok((p, i)) = unsafe { q.pop() } {
                assert_eq!(next[p], i, "producer {p} out of order");
                next[p] += 1;
                got += 1;
            } else {
                std::thread::yield_now();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: single consumer.
        assert!(unsafe { q.pop() }.ok().is_none());
    }
}
