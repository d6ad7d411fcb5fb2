//! The suite's report, from the runs `suite.rs` made: `REPORT.md` with one table per seed, laid out like the seed's own
//! figures, and the SVG plots it links (`ring.svg`, `spawn.svg`, `mailbox.svg`,
//! `closure.svg`).
//!
//! Every figure is the median over the repetitions that passed their check. A (case,
//! implementation) with any failed run shows `FAILED` in red instead of a number, and is
//! counted in the summary. Ratios are always "otter vs erlang", written as "N× faster"
//! (or "smaller" for memory) when otter is better and "N× slower" when it is worse.
//!
//! One file per section: `headline.rs` (the summary table), `targets.rs` (the server
//! layer's targets, under it), then one per seed in report order (`ring.rs`, `spawn.rs`,
//! `counting.rs`, `mailbox.rs`, `closure.rs`, `memory.rs`, `pingpong.rs`, then
//! `forkjoin.rs`, a process tree's time and peak RSS; `latency.rs`, round trips under
//! load, with `latency.svg`; `echo.rs`, a TCP echo server under load, with `echo.svg`;
//! `dist.rs`, round trips between nodes over Erlang distribution; `http.rs`, a JSON API
//! on otter and on plain tokio); `cell.rs` holds what
//! they share (medians, ratios), `format.rs` how figures are written, `plot.rs` the
//! charts (drawn with `plotters`), `results.rs` the raw data (`results.jsonl`, `meta.json`).

mod cell;
mod closure;
mod counting;
mod dist;
mod echo;
mod forkjoin;
pub(crate) mod format;
mod headline;
mod http;
mod latency;
mod mailbox;
mod memory;
mod pingpong;
mod plot;
pub(crate) mod results;
mod ring;
mod spawn;
mod targets;

use std::fmt::Write as _;

use plotters::style::RGBColor;

use crate::suite::{Case, Impl, Meta, Options, Outcome, Record, STEAL_WARN, Sizes, case_id, mode};
use cell::{Results, md_escape};
use headline::headline;

const OTTER: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const ERLANG: RGBColor = RGBColor(0x75, 0x70, 0xb3);
const OTTER_MATCH: RGBColor = RGBColor(0xe7, 0x29, 0x8a);

/// What the caller prints and its exit code depends on.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) failed: usize,
}

fn id(bench: &str, args: &[(&str, String)]) -> String {
    case_id(bench, args)
}

