//! The interpreter of `spec.md`, the report's description (its layout: `report.rs`).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use super::format::{si, size_name};
use super::table::{Metric, Results, compare};
use super::{charts, plot};
use crate::suite::{
    FAN_OUT_RECEIVERS, HTTP_CONNS, HTTP_WORK_US, Impl, LATENCY_B, LATENCY_W, OVERLOAD_BOUND, Sizes,
};

/// The report as data: metrics, prose, tables and charts, in report order.
pub(super) const SPEC: &str = include_str!("spec.md");

/// What goes wrong in rendering is said in a sentence.
pub(super) type Result<T, E = String> = std::result::Result<T, E>;

/// The rows of each `@name`, by name.
pub(super) type Named = HashMap<&'static str, Vec<String>>;

/// A variable: a name and its value.
pub(super) type Var = (String, String);

/// What a line of `spec.md` is rendered from: the runs, the run's sizes, the metrics, the
/// variables, and the line's slots (the (case, implementation) pairs its figures name).
#[derive(Clone)]
pub(super) struct Ctx<'a> {
    pub(super) res: &'a Results<'a>,
    pub(super) sizes: &'a Sizes,
    pub(super) metrics: HashMap<&'static str, Metric>,
    pub(super) vars: Vec<Var>,
    pub(super) slots: Vec<(String, Impl)>,
}

/// The implementation named `name`.
pub(super) fn impl_named(name: &str) -> Option<Impl> {
    let all = [Impl::Otter, Impl::Erlang, Impl::Tokio];
    all.into_iter().find(|i| i.name() == name)
}

/// The fields of the JSON object `o` as variables, `prefix` before their names: a string as
/// it is, anything else (a number, a list) in JSON.
pub(super) fn vars_of(prefix: &str, o: &Value) -> Vec<Var> {
    let text = |x: &Value| x.as_str().map_or(x.to_string(), str::to_string);
    let var = |(k, x): (&String, &Value)| (format!("{prefix}{k}"), text(x));
    o.as_object().into_iter().flatten().map(var).collect()
}

/// The variables of the run's sizes: each field of [`Sizes`] by its name (`echo`'s as
/// `echo_…`), and the constants and figures that the prose names.
fn size_vars(s: &Sizes) -> Vec<Var> {
    let (json, mut fib) = (serde_json::to_value(s).unwrap_or_default(), (1u64, 1u64));
    for _ in 2..s.forkjoin_n {
        fib = (fib.1, fib.0 + fib.1);
    }
    let ring = *s.ring.iter().find(|&&n| n == 1000).unwrap_or(&s.ring[0]);
    let k = s.mailbox_k.iter().find(|&&k| k == 10_000);
    let more = json!({
        "fan_out_receivers": FAN_OUT_RECEIVERS, "latency_b": LATENCY_B, "latency_w": LATENCY_W,
        "latency_tokens": LATENCY_B / 2, "http_conns": HTTP_CONNS, "http_work_us": HTTP_WORK_US,
        "forkjoin_procs": 2 * fib.1 - 1, "headline_ring": ring,
        "headline_k": k.or(s.mailbox_k.last()).unwrap_or(&1000),
        "echo_sizes": s.echo.sizes, "echo_conns": s.echo.conns, "echo_seconds": s.echo.seconds,
        "overload_bound": OVERLOAD_BOUND,
    });
    [vars_of("", &json), vars_of("", &more)].concat()
}

impl<'a> Ctx<'a> {
    /// A context of `vars`, the variables of `sizes` and the metrics of `spec.md`.
    pub(super) fn new(res: &'a Results<'a>, sizes: &'a Sizes, vars: Vec<Var>) -> Result<Self> {
        let (vars, mut metrics) = ([vars, size_vars(sizes)].concat(), HashMap::new());
        for l in SPEC.lines().filter_map(|l| l.strip_prefix("@metric ")) {
            let (name, def) = l.split_once(' ').unwrap_or((l, ""));
            let m = Metric::parse(def).map_err(|e| format!("spec.md: metric {name}: {e}"))?;
            metrics.insert(name, m);
        }
        let slots = Vec::new();
        Ok(Ctx {
            res,
            sizes,
            metrics,
            vars,
            slots,
        })
    }

