//! The figures of the report: a [`Metric`] says how a run's JSON line gives a figure, how it
//! is written and which way it is better (`spec.md` defines them); [`Results`] indexes the
//! runs by (case, implementation). A figure is the median over the runs that passed their
//! check; a (case, implementation) with a failed run shows `FAILED` in red instead, one never
//! run `—`, one skipped `skipped`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::format::{self, factor};
use crate::suite::{Impl, Outcome};

/// One measure of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metric {
    /// How a run's JSON line gives it: `KEY` (a number of the line), `KEY/KEY` or
    /// `KEY*X/KEY` (`seconds*1e9/ops`).
    pub(crate) field: &'static str,
    pub(crate) fmt: fn(f64) -> String,
    /// Which way it is better: `lower`, `higher`, or `neither` (shown, never compared).
    pub(crate) better: &'static str,
    /// A comparison's words when the first is better and when it is worse.
    pub(crate) words: [&'static str; 2],
    /// The one implementation that reports it: the others' cells show `—`.
    pub(crate) only: Option<Impl>,
}

impl Metric {
    /// A metric of `spec.md`: `FIELD FORMAT BETTER [BETTER-WORDS/WORSE-WORDS | only=IMPL]`.
    pub(crate) fn parse(def: &'static str) -> Result<Metric, String> {
        let mut w = def.splitn(4, ' ');
        let (Some(field), Some(fmt), Some(better)) = (w.next(), w.next(), w.next()) else {
            return Err("needs a field, a format and which way is better".into());
        };
        if !["lower", "higher", "neither"].contains(&better) {
            return Err(format!("no way of being better `{better}`"));
        }
        let fmt = format::named(fmt).ok_or(format!("no format `{fmt}`"))?;
        let (mut words, mut only, rest) = (["faster", "slower"], None, w.next().unwrap_or(""));
        match (rest.strip_prefix("only="), rest.split_once('/')) {
            (Some(imp), _) => only = super::spec::impl_named(imp),
            (_, Some((b, w))) => words = [b, w],
            _ if rest.is_empty() => {}
            _ => return Err(format!("`{rest}` is neither only=IMPL nor BETTER/WORSE")),
        }
        Ok(Metric {
            field,
            fmt,
            better,
            words,
            only,
        })
    }

    /// The metric of one run's line.
    pub(crate) fn of(&self, v: &Value) -> Option<f64> {
        let (num, den) = self.field.split_once('/').unwrap_or((self.field, ""));
        let (num, x) = num.split_once('*').unwrap_or((num, "1"));
        let den = v[den].as_f64().or(den.is_empty().then_some(1.0));
        Some(v[num].as_f64()? * x.parse::<f64>().ok()? / den?)
    }
}

