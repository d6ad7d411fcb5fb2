//! The outcome cell of a call's reply slot: one value handed from whoever answers the
//! call (the reply, the server's exit, the timeout) to the caller, and the caller's
//! waker the other way, without a lock; reused call after call, each call named by a
//! tag.
//!
//! # Protocol
//!
//! One `AtomicU64`, `tag << 3 | state`, next to two cells: the value and the waker.
//!
//! | state | who may touch the cells |
//! |---|---|
//! | `IDLE` | the owner (the caller), alone: no call waits |
//! | `WAITING` | nobody: the owner waits; its waker is in the cell |
//! | `REGISTERING` | the owner, alone: it replaces its waker |
//! | `FILLING` | the one filler that moved `WAITING` to it: it writes the value, takes the waker |
//! | `FILLED` | the owner, alone: it takes the value |
//!
//! * The owner starts call `tag` from `IDLE` ([`OutcomeCell::begin`]): it writes its
//!   waker, then publishes `WAITING` with a swap, which is also a full barrier, so that
//!   what it reads next (the slot's `watched` flag, `server/reply.rs` rule 4) is read
//!   after the publication.
//! * A filler ([`OutcomeCell::fill`]) moves `(tag, WAITING)` to `(tag, FILLING)` with a
//!   compare-and-swap that names the tag it answers (or the tag it reads, for the
//!   slot's latest call); only one can win, and a filler of an earlier call, whose tag
//!   is not the word's, never does. The winner writes the value and takes the waker,
//!   then publishes `FILLED` with a release store, and wakes the waker after it: from
//!   that store on it touches neither cell. A loser gets its value back, to drop.
//! * The owner ends the call ([`OutcomeCell::take`]): on `FILLED` it takes the value
//!   (its acquire load saw the filler's release) and stores `IDLE`; on `WAITING` it
//!   moves it to `IDLE` with a compare-and-swap (the call is abandoned: timed out, or
//!   its future dropped), after which no filler can win; on `FILLING` it waits, a few
//!   instructions, for `FILLED`.
//! * The owner replaces its waker ([`OutcomeCell::register`]) by moving `WAITING` to
//!   `REGISTERING` and back; a filler that meets `REGISTERING` waits for `WAITING`. A
//!   process's waker never changes, so a call polled by its process never does this.
//!
//! Each state gives the cells to one thread at most, and every hand-over of that right
//! is a release store (or compare-and-swap) read by the next holder's acquire, so the
//! cells need no lock. Nothing that can unwind runs while a thread holds them.
//!
//! The loom model is `tests/loom_reply.rs`.
#![allow(unsafe_code)]
#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use std::task::Waker;

use crate::loom::{AtomicU64, Ordering, UnsafeCell, fence_after_rmw, spin_hint};

const STATE: u64 = 0b111;
const IDLE: u64 = 0;
const WAITING: u64 = 1;
const REGISTERING: u64 = 2;
const FILLING: u64 = 3;
const FILLED: u64 = 4;
const SHIFT: u32 = 3;

/// Which call a filler answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The call with this tag, if it still waits (a timeout, an early `Noproc`).
    Tag(u64),
    /// Whatever call waits now (a `ReplyTo`, which only exists for the slot's latest
    /// call; the server's exit, which ends any call waiting on it).
    Current,
}

/// See the module docs.
#[derive(Debug)]
pub struct OutcomeCell<T> {
    word: AtomicU64,
    value: UnsafeCell<Option<T>>,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the cells are only touched by the one thread the protocol gives them to
// (module docs), and every hand-over is a release/acquire pair, so sharing the cell
// between threads moves `T` and `Waker` from one thread to another, never aliases
// them: `T: Send` is enough.
unsafe impl<T: Send> Sync for OutcomeCell<T> {}
// SAFETY: as above; the cell owns its `T` and `Waker`, both `Send`.
unsafe impl<T: Send> Send for OutcomeCell<T> {}

impl<T> OutcomeCell<T> {
    /// A cell whose call `tag` waits, with `waker` (or none yet: then the owner must
    /// [`OutcomeCell::register`] one before it waits).
    pub fn waiting(tag: u64, waker: Option<Waker>) -> OutcomeCell<T> {
        OutcomeCell {
            word: AtomicU64::new(tag << SHIFT | WAITING),
            value: UnsafeCell::new(None),
            waker: UnsafeCell::new(waker),
        }
    }

