//! Receiving: plain, with a timeout, selective (Erlang's semantics), and keyed.
//!
//! A mailbox has two parts:
//! * the **queue** (`mailbox/queue.rs`), where senders append, lock-free;
//! * the **save area**, private to the receiving process: messages a selective receive
//!   looked at and skipped, in arrival order. Every message in the save area arrived
//!   before every message still in the queue.
//!
//! A plain [`Context::recv`](crate::Context::recv) takes the save area's oldest
//! message, else the queue's. A selective receive
//! ([`Context::recv_match`](crate::Context::recv_match)) scans the save area, then moves
//! queue messages into it one by one until one matches: unmatched messages keep their
//! order, and a receive that has to wait resumes its scan where it stopped, so one
//! receive never examines the same message twice. This is Erlang's `receive` with its save pointer;
//! like Erlang's, a receive for a message behind `n` others costs `O(n)`.
//!
//! # Keyed receive: beyond Erlang
//!
//! For messages that carry a key ([`Keyed`]: a sender's pid, a request id), the save
//! area keeps an index from key to the sequence numbers of the saved messages with that
//! key. [`Context::recv_key`](crate::Context::recv_key) looks the key up (`O(1)`
//! expected), and otherwise drains the queue into the save area, indexing as it goes,
//! until the key shows up. Each message is moved into the save area and indexed at most once, and taken at most once,
//! so taking `k` messages in any order costs `O(k)` in all: the seed's reverse-order
//! mailbox is linear where the BEAM is quadratic.
//!
//! The index is built on the first keyed receive (one pass over what is saved then) and
//! kept up to date from then on; taking a message another way leaves a stale entry that
//! the next lookup of that key skips. When stale entries outnumber live ones the index
//! is rebuilt, and when holes outnumber saved messages the save area is compacted; both
//! are paid for by the operations that made the garbage, so the costs above are
//! amortised bounds.
//!
//! # Bounded mailboxes
//!
//! A process spawned with [`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox)
//! has a bound on its queue (what it refuses and what it never refuses: there). The
//! receive side's part is one check per message taken (`Owner::pop`): an unbounded
//! mailbox's bound word is 0, a bounded one's may ask for waiting senders to be woken
//! (`mailbox/bound.rs`, the wake-up protocol).
//!
//! # Where each part lives
//!
//! This module holds the mailbox's parts, which import no process module: the queue,
//! the bound (`mailbox/bound.rs`), the save area and its key index
//! (`mailbox/saved.rs`, `mailbox/index.rs`). The receive operations, methods of a
//! process's [`Context`](crate::Context), are `process/receive.rs`.

pub(crate) mod bound;
pub(crate) mod index;
pub(crate) mod queue;
pub(crate) mod saved;

use std::hash::Hash;

/// A message type with a key for [`Context::recv_key`](crate::Context::recv_key).
///
/// ```
/// use otter::{Keyed, Pid};
/// enum Msg { Done(Pid<Msg>), Other }
/// impl Keyed for Msg {
///     type Key = Pid<Msg>;
///     fn key(&self) -> Option<Pid<Msg>> {
///         match self { Msg::Done(p) => Some(*p), Msg::Other => None }
///     }
/// }
/// ```
pub trait Keyed {
    /// The key type.
    type Key: Hash + Eq + Send + 'static;
    /// The message's key, if it has one. Must return the same key every time.
    fn key(&self) -> Option<Self::Key>;
}
