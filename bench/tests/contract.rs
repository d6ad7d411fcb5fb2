//! The command-line and JSON contract of `shared/WORKLOADS.md`, checked on the real
//! binaries: `otter-bench` (always) and the Erlang twin `erlang-reference/bench` (when `erl`
//! is on PATH; without it that test fails if `CI` is set, and prints a skip notice otherwise).
//!
//! Every workload runs at a small size and must print exactly one JSON line on stdout with
//! the contract's fields, typed, with `params` holding every parameter (defaults filled in),
//! the right `ops`, `check == "ok"`, and exit 0. Bad command lines must exit 2 with nothing
//! on stdout and one line on stderr; for otter, that includes values beyond what the machine
//! can hold and arguments with a newline (the `bad_input_is_one_line_on_stderr_and_exit_2_*`
//! tests, run under an address-space cap). The two-program workloads (echo, dist, http)
//! run their server and their client. Finally `otter-bench suite --quick` must write its
//! report.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const OTTER: &str = env!("CARGO_BIN_EXE_otter-bench");

/// What a run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `program args...`, killing it after `limit`.
fn run(program: &Path, args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "{} {} did not finish within {limit:?}",
                program.display(),
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code(),
        stdout: t_out.join().expect("stdout reader"),
        stderr: t_err.join().expect("stderr reader"),
    }
}

/// One workload run at small size and what its line must say.
struct Case {
    args: &'static [&'static str],
    params: Value,
    ops: u64,
    otter_only: bool,
}

fn cases() -> Vec<Case> {
    let c = |args, params, ops| Case {
        args,
        params,
        ops,
        otter_only: false,
    };
    let otter = |args, params, ops| Case {
        args,
        params,
        ops,
        otter_only: true,
    };
    vec![
        c(&["ring", "n=10", "m=20"], json!({"n": 10, "m": 20}), 200),
        c(
            &["ring", "n=1", "m=5", "threads=1"],
            json!({"n": 1, "m": 5}),
            5,
        ),
        c(
            &["spawn", "n=1000", "c=7"],
            json!({"n": 1000, "c": 7, "style": "chain"}),
            1000,
        ),
        c(
            &["spawn", "n=2000"],
            json!({"n": 2000, "c": 1, "style": "chain"}),
            2000,
        ),
        c(
            &["spawn", "n=2000", "style=loop"],
            json!({"n": 2000, "c": 1, "style": "loop"}),
            2000,
        ),
        c(
            &["counting", "msgs=1000", "senders=3"],
            json!({"msgs": 1000, "senders": 3, "receivers": 1, "style": "raw"}),
            1000,
        ),
        c(
            &["counting", "msgs=1000", "style=server"],
            json!({"msgs": 1000, "senders": 1, "receivers": 1, "style": "server"}),
            1000,
        ),
        c(
            &["counting", "msgs=1001", "senders=3", "style=server"],
            json!({"msgs": 1001, "senders": 3, "receivers": 1, "style": "server"}),
            1001,
        ),
        // Fan-out: every send to another counter than the one before.
        c(
            &["counting", "msgs=1000", "receivers=7"],
            json!({"msgs": 1000, "senders": 1, "receivers": 7, "style": "raw"}),
            1000,
        ),
        c(
            &[
                "counting",
                "msgs=1001",
                "senders=3",
                "receivers=5",
                "style=server",
            ],
            json!({"msgs": 1001, "senders": 3, "receivers": 5, "style": "server"}),
            1001,
        ),
        // Fewer messages than counters: some counters get none.
        c(
            &["counting", "msgs=5", "senders=2", "receivers=9"],
            json!({"msgs": 5, "senders": 2, "receivers": 9, "style": "raw"}),
            5,
        ),
        otter(
            &[
                "counting",
                "msgs=1001",
                "senders=3",
                "receivers=4",
                "style=channel",
            ],
            json!({"msgs": 1001, "senders": 3, "receivers": 4, "style": "channel"}),
            1001,
        ),
        otter(
            &["counting", "msgs=1001", "senders=2", "style=channel"],
            json!({"msgs": 1001, "senders": 2, "receivers": 1, "style": "channel"}),
            1001,
        ),
        c(
            &["mailbox", "k=200", "order=reverse"],
            json!({"k": 200, "order": "reverse"}),
            200,
        ),
        c(
            &["mailbox", "k=300"],
            json!({"k": 300, "order": "spawn"}),
            300,
        ),
        otter(
            &["mailbox", "k=200", "order=reverse", "style=match"],
            json!({"k": 200, "order": "reverse", "style": "match"}),
            200,
        ),
        c(
            &["closure", "n=1000"],
            json!({"n": 1000, "style": "message"}),
            1000,
        ),
        c(
            &["closure", "n=1000", "style=closure"],
            json!({"n": 1000, "style": "closure"}),
            1000,
        ),
        c(&["memory", "p=100"], json!({"p": 100}), 100),
        c(
            &["pingpong", "r=100"],
            json!({"r": 100, "style": "raw"}),
            100,
        ),
        c(
            &["pingpong", "r=100", "style=server"],
            json!({"r": 100, "style": "server"}),
            100,
        ),
        c(&["forkjoin", "n=10"], json!({"n": 10}), 109),
        c(&["forkjoin", "n=1", "threads=1"], json!({"n": 1}), 1),
        c(
            &["latency", "r=200", "b=10", "w=5"],
            json!({"r": 200, "b": 10, "w": 5, "hog": 0}),
            200,
        ),
        c(
            &["latency", "r=100", "b=20", "w=2", "hog=1"],
            json!({"r": 100, "b": 20, "w": 2, "hog": 1}),
            100,
        ),
        c(
            &["latency", "r=50", "b=1", "w=1", "threads=1"],
            json!({"r": 50, "b": 1, "w": 1, "hog": 0}),
            50,
        ),
    ]
}

