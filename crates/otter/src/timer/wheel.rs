//! A hierarchical timing wheel (Varghese and Lauck, "Hashed and Hierarchical Timing
//! Wheels", 1987; the layout tokio's `time/wheel` also uses).
//!
//! Time is counted in whole milliseconds since the timer's start. There are [`LEVELS`]
//! levels of [`SLOTS`] slots; a slot at level `l` spans `64^l` ms, so six levels cover
//! `64^6` ms, about 2,200 years. A timer is filed at the level of the highest 6-bit group
//! in which its deadline differs from `now`; as time reaches a higher-level slot, its
//! timers are re-filed ("cascaded") one level down, until they reach level 0 and fire.
//! Each level keeps a bitmap of non-empty slots, so finding the next deadline is a few
//! `trailing_zeros`, whatever the number of timers. Insert and cancel are O(1): an
//! entry knows where its key is in its slot, and cancel swaps the slot's last key into
//! that place, so a cancelled timer keeps no memory however far its deadline was
//! (docs/design/0030).

/// Slots per level.
pub(crate) const SLOTS: usize = 64;
/// Levels: `64^6` ms of range.
pub(crate) const LEVELS: usize = 6;

/// The farthest ahead of `now` a timer is filed at once: 63 slots of the top level, so
/// that its slot is never the one that holds `now` (which `advance` would visit again at
/// once). About 2.1 years; a later deadline is re-filed when that slot comes round.
const MAX_SPAN: u64 = (SLOTS as u64 - 1) << ((LEVELS - 1) * 6);

/// A timer's key: slab index and the entry's generation.
#[allow(unreachable_pub)] // `pub` for the loom model (`shard.rs`'s); the module is private.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    index: u32,
    generation: u32,
}

