//! `otter-bench suite`: the seeds' experiments, otter against the Erlang reference.
//!
//! ```text
//! otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang] [--only BENCH,..]
//! otter-bench suite --ab BIN_A,BIN_B[,..] [--reps ROUNDS] [--case "BENCH k=v .."].. [--fields F,..] [..]
//! ```
//!
//! With `--ab`, paired rounds of two or more builds instead (`suite/ab.rs`).
//!
//! Every measurement is one subprocess: this binary (`std::env::current_exe`) or the Erlang
//! twin `erlang-reference/bench` (`OTTER_ERLANG_BENCH` overrides its path; the default is
//! `<workspace>/erlang-reference/bench`, the workspace being known at compile time, falling
//! back to `./erlang-reference/bench`). For each repetition the cases run in order, each one
//! otter and Erlang back to back (which goes first alternates between repetitions); the report
//! takes medians over the `--reps` repetitions (default 3; 1 with `--quick`).
//!
//! The cases (SEEDS.md / WORKLOADS.md):
//! * ring: n, m in {100, 1000, 10000}; the 10000 x 10000 cell (100M sends) only with `--full`;
//! * spawn: n = 1M, c in {1, 10, 100};
//! * counting: msgs = 3M, style raw and server, senders 1 and the number of cores; and
//!   style channel (OS threads over `std::sync::mpsc`, otter's side only), 1 sender;
//! * mailbox: k in {1000, 3000, 10000, 30000, 100000}, both orders: otter `style=key` and
//!   Erlang; otter `style=match` (Erlang's selective receive) for k up to 10000. Once an
//!   Erlang run takes over 60 s (or times out), the larger k of that order are skipped for
//!   Erlang, and so are further repetitions of that k; the report says so;
//! * closure: n = 10M, both styles; memory: p = 100000; pingpong: r = 1M, both styles;
//! * latency: r = 100000 (500 with `--quick`) timed round trips, b = 1000, w = 5, hog 0 and 1;
//! * echo: a TCP echo server (otter's, Erlang's) in passive and active mode under
//!   `echo-load`, conns in {1, 100, 1000} (and 10000 with `--full`, if `ulimit -n` allows),
//!   size in {64, 4096}, 3 s measured (`--quick`: conns 1 and 100, size 64, 1 s); the
//!   server on core 0, the load on core 1 (`suite/echo.rs`);
//! * dist: round trips of a 64-byte binary (and 4 KiB with `--full`) between two nodes over
//!   Erlang distribution, r = 20000 (2000 with `--quick`), for the four pairs
//!   (client otter or Erlang, echo node otter or Erlang); the echo node on core 0, the client
//!   on core 1 (`suite/dist.rs`).
//! * http: the same axum JSON API on otter and on plain tokio (`impl=tokio`, this binary:
//!   the third implementation, [`Impl::Tokio`]) under `http-load`'s 200 keep-alive
//!   connections, 10 s measured (2 s with `--quick`); server on core 0, load on core 1
//!   (`suite/http.rs`).
//!
//! `--only BENCH,..` runs the cases of those workloads alone (the report's other sections are
//! then empty). `--quick` runs every case at a small size (the whole suite in well under a minute, for
//! CI). `--no-erlang` runs otter alone; so does a machine without `erl` on PATH (the suite
//! says how to install it and marks the Erlang cases skipped).
//!
//! Output, in `--out` (default `bench-report/`): `results.jsonl` (every run's JSON line plus
//! `case`, `rep`, `exit_code`; failed and skipped runs too), `meta.json` (machine and
//! versions), `REPORT.md` with one table per seed and the SVG plots: all written by `report.rs`
//! (`otter-bench report DIR/results.jsonl` renders the last two again from the first two).
//!
//! Here: the options, the run loop and its progress; `suite/cases.rs` says what runs (cases
//! and sizes), `suite/invoke.rs` runs one measurement as a subprocess.
//! Exit code 0, or 1 if any run failed its check or crashed.

mod ab;
mod cases;
mod dist;
mod echo;
mod http;
mod invoke;
mod peer;

use std::collections::HashMap;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use crate::{report, sysinfo};
pub(crate) use cases::{Case, FAN_OUT_RECEIVERS, Impl, LATENCY_B, LATENCY_W, Sizes, cases};
pub(crate) use cases::{HTTP_CONNS, HTTP_WORK_US, OVERLOAD_BOUND};
use invoke::{erlang_bench, invoke};

/// An Erlang run longer than this stops the larger sizes of its group (mailbox).
const ERLANG_CUTOFF_SECS: f64 = 60.0;
/// How to get Erlang, for the message when `erl` is missing.
pub(crate) const INSTALL_ERLANG: &str = "apt-get install -y erlang-nox";

