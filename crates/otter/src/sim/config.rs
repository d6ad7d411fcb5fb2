//! [`Config`]: how a simulation chooses, how long it may run, whether it buggifies.

use std::time::Duration;

use super::{Scheduling, Simulation};

/// The settings of a family of simulations; each [`build`](Config::build) makes one
/// from a seed, and [`sweep`](Config::sweep) runs a test over many.
///
/// ```
/// use std::time::Duration;
/// use otter::sim::{Config, Scheduling};
/// let config = Config::new()
///     .scheduling(Scheduling::Pct { depth: 3, steps: 1_000 })
///     .time_limit(Duration::from_secs(600))
///     .buggify(false);
/// let sim = config.build(7);
/// assert_eq!(sim.seed(), 7);
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) scheduling: Scheduling,
    pub(super) time_limit: Duration,
    pub(super) buggify: bool,
}

impl Default for Config {
    /// Uniform choices, a day of simulated time for `block_on`, buggify on.
    fn default() -> Config {
        Config {
            scheduling: Scheduling::Random,
            time_limit: Duration::from_secs(24 * 3600),
            buggify: true,
        }
    }
}

impl Config {
    /// The default settings.
    pub fn new() -> Config {
        Config::default()
    }

    /// How the next process is chosen ([`Scheduling`]).
    pub fn scheduling(mut self, scheduling: Scheduling) -> Config {
        self.scheduling = scheduling;
        self
    }

    /// How much simulated time each [`Simulation::block_on`] runs for, from its start,
    /// before it gives up with [`SimError::TimeLimit`](super::SimError::TimeLimit).
    pub fn time_limit(mut self, limit: Duration) -> Config {
        self.time_limit = limit;
        self
    }

    /// Whether [`buggify`](super::buggify) sites may fire.
    pub fn buggify(mut self, on: bool) -> Config {
        self.buggify = on;
        self
    }

    /// The simulation of this configuration from `seed`.
    pub fn build(&self, seed: u64) -> Simulation {
        Simulation::with(self, seed)
    }
}
