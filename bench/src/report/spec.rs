//! The interpreter of `spec.md`, the report's description (its layout: `report.rs`).

use std::collections::HashMap;
use std::path::Path;

use super::format::{si_u, size_name};
use super::table::{Better, Metric, Results, Spread, compare};
use super::{charts, plot};
use crate::suite::{
    FAN_OUT_RECEIVERS, HTTP_CONNS, HTTP_WORK_US, Impl, LATENCY_B, LATENCY_W, Sizes,
};

/// The report as data: metrics, prose, tables and charts, in report order.
pub(super) const SPEC: &str = include_str!("spec.md");

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
    [Impl::Otter, Impl::Erlang, Impl::Tokio]
        .into_iter()
        .find(|i| i.name() == name)
}

/// The variables of the run's sizes.
fn size_vars(s: &Sizes) -> Vec<Var> {
    let fib = (2..s.forkjoin_n)
        .fold((1u64, 1u64), |(a, b), _| (b, a + b))
        .1;
    let ring = if s.ring.contains(&1000) {
        1000
    } else {
        s.ring[0]
    };
    let k = s.mailbox_k.last().unwrap_or(&1000);
    let k = if s.mailbox_k.contains(&10_000) {
        10_000
    } else {
        *k
    };
    [
        ("spawn_n", s.spawn_n),
        ("counting_msgs", s.counting_msgs),
        ("fan_out_receivers", FAN_OUT_RECEIVERS),
        ("match_max_k", s.mailbox_match_max_k),
        ("closure_n", s.closure_n),
        ("memory_p", s.memory_p),
        ("pingpong_r", s.pingpong_r),
        ("forkjoin_n", s.forkjoin_n),
        ("forkjoin_procs", 2 * fib - 1),
        ("latency_r", s.latency_r),
        ("latency_b", LATENCY_B),
        ("latency_tokens", LATENCY_B / 2),
        ("latency_w", LATENCY_W),
        ("echo_seconds", s.echo.seconds),
        ("http_conns", HTTP_CONNS),
        ("http_work_us", HTTP_WORK_US),
        ("http_seconds", s.http_seconds),
        ("headline_ring", ring),
        ("headline_k", k),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into()
}

/// A list of the run's sizes that `@for x in NAME` walks, each item its values.
fn list(s: &Sizes, name: &str) -> Option<Vec<Vec<String>>> {
    let v = match name {
        "ring" => &s.ring,
        "spawn_c" => &s.spawn_c,
        "senders" => &s.senders,
        "mailbox_k" => &s.mailbox_k,
        "echo_sizes" => &s.echo.sizes,
        "echo_conns" => &s.echo.conns,
        "dist" => {
            return Some(
                s.dist
                    .iter()
                    .map(|(a, b)| vec![a.to_string(), b.to_string()])
                    .collect(),
            );
        }
        _ => return None,
    };
    Some(v.iter().map(|x| vec![x.to_string()]).collect())
}

impl<'a> Ctx<'a> {
    /// A context of `vars`, the variables of `sizes` and the metrics of `spec.md`.
    pub(super) fn new(
        res: &'a Results<'a>,
        sizes: &'a Sizes,
        vars: Vec<Var>,
    ) -> Result<Self, String> {
        let vars = [vars, size_vars(sizes)].concat();
        let mut metrics = HashMap::new();
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
        let get = |n: &str| {
            self.vars
                .iter()
                .rev()
                .find(|v| v.0 == n)
                .map(|v| v.1.clone())
        };
        if f.is_empty() && !name.contains('*') {
            return get(name);
        }
        let x: u64 = name
            .split('*')
            .map(|n| get(n)?.parse::<u64>().ok())
            .product::<Option<u64>>()?;
        Some(match f {
            "si" => si_u(x),
            "size" => size_name(x),
            "s" if x == 1 => String::new(),
            "s" => "s".into(),
            "" => x.to_string(),
            _ => return None,
        })
    }

    /// `t` with each `{…}` in it filled (inner ones first): a variable, or a figure (`{$…}`).
    /// Braces that name neither are left as they are.
    pub(super) fn fill(&self, t: &str) -> Result<String, String> {
        let (mut out, mut rest) = (String::new(), t);
        while let Some(i) = rest.find('{') {
            out += &rest[..i];
            let mut depth = 0;
            let end = rest[i..].find(|c| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
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
    pub(super) fn metric(&self, name: &str) -> Result<Metric, String> {
        let m = self.metrics.get(name);
        m.copied()
            .ok_or_else(|| format!("spec.md names no metric `{name}`"))
    }

    /// Slot `s` (`$N`) of the line.
    fn slot(&self, s: &str) -> Result<&(String, Impl), String> {
        let i = s.strip_prefix('$').and_then(|i| i.parse::<usize>().ok());
        let slot = i.and_then(|i| self.slots.get(i));
        slot.ok_or_else(|| format!("spec.md: no slot `{s}` in {:?}", self.slots))
    }

    /// `{$A METRIC [range|runs|value|<= X|>= X]}`: slot A's median ("value": or "—"), with
    /// the runs' range ([`Spread`]), or the verdict of the median against a bar: "met",
    /// "**missed**", "—". `{$A/$B METRIC [how]}`: the comparison of slots A and B
    /// ([`compare`]), or the verdict of A / B against a bar; empty if A is B or the metric is
    /// never compared. An operand `$A:$B` is the ratio of two medians.
    fn figure(&self, expr: &str) -> Result<String, String> {
        let w: Vec<&str> = expr.split(' ').collect();
        let (Some(slots), Some(m)) = (w.first(), w.get(1)) else {
            return Err(format!("spec.md: {{{expr}}} needs slots and a metric"));
        };
        let (m, how) = (self.metric(m)?, &w[2..]);
        let median = |s: &(String, Impl)| self.res.median(&s.0, s.1, &m);
        let verdict = |x: Option<f64>| {
            let bar: f64 = how.get(1)?.parse().ok()?;
            let met = |x: f64| (how[0] == "<=" && x <= bar) || (how[0] == ">=" && x >= bar);
            Some(
                x.map_or("—", |x| if met(x) { "met" } else { "**missed**" })
                    .into(),
            )
        };
        let Some((a, b)) = slots.split_once('/') else {
            let a = self.slot(slots)?;
            let spread = match how.first() {
                _ if m.only.is_some_and(|o| o != a.1) => return Ok("—".into()),
                Some(&"value") => return Ok(median(a).map_or("—".into(), m.fmt)),
                Some(&"range") => Spread::Range,
                Some(&"runs") => Spread::Runs,
                _ => match verdict(median(a)) {
                    Some(v) => return Ok(v),
                    None => Spread::None,
                },
            };
            return Ok(self.res.cell(&a.0, a.1).show(&m, spread));
        };
        // An operand: a slot's median, or `$A:$B` the ratio of two.
        let value = |o: &str| {
            Ok::<_, String>(match o.split_once(':') {
                Some((x, y)) => median(self.slot(x)?)
                    .zip(median(self.slot(y)?))
                    .map(|(x, y)| x / y),
                None => median(self.slot(o)?),
            })
        };
        if (!a.contains(':') && self.slot(a)? == self.slot(b)?) || m.better == Better::Neither {
            return Ok(String::new());
        }
        let (a, b) = (value(a)?, value(b)?);
        Ok(verdict(a.zip(b).map(|(a, b)| a / b)).unwrap_or_else(|| compare(a, b, &m, how)))
    }

    /// The slots of `@slots` (`CASE@IMPL; …`, a `CASE` alone on otter and on erlang).
    fn slots(&self, spec: &str) -> Result<Vec<(String, Impl)>, String> {
        let mut v = Vec::new();
        for s in self.fill(spec)?.split(';').map(str::trim) {
            match s.rsplit_once('@') {
                Some((case, imp)) => {
                    let i = impl_named(imp).ok_or_else(|| format!("spec.md: no impl {imp}"))?;
                    v.push((case.to_string(), i));
                }
                None => v.extend([Impl::Otter, Impl::Erlang].map(|i| (s.to_string(), i))),
            }
        }
        Ok(v)
    }

    /// Whether `@if cond` holds: `ran` (a slot ran), `$A METRIC` (slot A has a median),
    /// `X == Y` (equal once filled), or `X` (not empty once filled).
    pub(super) fn holds(&self, cond: &str) -> Result<bool, String> {
        if cond == "ran" {
            return Ok(self.slots.iter().any(|s| self.res.runs(&s.0, s.1)));
        }
        if let Some((a, m)) = cond.split_once(' ').filter(|_| cond.starts_with('$')) {
            return Ok(self
                .res
                .median(&self.slot(a)?.0, self.slot(a)?.1, &self.metric(m)?)
                .is_some());
        }
        Ok(match cond.split_once(" == ") {
            Some((a, b)) => self.fill(a)? == self.fill(b)?,
            None => !self.fill(cond)?.is_empty(),
        })
    }

    /// The rows of a line's `@for`s, each a product of its clauses (left outermost): `x=value`,
    /// `x in a, b` or `x in LIST` (a list of the run's sizes), `x:y in a:b, c:d`; `{x#}` is
    /// the item's index.
    fn rows(&self, fors: &[&str]) -> Result<Vec<Vec<Var>>, String> {
        if fors.is_empty() {
            return Ok(vec![Vec::new()]);
        }
        let mut all = Vec::new();
        for f in fors {
            let mut rows: Vec<Vec<Var>> = vec![Vec::new()];
            for clause in f.split(';').map(str::trim) {
                let (names, items) = match clause.split_once(" in ") {
                    Some((n, l)) => (
                        n,
                        list(self.sizes, l.trim()).unwrap_or_else(|| {
                            l.split(',')
                                .map(|i| i.split(':').map(|v| v.trim().to_string()).collect())
                                .collect()
                        }),
                    ),
                    None => {
                        let (n, v) = clause
                            .split_once('=')
                            .ok_or(format!("spec.md: @for {clause}"))?;
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

    /// REPORT.md, `spec.md` rendered, the SVGs written into `out`; `named` gets the rows of
    /// each `@name`.
    pub(super) fn render(
        &self,
        out: &Path,
        named: &mut HashMap<&str, Vec<String>>,
    ) -> Result<String, String> {
        let (mut md, mut me, mut charts) = (String::new(), self.clone(), Vec::new());
        let spec = SPEC
            .lines()
            .filter(|l| !l.starts_with("//") && !l.starts_with("@metric "));
        let mut lines = spec.peekable();
        while let Some(line) = lines.next() {
            match line.split_once(' ').unwrap_or((line, "")) {
                ("@ring_grid", _) => md += &charts::ring_grid(&me)?,
                ("@guides", _) => {
                    let last = charts
                        .last_mut()
                        .ok_or("spec.md: @guides before any @chart")?;
                    me.vars.push(("growth".into(), charts::guides(last)));
                }
                ("@svg", svg) => {
                    let (file, alt) = svg.split_once(' ').unwrap_or((svg, ""));
                    let path = out.join(file);
                    let write = |svg| std::fs::write(&path, svg).map_err(|e| e.to_string());
                    plot::svg(&charts)
                        .and_then(write)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                    md += &format!("![{alt}]({file})\n");
                    charts.clear();
                }
                ("@chart" | "@bar" | "@point", _) => {}
                (d, _) if d.starts_with('@') => {
                    return Err(format!("spec.md: unknown line {line}"));
                }
                _ => {}
            }
            if line.starts_with('@')
                && !["@chart ", "@bar ", "@point "]
                    .iter()
                    .any(|p| line.starts_with(p))
            {
                continue;
            }
            let modifier = |l: &&str| {
                ["@for ", "@slots ", "@if ", "@name "]
                    .iter()
                    .any(|p| l.starts_with(p))
            };
            let mut mods = Vec::new();
            while let Some(m) = lines.next_if(modifier) {
                mods.push(m[1..].split_once(' ').unwrap_or_default());
            }
            let of = |k| mods.iter().filter(move |m| m.0 == k).map(|m| m.1);
            for row in me.rows(&of("for").collect::<Vec<_>>())? {
                let mut c = me.with(&row);
                c.slots = c.slots(of("slots").next().unwrap_or("{case}"))?;
                if !of("if")
                    .map(|i| c.holds(i))
                    .collect::<Result<Vec<_>, _>>()?
                    .iter()
                    .all(|h| *h)
                {
                    continue;
                }
                let text = c.fill(&line.replace("\\n", "\n"))?;
                if let Some(spec) = text.strip_prefix("@chart ") {
                    charts.push(charts::chart(spec)?);
                } else if let Some((_, row)) =
                    text.split_once(' ').filter(|_| line.starts_with('@'))
                {
                    let chart = charts
                        .last_mut()
                        .ok_or("spec.md: a chart's row before any @chart")?;
                    charts::add(&c, chart, row)?;
                } else {
                    if let Some(name) = of("name").next() {
                        named.entry(name).or_default().push(text.clone());
                    }
                    md += &text;
                    md.push('\n');
                }
            }
        }
        Ok(md)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Options, Outcome, Record, cases};

    /// The sizes of a mode.
    fn sizes(quick: bool, full: bool) -> Sizes {
        let (out, timeout, only) = Default::default();
        Sizes::for_options(&Options {
            quick,
            full,
            reps: 1,
            out,
            timeout,
            no_erlang: false,
            only,
        })
    }

    /// In every mode, spec.md names every case of the suite but overload's (not in the
    /// report), and renders.
    #[test]
    fn the_spec_names_every_case() {
        for (quick, full) in [(true, false), (false, false), (false, true)] {
            let (sizes, skip) = (sizes(quick, full), Outcome::Skipped("test".into()));
            let cases = cases(&sizes);
            let records: Vec<Record> = (cases.iter().enumerate())
                .flat_map(|(case, c)| c.impls.iter().map(move |&imp| (case, imp)))
                .map(|(case, imp)| Record {
                    case,
                    imp,
                    rep: 0,
                    outcome: skip.clone(),
                })
                .collect();
            let res = Results::new(&cases, &records);
            let out = std::env::temp_dir().join(format!("otter-bench-spec-{}", std::process::id()));
            std::fs::create_dir_all(&out).unwrap();
            let md = Ctx::new(&res, &sizes, Vec::new())
                .unwrap()
                .render(&out, &mut HashMap::new());
            assert!(md.unwrap().contains("## HTTP"));
            let seen = res.seen.borrow();
            let missed = cases
                .iter()
                .filter(|c| c.bench != "overload" && !seen.contains(&c.id));
            let missed: Vec<&str> = missed.map(|c| c.id.as_str()).collect();
            assert!(missed.is_empty(), "spec.md names no slot of {missed:?}");
            let _ = std::fs::remove_dir_all(&out);
        }
    }

    /// A figure or a metric that spec.md gets wrong is an error that names it.
    #[test]
    fn an_unknown_metric_is_named() {
        let (sizes, res) = (sizes(true, false), Results::new(&[], &[]));
        let c = Ctx::new(&res, &sizes, Vec::new()).unwrap();
        assert_eq!(
            c.fill("{$0 nope}").unwrap_err(),
            "spec.md names no metric `nope`"
        );
        assert!(c.fill("{$0 rate}").unwrap_err().contains("no slot `$0`"));
        assert!(
            Metric::parse("seconds secs best")
                .unwrap_err()
                .contains("`best`")
        );
        assert!(
            Metric::parse("seconds sec lower")
                .unwrap_err()
                .contains("`sec`")
        );
    }
}