/// The median of sorted values.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// A comparison of two medians of `m`, "—" without both (or one not above zero). By default
/// "**N× faster**" when `a` is better and "N× slower" when it is worse (in the metric's
/// words); `how` may say `plain` (never bold), `over` (a / b as "N×", or "**1/N**" below 1),
/// `x` (a / b as "N×"), `inv` ("1/N" of b / a), `pct` (a / b in percent), and then `vs`
/// ("(a vs b)" after it).
pub(crate) fn compare(a: Option<f64>, b: Option<f64>, m: &Metric, how: &[&str]) -> String {
    let (Some(a), Some(b)) = (a, b) else {
        return "—".into();
    };
    if a <= 0.0 || b <= 0.0 {
        return "—".into();
    }
    let (r, [better, worse]) = (a / b, m.words);
    let f = if m.better == "higher" { r } else { b / a };
    let s = match how.first().copied().unwrap_or_default() {
        "over" if r < 1.0 => format!("**1/{}**", factor(1.0 / r)),
        "over" | "x" => format!("{}×", factor(r)),
        "inv" => format!("1/{}", factor(b / a)),
        "pct" => format!("{:.0}%", 100.0 * a / b),
        _ if f < 1.0 => format!("{}× {worse}", factor(1.0 / f)),
        "plain" => format!("{}× {better}", factor(f)),
        _ => format!("**{}× {better}**", factor(f)),
    };
    match how.last() {
        Some(&"vs") => format!("{s} ({} vs {})", (m.fmt)(a), (m.fmt)(b)),
        _ => s,
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
    /// Every case asked for (`spec.rs`'s test: the report names every case).
    pub(crate) seen: RefCell<HashSet<String>>,
}

impl<'a> Results<'a> {
    /// The index of `runs`: (case id, implementation, outcome) each.
    pub(crate) fn new(runs: impl Iterator<Item = (&'a str, Impl, &'a Outcome)>) -> Results<'a> {
        let mut by: HashMap<(&str, Impl), Vec<&Outcome>> = HashMap::new();
        for (id, imp, outcome) in runs {
            by.entry((id, imp)).or_default().push(outcome);
        }
        let seen = RefCell::default();
        Results { by, seen }
    }

    /// The runs of `id` on `imp`, if it was part of the run.
    pub(crate) fn runs(&self, id: &str, imp: Impl) -> Option<Vec<&'a Outcome>> {
        self.seen.borrow_mut().insert(id.to_string());
        self.by.get(&(id, imp)).cloned()
    }

    /// `m` of every run of `id` on `imp` that passed, sorted.
    fn values(&self, id: &str, imp: Impl, m: &Metric) -> Vec<f64> {
        let mut v: Vec<f64> = Vec::new();
        for o in self.runs(id, imp).unwrap_or_default() {
            if let Outcome::Ok(line) = o {
                v.extend(m.of(line));
            }
        }
        v.sort_by(f64::total_cmp);
        v
    }

    /// The median of `m` of `id` on `imp` over the runs that passed.
    pub(crate) fn median(&self, id: &str, imp: Impl, m: &Metric) -> Option<f64> {
        median(&self.values(id, imp, m))
    }

    /// The median of `m` of `id` on `imp` written with the metric's format, then with `spread`
    /// `range` "(fastest–slowest)", with `runs` "(lowest – highest, N runs)" if two ran or
    /// more; or what stands in for it: `—` not run, `FAILED` and the reasons if a run failed,
    /// `skipped` if every run was, `n/a` if no passing run reports it.
    pub(crate) fn show(&self, id: &str, imp: Impl, m: &Metric, spread: &str) -> String {
        let Some(runs) = self.runs(id, imp) else {
            return "—".into();
        };
        let (mut failed, mut skipped) = (Vec::new(), Vec::new());
        for o in &runs {
            match o {
                Outcome::CheckFailed(_, why) | Outcome::Error(why) => failed.push(why.as_str()),
                Outcome::Skipped(why) => skipped.push(why),
                Outcome::Ok(_) => {}
            }
        }
        let passed = runs.len() - skipped.len();
        if !failed.is_empty() {
            let (mut uniq, mut seen) = (failed.clone(), HashSet::new());
            uniq.retain(|r| seen.insert(*r));
            let (why, n) = (md_escape(&uniq.join("; ")), failed.len());
            return format!(
                "<span style=\"color:red\"><b>FAILED</b>: {why} ({n} of {passed} runs)</span>"
            );
        }
        if let (Some(why), 0) = (skipped.last(), passed) {
            return format!(
                "<i title=\"{}\">skipped</i>",
                md_escape(why).replace('"', "'")
            );
        }
        let v = self.values(id, imp, m);
        let Some(mid) = median(&v) else {
            return "n/a".into();
        };
        let (f, lo, hi, n) = (m.fmt, v[0], v[v.len() - 1], v.len());
        match spread {
            "range" => format!("{} ({}–{})", f(mid), f(lo), f(hi)),
            "runs" if n > 1 => format!("{} ({} – {}, {n} runs)", f(mid), f(lo), f(hi)),
            _ => f(mid),
        }
    }
}
