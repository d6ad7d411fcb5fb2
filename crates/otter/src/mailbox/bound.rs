//! Bounded mailboxes: the bound word, and the senders waiting for room.
//!
//! A process spawned with [`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox)
//! has a bound on its queue. What the bound refuses, and what it never refuses, is
//! stated once, in [`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox);
//! this file is the mechanism.
//!
//! # The bound word
//!
//! The header's `bound` (`process/cell.rs`) is 0 for an unbounded mailbox and never
//! written then. For a bounded one: the capacity in the low 30 bits, and two flags.
//! `WAITING` is set by a sender about to wait for room, cleared by the receiver when it
//! wakes the waiters; `CLOSED` is set once, when the receiving end (the process's
//! `Context`) is dropped. A sender learns whether the mailbox is bounded from the
//! vtable (`VTable::bounded`, on the line it writes anyway) and reads this word only if
//! it is: an unbounded send never touches the receiver's line for it.
//!
//! A send that respects the bound ([`Pid::try_send`](crate::Pid::try_send), the
//! awaitable [`Context::send`](crate::Context::send)) refuses when the queue holds
//! `capacity` messages or more and `CLOSED` is not set. The test and the push are not
//! one atomic step: concurrent senders may each see room for the last slot, so the
//! queue may pass the bound by as many messages as there are senders in that window
//! (at most one per thread), as well as by the deliveries the bound never refuses.
//!
//! # Waiting for room: the wake-up protocol
//!
//! A sender that must wait (the awaitable send, on `Full`):
//! 1. files its waker under the receiver's pid in [`WAITERS`] (one entry per waker);
//! 2. sets `WAITING` with a `SeqCst` read-modify-write;
//! 3. tries the send again, and waits only if it is refused again.
//!
//! The receiver, after each message it takes from a bounded queue: a `SeqCst` fence,
//! then a load of the word; if `WAITING` is set and the queue has drained to half the
//! capacity, it clears `WAITING` and wakes every waiter filed under its pid.
//!
//! The fence and the sender's read-modify-write form a Dekker pair: either the receiver
//! sees `WAITING` (and wakes the sender once the queue is at half), or the sender's
//! retry (3) sees the receiver's take (the queue's head moved) and finds room. A waiter
//! filed after the receiver took the list sets `WAITING` again, after it, so the next
//! take sees it. The receiver's `Context` being dropped (at exit) sets `CLOSED` by a
//! read-modify-write and wakes every waiter: a sender whose step 2 came later reads
//! `CLOSED` in step 3 and stops waiting (its message goes where messages to an exiting
//! process go: dropped with the mailbox).
//!
//! Waking at half rather than at the first free slot wakes the senders in batches: with
//! a waiter parked, each take would otherwise wake it for one message. The cost: a
//! receiver that stops taking with its queue between half and full leaves its waiters
//! waiting, though a send would fit.
//!
//! An unbounded mailbox pays one load and a branch per message taken (the word is 0);
//! a bounded one pays the fence as well.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Waker;

use crate::pid::RawPid;

/// The capacity bits of the bound word; also the largest bound.
pub(crate) const CAPACITY: u32 = (1 << 30) - 1;
/// A sender waits for room (module docs).
const WAITING: u32 = 1 << 30;
/// The receiving end is gone: nothing will make room, and nothing is refused.
const CLOSED: u32 = 1 << 31;

/// Senders waiting for room, by receiver, in shards picked by the receiver's index.
/// Touched only by a sender about to wait and by a receiver that finds `WAITING` set.
static WAITERS: [Mutex<Vec<(u64, Waker)>>; SHARDS] = [const { Mutex::new(Vec::new()) }; SHARDS];
const SHARDS: usize = 16;

fn shard(pid: RawPid) -> std::sync::MutexGuard<'static, Vec<(u64, Waker)>> {
    WAITERS[pid.index as usize % SHARDS]
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether a send that respects the bound must refuse: `word` is the bound word of a
/// bounded mailbox and `len` its queue's length.
#[inline]
pub(crate) fn is_full(word: u32, len: usize) -> bool {
    word & CLOSED == 0 && len >= (word & CAPACITY) as usize
}

/// Steps 1 and 2 of the protocol for the sender woken by `waker`, waiting for room in
/// the mailbox of `pid`, whose bound word is `word`. The caller then tries again (3).
pub(crate) fn wait_for_room(pid: RawPid, word: &AtomicU32, waker: &Waker) {
    {
        let mut w = shard(pid);
        let bits = pid.to_bits();
        if !w.iter().any(|(p, k)| *p == bits && k.will_wake(waker)) {
            w.push((bits, waker.clone()));
        }
    }
    word.fetch_or(WAITING, Ordering::SeqCst);
}

/// The receiver's side, after it took a message from the bounded mailbox of `pid`
/// (the word is not 0); `len` reads its queue's length.
#[cold]
#[inline(never)]
pub(crate) fn taken(pid: RawPid, word: &AtomicU32, len: impl FnOnce() -> usize) {
    crate::loom::full_fence();
    let w = word.load(Ordering::Relaxed);
    if w & WAITING == 0 || len() > ((w & CAPACITY) / 2) as usize {
        return;
    }
    word.fetch_and(!WAITING, Ordering::SeqCst);
    wake(pid);
}

/// The receiving end of the bounded mailbox of `pid` is dropped: nothing is refused
/// from now on, and every waiter is woken (module docs).
pub(crate) fn close(pid: RawPid, word: &AtomicU32) {
    word.fetch_or(CLOSED, Ordering::SeqCst);
    wake(pid);
}

/// Wakes, outside the lock, every sender waiting for room in `pid`'s mailbox.
fn wake(pid: RawPid) {
    let bits = pid.to_bits();
    let woken: Vec<Waker> = {
        let mut w = shard(pid);
        let mut woken = Vec::new();
        w.retain(|(p, k)| {
            if *p == bits {
                woken.push(k.clone());
                false
            } else {
                true
            }
        });
        woken
    };
    for k in woken {
        k.wake();
    }
}
