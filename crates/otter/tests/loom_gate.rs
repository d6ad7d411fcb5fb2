//! Loom models of the exit gate (`process/gate.rs`): a bond or a name attached
//! concurrently with the exit is either refused or seen by the exit; never both missed.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_gate`.
#![cfg(loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use otter::__loom::Gate;

#[test]
fn a_bond_attached_during_the_exit_is_refused_or_seen() {
    loom::model(|| {
        let gate = Arc::new(Gate::new(false));
        let bonds = Arc::new(Mutex::new(0u32));
        let (g, b) = (gate.clone(), bonds.clone());
        let attacher = thread::spawn(move || {
            let mut list = b.lock().unwrap();
            if g.attach_bond() {
                *list += 1;
                true
            } else {
                false
            }
        });
        // The exit.
        let closed = gate.close();
        let seen = if closed.has_bonds {
            std::mem::take(&mut *bonds.lock().unwrap())
        } else {
            0
        };
        let attached = attacher.join().unwrap();
        assert_eq!(attached, seen == 1, "attached {attached}, exit saw {seen}");
    });
}

#[test]
fn a_name_registered_during_the_exit_never_outlives_it() {
    loom::model(|| {
        let gate = Arc::new(Gate::new(false));
        let registry = Arc::new(Mutex::new(false));
        let (g, r) = (gate.clone(), registry.clone());
        let registrant = thread::spawn(move || {
            g.announce_name();
            let mut name = r.lock().unwrap();
            if g.is_open() {
                *name = true;
            }
        });
        let closed = gate.close();
        if closed.registered {
            *registry.lock().unwrap() = false;
        }
        registrant.join().unwrap();
        assert!(!*registry.lock().unwrap(), "a dead process kept its name");
    });
}