const BAD: &[&[&str]] = &[
    &["nope"],
    &["ring", "x=1"],
    &["ring", "n=abc"],
    &["ring", "n=0"],
    &["ring", "n=-5"],
    &["ring", "n"],
    &["ring", "=5"],
    &["ring", "n=1", "n=2"],
    &["ring", "threads=0"],
    &["closure", "style=bogus"],
    &["pingpong", "style=fast"],
    &["mailbox", "order=sideways"],
    &["spawn", "n=5", "c=10"],
    &["spawn", "style=tree"],
    &["forkjoin", "n=0"],
    &["forkjoin", "n=41"],
    &["latency", "hog=2"],
    &["latency", "w=0"],
    &["latency", "w=1000001"],
    &["latency", "b=0"],
    &["latency", "r=0"],
    &["counting", "receivers=0"],
];

fn cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u64
}

/// Checks one run's line against the contract; returns the parsed line.
fn check_line(program: &Path, imp: &str, case: &Case) -> Value {
    let what = format!("{imp} {}", case.args.join(" "));
    let r = run(program, case.args, Duration::from_secs(120));
    assert_eq!(r.code, Some(0), "{what}: exit code; stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: exactly one line on stdout: {:?}",
        r.stdout
    );
    let v: Value = serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", lines[0]));
    let o = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object"));
    let mut expected_params = case.params.clone();
    if imp == "otter" && case.args[0] == "mailbox" && expected_params.get("style").is_none() {
        expected_params["style"] = json!("key");
    }
    assert_eq!(o["bench"], json!(case.args[0]), "{what}: bench");
    assert_eq!(o["impl"], json!(imp), "{what}: impl");
    assert_eq!(o["params"], expected_params, "{what}: params");
    let seconds = o["seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: seconds"));
    assert!(seconds > 0.0, "{what}: seconds > 0");
    assert_eq!(o["ops"].as_u64(), Some(case.ops), "{what}: ops");
    let rate = o["ops_per_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: ops_per_s"));
    let want = case.ops as f64 / seconds;
    assert!(
        (rate - want).abs() <= want * 0.01 + 0.1,
        "{what}: ops_per_s {rate} vs ops/seconds {want}"
    );
    assert_eq!(o["check"], json!("ok"), "{what}: check");
    let threads = o["threads"]
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: threads"));
    let want_threads = if case.args.contains(&"threads=1") {
        1
    } else {
        cores()
    };
    assert_eq!(threads, want_threads, "{what}: threads");
    if matches!(case.args[0], "closure" | "pingpong" | "latency") || imp == "otter" {
        assert!(o["ns_per_op"].as_f64().is_some(), "{what}: ns_per_op");
    }
    if case.args[0] == "forkjoin" {
        let peak = o["peak_rss_bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{what}: peak_rss_bytes"));
        assert!(peak > 0, "{what}: peak_rss_bytes > 0");
    }
    if case.args[0] == "latency" {
        let us = |k: &str| {
            o[k].as_f64()
                .unwrap_or_else(|| panic!("{what}: {k} is a number"))
        };
        let (p50, p99, p999, max) = (us("p50_us"), us("p99_us"), us("p999_us"), us("max_us"));
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{what}: percentiles in order: {p50} {p99} {p999} {max}"
        );
        // No bound of ns_per_op by max: the mean includes the time between round trips,
        // which the OS can stretch beyond any one round trip on a loaded machine.
        assert!(
            o["ns_per_op"].as_f64().is_some_and(|ns| ns > 0.0),
            "{what}: ns_per_op"
        );
        assert!(
            o["background_msgs_per_s"]
                .as_f64()
                .is_some_and(|r| r >= 0.0),
            "{what}: background_msgs_per_s"
        );
        // The workload's own check: in a timed part of 100 ms or more, at least one
        // background message per token (a shorter one may fall in a spell in which the
        // OS ran neither worker of the ring, which the check does not blame on the
        // scheduler).
        let tokens = o["tokens"].as_u64().unwrap_or(u64::MAX);
        let background = o["background_msgs"].as_u64();
        assert!(
            background.is_some_and(|n| n >= tokens || o["seconds"].as_f64() < Some(0.1)),
            "{what}: at least one background message per token"
        );
        let hog = expected_params["hog"].as_u64() == Some(1);
        assert_eq!(
            o.get("hog_yields").is_some(),
            hog,
            "{what}: hog_yields iff hog=1"
        );
    }
    if case.args[0] == "memory" {
        let b = o["bytes_per_process"].as_f64();
        assert!(b.is_some(), "{what}: bytes_per_process");
    }
    if imp == "otter" && matches!(case.args[0], "counting" | "pingpong") {
        // The style asked for is the style that ran (style=server used to fall back to raw).
        assert_eq!(
            o["style_run"], expected_params["style"],
            "{what}: style_run"
        );
        assert!(
            o.get("note").is_none(),
            "{what}: no note: {:?}",
            o.get("note")
        );
    }
    v
}

