//! The process table: pid → process, with generations, and safe lookup by any thread.
//!
//! A [`Pid`](crate::Pid) is `Copy`, so it cannot own a reference count. It is an index
//! into this table plus the generation the slot had when the process was spawned. Each
//! slot holds a pointer to a process cell and one atomic *word*:
//!
//! ```text
//!   63            32 31      30            0
//!  +----------------+-------+---------------+
//!  |   generation   | ALIVE |     count     |
//!  +----------------+-------+---------------+
//! ```
//!
//! # Protocol
//!
//! 1. **Publish.** A spawner takes a free index, stores the cell pointer, then stores
//!    `generation | ALIVE` (`Release`). The pid it returns carries that generation.
//! 2. **Lookup.** A sender CASes `count + 1` into the word if the generation matches the
//!    pid and `ALIVE` is set; only then does it read the pointer. While it holds the count
//!    the cell cannot be freed. A generation mismatch means that process has exited
//!    (and the slot may have been reused): the lookup fails.
//! 3. **Release.** A holder decrements `count`. The decrement that leaves the word with
//!    neither `ALIVE` nor a count frees the process (the caller does it) and returns the
//!    index to the free list.
//! 4. **Retire.** The worker that runs the process's exit bumps the generation and
//!    clears `ALIVE` in one CAS, keeping a count for itself so it can finish the exit.
//!    From then on every lookup with the old pid fails, so the generation bump is the
//!    moment the process stops being reachable.
//!
//! Generations are 32 bits: a slot reused 2^32 times would make a very old pid valid
//! again. ERTS has the same property with its pid serial numbers.
//!
//! The free list is a per-thread cache of indices in front of a global `Mutex<Vec<u32>>`
//! touched once per [`LOCAL_CACHE`] spawns or exits, and a global counter for fresh
//! indices. Slots live in chunks of [`CHUNK`] allocated on first use and never freed.

#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use crate::loom::{AtomicU64, Ordering};

const ALIVE: u64 = 1 << 31;
const COUNT_MASK: u64 = ALIVE - 1;
const GEN_SHIFT: u32 = 32;

/// The generation after the one in word `w`, shifted into place (32 bits, wrapping).
fn next_generation(w: u64) -> u64 {
    ((w >> GEN_SHIFT).wrapping_add(1) & 0xffff_ffff) << GEN_SHIFT
}

/// The word of one slot. Separate from the table so the loom model can test it alone.
#[derive(Debug)]
pub struct SlotWord(AtomicU64);

/// What [`SlotWord::release`] tells the caller to do.
#[must_use]
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TransitionToReleased {
    /// Others still hold the process, or it is alive.
    Keep,
    /// This was the last reference to a retired process: free it.
    Free,
}

impl SlotWord {
    /// A free slot's word: generation 0, not alive, no count.
    pub fn new() -> SlotWord {
        SlotWord(AtomicU64::new(0))
    }

    /// The generation the next process in this slot will have.
    pub fn generation(&self) -> u32 {
        (self.0.load(Ordering::Acquire) >> GEN_SHIFT) as u32
    }

    /// Step (1): marks the slot alive with its current generation.
    pub fn publish(&self) {
        let w = self.0.load(Ordering::Relaxed);
        debug_assert_eq!(w & (ALIVE | COUNT_MASK), 0, "publishing a slot in use");
        self.0.store(w | ALIVE, Ordering::Release);
    }

    /// Step (2): takes a count if the slot holds the live process of `generation`.
    #[inline]
    pub fn acquire(&self, generation: u32) -> bool {
        let mut w = self.0.load(Ordering::Acquire);
        loop {
            if (w >> GEN_SHIFT) as u32 != generation || w & ALIVE == 0 {
                return false;
            }
            debug_assert!(w & COUNT_MASK < COUNT_MASK, "slot count overflow");
            match self
                .0
                .compare_exchange_weak(w, w + 1, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(cur) => w = cur,
            }
        }
    }

