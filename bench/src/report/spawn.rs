//! Seed #3, serial spawn: time and rate by number of chains, and `spawn.svg`.

use std::fmt::Write as _;

use super::cell::{Results, faster_or_slower, ops_per_s, rate, seconds};
use super::format;
use super::plot::{self, Axis, BarChart};
use super::{ERLANG, OTTER, id, write_svg};
use crate::suite::{Impl, Options, Sizes};

/// Appends this section to `md`.
pub(super) fn section(
    md: &mut String,
    res: &Results<'_>,
    s: &Sizes,
    o: &Options,
) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Seed #3 — serial spawn (n processes in c chains)\n"
    );
    let _ = writeln!(
        md,
        "\"How fast can Erlang create processes?\" (2006): 1,000,000 processes in c chains, each \
         spawning the next and exiting; ≈ 350,000 spawn+exit/s then, slower with more chains. \
         Here n = {}.\n",
        format::si(s.spawn_n as f64)
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
            co.show(seconds, format::secs),
            ce.show(seconds, format::secs),
            co.show(ops_per_s, rate),
            ce.show(ops_per_s, rate),
            faster_or_slower(&co, &ce, ops_per_s, true)
        );
        vo.push(co.median(ops_per_s));
        ve.push(ce.median(ops_per_s));
    }
    let svg = plot::bar_chart(&BarChart {
        title: "Serial spawn: spawn+exit per second by number of chains".into(),
        subtitle: format!(
            "seed #3; n = {}; higher is better",
            format::si(s.spawn_n as f64)
        ),
        y: Axis {
            label: "spawn+exit per second",
            log: false,
            fmt: format::si,
        },
        groups: s.spawn_c.iter().map(|c| format!("c = {c}")).collect(),
        series: vec![("otter".into(), OTTER, vo), ("erlang".into(), ERLANG, ve)],
    })?;
    write_svg(o, "spawn.svg", &svg)?;
    let _ = writeln!(md, "\n![spawn rate by chains](spawn.svg)");
    Ok(())
}
