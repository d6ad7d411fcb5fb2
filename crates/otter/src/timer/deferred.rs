//! The deadlines a worker defers: calls waiting on it whose timers are not armed yet,
//! the timer's cheapest case (a deadline that is nearly always cancelled) kept out of
//! its shards. The list knows pids and nothing else of the runtime: the scheduler
//! flushes it and says how to wake a caller.
//!
//! A call with a long timeout (`server/reply.rs`, `DEFER_TIMER_AFTER`) does not put its
//! deadline in the timer wheel: it leaves an entry here, in its worker's lane, and takes
//! it out when it ends, nearly always before the worker's next flush (every
//! `GLOBAL_INTERVAL` polls, and before it parks). A call still waiting at the second
//! flush after it is woken, and that poll arms its own timer, the timeout from then.
//!
//! The entries live in the worker's lane of the timer (`Timer::deferred`, reached on the
//! worker through `timer.rs`'s thread-local), not in a thread-local of their own, so
//! that the watchdog thread can read them: a worker held by one long poll (a process
//! that computes without awaiting) makes no flush until that poll ends, and its callers
//! would time out only after it. The watchdog's look that finds the
//! worker held wakes every caller listed here; each arms its own timer on whichever
//! thread runs it next (another worker or a spare, when one is free: not behind a poll
//! that streams, which gets no spare, nor while every thread is held). A worker that
//! lists a deadline does not renew a turn in place (`worker::renew_turn`): a receiver
//! kept busy by a stream would otherwise be one poll that moves its tick, so that
//! neither a flush nor the watchdog would come.
//!
//! # Rules
//!
//! 1. **One writer.** Only the worker's own thread pushes, removes and flushes. Its
//!    accesses are loads and stores (relaxed, the length's stores release): plain
//!    moves, no locked instruction.
//! 2. **The watchdog only reads, and a wrong read costs a wake-up.** It reads the
//!    length, then the callers' pids, while the worker is inside one poll, which may
//!    itself be changing the list (a held poll that makes calls). Each pid is one atomic
//!    word, so it reads a pid that is or was listed here, or misses one pushed
//!    meanwhile: waking a caller that no longer waits is a spurious poll, which every
//!    process tolerates (a call polled while it waits only arms its timer; a waker of
//!    a process that has exited finds its slot retired and does nothing). A missed one
//!    is woken by the flush after the long poll, as before.
//! 3. **Bounded.** At most [`DEFERRED_CAP`] entries; a call that finds the list full
//!    arms its timer at once, the cost of a call before deadlines were deferred.
//! 4. **Only processes' wakers.** An entry names its caller by pid (a process's waker
//!    is its pid, `process/waker.rs`); a call polled with another waker (inside a
//!    combinator with wakers of its own) arms its timer at once.
//!
//! Entries are not ordered: a flush takes a whole generation, and a call that ends
//! removes its own entry by swapping the last one into its place.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::pid::RawPid;
use crate::tuning::{DEFERRED_CAP, REMOVE_LOOKS};

/// The bit of an entry's tag word set once the entry has lived through a flush: the
/// next flush wakes it.
const OLD: u64 = 1 << 63;

/// One deferred deadline: who waits, and which call.
#[derive(Debug, Default)]
struct Entry {
    /// The waiting caller's pid, as bits.
    pid: AtomicU64,
    /// The address of the call's slot (never dereferenced) ...
    slot: AtomicUsize,
    /// ... and which of its calls, with [`OLD`].
    tag: AtomicU64,
}

/// A worker's deferred deadlines (module docs). Aligned to two cache lines: its worker writes the length at every call, and the
/// lane's shard beside it is locked by other threads (`timer/shard.rs`).
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct DeferredDeadlines {
    entries: Box<[Entry]>,
    len: AtomicUsize,
}

impl Default for DeferredDeadlines {
    fn default() -> Self {
        DeferredDeadlines {
            entries: (0..DEFERRED_CAP).map(|_| Entry::default()).collect(),
            len: AtomicUsize::new(0),
        }
    }
}

impl DeferredDeadlines {
    /// Rule 1: the worker's own thread only. Lists call `tag` of the slot at `slot`,
    /// made by process `pid`; false if the list is full (rule 3).
    #[inline]
    pub(crate) fn push(&self, pid: RawPid, slot: usize, tag: u64) -> bool {
        let n = self.len.load(Ordering::Relaxed);
        let Some(e) = self.entries.get(n) else {
            return false;
        };
        e.pid.store(pid.to_bits(), Ordering::Relaxed);
        e.slot.store(slot, Ordering::Relaxed);
        e.tag.store(tag & !OLD, Ordering::Relaxed);
        self.len.store(n + 1, Ordering::Release);
        true
    }

