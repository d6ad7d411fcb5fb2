//! The report's one table: what a workload's table is made of, as data, and the one renderer
//! every section uses.
//!
//! A [`Metric`] says how a run's JSON line gives a figure, how it is written and which way it
//! is better. A [`Table`] has key columns and rows; each row names its *slots*, the (case,
//! implementation) pairs its cells come from, and each [`Col`] is either a figure (a slot's
//! median of a metric, with or without the runs' range) or a comparison of two slots. A
//! figure is the median over the runs that passed their check; a (case, implementation) with
//! a failed run shows `FAILED` in red instead, one never run `—`, one skipped `skipped`.

use std::collections::HashMap;

use serde_json::Value;

use crate::suite::{Case, Impl, Outcome, Record};

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    Lower,
    Higher,
    /// Neither: shown, never compared.
    Neither,
}

/// How a run's JSON line gives a metric.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    /// A number of the line.
    Key(&'static str),
    /// `ops / seconds`.
    Rate,
    /// `seconds · 10⁹ / ops`.
    NsPerOp,
}

/// One measure of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metric {
    pub(crate) field: Field,
    pub(crate) fmt: fn(f64) -> String,
    pub(crate) better: Better,
    /// A comparison's words when the first is better and when it is worse.
    pub(crate) words: [&'static str; 2],
    /// The one implementation that reports it: the others' cells show `—`.
    pub(crate) only: Option<Impl>,
}

impl Metric {
    /// `field`, written with `fmt`, compared as "faster" or "slower".
    pub(crate) const fn new(field: Field, fmt: fn(f64) -> String, better: Better) -> Metric {
        let words = ["faster", "slower"];
        Metric {
            field,
            fmt,
            better,
            words,
            only: None,
        }
    }

    /// The number `key` of the line, written with `fmt`.
    pub(crate) const fn key(key: &'static str, fmt: fn(f64) -> String, better: Better) -> Metric {
        Metric::new(Field::Key(key), fmt, better)
    }

    /// The same metric compared in other words ("smaller", "larger").
    pub(crate) const fn words(self, better: &'static str, worse: &'static str) -> Metric {
        Metric {
            words: [better, worse],
            ..self
        }
    }

    /// The same metric, reported by `imp` alone.
    pub(crate) const fn only(self, imp: Impl) -> Metric {
        Metric {
            only: Some(imp),
            ..self
        }
    }

    /// The metric of one run's line.
    pub(crate) fn of(&self, v: &Value) -> Option<f64> {
        match self.field {
            Field::Key(k) => v[k].as_f64(),
            Field::Rate => Some(v["ops"].as_f64()? / v["seconds"].as_f64()?),
            Field::NsPerOp => Some(v["seconds"].as_f64()? * 1e9 / v["ops"].as_f64()?),
        }
    }
}

/// The runs of one (case, implementation).
#[derive(Debug, Clone)]
pub(crate) enum Cell<'a> {
    /// Not part of this suite run (e.g. the 100M ring cell without `--full`).
    NotRun,
    /// Every run skipped: why.
    Skipped(String),
    /// At least one run failed: the reasons, and how many ran.
    Failed(Vec<String>, usize),
    /// The JSON lines of the passing runs.
    Ok(Vec<&'a Value>),
}

impl Cell<'_> {
    /// `m` of every passing run, sorted.
    pub(crate) fn values(&self, m: &Metric) -> Vec<f64> {
        let Cell::Ok(runs) = self else {
            return Vec::new();
        };
        let mut v: Vec<f64> = runs.iter().filter_map(|r| m.of(r)).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median of `m` over the passing runs.
    pub(crate) fn median(&self, m: &Metric) -> Option<f64> {
        median(&self.values(m))
    }

    /// The median written with the metric's format, or what stands in for it; with
    /// `spread`, the runs' range after it.
    pub(crate) fn show(&self, m: &Metric, spread: Spread) -> String {
        match self {
            Cell::NotRun => "—".into(),
            Cell::Skipped(why) => {
                format!(
                    "<i title=\"{}\">skipped</i>",
                    md_escape(why).replace('"', "'")
                )
            }
            Cell::Failed(reasons, total) => {
                let mut uniq: Vec<&str> = Vec::new();
                for r in reasons {
                    if !uniq.contains(&r.as_str()) {
                        uniq.push(r);
                    }
                }
                format!(
                    "<span style=\"color:red\"><b>FAILED</b>: {} ({} of {total} runs)</span>",
                    md_escape(&uniq.join("; ")),
                    reasons.len()
                )
            }
            Cell::Ok(_) => {
                let v = self.values(m);
                let Some(mid) = median(&v) else {
                    return "n/a".into();
                };
                let (f, lo, hi, n) = (m.fmt, v[0], v[v.len() - 1], v.len());
                match spread {
                    Spread::Range => format!("{} ({}–{})", f(mid), f(lo), f(hi)),
                    Spread::Runs if n > 1 => {
                        format!("{} ({} – {}, {n} runs)", f(mid), f(lo), f(hi))
                    }
                    _ => f(mid),
                }
            }
        }
    }
}

