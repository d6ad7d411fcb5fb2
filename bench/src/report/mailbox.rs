//! Seed #2, the mailbox: time over k in both orders, the growth exponent, and
//! `mailbox.svg`.

use std::fmt::Write as _;

use super::cell::{Cell, Results, faster_or_slower, seconds};
use super::format;
use super::plot::{self, Axis, Guide, LineChart, Marker, Series};
use super::{ERLANG, OTTER, OTTER_MATCH, id, write_svg};
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
        format::si(s.mailbox_match_max_k as f64)
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
        let _ = write!(md, "| {} |", format::si(k as f64));
        for c in &cells {
            let _ = write!(md, " {} |", c.show(seconds, format::secs));
        }
        for (oi, ei) in [(0, 4), (1, 5)] {
            let _ = write!(
                md,
                " {} |",
                faster_or_slower(&cells[oi], &cells[ei], seconds, false)
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
            // The mailbox cases run otter and Erlang only.
            (imp @ (Impl::Erlang | Impl::Tokio), _) => {
                (format!("{}, {order} order", imp.name()), ERLANG)
            }
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
    ) && kmax > kmin
    {
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
    let svg = plot::line_chart(&LineChart {
        title: "Mailbox: time to take k messages by sender pid".into(),
        subtitle: "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better"
            .into(),
        x: Axis {
            label: "k children (log)",
            log: true,
            fmt: format::si,
        },
        y: Axis {
            label: "time (log)",
            log: true,
            fmt: format::secs,
        },
        series,
        guides,
    })?;
    write_svg(o, "mailbox.svg", &svg)?;
    let _ = writeln!(
        md,
        "\n![mailbox time over k, both orders, log-log](mailbox.svg)"
    );
    Ok(())
}
