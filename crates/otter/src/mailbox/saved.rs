//! The save area of selective receive: the messages a receive looked at and left, in
//! arrival order, each with a sequence number, and the index of their keys that keyed
//! receives build (`mailbox.rs`'s module docs: "Keyed receive"). Private to the
//! receiving process; the receive operations that use it are `process/receive.rs`.

use std::any::Any;
use std::collections::VecDeque;
use std::hash::Hash;

use super::Keyed;
use super::index::{Index, Seq};

/// The save area. See the module docs.
pub(crate) struct Saved<M> {
    /// `slots[i]` holds the message with sequence number `base + i`; `None` is a hole
    /// left by a message taken out of order.
    pub(crate) slots: VecDeque<Option<M>>,
    pub(crate) base: Seq,
    pub(crate) live: usize,
    pub(crate) index: Option<Box<dyn Any + Send>>,
    /// Indexes one message, and clears the index; set together with `index` by the
    /// first keyed receive, which knows `M: Keyed`.
    pub(crate) indexer: Option<IndexOps<M>>,
}

pub(crate) type IndexOps<M> = (
    fn(&mut (dyn Any + Send), &M, Seq),
    fn(&mut (dyn Any + Send)),
);

impl<M> Drop for Saved<M> {
    /// Drops the saved messages one at a time, each under `catch_unwind`: a message
    /// whose `Drop` panics must not leave the next one to be dropped while unwinding,
    /// which would abort the OS process.
    fn drop(&mut self) {
        while let Some(slot) = self.slots.pop_front() {
            if let Some(m) = slot {
                crate::unwind::catch_silently(move || drop(m));
            }
        }
    }
}

impl<M> Saved<M> {
    pub(crate) fn new() -> Saved<M> {
        Saved {
            slots: VecDeque::new(),
            base: 0,
            live: 0,
            index: None,
            indexer: None,
        }
    }

    pub(crate) fn end(&self) -> Seq {
        self.base + self.slots.len() as Seq
    }

    pub(crate) fn push(&mut self, m: M) -> Seq {
        let seq = self.end();
        if let (Some(ix), Some((index, _))) = (self.index.as_deref_mut(), self.indexer) {
            index(ix, &m, seq);
        }
        self.slots.push_back(Some(m));
        self.live += 1;
        seq
    }

    pub(crate) fn pop_front(&mut self) -> Option<M> {
        while let Some(front) = self.slots.pop_front() {
            self.base += 1;
            if let Some(m) = front {
                self.live -= 1;
                return Some(m);
            }
        }
        None
    }

    pub(crate) fn get(&self, seq: Seq) -> Option<&M> {
        let i = seq.checked_sub(self.base)?;
        self.slots.get(i as usize)?.as_ref()
    }

    pub(crate) fn take(&mut self, seq: Seq) -> Option<M> {
        let i = seq.checked_sub(self.base)? as usize;
        let m = self.slots.get_mut(i)?.take()?;
        self.live -= 1;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        if self.slots.len() > 2 * self.live + 32 {
            self.compact();
        }
        Some(m)
    }

    /// Drops the holes; sequence numbers are reassigned, so the index is rebuilt.
    pub(crate) fn compact(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        self.slots = slots.into_iter().filter(Option::is_some).collect();
        if self.index.is_some() {
            self.reindex();
        }
    }

    pub(crate) fn reindex(&mut self) {
        if let (Some(ix), Some((index, clear))) = (self.index.as_deref_mut(), self.indexer) {
            clear(ix);
            for (i, m) in self.slots.iter().enumerate() {
                if let Some(m) = m {
                    index(ix, m, self.base + i as Seq);
                }
            }
        }
    }
}

impl<M> std::fmt::Debug for Saved<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Saved")
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

pub(crate) fn clear_index<K: Hash + Eq + 'static + Send>(ix: &mut (dyn Any + Send)) {
    ix.downcast_mut::<Index<K>>()
        .expect("index type matches the mailbox's message type")
        .clear();
}

pub(crate) fn index_one<M: Keyed>(ix: &mut (dyn Any + Send), m: &M, seq: Seq) {
    let ix = ix
        .downcast_mut::<Index<M::Key>>()
        .expect("index type matches the mailbox's message type");
    if let Some(k) = m.key() {
        ix.insert(k, seq);
    }
}

pub(crate) fn take_indexed<M: Keyed>(saved: &mut Saved<M>, key: &M::Key) -> Option<M> {
    let mut boxed = saved.index.take()?;
    let found = lookup::<M>(saved, &mut boxed, key);
    saved.index = Some(boxed);
    let ix = saved
        .index
        .as_deref_mut()
        .and_then(|i| i.downcast_mut::<Index<M::Key>>())
        .expect("index type matches");
    let stale = ix.entries > 2 * saved.live + 64;
    let m = found.and_then(|seq| saved.take(seq));
    if stale {
        saved.reindex();
    }
    m
}

/// Pops `key`'s sequence numbers until one names a message still saved.
pub(crate) fn lookup<M: Keyed>(
    saved: &Saved<M>,
    boxed: &mut Box<dyn Any + Send>,
    key: &M::Key,
) -> Option<Seq> {
    let ix = boxed
        .downcast_mut::<Index<M::Key>>()
        .expect("index type matches");
    ix.take_first(key, |seq| saved.get(seq).is_some())
}
