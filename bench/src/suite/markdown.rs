//! The suite's report: `REPORT.md` with one table per seed, laid out like the seed's own
//! figures, and the SVG plots it links (`ring.svg`, `spawn.svg`, `mailbox.svg`,
//! `closure.svg`).
//!
//! Every figure is the median over the repetitions that passed their check. A (case,
//! implementation) with any failed run shows `FAILED` in red instead of a number, and is
//! counted in the summary. Ratios are always "otter vs erlang", written as "N× faster"
//! (or "smaller" for memory) when otter is better and "N× slower" when it is worse.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::{Case, Impl, Meta, Options, Outcome, Record, Sizes, case_id, mode};
use crate::plot::{self, Axis, BarChart, Guide, LineChart, Marker, Series};

const OTTER: &str = "#d95f02";
const ERLANG: &str = "#7570b3";
const OTTER_MATCH: &str = "#e7298a";

/// What the caller prints and its exit code depends on.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) text: String,
    pub(crate) failed: usize,
}

/// The runs of one (case, implementation).
#[derive(Debug, Clone)]
enum Cell<'a> {
    /// Not part of this suite run (e.g. the 100M ring cell without `--full`).
    NotRun,
    /// Every run skipped: why.
    Skipped(String),
    /// At least one run failed: the reasons, how many failed, how many ran.
    Failed(Vec<String>, usize, usize),
    /// The JSON lines of the passing runs.
    Ok(Vec<&'a Value>),
}

impl Cell<'_> {
    /// The median of `f` over the passing runs.
    fn median(&self, f: impl Fn(&Value) -> Option<f64>) -> Option<f64> {
        let Cell::Ok(runs) = self else { return None };
        let mut v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        })
    }

    /// The median formatted with `fmt`, or what stands in for it.
    fn show(&self, f: impl Fn(&Value) -> Option<f64>, fmt: impl Fn(f64) -> String) -> String {
        match self {
            Cell::NotRun => "—".into(),
            Cell::Skipped(why) => format!(
                "<i title=\"{}\">skipped</i>",
                md_escape(why).replace('"', "'")
            ),
            Cell::Failed(reasons, bad, total) => failed_span(reasons, *bad, *total),
            Cell::Ok(_) => self.median(f).map_or("n/a".into(), fmt),
        }
    }
}