    /// Step (3): gives back a count taken by `acquire` or `retire`.
    #[inline]
    pub fn release(&self) -> TransitionToReleased {
        let prev = self.0.fetch_sub(1, Ordering::Release);
        debug_assert!(prev & COUNT_MASK != 0, "slot count underflow");
        if prev & (ALIVE | COUNT_MASK) == 1 {
            crate::loom::fence(Ordering::Acquire);
            TransitionToReleased::Free
        } else {
            TransitionToReleased::Keep
        }
    }

    /// Step (4): makes the process unreachable and takes a count for the caller, who
    /// must `release` it. Called once per process, by the worker that runs its exit.
    pub fn retire(&self) {
        let mut w = self.0.load(Ordering::Relaxed);
        loop {
            debug_assert!(w & ALIVE != 0, "retiring a dead slot");
            let new = next_generation(w) | ((w & COUNT_MASK) + 1);
            match self
                .0
                .compare_exchange_weak(w, new, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(cur) => w = cur,
            }
        }
    }

    /// For a slot whose process was never published (building its future panicked):
    /// bumps the generation, so that a pid handed out for it never resolves, even after
    /// the slot is reused. A plain store: nobody else writes an unpublished word (a
    /// lookup with a stale pid only reads it, finds `ALIVE` clear and fails).
    pub fn discard(&self) {
        let w = self.0.load(Ordering::Relaxed);
        debug_assert_eq!(w & (ALIVE | COUNT_MASK), 0, "discarding a published slot");
        self.0.store(next_generation(w), Ordering::Release);
    }

    /// Whether the slot holds the live process of `generation`.
    pub(crate) fn is_alive(&self, generation: u32) -> bool {
        let w = self.0.load(Ordering::Acquire);
        (w >> GEN_SHIFT) as u32 == generation && w & ALIVE != 0
    }

    /// The counts held now (shutdown waits for in-flight senders to leave).
    pub(crate) fn count(&self) -> u64 {
        self.0.load(Ordering::Acquire) & COUNT_MASK
    }
}

#[cfg(not(loom))]
pub(crate) use global::*;

#[cfg(not(loom))]
mod global {
    use super::SlotWord;
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
    use std::sync::{Mutex, OnceLock, PoisonError};

    /// Slots per chunk: 4096 × 16 bytes = one 64 KiB allocation per 4096 processes.
    pub(crate) const CHUNK: usize = 4096;
    const CHUNK_BITS: u32 = 12;
    /// Chunks: 2^14 × 4096 = 67M simultaneous processes (ERTS's default limit is 1M,
    /// its maximum 134M). The chunk directory itself is 256 KiB of static memory.
    const MAX_CHUNKS: usize = 1 << 14;
    /// Free indices a thread keeps before giving half back to the global list; also the
    /// batch it takes. 64 makes the global lock one acquisition per 32 spawns at worst.
    pub(crate) const LOCAL_CACHE: usize = 64;

    /// One process slot.
    #[derive(Debug)]
    pub(crate) struct Slot {
        pub(crate) word: SlotWord,
        /// The process's header, type-erased so that the table depends on nothing
        /// (`process/cell.rs` stores and reads it as `*mut Header`).
        pub(crate) cell: AtomicPtr<()>,
    }

    struct Table {
        chunks: [OnceLock<Box<[Slot]>>; MAX_CHUNKS],
        next_fresh: AtomicU32,
        free: Mutex<Vec<u32>>,
    }

    static TABLE: Table = Table {
        chunks: [const { OnceLock::new() }; MAX_CHUNKS],
        next_fresh: AtomicU32::new(0),
        free: Mutex::new(Vec::new()),
    };