    /// This context with `vars` added.
    pub(super) fn with(&self, vars: &[Var]) -> Ctx<'a> {
        let mut c = self.clone();
        c.vars.extend_from_slice(vars);
        c
    }

    /// The value of `{name}`, or of `{name:f}`/`{a*b:f}` (numbers, their product, with `f`:
    /// `si` "100k", `size` "4 KiB", `s` "s" unless 1).
    fn var(&self, expr: &str) -> Option<String> {
        let (name, f) = expr.split_once(':').unwrap_or((expr, ""));
        let get = |n: &str| Some(self.vars.iter().rev().find(|v| v.0 == n)?.1.clone());
        if f.is_empty() && !name.contains('*') {
            return get(name);
        }
        let x = name.split('*').map(|n| get(n)?.parse::<u64>().ok());
        let x: u64 = x.product::<Option<u64>>()?;
        Some(match f {
            "si" => si(x as f64),
            "size" => size_name(x),
            "s" if x == 1 => String::new(),
            "s" => "s".into(),
            "" => x.to_string(),
            _ => return None,
        })
    }

    /// `t` with each `{…}` in it filled (inner ones first): a variable, or a figure (`{$…}`).
    /// Braces that name neither are left as they are.
    pub(super) fn fill(&self, t: &str) -> Result<String> {
        let (mut out, mut rest) = (String::new(), t);
        while let Some(i) = rest.find('{') {
            out += &rest[..i];
            let mut depth = 0;
            let end = rest[i..].find(|c| {
                depth += i32::from(c == '{') - i32::from(c == '}');
                depth == 0
            });
            let Some(end) = end.map(|e| i + e) else {
                return Ok(out + &rest[i..]);
            };
            let inner = self.fill(&rest[i + 1..end])?;
            out += &match inner.starts_with('$') {
                true => self.figure(&inner)?,
                false => self.var(&inner).unwrap_or_else(|| format!("{{{inner}}}")),
            };
            rest = &rest[end + 1..];
        }
        Ok(out + rest)
    }

    /// The metric named `name`.
    pub(super) fn metric(&self, name: &str) -> Result<Metric> {
        let m = self.metrics.get(name).copied();
        m.ok_or_else(|| format!("spec.md names no metric `{name}`"))
    }

    /// The median of `m` of the line's slot `s` (`$N`), or of `$A:$B`, the ratio of two.
    fn median(&self, s: &str, m: &Metric) -> Result<Option<f64>> {
        if let Some((a, b)) = s.split_once(':') {
            let ratio = self.median(a, m)?.zip(self.median(b, m)?);
            return Ok(ratio.map(|(a, b)| a / b));
        }
        let (id, imp) = self.slot(s)?;
        Ok(self.res.median(id, *imp, m))
    }

    /// The line's slot `s` (`$N`).
    fn slot(&self, s: &str) -> Result<&(String, Impl)> {
        let i = s.strip_prefix('$').and_then(|i| i.parse::<usize>().ok());
        let slot = i.and_then(|i| self.slots.get(i));
        slot.ok_or_else(|| format!("spec.md: no slot `{s}` in {:?}", self.slots))
    }

    /// `{$A METRIC [range|runs|value|<= X|>= X]}`: slot A's median ("value": or "—"), with
    /// the runs' range ([`Results::show`]), or the verdict of the median against a bar: "met",
    /// "**missed**", "—". `{$A/$B METRIC [how]}`: the comparison of slots A and B
    /// ([`compare`]), or the verdict of A / B against a bar; empty if A is B or the metric is
    /// never compared. An operand `$A:$B` is the ratio of two medians.
    fn figure(&self, expr: &str) -> Result<String> {
        let w: Vec<&str> = expr.split(' ').collect();
        let [slots, m, how @ ..] = &w[..] else {
            return Err(format!("spec.md: {{{expr}}} needs slots and a metric"));
        };
        let m = self.metric(m)?;
        let verdict = |x: Option<f64>| {
            let bar: f64 = how.get(1)?.parse().ok()?;
            let met = |x: f64| (how[0] == "<=" && x <= bar) || (how[0] == ">=" && x >= bar);
            let v = x.map_or("—", |x| if met(x) { "met" } else { "**missed**" });
            Some(v.to_string())
        };
        let Some((a, b)) = slots.split_once('/') else {
            let (x, (id, imp)) = (self.median(slots, &m)?, self.slot(slots)?);
            let spread = how.first().copied().unwrap_or_default();
            if m.only.is_some_and(|o| o != *imp) {
                return Ok("—".into());
            } else if spread == "value" {
                return Ok(x.map_or("—".into(), m.fmt));
            } else if let Some(v) = verdict(x) {
                return Ok(v);
            }
            return Ok(self.res.show(id, *imp, &m, spread));
        };
        if (!a.contains(':') && self.slot(a)? == self.slot(b)?) || m.better == "neither" {
            return Ok(String::new());
        }
        let (a, b) = (self.median(a, &m)?, self.median(b, &m)?);
        let v = verdict(a.zip(b).map(|(a, b)| a / b));
        Ok(v.unwrap_or_else(|| compare(a, b, &m, how)))
    }

    /// The slots of `@slots` (`CASE@IMPL; …`, a `CASE` alone on otter and on erlang).
    fn slots(&self, spec: &str) -> Result<Vec<(String, Impl)>> {
        let mut v = Vec::new();
        for s in self.fill(spec)?.split(';').map(str::trim) {
            let Some((case, imp)) = s.rsplit_once('@') else {
                v.extend([Impl::Otter, Impl::Erlang].map(|i| (s.to_string(), i)));
                continue;
            };
            let i = impl_named(imp).ok_or_else(|| format!("spec.md: no impl {imp}"))?;
            v.push((case.to_string(), i));
        }
        Ok(v)
    }

    /// Whether `@if cond` holds: `ran` (a slot ran), `X == Y` or `X != Y` (once filled), or
    /// `X` (neither empty nor "—" once filled).
    pub(super) fn holds(&self, cond: &str) -> Result<bool> {
        let ran = |s: &(String, Impl)| self.res.runs(&s.0, s.1).is_some();
        Ok(match (cond.split_once(" == "), cond.split_once(" != ")) {
            _ if cond == "ran" => self.slots.iter().any(ran),
            (Some((a, b)), _) => self.fill(a)? == self.fill(b)?,
            (_, Some((a, b))) => self.fill(a)? != self.fill(b)?,
            _ => !["", "—"].contains(&self.fill(cond)?.as_str()),
        })
    }

    /// The rows of a line's `@for`s, each a product of its clauses (left outermost): `x=value`,
    /// `x in a, b`, `x in NAME` (a list of the run's sizes), `x:y in a:b, c:d`; `{x#}` is the
    /// item's index.
    fn rows(&self, fors: &[&str]) -> Result<Vec<Vec<Var>>> {
        let mut all = Vec::new();
        for f in if fors.is_empty() { &[""][..] } else { fors } {
            let mut rows: Vec<Vec<Var>> = vec![Vec::new()];
            for clause in f.split(';').map(str::trim).filter(|c| !c.is_empty()) {
                let (names, items) = match clause.split_once(" in ") {
                    Some((n, l)) => (n, self.items(l)),
                    None => {
                        let (n, v) = clause.split_once('=').ok_or(format!("spec.md: {clause}"))?;
                        (n, vec![vec![v.to_string()]])
                    }
                };
                let mut next = Vec::new();
                for row in rows {
                    for (i, item) in items.iter().enumerate() {
                        let mut r = row.clone();
                        for (n, v) in names.split(':').map(str::trim).zip(item) {
                            r.push((n.to_string(), self.with(&row).fill(v)?));
                            r.push((format!("{n}#"), i.to_string()));
                        }
                        next.push(r);
                    }
                }
                rows = next;
            }
            all.extend(rows);
        }
        Ok(all)
    }

    /// The items of `@for x in LIST`, each its values: a list of the run's sizes by its name
    /// (an item of a list of pairs is two values), or `a, b` (`a:b, c:d`).
    fn items(&self, list: &str) -> Vec<Vec<String>> {
        let json = self.var(list.trim()).unwrap_or_default();
        let Ok(Value::Array(json)) = serde_json::from_str(&json) else {
            let item = |i: &str| i.split(':').map(|v| v.trim().to_string()).collect();
            return list.split(',').map(item).collect();
        };
        let item = |x: &Value| match x {
            Value::Array(a) => a.iter().map(Value::to_string).collect(),
            x => vec![x.to_string()],
        };
        json.iter().map(item).collect()
    }

    /// REPORT.md, `spec.md` rendered, the SVGs written into `out`; and the rows of each `@name`.
    pub(super) fn render(&self, out: &Path) -> Result<(String, Named)> {
        let (mut md, mut me, mut charts) = (String::new(), self.clone(), Vec::new());
        let mut named = Named::new();
        for (line, mods) in blocks() {
            let (word, arg) = line.split_once(' ').unwrap_or((line, ""));
            let alone = word.starts_with('@') && !["@chart", "@bar", "@point"].contains(&word);
            match word {
                _ if !alone => {}
                "@ring_grid" => md += &charts::ring_grid(&me)?,
                "@guides" => {
                    let last = charts.last_mut().ok_or("spec.md: no @chart")?;
                    me.vars.push(("growth".into(), charts::guides(last)));
                }
                "@svg" => {
                    let (file, alt) = arg.split_once(' ').unwrap_or((arg, ""));
                    let path = out.join(file);
                    let write = |svg| std::fs::write(&path, svg).map_err(|e| e.to_string());
                    let written = plot::svg(&std::mem::take(&mut charts)).and_then(write);
                    written.map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    md += &format!("![{alt}]({file})\n");
                }
                _ => return Err(format!("spec.md: unknown line {line}")),
            }
            let of = |k| mods.iter().filter(move |m| m.0 == k).map(|m| m.1);
            let fors: Vec<&str> = of("@for").collect();
            for row in if alone { Vec::new() } else { me.rows(&fors)? } {
                let mut c = me.with(&row);
                c.slots = c.slots(of("@slots").next().unwrap_or("{case}"))?;
                if let Some(cond) = of("@if").next()
                    && !c.holds(cond)?
                {
                    continue;
                }
                let text = c.fill(&line.replace("\\n", "\n"))?;
                match text.split_once(' ') {
                    Some(("@chart", spec)) => charts.push(charts::chart(spec)?),
                    Some((_, row)) if word.starts_with('@') => {
                        let last = charts.last_mut().ok_or("spec.md: a row before a @chart")?;
                        charts::add(&c, last, row)?;
                    }
                    _ => {
                        if let Some(name) = of("@name").next() {
                            named.entry(name).or_default().push(text.clone());
                        }
                        md.extend([text.as_str(), "\n"]);
                    }
                }
            }
        }
        Ok((md, named))
    }
}

