//! The suite's report. The product is the raw data, `results.jsonl` (one line per run) and
//! `meta.json` (`results.rs`); `REPORT.md` and the SVG plots it links are rendered from them,
//! right after a suite run or later by `otter-bench report DIR/results.jsonl [--out DIR]`.
//!
//! Every figure is the median over the repetitions that passed their check. A (case,
//! implementation) with any failed run shows `FAILED` in red instead of a number, and is
//! counted in the summary. Ratios are always "otter vs erlang", written as "N× faster"
//! (or "smaller" for memory) when otter is better and "N× slower" when it is worse.
//!
//! The report is data: `report/spec.md` is REPORT.md's description, rendered line by line by
//! `spec.rs`. It starts with the metrics (`@metric NAME FIELD FORMAT BETTER …`, see
//! `table.rs`); the rest is REPORT.md as it reads, in order: Markdown lines (`\n` a line
//! break, `//` a comment), each `{name}` filled from the variables (the run's `meta.json`, its
//! sizes, its counts, e.g. `{spawn_n:si}`) and each `{$…}` from the runs. A line may be
//! followed by
//!
//! - `@for` clauses (`x=value`, `x in a, b`, `x in LIST` of the run's sizes, `x:y in a:b, c:d`):
//!   the line is written once per row they give, left clause outermost; each `@for` line
//!   adds its rows, in order;
//! - `@slots CASE@IMPL; …` (a `CASE` alone is that case on otter and on erlang; default
//!   `{case}`): the slots `$0`, `$1`, … of its figures, `{$0 rate}` (slot 0's median of the
//!   metric `rate`) and `{$0/$1 rate}` ("otter vs erlang"; see `spec.rs` for the forms);
//! - `@if` (`ran`, `$0 METRIC`, `X == Y`, `X`): the row is written only if it holds;
//! - `@name NAME`: its rows also go to the stdout summary (`headline`, `targets`).
//!
//! A table is thus its head and one templated row with its `@for` and `@slots`. Two lines
//! stand alone: `@svg FILE ALT`, a chart (`charts.rs`, drawn by `plot.rs`) linked with ALT, and
//! `@ring_grid`, the ring's N × M grid (`charts.rs`). `format.rs` says how figures are written.

mod charts;
pub(crate) mod format;
mod plot;
pub(crate) mod results;
mod spec;
pub(crate) mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

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
    let (meta, sizes, cases, records) = &results::load(results)?;
    let res = Results::new(cases, records);
    let count = |f: fn(&Outcome) -> bool| records.iter().filter(|r| f(&r.outcome)).count();
    let ok = count(|o| matches!(o, Outcome::Ok(_)));
    let failed = count(|o| matches!(o, Outcome::CheckFailed(..) | Outcome::Error(_)));
    let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
    let ran = |imp: Impl| {
        let ran = |r: &&Record| r.imp == imp && !matches!(r.outcome, Outcome::Skipped(_));
        records.iter().filter(ran).count()
    };
    let m = |k: &str| meta[k].as_str().map_or(meta[k].to_string(), str::to_string);
    let erlang = m("erlang");
    let erlang_cell = match erlang.strip_prefix("skipped: ") {
        Some(e) => format!("**skipped**: {}", md_escape(e)),
        None => format!("`{erlang}`"),
    };
    let steal = meta["steal_pct"].as_f64().map(|p| p / 100.0);
    let steal_high = steal.filter(|st| *st > STEAL_WARN);
    let failed_text = match failed {
        0 => "0 failed".to_string(),
        _ => format!("<span style=\"color:red\"><b>{failed} failed</b></span>"),
    };
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
    let skips = skips.iter().map(|(why, whats)| {
        let whats: Vec<String> = whats.iter().map(|w| format!("`{w}`")).collect();
        let n = whats.len();
        format!("- {} — {n} case(s): {}", md_escape(why), whats.join(", "))
    });
    let mut vars = Vec::new();
    let meta_vars = meta.as_object().into_iter().flatten();
    vars.extend(meta_vars.map(|(k, _)| (k.clone(), m(k))));
    vars.extend(
        [
            ("alloc", crate::ALLOC.to_string()),
            ("erlang_cell", erlang_cell),
            ("steal", steal_text(meta)),
            (
                "steal_high",
                steal_high.map_or(String::new(), |st| format!("{:.1}", st * 100.0)),
            ),
            ("steal_warn", format!("{:.0}", STEAL_WARN * 100.0)),
            ("runs", records.len().to_string()),
            ("ok", ok.to_string()),
            ("failed_text", failed_text),
            ("skipped", skipped.to_string()),
            ("otter_ran", ran(Impl::Otter).to_string()),
            ("erlang_ran", ran(Impl::Erlang).to_string()),
            ("failures", failures.trim_end().to_string()),
            ("skips", skips.collect::<Vec<_>>().join("\n")),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    let mut named = std::collections::HashMap::new();
    let md = spec::Ctx::new(&res, sizes, vars)?.render(out, &mut named)?;
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
    // A row of a table named in spec.md, its cells as plain text.
    let mut cells = |name| {
        let rows = named.remove(name).unwrap_or_default().into_iter();
        rows.map(|r: String| {
            let r = r.trim_start_matches("| ").trim_end_matches(" |");
            r.split(" | ").map(plain).collect::<Vec<_>>()
        })
    };
    for h in cells("headline").collect::<Vec<_>>() {
        let _ = writeln!(
            text,
            "{:<10} {:<34} {:>14} {:>14}  {}",
            h[0], h[1], h[2], h[3], h[4]
        );
    }
    text += "targets:\n";
    for t in cells("targets").collect::<Vec<_>>() {
        let _ = writeln!(text, "  {:<62} {:<22} {:<28} {}", t[0], t[1], t[2], t[3]);
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
    let mut parts = s.split('<');
    let text = parts.next().unwrap_or_default().to_string();
    text + &parts
        .map(|p| p.split_once('>').map_or("", |t| t.1))
        .collect::<String>()
}
