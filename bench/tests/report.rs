//! `otter-bench report`: REPORT.md rendered again from a saved `results.jsonl` (and the
//! `meta.json` beside it), here the small fixture of `tests/fixtures/report/`: a quick-mode
//! run with a few cases, one failed run and one skipped run.

use std::path::Path;
use std::process::Command;

const OTTER: &str = env!("CARGO_BIN_EXE_otter-bench");

#[test]
fn report_renders_the_key_rows_from_a_saved_results_jsonl() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.jsonl");
    let out = std::env::temp_dir().join(format!("otter-bench-report-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(OTTER)
        .arg("report")
        .arg(&fixture)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("runs otter-bench report");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("25 runs: 23 passed, 1 failed, 1 skipped"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    for row in [
        // The summary: medians and "otter vs erlang".
        "| #4 ring | sends/s, 1000×1000 | 20M/s | 4M/s | **5.00× faster** |",
        "| #5 counting | msgs/s, server, 1 sender | 10M/s | 1M/s | **10.0× faster** |",
        "| pingpong | ns per round trip, server | 200 ns | 1 µs | **5.00× faster** |",
        "| #3 spawn | spawn+exit/s, n=100k c=1 | — | — | — |",
        // The targets.
        "| counting: otter server vs otter raw, 1 sender | at most 1.5× slower | 1.20× slower | met |",
        "| pingpong: otter call vs Erlang gen_server:call, round trip | at most 1/5 of it | 1/5.00 (200 ns vs 1 µs) | met |",
        "| http: otter's p99 vs tokio's | at most 1× | 1.50× (1.5 ms vs 1 ms) | **missed** |",
        "| counting: otter server vs otter raw, 2 senders | at most 1.5× slower | 1.60× slower | **missed** |",
        "| counting: otter server vs Erlang gen_server, 2 senders | at least 10× faster | 5.00× faster | **missed** |",
        "| latency hog=1: otter p99.9 vs the BEAM's | at most 2× | — | — |",
        // A table per workload: server vs raw, a ratio the other way, spreads.
        "| server | 1 | 10M/s | 1M/s | **10.0× faster** | 1.20× slower | 3.00× slower |",
        "| 0 | p99.9 | 200 µs | 800 µs | **1/4.00** |",
        "| 64 B | 2k | otter-otter | 75 µs (50 µs–100 µs) | 15k/s | **1.50× faster** |",
        "| requests/s | 2k/s (1k/s – 3k/s, 2 runs) | 1k/s (1k/s – 1k/s, 2 runs) | **2.00× more** |",
        // overload: otter against erlang unbounded, then otter's own rows.
        "| unbounded | consumer msgs/s | 40k/s | 20k/s | **2.00× faster** |",
        "| unbounded | peak RSS | 20.0 MiB | 160.0 MiB | **8.00× smaller** |",
        "| bounded (1000) | refused sends | 3000 |",
        "| unbounded, awaited sends | p99 queueing | — |",
        // A failed run and a skipped one.
        "| 1k | <span style=\"color:red\"><b>FAILED</b>: timed out after 120 s (1 of 1 runs)</span> |",
        "- Erlang stopped: a test — 1 case(s): `mailbox k=1000 order=spawn on erlang`",
        "| steal time (/proc/stat, whole run) | 0.06% of all CPU time; most in one run: 1.6% (erlang ring n=1000 m=1000 (rep 1)) |",
    ] {
        assert!(md.contains(row), "REPORT.md has {row}\n{md}");
    }
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
            "{svg}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
