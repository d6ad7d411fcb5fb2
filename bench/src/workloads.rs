//! The seven seed workloads of `shared/WORKLOADS.md`, and `forkjoin` (a process tree
//! that sums its leaves), `latency` (round trips under load), `echo` (a TCP echo server
//! and its load: `echo-server`, `echo-load`) and `dist` (round trips between nodes over
//! Erlang distribution: `dist-pingpong`, `dist-echo`) and `overload` (producers faster
//! than their consumer, with and without a bounded mailbox), from its "Beyond the
//! seeds" part, on otter; and `http` (a JSON API on otter and on plain tokio, and its load:
//! `http-server`, `http-load`).
//!
//! Each workload is a [`Workload`]: its parameters (with defaults), a cross-parameter
//! validation, and a `run` that executes one measurement on a runtime and returns an
//! [`Outcome`]. Every file's header comment names the seed (`shared/SEEDS.md`), the
//! parameters, the timed region and the self-check; they mirror the Erlang twins in
//! `erlang-reference/bench_src/`.

pub(crate) mod closure;
pub(crate) mod counting;
pub(crate) mod dist;
pub(crate) mod echo;
pub(crate) mod forkjoin;
pub(crate) mod http;
pub(crate) mod latency;
pub(crate) mod mailbox;
pub(crate) mod memory;
pub(crate) mod overload;
pub(crate) mod pingpong;
pub(crate) mod ring;
pub(crate) mod spawn;

use std::fmt::Display;
use std::time::Duration;

use otter::{ExitReason, Runtime};

use crate::args::{Kind, ParamSpec, Params};
use crate::limits::{Bytes, Limits, MAX_OPS, MAX_OS_THREADS, MAX_PROCESSES};

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
    /// What a run with these parameters needs at most, checked against the machine's
    /// [`Limits`] before the run starts (see [`check`]).
    pub(crate) footprint: fn(&Params) -> Footprint,
    /// Runs one measurement. An `Err` is a crashed process or a refused resource (exit 3).
    pub(crate) run: fn(&Runtime, &Params) -> Result<Outcome, RunError>,
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
    &forkjoin::WORKLOAD,
    &latency::WORKLOAD,
    &echo::SERVER,
    &echo::LOAD,
    &dist::PINGPONG,
    &dist::ECHO,
    &overload::WORKLOAD,
    &http::SERVER,
    &http::LOAD,
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

/// Why a run produced no outcome (exit 3).
#[derive(Debug)]
pub(crate) enum RunError {
    /// A process crashed.
    Crashed(ExitReason),
    /// The machine refused a resource the checks allowed (an OS thread), and why.
    Refused(String),
}

impl From<ExitReason> for RunError {
    fn from(reason: ExitReason) -> RunError {
        RunError::Crashed(reason)
    }
}

