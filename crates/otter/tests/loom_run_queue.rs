//! Loom model of the local run queue (`src/scheduler/queue.rs`): the owner pushes and
//! pops while a thief steals half; every task is taken exactly once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_run_queue`.
#![cfg(loom)]
// The model drives the queue's `unsafe` single-consumer API directly.
#![allow(unsafe_code)]

use loom::sync::Arc;
use loom::thread;
use otter::__loom::{Item, Local};

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
