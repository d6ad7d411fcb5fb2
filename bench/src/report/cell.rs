//! The cells of the report's tables: the runs of one (case, implementation), their
//! medians, how a figure is formatted, and "otter vs erlang" ratios.

use std::collections::HashMap;

use serde_json::Value;

use super::format;
use crate::suite::{Case, Impl, Outcome, Record};

/// The runs of one (case, implementation).
#[derive(Debug, Clone)]
pub(super) enum Cell<'a> {
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
    pub(super) fn median(&self, f: impl Fn(&Value) -> Option<f64>) -> Option<f64> {
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
    pub(super) fn show(
        &self,
        f: impl Fn(&Value) -> Option<f64>,
        fmt: impl Fn(f64) -> String,
    ) -> String {
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

pub(super) fn failed_span(reasons: &[String], bad: usize, total: usize) -> String {
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

pub(super) fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

pub(super) fn seconds(v: &Value) -> Option<f64> {
    v["seconds"].as_f64()
}
pub(super) fn ops_per_s(v: &Value) -> Option<f64> {
    Some(v["ops"].as_f64()? / v["seconds"].as_f64()?)
}
pub(super) fn ns_per_op(v: &Value) -> Option<f64> {
    Some(v["seconds"].as_f64()? * 1e9 / v["ops"].as_f64()?)
}
pub(super) fn bytes_per_process(v: &Value) -> Option<f64> {
    v["bytes_per_process"].as_f64()
}
pub(super) fn beam_bytes_per_process(v: &Value) -> Option<f64> {
    v["beam_bytes_per_process"].as_f64()
}

pub(super) fn rate(x: f64) -> String {
    format!("{}/s", format::si(x))
}
pub(super) fn bytes(x: f64) -> String {
    if x.abs() >= 1024.0 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{x:.0} B")
    }
}
pub(super) fn factor(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// "otter vs erlang" for two medians. `higher_better`: rates (true) or times (false).
pub(super) fn ratio(
    o: Option<f64>,
    e: Option<f64>,
    higher_better: bool,
    better: &str,
    worse: &str,
) -> String {
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

/// "otter vs erlang" of two cells' medians of `f`: "N× faster" or "N× slower".
/// `higher_better`: rates (true) or times (false).
pub(super) fn faster_or_slower(
    otter: &Cell<'_>,
    erlang: &Cell<'_>,
    f: impl Fn(&Value) -> Option<f64> + Copy,
    higher_better: bool,
) -> String {
    ratio(
        otter.median(f),
        erlang.median(f),
        higher_better,
        "faster",
        "slower",
    )
}

/// "server vs raw" of one implementation: how its server layer compares with its own raw
/// loop, plain (no bold: neither is "otter").
pub(super) fn server_vs_raw(
    server: &Cell<'_>,
    raw: &Cell<'_>,
    f: fn(&Value) -> Option<f64>,
    higher_better: bool,
) -> String {
    ratio(
        server.median(f),
        raw.median(f),
        higher_better,
        "faster",
        "slower",
    )
    .replace("**", "")
}

/// Index of the runs by (case id, implementation).
pub(super) struct Results<'a> {
    by: HashMap<(&'a str, Impl), Vec<&'a Outcome>>,
}

impl<'a> Results<'a> {
    pub(super) fn new(cases: &'a [Case], records: &'a [Record]) -> Results<'a> {
        let mut by: HashMap<(&str, Impl), Vec<&Outcome>> = HashMap::new();
        for r in records {
            by.entry((cases[r.case].id.as_str(), r.imp))
                .or_default()
                .push(&r.outcome);
        }
        Results { by }
    }

    pub(super) fn cell(&self, id: &str, imp: Impl) -> Cell<'a> {
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
