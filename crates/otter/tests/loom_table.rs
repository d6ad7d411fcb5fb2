//! Loom model of the process table's slot word (`src/process/table.rs`): a sender's
//! lookup races with the process's retirement; the cell is freed exactly once, and
//! never while a sender holds it.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_table`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::{SlotWord, TransitionToReleased};

#[test]
fn lookup_racing_retire_frees_once_and_never_under_a_sender() {
    loom::model(|| {
        let word = Arc::new(SlotWord::new());
        let generation = word.generation();
        word.publish();
        let freed = Arc::new(AtomicUsize::new(0));
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let (w, f) = (word.clone(), freed.clone());
                thread::spawn(move || {
                    if w.acquire(generation) {
                        assert_eq!(f.load(Ordering::Acquire), 0, "sender uses a freed cell");
                        if w.release() == TransitionToReleased::Free {
                            f.fetch_add(1, Ordering::AcqRel);
                        }
                    }
                })
            })
            .collect();
        // The exiting process: retire (keeping a count), finish, release.
        word.retire();
        assert!(!word.acquire(generation), "a retired pid resolves");
        if word.release() == TransitionToReleased::Free {
            freed.fetch_add(1, Ordering::AcqRel);
        }
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(freed.load(Ordering::Acquire), 1, "freed exactly once");
        assert_eq!(word.generation(), generation.wrapping_add(1));
    });
}