/// Writes REPORT.md and the SVGs into `o.out`; returns the summary for stdout.
pub(crate) fn write(
    o: &Options,
    meta: &Meta,
    sizes: &Sizes,
    cases: &[Case],
    records: &[Record],
) -> Result<Summary, String> {
    let res = Results::new(cases, records);
    let mut md = String::new();
    let count = |f: fn(&Outcome) -> bool| records.iter().filter(|r| f(&r.outcome)).count();
    let ok = count(|o| matches!(o, Outcome::Ok(_)));
    let failed = count(|o| matches!(o, Outcome::CheckFailed(..) | Outcome::Error(_)));
    let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
    let ran = |imp: Impl| {
        records
            .iter()
            .filter(|r| r.imp == imp && !matches!(r.outcome, Outcome::Skipped(_)))
            .count()
    };

    let _ = writeln!(md, "# otter benchmark report\n");
    let _ = writeln!(
        md,
        "The seed experiments of `shared/SEEDS.md`, defined in `shared/WORKLOADS.md`, run on \
         otter (`otter-bench`) and on the BEAM (`erlang-reference/bench`), one measurement per \
         process, otter and Erlang interleaved. Every figure is the **median of {} \
         repetition(s)**; ratios read \"otter vs erlang\".\n",
        o.reps
    );
    let _ = writeln!(md, "## Setup\n");
    let _ = writeln!(md, "| | |\n|---|---|");
    let erlang_line = match &meta.erlang {
        Ok(p) => format!("`{}`", p.display()),
        Err(e) => format!("**skipped**: {}", md_escape(e)),
    };
    for (k, v) in [
        ("date", meta.date.clone()),
        ("command", format!("`{}` ({} mode)", meta.command, mode(o))),
        (
            "machine",
            format!("{}, {} cores, {} RAM", meta.cpu, meta.cores, meta.memory),
        ),
        ("kernel", meta.kernel.clone()),
        ("rustc", meta.rustc.clone()),
        (
            "otter-bench build",
            format!("{}, global allocator {}", meta.build, crate::ALLOC),
        ),
        ("Erlang/OTP", meta.otp.clone()),
        ("Erlang reference", erlang_line),
        (
            "git commit (HEAD; uncommitted edits not shown)",
            meta.commit.clone(),
        ),
        ("threads", format!("{} (all cores, both sides)", meta.cores)),
        ("steal time (/proc/stat, whole run)", steal_text(meta)),
    ] {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    if meta.build == "debug" {
        let _ = writeln!(
            md,
            "\n<span style=\"color:red\"><b>Debug build</b>: otter's numbers here mean nothing; \
             run `cargo run --release -p otter-bench -- suite`.</span>"
        );
    }

    if let Some(st) = meta.steal.filter(|st| *st > STEAL_WARN) {
        let _ = writeln!(
            md,
            "\n<span style=\"color:red\"><b>Steal time {:.1}%</b></span> (over {:.0}%): the \
             hypervisor gave that share of the machine's CPU time to other guests during the \
             run, so the figures move with the neighbours' load.",
            st * 100.0,
            STEAL_WARN * 100.0
        );
    }

    // ===== Summary =====
    let _ = writeln!(md, "\n## Summary\n");
    let _ = writeln!(
        md,
        "{} runs: {} passed, {}, {} skipped (otter ran {}, Erlang ran {}).\n",
        records.len(),
        ok,
        if failed > 0 {
            format!("<span style=\"color:red\"><b>{failed} failed</b></span>")
        } else {
            "0 failed".to_string()
        },
        skipped,
        ran(Impl::Otter),
        ran(Impl::Erlang),
    );
    let headline = headline(&res, sizes);
    let _ = writeln!(
        md,
        "| seed | measure | otter | erlang | otter vs erlang |\n|---|---|---|---|---|"
    );
    for h in &headline {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            h.seed, h.measure, h.otter, h.erlang, h.ratio
        );
    }
    let targets = targets::targets(&res, sizes);
    targets::markdown(&mut md, &targets);
    let failures: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::CheckFailed(..) | Outcome::Error(_)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(md, "\n### Failed runs\n");
        for r in &failures {
            let why = match &r.outcome {
                Outcome::CheckFailed(_, w) | Outcome::Error(w) => w.as_str(),
                _ => "",
            };
            let _ = writeln!(
                md,
                "- <span style=\"color:red\"><b>FAILED</b></span> `{}` on {} (rep {}): {}",
                cases[r.case].id,
                r.imp.name(),
                r.rep + 1,
                md_escape(why)
            );
        }
    }
    let mut skip_reasons: Vec<(String, String)> = Vec::new();
    for r in records {
        if let Outcome::Skipped(why) = &r.outcome {
            let e = (
                format!("{} on {}", cases[r.case].id, r.imp.name()),
                why.clone(),
            );
            if !skip_reasons.contains(&e) {
                skip_reasons.push(e);
            }
        }
    }

    ring::section(&mut md, &res, sizes, o)?;
    spawn::section(&mut md, &res, sizes, o)?;
    counting::section(&mut md, &res, sizes);
    mailbox::section(&mut md, &res, sizes, o)?;
    closure::section(&mut md, &res, sizes, o)?;
    memory::section(&mut md, &res, sizes);
    pingpong::section(&mut md, &res, sizes);
    forkjoin::section(&mut md, &res, sizes);
    latency::section(&mut md, &res, sizes, o)?;
    echo::section(&mut md, &res, sizes, o)?;
    dist::section(&mut md, &res, sizes);

    http::section(&mut md, &res, sizes);

    if !skip_reasons.is_empty() {
        let _ = writeln!(md, "\n## Skipped runs\n");
        let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
        for (what, why) in skip_reasons {
            match by_reason.iter_mut().find(|(w, _)| *w == why) {
                Some((_, v)) => v.push(what),
                None => by_reason.push((why, vec![what])),
            }
        }
        for (why, whats) in by_reason {
            let _ = writeln!(
                md,
                "- {} — {} case(s): {}",
                md_escape(&why),
                whats.len(),
                whats
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let _ = writeln!(
        md,
        "\n---\nRaw data: [`results.jsonl`](results.jsonl) (one line per run, with `case`, \
         `rep`, `exit_code`), machine and versions: [`meta.json`](meta.json)."
    );

    let path = o.out.join("REPORT.md");
    std::fs::write(&path, md).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    let mut text = String::new();
    let _ = writeln!(
        text,
        "otter-bench suite: {} runs: {ok} passed, {failed} failed, {skipped} skipped",
        records.len()
    );
    let _ = writeln!(
        text,
        "{:<10} {:<34} {:>14} {:>14}  otter vs erlang",
        "seed", "measure", "otter", "erlang"
    );
    for h in &headline {
        let plain = |s: &str| {
            if s.contains("FAILED") {
                "FAILED".to_string()
            } else {
                strip_tags(&s.replace("**", ""))
            }
        };
        let _ = writeln!(
            text,
            "{:<10} {:<34} {:>14} {:>14}  {}",
            h.seed,
            h.measure,
            plain(&h.otter),
            plain(&h.erlang),
            plain(&h.ratio)
        );
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
fn steal_text(meta: &Meta) -> String {
    let Some(st) = meta.steal else {
        return "unknown (no /proc/stat)".into();
    };
    let mut s = format!("{:.2}% of all CPU time", st * 100.0);
    if let Some((w, what)) = &meta.steal_worst {
        let _ = write!(
            s,
            "; most in one run: {:.1}% ({})",
            w * 100.0,
            md_escape(what)
        );
    }
    if st > STEAL_WARN {
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

fn write_svg(o: &Options, name: &str, svg: &str) -> Result<(), String> {
    let path = o.out.join(name);
    std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