fn failed_span(reasons: &[String], bad: usize, total: usize) -> String {
    let mut uniq: Vec<&str> = Vec::new();
    for r in reasons {
        if !uniq.contains(&r.as_str()) {
            uniq.push(r);
        }
    }
    format!(
        "<span style=\"color:red\"><b>FAILED</b>: {} ({bad} of {total} runs)</span>",
        md_escape(&uniq.join("; "))
    )
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

fn seconds(v: &Value) -> Option<f64> {
    v["seconds"].as_f64()
}
fn ops_per_s(v: &Value) -> Option<f64> {
    Some(v["ops"].as_f64()? / v["seconds"].as_f64()?)
}
fn ns_per_op(v: &Value) -> Option<f64> {
    Some(v["seconds"].as_f64()? * 1e9 / v["ops"].as_f64()?)
}
fn bytes_per_process(v: &Value) -> Option<f64> {
    v["bytes_per_process"].as_f64()
}
fn beam_bytes_per_process(v: &Value) -> Option<f64> {
    v["beam_bytes_per_process"].as_f64()
}

fn rate(x: f64) -> String {
    format!("{}/s", plot::si(x))
}
fn bytes(x: f64) -> String {
    if x.abs() >= 1024.0 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{x:.0} B")
    }
}
fn factor(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// "otter vs erlang" for two medians. `higher_better`: rates (true) or times (false).
fn ratio(o: Option<f64>, e: Option<f64>, higher_better: bool, better: &str, worse: &str) -> String {
    match (o, e) {
        (Some(o), Some(e)) if o > 0.0 && e > 0.0 => {
            let f = if higher_better { o / e } else { e / o };
            if f >= 1.0 {
                format!("**{}× {better}**", factor(f))
            } else {
                format!("{}× {worse}", factor(1.0 / f))
            }
        }
        _ => "—".into(),
    }
}

/// Index of the runs by (case id, implementation).
struct Results<'a> {
    by: HashMap<(&'a str, Impl), Vec<&'a Outcome>>,
}

impl<'a> Results<'a> {
    fn new(cases: &'a [Case], records: &'a [Record]) -> Results<'a> {
        let mut by: HashMap<(&str, Impl), Vec<&Outcome>> = HashMap::new();
        for r in records {
            by.entry((cases[r.case].id.as_str(), r.imp))
                .or_default()
                .push(&r.outcome);
        }
        Results { by }
    }

    fn cell(&self, id: &str, imp: Impl) -> Cell<'a> {
        let Some(runs) = self.by.get(&(id, imp)) else {
            return Cell::NotRun;
        };
        let mut oks = Vec::new();
        let mut reasons = Vec::new();
        let mut skipped = None;
        for o in runs {
            match o {
                Outcome::Ok(v) => oks.push(v),
                Outcome::CheckFailed(_, why) => reasons.push(why.clone()),
                Outcome::Error(e) => reasons.push(e.clone()),
                Outcome::Skipped(why) => skipped = Some(why.clone()),
            }
        }
        if !reasons.is_empty() {
            let total = oks.len() + reasons.len();
            Cell::Failed(reasons.clone(), reasons.len(), total)
        } else if !oks.is_empty() {
            Cell::Ok(oks)
        } else {
            Cell::Skipped(skipped.unwrap_or_default())
        }
    }
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
        ("otter-bench build", meta.build.to_string()),
        ("Erlang/OTP", meta.otp.clone()),
        ("Erlang reference", erlang_line),
        (
            "git commit (HEAD; uncommitted edits not shown)",
            meta.commit.clone(),
        ),
        ("threads", format!("{} (all cores, both sides)", meta.cores)),
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

    ring(&mut md, &res, sizes, o)?;
    spawn(&mut md, &res, sizes, o)?;
    counting(&mut md, &res, sizes);
    mailbox(&mut md, &res, sizes, o)?;
    closure(&mut md, &res, sizes, o)?;
    memory(&mut md, &res, sizes);
    pingpong(&mut md, &res, sizes);

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
    let _ = write!(text, "report: {}", path.display());
    Ok(Summary { text, failed })
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

/// One row of the summary table.
#[derive(Debug)]
struct Headline {
    seed: &'static str,
    measure: String,
    otter: String,
    erlang: String,
    ratio: String,
}

