//! The suite's report. The product is the raw data, `results.jsonl` (one line per run) and
//! `meta.json` (`results.rs`); `REPORT.md` and the SVG plots it links are rendered from them,
//! right after a suite run or later by `otter-bench report DIR/results.jsonl [--out DIR]`.
//!
//! Every figure is the median over the repetitions that passed their check. A (case,
//! implementation) with any failed run shows `FAILED` in red instead of a number, and is
//! counted in the summary. Ratios are always "otter vs erlang", written as "N× faster"
//! (or "smaller" for memory) when otter is better and "N× slower" when it is worse.
//!
//! `table.rs` is what a table is made of (metrics, rows, columns) and its one renderer;
//! `sections.rs` describes every section (prose, tables, charts) and the summary table, which
//! this file renders in order; `targets.rs` the targets under it; `plot.rs` the charts
//! (`plotters`); `format.rs` how figures are written.

pub(crate) mod format;
mod plot;
pub(crate) mod results;
mod sections;
pub(crate) mod table;
mod targets;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::suite::{Case, Impl, Outcome, Record, STEAL_WARN, Sizes};
use sections::Part;
use table::{Results, md_escape};

/// What the caller prints and its exit code depends on.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) failed: usize,
}

/// `otter-bench report RESULTS.jsonl [--out DIR]`: REPORT.md and the plots again, from a
/// suite's `results.jsonl` and the `meta.json` beside it, into DIR (default: beside them).
pub(crate) fn main(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: otter-bench report RESULTS.jsonl [--out DIR]";
    let (path, out) = match args {
        [p] => (PathBuf::from(p), None),
        [p, o, d] if o == "--out" => (PathBuf::from(p), Some(PathBuf::from(d))),
        _ => {
            eprintln!("otter-bench report: {USAGE}");
            return ExitCode::from(2);
        }
    };
    let out = out.unwrap_or_else(|| path.parent().map_or(PathBuf::from("."), Path::to_path_buf));
    let made = std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {out:?}: {e}"));
    match made.and_then(|()| render(&path, &out)) {
        Ok(summary) => {
            println!("{}", summary.text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("otter-bench report: {e}");
            ExitCode::from(3)
        }
    }
}

/// Renders REPORT.md and the SVGs into `out` from the `results.jsonl` at `results` and the
/// `meta.json` beside it; returns the summary for stdout.
pub(crate) fn render(results: &Path, out: &Path) -> Result<Summary, String> {
    let (meta, sizes, cases, records) = results::load(results)?;
    write(&meta, out, &sizes, &cases, &records)
}

/// Writes REPORT.md and the SVGs into `out`.
fn write(
    meta: &Value,
    out: &Path,
    sizes: &Sizes,
    cases: &[Case],
    records: &[Record],
) -> Result<Summary, String> {
    let res = Results::new(cases, records);
    let count = |f: fn(&Outcome) -> bool| records.iter().filter(|r| f(&r.outcome)).count();
    let ok = count(|o| matches!(o, Outcome::Ok(_)));
    let failed = count(|o| matches!(o, Outcome::CheckFailed(..) | Outcome::Error(_)));
    let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
    let ran = |imp: Impl| {
        let ran = |r: &&Record| r.imp == imp && !matches!(r.outcome, Outcome::Skipped(_));
        records.iter().filter(ran).count()
    };
    let mut md = format!(
        "# otter benchmark report\n\nThe seed experiments of `shared/SEEDS.md`, defined in \
         `shared/WORKLOADS.md`, run on otter (`otter-bench`) and on the BEAM \
         (`erlang-reference/bench`), one measurement per process, otter and Erlang \
         interleaved. Every figure is the **median of {} repetition(s)**; ratios read \"otter \
         vs erlang\".\n\n## Setup\n\n| | |\n|---|---|\n",
        meta["reps"]
    );
    let m = |k: &str| meta[k].as_str().map_or(meta[k].to_string(), str::to_string);
    let erlang = m("erlang");
    let erlang = match erlang.strip_prefix("skipped: ") {
        Some(e) => format!("**skipped**: {}", md_escape(e)),
        None => format!("`{erlang}`"),
    };
    for (k, v) in [
        ("date", m("date")),
        (
            "command",
            format!("`{}` ({} mode)", m("command"), m("mode")),
        ),
        (
            "machine",
            format!("{}, {} cores, {} RAM", m("cpu"), m("cores"), m("memory")),
        ),
        ("kernel", m("kernel")),
        ("rustc", m("rustc")),
        (
            "otter-bench build",
            format!("{}, global allocator {}", m("build"), crate::ALLOC),
        ),
        ("Erlang/OTP", m("otp")),
        ("Erlang reference", erlang),
        (
            "git commit (HEAD; uncommitted edits not shown)",
            m("commit"),
        ),
        ("threads", format!("{} (all cores, both sides)", m("cores"))),
        ("steal time (/proc/stat, whole run)", steal_text(meta)),
    ] {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    if meta["build"] == "debug" {
        md += "\n<span style=\"color:red\"><b>Debug build</b>: otter's numbers here mean nothing; \
               run `cargo run --release -p otter-bench -- suite`.</span>\n";
    }
    let steal = meta["steal_pct"].as_f64().map(|p| p / 100.0);
    if let Some(st) = steal.filter(|st| *st > STEAL_WARN) {
        let _ = writeln!(
            md,
            "\n<span style=\"color:red\"><b>Steal time {:.1}%</b></span> (over {:.0}%): the \
             hypervisor gave that share of the machine's CPU time to other guests during the \
             run, so the figures move with the neighbours' load.",
            st * 100.0,
            STEAL_WARN * 100.0
        );
    }

    let failed_text = if failed > 0 {
        format!("<span style=\"color:red\"><b>{failed} failed</b></span>")
    } else {
        "0 failed".to_string()
    };
    let _ = writeln!(
        md,
        "\n## Summary\n\n{} runs: {ok} passed, {failed_text}, {skipped} skipped (otter ran {}, \
         Erlang ran {}).\n",
        records.len(),
        ran(Impl::Otter),
        ran(Impl::Erlang),
    );
    let headline = sections::headline(&res, sizes);
    md += &headline.markdown(&res);
    let targets = targets::targets(&res, sizes);
    targets::markdown(&mut md, &targets);
    let mut failures = String::new();
    let mut skips: Vec<(String, Vec<String>)> = Vec::new();
    for r in records {
        let what = format!("{} on {}", cases[r.case].id, r.imp.name());
        match &r.outcome {
            Outcome::CheckFailed(_, why) | Outcome::Error(why) => {
                let _ = writeln!(
                    failures,
                    "- <span style=\"color:red\"><b>FAILED</b></span> `{}` on {} (rep {}): {}",
                    cases[r.case].id,
                    r.imp.name(),
                    r.rep + 1,
                    md_escape(why)
                );
            }
            Outcome::Skipped(why) => match skips.iter_mut().find(|(w, _)| w == why) {
                Some((_, v)) if v.contains(&what) => {}
                Some((_, v)) => v.push(what),
                None => skips.push((why.clone(), vec![what])),
            },
            Outcome::Ok(_) => {}
        }
    }
    if !failures.is_empty() {
        md += &format!("\n### Failed runs\n\n{failures}");
    }

    let vars = sections::vars(sizes);
    for section in &sections::ALL {
        md += &format!("\n{}\n\n", sections::fill(section.text, &vars));
        for (i, part) in (section.parts)(&res, sizes).into_iter().enumerate() {
            md += if i > 0 { "\n" } else { "" };
            match part {
                Part::Table(t) => md += &t.markdown(&res),
                Part::Text(t) => md += &t,
                Part::Svg(name, alt, charts) => {
                    let path = out.join(name);
                    let write = |svg| std::fs::write(&path, svg).map_err(|e| e.to_string());
                    plot::svg(&charts)
                        .and_then(write)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    md += &format!("![{alt}]({name})\n");
                }
            }
        }
    }

    if !skips.is_empty() {
        md += "\n## Skipped runs\n\n";
        for (why, whats) in skips {
            let whats: Vec<String> = whats.iter().map(|w| format!("`{w}`")).collect();
            let _ = writeln!(
                md,
                "- {} — {} case(s): {}",
                md_escape(&why),
                whats.len(),
                whats.join(", ")
            );
        }
    }
    md += "\n---\nRaw data: [`results.jsonl`](results.jsonl) (one line per run, with `case`, \
           `rep`, `exit_code`), machine and versions: [`meta.json`](meta.json).\n";

    let path = out.join("REPORT.md");
    std::fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    let mut text = format!(
        "otter-bench suite: {} runs: {ok} passed, {failed} failed, {skipped} skipped\n\
         {:<10} {:<34} {:>14} {:>14}  otter vs erlang\n",
        records.len(),
        "seed",
        "measure",
        "otter",
        "erlang"
    );
    let plain = |s: &str| {
        if s.contains("FAILED") {
            "FAILED".to_string()
        } else {
            strip_tags(&s.replace("**", ""))
        }
    };
    for h in headline.cells(&res) {
        let (a, b, c) = (plain(&h[2]), plain(&h[3]), plain(&h[4]));
        let _ = writeln!(text, "{:<10} {:<34} {a:>14} {b:>14}  {c}", h[0], h[1]);
    }
    targets::text(&mut text, &targets);
    let _ = writeln!(
        text,
        "steal time: {}",
        strip_tags(&steal_text(meta).replace("**", ""))
    );
    let _ = write!(text, "report: {}", path.display());
    Ok(Summary { text, failed })
}

/// The steal time of the run, its worst run, and a warning over [`STEAL_WARN`].
fn steal_text(meta: &Value) -> String {
    let Some(st) = meta["steal_pct"].as_f64() else {
        return "unknown (no /proc/stat)".into();
    };
    let mut s = format!("{st:.2}% of all CPU time");
    if let (Some(w), Some(what)) = (
        meta["steal_pct_worst_run"].as_f64(),
        meta["steal_worst_run"].as_str(),
    ) {
        let _ = write!(s, "; most in one run: {w:.1}% ({})", md_escape(what));
    }
    if st / 100.0 > STEAL_WARN {
        let _ = write!(s, " — **over {:.0}%**", STEAL_WARN * 100.0);
    }
    s
}

/// `s` without its HTML tags.
fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in s.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}
