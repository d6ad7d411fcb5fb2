//! The exit gate: three flags in a process's header that close the races between its
//! exit and what other processes attach to it (a registered name, a link, a monitor).
//!
//! # Protocol
//!
//! * An attacher first announces what it attaches (`registered` or `has_bonds`), then,
//!   after a full fence, reads `exiting`: if it is set, the process is closing and the
//!   attachment is refused (`NotAlive` / `Noproc`).
//! * The exit first sets `exiting`, then, after a full fence, reads both announcements
//!   and looks only at what was announced (the registry, the bonds record).
//!
//! The two halves form a Dekker pair: of "announce, fence, read `exiting`" and "set
//! `exiting`, fence, read the announcement", at least one read sees the other side's
//! store. So either the attacher sees `exiting` and backs out, or the exit sees the
//! announcement and goes to look. What it finds there is ordered by the lock of the
//! registry or of the bonds record, which the attacher holds from its announcement to
//! the end of its attachment. A process that nobody names, links or monitors pays one
//! fence and two loads at exit.
//!
//! The loom model is `tests/loom_gate.rs`.
#![allow(unreachable_pub)] // `pub` items are for the loom models; the module is private.

use crate::loom::{AtomicBool, Ordering, full_fence};

/// What the exit must look at (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    /// A name was (or is being) registered: remove it from the registry.
    pub registered: bool,
    /// A link or monitor was (or is being) attached: take the bonds record.
    pub has_bonds: bool,
}

/// The three flags; see the module docs.
#[derive(Debug)]
pub struct Gate {
    exiting: AtomicBool,
    registered: AtomicBool,
    has_bonds: AtomicBool,
}

impl Gate {
    /// An open gate; `has_bonds` if the process is spawned with a link or monitor.
    pub fn new(has_bonds: bool) -> Gate {
        Gate {
            exiting: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            has_bonds: AtomicBool::new(has_bonds),
        }
    }

    /// Announces a link or monitor from another process; false if the process is
    /// exiting (the caller must not attach it). Call under the bonds lock.
    pub fn attach_bond(&self) -> bool {
        self.has_bonds.store(true, Ordering::Relaxed);
        full_fence();
        !self.exiting.load(Ordering::Relaxed)
    }

    /// Announces a bond made by the process itself while it runs (its own side of a
    /// link): its exit runs later on its own behalf, ordered after this by the schedule
    /// state, so no fence is needed.
    pub fn mark_own_bond(&self) {
        self.has_bonds.store(true, Ordering::Relaxed);
    }

    /// Announces a registered name. The registry then checks [`Gate::is_open`] under
    /// its lock before inserting the name.
    pub fn announce_name(&self) {
        self.registered.store(true, Ordering::Relaxed);
        full_fence();
    }

    /// Whether the exit has not started. After [`Gate::announce_name`] on the same
    /// thread, this is the attacher's read of the protocol.
    pub fn is_open(&self) -> bool {
        !self.exiting.load(Ordering::Relaxed)
    }

    /// Starts the exit: closes the gate and tells what must be looked at.
    pub fn close(&self) -> Closed {
        self.exiting.store(true, Ordering::Relaxed);
        full_fence();
        Closed {
            registered: self.registered.load(Ordering::Relaxed),
            has_bonds: self.has_bonds.load(Ordering::Relaxed),
        }
    }
}