fn check_bad_args(program: &Path, imp: &str) {
    for args in BAD {
        let what = format!("{imp} {}", args.join(" "));
        let r = run(program, args, Duration::from_secs(60));
        assert_eq!(r.code, Some(2), "{what}: exit code (stderr: {})", r.stderr);
        assert!(
            r.stdout.is_empty(),
            "{what}: stdout must be empty: {:?}",
            r.stdout
        );
        let lines: Vec<&str> = r.stderr.trim_end().lines().collect();
        assert_eq!(lines.len(), 1, "{what}: one line on stderr: {:?}", r.stderr);
        assert!(!lines[0].trim().is_empty(), "{what}: an error message");
    }
}

#[test]
fn otter_every_workload_keeps_the_contract() {
    for case in cases() {
        check_line(Path::new(OTTER), "otter", &case);
    }
}

#[test]
fn otter_rejects_bad_arguments() {
    check_bad_args(Path::new(OTTER), "otter");
}

#[test]
fn otter_spawn_note_when_chains_are_uneven() {
    let case = Case {
        args: &["spawn", "n=1000", "c=7"],
        params: json!({"n": 1000, "c": 7, "style": "chain"}),
        ops: 1000,
        otter_only: true,
    };
    let v = check_line(Path::new(OTTER), "otter", &case);
    assert!(v["note"].as_str().is_some_and(|n| n.contains("n mod c")));
}

fn erlang_bench() -> PathBuf {
    std::env::var_os("OTTER_ERLANG_BENCH").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../erlang-reference/bench"),
        PathBuf::from,
    )
}

fn erl_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("erl").is_file()))
}

/// Whether to test the Erlang twin: yes if `erl` is there; a failure under CI otherwise.
fn erlang_available() -> bool {
    if erl_on_path() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "erl is not on PATH, and CI must test the Erlang reference: apt-get install -y erlang-nox"
        );
    }
    eprintln!(
        "SKIPPED: erl is not on PATH, Erlang reference not tested (apt-get install -y erlang-nox)"
    );
    false
}

#[test]
fn erlang_every_workload_keeps_the_contract() {
    if !erlang_available() {
        return;
    }
    let bench = erlang_bench();
    for case in cases().into_iter().filter(|c| !c.otter_only) {
        let v = check_line(&bench, "erlang", &case);
        assert!(
            v["otp"].as_str().is_some(),
            "erlang line names its OTP release"
        );
    }
}

#[test]
fn erlang_rejects_bad_arguments() {
    if !erlang_available() {
        return;
    }
    check_bad_args(&erlang_bench(), "erlang");
}

#[test]
fn suite_quick_writes_the_report() {
    let out = std::env::temp_dir().join(format!("otter-bench-suite-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let out_s = out.to_str().expect("utf-8 temp dir").to_string();
    let mut args = vec!["suite", "--quick", "--out", &out_s];
    if !erl_on_path() && std::env::var_os("CI").is_none() {
        args.push("--no-erlang");
    }
    let r = run(Path::new(OTTER), &args, Duration::from_secs(600));
    assert_eq!(
        r.code,
        Some(0),
        "suite --quick failed\nstdout: {}\nstderr: {}",
        r.stdout,
        r.stderr
    );
    assert!(
        r.stdout.contains("REPORT.md"),
        "summary names the report: {}",
        r.stdout
    );

    let results = std::fs::read_to_string(out.join("results.jsonl")).expect("results.jsonl");
    let lines: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).expect("results.jsonl line is JSON"))
        .collect();
    assert!(!lines.is_empty());
    for l in &lines {
        for k in ["bench", "impl", "case", "rep", "check"] {
            assert!(l.get(k).is_some(), "results line has {k}: {l}");
        }
    }
    for bench in [
        "ring", "spawn", "counting", "mailbox", "closure", "memory", "pingpong", "forkjoin",
        "latency", "echo", "dist",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l["bench"] == bench && l["impl"] == "otter" && l["check"] == "ok"),
            "an ok otter {bench} run"
        );
        if erl_on_path() {
            assert!(
                lines
                    .iter()
                    .any(|l| l["bench"] == bench && l["impl"] == "erlang" && l["check"] == "ok"),
                "an ok erlang {bench} run"
            );
        }
    }
    let report = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    for needle in [
        "Seed #4",
        "Seed #3",
        "Seed #5",
        "Seed #2",
        "Seed #1",
        "Memory",
        "Ping-pong",
        "Fork-join",
        "### Targets",
        "Latency",
        "latency.svg",
        "echo.svg",
        "## Dist",
        "steal time",
        "ring.svg",
        "mailbox.svg",
    ] {
        assert!(report.contains(needle), "REPORT.md mentions {needle}");
    }
    assert!(!report.contains("FAILED"), "no failed run in the report");
    for svg in [
        "ring.svg",
        "spawn.svg",
        "mailbox.svg",
        "closure.svg",
        "latency.svg",
        "echo.svg",
    ] {
        let s = std::fs::read_to_string(out.join(svg)).unwrap_or_else(|e| panic!("{svg}: {e}"));
        assert!(
            s.starts_with("<svg") && s.trim_end().ends_with("</svg>"),
            "{svg} is SVG"
        );
        assert!(!s.contains("no data"), "{svg} has data");
    }
    let _ = std::fs::remove_dir_all(&out);
}