fn headline(res: &Results<'_>, s: &Sizes) -> Vec<Headline> {
    let mut v = Vec::new();
    let mut row = |seed,
                   measure: String,
                   id: &str,
                   f: fn(&Value) -> Option<f64>,
                   fmt: fn(f64) -> String,
                   higher_better: bool,
                   better: &str| {
        let (co, ce) = (res.cell(id, Impl::Otter), res.cell(id, Impl::Erlang));
        v.push(Headline {
            seed,
            measure,
            otter: format!("{}{}", co.show(f, fmt), ran_instead(&co, id)),
            erlang: ce.show(f, fmt),
            ratio: qualified(
                ratio(co.median(f), ce.median(f), higher_better, better, "slower"),
                &ran_instead(&co, id),
            ),
        });
    };
    let ring_n = if s.ring.contains(&1000) {
        1000
    } else {
        s.ring[0]
    };
    row(
        "#4 ring",
        format!("sends/s, {ring_n}×{ring_n}"),
        &id(
            "ring",
            &[("n", ring_n.to_string()), ("m", ring_n.to_string())],
        ),
        ops_per_s,
        rate,
        true,
        "faster",
    );
    row(
        "#3 spawn",
        format!("spawn+exit/s, n={} c=1", plot::si(s.spawn_n as f64)),
        &id("spawn", &[("n", s.spawn_n.to_string()), ("c", "1".into())]),
        ops_per_s,
        rate,
        true,
        "faster",
    );
    for style in ["raw", "server"] {
        row(
            "#5 counting",
            format!("msgs/s, {style}, 1 sender"),
            &id(
                "counting",
                &[
                    ("msgs", s.counting_msgs.to_string()),
                    ("senders", "1".into()),
                    ("style", style.into()),
                ],
            ),
            ops_per_s,
            rate,
            true,
            "faster",
        );
    }
    let k = if s.mailbox_k.contains(&10_000) {
        10_000
    } else {
        *s.mailbox_k.last().unwrap_or(&1000)
    };
    for order in ["spawn", "reverse"] {
        row(
            "#2 mailbox",
            format!("time, k={k} {order} order"),
            &id("mailbox", &[("k", k.to_string()), ("order", order.into())]),
            seconds,
            plot::secs,
            false,
            "faster",
        );
    }
    for style in ["message", "closure"] {
        row(
            "#1 closure",
            format!("ns per increment, {style}"),
            &id(
                "closure",
                &[("n", s.closure_n.to_string()), ("style", style.into())],
            ),
            ns_per_op,
            plot::nanos,
            false,
            "faster",
        );
    }
    // The figure of merit of seed #1: message / closure, per implementation.
    let mc = |imp| {
        let m = res
            .cell(
                &id(
                    "closure",
                    &[("n", s.closure_n.to_string()), ("style", "message".into())],
                ),
                imp,
            )
            .median(ns_per_op);
        let c = res
            .cell(
                &id(
                    "closure",
                    &[("n", s.closure_n.to_string()), ("style", "closure".into())],
                ),
                imp,
            )
            .median(ns_per_op);
        m.zip(c).map(|(m, c)| m / c)
    };
    let (mo, me) = (mc(Impl::Otter), mc(Impl::Erlang));
    v.push(Headline {
        seed: "#1 closure",
        measure: "message / closure (lower is better)".into(),
        otter: mo.map_or("—".into(), |x| format!("{}×", factor(x))),
        erlang: me.map_or("—".into(), |x| format!("{}×", factor(x))),
        ratio: match (mo, me) {
            (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
            (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
            _ => "—".into(),
        },
    });
    let mut row2 = |seed,
                    measure: String,
                    id: &str,
                    f: fn(&Value) -> Option<f64>,
                    fmt: fn(f64) -> String,
                    better: &str| {
        let (co, ce) = (res.cell(id, Impl::Otter), res.cell(id, Impl::Erlang));
        let worse = if better == "smaller" {
            "larger"
        } else {
            "slower"
        };
        v.push(Headline {
            seed,
            measure,
            otter: co.show(f, fmt),
            erlang: ce.show(f, fmt),
            ratio: ratio(co.median(f), ce.median(f), false, better, worse),
        });
    };
    row2(
        "memory",
        format!("bytes per idle process, p={}", plot::si(s.memory_p as f64)),
        &id("memory", &[("p", s.memory_p.to_string())]),
        bytes_per_process,
        bytes,
        "smaller",
    );
    row2(
        "pingpong",
        "ns per round trip, raw".into(),
        &id(
            "pingpong",
            &[("r", s.pingpong_r.to_string()), ("style", "raw".into())],
        ),
        ns_per_op,
        plot::nanos,
        "faster",
    );
    v
}

/// A ratio between runs that did not do the same thing (`note` non-empty) is shown plain,
/// marked as not comparable.
fn qualified(ratio: String, note: &str) -> String {
    if note.is_empty() || ratio == "—" {
        ratio
    } else {
        format!("<i>not comparable</i> ({})", ratio.replace("**", ""))
    }
}

/// " (ran raw)" when otter's run reports a `style_run` other than the case's `style`.
fn ran_instead(c: &Cell<'_>, id: &str) -> String {
    let Cell::Ok(runs) = c else {
        return String::new();
    };
    let ran = runs.first().and_then(|v| v["style_run"].as_str());
    match ran {
        Some(r) if !id.contains(&format!("style={r}")) => format!(" (ran {r})"),
        _ => String::new(),
    }
}

fn write_svg(o: &Options, name: &str, svg: &str) -> Result<(), String> {
    let path = o.out.join(name);
    std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

// ===== #4 ring =====

fn ring(md: &mut String, res: &Results<'_>, s: &Sizes, o: &Options) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Seed #4 — the ring (Armstrong's ring, N processes × M rounds)\n"
    );
    let _ = writeln!(
        md,
        "\"Erlang vs. Stackless vs. multitask: the Ring Benchmark Showdown\" (2007): N and M \
         each in 100, 1,000, 10,000; Erlang took 20.5 s for 10,000 × 10,000 (≈ 4.9 M sends/s). \
         Timed: building the ring, M rounds, and one `stop` round. Sends per second \
         (N·M / time); the cell gives otter, erlang, and otter vs erlang.\n"
    );
    let cell_id = |n: u64, m: u64| id("ring", &[("n", n.to_string()), ("m", m.to_string())]);
    let _ = write!(md, "| N \\ M |");
    for m in &s.ring {
        let _ = write!(md, " M = {} |", plot::si(*m as f64));
    }
    let _ = write!(md, "\n|---|");
    for _ in &s.ring {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md);
    for &n in &s.ring {
        let _ = write!(md, "| **N = {}** |", plot::si(n as f64));
        for &m in &s.ring {
            let (co, ce) = (
                res.cell(&cell_id(n, m), Impl::Otter),
                res.cell(&cell_id(n, m), Impl::Erlang),
            );
            if matches!(co, Cell::NotRun) && matches!(ce, Cell::NotRun) {
                let _ = write!(
                    md,
                    " not run ({} sends: `--full`) |",
                    plot::si((n * m) as f64)
                );
                continue;
            }
            let _ = write!(
                md,
                " otter {}<br>erlang {}<br>{} |",
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                ratio(
                    co.median(ops_per_s),
                    ce.median(ops_per_s),
                    true,
                    "faster",
                    "slower"
                )
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "\n| N | M | sends | otter time | erlang time | otter sends/s | erlang sends/s | otter vs erlang |\n|---|---|---|---|---|---|---|---|"
    );
    let mut series: Vec<Series> = Vec::new();
    for (imp, color) in [(Impl::Otter, OTTER), (Impl::Erlang, ERLANG)] {
        for (i, &n) in s.ring.iter().enumerate() {
            series.push(Series {
                name: format!("{} N={}", imp.name(), plot::si(n as f64)),
                color,
                dashed: imp == Impl::Erlang,
                marker: [
                    Marker::Circle,
                    Marker::Square,
                    Marker::Triangle,
                    Marker::Diamond,
                ][i % 4],
                points: s
                    .ring
                    .iter()
                    .filter_map(|&m| {
                        res.cell(&cell_id(n, m), imp)
                            .median(ops_per_s)
                            .map(|y| ((n * m) as f64, y))
                    })
                    .collect(),
            });
        }
    }
    for &n in &s.ring {
        for &m in &s.ring {
            let (co, ce) = (
                res.cell(&cell_id(n, m), Impl::Otter),
                res.cell(&cell_id(n, m), Impl::Erlang),
            );
            if matches!(co, Cell::NotRun) && matches!(ce, Cell::NotRun) {
                continue;
            }
            let _ = writeln!(
                md,
                "| {n} | {m} | {} | {} | {} | {} | {} | {} |",
                plot::si((n * m) as f64),
                co.show(seconds, plot::secs),
                ce.show(seconds, plot::secs),
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                ratio(
                    co.median(ops_per_s),
                    ce.median(ops_per_s),
                    true,
                    "faster",
                    "slower"
                )
            );
        }
    }
    let svg = plot::line_chart(&LineChart {
        title: "Ring: sends per second over N·M".into(),
        subtitle: "seed #4; median of repetitions; higher is better".into(),
        x: Axis {
            label: "N·M sends (log)",
            log: true,
            fmt: plot::si,
        },
        y: Axis {
            label: "sends per second (log)",
            log: true,
            fmt: plot::si,
        },
        series,
        guides: vec![],
    });
    write_svg(o, "ring.svg", &svg)?;
    let _ = writeln!(md, "\n![ring: sends/s over N·M](ring.svg)");
    Ok(())
}

// ===== #3 spawn =====

fn spawn(md: &mut String, res: &Results<'_>, s: &Sizes, o: &Options) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Seed #3 — serial spawn (n processes in c chains)\n"
    );
    let _ = writeln!(
        md,
        "\"How fast can Erlang create processes?\" (2006): 1,000,000 processes in c chains, each \
         spawning the next and exiting; ≈ 350,000 spawn+exit/s then, slower with more chains. \
         Here n = {}.\n",
        plot::si(s.spawn_n as f64)
    );
    let _ = writeln!(
        md,
        "| chains c | otter time | erlang time | otter spawn+exit/s | erlang spawn+exit/s | otter vs erlang |\n|---|---|---|---|---|---|"
    );
    let mut vo = Vec::new();
    let mut ve = Vec::new();
    for &c in &s.spawn_c {
        let cid = id(
            "spawn",
            &[("n", s.spawn_n.to_string()), ("c", c.to_string())],
        );
        let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
        let _ = writeln!(
            md,
            "| {c} | {} | {} | {} | {} | {} |",
            co.show(seconds, plot::secs),
            ce.show(seconds, plot::secs),
            co.show(ops_per_s, rate),
            ce.show(ops_per_s, rate),
            ratio(
                co.median(ops_per_s),
                ce.median(ops_per_s),
                true,
                "faster",
                "slower"
            )
        );
        vo.push(co.median(ops_per_s));
        ve.push(ce.median(ops_per_s));
    }
    let svg = plot::bar_chart(&BarChart {
        title: "Serial spawn: spawn+exit per second by number of chains".into(),
        subtitle: format!(
            "seed #3; n = {}; higher is better",
            plot::si(s.spawn_n as f64)
        ),
        y: Axis {
            label: "spawn+exit per second",
            log: false,
            fmt: plot::si,
        },
        groups: s.spawn_c.iter().map(|c| format!("c = {c}")).collect(),
        series: vec![("otter".into(), OTTER, vo), ("erlang".into(), ERLANG, ve)],
    });
    write_svg(o, "spawn.svg", &svg)?;
    let _ = writeln!(md, "\n![spawn rate by chains](spawn.svg)");
    Ok(())
}

// ===== #5 counting =====

fn counting(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(
        md,
        "\n## Seed #5 — the CountingActor (raw receive loop vs server layer)\n"
    );
    let _ = writeln!(
        md,
        "\"Scala Actor v Erlang gen_server Performance\" (2011, 4 cores): 3,000,000 `Count(100)` \
         then a synchronous GetAndReset; Erlang bare receive 2.8 M msg/s, gen_server 1.8 M msg/s. \
         Here msgs = {}. Messages per second.\n",
        plot::si(s.counting_msgs as f64)
    );
    let _ = writeln!(
        md,
        "| style | senders | otter msgs/s | erlang msgs/s | otter vs erlang | note |\n|---|---|---|---|---|---|"
    );
    for style in ["raw", "server"] {
        for &senders in &s.senders {
            let cid = id(
                "counting",
                &[
                    ("msgs", s.counting_msgs.to_string()),
                    ("senders", senders.to_string()),
                    ("style", style.into()),
                ],
            );
            let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
            let note = style_note(&co, style);
            let _ = writeln!(
                md,
                "| {style} | {senders} | {} | {} | {} | {note} |",
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                qualified(
                    ratio(
                        co.median(ops_per_s),
                        ce.median(ops_per_s),
                        true,
                        "faster",
                        "slower"
                    ),
                    &note
                )
            );
        }
    }
}

// ===== #2 mailbox =====

fn mailbox(md: &mut String, res: &Results<'_>, s: &Sizes, o: &Options) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Seed #2 — mailbox: selective receive in spawn vs reverse order\n"
    );
    let _ = writeln!(
        md,
        "\"Erlang process mailbox performance\" (2010): 10,000 children send `{{self(), ok}}`; \
         the parent takes them by pid. Reverse spawn order took 1.37 s, spawn order 83 ms: the \
         BEAM rescans skipped messages, O(k²). otter **key** = `recv_key` by the child's pid \
         (O(1) keyed receive, the default); otter **match** = `recv_match` with a predicate on \
         the pid (Erlang's selective receive, for reference, k ≤ {}). Time from the first spawn \
         to the last message taken; lower is better.\n",
        plot::si(s.mailbox_match_max_k as f64)
    );
    let mid = |k: u64, order: &str, style: Option<&str>| {
        let mut a = vec![("k", k.to_string()), ("order", order.to_string())];
        if let Some(st) = style {
            a.push(("style", st.to_string()));
        }
        id("mailbox", &a)
    };
    let _ = writeln!(
        md,
        "| k | otter key, spawn | otter key, reverse | otter match, spawn | otter match, reverse | erlang spawn | erlang reverse | otter(key) vs erlang, spawn | otter(key) vs erlang, reverse |\n|---|---|---|---|---|---|---|---|---|"
    );
    type Col = (&'static str, Impl, Option<&'static str>);
    let cols: [Col; 6] = [
        ("spawn", Impl::Otter, None),
        ("reverse", Impl::Otter, None),
        ("spawn", Impl::Otter, Some("match")),
        ("reverse", Impl::Otter, Some("match")),
        ("spawn", Impl::Erlang, None),
        ("reverse", Impl::Erlang, None),
    ];
    for &k in &s.mailbox_k {
        let cells: Vec<Cell<'_>> = cols
            .iter()
            .map(|(order, imp, style)| res.cell(&mid(k, order, *style), *imp))
            .collect();
        let _ = write!(md, "| {} |", plot::si(k as f64));
        for c in &cells {
            let _ = write!(md, " {} |", c.show(seconds, plot::secs));
        }
        for (oi, ei) in [(0, 4), (1, 5)] {
            let _ = write!(
                md,
                " {} |",
                ratio(
                    cells[oi].median(seconds),
                    cells[ei].median(seconds),
                    false,
                    "faster",
                    "slower"
                )
            );
        }
        let _ = writeln!(md);
    }
    // Growth exponent: slope of log(time) over log(k) between the smallest and largest k
    // measured (1 = linear, 2 = quadratic).
    let _ = write!(md, "| **growth exponent** |");
    let mut series: Vec<Series> = Vec::new();
    for (i, (order, imp, style)) in cols.iter().enumerate() {
        let pts: Vec<(f64, f64)> = s
            .mailbox_k
            .iter()
            .filter_map(|&k| {
                res.cell(&mid(k, order, *style), *imp)
                    .median(seconds)
                    .map(|t| (k as f64, t))
            })
            .collect();
        let slope = match (pts.first(), pts.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln())
            }
            _ => "—".into(),
        };
        let _ = write!(md, " {slope} |");
        let (name, color) = match (imp, style) {
            (Impl::Otter, None) => (format!("otter key, {order} order"), OTTER),
            (Impl::Otter, Some(_)) => (format!("otter match, {order} order"), OTTER_MATCH),
            (Impl::Erlang, _) => (format!("erlang, {order} order"), ERLANG),
        };
        series.push(Series {
            name,
            color,
            dashed: *order == "reverse",
            marker: if *order == "reverse" {
                Marker::Square
            } else {
                Marker::Circle
            },
            points: pts,
        });
        let _ = i;
    }
    let _ = writeln!(md, " | |");
    let _ = writeln!(
        md,
        "\nThe growth exponent is the log-log slope of time over k between the smallest and \
         largest k measured: about 1 is linear, about 2 quadratic."
    );
    // Reference slopes, anchored at the fastest series' smallest k.
    let mut guides = Vec::new();
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    if let (Some(kmin), Some(kmax)) = (
        all.iter().map(|p| p.0).reduce(f64::min),
        all.iter().map(|p| p.0).reduce(f64::max),
    ) {
        if kmax > kmin {
            let t0 = all
                .iter()
                .filter(|p| p.0 == kmin)
                .map(|p| p.1)
                .reduce(f64::min)
                .unwrap_or(1e-3);
            let r = kmax / kmin;
            guides.push(Guide {
                label: "∝ k".into(),
                from: (kmin, t0),
                to: (kmax, t0 * r),
            });
            guides.push(Guide {
                label: "∝ k²".into(),
                from: (kmin, t0),
                to: (kmax, t0 * r * r),
            });
        }
    }
    let svg = plot::line_chart(&LineChart {
        title: "Mailbox: time to take k messages by sender pid".into(),
        subtitle: "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better"
            .into(),
        x: Axis {
            label: "k children (log)",
            log: true,
            fmt: plot::si,
        },
        y: Axis {
            label: "time (log)",
            log: true,
            fmt: plot::secs,
        },
        series,
        guides,
    });
    write_svg(o, "mailbox.svg", &svg)?;
    let _ = writeln!(
        md,
        "\n![mailbox time over k, both orders, log-log](mailbox.svg)"
    );
    Ok(())
}