#[derive(Debug)]
struct Entry<T> {
    deadline: u64,
    generation: u32,
    /// Where its key is while pending: the slot (`level * SLOTS + slot`) and the
    /// position in it.
    slot: u32,
    pos: u32,
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
                    slot: 0,
                    pos: 0,
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
        // A deadline beyond the wheel's range is filed at the farthest slot it can hold
        // and re-filed from there; it still fires at its own deadline, never early.
        let deadline = deadline.min(self.now.saturating_add(MAX_SPAN));
        let level = level_for(self.now, deadline);
        let slot = slot_for(deadline, level);
        let s = level * SLOTS + slot;
        let e = &mut self.entries[key.index as usize];
        e.slot = s as u32;
        e.pos = self.slots[s].len() as u32;
        self.slots[s].push(key);
        self.occupied[level] |= 1 << slot;
    }

    /// Removes a pending timer; `None` if it already fired or was cancelled.
    /// The pending timers' values, the wheel consumed.
    pub(crate) fn into_values(self) -> impl Iterator<Item = T> {
        self.entries.into_iter().filter_map(|e| e.value)
    }

    /// Whether `key`'s timer has neither fired nor been cancelled.
    pub(crate) fn is_pending(&self, key: Key) -> bool {
        self.entries
            .get(key.index as usize)
            .is_some_and(|e| e.generation == key.generation && e.value.is_some())
    }

    pub(crate) fn cancel(&mut self, key: Key) -> Option<T> {
        let e = self.entries.get_mut(key.index as usize)?;
        if e.generation != key.generation {
            return None;
        }
        let v = e.value.take()?;
        let (s, pos) = (e.slot as usize, e.pos as usize);
        let keys = &mut self.slots[s];
        debug_assert_eq!(keys.get(pos), Some(&key), "an entry knows its key's place");
        keys.swap_remove(pos);
        if let Some(moved) = keys.get(pos) {
            self.entries[moved.index as usize].pos = pos as u32;
        }
        if keys.is_empty() {
            self.occupied[s / SLOTS] &= !(1 << (s % SLOTS));
        }
        // A slot that held many timers gives its memory back as they are cancelled.
        if keys.capacity() > 64 && keys.len() < keys.capacity() / 4 {
            keys.shrink_to(keys.len() * 2);
        }
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
    ///
    /// The minimum over *every* level, not the lowest non-empty one: a level-0 timer
    /// filed after the clock entered a higher level's slot must not hide that slot (the
    /// wheel's invariant below keeps such a slot from being left behind).
    pub(crate) fn next_expiration(&self) -> Option<u64> {
        self.next_slot().map(|(at, _)| at)
    }

    /// The earliest occupied slot: when it is due and its level.
    ///
    /// Invariant: every occupied slot of level `l` starts at or after the start of the
    /// level-`l` slot that holds `now`, within one rotation. `advance` keeps it by moving
    /// the clock to each slot's start before any later instant, and `file` keeps it by
    /// filing a deadline at the level of the highest 6-bit group in which it differs
    /// from `now` (so its slot is after `now`'s at that level), capped at [`MAX_SPAN`].
    fn next_slot(&self) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for level in 0..LEVELS {
            let occ = self.occupied[level];
            if occ == 0 {
                continue;
            }
            let shift = level * 6;
            let current = ((self.now >> shift) % SLOTS as u64) as u32;
            // Slots from `current` on, wrapping: rotate so `current` is bit 0.
            let dist = u64::from(occ.rotate_right(current).trailing_zeros());
            let at = ((self.now >> shift) + dist)
                .saturating_mul(1 << shift)
                .max(self.now);
            if best.is_none_or(|(b, _)| at < b) {
                best = Some((at, level));
            }
        }
        best
    }

    /// Moves time to `now` (ms) and hands every timer due by then to `fire`.
    ///
    /// The clock visits the start of every occupied slot on the way, in order, and
    /// never goes past `now`: a slot is emptied (its timers fired or re-filed one level
    /// down or more) as the clock enters it, before anything later is looked at.
    pub(crate) fn advance(&mut self, now: u64, mut fire: impl FnMut(T)) {
        while let Some((at, level)) = self.next_slot() {
            if at > now {
                break;
            }
            self.now = at;
            let slot = slot_for(at, level);
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
        }
        self.now = self.now.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_deadline_order_never_early() {
        let mut w = Wheel::new();
        // Stepping a millisecond at a time to 300,000 is too slow under Miri.
        let far = if cfg!(miri) { 5_000 } else { 300_000 };
        let deadlines = [0u64, 1, 5, 63, 64, 65, 4095, 4096, far, 10, 7];
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
    fn a_cancelled_timer_leaves_nothing_in_its_slot() {
        let mut w = Wheel::new();
        let n = if cfg!(miri) { 200 } else { 100_000 };
        // Same deadline, one slot: all but every tenth cancelled, in a scattered order.
        let keys: Vec<Key> = (0..n).map(|i| w.insert(5_000, i)).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| (i * 7919) % n);
        for i in order {
            if i % 10 != 0 {
                assert_eq!(w.cancel(keys[i]), Some(i));
            }
        }
        let held: usize = w.slots.iter().map(Vec::len).sum();
        assert_eq!(held, n / 10, "only pending timers' keys are kept");
        let mut fired = Vec::new();
        w.advance(5_000, |v| fired.push(v));
        fired.sort_unstable();
        assert_eq!(fired, (0..n).step_by(10).collect::<Vec<_>>());
        // Every one cancelled: the slot is empty and no expiration is left.
        let k = w.insert(9_000, 1);
        assert_eq!(w.cancel(k), Some(1));
        assert_eq!(w.next_expiration(), None);
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
    /// The reported defect: a timer due in a higher level's slot while short timers keep
    /// arriving at level 0 (a process looping on short receive timeouts). It must fire
    /// at its deadline, not a level's span (here 4.1 s) later.
    #[test]
    fn a_timer_fires_on_time_while_short_timers_keep_arriving() {
        let mut w = Wheel::new();
        // 30 ms before the 4,096 ms boundary of level 2, a 70 ms timer is filed at
        // level 2 (its deadline is past the boundary).
        let mut t = 4096 - 30;
        w.advance(t, |_: u64| panic!("nothing is due"));
        let long = t + 70;
        w.insert(long, long);
        let mut fired_long = None;
        // A short timer 3 ms ahead at every step, as a receive loop with a timeout.
        while fired_long.is_none() && t < 20_000 {
            w.insert(t + 3, 0);
            t += 1;
            w.advance(t, |v| {
                if v != 0 {
                    fired_long = Some(t);
                }
            });
        }
        assert_eq!(fired_long, Some(long), "the long timer fired late");
    }

    /// xorshift64*: a fixed, dependency-free generator so that a failing seed replays.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// The wheel against a plain list of deadlines, under random inserts, cancels and
    /// advances of every size: each `advance(t)` fires exactly the timers due by `t`,
    /// and `next_expiration` is never later than the earliest pending deadline.
    #[test]
    fn behaves_as_a_sorted_list_of_deadlines() {
        let (seeds, steps): (u64, u32) = if cfg!(miri) { (2, 300) } else { (200, 3_000) };
        for seed in 1..=seeds {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut w = Wheel::new();
            // (id, deadline, key) of the timers pending in the model.
            let mut model: Vec<(u64, u64, Key)> = Vec::new();
            let mut now = 0u64;
            let mut next_id = 0u64;
            for step in 0..steps {
                match rng.below(10) {
                    0..=3 => {
                        let ahead = match rng.below(6) {
                            0 => rng.below(4),
                            1 => rng.below(70),
                            2 => rng.below(5_000),
                            3 => rng.below(300_000),
                            4 => rng.below(1 << 40),
                            // Just around a level boundary of the clock.
                            _ => {
                                let l = 1 + rng.below(3) as u32;
                                let span = 1u64 << (6 * l);
                                (span - now % span + rng.below(3)).saturating_sub(1)
                            }
                        };
                        // Now and then a deadline already past.
                        let deadline = if rng.below(20) == 0 {
                            now.saturating_sub(rng.below(10))
                        } else {
                            now + ahead
                        };
                        let key = w.insert(deadline, next_id);
                        model.push((next_id, deadline.max(now), key));
                        next_id += 1;
                    }
                    4 if !model.is_empty() => {
                        let i = rng.below(model.len() as u64) as usize;
                        let (id, _, key) = model.swap_remove(i);
                        assert_eq!(w.cancel(key), Some(id), "seed {seed} step {step}");
                        assert_eq!(w.cancel(key), None);
                    }
                    _ => {
                        let step_by = match rng.below(5) {
                            0 => 0,
                            1 => 1,
                            2 => rng.below(70),
                            3 => rng.below(5_000),
                            _ => {
                                let span = 1u64 << (6 * (1 + rng.below(3) as u32));
                                span - now % span - rng.below(2).min(span - now % span)
                            }
                        };
                        now += step_by;
                        let mut fired = Vec::new();
                        w.advance(now, |id| fired.push(id));
                        fired.sort_unstable();
                        let mut due: Vec<u64> = model
                            .iter()
                            .filter(|&&(_, d, _)| d <= now)
                            .map(|&(id, _, _)| id)
                            .collect();
                        due.sort_unstable();
                        assert_eq!(fired, due, "seed {seed} step {step}: advance({now})");
                        model.retain(|&(_, d, _)| d > now);
                    }
                }
                assert_eq!(w.len(), model.len());
                if let Some(earliest) = model.iter().map(|&(_, d, _)| d).min() {
                    let next = w.next_expiration().expect("timers are pending");
                    assert!(
                        next <= earliest,
                        "seed {seed} step {step}: next_expiration {next} > earliest {earliest}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_deadline_beyond_the_range_fires_at_its_deadline() {
        let mut w = Wheel::new();
        let far = MAX_SPAN * 3 + 12_345;
        w.insert(far, ());
        let mut fired = 0;
        // Jump slot by slot as a sleeping timer thread would.
        while let Some(at) = w.next_expiration() {
            assert!(at <= far);
            w.advance(at, |()| fired += 1);
            if fired > 0 {
                assert_eq!(at, far);
                break;
            }
        }
        assert_eq!(fired, 1);
    }
}
