//! The seven seed workloads of `shared/WORKLOADS.md`, on otter.
//!
//! Each workload is a [`Workload`]: its parameters (with defaults), a cross-parameter
//! validation, and a `run` that executes one measurement on a runtime and returns an
//! [`Outcome`]. Every file's header comment names the seed (`shared/SEEDS.md`), the
//! parameters, the timed region and the self-check; they mirror the Erlang twins in
//! `erlang-reference/bench_src/`.

pub(crate) mod closure;
pub(crate) mod counting;
pub(crate) mod mailbox;
pub(crate) mod memory;
pub(crate) mod pingpong;
pub(crate) mod ring;
pub(crate) mod spawn;

use std::fmt::Display;
use std::time::Duration;

use otter::{ExitReason, Runtime};

use crate::args::{ParamSpec, Params};

/// Processes a single run may ask for (otter's table holds 2^26; this leaves room and
/// turns an absurd `n` into a usage error instead of a panic).
pub(crate) const MAX_PROCESSES: u64 = 1 << 24;

/// One workload.
#[derive(Debug)]
pub(crate) struct Workload {
    /// The `BENCH` name.
    pub(crate) name: &'static str,
    /// One line for `--help`.
    pub(crate) summary: &'static str,
    /// Its parameters, in the order they are printed.
    pub(crate) params: &'static [ParamSpec],
    /// Cross-parameter checks; an error is a usage error (exit 2).
    pub(crate) validate: fn(&Params) -> Result<(), String>,
    /// Runs one measurement. An `Err` is a crashed process (exit 3).
    pub(crate) run: fn(&Runtime, &Params) -> Result<Outcome, ExitReason>,
}

/// Every workload, in WORKLOADS.md order.
pub(crate) const ALL: &[&Workload] = &[
    &ring::WORKLOAD,
    &spawn::WORKLOAD,
    &counting::WORKLOAD,
    &mailbox::WORKLOAD,
    &closure::WORKLOAD,
    &memory::WORKLOAD,
    &pingpong::WORKLOAD,
];

/// The workload called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().copied().find(|w| w.name == name)
}

/// What one measurement produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Wall-clock time of the timed region.
    pub(crate) seconds: f64,
    /// Operations done in it (the workload's unit).
    pub(crate) ops: u64,
    /// `Ok` if the self-check passed, else a short reason.
    pub(crate) check: Result<(), String>,
    /// Extra JSON fields, printed after `ops_per_s`.
    pub(crate) extra: Vec<(&'static str, serde_json::Value)>,
    /// Remarks for the `note` field.
    pub(crate) notes: Vec<String>,
}

impl Outcome {
    /// An outcome with no extra fields or notes.
    pub(crate) fn new(elapsed: Duration, ops: u64, check: Result<(), String>) -> Outcome {
        Outcome {
            seconds: elapsed.as_secs_f64(),
            ops,
            check,
            extra: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// `Ok` if `got == want`, else the reason `what: got G, want W`.
pub(crate) fn expect<T: PartialEq + Display>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

/// No cross-parameter constraint.
pub(crate) fn no_validation(_: &Params) -> Result<(), String> {
    Ok(())
}

/// `Err` if `needed` processes exceed [`MAX_PROCESSES`].
pub(crate) fn process_room(key: &str, needed: u64) -> Result<(), String> {
    if needed <= MAX_PROCESSES {
        Ok(())
    } else {
        Err(format!(
            "{key} needs {needed} processes, more than this harness allows ({MAX_PROCESSES})"
        ))
    }
}
