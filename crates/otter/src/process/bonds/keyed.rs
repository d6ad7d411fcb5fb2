//! A list of bonds found by key: a plain vector while it is short, with a position
//! index once it is long.
//!
//! Most processes have a few links and watchers, and a scan of a few is cheaper than a
//! hash; but a supervisor of 100,000 children, or a server that 100,000 callers wait
//! on, must not pay a scan of all of them for each one that comes or goes (that is
//! quadratic; measured in docs/design/0030).
//!
//! # Invariants
//!
//! * Past [`INDEX_AT`] items the index maps every item's key to its position; it is
//!   dropped when the list is emptied ([`Keyed::take`]).
//! * Removal swaps the last item into the hole (order is not kept: none of the users
//!   needs it, as Erlang promises no order between the signals of different bonds).

use std::collections::HashMap;
use std::hash::Hash;

/// The length from which a [`Keyed`] keeps an index.
pub(crate) const INDEX_AT: usize = 32;

/// What a [`Keyed`] finds its items by.
pub(crate) trait Key {
    /// The key's type.
    type K: Copy + Eq + Hash;
    /// This item's key.
    fn key(&self) -> Self::K;
}

/// A vector of items with distinct keys (module docs).
#[derive(Debug)]
pub(crate) struct Keyed<T: Key> {
    items: Vec<T>,
    /// Boxed: one word in every process's bonds, where a map would take six.
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<T::K, usize>>>,
}

impl<T: Key> Default for Keyed<T> {
    fn default() -> Self {
        Keyed {
            items: Vec::new(),
            index: None,
        }
    }
}

impl<T: Key> Keyed<T> {
    /// A list of at most one item.
    pub(crate) fn of(item: Option<T>) -> Self {
        Keyed {
            items: item.into_iter().collect(),
            index: None,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The items, in no particular order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// The position of the item with key `k`.
    fn position(&self, k: T::K) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(&k).copied(),
            None => self.items.iter().position(|x| x.key() == k),
        }
    }

    pub(crate) fn contains(&self, k: T::K) -> bool {
        self.position(k).is_some()
    }

    /// Adds `item`, whose key the list does not have yet.
    pub(crate) fn push(&mut self, item: T) {
        let k = item.key();
        debug_assert!(!self.contains(k), "keys are distinct");
        self.items.push(item);
        match &mut self.index {
            Some(index) => {
                index.insert(k, self.items.len() - 1);
            }
            None if self.items.len() > INDEX_AT => {
                let index = self
                    .items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (x.key(), i))
                    .collect();
                self.index = Some(Box::new(index));
            }
            None => {}
        }
    }

    /// Adds `item` unless an item has its key; whether it was added.
    pub(crate) fn insert(&mut self, item: T) -> bool {
        if self.contains(item.key()) {
            return false;
        }
        self.push(item);
        true
    }

    /// Takes out the item with key `k`.
    pub(crate) fn remove(&mut self, k: T::K) -> Option<T> {
        let i = self.position(k)?;
        let item = self.items.swap_remove(i);
        if let Some(index) = &mut self.index {
            index.remove(&k);
            if let Some(moved) = self.items.get(i) {
                index.insert(moved.key(), i);
            }
        }
        Some(item)
    }

    /// Keeps only the items `keep` says yes to (the order of the rest is kept; the index,
    /// if any, is built again, or dropped if the list is short again).
    pub(crate) fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
        if self.index.is_some() {
            self.index = (self.items.len() > INDEX_AT).then(|| {
                Box::new(
                    self.items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| (x.key(), i))
                        .collect(),
                )
            });
        }
    }

    /// Takes every item out, and the index with them.
    pub(crate) fn take(&mut self) -> Vec<T> {
        self.index = None;
        std::mem::take(&mut self.items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Key for u32 {
        type K = u32;
        fn key(&self) -> u32 {
            *self
        }
    }

    #[test]
    fn items_are_found_and_removed_by_key_below_and_above_the_index() {
        let mut k = Keyed::<u32>::default();
        for n in 0..100 {
            assert!(k.insert(n));
            assert!(!k.insert(n));
            assert!(k.index.is_some() == (k.len() > INDEX_AT));
        }
        // Every other one out, from both ends: the index follows the swaps.
        for n in (0..100).step_by(2) {
            assert_eq!(k.remove(n), Some(n));
            assert_eq!(k.remove(n), None);
        }
        for n in 0..100 {
            assert_eq!(k.contains(n), n % 2 == 1, "{n}");
        }
        let mut left = k.take();
        left.sort_unstable();
        assert_eq!(left, (1..100).step_by(2).collect::<Vec<_>>());
        assert!(k.is_empty() && k.index.is_none());
        // Short again: found by a scan.
        k.push(7);
        assert!(k.contains(7) && k.index.is_none());
    }

    #[test]
    fn retain_keeps_the_index_true_or_drops_it_when_short() {
        let mut k = Keyed::<u32>::default();
        (0..200).for_each(|n| k.push(n));
        k.retain(|n| n % 3 == 0);
        assert!(k.index.is_some());
        for n in 0..200 {
            assert_eq!(k.contains(n), n % 3 == 0, "{n}");
        }
        assert_eq!(k.remove(99), Some(99));
        assert!(!k.contains(99) && k.contains(102));
        k.retain(|&n| n < 30);
        assert!(k.index.is_none() && k.len() == 10);
        assert!(k.contains(27) && !k.contains(33));
    }
}