    /// The tag of the latest call.
    pub fn tag(&self) -> u64 {
        self.word.load(Ordering::Acquire) >> SHIFT
    }

    /// Whether call `tag` still waits (no filler has won, the owner has not ended it).
    pub fn is_waiting(&self, tag: u64) -> bool {
        let w = self.word.load(Ordering::Acquire);
        w >> SHIFT == tag && matches!(w & STATE, WAITING | REGISTERING)
    }

    /// Whether the latest call still waits.
    pub fn latest_waits(&self) -> bool {
        matches!(
            self.word.load(Ordering::Acquire) & STATE,
            WAITING | REGISTERING
        )
    }

    /// The owner starts call `tag` with `waker`. The cell must be idle (the previous
    /// call taken). A full barrier follows the publication.
    pub fn begin(&self, tag: u64, waker: Waker) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed) & STATE, IDLE);
        // SAFETY: `IDLE`: the owner alone touches the cells (module docs); the swap
        // below publishes the write to the filler that wins `WAITING`.
        self.waker.with_mut(|w| unsafe { *w = Some(waker) });
        self.word.swap(tag << SHIFT | WAITING, Ordering::AcqRel);
        fence_after_rmw();
    }

    /// A filler: if the call `answer` names still waits, stores `value` as its outcome
    /// and returns the waker to wake (the caller wakes it, outside any lock it holds).
    /// Otherwise `Err(value)`, for the caller to drop where it is.
    pub fn fill(&self, answer: Answer, value: T) -> Result<Option<Waker>, T> {
        let won = loop {
            let w = self.word.load(Ordering::Acquire);
            match (w & STATE, answer) {
                (_, Answer::Tag(t)) if t != w >> SHIFT => return Err(value),
                (WAITING, _) => {
                    if self
                        .word
                        .compare_exchange(
                            w,
                            w & !STATE | FILLING,
                            Ordering::Acquire,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        break w;
                    }
                }
                // The owner replaces its waker: a few instructions.
                (REGISTERING, _) => spin_hint(),
                _ => return Err(value),
            }
        };
        // SAFETY: `FILLING` is ours (the compare-and-swap above, whose acquire saw the
        // owner's publication of its waker); nobody else touches the cells until the
        // release store below, and nothing between can unwind.
        self.value.with_mut(|v| unsafe { *v = Some(value) });
        // SAFETY: as above.
        let waker = self.waker.with_mut(|w| unsafe { (*w).take() });
        // Nobody changes a word in `FILLING` but its filler: `won`'s tag holds.
        self.word.store(won & !STATE | FILLED, Ordering::Release);
        Ok(waker)
    }

    /// The owner ends call `tag`: its outcome if a filler stored one; from then on no
    /// filler of `tag` wins. The cell is idle after it.
    pub fn take(&self, tag: u64) -> Option<T> {
        loop {
            let w = self.word.load(Ordering::Acquire);
            debug_assert_eq!(w >> SHIFT, tag, "only the owner starts calls");
            match w & STATE {
                FILLED => {
                    // SAFETY: `FILLED`: the owner's alone; the acquire load saw the
                    // filler's release store after its write.
                    let value = unsafe { self.value.with_mut(|v| (*v).take()) };
                    self.word.store(tag << SHIFT | IDLE, Ordering::Release);
                    return value;
                }
                WAITING => {
                    if self
                        .word
                        .compare_exchange(
                            w,
                            tag << SHIFT | IDLE,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        // SAFETY: `IDLE` now, the owner's alone: drop the waker so the
                        // idle cell holds no reference to the caller.
                        drop(unsafe { self.waker.with_mut(|w| (*w).take()) });
                        return None;
                    }
                }
                // A filler is writing: a few instructions.
                FILLING => spin_hint(),
                _ => return None,
            }
        }
    }

    /// The owner, while call `tag` waits, makes `waker` the one a filler wakes. `false`
    /// if the call no longer waits (a filler won: take the outcome).
    pub fn register(&self, tag: u64, waker: &Waker) -> bool {
        let waiting = loop {
            let w = self.word.load(Ordering::Acquire);
            if w >> SHIFT != tag {
                return false;
            }
            match w & STATE {
                WAITING => {
                    if self
                        .word
                        .compare_exchange(
                            w,
                            w & !STATE | REGISTERING,
                            Ordering::Acquire,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        break w;
                    }
                }
                FILLING => spin_hint(),
                _ => return false,
            }
        };
        self.waker.with_mut(|slot| {
            // SAFETY: `REGISTERING` is the owner's alone; fillers wait for the release
            // store below. `will_wake` and `clone` of a waker do not unwind.
            let slot = unsafe { &mut *slot };
            match slot {
                Some(old) if old.will_wake(waker) => {}
                _ => *slot = Some(waker.clone()),
            }
        });
        // Nobody changes a word in `REGISTERING` but its owner (`mark` waits too).
        self.word.store(waiting, Ordering::Release);
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Answer, OutcomeCell};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counter() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn a_filled_outcome_is_taken_once_and_the_cell_serves_the_next_call() {
        let (count, waker) = counter();
        let cell = OutcomeCell::waiting(1, Some(waker.clone()));
        assert!(cell.is_waiting(1));
        cell.fill(Answer::Current, String::from("one"))
            .unwrap()
            .unwrap()
            .wake();
        assert!(!cell.is_waiting(1));
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // A second filler of the same call stores nothing.
        assert!(cell.fill(Answer::Tag(1), String::new()).is_err());
        assert_eq!(cell.take(1).as_deref(), Some("one"));
        cell.begin(2, waker);
        // A filler of the earlier call does not win the new one.
        assert!(cell.fill(Answer::Tag(1), String::new()).is_err());
        assert!(cell.is_waiting(2));
        assert!(cell.fill(Answer::Tag(2), String::from("two")).is_ok());
        assert_eq!(cell.take(2).as_deref(), Some("two"));
    }

    #[test]
    fn an_abandoned_call_takes_no_later_outcome_and_drops_its_waker() {
        let (count, waker) = counter();
        let cell: OutcomeCell<Box<u32>> = OutcomeCell::waiting(7, Some(waker));
        assert_eq!(cell.take(7), None);
        assert!(cell.fill(Answer::Current, Box::new(1)).is_err());
        assert_eq!(Arc::strong_count(&count), 1, "the idle cell holds no waker");
    }

    #[test]
    fn register_replaces_the_waker_a_filler_wakes() {
        let (first, w1) = counter();
        let (second, w2) = counter();
        let cell = OutcomeCell::waiting(3, None);
        assert!(cell.register(3, &w1));
        assert!(cell.register(3, &w2));
        cell.fill(Answer::Tag(3), 5u8).unwrap().unwrap().wake();
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert!(!cell.register(3, &w1), "filled: nothing to wait for");
        assert_eq!(cell.take(3), Some(5));
    }

    #[test]
    fn an_outcome_never_taken_is_dropped_with_the_cell() {
        let value = Arc::new(());
        let cell = OutcomeCell::waiting(1, None);
        let _ = cell.fill(Answer::Current, value.clone());
        drop(cell);
        assert_eq!(Arc::strong_count(&value), 1);
    }

    #[test]
    fn racing_fillers_and_the_owner_hand_over_each_value_once() {
        let rounds = if cfg!(miri) { 10 } else { 200 };
        for round in 0..rounds {
            let (count, waker) = counter();
            let cell = Arc::new(OutcomeCell::waiting(round, Some(waker)));
            let fillers: Vec<_> = (0..2)
                .map(|i| {
                    let cell = cell.clone();
                    std::thread::spawn(move || {
                        let answer = if i == 0 {
                            Answer::Current
                        } else {
                            Answer::Tag(round)
                        };
                        match cell.fill(answer, i) {
                            Ok(w) => {
                                w.expect("the owner's waker").wake();
                                1
                            }
                            Err(_) => 0,
                        }
                    })
                })
                .collect();
            let got = cell.take(round);
            let won: usize = fillers.into_iter().map(|f| f.join().unwrap()).sum();
            // Either the owner took the one value stored, or it abandoned first and
            // no filler won; a wake-up for each value stored.
            assert_eq!(won, usize::from(got.is_some()));
            assert_eq!(count.0.load(Ordering::SeqCst), won);
        }
    }
}
