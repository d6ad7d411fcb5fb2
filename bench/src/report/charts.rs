//! The charts of `spec.md`, as data: `@chart TITLE | SUBTITLE | Y | X` starts one (an axis is
//! `SCALE LABEL FORMAT`, the scale `log` or `linear`; without an X axis the chart has bars),
//! its rows add to it, `@guides` adds reference slopes, and `@svg` draws the charts so far
//! (`plot.rs`) one above the other. And the ring's N × M grid (`@ring_grid`).

use plotters::style::RGBColor;

use super::format::{self, si};
use super::plot::{Axis, Chart, Line, Plot};
use super::spec::{Ctx, Result};
use crate::suite::Impl::{Erlang, Otter};

/// The color `spec.md` calls `name`.
fn color(name: &str) -> RGBColor {
    match name {
        "otter" => RGBColor(0xd9, 0x5f, 0x02),
        "erlang" => RGBColor(0x75, 0x70, 0xb3),
        "match" => RGBColor(0xe7, 0x29, 0x8a),
        _ => RGBColor(0x88, 0x88, 0x88),
    }
}

/// The chart of `@chart TITLE | SUBTITLE | Y | X`, empty.
pub(super) fn chart(spec: &str) -> Result<Chart> {
    let axis = |a: &str| {
        let (scale, rest) = a.split_once(' ').unwrap_or_default();
        let (label, fmt) = rest.rsplit_once(' ').unwrap_or_default();
        let fmt = format::named(fmt).ok_or(format!("spec.md: no format in the axis `{a}`"))?;
        let (label, log) = (label.to_string(), scale == "log");
        Ok::<_, String>(Axis { label, log, fmt })
    };
    let f: Vec<&str> = spec.split(" | ").collect();
    let [title, subtitle, y, x @ ..] = &f[..] else {
        return Err(format!("spec.md: @chart {spec}: too few cells"));
    };
    let plot = match x.first() {
        Some(x) => Plot::Lines(axis(x)?, Vec::new()),
        None => Plot::Bars(Vec::new(), Vec::new()),
    };
    let (title, subtitle, y) = (title.to_string(), subtitle.to_string(), axis(y)?);
    Ok(Chart {
        title,
        subtitle,
        y,
        plot,
    })
}

/// Adds a row to `chart`: `@bar GROUP | METRIC`, the group's bar of each slot, or `@point LINE
/// | X | METRIC | COLOR | DASH | MARKER`, slot 0's point at X on the line LINE (`solid` or
/// `dashed`, the marker's number), which is added the first time it is named.
pub(super) fn add(c: &Ctx<'_>, chart: &mut Chart, row: &str) -> Result<()> {
    let f: Vec<&str> = row.split(" | ").collect();
    let median = |i: usize, m| {
        let s = c.slots.get(i).ok_or("spec.md: a chart row without slots")?;
        Ok::<_, String>(c.res.median(&s.0, s.1, &c.metric(m)?))
    };
    match (&mut chart.plot, &f[..]) {
        (Plot::Bars(groups, series), [group, m]) => {
            groups.push(group.to_string());
            for (i, s) in c.slots.iter().enumerate() {
                if series.len() == i {
                    series.push((s.1.name().into(), color(s.1.name()), Vec::new()));
                }
                series[i].2.push(median(i, m)?);
            }
        }
        (Plot::Lines(_, lines), [name, x, m, col, dash, marker]) => {
            if !lines.iter().any(|l| l.name == *name) {
                let mut line = Line::new(name.to_string(), color(col), *dash == "dashed");
                line.marker = marker.parse().ok();
                lines.push(line);
            }
            let line = lines.iter_mut().find(|l| l.name == *name);
            let point = x.parse().ok().zip(median(0, m)?);
            line.into_iter().for_each(|l| l.points.extend(point));
        }
        _ => return Err(format!("spec.md: {row} does not fit its chart")),
    }
    Ok(())
}

/// `@guides`: each line's growth exponent, the log-log slope between its first and last
/// point, returned for `{growth}`; and the reference slopes ∝ k and ∝ k², anchored at the
/// lowest point of the smallest x, added to `chart`.
pub(super) fn guides(chart: &mut Chart) -> String {
    let Plot::Lines(_, lines) = &mut chart.plot else {
        return String::new();
    };
    let growth: Vec<String> = lines.iter().map(slope).collect();
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|l| l.points.clone()).collect();
    let xs = all.iter().map(|p| p.0);
    let (k0, k1) = xs.fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    if k1 > k0 {
        let at_k0 = all.iter().filter(|p| p.0 == k0).map(|p| p.1);
        let t0 = at_k0.fold(f64::INFINITY, f64::min);
        for (name, power) in [("∝ k", 1), ("∝ k²", 2)] {
            let points = vec![(k0, t0), (k1, t0 * (k1 / k0).powi(power))];
            let line = Line::new(name.into(), color("guide"), true);
            lines.push(Line { points, ..line });
        }
    }
    growth.join(" | ")
}

/// The log-log slope of line `l` between its first and last point, "—" without two.
fn slope(l: &Line) -> String {
    match (l.points.first(), l.points.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln()),
        _ => "—".into(),
    }
}

/// The ring's N × M grid: in each cell otter, erlang and otter vs erlang, or why it did not run.
pub(super) fn ring_grid(c: &Ctx<'_>) -> Result<String> {
    let ring = &c.sizes.ring;
    let heads: Vec<String> = ring
        .iter()
        .map(|&m| format!("M = {}", si(m as f64)))
        .collect();
    let rule = "---|".repeat(ring.len());
    let mut md = format!("| N \\ M | {} |\n|---|{rule}\n", heads.join(" | "));
    for &n in ring {
        md += &format!("| **N = {}** |", si(n as f64));
        for &m in ring {
            let (mut k, id) = (c.with(&[]), format!("ring n={n} m={m}"));
            k.slots = vec![(id.clone(), Otter), (id, Erlang)];
            md += &match k.holds("ran")? {
                true => k.fill(" otter {$0 rate}<br>erlang {$1 rate}<br>{$0/$1 rate} |")?,
                false => format!(" not run ({} sends: `--full`) |", si((n * m) as f64)),
            };
        }
        md.push('\n');
    }
    Ok(md)
}
