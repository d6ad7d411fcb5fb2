//! Loom model of the timer's shards and its thread's sleep (`src/timer/shard.rs`,
//! `src/timer/alarm.rs`): an insert on one worker's shard while the timer thread scans
//! and goes to sleep is never slept through, and a cancel from another worker and the
//! thread's fire take a timer once. Under loom the thread's sleep ends only when it is
//! woken, so a deadline slept through is a thread that never returns: loom reports it
//! as a deadlock.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_timer`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use otter::__loom::{Alarm, NEVER, Shard};

/// The time of the thread's scans (ms): deadlines up to it fire.
const NOW: u64 = 10;

/// Two workers' shards and the thread's sleep.
struct Timer {
    shards: [Shard<u32>; 2],
    alarm: Alarm,
}

impl Timer {
    fn new() -> Arc<Timer> {
        Arc::new(Timer {
            shards: [Shard::new(), Shard::new()],
            alarm: Alarm::new(),
        })
    }

    fn earliest(&self) -> u64 {
        self.shards.iter().map(Shard::next).min().unwrap_or(NEVER)
    }

    /// An insert as `Lane::insert` makes it: the shard, then the thread if the shard's
    /// earliest deadline moved.
    fn insert(&self, shard: usize, ms: u64, value: u32) {
        let (_, earlier) = self.shards[shard].insert(ms, value);
        if earlier {
            self.alarm.deadline_filed(ms);
        }
    }

    /// The timer thread's loop (`run_timer`), until it has fired `want` timers or is
    /// stopped: what it fired.
    fn run(&self, want: usize) -> Vec<u32> {
        let mut fired = Vec::new();
        while fired.len() < want {
            for s in &self.shards {
                s.advance(NOW, &mut fired);
            }
            if fired.len() >= want {
                break;
            }
            let at = self.earliest();
            if at <= NOW {
                continue;
            }
            if !self.alarm.sleep(at, None, || self.earliest()) {
                break;
            }
        }
        fired
    }
}

#[test]
fn a_deadline_filed_as_the_thread_goes_to_sleep_wakes_it() {
    loom::model(|| {
        let timer = Timer::new();
        let t = timer.clone();
        let thread = thread::spawn(move || t.run(1));
        timer.insert(1, 5, 7);
        assert_eq!(thread.join().unwrap(), vec![7]);
    });
}

#[test]
fn a_thread_asleep_until_a_later_deadline_is_woken_for_an_earlier_one() {
    loom::model(|| {
        let timer = Timer::new();
        // Due after the model's time: the thread sleeps until it, and only a wake-up
        // ends that sleep here.
        timer.insert(0, 50, 1);
        let t = timer.clone();
        let thread = thread::spawn(move || t.run(1));
        // On the other worker's shard, whose own earliest it is.
        timer.insert(1, 5, 2);
        assert_eq!(thread.join().unwrap(), vec![2]);
    });
}

#[test]
fn inserts_on_two_workers_are_both_fired() {
    loom::model(|| {
        let timer = Timer::new();
        let t = timer.clone();
        let thread = thread::spawn(move || t.run(2));
        let other = {
            let timer = timer.clone();
            thread::spawn(move || timer.insert(0, 3, 1))
        };
        timer.insert(1, 4, 2);
        other.join().unwrap();
        let mut fired = thread.join().unwrap();
        fired.sort_unstable();
        assert_eq!(fired, vec![1, 2]);
    });
}

#[test]
fn a_cancel_from_another_worker_and_the_fire_take_a_timer_once() {
    loom::model(|| {
        let timer = Timer::new();
        let (key, _) = timer.shards[0].insert(5, 9);
        let t = timer.clone();
        let canceller = thread::spawn(move || t.shards[0].cancel(key));
        let mut fired = Vec::new();
        timer.shards[0].advance(NOW, &mut fired);
        let cancelled = canceller.join().unwrap();
        match cancelled {
            Some(v) => assert_eq!((v, fired.len()), (9, 0)),
            None => assert_eq!(fired, vec![9]),
        }
        assert!(!timer.shards[0].is_pending(key));
    });
}

#[test]
fn the_shutdown_wakes_the_sleeping_thread() {
    loom::model(|| {
        let timer = Timer::new();
        let t = timer.clone();
        let thread = thread::spawn(move || t.run(1));
        timer.alarm.stop();
        assert_eq!(thread.join().unwrap(), Vec::<u32>::new());
    });
}
