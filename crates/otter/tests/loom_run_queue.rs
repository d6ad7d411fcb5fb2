//! Loom models of the run queues (`src/scheduler/queue.rs`): the owner pushes and pops
//! its local queue while a thief steals half; the owner fills and empties its LIFO slot
//! while a watchdog takes from it. Every task is taken exactly once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_run_queue`.
#![cfg(loom)]
// The model drives the queue's `unsafe` single-consumer API directly.
#![allow(unsafe_code)]

use loom::sync::Arc;
use loom::thread;
use otter::__loom::{Item, LifoSlot, Local};

struct T(Box<usize>);

impl Item for T {
    fn into_raw(self) -> *mut () {
        Box::into_raw(self.0).cast()
    }
    unsafe fn from_raw(ptr: *mut ()) -> Self {
        // SAFETY: `ptr` came from `into_raw` above (the trait's contract).
        T(unsafe { Box::from_raw(ptr.cast()) })
    }
}

#[test]
fn owner_pop_and_steal_take_each_task_once() {
    loom::model(|| {
        let victim: Arc<Local<T>> = Arc::new(Local::new());
        for i in 0..3 {
            assert!(victim.push(T(Box::new(1 << i))).is_ok());
        }
        let v2 = victim.clone();
        let thief = thread::spawn(move || {
            let mine: Local<T> = Local::new();
            let mut sum = 0;
            if let Some(t) = v2.steal_into(&mine) {
                sum += *t.0;
            }
            while let Some(t) = mine.pop() {
                sum += *t.0;
            }
            sum
        });
        let mut sum = 0;
        if let Some(t) = victim.pop() {
            sum += *t.0;
        }
        // The owner pushes while the thief may be stealing (wrapping the ring).
        if victim.push(T(Box::new(8))).is_err() {
            sum += 8;
        }
        while let Some(t) = victim.pop() {
            sum += *t.0;
        }
        sum += thief.join().unwrap();
        assert_eq!(sum, 1 + 2 + 4 + 8, "each task taken exactly once");
    });
}

#[test]
fn lifo_slot_owner_and_rescuer_take_each_task_once() {
    // The owner fills the empty slot with a plain store (only it ever fills the slot),
    // displaces its task with a second one, and empties it; meanwhile a watchdog takes
    // whatever is there. Each of the two tasks must come out exactly once.
    loom::model(|| {
        let slot: Arc<LifoSlot<T>> = Arc::new(LifoSlot::new());
        let s2 = slot.clone();
        let rescuer = thread::spawn(move || s2.take().map_or(0, |t| *t.0));
        let mut sum = 0;
        assert!(
            slot.replace(T(Box::new(1))).is_none(),
            "the slot starts empty"
        );
        if let Some(t) = slot.replace(T(Box::new(2))) {
            sum += *t.0;
        }
        if let Some(t) = slot.take() {
            sum += *t.0;
        }
        sum += rescuer.join().unwrap();
        assert_eq!(sum, 3, "a task lost or taken twice");
        assert!(slot.take().is_none());
    });
}
