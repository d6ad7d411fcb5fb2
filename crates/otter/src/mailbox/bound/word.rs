//! The bound word's protocol, apart from the waiter list (`mailbox/bound.rs` has its
//! rules): what a sender and the receiver do to the word. Built for the loom models
//! too (`tests/loom_bound.rs`), which pair it with a waiter list of their own.
#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use crate::loom::{AtomicU32, Ordering};

/// An awaited send mutes its sender when the receiver's unbounded queue holds more
/// than this at the sender's yield point (module docs, "Muting"); the sender goes on
/// once the queue is at half.
#[cfg(not(miri))]
pub(crate) const MUTE_AT: usize = 1 << 16;
/// Under Miri, small enough for a unit test to flood a mailbox past it
/// (`process/cell/tests.rs`).
#[cfg(miri)]
pub(crate) const MUTE_AT: usize = 64;

/// How long a muted sender waits before it looks at the receiver again on its own
/// (module docs, "Muting": an exit the receiver's wake-up does not cover).
pub(crate) const MUTE_RECHECK: std::time::Duration = std::time::Duration::from_millis(10);

/// The capacity bits of the bound word; also the largest bound.
pub(crate) const CAPACITY: u32 = (1 << 30) - 1;
/// A sender waits for room (module docs).
pub(crate) const WAITING: u32 = 1 << 30;
/// The receiving end is gone: nothing will make room, and nothing is refused.
pub(crate) const CLOSED: u32 = 1 << 31;

/// Whether a send that respects the bound must refuse: `word` is the bound word of a
/// bounded mailbox and `len` its queue's length.
#[inline]
pub fn is_full(word: u32, len: usize) -> bool {
    word & CLOSED == 0 && len >= (word & CAPACITY) as usize
}

/// The sender's steps 1 and 2, the waiter list aside: `file` files the waker, then
/// `WAITING` is set with a `SeqCst` read-modify-write and a fence after it (the
/// sender's half of the Dekker pair; its retry's reads come after both).
pub fn flag_waiting(word: &AtomicU32, file: impl FnOnce()) {
    file();
    word.fetch_or(WAITING, Ordering::SeqCst);
    crate::loom::fence_after_rmw();
}

/// The receiver's side, the waiter list aside: whether it must wake the waiters
/// (`WAITING` was set and the queue is at half; `WAITING` is then cleared).
pub fn drained(word: &AtomicU32, len: impl FnOnce() -> usize) -> bool {
    crate::loom::full_fence();
    let w = word.load(Ordering::Relaxed);
    // A capacity of 0 is an unbounded mailbox with muted senders (module docs).
    let half = match (w & CAPACITY) as usize {
        0 => MUTE_AT / 2,
        capacity => capacity / 2,
    };
    if w & WAITING == 0 || len() > half {
        return false;
    }
    word.fetch_and(!WAITING, Ordering::SeqCst);
    true
}

/// `close`'s mark (`mailbox/bound.rs`): nothing is refused from now on.
pub fn closed(word: &AtomicU32) {
    word.fetch_or(CLOSED, Ordering::SeqCst);
}
