//! How a simulation picks the next process among the runnable ones: uniformly at random
//! (the default), or by PCT, probabilistic concurrency testing (Burckhardt, Kothari,
//! Musuvathi and Nagarakatte, ASPLOS 2010).
//!
//! PCT gives every process a random priority when it is first seen, always runs the
//! runnable process of highest priority, and at `depth - 1` steps drawn at random from
//! the first `steps` lowers the priority of the process that ran there below every
//! other. A bug that needs `depth` particular orderings between processes is then found
//! with probability at least 1 / (n · steps^(depth-1)) per run, for n processes, where
//! a uniform choice can need exponentially many runs: the guarantee that makes it worth
//! a sweep of its own for bugs of small depth.

use std::collections::HashMap;

use crate::rng::Rng;

/// How a [`Simulation`](super::Simulation) chooses the next process to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Scheduling {
    /// Uniformly among the runnable processes, at every turn.
    #[default]
    Random,
    /// PCT (module docs): bugs of `depth` orderings, in runs of about `steps` turns.
    Pct {
        /// The number of orderings a bug needs (1: the priorities alone; 3 is a usual
        /// sweep's).
        depth: u32,
        /// How many turns a run takes, about: the change points are drawn among the
        /// first `steps`.
        steps: u64,
    },
}

/// The picker of one simulation.
#[derive(Debug)]
pub(crate) enum Picker {
    Random,
    Pct {
        /// Each process's priority, by ordinal.
        priority: HashMap<u64, u64>,
        /// The steps at which the running process's priority drops, and to what.
        changes: HashMap<u64, u64>,
        depth: u64,
    },
}

impl Picker {
    pub(crate) fn new(strategy: Scheduling, rng: &mut Rng) -> Picker {
        match strategy {
            Scheduling::Random => Picker::Random,
            Scheduling::Pct { depth, steps } => {
                let depth = u64::from(depth.max(1));
                let steps = steps.max(1) as usize;
                let changes = (1..depth).map(|i| (rng.below(steps) as u64, i)).collect();
                Picker::Pct {
                    priority: HashMap::new(),
                    changes,
                    depth,
                }
            }
        }
    }

    /// The index in `ready` (processes by ordinal, in the order found) of the next to
    /// run.
    pub(crate) fn pick(
        &mut self,
        ready: impl ExactSizeIterator<Item = u64>,
        rng: &mut Rng,
    ) -> usize {
        match self {
            Picker::Random => rng.below(ready.len()),
            Picker::Pct {
                priority, depth, ..
            } => {
                let mut best = (0, 0);
                for (i, ordinal) in ready.enumerate() {
                    // Initial priorities lie above every changed one (`depth` and
                    // below): a random 62-bit number plus `depth`.
                    let p = *priority
                        .entry(ordinal)
                        .or_insert_with(|| (rng.next() >> 2) + *depth);
                    if i == 0 || p > best.1 {
                        best = (i, p);
                    }
                }
                best.0
            }
        }
    }

    /// After step `step` ran process `ordinal`: at a change point, its priority drops.
    pub(crate) fn ran(&mut self, step: u64, ordinal: u64) {
        if let Picker::Pct {
            priority, changes, ..
        } = self
            && let Some(&low) = changes.get(&step)
        {
            priority.insert(ordinal, low);
        }
    }
}
