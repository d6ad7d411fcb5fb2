//! `otter-bench`: otter's benchmark harness.
//!
//! ```text
//! otter-bench BENCH key=value ... [threads=N]     one measurement, one JSON line on stdout
//! otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang] [--only BENCH,..]
//! otter-bench                                     the suite with its defaults
//! ```
//!
//! A single run follows the contract of `shared/WORKLOADS.md`, exactly like the Erlang twin
//! `erlang-reference/bench`: one JSON object on one line on stdout; exit 0 if the self-check
//! passed, 1 if it failed (the line is printed all the same), 2 on a bad command line
//! (unknown workload or key, malformed `key=value`, bad value, or values that would need
//! more than the bounds of `limits.rs` allow: one line on stderr, nothing on stdout), 3 if
//! a process crashed or the runtime (or an OS thread) could not start. Every error is one
//! line: arguments are quoted escaped.
//!
//! The suite runs the seeds' experiments, this binary and the Erlang twin alternately, one
//! measurement per subprocess (`suite.rs`), and writes `bench-report/` (`report.rs`). The
//! workloads themselves are in `workloads/`, one file each.

mod args;
mod json_line;
mod limits;
#[cfg(feature = "observe")]
mod observe;
mod report;
mod suite;
mod sysinfo;
mod workloads;

use std::process::ExitCode;

use crate::limits::{
    Bytes, CHAIN_BYTES, Limits, MAX_OPS, MAX_OS_THREADS, MAX_PROCESSES, MESSAGE_BYTES,
    OS_THREAD_BYTES, PROCESS_BYTES, RING_PROCESS_BYTES,
};
use crate::workloads::RunError;

/// Exit code: the run's self-check failed.
const EXIT_CHECK_FAILED: u8 = 1;
/// Exit code: bad command line.
const EXIT_USAGE: u8 = 2;
/// Exit code: a process crashed or the runtime failed.
const EXIT_INTERNAL: u8 = 3;

/// The harness runs on mimalloc, as a Rust service would on a many-core box; the BEAM
/// brings its own allocators. With glibc's allocator a process spawned on one worker
/// and freed on another serialises both threads on an arena lock (the `mailbox`
/// workload spent a fifth of its time in that lock's futex). The otter library itself
/// leaves the choice to the application. `--no-default-features` builds on the system
/// allocator, which `.ci/run` does for its valgrind leak check (valgrind sees only
/// malloc); every JSON line says which allocator ran (`"alloc"`).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The global allocator this binary was built with.
pub(crate) const ALLOC: &str = if cfg!(feature = "mimalloc") {
    "mimalloc"
} else {
    "system"
};

