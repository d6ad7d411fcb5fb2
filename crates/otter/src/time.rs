//! The runtime's clock, [`now`]: the OS's monotonic clock, or a simulation's clock on
//! the thread that steps it (`sim.rs`).
//!
//! Every deadline the runtime computes (a `recv_timeout`, a `sleep`, a `send_after`, an
//! interval's first tick, a call's timeout, a supervisor's restart intensity) starts
//! from `now()`, so a program under [`Simulation`](crate::sim::Simulation) runs on
//! simulated time without a change. Code of its own that wants the same must read
//! `otter::time::now()` rather than `Instant::now()`: the OS clock read inside a
//! simulation is real time, which makes a run depend on the machine (the simulation
//! chapter says how to forbid it with clippy's `disallowed-methods`).
//!
//! # Rule
//!
//! The simulated clock is set on the stepping thread only while a `Simulation` method
//! runs its processes (`set_simulated`), and cleared when it returns: it is never seen
//! by another thread, nor by this one between two steps.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    /// The simulated time of the simulation this thread is stepping, if any.
    static SIMULATED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The current instant: the simulation's clock inside a process run by a
/// [`Simulation`](crate::sim::Simulation), else [`Instant::now`].
///
/// ```
/// let t0 = otter::time::now();
/// assert!(otter::time::now() >= t0);
/// ```
#[inline]
pub fn now() -> Instant {
    SIMULATED.with(Cell::get).unwrap_or_else(Instant::now)
}

/// Sets (`Some`) or clears the simulated clock of this thread (the module's rule).
pub(crate) fn set_simulated(now: Option<Instant>) {
    SIMULATED.with(|c| c.set(now));
}
