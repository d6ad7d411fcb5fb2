//! The suite's report. The product is the raw data, `results.jsonl` (one line per run) and
//! `meta.json` (`results.rs`); `REPORT.md` and the SVG plots it links are rendered from them,
//! right after a suite run or later by `otter-bench report DIR/results.jsonl [--out DIR]`.
//!
//! Every figure is the median over the repetitions that passed their check. A (case,
//! implementation) with any failed run shows `FAILED` in red instead of a number, and is
//! counted in the summary. Ratios are always "otter vs erlang", written as "N× faster"
//! (or "smaller" for memory) when otter is better and "N× slower" when it is worse.
//!
//! The report is data: `report/spec.md` describes REPORT.md and `spec.rs` renders it, line by
//! line, in order. It starts with the metrics (`@metric NAME FIELD FORMAT BETTER …`, see
//! `table.rs`); then come REPORT.md's lines as they read (`\n` a line break, `//` a
//! comment), each `{name}` filled from the variables (`meta.json`'s fields, the run's counts,
//! the sizes of its mode: `{spawn_n:si}`) and each `{$…}` from the runs. Under a line may
//! stand
//!
//! - `@for` clauses (`x=value`, `x in a, b`, `x in NAME` a list of the sizes, `x:y in a:b,
//!   c:d`): the line is written once per row they give, left clause outermost; each `@for`
//!   line adds its rows, in order;
//! - `@slots CASE@IMPL; …` (a `CASE` alone is that case on otter and on erlang; default
//!   `{case}`): the slots `$0`, `$1`, … of the line's figures: `{$0 rate}` is slot 0's median
//!   of the metric `rate`, `{$0/$1 rate}` "otter vs erlang", `{$0:$2/$1:$3 gap}` compares two
//!   ratios (`spec.rs`, `figure`, has every form, the targets' verdicts among them);
//! - `@if` (`ran`, `X == Y`, `X != Y`, `X`): the row is written only if it holds;
//! - `@name NAME`: its rows go to the stdout summary too (`headline`, `targets`).
//!
//! A table is thus its head and one templated row with its `@for`s and `@slots`. A chart is
//! data too (`charts.rs`): `@chart TITLE | SUBTITLE | Y | X` and its rows, `@bar` or `@point`
//! lines with their `@for`s and `@slots`; `@svg FILE ALT` draws the charts above it
//! (`plot.rs`) and links them. `@ring_grid` is the ring's N × M grid, `@guides` the mailbox's
//! reference slopes and growth exponents (`charts.rs`). `format.rs` writes the figures.