/// `spec.md`'s lines but comments and metrics, each with the `@for`, `@slots`, `@if` and
/// `@name` lines under it.
fn blocks() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut v: Vec<(&str, Vec<_>)> = Vec::new();
    let kept = |l: &&str| !l.starts_with("//") && !l.starts_with("@metric ");
    for l in SPEC.lines().filter(kept) {
        match (l.split_once(' '), v.last_mut()) {
            (Some(m @ ("@for" | "@slots" | "@if" | "@name", _)), Some(last)) => last.1.push(m),
            _ => v.push((l, Vec::new())),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Case, Options, Outcome, cases};

    /// The sizes of a mode.
    fn sizes(quick: bool, full: bool) -> Sizes {
        let o = Options::default();
        Sizes::for_options(&Options { quick, full, ..o })
    }

    /// In every mode, spec.md names every case of the suite, and renders.
    #[test]
    fn the_spec_names_every_case() {
        for (quick, full) in [(true, false), (false, false), (false, true)] {
            let (sizes, skip) = (sizes(quick, full), Outcome::Skipped("test".into()));
            let cases = cases(&sizes);
            let skip = &skip;
            let runs = cases
                .iter()
                .flat_map(|c| c.impls.iter().map(move |&i| (c, i)));
            let res = Results::new(runs.map(|(c, i)| (c.id.as_str(), i, skip)));
            let out = std::env::temp_dir().join(format!("otter-bench-spec-{}", std::process::id()));
            std::fs::create_dir_all(&out).unwrap();
            let c = Ctx::new(&res, &sizes, Vec::new()).unwrap();
            assert!(c.render(&out).unwrap().0.contains("## HTTP"));
            let seen = res.seen.borrow();
            let unnamed = |c: &&Case| !seen.contains(&c.id);
            let missed: Vec<_> = cases.iter().filter(unnamed).map(|c| &c.id).collect();
            assert!(missed.is_empty(), "spec.md names no slot of {missed:?}");
            let _ = std::fs::remove_dir_all(&out);
        }
    }

    /// A figure or a metric that spec.md gets wrong is an error that names it.
    #[test]
    fn an_unknown_metric_is_named() {
        let (sizes, res) = (sizes(true, false), Results::new(std::iter::empty()));
        let c = Ctx::new(&res, &sizes, Vec::new()).unwrap();
        let (e, err) = (c.fill("{$0 nope}").unwrap_err(), |d| {
            Metric::parse(d).unwrap_err()
        });
        assert_eq!(e, "spec.md names no metric `nope`");
        assert!(c.fill("{$0 rate}").unwrap_err().contains("no slot `$0`"));
        assert!(err("seconds secs best").contains("`best`"));
        assert!(err("seconds sec lower").contains("`sec`"));
    }
}