fn main() -> ExitCode {
    let mut args = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(a) => {
                eprintln!("otter-bench: argument {a:?} is not valid UTF-8");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    match args.first().map(String::as_str) {
        None => suite::main(&[]),
        Some("suite") => suite::main(&args[1..]),
        Some("report") => report::main(&args[1..]),
        Some("-h" | "--help" | "help") => {
            eprintln!("{}", usage());
            ExitCode::SUCCESS
        }
        Some(bench) => run_one(bench, &args[1..]),
    }
}

fn usage() -> String {
    let limits = Limits::of_this_machine();
    let mut s = String::from(
        "usage: otter-bench BENCH [key=value ...] [threads=N]\n       \
         otter-bench [suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang] [--only BENCH,..]]\n       \
         otter-bench report RESULTS.jsonl [--out DIR]\n\
         workloads (defaults shown; max: the largest value of each key on this machine, the\n\
         other keys at their defaults):",
    );
    for w in workloads::ALL {
        let params: Vec<String> = w
            .params
            .iter()
            .map(|p| match p.kind {
                args::Kind::PosInt(d) => format!("{}={d}", p.name),
                args::Kind::IntIn(lo, hi, d) => format!("{}={d} ({lo}..{hi})", p.name),
                args::Kind::Choice(cs, d) => format!("{}={d} ({})", p.name, cs.join("|")),
                args::Kind::Name("") => format!("{}=NAME", p.name),
                args::Kind::Name(d) => format!("{}={d}", p.name),
            })
            .collect();
        s.push_str(&format!(
            "\n  {:<9} {}\n            {}\n            max: {}",
            w.name,
            params.join(" "),
            w.summary,
            largest_values(w, &limits)
        ));
    }
    s.push_str(&format!(
        "\n  threads=N (every workload): scheduler threads, 1..{} (default: all cores)\n\
         bounds, checked before a run allocates anything (a run over one is a bad command\n\
         line: one line on stderr, exit 2):\n  \
         ops (the JSON ops, ring's n*m) <= {MAX_OPS}: hours at any rate, and exact in JSON\n  \
         processes alive at once <= {MAX_PROCESSES}\n  \
         OS threads a run starts (counting style=channel: senders+receivers) <= {MAX_OS_THREADS}: each \
         takes a pid\n    and four memory mappings; Linux's defaults run out near 16,000 threads\n  \
         memory at the peak <= {budget} here: {basis}, the least of\n    \
         MemTotal, the cgroup's memory limit, ulimit -v and ulimit -d. Charged, measured peaks\n    \
         plus a margin: a ring process {ring} (it keeps a message block), an idle process,\n    \
         a mailbox child or a counting sender {process}, a spawn chain {chain}, an OS thread\n    \
         {thread} (its stack), a message {message} (counting's msgs and closure style=message's\n    \
         n may all be queued at once)\n  \
         suite: --reps 1..{max_reps}, --timeout 1..{max_timeout} (seconds: a week)",
        args::MAX_THREADS,
        max_reps = suite::MAX_REPS,
        max_timeout = suite::MAX_TIMEOUT_SECS,
        budget = Bytes::of(limits.memory_budget),
        basis = limits.basis,
        ring = Bytes::of(RING_PROCESS_BYTES),
        process = Bytes::of(PROCESS_BYTES),
        chain = Bytes::of(CHAIN_BYTES),
        thread = Bytes::of(OS_THREAD_BYTES),
        message = Bytes::of(MESSAGE_BYTES),
    ));
    s
}

/// `n=9865476 m=1000000000`: the largest value of each integer key of `w` (the others at
/// their defaults), then, for each choice that lowers one, e.g. `(style=channel: senders=1024)`.
fn largest_values(w: &workloads::Workload, limits: &Limits) -> String {
    let maxima = |with: &[String]| -> Vec<String> {
        workloads::int_keys(w)
            .map(|k| format!("{k}={}", workloads::largest_accepted(w, k, with, limits)))
            .collect()
    };
    let base = maxima(&[]);
    if base.is_empty() {
        return "(no integer key)".into();
    }
    let mut s = base.join(" ");
    for p in w.params {
        let args::Kind::Choice(choices, default) = p.kind else {
            continue;
        };
        for c in choices.iter().filter(|c| **c != default) {
            let with = format!("{}={c}", p.name);
            let differ: Vec<String> = maxima(std::slice::from_ref(&with))
                .into_iter()
                .zip(&base)
                .filter(|(m, b)| m != *b)
                .map(|(m, _)| m)
                .collect();
            if !differ.is_empty() {
                s.push_str(&format!(" ({with}: {})", differ.join(" ")));
            }
        }
    }
    s
}

/// One measurement of workload `bench`.
fn run_one(bench: &str, kvs: &[String]) -> ExitCode {
    let Some(w) = workloads::find(bench) else {
        let names: Vec<&str> = workloads::ALL.iter().map(|w| w.name).collect();
        eprintln!(
            "otter-bench: unknown workload {bench:?}; BENCH is one of {} (or suite)",
            names.join(", ")
        );
        return ExitCode::from(EXIT_USAGE);
    };
    let (params, threads) = match args::parse(bench, w.params, kvs, sysinfo::cores()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("otter-bench: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Err(why) = workloads::check(w, &params, &Limits::of_this_machine()) {
        eprintln!("otter-bench: {bench}: {why}");
        return ExitCode::from(EXIT_USAGE);
    }
    // The echo workload's server (serves until stdin closes) and load (not on otter) are
    // programs of their own, past the same command-line checks.
    if let Some(program) = workloads::echo::program(bench) {
        return program(&params, threads);
    }
    // So are the http workload's server (otter or tokio) and load (on neither).
    if let Some(program) = workloads::http::program(bench) {
        return program(&params, threads);
    }
    // So is the dist workload's echo node (serves until stdin closes).
    if let Some(program) = workloads::dist::program(bench) {
        return program(&params, threads);
    }
    let rt = match otter::Runtime::builder()
        .threads(threads)
        .thread_name("otter-bench")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("otter-bench: {bench}: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_INTERNAL);
        }
    };
    #[cfg(feature = "observe")]
    let observed = observe::start(&rt);
    let outcome = match (w.run)(&rt, &params) {
        Ok(o) => o,
        Err(RunError::Crashed(reason)) => {
            eprintln!("otter-bench: {bench}: the benchmark process crashed: {reason:?}");
            return ExitCode::from(EXIT_INTERNAL);
        }
        Err(RunError::Refused(why)) => {
            eprintln!("otter-bench: {bench}: {why}");
            return ExitCode::from(EXIT_INTERNAL);
        }
    };
    #[cfg(feature = "observe")]
    drop(observed);
    println!("{}", json_line::json(bench, &params, threads, &outcome));
    // Printed first: the line is out even if shutting the runtime down were to hang.
    drop(rt);
    if outcome.check.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_CHECK_FAILED)
    }
}
