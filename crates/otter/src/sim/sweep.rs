//! Seed sweeps and the determinism check: the two ways a test drives many simulations.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Config, Simulation};

/// The variable that replays one seed of every [`sweep`].
pub const SEED_VAR: &str = "OTTER_SIM_SEED";

/// Runs `test` on a fresh [`Simulation`] for each seed of `seeds`, in order. The first
/// that panics ends the sweep with a panic naming its seed, the steps it ran and its
/// simulated time; with `OTTER_SIM_SEED` set (decimal, or hexadecimal after `0x`), only
/// that seed runs, whatever `seeds` holds, to replay it. How many seeds ran.
///
/// A value of `OTTER_SIM_SEED` that is not a seed is the caller's mistake: one line on
/// standard error, and the OS process exits with status 2.
///
/// ```
/// use otter::Context;
/// let n = otter::sim::sweep(0..20, |sim| {
///     let r = sim.block_on(|_: Context<()>| async move { 1 + 1 });
///     assert_eq!(r, Ok(2));
/// });
/// # if std::env::var(otter::sim::SEED_VAR).is_err() {
/// assert_eq!(n, 20);
/// # }
/// ```
pub fn sweep<I, F>(seeds: I, test: F) -> u64
where
    I: IntoIterator<Item = u64>,
    F: Fn(&mut Simulation),
{
    Config::default().sweep(seeds, test)
}

/// Runs `test` twice from `seed` and compares the two traces
/// ([`Simulation::trace_hash`]); panics if they differ, which means something in the
/// program escapes the simulation (the module docs' list). The trace's hash.
///
/// ```
/// use otter::Context;
/// otter::sim::check(3, |sim| {
///     sim.block_on(|cx: Context<u8>| async move {
///         let me = cx.pid();
///         cx.spawn(move |_: Context<()>| async move { me.send(1) });
///         let mut cx = cx;
///         cx.recv().await
///     })
///     .unwrap();
/// });
/// ```
pub fn check<F>(seed: u64, test: F) -> u64
where
    F: Fn(&mut Simulation),
{
    Config::default().check(seed, test)
}

impl Config {
    /// [`sweep`] with this configuration.
    pub fn sweep<I, F>(&self, seeds: I, test: F) -> u64
    where
        I: IntoIterator<Item = u64>,
        F: Fn(&mut Simulation),
    {
        let only = std::env::var(SEED_VAR).ok().map(|v| match parse_seed(&v) {
            Some(seed) => seed,
            None => {
                eprintln!(
                    "otter::sim: {SEED_VAR}={v:?} is not a seed (a u64: decimal, or hex after 0x)"
                );
                std::process::exit(2);
            }
        });
        let seeds: Box<dyn Iterator<Item = u64>> = match only {
            Some(seed) => Box::new(std::iter::once(seed)),
            None => Box::new(seeds.into_iter()),
        };
        let mut ran = 0;
        for seed in seeds {
            let mut sim = self.build(seed);
            let r = catch_unwind(AssertUnwindSafe(|| test(&mut sim)));
            ran += 1;
            if let Err(payload) = r {
                let why = match crate::ExitReason::from_panic(&*payload) {
                    crate::ExitReason::Panic(m) => m,
                    other => format!("{other:?}").into(),
                };
                crate::unwind::drop_payload(payload);
                let history = sim.history();
                let last: Vec<String> = history
                    .iter()
                    .skip(history.len().saturating_sub(LAST_TURNS))
                    .map(|t| format!("  {t}"))
                    .collect();
                panic!(
                    "otter::sim: seed {seed} failed after {} steps, at {:?} of simulated time: \
                     {why}\nreplay it alone with {SEED_VAR}={seed}; its last turns:\n{}",
                    sim.steps(),
                    sim.elapsed(),
                    last.join("\n"),
                );
            }
        }
        ran
    }

    /// [`check`] with this configuration.
    pub fn check<F>(&self, seed: u64, test: F) -> u64
    where
        F: Fn(&mut Simulation),
    {
        let run = || {
            let mut sim = self.build(seed);
            test(&mut sim);
            (sim.trace_hash(), sim.steps())
        };
        let (a, steps_a) = run();
        let (b, steps_b) = run();
        assert!(
            a == b && steps_a == steps_b,
            "otter::sim: seed {seed} is not deterministic: trace {a:#018x} ({steps_a} steps), \
             then {b:#018x} ({steps_b} steps); something escapes the simulation (otter::sim's docs)"
        );
        a
    }
}

/// How many of a failed run's last turns its panic lists.
const LAST_TURNS: usize = 16;

fn parse_seed(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_seed;

    #[test]
    fn a_seed_is_decimal_or_hex() {
        assert_eq!(parse_seed("17"), Some(17));
        assert_eq!(parse_seed(" 0x1f "), Some(31));
        assert_eq!(parse_seed("seventeen"), None);
        assert_eq!(parse_seed("-1"), None);
    }
}