const SUITE_USAGE: &str = "usage: otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang] [--only BENCH,..] [--ab BIN_A,BIN_B[,..] [--case \"BENCH k=v ..\"].. [--fields F,..]]";
/// The most repetitions `--reps` takes: a default run takes about 15 minutes a repetition,
/// so 1000 is ten days; the bound catches typos and keeps the run count in range.
pub(crate) const MAX_REPS: u64 = 1000;
/// The longest `--timeout` a run may have, in seconds: a week (the slowest run of a full
/// suite, Erlang's mailbox at k=100,000 in reverse order, takes under a minute).
pub(crate) const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// The suite's options.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) full: bool,
    pub(crate) reps: usize,
    pub(crate) out: PathBuf,
    pub(crate) timeout: Duration,
    pub(crate) no_erlang: bool,
    /// `--only ring,echo`: the cases of these workloads alone (empty: every case).
    pub(crate) only: Vec<String>,
}

/// The suite's command line. An error's message quotes what was given escaped (`{:?}`), so
/// it is one line.
pub(crate) fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        full: false,
        reps: 0,
        out: PathBuf::from("bench-report"),
        timeout: Duration::ZERO,
        no_erlang: false,
        only: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let positive = |name: &str, v: String, max: u64| match v.parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) && v.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(format!("{name}: {v:?} is not an integer in 1..={max}")),
        };
        match a.as_str() {
            "--quick" => o.quick = true,
            "--full" => o.full = true,
            "--no-erlang" => o.no_erlang = true,
            "--reps" => o.reps = positive("--reps", value("--reps")?, MAX_REPS)? as usize,
            "--timeout" => {
                let secs = positive("--timeout", value("--timeout")?, MAX_TIMEOUT_SECS)?;
                o.timeout = Duration::from_secs(secs);
            }
            "--out" => o.out = PathBuf::from(value("--out")?),
            "--only" => {
                let known = cases::benches();
                for b in value("--only")?.split(',') {
                    if !known.contains(&b) {
                        return Err(format!(
                            "--only: unknown workload {b:?} (one of {})",
                            known.join(", ")
                        ));
                    }
                    o.only.push(b.to_string());
                }
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown suite option {other:?}")),
        }
    }
    if o.quick && o.full {
        return Err("--quick and --full exclude each other".into());
    }
    if o.reps == 0 {
        o.reps = if o.quick { 1 } else { 3 };
    }
    if o.timeout.is_zero() {
        o.timeout = Duration::from_secs(if o.quick { 120 } else { 900 });
    }
    Ok(o)
}

/// How one run ended.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Exit 0, check ok: the JSON line.
    Ok(Value),
    /// A JSON line whose check failed.
    CheckFailed(Value, String),
    /// No usable JSON line: crash, bad exit code, timeout.
    Error(String),
    /// Not run, and why.
    Skipped(String),
}

/// One run of one case on one implementation.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) case: usize,
    pub(crate) imp: Impl,
    pub(crate) rep: usize,
    pub(crate) outcome: Outcome,
}

/// The machine and versions, for the report and `meta.json`.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) date: String,
    pub(crate) cpu: String,
    pub(crate) cores: usize,
    pub(crate) memory: String,
    pub(crate) kernel: String,
    pub(crate) rustc: String,
    pub(crate) otp: String,
    pub(crate) commit: String,
    pub(crate) build: &'static str,
    pub(crate) command: String,
    pub(crate) erlang: Result<PathBuf, String>,
    /// Steal time over the whole run (a share of all CPU time, /proc/stat), once it is over.
    pub(crate) steal: Option<f64>,
    /// The run with the most steal time: its share, and which run.
    pub(crate) steal_worst: Option<(f64, String)>,
}

/// Steal time above this share of the run (3%) is warned about: the figures are then the
/// neighbours' as much as ours.
pub(crate) const STEAL_WARN: f64 = 0.03;

/// "quick", "full" or "default".
pub(crate) fn mode(o: &Options) -> &'static str {
    if o.quick {
        "quick"
    } else if o.full {
        "full"
    } else {
        "default"
    }
}

/// Entry point of `otter-bench suite ...` (and of `otter-bench` alone).
pub(crate) fn main(args: &[String]) -> ExitCode {
    let (ab, args) = match ab::Ab::split(args) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("otter-bench suite: {e}; {SUITE_USAGE}");
            return ExitCode::from(2);
        }
    };
    let o = match parse_options(&args) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            eprintln!("{SUITE_USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("otter-bench suite: {e}; {SUITE_USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match ab {
        Some(mut ab) => {
            if !args.iter().any(|a| a == "--reps") {
                ab.rounds = ab::ROUNDS;
            }
            ab::run(&o, &ab)
        }
        None => run(&o),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("otter-bench suite: {e}");
            ExitCode::from(3)
        }
    }
}

