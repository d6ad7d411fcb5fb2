//! The readiness of one registered source, and the wakers of the processes waiting on it.
//!
//! # Protocol
//!
//! One `AtomicUsize`: the low byte holds readiness bits, the rest a tick that every event
//! advances.
//!
//! * The driver, on an event: adds the event's bits and advances the tick in one
//!   `fetch_update`, then takes the wakers of the directions the event concerns under
//!   the `waiters` lock, and wakes them after releasing it.
//! * A process polling for a direction: if the bits say ready, it goes on, remembering
//!   the tick it saw. Otherwise it stores its waker under the `waiters` lock and reads
//!   the state again before it waits. Either its lock section comes first, and the
//!   driver's later one takes the waker; or the driver's comes first, and its store of
//!   the bits, made before, is seen by the read again.
//! * After an operation answered `WouldBlock`, the process clears the direction's bits
//!   with a CAS that expects the tick it saw: if an event came in between, the tick
//!   moved, the bits stay, and the process tries again instead of waiting for an event
//!   that already came.
//! * An operation tried without waiting (`TcpStream::try_read`) reads the state without
//!   storing a waker ([`Readiness::ready`]): not ready is `WouldBlock` without a system
//!   call; ready, it runs, and a `WouldBlock` clears as above, so that the process's next
//!   wait (`readable()`, a `poll_ready`) returns at once if an event came meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// The source can be read from.
pub(crate) const READABLE: usize = 1;
/// The source can be written to.
pub(crate) const WRITABLE: usize = 2;
/// The peer closed its side for writing (a read returns 0).
pub(crate) const READ_CLOSED: usize = 4;
/// The peer closed its side for reading (a write fails).
pub(crate) const WRITE_CLOSED: usize = 8;
/// An error is pending on the source.
pub(crate) const ERROR: usize = 16;

const BITS: usize = 0xff;
const TICK: usize = 0x100;

/// Which way an operation goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Read,
    Write,
}

impl Direction {
    /// The bits that let an operation in this direction go on.
    fn mask(self) -> usize {
        match self {
            Direction::Read => READABLE | READ_CLOSED | ERROR,
            Direction::Write => WRITABLE | WRITE_CLOSED | ERROR,
        }
    }

    /// The bits an operation that would block clears.
    fn clears(self) -> usize {
        match self {
            Direction::Read => READABLE,
            Direction::Write => WRITABLE,
        }
    }
}

/// The state a poll saw, to clear with [`Readiness::clear`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen(usize);

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    state: AtomicUsize,
    /// The readers' and the writers' wakers: one each for a stream, several for a
    /// listener its acceptors share.
    waiters: Mutex<[Vec<Waker>; 2]>,
}

impl Readiness {
    /// The driver's side: an event with `bits`. Returns the wakers to wake.
    pub(crate) fn set(&self, bits: usize) -> [Vec<Waker>; 2] {
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some((s & !BITS).wrapping_add(TICK) | (s & BITS) | bits)
            });
        let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let read = if bits & Direction::Read.mask() != 0 {
            std::mem::take(&mut w[0])
        } else {
            Vec::new()
        };
        let write = if bits & Direction::Write.mask() != 0 {
            std::mem::take(&mut w[1])
        } else {
            Vec::new()
        };
        [read, write]
    }

    /// Ready for `dir`, or the waker is stored and the driver will wake it.
    pub(crate) fn poll_ready(&self, dir: Direction, cx: &mut Context<'_>) -> Poll<Seen> {
        let s = self.state.load(Ordering::Acquire);
        if s & dir.mask() != 0 {
            return Poll::Ready(Seen(s));
        }
        let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = &mut w[dir as usize];
        if !waiting.iter().any(|old| old.will_wake(cx.waker())) {
            waiting.push(cx.waker().clone());
        }
        let s = self.state.load(Ordering::Acquire);
        if s & dir.mask() != 0 {
            return Poll::Ready(Seen(s));
        }
        Poll::Pending
    }

    /// Ready for `dir` as last seen, without storing a waker: for an operation tried
    /// without waiting (`try_read`), which waits for nothing if it finds nothing.
    pub(crate) fn ready(&self, dir: Direction) -> Option<Seen> {
        let s = self.state.load(Ordering::Acquire);
        (s & dir.mask() != 0).then_some(Seen(s))
    }

    /// An operation in `dir` would block: clears its readiness unless an event came
    /// since `seen`.
    pub(crate) fn clear(&self, dir: Direction, seen: Seen) {
        let _ = self.state.compare_exchange(
            seen.0,
            seen.0 & !dir.clears(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Direction, READABLE, Readiness, WRITABLE};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn an_event_after_would_block_is_not_lost() {
        let r = Readiness::default();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(r.poll_ready(Direction::Read, &mut cx).is_pending());
        let [w, none] = r.set(READABLE);
        assert!(none.is_empty());
        w.into_iter().for_each(Waker::wake);
        let Poll::Ready(seen) = r.poll_ready(Direction::Read, &mut cx) else {
            panic!("readable")
        };
        // An event comes between the operation's WouldBlock and its clear.
        let _ = r.set(READABLE);
        r.clear(Direction::Read, seen);
        assert!(r.poll_ready(Direction::Read, &mut cx).is_ready());
        // Without one, the clear takes and the next poll waits.
        let Poll::Ready(seen) = r.poll_ready(Direction::Read, &mut cx) else {
            panic!("readable")
        };
        r.clear(Direction::Read, seen);
        assert!(r.poll_ready(Direction::Read, &mut cx).is_pending());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // The other direction is untouched.
        let _ = r.set(WRITABLE);
        assert!(r.poll_ready(Direction::Write, &mut cx).is_ready());
        assert!(r.poll_ready(Direction::Read, &mut cx).is_pending());
    }
}