/// What a run needs at most, from its parameters alone (in `u128`, so that no product of
/// parameters overflows). Each count names the keys it comes from, for the error message.
#[derive(Debug)]
pub(crate) struct Footprint {
    /// The JSON `ops`: (its expression in the keys, e.g. `"n*m"`; its value).
    pub(crate) ops: (&'static str, u128),
    /// Processes alive at once: (expression, value).
    pub(crate) processes: (&'static str, u128),
    /// OS threads the workload starts itself, besides the runtime's: (expression, value).
    pub(crate) os_threads: (&'static str, u128),
    /// The peak memory, item by item.
    pub(crate) memory: Vec<Charge>,
}

/// Memory charged for `count` items of one kind.
#[derive(Debug)]
pub(crate) struct Charge {
    /// The key or expression counting them, e.g. `"n"`.
    pub(crate) key: &'static str,
    /// How many.
    pub(crate) count: u128,
    /// What they are, e.g. `"ring processes"`.
    pub(crate) what: &'static str,
    /// Bytes each (a constant of `limits.rs`).
    pub(crate) each: u64,
}

impl Footprint {
    /// `ops` operations and `processes` processes; no OS thread, no memory charged yet.
    pub(crate) fn new(ops: (&'static str, u128), processes: (&'static str, u128)) -> Footprint {
        Footprint {
            ops,
            processes,
            os_threads: ("", 0),
            memory: Vec::new(),
        }
    }

    /// Adds `count` OS threads (expression `expr`).
    pub(crate) fn os_threads(mut self, expr: &'static str, count: u128) -> Footprint {
        self.os_threads = (expr, count);
        self
    }

    /// Charges `count` items (counted by `key`) of `each` bytes.
    pub(crate) fn charge(
        mut self,
        key: &'static str,
        count: u128,
        what: &'static str,
        each: u64,
    ) -> Footprint {
        self.memory.push(Charge {
            key,
            count,
            what,
            each,
        });
        self
    }

    /// The bytes charged in all.
    pub(crate) fn bytes(&self) -> u128 {
        self.memory
            .iter()
            .map(|c| c.count.saturating_mul(u128::from(c.each)))
            .fold(0, u128::saturating_add)
    }
}

/// Whether a run of `w` with `params` fits, before anything is allocated: the workload's
/// own checks, then its [`Footprint`] against [`MAX_OPS`], [`MAX_PROCESSES`],
/// [`MAX_OS_THREADS`] and the memory budget of `limits`. The error is the usage error's
/// message (exit 2).
pub(crate) fn check(w: &Workload, params: &Params, limits: &Limits) -> Result<(), String> {
    (w.validate)(params)?;
    let f = (w.footprint)(params);
    let (expr, ops) = f.ops;
    if ops > u128::from(MAX_OPS) {
        return Err(format!(
            "{expr} = {ops} operations, more than the {MAX_OPS} (10^12) a run may do"
        ));
    }
    let (expr, processes) = f.processes;
    if processes > u128::from(MAX_PROCESSES) {
        return Err(format!(
            "{expr} = {processes} processes alive at once, more than the {MAX_PROCESSES} \
             (2^24) a run may have"
        ));
    }
    let (expr, threads) = f.os_threads;
    if threads > u128::from(MAX_OS_THREADS) {
        return Err(format!(
            "{expr} = {threads} OS threads, more than the {MAX_OS_THREADS} a run may start \
             (each takes a pid and four memory mappings)"
        ));
    }
    let bytes = f.bytes();
    if bytes > u128::from(limits.memory_budget) {
        let items: Vec<String> = f
            .memory
            .iter()
            .filter(|c| c.count > 0)
            .map(|c| format!("{} = {} {} x {}", c.key, c.count, c.what, Bytes::of(c.each)))
            .collect();
        return Err(format!(
            "needs about {} at its peak ({}), more than the memory budget of {}: {}",
            Bytes(bytes),
            items.join(" + "),
            Bytes::of(limits.memory_budget),
            limits.basis
        ));
    }
    Ok(())
}

/// The largest value of the integer key `key` that [`check`] accepts with the other keys
/// at their defaults, or as in `with` (e.g. `["style=channel"]`); 0 if not even 1 is.
/// Every bound grows with every key, so a binary search finds it. `--help` prints it.
pub(crate) fn largest_accepted(w: &Workload, key: &str, with: &[String], limits: &Limits) -> u64 {
    let accepts = |v: u64| {
        let mut args = with.to_vec();
        // A name that must be given (dist's peer) gets a placeholder node.
        for p in w.params {
            if matches!(p.kind, Kind::Name("")) {
                args.push(format!("{}=node@host", p.name));
            }
        }
        args.push(format!("{key}={v}"));
        crate::args::parse(w.name, w.params, &args, 1)
            .is_ok_and(|(p, _)| check(w, &p, limits).is_ok())
    };
    if !accepts(1) {
        return 0;
    }
    let (mut lo, mut hi) = (1u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if accepts(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The integer keys of `w`, in spec order.
pub(crate) fn int_keys(w: &Workload) -> impl Iterator<Item = &'static str> {
    w.params
        .iter()
        .filter(|p| matches!(p.kind, Kind::PosInt(_) | Kind::IntIn(..)))
        .map(|p| p.name)
}

/// `n` as a count for [`Footprint`].
pub(crate) fn count(n: u64) -> u128 {
    u128::from(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{
        CHAIN_BYTES, MESSAGE_BYTES, OS_THREAD_BYTES, PROCESS_BYTES, RING_PROCESS_BYTES,
    };
    use crate::suite::{Sizes, cases, parse_options};

    fn checked(bench: &str, args: &[&str], limits: &Limits) -> Result<(), String> {
        let w = find(bench).expect("a workload");
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let (p, _) = crate::args::parse(bench, w.params, &args, 1).map_err(|e| e.0)?;
        check(w, &p, limits)
    }

    fn largest(bench: &str, key: &str, with: &[&str], limits: &Limits) -> u64 {
        let with: Vec<String> = with.iter().map(|a| a.to_string()).collect();
        largest_accepted(find(bench).expect("a workload"), key, &with, limits)
    }

    #[test]
    fn every_suite_case_fits_a_machine_of_2_gib() {
        // Half of 2 GiB: the suite must run on a small machine (the largest case, closure
        // n=10M style=message, is charged 480 MB).
        let small = Limits::with_budget(1 << 30);
        for o in [parse_options(&[]), parse_options(&["--full".to_string()])] {
            for c in cases(&Sizes::for_options(&o.expect("options"))) {
                let mut args: Vec<String> = c
                    .args
                    .iter()
                    .chain(&c.otter_extra)
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                // An echo case runs two programs; the load is the one that holds the memory.
                let bench = if c.bench == "echo" {
                    args.retain(|a| !a.starts_with("mode="));
                    args.push("port=1".into());
                    "echo-load"
                } else if c.bench == "http" {
                    // The load holds the connections; the server's impl is the suite's.
                    args.push("port=1".into());
                    "http-load"
                } else if c.bench == "dist" {
                    // The client holds the binaries; the echo node's peer is the suite's.
                    args.retain(|a| !a.starts_with("echo="));
                    args.push("peer=echo@host".into());
                    "dist-pingpong"
                } else {
                    c.bench
                };
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                assert_eq!(checked(bench, &args, &small), Ok(()), "{}", c.id);
            }
        }
        for w in ALL {
            // echo-load has no default port: the server's must be given; nor have the dist
            // programs a default node.
            let port: &[&str] = match w.name {
                "echo-load" | "http-load" => &["port=1"],
                "dist-pingpong" => &["peer=echo@host"],
                "dist-echo" => &["name=echo"],
                _ => &[],
            };
            assert_eq!(checked(w.name, port, &small), Ok(()), "{} defaults", w.name);
        }
    }

    #[test]
    fn bounds_follow_the_charges() {
        let l = Limits::with_budget(1000 * RING_PROCESS_BYTES);
        assert_eq!(largest("ring", "n", &[], &l), 1000);
        assert_eq!(largest("ring", "m", &["n=1000"], &l), MAX_OPS / 1000);
        let l = Limits::with_budget(10 * PROCESS_BYTES);
        assert_eq!(largest("memory", "p", &[], &l), 10);
        assert_eq!(largest("mailbox", "k", &["order=reverse"], &l), 10);
        assert_eq!(
            largest(
                "counting",
                "senders",
                &["msgs=1"],
                &Limits::with_budget(10 * PROCESS_BYTES + RING_PROCESS_BYTES + MESSAGE_BYTES)
            ),
            10
        );
        assert_eq!(
            largest(
                "counting",
                "receivers",
                &["msgs=1"],
                &Limits::with_budget(PROCESS_BYTES + 10 * RING_PROCESS_BYTES + MESSAGE_BYTES)
            ),
            10
        );
        let l = Limits::with_budget(10 * CHAIN_BYTES);
        assert_eq!(largest("spawn", "c", &["n=1000"], &l), 10);
        assert_eq!(largest("spawn", "n", &[], &l), MAX_OPS);
        let l = Limits::with_budget(100 * MESSAGE_BYTES);
        assert_eq!(largest("closure", "n", &[], &l), 100);
        assert_eq!(largest("closure", "n", &["style=closure"], &l), MAX_OPS);
        assert_eq!(largest("pingpong", "r", &[], &l), MAX_OPS);
        assert_eq!(
            largest(
                "counting",
                "msgs",
                &["style=channel"],
                &Limits::with_budget(2 * OS_THREAD_BYTES + 100 * MESSAGE_BYTES)
            ),
            100
        );
    }

    #[test]
    fn machine_independent_bounds() {
        let huge = Limits::with_budget(u64::MAX);
        assert_eq!(largest("ring", "n", &["m=1"], &huge), MAX_PROCESSES);
        assert_eq!(largest("memory", "p", &[], &huge), MAX_PROCESSES - 1);
        assert_eq!(
            largest("counting", "senders", &[], &huge),
            MAX_PROCESSES - 2
        );
        assert_eq!(
            largest("counting", "senders", &["style=channel"], &huge),
            MAX_OS_THREADS - 1
        );
        assert_eq!(
            largest("counting", "receivers", &[], &huge),
            MAX_PROCESSES - 2
        );
        assert_eq!(
            largest("counting", "receivers", &["style=channel"], &huge),
            MAX_OS_THREADS - 1
        );
        assert_eq!(
            largest("spawn", "c", &["n=1000000000"], &huge),
            MAX_PROCESSES / 2 - 1
        );
        assert_eq!(largest("counting", "msgs", &[], &huge), MAX_OPS);
        // Counts past u64 do not wrap into acceptance.
        for (bench, args) in [
            ("ring", &["n=16777216", "m=18446744073709551615"][..]),
            (
                "spawn",
                &["n=18446744073709551615", "c=18446744073709551615"],
            ),
            ("counting", &["senders=18446744073709551615"]),
            ("counting", &["receivers=18446744073709551615"]),
            (
                "counting",
                &["senders=18446744073709551615", "style=channel"],
            ),
        ] {
            assert!(checked(bench, args, &huge).is_err(), "{bench} {args:?}");
        }
    }
}