    /// Rule 1. Takes out call `tag` of the slot at `slot`, if it is among the last
    /// [`REMOVE_LOOKS`] entries.
    #[inline]
    pub(crate) fn remove(&self, slot: usize, tag: u64) {
        let n = self.len.load(Ordering::Relaxed);
        for i in (n.saturating_sub(REMOVE_LOOKS)..n).rev() {
            let e = &self.entries[i];
            if e.slot.load(Ordering::Relaxed) == slot
                && e.tag.load(Ordering::Relaxed) & !OLD == tag & !OLD
            {
                self.swap_remove(i, n);
                return;
            }
        }
    }

    /// Moves the last of the `n` entries into entry `i`.
    fn swap_remove(&self, i: usize, n: usize) {
        let last = n - 1;
        if i != last {
            let (e, l) = (&self.entries[i], &self.entries[last]);
            e.pid
                .store(l.pid.load(Ordering::Relaxed), Ordering::Relaxed);
            e.slot
                .store(l.slot.load(Ordering::Relaxed), Ordering::Relaxed);
            e.tag
                .store(l.tag.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.len.store(last, Ordering::Release);
    }

    /// Rule 1. A flush: takes out the entries that have lived through a flush already
    /// (`all`: every entry), marks the others, and hands each taken caller to `wake`.
    /// Whether it took any.
    pub(crate) fn flush(&self, all: bool, mut wake: impl FnMut(RawPid)) -> bool {
        let mut took = false;
        let mut i = 0;
        while i < self.len.load(Ordering::Relaxed) {
            let e = &self.entries[i];
            let tag = e.tag.load(Ordering::Relaxed);
            if all || tag & OLD != 0 {
                let pid = RawPid::from_bits(e.pid.load(Ordering::Relaxed));
                self.swap_remove(i, self.len.load(Ordering::Relaxed));
                took = true;
                // After the removal, and the length read again: a wake-up may drop a
                // process, and with its messages a call future that takes its own
                // entry out of this list.
                wake(pid);
            } else {
                e.tag.store(tag | OLD, Ordering::Relaxed);
                i += 1;
            }
        }
        took
    }

    /// Rule 1: whether no deadline is listed.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// Rule 2: the watchdog's read of the callers listed now (some perhaps no longer
    /// waiting, some just pushed perhaps missed).
    pub(crate) fn callers(&self, mut each: impl FnMut(RawPid)) {
        let n = self.len.load(Ordering::Acquire).min(self.entries.len());
        for e in &self.entries[..n] {
            each(RawPid::from_bits(e.pid.load(Ordering::Relaxed)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(n: u64) -> RawPid {
        RawPid::from_bits(n)
    }

    fn listed(d: &DeferredDeadlines) -> Vec<u64> {
        let mut v = Vec::new();
        d.callers(|p| v.push(p.to_bits()));
        v.sort_unstable();
        v
    }

    #[test]
    fn a_call_that_ends_takes_its_entry_out() {
        let d = DeferredDeadlines::default();
        assert!(d.push(pid(1), 100, 1));
        assert!(d.push(pid(2), 200, 1));
        assert!(d.push(pid(3), 300, 1));
        d.remove(100, 1);
        assert_eq!(listed(&d), [2, 3]);
        // Another call of the same slot is not this one.
        d.remove(200, 2);
        assert_eq!(listed(&d), [2, 3]);
        d.remove(300, 1);
        d.remove(200, 1);
        assert_eq!(listed(&d), Vec::<u64>::new());
    }

    #[test]
    fn a_flush_wakes_the_entries_of_the_flush_before() {
        let d = DeferredDeadlines::default();
        d.push(pid(1), 100, 1);
        let mut woken = Vec::new();
        assert!(!d.flush(false, |p| woken.push(p.to_bits())));
        d.push(pid(2), 200, 1);
        // The first has lived through a flush: this one wakes it; the second next time.
        assert!(d.flush(false, |p| woken.push(p.to_bits())));
        assert_eq!(woken, [1]);
        // An entry marked old is still found by its call.
        d.remove(200, 1);
        assert!(!d.flush(false, |p| woken.push(p.to_bits())));
        d.push(pid(3), 300, 1);
        d.push(pid(4), 400, 1);
        assert!(d.flush(true, |p| woken.push(p.to_bits())));
        woken.sort_unstable();
        assert_eq!(woken, [1, 3, 4]);
        assert_eq!(listed(&d), Vec::<u64>::new());
    }

    #[test]
    fn a_full_list_refuses_the_next_call() {
        let d = DeferredDeadlines::default();
        for i in 0..DEFERRED_CAP {
            assert!(d.push(pid(i as u64), i, 1));
        }
        assert!(!d.push(pid(0), usize::MAX, 1));
        assert_eq!(listed(&d).len(), DEFERRED_CAP);
        // Only the last entries are looked at by a call that ends.
        d.remove(0, 1);
        assert_eq!(listed(&d).len(), DEFERRED_CAP);
        d.remove(DEFERRED_CAP - 1, 1);
        assert_eq!(listed(&d).len(), DEFERRED_CAP - 1);
    }
}
