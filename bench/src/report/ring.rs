//! Seed #4, the ring: the N × M grid, the table of every cell, and `ring.svg`.

use std::fmt::Write as _;

use super::cell::{Cell, Results, faster_or_slower, ops_per_s, rate, seconds};
use super::format;
use super::plot::{self, Axis, LineChart, Marker, Series};
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
        let _ = write!(md, " M = {} |", format::si(*m as f64));
    }
    let _ = write!(md, "\n|---|");
    for _ in &s.ring {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md);
    for &n in &s.ring {
        let _ = write!(md, "| **N = {}** |", format::si(n as f64));
        for &m in &s.ring {
            let (co, ce) = (
                res.cell(&cell_id(n, m), Impl::Otter),
                res.cell(&cell_id(n, m), Impl::Erlang),
            );
            if matches!(co, Cell::NotRun) && matches!(ce, Cell::NotRun) {
                let _ = write!(
                    md,
                    " not run ({} sends: `--full`) |",
                    format::si((n * m) as f64)
                );
                continue;
            }
            let _ = write!(
                md,
                " otter {}<br>erlang {}<br>{} |",
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                faster_or_slower(&co, &ce, ops_per_s, true)
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
                name: format!("{} N={}", imp.name(), format::si(n as f64)),
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
                format::si((n * m) as f64),
                co.show(seconds, format::secs),
                ce.show(seconds, format::secs),
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                faster_or_slower(&co, &ce, ops_per_s, true)
            );
        }
    }
    let svg = plot::line_chart(&LineChart {
        title: "Ring: sends per second over N·M".into(),
        subtitle: "seed #4; median of repetitions; higher is better".into(),
        x: Axis {
            label: "N·M sends (log)",
            log: true,
            fmt: format::si,
        },
        y: Axis {
            label: "sends per second (log)",
            log: true,
            fmt: format::si,
        },
        series,
        guides: vec![],
    })?;
    write_svg(o, "ring.svg", &svg)?;
    let _ = writeln!(md, "\n![ring: sends/s over N·M](ring.svg)");
    Ok(())
}