mod charts;
pub(crate) mod format;
mod plot;
pub(crate) mod results;
mod spec;
pub(crate) mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::suite::{Impl, Outcome, Record, STEAL_WARN};
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
    let (meta, sizes, ids, records) = &results::load(results)?;
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
    let skip = |r: &Record| matches!(r.outcome, Outcome::Skipped(_));
    let ok = count(&|r| matches!(r.outcome, Outcome::Ok(_)));
    let failed = count(&|r| matches!(r.outcome, Outcome::CheckFailed(..) | Outcome::Error(_)));
    let (skipped, ran) = (count(&skip), |imp| count(&|r| r.imp == imp && !skip(r)));
    let erlang = &meta["erlang"];
    let erlang = erlang.as_str().map_or(erlang.to_string(), str::to_string);
    let erlang_cell = match erlang.strip_prefix("skipped: ") {
        Some(e) => format!("**skipped**: {}", md_escape(e)),
        None => format!("`{erlang}`"),
    };
    let steal = meta["steal_pct"].as_f64().map(|p| p / 100.0);
    let high = steal.filter(|st| *st > STEAL_WARN);
    let steal_high = high.map_or(String::new(), |st| format!("{:.1}", st * 100.0));
    let (mut failures, mut skips) = (Vec::new(), Vec::<(&str, Vec<String>)>::new());
    for r in records {
        let (id, imp) = (&ids[r.case], r.imp.name());
        match &r.outcome {
            Outcome::CheckFailed(_, why) | Outcome::Error(why) => failures.push(format!(
                "- <span style=\"color:red\"><b>FAILED</b></span> `{id}` on {imp} (rep {}): {}",
                r.rep + 1,
                md_escape(why)
            )),
            Outcome::Skipped(why) => {
                let what = format!("`{id} on {imp}`");
                match skips.iter_mut().find(|(w, _)| *w == why.as_str()) {
                    Some((_, v)) if v.contains(&what) => {}
                    Some((_, v)) => v.push(what),
                    None => skips.push((why.as_str(), vec![what])),
                }
            }
            Outcome::Ok(_) => {}
        }
    }
    let skips = skips.iter().map(|(why, whats)| {
        let (why, n) = (md_escape(why), whats.len());
        format!("- {why} — {n} case(s): {}", whats.join(", "))
    });
    let run = json!({
        "alloc": crate::ALLOC, "erlang_cell": erlang_cell, "steal": steal_text(meta),
        "steal_high": steal_high, "steal_warn": format!("{:.0}", STEAL_WARN * 100.0),
        "runs": records.len(), "ok": ok, "failed": failed, "skipped": skipped,
        "otter_ran": ran(Impl::Otter), "erlang_ran": ran(Impl::Erlang),
        "failures": failures.join("\n"), "skips": skips.collect::<Vec<_>>().join("\n"),
    });
    let vars = [spec::vars_of("", meta), spec::vars_of("", &run)].concat();
    let runs = records
        .iter()
        .map(|r| (ids[r.case].as_str(), r.imp, &r.outcome));
    let res = Results::new(runs);
    let (md, mut named) = spec::Ctx::new(&res, sizes, vars)?.render(out)?;
    let path = out.join("REPORT.md");
    std::fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    // The stdout summary: the rows of the tables named `headline` and `targets`, as text.
    let n = records.len();
    let mut text =
        format!("otter-bench suite: {n} runs: {ok} passed, {failed} failed, {skipped} skipped\n");
    let cells = |r: String| -> Vec<String> { r[2..r.len() - 2].split(" | ").map(plain).collect() };
    let (headline, targets) = (named.remove("headline"), named.remove("targets"));
    for h in headline.unwrap_or_default().into_iter().map(cells) {
        let [seed, what, otter, erlang, vs] = &h[..] else {
            continue;
        };
        let _ = writeln!(text, "{seed:<10} {what:<34} {otter:>14} {erlang:>14}  {vs}");
    }
    text += "targets:\n";
    for t in targets.unwrap_or_default().into_iter().map(cells) {
        let [what, goal, measured, verdict] = &t[..] else {
            continue;
        };
        let _ = writeln!(text, "  {what:<62} {goal:<22} {measured:<28} {verdict}");
    }
    let _ = writeln!(text, "steal time: {}", plain(&steal_text(meta)));
    let _ = write!(text, "report: {}", path.display());
    Ok(Summary { text, failed })
}

/// A cell as plain text: `FAILED` for a failed one, else without bold and HTML tags.
fn plain(s: &str) -> String {
    if s.contains("FAILED") {
        "FAILED".to_string()
    } else {
        strip_tags(&s.replace("**", ""))
    }
}

/// The steal time of the run, its worst run, and a warning over [`STEAL_WARN`].
fn steal_text(meta: &Value) -> String {
    let Some(st) = meta["steal_pct"].as_f64() else {
        return "unknown (no /proc/stat)".into();
    };
    let mut s = format!("{st:.2}% of all CPU time");
    let worst = (
        meta["steal_pct_worst_run"].as_f64(),
        meta["steal_worst_run"].as_str(),
    );
    if let (Some(w), Some(what)) = worst {
        let _ = write!(s, "; most in one run: {w:.1}% ({})", md_escape(what));
    }
    if st / 100.0 > STEAL_WARN {
        let _ = write!(s, " — **over {:.0}%**", STEAL_WARN * 100.0);
    }
    s
}

/// `s` without its HTML tags.
fn strip_tags(s: &str) -> String {
    let mut parts = s.split('<');
    let text = parts.next().unwrap_or_default().to_string();
    let tails = parts.map(|p| p.split_once('>').map_or("", |t| t.1));
    tails.fold(text, |t, p| t + p)
}
