//! Loom model of the mailbox queue (`src/mailbox/queue.rs`): two producers, one consumer,
//! blocks of two slots so the models cross block boundaries and the first-block install.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_mailbox`.
#![cfg(loom)]
// The model drives the queue's `unsafe` single-consumer API directly.
#![allow(unsafe_code)]

use loom::sync::Arc;
use loom::thread;
use otter::__loom::Queue;

/// Two producers push `per` messages each while the consumer pops `early` times, then
/// the consumer drains: every message arrives once, in its producer's order.
fn two_producers(per: u32, early: usize) {
    let q = Arc::new(Queue::new());
    let producers: Vec<_> = (0..2u32)
        .map(|p| {
            let q = q.clone();
            thread::spawn(move || {
                for i in 0..per {
                    q.push((p, i));
                }
            })
        })
        .collect();
    let mut next = [0u32; 2];
    let mut got = 0;
    let mut take = |m: Option<(u32, u32)>| {
        if let Some((p, i)) = m {
            assert_eq!(next[p as usize], i, "per-producer order");
            next[p as usize] += 1;
            got += 1;
        }
    };
    // Pop concurrently with the producers a bounded number of times (an unbounded spin
    // would make loom's search infinite), then drain after they finish.
    for _ in 0..early {
        // SAFETY: this thread is the only consumer.
        take(unsafe { q.pop() }.ok());
    }
    for p in producers {
        p.join().unwrap();
    }
    for _ in 0..2 * per {
        // SAFETY: single consumer.
        take(unsafe { q.pop() }.ok());
    }
    assert_eq!(got, 2 * per, "a message was lost");
    // SAFETY: single consumer.
    assert!(unsafe { q.pop() }.ok().is_none());
}

#[test]
fn two_producers_one_consumer_keep_order_lose_nothing() {
    loom::model(|| two_producers(2, 3));
}

#[test]
fn drop_with_messages_in_flight_frees_everything() {
    loom::model(|| {
        let q = Arc::new(Queue::new());
        let q2 = q.clone();
        let t = thread::spawn(move || {
            for i in 0..3 {
                q2.push(Box::new(i));
            }
        });
        // SAFETY: single consumer.
        let first = unsafe { q.pop() }.ok();
        t.join().unwrap();
        if let Some(b) = first {
            assert_eq!(*b, 0);
        }
        // Dropping the queue drops the messages still in it; Miri's run of the unit test
        // `drop_releases_unread_messages` checks that none leaks (loom does not track
        // `std` boxes), this model that the drop races with nothing.
        drop(q);
    });
}

#[test]
fn recycled_blocks_come_back_empty_and_keep_order() {
    // One producer, five messages: blocks 0, 1 and 2 are needed, and block 0 is left by
    // the consumer in time to be recycled as block 2 in some interleavings (rule 7).
    loom::model(|| {
        let q = Arc::new(Queue::new());
        let q2 = q.clone();
        let t = thread::spawn(move || {
            for i in 0..5u32 {
                q2.push(i);
            }
        });
        let mut next = 0;
        for _ in 0..4 {
            // SAFETY: this thread is the only consumer.
            if let Ok(i) = unsafe { q.pop() } {
                assert_eq!(i, next, "order across a recycled block");
                next += 1;
            }
        }
        t.join().unwrap();
        while next < 5 {
            // SAFETY: single consumer.
            let i = unsafe { q.pop() }.ok().expect("a message was lost");
            assert_eq!(i, next, "order across a recycled block");
            next += 1;
        }
        // SAFETY: single consumer.
        assert!(
            unsafe { q.pop() }.ok().is_none(),
            "a recycled slot still read as ready"
        );
    });
}

#[test]
fn two_producers_across_a_recycled_block_keep_order_lose_nothing() {
    // Three messages from each of two producers need three blocks of two slots, so a
    // block the consumer left can come back as the third while both producers push:
    // one of them may hold a stale `tail_block` or give a spare back (rule 7).
    loom::model(|| two_producers(3, 3));
}