/// The median of sorted values.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// What a figure shows of the runs besides their median.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spread {
    None,
    /// "(fastest–slowest)".
    Range,
    /// "(lowest – highest, N runs)", with two runs or more.
    Runs,
}

/// How a comparison of two figures is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vs {
    /// "**N× faster**" when the first is better, "N× slower" when it is worse.
    Bold,
    /// The same, never bold (neither is otter).
    Plain,
    /// first / second: "N×", or "**1/N**" when the first is lower.
    Over,
}

/// A column of a table.
#[derive(Debug, Clone)]
pub(crate) enum Col {
    /// The figure of a row's slot; the metric is the column's or else the row's.
    Fig(String, usize, Option<Metric>, Spread),
    /// A comparison of two slots' medians.
    Vs(String, usize, usize, Option<Metric>, Vs),
}

/// A figure column (`m`: a metric, or `None` for the row's).
pub(crate) fn fig(head: impl Into<String>, slot: usize, m: impl Into<Option<Metric>>) -> Col {
    Col::Fig(head.into(), slot, m.into(), Spread::None)
}

/// A comparison column (`m`: a metric, or `None` for the row's).
pub(crate) fn vs(
    head: impl Into<String>,
    a: usize,
    b: usize,
    m: impl Into<Option<Metric>>,
    how: Vs,
) -> Col {
    Col::Vs(head.into(), a, b, m.into(), how)
}

/// "`who` `m`", "erlang `m`", "otter vs erlang" of slots 0 (otter) and 1 (erlang).
pub(crate) fn trio(m: Metric, head: &str) -> Vec<Col> {
    vec![
        fig(format!("otter {head}"), 0, Some(m)),
        fig(format!("erlang {head}"), 1, Some(m)),
        vs("otter vs erlang", 0, 1, Some(m), Vs::Bold),
    ]
}

/// A row: its key cells, its slots (`None`: no cell), and its metric, if the columns have
/// none. A row without slots is literal: its keys are all its cells.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) keys: Vec<String>,
    pub(crate) slots: Vec<Option<(String, Impl)>>,
    pub(crate) metric: Option<Metric>,
}

/// A row of `case` on otter (slot 0) and erlang (slot 1).
pub(crate) fn row(keys: &[&dyn ToString], case: &str, metric: impl Into<Option<Metric>>) -> Row {
    let slots = vec![
        Some((case.to_string(), Impl::Otter)),
        Some((case.to_string(), Impl::Erlang)),
    ];
    Row {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        slots,
        metric: metric.into(),
    }
}

/// A table: key column heads, columns, rows.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) keys: Vec<&'static str>,
    pub(crate) cols: Vec<Col>,
    pub(crate) rows: Vec<Row>,
}

