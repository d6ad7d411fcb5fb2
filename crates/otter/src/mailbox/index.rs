//! The key index of the save area: key → sequence numbers of saved messages with that key.
//!
//! Built for [`Context::recv_key`](crate::Context::recv_key)'s `O(1)` lookups. Two
//! choices keep an entry cheap: most keys (a child's pid, a request id) have exactly one
//! message waiting, so a key's sequence numbers are stored inline until there are two;
//! and keys are hashed with a multiply-rotate hash (the Fx hash of rustc and Firefox)
//! rather than SipHash. Fx is not resistant to chosen collisions: a peer that picks keys
//! to collide can make lookups in its own receiver's mailbox linear, never unsafe.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A sequence number in the save area.
pub(crate) type Seq = u64;

/// The Fx hash: one rotate, xor and multiply per word.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct FxHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A key's sequence numbers, oldest first; inline while there is one.
#[derive(Debug)]
enum Seqs {
    One(Seq),
    Many(VecDeque<Seq>),
}

/// The index. `entries` counts sequence numbers held, live or stale.
#[derive(Debug)]
pub(crate) struct Index<K> {
    map: HashMap<K, Seqs, BuildHasherDefault<FxHasher>>,
    pub(crate) entries: usize,
}

impl<K: Hash + Eq> Index<K> {
    pub(crate) fn new() -> Index<K> {
        Index {
            map: HashMap::default(),
            entries: 0,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.entries = 0;
    }

    /// Records that the message `seq` has key `key`. Sequence numbers only grow, so each
    /// key's list stays in arrival order.
    #[inline]
    pub(crate) fn insert(&mut self, key: K, seq: Seq) {
        self.entries += 1;
        match self.map.entry(key) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Seqs::One(seq));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => match o.get_mut() {
                Seqs::Many(q) => q.push_back(seq),
                Seqs::One(first) => {
                    let first = *first;
                    *o.get_mut() = Seqs::Many(VecDeque::from([first, seq]));
                }
            },
        }
    }

    /// Pops `key`'s sequence numbers, oldest first, until `live` accepts one; returns it.
    /// Stale ones (messages taken another way) are dropped on the way.
    pub(crate) fn take_first(&mut self, key: &K, mut live: impl FnMut(Seq) -> bool) -> Option<Seq> {
        let seqs = self.map.get_mut(key)?;
        let (found, used, empty) = match seqs {
            Seqs::One(s) => {
                let s = *s;
                (live(s).then_some(s), 1, true)
            }
            Seqs::Many(q) => {
                let mut found = None;
                let mut used = 0;
                while let Some(s) = q.pop_front() {
                    used += 1;
                    if live(s) {
                        found = Some(s);
                        break;
                    }
                }
                (found, used, q.is_empty())
            }
        };
        if empty {
            self.map.remove(key);
        }
        self.entries -= used;
        found
    }
}