// ===== #1 closure =====

fn closure(md: &mut String, res: &Results<'_>, s: &Sizes, o: &Options) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Seed #1 — message versus function (a counter held by a process or by closures)\n"
    );
    let _ = writeln!(
        md,
        "\"My shocking Erlang discovery\" (R14B01): 10,000,000 increments; process 39.7 s, \
         closures 2.4 s, \"sixteen times faster\". Here n = {}. Nanoseconds per increment; the \
         figure of merit is message / closure (how much a message costs over a call).\n",
        plot::si(s.closure_n as f64)
    );
    let cid = |style: &str| {
        id(
            "closure",
            &[("n", s.closure_n.to_string()), ("style", style.into())],
        )
    };
    let cells = |imp| {
        (
            res.cell(&cid("message"), imp),
            res.cell(&cid("closure"), imp),
        )
    };
    let (om, oc) = cells(Impl::Otter);
    let (em, ec) = cells(Impl::Erlang);
    let _ = writeln!(
        md,
        "| | otter | erlang | otter vs erlang |\n|---|---|---|---|"
    );
    let _ = writeln!(
        md,
        "| message, ns/increment | {} | {} | {} |",
        om.show(ns_per_op, plot::nanos),
        em.show(ns_per_op, plot::nanos),
        ratio(
            om.median(ns_per_op),
            em.median(ns_per_op),
            false,
            "faster",
            "slower"
        )
    );
    let _ = writeln!(
        md,
        "| closure, ns/increment | {} | {} | {} |",
        oc.show(ns_per_op, plot::nanos),
        ec.show(ns_per_op, plot::nanos),
        ratio(
            oc.median(ns_per_op),
            ec.median(ns_per_op),
            false,
            "faster",
            "slower"
        )
    );
    let mc = |m: &Cell<'_>, c: &Cell<'_>| {
        m.median(ns_per_op)
            .zip(c.median(ns_per_op))
            .map(|(m, c)| m / c)
    };
    let (ro, re) = (mc(&om, &oc), mc(&em, &ec));
    let _ = writeln!(
        md,
        "| **message / closure** | {} | {} | {} |",
        ro.map_or("—".into(), |x| format!("{}×", factor(x))),
        re.map_or("—".into(), |x| format!("{}×", factor(x))),
        match (ro, re) {
            (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
            (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
            _ => "—".into(),
        }
    );
    let svg = plot::bar_chart(&BarChart {
        title: "Message vs closure: nanoseconds per increment".into(),
        subtitle: format!(
            "seed #1; n = {}; message/closure: otter {}, erlang {}; lower is better",
            plot::si(s.closure_n as f64),
            ro.map_or("—".into(), |x| format!("{}×", factor(x))),
            re.map_or("—".into(), |x| format!("{}×", factor(x)))
        ),
        y: Axis {
            label: "ns per increment",
            log: false,
            fmt: plot::nanos,
        },
        groups: vec!["message (process)".into(), "closure chain".into()],
        series: vec![
            (
                "otter".into(),
                OTTER,
                vec![om.median(ns_per_op), oc.median(ns_per_op)],
            ),
            (
                "erlang".into(),
                ERLANG,
                vec![em.median(ns_per_op), ec.median(ns_per_op)],
            ),
        ],
    });
    write_svg(o, "closure.svg", &svg)?;
    let _ = writeln!(md, "\n![per-message vs per-call cost](closure.svg)");
    Ok(())
}

// ===== memory =====

fn memory(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Memory — an idle process\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"memory\" (the cost-of-a-process question of seed #3): p = {} processes \
         blocked in receive; VmRSS delta / p. Erlang also reports its own accounting \
         (`erlang:memory(processes)`); lower is better.\n",
        plot::si(s.memory_p as f64)
    );
    let cid = id("memory", &[("p", s.memory_p.to_string())]);
    let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
    let _ = writeln!(
        md,
        "| | otter | erlang | otter vs erlang |\n|---|---|---|---|\n| RSS bytes per process | {} | {} | {} |\n| runtime's own account | — | {} | |\n| spawn time for p (until all are blocked) | {} | {} | {} |",
        co.show(bytes_per_process, bytes),
        ce.show(bytes_per_process, bytes),
        ratio(
            co.median(bytes_per_process),
            ce.median(bytes_per_process),
            false,
            "smaller",
            "larger"
        ),
        ce.show(beam_bytes_per_process, bytes),
        co.show(seconds, plot::secs),
        ce.show(seconds, plot::secs),
        ratio(
            co.median(seconds),
            ce.median(seconds),
            false,
            "faster",
            "slower"
        ),
    );
}