/// A table of `keys`, `cols` and `rows`.
pub(crate) fn table(keys: &[&'static str], cols: Vec<Col>, rows: Vec<Row>) -> Table {
    Table {
        keys: keys.to_vec(),
        cols,
        rows,
    }
}

impl Table {
    /// Every row's cells, keys first.
    pub(crate) fn cells(&self, res: &Results<'_>) -> Vec<Vec<String>> {
        let cell = |r: &Row, s: usize| {
            r.slots
                .get(s)
                .cloned()
                .flatten()
                .map(|(id, imp)| (res.cell(&id, imp), imp))
        };
        let rows = self.rows.iter().map(|r| {
            if r.slots.is_empty() {
                return r.keys.clone();
            }
            let cols = self.cols.iter().map(|c| match c {
                Col::Fig(_, s, m, spread) => match (cell(r, *s), m.or(r.metric)) {
                    (Some((_, imp)), Some(m)) if m.only.is_some_and(|o| o != imp) => "—".into(),
                    (Some((c, _)), Some(m)) => c.show(&m, *spread),
                    _ => String::new(),
                },
                Col::Vs(_, a, b, m, how) => match (cell(r, *a), cell(r, *b), m.or(r.metric)) {
                    (Some((a, _)), Some((b, _)), Some(m)) if m.better != Better::Neither => {
                        compare(a.median(&m), b.median(&m), &m, *how)
                    }
                    _ => String::new(),
                },
            });
            r.keys.iter().cloned().chain(cols).collect()
        });
        rows.collect()
    }

    /// The table as Markdown.
    pub(crate) fn markdown(&self, res: &Results<'_>) -> String {
        let heads = self.cols.iter().map(|c| match c {
            Col::Fig(h, ..) | Col::Vs(h, ..) => h.as_str(),
        });
        let heads: Vec<&str> = self.keys.iter().copied().chain(heads).collect();
        let mut md = format!("{}\n|{}\n", line(&heads), "---|".repeat(heads.len()));
        for r in self.cells(res) {
            md += &line(&r);
            md.push('\n');
        }
        md
    }
}

/// One Markdown table line.
pub(crate) fn line<S: AsRef<str>>(cells: &[S]) -> String {
    cells
        .iter()
        .fold("|".to_string(), |l, c| l + " " + c.as_ref() + " |")
}

/// A comparison of two medians of `m` (see [`Vs`]); "—" without both.
pub(crate) fn compare(a: Option<f64>, b: Option<f64>, m: &Metric, how: Vs) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "—".into();
    };
    if a <= 0.0 || b <= 0.0 {
        return "—".into();
    }
    if how == Vs::Over {
        let f = a / b;
        return if f < 1.0 {
            format!("**1/{}**", factor(1.0 / f))
        } else {
            format!("{}×", factor(f))
        };
    }
    let f = if m.better == Better::Higher {
        a / b
    } else {
        b / a
    };
    let [better, worse] = m.words;
    match (f >= 1.0, how) {
        (true, Vs::Bold) => format!("**{}× {better}**", factor(f)),
        (true, _) => format!("{}× {better}", factor(f)),
        (false, _) => format!("{}× {worse}", factor(1.0 / f)),
    }
}

/// A factor: three significant digits, at least two decimals below 10.
pub(crate) fn factor(x: f64) -> String {
    match x {
        _ if x >= 100.0 => format!("{x:.0}"),
        _ if x >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// `s` safe in a Markdown table cell.
pub(crate) fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

/// Index of the runs by (case id, implementation).
pub(crate) struct Results<'a> {
    by: HashMap<(&'a str, Impl), Vec<&'a Outcome>>,
}

impl<'a> Results<'a> {
    pub(crate) fn new(cases: &'a [Case], records: &'a [Record]) -> Results<'a> {
        let mut by: HashMap<(&str, Impl), Vec<&Outcome>> = HashMap::new();
        for r in records {
            by.entry((cases[r.case].id.as_str(), r.imp))
                .or_default()
                .push(&r.outcome);
        }
        Results { by }
    }

    /// The runs of `id` on `imp`.
    pub(crate) fn cell(&self, id: &str, imp: Impl) -> Cell<'a> {
        let Some(runs) = self.by.get(&(id, imp)) else {
            return Cell::NotRun;
        };
        let (mut oks, mut reasons, mut skipped) = (Vec::new(), Vec::new(), None);
        for o in runs {
            match o {
                Outcome::Ok(v) => oks.push(v),
                Outcome::CheckFailed(_, why) | Outcome::Error(why) => reasons.push(why.clone()),
                Outcome::Skipped(why) => skipped = Some(why.clone()),
            }
        }
        if !reasons.is_empty() {
            let total = oks.len() + reasons.len();
            Cell::Failed(reasons, total)
        } else if !oks.is_empty() {
            Cell::Ok(oks)
        } else {
            Cell::Skipped(skipped.unwrap_or_default())
        }
    }

    /// Whether `id` was part of the run on `imp`.
    pub(crate) fn runs(&self, id: &str, imp: Impl) -> bool {
        self.by.contains_key(&(id, imp))
    }

    /// The median of `m` of `id` on `imp`.
    pub(crate) fn median(&self, id: &str, imp: Impl, m: &Metric) -> Option<f64> {
        self.cell(id, imp).median(m)
    }
}
