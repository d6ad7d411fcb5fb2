//! `otter-bench`: otter's benchmark harness.
//!
//! ```text
//! otter-bench BENCH key=value ... [threads=N]     one measurement, one JSON line on stdout
//! otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang]
//! otter-bench                                     the suite with its defaults
//! ```
//!
//! A single run follows the contract of `shared/WORKLOADS.md`, exactly like the Erlang twin
//! `erlang-reference/bench`: one JSON object on one line on stdout; exit 0 if the self-check
//! passed, 1 if it failed (the line is printed all the same), 2 on a bad command line
//! (unknown workload or key, malformed `key=value`, bad value: one line on stderr, nothing
//! on stdout), 3 if a process crashed or the runtime could not start. Every error is one
//! line: arguments are quoted escaped.
//!
//! The suite runs the seeds' experiments, this binary and the Erlang twin alternately, one
//! measurement per subprocess, and writes `bench-report/` (see `suite.rs`).

mod args;
mod plot;
mod report;
mod suite;
mod sysinfo;
mod workloads;

use std::process::ExitCode;

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
        Some("-h" | "--help" | "help") => {
            eprintln!("{}", usage());
            ExitCode::SUCCESS
        }
        Some(bench) => run_one(bench, &args[1..]),
    }
}

fn usage() -> String {
    let mut s = String::from(
        "usage: otter-bench BENCH [key=value ...] [threads=N]\n       \
         otter-bench [suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang]]\n\
         workloads (defaults shown):",
    );
    for w in workloads::ALL {
        let params: Vec<String> = w
            .params
            .iter()
            .map(|p| match p.kind {
                args::Kind::PosInt(d) => format!("{}={d}", p.name),
                args::Kind::Choice(cs, d) => format!("{}={d} ({})", p.name, cs.join("|")),
            })
            .collect();
        s.push_str(&format!(
            "\n  {:<9} {}\n            {}",
            w.name,
            params.join(" "),
            w.summary
        ));
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
    if let Err(why) = (w.validate)(&params) {
        eprintln!("otter-bench: {bench}: {why}");
        return ExitCode::from(EXIT_USAGE);
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
    let outcome = match (w.run)(&rt, &params) {
        Ok(o) => o,
        Err(reason) => {
            eprintln!("otter-bench: {bench}: the benchmark process crashed: {reason:?}");
            return ExitCode::from(EXIT_INTERNAL);
        }
    };
    println!("{}", report::json(bench, &params, threads, &outcome));
    // Printed first: the line is out even if shutting the runtime down were to hang.
    drop(rt);
    if outcome.check.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_CHECK_FAILED)
    }
}