// ===== pingpong =====

fn pingpong(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Ping-pong — round-trip latency\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"pingpong\" (the per-hop cost of seed #4, the call layer of seed #5): r = \
         {} round trips between two processes; nanoseconds per round trip, lower is better.\n",
        plot::si(s.pingpong_r as f64)
    );
    let _ = writeln!(
        md,
        "| style | otter ns/round trip | erlang ns/round trip | otter vs erlang | note |\n|---|---|---|---|---|"
    );
    for style in ["raw", "server"] {
        let cid = id(
            "pingpong",
            &[("r", s.pingpong_r.to_string()), ("style", style.into())],
        );
        let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
        let note = style_note(&co, style);
        let _ = writeln!(
            md,
            "| {style} | {} | {} | {} | {note} |",
            co.show(ns_per_op, plot::nanos),
            ce.show(ns_per_op, plot::nanos),
            qualified(
                ratio(
                    co.median(ns_per_op),
                    ce.median(ns_per_op),
                    false,
                    "faster",
                    "slower"
                ),
                &note
            )
        );
    }
}

/// The note for a row whose otter runs used another style than asked (`style_run` in the
/// JSON: the server layer is missing, so the raw loop ran).
fn style_note(otter: &Cell<'_>, style: &str) -> String {
    match otter {
        Cell::Ok(runs) => runs
            .first()
            .and_then(|v| v["style_run"].as_str())
            .filter(|r| *r != style)
            .map(|r| format!("otter ran style={r}: no server layer yet"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}
