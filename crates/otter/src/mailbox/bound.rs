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
//! 2. sets `WAITING` with a `SeqCst` read-modify-write, and a fence after it
//!    (`loom::fence_after_rmw`: free on x86, where the locked instruction is one);
//! 3. tries the send again, and waits only if it is refused again.
//!
//! The receiver, after each message it takes from a bounded queue: a `SeqCst` fence,
//! then a load of the word; if `WAITING` is set and the queue has drained to half the
//! capacity, it clears `WAITING` and wakes every waiter filed under its pid.
//!
//! The receiver's fence and the sender's read-modify-write with its fence form a Dekker
//! pair (the model `tests/loom_bound.rs`: without the sender's fence, loom finds the
//! lost wake-up the C++ model allows; what touches the word is `bound/word.rs`, built
//! for the models too): either the receiver
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
//!
//! # Muting
//!
//! An unbounded mailbox has no bound to refuse a send, but a flood of awaited sends
//! still slows its senders, as Pony mutes a sender to an overloaded actor: at the
//! yield point of an awaited send ([`Context::send`](crate::Context::send) whose turn's
//! budget is spent, once per turn), the sender looks at the queue of one of the
//! processes it streamed to in this poll (those the stream cache holds a count on,
//! `process/send.rs`; one a look, in turn); past [`MUTE_AT`] messages it is *muted*:
//! it waits, as a sender waits for room, until that receiver has drained its queue to
//! half that. A flood is a stream, so its receiver is in the cache. The message itself was delivered: a
//! mute delays the sender's next step, never a message. So a producer faster than its
//! consumer keeps at most about `MUTE_AT` messages queued (plus a turn's sends), where
//! it would otherwise queue all it can produce, and the consumer's own worker is not
//! shared with a producer that keeps filling the queue.
//!
//! * The wait is the protocol above with a capacity of 0: the muted sender files its
//!   waker and sets `WAITING` in a word that is otherwise 0, and looks again; the
//!   receiver, which loads the word after every take anyway, sees it non-zero and
//!   wakes its waiters at `MUTE_AT / 2`, then clears `WAITING` (the word is 0 again).
//! * **Only awaited sends are muted.** [`Pid::send`](crate::Pid::send) and
//!   `try_send` never wait, as Erlang's `!` never does; a bounded mailbox keeps its own
//!   rules (its bound is the limit, not `MUTE_AT`).
//! * **A sender whose own queue is past `MUTE_AT` is not muted**, and a muted sender
//!   that finds its own queue past it (any message to it wakes it) goes on: a process
//!   that must drain its own mail is never held by another's. So no cycle of processes
//!   that send to each other waits for ever: each muted member's own queue is short,
//!   and the one it waits for has a long one, which cannot hold all round a cycle.
//! * **The receiver's exit.** The receiving end's drop sets `CLOSED` only when the
//!   word is not 0, with no fence: an exit that races a sender's mute may miss it. A
//!   muted sender so also looks again every [`MUTE_RECHECK`] on its own, and goes on
//!   once the receiver is gone (or drained); the cost of the race is that delay, and
//!   the exit path pays nothing for muting.

use std::sync::Mutex;
use std::sync::atomic::AtomicU32;
use std::task::Waker;

use crate::pid::RawPid;

pub(crate) mod word;

pub(crate) use word::{CAPACITY, MUTE_AT, MUTE_RECHECK, is_full};
use word::{closed, drained, flag_waiting};

/// Senders waiting for room, by receiver, in shards picked by the receiver's index.
/// Touched only by a sender about to wait and by a receiver that finds `WAITING` set.
static WAITERS: [Mutex<Vec<(u64, Waker)>>; SHARDS] = [const { Mutex::new(Vec::new()) }; SHARDS];
const SHARDS: usize = 16;

fn shard(pid: RawPid) -> std::sync::MutexGuard<'static, Vec<(u64, Waker)>> {
    WAITERS[pid.index as usize % SHARDS]
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Steps 1 and 2 of the protocol for the sender woken by `waker`, waiting for room in
/// the mailbox of `pid`, whose bound word is `word`. The caller then tries again (3).
pub(crate) fn wait_for_room(pid: RawPid, word: &AtomicU32, waker: &Waker) {
    flag_waiting(word, || {
        let mut w = shard(pid);
        let bits = pid.to_bits();
        if !w.iter().any(|(p, k)| *p == bits && k.will_wake(waker)) {
            w.push((bits, waker.clone()));
        }
    });
}

/// The receiver's side, after it took a message from the bounded mailbox of `pid`
/// (the word is not 0); `len` reads its queue's length.
#[cold]
#[inline(never)]
pub(crate) fn taken(pid: RawPid, word: &AtomicU32, len: impl FnOnce() -> usize) {
    if drained(word, len) {
        wake(pid);
    }
}

/// The receiving end of the bounded mailbox of `pid` is dropped: nothing is refused
/// from now on, and every waiter is woken (module docs).
pub(crate) fn close(pid: RawPid, word: &AtomicU32) {
    closed(word);
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
