//! Seed #1, message versus function: ns per increment, the message / closure gap, and
//! `closure.svg`.

use std::fmt::Write as _;

use super::cell::{Cell, Results, factor, faster_or_slower, ns_per_op};
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
        "\n## Seed #1 — message versus function (a counter held by a process or by closures)\n"
    );
    let _ = writeln!(
        md,
        "\"My shocking Erlang discovery\" (R14B01): 10,000,000 increments; process 39.7 s, \
         closures 2.4 s, \"sixteen times faster\". Here n = {}. Nanoseconds per increment; the \
         figure of merit is message / closure (how much a message costs over a call).\n",
        format::si(s.closure_n as f64)
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
        om.show(ns_per_op, format::nanos),
        em.show(ns_per_op, format::nanos),
        faster_or_slower(&om, &em, ns_per_op, false)
    );
    let _ = writeln!(
        md,
        "| closure, ns/increment | {} | {} | {} |",
        oc.show(ns_per_op, format::nanos),
        ec.show(ns_per_op, format::nanos),
        faster_or_slower(&oc, &ec, ns_per_op, false)
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
            format::si(s.closure_n as f64),
            ro.map_or("—".into(), |x| format!("{}×", factor(x))),
            re.map_or("—".into(), |x| format!("{}×", factor(x)))
        ),
        y: Axis {
            label: "ns per increment",
            log: false,
            fmt: format::nanos,
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
    })?;
    write_svg(o, "closure.svg", &svg)?;
    let _ = writeln!(md, "\n![per-message vs per-call cost](closure.svg)");
    Ok(())
}
