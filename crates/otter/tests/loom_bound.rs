//! Loom models of the bound word's wake-up pair (`mailbox/bound.rs`): a sender that
//! waits for room in a full bounded mailbox (or, muted, for a flooded one to drain) is
//! woken by the receiver's take that makes room, or its own retry sees that room; and a
//! sender that waits as the receiving end closes is woken by the close. The waiter list
//! is a mutex here as in the runtime; the word's operations are the runtime's own.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p otter-otp --release --test loom_bound`.
#![cfg(loom)]

use std::sync::Arc;
use std::task::{Wake, Waker};

use loom::sync::Mutex;
use loom::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::{closed, drained, flag_waiting, is_full};

struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A bounded mailbox of capacity 2 in the model: its bound word, its queue's length
/// (the queue's own positions: `Release` by the receiver's take, `Acquire` by a
/// sender's look, as `Queue::len`), and the waiters filed under its pid.
struct Mailbox {
    word: AtomicU32,
    len: AtomicUsize,
    waiters: Mutex<Vec<Waker>>,
}

impl Mailbox {
    fn full() -> Mailbox {
        Mailbox {
            word: AtomicU32::new(2),
            len: AtomicUsize::new(2),
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// The receiver takes a message, then its side of the pair.
    fn take(&self) {
        self.len.fetch_sub(1, Ordering::Release);
        if drained(&self.word, || self.len.load(Ordering::Acquire)) {
            self.wake_all();
        }
    }

    /// The receiving end is dropped.
    fn close(&self) {
        closed(&self.word);
        self.wake_all();
    }

    fn wake_all(&self) {
        let woken = std::mem::take(&mut *self.waiters.lock().unwrap());
        woken.into_iter().for_each(Waker::wake);
    }

    /// A sender finds it full: files its waker, sets `WAITING`, and tries again.
    /// Whether it waits (the retry found it still full).
    fn wait_for_room(&self, waker: &Waker) -> bool {
        flag_waiting(&self.word, || {
            self.waiters.lock().unwrap().push(waker.clone())
        });
        is_full(
            self.word.load(Ordering::Acquire),
            self.len.load(Ordering::Acquire),
        )
    }
}

#[test]
fn a_sender_that_waits_for_room_is_woken_by_the_take_that_makes_it() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::full());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let m = mb.clone();
        let receiver = thread::spawn(move || m.take());
        let waits = mb.wait_for_room(&waker);
        receiver.join().unwrap();
        // The take brought the queue to half (1 of 2): a sender that waits must have
        // been woken; one whose retry saw the room goes on (a stale waker may remain).
        if waits {
            assert_eq!(count.0.load(Ordering::SeqCst), 1, "a lost wake-up");
        }
    });
}

#[test]
fn a_sender_that_waits_as_the_receiver_closes_is_woken() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::full());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let m = mb.clone();
        let receiver = thread::spawn(move || m.close());
        let waits = mb.wait_for_room(&waker);
        receiver.join().unwrap();
        if waits {
            assert_eq!(count.0.load(Ordering::SeqCst), 1, "a lost wake-up");
        }
    });
}

#[test]
fn two_senders_waiting_for_room_are_both_woken() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::full());
        let counts: Vec<_> = (0..2)
            .map(|_| Arc::new(Count(AtomicUsize::new(0))))
            .collect();
        let m = mb.clone();
        let c1 = counts[1].clone();
        let other = thread::spawn(move || m.wait_for_room(&Waker::from(c1)));
        let m = mb.clone();
        let receiver = thread::spawn(move || m.take());
        let waits0 = mb.wait_for_room(&Waker::from(counts[0].clone()));
        let waits1 = other.join().unwrap();
        receiver.join().unwrap();
        for (waits, c) in [(waits0, &counts[0]), (waits1, &counts[1])] {
            if waits {
                assert_eq!(c.0.load(Ordering::SeqCst), 1, "a lost wake-up");
            }
        }
    });
}