    /// The slot of `index`. The chunk exists: indices are handed out only after it is.
    #[inline]
    pub(crate) fn slot(index: u32) -> Option<&'static Slot> {
        let chunk = TABLE.chunks.get((index >> CHUNK_BITS) as usize)?.get()?;
        chunk.get(index as usize & (CHUNK - 1))
    }

    fn ensure_chunk(index: u32) {
        let c = (index >> CHUNK_BITS) as usize;
        assert!(
            c < MAX_CHUNKS,
            "otter: process table full ({} processes)",
            MAX_CHUNKS * CHUNK
        );
        TABLE.chunks[c].get_or_init(|| {
            (0..CHUNK)
                .map(|_| Slot {
                    word: SlotWord::new(),
                    cell: AtomicPtr::new(std::ptr::null_mut()),
                })
                .collect()
        });
    }

    struct LocalFree(Vec<u32>);

    impl Drop for LocalFree {
        fn drop(&mut self) {
            if !self.0.is_empty() {
                let mut g = TABLE.free.lock().unwrap_or_else(PoisonError::into_inner);
                g.append(&mut self.0);
            }
        }
    }

    thread_local! {
        static LOCAL: RefCell<LocalFree> = const { RefCell::new(LocalFree(Vec::new())) };
    }

    /// A free index whose slot is not in use.
    pub(crate) fn alloc_index() -> u32 {
        LOCAL
            .try_with(|l| {
                let mut l = l.borrow_mut();
                if let Some(i) = l.0.pop() {
                    return i;
                }
                refill(&mut l.0)
            })
            .unwrap_or_else(|_| {
                let mut v = Vec::new();
                refill(&mut v)
            })
    }

    fn refill(local: &mut Vec<u32>) -> u32 {
        {
            let mut g = TABLE.free.lock().unwrap_or_else(PoisonError::into_inner);
            let take = g.len().min(LOCAL_CACHE / 2);
            let at = g.len() - take;
            local.extend(g.drain(at..));
        }
        if let Some(i) = local.pop() {
            return i;
        }
        let batch = (LOCAL_CACHE / 2) as u32;
        let start = TABLE.next_fresh.fetch_add(batch, Ordering::Relaxed);
        ensure_chunk(start);
        ensure_chunk(start + batch - 1);
        local.extend((start + 1..start + batch).rev());
        start
    }

    /// Gives a freed slot's index back.
    pub(crate) fn free_index(index: u32) {
        let give_back = |local: &mut Vec<u32>| {
            local.push(index);
            if local.len() > LOCAL_CACHE {
                let at = local.len() - LOCAL_CACHE / 2;
                let mut g = TABLE.free.lock().unwrap_or_else(PoisonError::into_inner);
                g.extend(local.drain(at..));
            }
        };
        if LOCAL
            .try_with(|l| give_back(&mut l.borrow_mut().0))
            .is_err()
        {
            TABLE
                .free
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(index);
        }
    }

    /// Every index handed out so far (for shutdown's scan of live processes).
    pub(crate) fn high_water() -> u32 {
        TABLE.next_fresh.load(Ordering::Acquire)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lookup_fails_after_retire() {
        let w = SlotWord::new();
        let g = w.generation();
        w.publish();
        assert!(w.acquire(g));
        assert_eq!(w.release(), TransitionToReleased::Keep);
        w.retire();
        assert!(!w.acquire(g));
        assert!(!w.is_alive(g));
        assert_eq!(w.release(), TransitionToReleased::Free);
        assert_eq!(w.generation(), g.wrapping_add(1));
    }

    #[test]
    fn a_discarded_slot_never_resolves_its_pid() {
        let w = SlotWord::new();
        let g = w.generation();
        w.discard();
        assert_eq!(w.generation(), g.wrapping_add(1));
        w.publish();
        assert!(
            !w.acquire(g),
            "the discarded pid resolves to the slot's next process"
        );
        assert!(w.acquire(g.wrapping_add(1)));
        assert_eq!(w.release(), TransitionToReleased::Keep);
    }

    #[test]
    fn last_sender_frees_a_retired_process() {
        let w = SlotWord::new();
        let g = w.generation();
        w.publish();
        assert!(w.acquire(g));
        w.retire();
        assert_eq!(w.release(), TransitionToReleased::Keep);
        assert_eq!(w.release(), TransitionToReleased::Free);
    }
}
