//! `otter-bench suite`: the seeds' experiments, otter against the Erlang reference.
//!
//! ```text
//! otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang]
//! ```
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
//! * closure: n = 10M, both styles; memory: p = 100000; pingpong: r = 1M, both styles.
//!
//! `--quick` runs every case at a small size (the whole suite in well under a minute, for
//! CI). `--no-erlang` runs otter alone; so does a machine without `erl` on PATH (the suite
//! says how to install it and marks the Erlang cases skipped).
//!
//! Output, in `--out` (default `bench-report/`): `results.jsonl` (every run's JSON line plus
//! `case`, `rep`, `exit_code`; failed and skipped runs too), `meta.json` (machine and
//! versions), `REPORT.md` with one table per seed and the SVG plots (see `suite/markdown.rs`).
//! Exit code 0, or 1 if any run failed its check or crashed.

mod markdown;

use std::collections::HashMap;
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value, json};

use crate::sysinfo;

/// An Erlang run longer than this stops the larger sizes of its group (mailbox).
const ERLANG_CUTOFF_SECS: f64 = 60.0;
/// How to get Erlang, for the message when `erl` is missing.
pub(crate) const INSTALL_ERLANG: &str = "apt-get install -y erlang-nox";

const SUITE_USAGE: &str = "usage: otter-bench suite [--quick] [--full] [--reps N] [--out DIR] [--timeout SECS] [--no-erlang]";
/// The most repetitions `--reps` takes: a default run takes about 15 minutes a repetition,
/// so 1000 is ten days; the bound catches typos and keeps the run count in range.
pub(crate) const MAX_REPS: u64 = 1000;
/// The longest `--timeout` a run may have, in seconds: a week (the slowest run of a full
/// suite, Erlang's mailbox at k=100,000 in reverse order, takes under a minute).
pub(crate) const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// The suite's options.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) full: bool,
    pub(crate) reps: usize,
    pub(crate) out: PathBuf,
    pub(crate) timeout: Duration,
    pub(crate) no_erlang: bool,
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

/// Which implementation a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Impl {
    Otter,
    Erlang,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Otter => "otter",
            Impl::Erlang => "erlang",
        }
    }
}

