//! A hierarchical timing wheel (Varghese and Lauck, "Hashed and Hierarchical Timing
//! Wheels", 1987; the layout tokio's `time/wheel` also uses).
//!
//! Time is counted in whole milliseconds since the timer's start. There are [`LEVELS`]
//! levels of [`SLOTS`] slots; a slot at level `l` spans `64^l` ms, so six levels cover
//! `64^6` ms, about 2,200 years. A timer is filed at the level of the highest 6-bit group
//! in which its deadline differs from `now`; as time reaches a higher-level slot, its
//! timers are re-filed ("cascaded") one level down, until they reach level 0 and fire.
//! Each level keeps a bitmap of non-empty slots, so finding the next deadline is a few
//! `trailing_zeros`, whatever the number of timers. Insert and cancel are O(1): cancel
//! removes the entry from the slab, and the stale key in its slot is skipped later.

/// Slots per level.
pub(crate) const SLOTS: usize = 64;
/// Levels: `64^6` ms of range.
pub(crate) const LEVELS: usize = 6;

/// A timer's key: slab index and the entry's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    index: u32,
    generation: u32,
}

#[derive(Debug)]
struct Entry<T> {
    deadline: u64,
    generation: u32,
    value: Option<T>,
}

/// The wheel, generic over what a timer carries.
#[derive(Debug)]
pub(crate) struct Wheel<T> {
    now: u64,
    slots: Vec<Vec<Key>>,
    occupied: [u64; LEVELS],
    entries: Vec<Entry<T>>,
    free: Vec<u32>,
    len: usize,
}

fn level_for(now: u64, deadline: u64) -> usize {
    let masked = (now ^ deadline) | (SLOTS as u64 - 1);
    let significant = 63 - masked.leading_zeros() as usize;
    (significant / 6).min(LEVELS - 1)
}

fn slot_for(deadline: u64, level: usize) -> usize {
    ((deadline >> (level * 6)) % SLOTS as u64) as usize
}

impl<T> Wheel<T> {
    pub(crate) fn new() -> Wheel<T> {
        Wheel {
            now: 0,
            slots: (0..LEVELS * SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Timers pending.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Files `value` to fire at `deadline` (ms). A deadline in the past fires at the
    /// next `advance`.
    pub(crate) fn insert(&mut self, deadline: u64, value: T) -> Key {
        let deadline = deadline.max(self.now);
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    deadline: 0,
                    generation: 0,
                    value: None,
                });
                (self.entries.len() - 1) as u32
            }
        };
        let e = &mut self.entries[index as usize];
        e.deadline = deadline;
        e.value = Some(value);
        let key = Key {
            index,
            generation: e.generation,
        };
        self.file(key, deadline);
        self.len += 1;
        key
    }

    fn file(&mut self, key: Key, deadline: u64) {
        let level = level_for(self.now, deadline);
        let slot = slot_for(deadline, level);
        self.slots[level * SLOTS + slot].push(key);
        self.occupied[level] |= 1 << slot;
    }

    /// Removes a pending timer; `None` if it already fired or was cancelled.
    pub(crate) fn cancel(&mut self, key: Key) -> Option<T> {
        let e = self.entries.get_mut(key.index as usize)?;
        if e.generation != key.generation {
            return None;
        }
        let v = e.value.take()?;
        self.release(key.index);
        Some(v)
    }

    fn release(&mut self, index: u32) {
        let e = &mut self.entries[index as usize];
        e.generation = e.generation.wrapping_add(1);
        self.free.push(index);
        self.len -= 1;
    }

    /// The earliest instant (ms) at which something may be due, if any timer is pending.
    /// It may be a cascade point rather than a deadline: `advance` to it, then ask again.
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        for level in 0..LEVELS {
            let occ = self.occupied[level];
            if occ == 0 {
                continue;
            }
            let width = 1u64 << (level * 6);
            let current = ((self.now >> (level * 6)) % SLOTS as u64) as u32;
            // Slots from `current` on, wrapping: rotate so `current` is bit 0.
            let rotated = occ.rotate_right(current);
            let dist = u64::from(rotated.trailing_zeros());
            let base = (self.now >> (level * 6)) << (level * 6);
            let at = base + dist * width;
            return Some(at.max(self.now));
        }
        None
    }

    /// Moves time to `now` (ms) and hands every timer due by then to `fire`.
    pub(crate) fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) {
        while self.now <= now {
            let Some(next) = self.next_expiration() else {
                self.now = now;
                return;
            };
            if next > now {
                self.now = now;
                return;
            }
            self.now = next;
            // Take the lowest level's due slot; cascade or fire its entries.
            let level = (0..LEVELS)
                .find(|&l| self.occupied[l] & (1 << slot_for(next, l)) != 0)
                .expect("next_expiration points at an occupied slot");
            let slot = slot_for(next, level);
            self.occupied[level] &= !(1 << slot);
            let keys = std::mem::take(&mut self.slots[level * SLOTS + slot]);
            for key in keys {
                let e = &mut self.entries[key.index as usize];
                if e.generation != key.generation || e.value.is_none() {
                    continue;
                }
                if e.deadline <= self.now {
                    let v = e.value.take().expect("checked");
                    self.release(key.index);
                    fire(v);
                } else {
                    let d = e.deadline;
                    self.file(key, d);
                }
            }
            if self.now == u64::MAX {
                return;
            }
            if self.next_expiration() != Some(self.now) {
                self.now += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_deadline_order_never_early() {
        let mut w = Wheel::new();
        let deadlines = [0u64, 1, 5, 63, 64, 65, 4095, 4096, 300_000, 10, 7];
        for &d in &deadlines {
            w.insert(d, d);
        }
        let mut fired = Vec::new();
        let mut t = 0;
        while w.len() > 0 {
            w.advance(t, |d| {
                assert!(d <= t, "fired {d} early at {t}");
                fired.push((d, t));
            });
            t += 1;
        }
        for (d, at) in &fired {
            assert_eq!(d, at, "fired late");
        }
        assert_eq!(fired.len(), deadlines.len());
    }

    #[test]
    fn big_jumps_fire_everything_due() {
        let mut w = Wheel::new();
        for d in [3u64, 70, 5000, 1 << 20] {
            w.insert(d, d);
        }
        let mut got = Vec::new();
        w.advance(6000, |d| got.push(d));
        got.sort();
        assert_eq!(got, vec![3, 70, 5000]);
        assert_eq!(w.next_expiration().map(|n| n <= 1 << 20), Some(true));
        w.advance(1 << 21, |d| got.push(d));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn cancel_removes() {
        let mut w = Wheel::new();
        let k = w.insert(10, "a");
        w.insert(10, "b");
        assert_eq!(w.cancel(k), Some("a"));
        assert_eq!(w.cancel(k), None);
        let mut got = Vec::new();
        w.advance(10, |v| got.push(v));
        assert_eq!(got, vec!["b"]);
        assert_eq!(w.len(), 0);
        assert_eq!(w.next_expiration(), None);
    }
}