fn run(o: &Options) -> Result<ExitCode, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
    let erlang = erlang_bench(o);
    if let Err(why) = &erlang
        && !o.no_erlang
    {
        eprintln!(
            "otter-bench suite: Erlang cases skipped: {why}; otter runs alone.\n  To compare with Erlang, install it (as root): {INSTALL_ERLANG}"
        );
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "otter-bench suite: this is a debug build, its numbers mean nothing: use cargo run --release -p otter-bench -- suite"
        );
    }
    let workspace = sysinfo::workspace_dir();
    let cpu_start = sysinfo::cpu_times();
    let mut meta = Meta {
        date: sysinfo::now_utc(),
        cpu: sysinfo::cpu_model(),
        cores: sysinfo::cores(),
        memory: sysinfo::memory(),
        kernel: sysinfo::kernel(),
        rustc: sysinfo::rustc_version(),
        otp: if erlang.is_ok() {
            sysinfo::otp_version().unwrap_or_else(|| "unknown".into())
        } else {
            "not used".into()
        },
        commit: sysinfo::git_commit(&workspace).unwrap_or_else(|| "unknown".into()),
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        command: std::iter::once("otter-bench".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        erlang,
        steal: None,
        steal_worst: None,
    };

    std::fs::create_dir_all(&o.out).map_err(|e| format!("cannot create {:?}: {e}", o.out))?;
    let results_path = o.out.join("results.jsonl");
    let mut results_file =
        File::create(&results_path).map_err(|e| format!("cannot write {results_path:?}: {e}"))?;
    std::fs::write(
        o.out.join("meta.json"),
        format!("{:#}\n", report::results::meta(&meta, o)),
    )
    .map_err(|e| format!("cannot write meta.json: {e}"))?;

    let sizes = Sizes::for_options(o);
    let cases: Vec<Case> = cases(&sizes)
        .into_iter()
        .filter(|c| o.only.is_empty() || o.only.iter().any(|b| b == c.bench))
        .collect();
    let total: usize = cases.iter().map(|c| c.impls.len()).sum::<usize>() * o.reps;
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        let b = ProgressBar::new(total as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:32.cyan/blue}] {pos}/{len} {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let say = |line: String| {
        if tty {
            bar.println(line);
        } else {
            eprintln!("{line}");
        }
    };
    say(format!(
        "otter-bench suite ({} mode): {} cases, {} runs, {} repetition(s), out {}",
        mode(o),
        cases.len(),
        total,
        o.reps,
        o.out.display()
    ));

    let mut records: Vec<Record> = Vec::new();
    // Erlang cutoff per group: the index of the case whose run passed the limit.
    let mut cut: HashMap<String, (usize, String)> = HashMap::new();
    let mut done = 0usize;
    for rep in 0..o.reps {
        for (ci, c) in cases.iter().enumerate() {
            let mut order = c.impls.clone();
            if rep % 2 == 1 {
                order.reverse();
            }
            for imp in order {
                done += 1;
                bar.set_message(format!("{} {} (rep {})", imp.name(), c.id, rep + 1));
                let skip = match imp {
                    Impl::Otter | Impl::Tokio => None,
                    Impl::Erlang => match &meta.erlang {
                        Err(why) => Some(why.clone()),
                        Ok(_) => c
                            .cutoff_group
                            .as_ref()
                            .and_then(|g| cut.get(g))
                            .filter(|(at, _)| ci >= *at)
                            .map(|(_, why)| why.clone()),
                    },
                };
                let cpu_before = sysinfo::cpu_times();
                let (outcome, code) = match skip {
                    Some(why) => (Outcome::Skipped(why), None),
                    None => {
                        let program = match imp {
                            Impl::Otter | Impl::Tokio => me.clone(),
                            Impl::Erlang => meta.erlang.clone().unwrap_or_default(),
                        };
                        let erlang = meta.erlang.as_deref().ok();
                        measure(c, imp, &program, &me, erlang, o.timeout)
                    }
                };
                if imp == Impl::Erlang
                    && let Some(g) = &c.cutoff_group
                {
                    let slow = match &outcome {
                        Outcome::Ok(v) | Outcome::CheckFailed(v, _) => v["seconds"]
                            .as_f64()
                            .filter(|s| *s > ERLANG_CUTOFF_SECS)
                            .map(|s| format!("{s:.1} s")),
                        Outcome::Error(e) if e.starts_with("timed out") => Some(e.clone()),
                        _ => None,
                    };
                    if let Some(took) = slow {
                        cut.entry(g.clone()).or_insert((
                            ci,
                            format!(
                                "Erlang stopped: {} took {took} (over {ERLANG_CUTOFF_SECS:.0} s)",
                                c.id
                            ),
                        ));
                    }
                }
                let steal = match outcome {
                    Outcome::Skipped(_) => None,
                    _ => sysinfo::steal_share(cpu_before, sysinfo::cpu_times()),
                };
                if let Some(st) = steal
                    && meta.steal_worst.as_ref().is_none_or(|(w, _)| st > *w)
                {
                    let what = format!("{} {} (rep {})", imp.name(), c.id, rep + 1);
                    meta.steal_worst = Some((st, what));
                }
                say(format!(
                    "[{done:>4}/{total}] {:<6} {:<44} rep {}: {}{}",
                    imp.name(),
                    c.id,
                    rep + 1,
                    describe(&outcome),
                    steal
                        .filter(|st| *st > STEAL_WARN)
                        .map_or(String::new(), |st| format!(" (steal {:.1}%)", st * 100.0))
                ));
                let line = report::results::line(c, imp, rep, code, &outcome, steal);
                writeln!(results_file, "{line}")
                    .map_err(|e| format!("cannot write results.jsonl: {e}"))?;
                records.push(Record {
                    case: ci,
                    imp,
                    rep,
                    outcome,
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    meta.steal = sysinfo::steal_share(cpu_start, sysinfo::cpu_times());
    std::fs::write(
        o.out.join("meta.json"),
        format!("{:#}\n", report::results::meta(&meta, o)),
    )
    .map_err(|e| format!("cannot write meta.json: {e}"))?;
    if let Some(st) = meta.steal.filter(|st| *st > STEAL_WARN) {
        eprintln!(
            "otter-bench suite: warning: {:.1}% of the machine's CPU time was stolen by the \
             hypervisor during the run (over {:.0}%): the figures move with the neighbours' load",
            st * 100.0,
            STEAL_WARN * 100.0
        );
    }

    let summary = report::render(&results_path, &o.out)?;
    println!("{}", summary.text);
    Ok(if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One run of `c` on `imp`: `program` is the binary that runs it (this one or the Erlang
/// twin); `me` is otter's binary for the other roles (an echo case's load, a dist case's
/// otter echo node, an http case's server and load); `erlang`, the Erlang twin if any.
fn measure(
    c: &Case,
    imp: Impl,
    program: &std::path::Path,
    me: &std::path::Path,
    erlang: Option<&std::path::Path>,
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let mut args = c.args.clone();
    if imp == Impl::Otter {
        args.extend(c.otter_extra.iter().cloned());
    }
    let argv: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if c.bench == http::BENCH {
        http::run(me, imp, &args, timeout)
    } else if c.bench == echo::BENCH {
        echo::run(program, me, &args, timeout)
    } else if c.bench == dist::BENCH {
        dist::run(program, imp, me, erlang, &args, timeout)
    } else {
        invoke(program, c.bench, &argv, timeout)
    }
}

/// One progress line's verdict.
fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Ok(v) => format!(
            "{} ok",
            crate::report::format::secs(v["seconds"].as_f64().unwrap_or(0.0))
        ),
        Outcome::CheckFailed(_, why) => format!("CHECK FAILED: {why}"),
        Outcome::Error(e) => format!("FAILED: {e}"),
        Outcome::Skipped(why) => format!("skipped ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(args: &[&str]) -> Result<Options, String> {
        parse_options(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options() {
        let o = opts(&[]).unwrap();
        assert_eq!((o.reps, o.quick, o.full), (3, false, false));
        assert_eq!(opts(&["--quick"]).unwrap().reps, 1);
        assert_eq!(opts(&["--quick", "--reps", "2"]).unwrap().reps, 2);
        assert_eq!(opts(&["--out", "x"]).unwrap().out, PathBuf::from("x"));
        assert!(opts(&["--reps", "0"]).is_err());
        assert_eq!(opts(&["--reps", "1000"]).unwrap().reps, 1000);
        assert!(opts(&["--reps", "1001"]).is_err());
        assert!(opts(&["--reps", "18446744073709551615"]).is_err());
        assert!(opts(&["--timeout", "604800"]).is_ok());
        assert!(opts(&["--timeout", "604801"]).is_err());
        for bad in [
            &["--reps", "1\n2"][..],
            &["--bo\ngus"],
            &["--timeout", "\r"],
        ] {
            let e = opts(bad).expect_err("a bad option");
            assert!(!e.chars().any(char::is_control), "{bad:?}: {e}");
        }
        assert!(opts(&["--reps"]).is_err());
        assert!(opts(&["--quick", "--full"]).is_err());
        assert!(opts(&["--bogus"]).is_err());
        assert_eq!(
            opts(&["--only", "echo,ring"]).unwrap().only,
            ["echo", "ring"]
        );
        assert!(opts(&["--only", "echo,nope"]).is_err());
        assert!(opts(&["--only"]).is_err());
    }
}