// ---------------------------------------------------------------------------------------
// Bad input is one line on stderr and exit 2 (WORKLOADS.md), whatever the value: issue 22,
// item 10. These run otter only: the Erlang twin has limits of its own (its +P process
// limit), which are not otter's.

/// The address space (KiB, `ulimit -v`) the bad-input runs get: 4 GiB. A binary that
/// allocated before checking its input aborts at this limit instead of filling the
/// machine, and the memory bound (half of the least of MemTotal, the cgroup limit and this)
/// is the same on every machine, so `ring n=16777216` is over it everywhere.
const CAPPED_ADDRESS_SPACE_KIB: u64 = 4 << 20;

/// How long a bad command line may take to be refused (it takes milliseconds).
const REFUSAL_LIMIT: Duration = Duration::from_secs(10);

/// Runs `otter-bench args...` under `ulimit -v CAPPED_ADDRESS_SPACE_KIB`.
fn run_capped(args: &[&str]) -> Run {
    let script = format!("ulimit -v {CAPPED_ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\"");
    let mut argv = vec!["-c", &script, OTTER];
    argv.extend_from_slice(args);
    run(Path::new("/bin/sh"), &argv, REFUSAL_LIMIT)
}

/// Asserts WORKLOADS.md's rule for bad input: exit 2, nothing on stdout, exactly one line
/// on stderr, and that line says each of `mentions`.
fn assert_one_line_usage_error(args: &[&str], mentions: &[&str]) {
    let r = run_capped(args);
    let what = format!("otter-bench {args:?}");
    assert_eq!(r.code, Some(2), "{what}: exit code; stderr: {}", r.stderr);
    assert!(r.stdout.is_empty(), "{what}: stdout: {:?}", r.stdout);
    assert!(
        r.stderr.ends_with('\n') && r.stderr.matches('\n').count() == 1,
        "{what}: exactly one line on stderr: {:?}",
        r.stderr
    );
    assert!(
        !r.stderr.contains('\r'),
        "{what}: no carriage return: {:?}",
        r.stderr
    );
    for m in mentions {
        assert!(
            r.stderr.contains(m),
            "{what}: stderr says {m:?}: {:?}",
            r.stderr
        );
    }
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_too_many_processes() {
    // Used to abort out of memory while spawning.
    assert_one_line_usage_error(
        &["counting", "senders=100000000"],
        &["senders+receivers+1", "processes"],
    );
    assert_one_line_usage_error(
        &["counting", "receivers=100000000"],
        &["senders+receivers+1", "processes"],
    );
    assert_one_line_usage_error(&["memory", "p=100000000"], &["p+1", "processes"]);
    assert_one_line_usage_error(&["latency", "b=100000000"], &["b+3", "processes"]);
    assert_one_line_usage_error(&["mailbox", "k=100000000"], &["k+1", "processes"]);
    assert_one_line_usage_error(
        &["spawn", "n=100000000", "c=100000000"],
        &["2*c+1", "processes"],
    );
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_counts_beyond_memory() {
    // Used to panic with "capacity overflow" (exit 3, a backtrace on stderr).
    assert_one_line_usage_error(
        &["counting", "senders=18446744073709551615"],
        &["senders+receivers+1", "processes"],
    );
    assert_one_line_usage_error(
        &["counting", "receivers=18446744073709551615"],
        &["senders+receivers+1", "processes"],
    );
    assert_one_line_usage_error(&["memory", "p=18446744073709551615"], &["p ="]);
    assert_one_line_usage_error(&["mailbox", "k=18446744073709551615"], &["k ="]);
    // Every message may sit in the counter's mailbox at once.
    assert_one_line_usage_error(&["closure", "n=999999999999"], &["n =", "memory"]);
    assert_one_line_usage_error(&["counting", "msgs=999999999999"], &["msgs =", "memory"]);
    // Every round trip's sample is kept.
    assert_one_line_usage_error(&["latency", "r=999999999999"], &["r =", "memory"]);
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_ring_beyond_memory() {
    // The largest n the process bound accepts; it used to abort out of memory.
    assert_one_line_usage_error(&["ring", "n=16777216", "m=1"], &["n =", "memory"]);
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_channel_senders_beyond_os_threads() {
    // One OS thread a sender: it used to exit 101 (or abort) when the OS refused a thread.
    assert_one_line_usage_error(
        &["counting", "style=channel", "senders=100000"],
        &["senders+receivers", "OS threads"],
    );
    assert_one_line_usage_error(
        &["counting", "style=channel", "receivers=100000"],
        &["senders+receivers", "OS threads"],
    );
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_operations_beyond_the_bound() {
    // These used to run for centuries (or overflow n*m).
    assert_one_line_usage_error(
        &["ring", "n=2", "m=18446744073709551615"],
        &["n*m", "operations"],
    );
    assert_one_line_usage_error(
        &["pingpong", "r=18446744073709551615"],
        &["r =", "operations"],
    );
    assert_one_line_usage_error(&["spawn", "n=18446744073709551615"], &["n =", "operations"]);
    assert_one_line_usage_error(
        &["latency", "r=18446744073709551615"],
        &["r =", "operations"],
    );
    assert_one_line_usage_error(
        &["closure", "style=closure", "n=18446744073709551615"],
        &["n =", "operations"],
    );
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_arguments_echoed_escaped() {
    // A newline in an argument used to split the error over two lines.
    assert_one_line_usage_error(&["ring", "n=1\n2"], &["\\n"]);
    assert_one_line_usage_error(&["ring", "x\ny=1"], &["\\n"]);
    assert_one_line_usage_error(&["ring", "n\n"], &["\\n"]);
    assert_one_line_usage_error(&["ri\nng"], &["\\n"]);
    assert_one_line_usage_error(&["pingpong", "style=ra\nw"], &["\\n"]);
    assert_one_line_usage_error(&["ring", "n=1", "n\r=2"], &["\\r"]);
    assert_one_line_usage_error(&["suite", "--bo\ngus"], &["\\n"]);
    assert_one_line_usage_error(&["suite", "--reps", "1\n2"], &["\\n"]);
}

#[test]
fn bad_input_is_one_line_on_stderr_and_exit_2_suite_options_beyond_the_bound() {
    let out = std::env::temp_dir().join(format!("otter-bench-reps-test-{}", std::process::id()));
    let out_s = out.to_str().expect("utf-8 temp dir");
    assert_one_line_usage_error(
        &[
            "suite",
            "--no-erlang",
            "--out",
            out_s,
            "--reps",
            "18446744073709551615",
        ],
        &["--reps"],
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn help_states_the_bound_of_every_parameter() {
    let r = run(Path::new(OTTER), &["--help"], REFUSAL_LIMIT);
    assert_eq!(r.code, Some(0), "--help: exit code");
    for (bench, keys) in [
        ("ring", &["n", "m"][..]),
        ("spawn", &["n", "c"]),
        ("counting", &["msgs", "senders", "receivers"]),
        ("mailbox", &["k"]),
        ("closure", &["n"]),
        ("memory", &["p"]),
        ("pingpong", &["r"]),
        ("forkjoin", &["n"]),
        ("latency", &["r", "b", "w", "hog"]),
    ] {
        // The workload's block: its line and the indented lines after it.
        let block: Vec<&str> = r
            .stderr
            .lines()
            .skip_while(|l| !l.starts_with(&format!("  {bench} ")))
            .take_while(|l| l.starts_with(&format!("  {bench} ")) || l.starts_with("    "))
            .collect();
        let max = block
            .iter()
            .find(|l| l.trim_start().starts_with("max:"))
            .unwrap_or_else(|| panic!("--help gives {bench} a max: line: {block:?}"));
        for key in keys {
            assert!(
                max.split_whitespace().any(|w| w
                    .strip_prefix(&format!("{key}="))
                    .is_some_and(|v| v.trim_end_matches([',', ';']).parse::<u64>().is_ok())),
                "--help states the bound of {bench} {key}: {max:?}"
            );
        }
    }
    for needle in ["MemTotal", "processes", "OS threads", "ops"] {
        assert!(
            r.stderr.contains(needle),
            "--help explains the bounds ({needle})"
        );
    }
}

// ---------------------------------------------------------------------------------------
// echo (WORKLOADS.md "echo"): a server that serves until its stdin closes, and the load
// generator (otter-bench only) that measures it.

/// A running echo server: its process, and its JSON line.
struct EchoServer {
    child: std::process::Child,
    line: Value,
}

/// Starts `program echo-server port=0 mode=MODE threads=1` and reads its line.
fn start_echo_server(program: &Path, imp: &str, mode: &str) -> EchoServer {
    use std::io::BufRead;
    let mut child = Command::new(program)
        .args([
            "echo-server",
            "port=0",
            &format!("mode={mode}"),
            "threads=1",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(out).lines();
        let _ = tx.send(lines.next());
        // Drained until the server exits, so that it never blocks on stdout.
        for _ in lines {}
    });
    let first = rx.recv_timeout(Duration::from_secs(60));
    let line = match first {
        Ok(Some(Ok(l))) => l,
        other => {
            let _ = child.kill();
            panic!("{imp} echo-server mode={mode}: no line: {other:?}");
        }
    };
    let v: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("{imp} echo-server: not JSON ({e}): {line}"));
    assert_eq!(v["bench"], json!("echo-server"), "{line}");
    assert_eq!(v["impl"], json!(imp), "{line}");
    assert_eq!(v["mode"], json!(mode), "{line}");
    assert_eq!(v["threads"], json!(1), "{line}");
    assert!(v["port"].as_u64().is_some_and(|p| p > 0), "{line}");
    EchoServer { child, line: v }
}

impl EchoServer {
    /// Closes its stdin; it must exit 0 soon after.
    fn stop(mut self, what: &str) {
        drop(self.child.stdin.take());
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                break st;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                let _ = self.child.kill();
                panic!("{what}: the server did not exit once its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(0), "{what}: the server's exit code");
    }
}

/// Runs echo-load against `server` (conns=4, seconds=1, paced at `rate` round trips a
/// second if not 0) and checks its line.
fn check_echo_load(server: &EchoServer, what: &str, size: u64, rate: u64) {
    let port = server.line["port"].as_u64().expect("port");
    let pid = server.child.id();
    let args = [
        "echo-load".to_string(),
        format!("port={port}"),
        "conns=4".into(),
        format!("size={size}"),
        "seconds=1".into(),
        format!("server_pid={pid}"),
        format!("rate={rate}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(Path::new(OTTER), &args, Duration::from_secs(60));
    assert_eq!(
        r.code,
        Some(0),
        "{what}: echo-load exit; stderr: {}",
        r.stderr
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: one line: {:?}", r.stdout);
    let v: Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(v["bench"], json!("echo-load"), "{what}");
    assert_eq!(
        v["params"],
        json!({"port": port, "conns": 4, "size": size, "seconds": 1, "server_pid": pid, "rate": rate}),
        "{what}"
    );
    assert_eq!(v["check"], json!("ok"), "{what}");
    assert_eq!(v["errors"], json!(0), "{what}");
    assert_eq!(v["connections"], json!(4), "{what}");
    let n = v["round_trips"].as_u64().expect("round_trips");
    assert!(n > 0, "{what}: round trips");
    if rate > 0 {
        // Paced: about `rate` in the measured second, never far above it (each gap is
        // drawn around its mean; a round trip due is started at once, not bunched).
        assert!(
            n <= rate + rate / 4 + 4,
            "{what}: {n} round trips at rate={rate}"
        );
    }
    assert_eq!(v["ops"].as_u64(), Some(n), "{what}: ops = round_trips");
    let rate = v["ops_per_s"].as_f64().expect("ops_per_s");
    let secs = v["seconds"].as_f64().expect("seconds");
    assert!(
        (rate - n as f64 / secs).abs() <= rate * 0.01 + 0.1,
        "{what}: ops_per_s"
    );
    let us = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{what}: {k}"));
    let (p50, p99, p999, max) = (us("p50_us"), us("p99_us"), us("p999_us"), us("max_us"));
    // The percentiles come from buckets 0.8% wide; the max is exact.
    assert!(
        0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max * 1.01,
        "{what}: percentiles in order: {p50} {p99} {p999} {max}"
    );
    assert!(
        v["server_cpu_s_per_million"]
            .as_f64()
            .is_some_and(|c| c >= 0.0),
        "{what}: server_cpu_s_per_million: {}",
        lines[0]
    );
}

fn check_echo(program: &Path, imp: &str) {
    for mode in ["passive", "active"] {
        let what = format!("{imp} echo-server mode={mode}");
        let server = start_echo_server(program, imp, mode);
        check_echo_load(&server, &what, 64, 0);
        check_echo_load(&server, &what, 100_000, 0);
        check_echo_load(&server, &what, 64, 400);
        server.stop(&what);
    }
}

#[test]
fn otter_echo_server_and_load_keep_the_contract() {
    check_echo(Path::new(OTTER), "otter");
}

#[test]
fn erlang_echo_server_keeps_the_contract() {
    if !erlang_available() {
        return;
    }
    check_echo(&erlang_bench(), "erlang");
}

#[test]
fn echo_rejects_bad_arguments() {
    let bad: &[&[&str]] = &[
        &["echo-server", "mode=bogus"],
        &["echo-server", "port=65536"],
        &["echo-server", "port=-1"],
        &["echo-server", "conns=4"],
        &["echo-server", "threads=0"],
    ];
    let load_bad: &[&[&str]] = &[
        &["echo-load", "conns=4"], // no port
        &["echo-load", "port=1", "conns=0"],
        &["echo-load", "port=1", "size=0"],
        &["echo-load", "port=1", "seconds=0"],
        &["echo-load", "port=1", "seconds=3601"],
        &["echo-load", "port=1", "rate=-1"],
        &["echo-load", "port=1", "rate=100000001"],
        &["echo-load", "port=1", "mode=passive"],
        &["echo-load", "port=1", "conns=999999"], // beyond ulimit -n
        &["echo-load", "port=1", "server_pid=4194304"], // no such process
    ];
    for args in bad.iter().chain(load_bad) {
        let r = run(Path::new(OTTER), args, REFUSAL_LIMIT);
        let what = format!("otter-bench {args:?}");
        assert_eq!(r.code, Some(2), "{what}: exit code; stderr: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{what}: stdout: {:?}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{what}: {:?}", r.stderr);
    }
    if erl_on_path() {
        for args in bad {
            let r = run(&erlang_bench(), args, Duration::from_secs(60));
            let what = format!("erlang-reference/bench {args:?}");
            assert_eq!(r.code, Some(2), "{what}: exit code; stderr: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{what}: stdout: {:?}", r.stdout);
        }
    }
    // A port in use: the server says so and exits non-zero, with nothing on stdout.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port().to_string();
    let r = run(
        Path::new(OTTER),
        &["echo-server", &format!("port={port}")],
        REFUSAL_LIMIT,
    );
    assert_eq!(r.code, Some(3), "port in use: {}", r.stderr);
    assert!(r.stdout.is_empty() && r.stderr.contains("cannot listen"));
}

// ---------------------------------------------------------------------------------------
// http (WORKLOADS.md "http"): the JSON API on otter and on plain tokio, and the load
// generator that measures both.

/// Starts `otter-bench http-server impl=IMP port=0 threads=1`, reads its line and checks it.
fn start_http_server(imp: &str) -> EchoServer {
    use std::io::BufRead;
    let mut child = Command::new(OTTER)
        .args(["http-server", &format!("impl={imp}"), "port=0", "threads=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {OTTER}: {e}"));
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(out).lines();
        let _ = tx.send(lines.next());
        for _ in lines {}
    });
    let line = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Some(Ok(l))) => l,
        other => {
            let _ = child.kill();
            panic!("http-server impl={imp}: no line: {other:?}");
        }
    };
    let v: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("http-server impl={imp}: not JSON ({e}): {line}"));
    assert_eq!(v["bench"], json!("http-server"), "{line}");
    assert_eq!(v["impl"], json!(imp), "{line}");
    assert_eq!(v["threads"], json!(1), "{line}");
    assert!(v["port"].as_u64().is_some_and(|p| p > 0), "{line}");
    EchoServer { child, line: v }
}

#[test]
fn http_server_and_load_keep_the_contract_on_otter_and_tokio() {
    for imp in ["otter", "tokio"] {
        let what = format!("http-server impl={imp}");
        let server = start_http_server(imp);
        let port = server.line["port"].as_u64().expect("port");
        let pid = server.child.id();
        let args = [
            "http-load".to_string(),
            format!("port={port}"),
            "conns=8".into(),
            "seconds=1".into(),
            "work_us=50".into(),
            format!("server_pid={pid}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(Path::new(OTTER), &args, Duration::from_secs(60));
        assert_eq!(r.code, Some(0), "{what}: http-load exit; {}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{what}: one line: {:?}", r.stdout);
        let v: Value = serde_json::from_str(lines[0]).expect("JSON");
        assert_eq!(v["bench"], json!("http-load"), "{what}");
        assert_eq!(
            v["params"],
            json!({"port": port, "conns": 8, "seconds": 1, "work_us": 50, "server_pid": pid}),
            "{what}"
        );
        assert_eq!(v["check"], json!("ok"), "{what}: {}", lines[0]);
        assert_eq!(v["errors"], json!(0), "{what}");
        assert_eq!(v["connections"], json!(8), "{what}");
        let n = v["requests"].as_u64().expect("requests");
        // Each connection loops POST, GET, DELETE: a third of the requests are POSTs.
        let jobs = v["jobs"].as_u64().expect("jobs");
        assert!(
            n > 0 && jobs * 3 <= n + 16 && n <= jobs * 3 + 16,
            "{what}: {n} requests, {jobs} jobs"
        );
        assert_eq!(v["ops"].as_u64(), Some(n), "{what}: ops = requests");
        let us = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{what}: {k}"));
        let (p50, p99, max) = (us("p50_us"), us("p99_us"), us("max_us"));
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= max * 1.01,
            "{what}: percentiles"
        );
        for k in ["server_cpu_s", "server_vmhwm_kb", "server_vmrss_kb"] {
            assert!(
                v[k].as_f64().is_some_and(|x| x > 0.0),
                "{what}: {k}: {}",
                lines[0]
            );
        }
        server.stop(&what);
    }
}

#[test]
fn http_rejects_bad_arguments() {
    let bad: &[&[&str]] = &[
        &["http-server", "impl=actix"],
        &["http-server", "port=65536"],
        &["http-server", "conns=4"],
        &["http-load", "conns=4"], // no port
        &["http-load", "port=1", "conns=0"],
        &["http-load", "port=1", "seconds=0"],
        &["http-load", "port=1", "work_us=1000001"],
        &["http-load", "port=1", "conns=999999"], // beyond ulimit -n
        &["http-load", "port=1", "server_pid=4194304"], // no such process
    ];
    for args in bad {
        let r = run(Path::new(OTTER), args, REFUSAL_LIMIT);
        let what = format!("otter-bench {args:?}");
        assert_eq!(r.code, Some(2), "{what}: exit code; stderr: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{what}: stdout: {:?}", r.stdout);
        assert_eq!(r.stderr.lines().count(), 1, "{what}: {:?}", r.stderr);
    }
    // A port in use: exit 3, nothing on stdout.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port().to_string();
    for imp in ["otter", "tokio"] {
        let r = run(
            Path::new(OTTER),
            &[
                "http-server",
                &format!("impl={imp}"),
                &format!("port={port}"),
            ],
            REFUSAL_LIMIT,
        );
        assert_eq!(r.code, Some(3), "{imp}: port in use: {}", r.stderr);
        assert!(
            r.stdout.is_empty() && r.stderr.contains("cannot listen"),
            "{imp}: {}",
            r.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------
// dist (WORKLOADS.md "dist"): an echo node that serves until its stdin closes, and the client
// that measures round trips to it over Erlang distribution. epmd is started by the programs
// themselves if none answers.

/// A running echo node: its process (in a process group of its own, killed with the group
/// on drop, so that no `beam.smp` or `otter-bench` outlives a failed test) and its line.
struct DistEcho {
    child: std::process::Child,
    line: Value,
}

/// Starts `program dist-echo name=NAME threads=1` and reads its line.
fn start_dist_echo(program: &Path, imp: &str) -> DistEcho {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!(
        "contract_{imp}_{}_{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut child = Command::new(program)
        .args(["dist-echo", &format!("name={name}"), "threads=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(out).lines();
        let _ = tx.send(lines.next());
        for _ in lines {}
    });
    // The guard first: a failed assertion below still kills the node.
    let mut echo = DistEcho {
        child,
        line: Value::Null,
    };
    let line = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Some(Ok(l))) => l,
        other => panic!("{imp} dist-echo: no line: {other:?}"),
    };
    let v: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("{imp} dist-echo: not JSON ({e}): {line}"));
    assert_eq!(v["bench"], json!("dist-echo"), "{line}");
    assert_eq!(v["impl"], json!(imp), "{line}");
    assert_eq!(v["ready"], json!(true), "{line}");
    assert_eq!(v["threads"], json!(1), "{line}");
    let node = v["node"].as_str().unwrap_or_else(|| panic!("node: {line}"));
    assert!(node.starts_with(&format!("{name}@")), "{line}");
    echo.line = v;
    echo
}

impl DistEcho {
    fn node(&self) -> &str {
        self.line["node"].as_str().expect("node")
    }

    /// Closes its stdin; it must exit 0 soon after.
    fn stop(mut self, what: &str) {
        drop(self.child.stdin.take());
        let t0 = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("wait") {
                break st;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{what}: the echo node did not exit once its stdin closed"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(0), "{what}: the echo node's exit code");
    }
}

impl Drop for DistEcho {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Runs `program dist-pingpong peer=.. r=200 [size=..]` against `echo` and checks its line.
fn check_dist_pingpong(program: &Path, imp: &str, echo: &DistEcho, size: u64) {
    let what = format!("{imp} dist-pingpong against {}", echo.line["impl"]);
    let args = [
        "dist-pingpong".to_string(),
        format!("peer={}", echo.node()),
        "r=200".into(),
        format!("size={size}"),
        "threads=1".into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(program, &args, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{what}: exit code; stderr: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: one line: {:?}", r.stdout);
    let v: Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(v["bench"], json!("dist-pingpong"), "{what}");
    assert_eq!(v["impl"], json!(imp), "{what}");
    assert_eq!(
        v["params"],
        json!({"peer": echo.node(), "r": 200, "size": size, "cookie": "otterbench"}),
        "{what}"
    );
    assert_eq!(v["check"], json!("ok"), "{what}");
    assert_eq!(v["ops"], json!(200), "{what}");
    assert_eq!(v["threads"], json!(1), "{what}");
    assert_eq!(v["peer"], json!(echo.node()), "{what}");
    assert_eq!(v["warmup"], json!(1000), "{what}");
    let secs = v["seconds"].as_f64().expect("seconds");
    let rate = v["ops_per_s"].as_f64().expect("ops_per_s");
    assert!(
        secs > 0.0 && (rate - 200.0 / secs).abs() <= rate * 0.01 + 0.1,
        "{what}"
    );
    let ns = v["ns_per_op"].as_f64().expect("ns_per_op");
    assert!(
        (ns - secs * 1e9 / 200.0).abs() <= ns * 0.01 + 1.0,
        "{what}: ns_per_op"
    );
    assert!(
        v["node"].as_str().is_some_and(|n| n.contains('@')),
        "{what}: node"
    );
}

#[test]
fn otter_dist_pingpong_and_echo_keep_the_contract() {
    let echo = start_dist_echo(Path::new(OTTER), "otter");
    check_dist_pingpong(Path::new(OTTER), "otter", &echo, 64);
    check_dist_pingpong(Path::new(OTTER), "otter", &echo, 100_000);
    echo.stop("otter dist-echo");
}

#[test]
fn erlang_dist_pingpong_and_echo_keep_the_contract() {
    if !erlang_available() {
        return;
    }
    let erlang = erlang_bench();
    // Each client against each echo node: the protocol is the same on both sides.
    let echo = start_dist_echo(Path::new(OTTER), "otter");
    check_dist_pingpong(&erlang, "erlang", &echo, 64);
    echo.stop("otter dist-echo");
    let echo = start_dist_echo(&erlang, "erlang");
    check_dist_pingpong(&erlang, "erlang", &echo, 64);
    check_dist_pingpong(Path::new(OTTER), "otter", &echo, 64);
    check_dist_pingpong(Path::new(OTTER), "otter", &echo, 100_000);
    echo.stop("erlang dist-echo");
}

#[test]
fn dist_rejects_bad_arguments() {
    let bad: &[&[&str]] = &[
        &["dist-pingpong"], // no peer
        &["dist-pingpong", "peer=nohost"],
        &["dist-pingpong", "peer=a@b@c"],
        &["dist-pingpong", "peer=a@b", "r=0"],
        &["dist-pingpong", "peer=a@b", "size=0"],
        &["dist-pingpong", "peer=a@b", "cookie=a b"],
        &["dist-pingpong", "peer=a@b", "cookie="],
        &["dist-pingpong", "peer=a@b", "port=1"],
        &["dist-echo"], // no name
        &["dist-echo", "name=a'b"],
        &["dist-echo", "name=x", "r=1"],
    ];
    let mut programs = vec![(PathBuf::from(OTTER), "otter")];
    if erl_on_path() {
        programs.push((erlang_bench(), "erlang"));
    }
    for (program, imp) in &programs {
        for args in bad {
            let r = run(program, args, Duration::from_secs(60));
            let what = format!("{imp} {args:?}");
            assert_eq!(r.code, Some(2), "{what}: exit code; stderr: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{what}: stdout: {:?}", r.stdout);
            assert_eq!(
                r.stderr.trim_end().lines().count(),
                1,
                "{what}: {:?}",
                r.stderr
            );
        }
        // A node that is not there: exit 3, one line on stderr, nothing on stdout.
        let peer = format!("nobody_{}@{}", std::process::id(), "localhost");
        let r = run(
            program,
            &["dist-pingpong", &format!("peer={peer}"), "r=10"],
            Duration::from_secs(60),
        );
        assert_eq!(r.code, Some(3), "{imp}: no such peer: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{imp}: stdout: {:?}", r.stdout);
    }
}