/// One experiment: a workload with parameters, run on one or both implementations.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) bench: &'static str,
    /// `bench key=value ...`: the name in results and report.
    pub(crate) id: String,
    /// Arguments for both implementations.
    pub(crate) args: Vec<(&'static str, String)>,
    /// Arguments only otter gets (e.g. `style=key` for mailbox).
    pub(crate) otter_extra: Vec<(&'static str, String)>,
    pub(crate) impls: Vec<Impl>,
    /// Erlang runs over 60 s stop the later cases of the same group.
    pub(crate) cutoff_group: Option<String>,
}

/// The case id for `bench` with `args`: `"bench k=v k=v"`.
pub(crate) fn case_id(bench: &str, args: &[(&str, String)]) -> String {
    let mut s = bench.to_string();
    for (k, v) in args {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

fn case(
    bench: &'static str,
    args: &[(&'static str, u64)],
    choices: &[(&'static str, &str)],
) -> Case {
    let mut a: Vec<(&'static str, String)> =
        args.iter().map(|(k, v)| (*k, v.to_string())).collect();
    a.extend(choices.iter().map(|(k, v)| (*k, (*v).to_string())));
    Case {
        bench,
        id: case_id(bench, &a),
        args: a,
        otter_extra: Vec::new(),
        impls: vec![Impl::Otter, Impl::Erlang],
        cutoff_group: None,
    }
}

/// The sizes of one suite mode.
#[derive(Debug, Clone)]
pub(crate) struct Sizes {
    pub(crate) ring: Vec<u64>,
    pub(crate) ring_max_sends: u64,
    pub(crate) spawn_n: u64,
    pub(crate) spawn_c: Vec<u64>,
    pub(crate) counting_msgs: u64,
    pub(crate) senders: Vec<u64>,
    pub(crate) mailbox_k: Vec<u64>,
    pub(crate) mailbox_match_max_k: u64,
    pub(crate) closure_n: u64,
    pub(crate) memory_p: u64,
    pub(crate) pingpong_r: u64,
}

impl Sizes {
    pub(crate) fn for_options(o: &Options) -> Sizes {
        let cores = sysinfo::cores() as u64;
        let mut senders = vec![1];
        if cores > 1 {
            senders.push(cores);
        }
        if o.quick {
            Sizes {
                ring: vec![100, 1000],
                ring_max_sends: u64::MAX,
                spawn_n: 100_000,
                spawn_c: vec![1, 10, 100],
                counting_msgs: 300_000,
                senders,
                mailbox_k: vec![1000, 3000, 10_000],
                mailbox_match_max_k: 10_000,
                closure_n: 1_000_000,
                memory_p: 10_000,
                pingpong_r: 100_000,
            }
        } else {
            Sizes {
                ring: vec![100, 1000, 10_000],
                ring_max_sends: if o.full { u64::MAX } else { 100_000_000 - 1 },
                spawn_n: 1_000_000,
                spawn_c: vec![1, 10, 100],
                counting_msgs: 3_000_000,
                senders,
                mailbox_k: vec![1000, 3000, 10_000, 30_000, 100_000],
                mailbox_match_max_k: 10_000,
                closure_n: 10_000_000,
                memory_p: 100_000,
                pingpong_r: 1_000_000,
            }
        }
    }
}

/// Every case of the suite, in running order.
pub(crate) fn cases(s: &Sizes) -> Vec<Case> {
    let mut v = Vec::new();
    for &n in &s.ring {
        for &m in &s.ring {
            if n * m <= s.ring_max_sends {
                v.push(case("ring", &[("n", n), ("m", m)], &[]));
            }
        }
    }
    for &c in &s.spawn_c {
        v.push(case("spawn", &[("n", s.spawn_n), ("c", c)], &[]));
    }
    for style in ["raw", "server"] {
        for &senders in &s.senders {
            v.push(case(
                "counting",
                &[("msgs", s.counting_msgs), ("senders", senders)],
                &[("style", style)],
            ));
        }
    }
    // The machine's floor for one queue between two cores (`counting style=channel`).
    let mut floor = case(
        "counting",
        &[("msgs", s.counting_msgs), ("senders", 1)],
        &[("style", "channel")],
    );
    floor.impls = vec![Impl::Otter];
    v.push(floor);
    for order in ["spawn", "reverse"] {
        for &k in &s.mailbox_k {
            let mut c = case("mailbox", &[("k", k)], &[("order", order)]);
            c.otter_extra.push(("style", "key".into()));
            c.cutoff_group = Some(format!("mailbox order={order}"));
            v.push(c);
        }
        for &k in s.mailbox_k.iter().filter(|k| **k <= s.mailbox_match_max_k) {
            let mut c = case(
                "mailbox",
                &[("k", k)],
                &[("order", order), ("style", "match")],
            );
            c.impls = vec![Impl::Otter];
            v.push(c);
        }
    }
    for style in ["message", "closure"] {
        v.push(case("closure", &[("n", s.closure_n)], &[("style", style)]));
    }
    v.push(case("memory", &[("p", s.memory_p)], &[]));
    for style in ["raw", "server"] {
        v.push(case(
            "pingpong",
            &[("r", s.pingpong_r)],
            &[("style", style)],
        ));
    }
    v
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

/// Where the Erlang twin is, or why it cannot run.
fn erlang_bench(o: &Options) -> Result<PathBuf, String> {
    if o.no_erlang {
        return Err("--no-erlang".into());
    }
    if !sysinfo::on_path("erl") {
        return Err(format!("erl not on PATH ({INSTALL_ERLANG})"));
    }
    let path = match std::env::var_os("OTTER_ERLANG_BENCH") {
        Some(p) => PathBuf::from(p),
        None => {
            let built = sysinfo::workspace_dir().join("erlang-reference/bench");
            if built.is_file() {
                built
            } else {
                PathBuf::from("erlang-reference/bench")
            }
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "Erlang reference not found at {} (set OTTER_ERLANG_BENCH)",
            path.display()
        ))
    }
}

/// Runs `program bench k=v ...` once, with a time limit.
fn invoke(
    program: &Path,
    bench: &str,
    args: &[String],
    timeout: Duration,
) -> (Outcome, Option<i32>) {
    let mut cmd = Command::new(program);
    cmd.arg(bench)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return (
                Outcome::Error(format!("cannot run {}: {e}", program.display())),
                None,
            );
        }
    };
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() > timeout => {
                timed_out = true;
                kill_group(&mut child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let code = status.and_then(|s| s.code());
    let tail = stderr.trim().lines().last().unwrap_or("").to_string();
    if timed_out {
        return (
            Outcome::Error(format!("timed out after {} s", timeout.as_secs())),
            code,
        );
    }
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let parsed = line.and_then(|l| serde_json::from_str::<Value>(l).ok());
    let outcome = match (parsed, code) {
        (Some(v), Some(0)) if v["check"] == "ok" => Outcome::Ok(v),
        (Some(v), _) => {
            let why = match v["check"].as_str() {
                Some("ok") => format!("check ok but exit code {code:?}"),
                Some(why) => why.to_string(),
                None => "no check field".to_string(),
            };
            Outcome::CheckFailed(v, why)
        }
        (None, c) => Outcome::Error(format!(
            "exit code {}{}",
            c.map_or("none (killed by a signal)".to_string(), |c| c.to_string()),
            if tail.is_empty() {
                String::new()
            } else {
                format!(": {tail}")
            }
        )),
    };
    (outcome, code)
}

/// Kills a timed-out child and its process group (the BEAM may have children of its own).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
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
}

impl Meta {
    fn to_json(&self, o: &Options) -> Value {
        json!({
            "date": self.date, "cpu": self.cpu, "cores": self.cores, "memory": self.memory,
            "kernel": self.kernel, "rustc": self.rustc, "otp": self.otp, "commit": self.commit,
            "build": self.build, "command": self.command, "reps": o.reps,
            "mode": mode(o),
            "erlang": match &self.erlang { Ok(p) => p.display().to_string(), Err(e) => format!("skipped: {e}") },
        })
    }
}

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
    let o = match parse_options(args) {
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
    match run(&o) {
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
    if let Err(why) = &erlang {
        if !o.no_erlang {
            eprintln!(
                "otter-bench suite: Erlang cases skipped: {why}; otter runs alone.\n  To compare with Erlang, install it (as root): {INSTALL_ERLANG}"
            );
        }
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "otter-bench suite: this is a debug build, its numbers mean nothing: use cargo run --release -p otter-bench -- suite"
        );
    }
    let workspace = sysinfo::workspace_dir();
    let meta = Meta {
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
    };

    std::fs::create_dir_all(&o.out).map_err(|e| format!("cannot create {:?}: {e}", o.out))?;
    let results_path = o.out.join("results.jsonl");
    let mut results_file =
        File::create(&results_path).map_err(|e| format!("cannot write {results_path:?}: {e}"))?;
    std::fs::write(o.out.join("meta.json"), format!("{:#}\n", meta.to_json(o)))
        .map_err(|e| format!("cannot write meta.json: {e}"))?;

    let sizes = Sizes::for_options(o);
    let cases = cases(&sizes);
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
                    Impl::Otter => None,
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
                let (outcome, code) = match skip {
                    Some(why) => (Outcome::Skipped(why), None),
                    None => {
                        let (program, mut args) = match imp {
                            Impl::Otter => (me.clone(), c.args.clone()),
                            Impl::Erlang => {
                                (meta.erlang.clone().unwrap_or_default(), c.args.clone())
                            }
                        };
                        if imp == Impl::Otter {
                            args.extend(c.otter_extra.iter().cloned());
                        }
                        let argv: Vec<String> =
                            args.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        invoke(&program, c.bench, &argv, o.timeout)
                    }
                };
                if imp == Impl::Erlang {
                    if let Some(g) = &c.cutoff_group {
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
                }
                say(format!(
                    "[{done:>4}/{total}] {:<6} {:<44} rep {}: {}",
                    imp.name(),
                    c.id,
                    rep + 1,
                    describe(&outcome)
                ));
                let line = result_line(c, imp, rep, code, &outcome);
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

    let summary = markdown::write(o, &meta, &sizes, &cases, &records)?;
    println!("{}", summary.text);
    Ok(if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One progress line's verdict.
fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Ok(v) => format!(
            "{} ok",
            crate::plot::secs(v["seconds"].as_f64().unwrap_or(0.0))
        ),
        Outcome::CheckFailed(_, why) => format!("CHECK FAILED: {why}"),
        Outcome::Error(e) => format!("FAILED: {e}"),
        Outcome::Skipped(why) => format!("skipped ({why})"),
    }
}

/// The `results.jsonl` line of one run.
fn result_line(c: &Case, imp: Impl, rep: usize, code: Option<i32>, o: &Outcome) -> Value {
    let mut m = match o {
        Outcome::Ok(v) | Outcome::CheckFailed(v, _) => v.as_object().cloned().unwrap_or_default(),
        Outcome::Error(_) | Outcome::Skipped(_) => {
            let mut m = Map::new();
            m.insert("bench".into(), c.bench.into());
            m
        }
    };
    m.insert("impl".into(), imp.name().into());
    m.insert("case".into(), c.id.clone().into());
    m.insert("rep".into(), (rep + 1).into());
    m.insert("exit_code".into(), code.map_or(Value::Null, Value::from));
    match o {
        Outcome::Error(e) => {
            m.insert("check".into(), format!("FAILED: {e}").into());
        }
        Outcome::Skipped(why) => {
            m.insert("check".into(), "skipped".into());
            m.insert("skipped".into(), why.clone().into());
        }
        _ => {}
    }
    Value::Object(m)
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
    }

    #[test]
    fn the_100m_ring_cell_needs_full() {
        let has_big = |o: &Options| {
            cases(&Sizes::for_options(o))
                .iter()
                .any(|c| c.id == "ring n=10000 m=10000")
        };
        assert!(!has_big(&opts(&[]).unwrap()));
        assert!(has_big(&opts(&["--full"]).unwrap()));
    }

    #[test]
    fn mailbox_cases() {
        let cs = cases(&Sizes::for_options(&opts(&[]).unwrap()));
        let mb: Vec<&Case> = cs.iter().filter(|c| c.bench == "mailbox").collect();
        // 5 k x 2 orders (both impls) + 3 k x 2 orders (otter match).
        assert_eq!(mb.len(), 16);
        assert!(mb.iter().any(|c| c.id == "mailbox k=100000 order=reverse"));
        assert!(mb.iter().any(
            |c| c.id == "mailbox k=10000 order=reverse style=match" && c.impls == [Impl::Otter]
        ));
    }
}
