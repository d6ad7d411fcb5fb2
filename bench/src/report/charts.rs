//! What `spec.md` leaves to code: the charts of its `@svg` lines (each drawn by `plot.rs`), the
//! ring's N × M grid (`@ring_grid`), and the figures computed from several medians: the
//! closure gap (`{gap_otter}`, `{gap_erlang}`, `{gap}`) and the mailbox's growth exponents
//! (`{growth}`).

use plotters::style::RGBColor;

use super::format::{micros, nanos, secs, si, si_u, size_name};
use super::plot::{Axis, Chart, Line, Marker, Plot};
use super::spec::{Ctx, Var};
use super::table::factor;
use crate::suite::Impl::{self, Erlang, Otter};
use crate::suite::{LATENCY_B, LATENCY_W};

const OTTER: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const ERLANG: RGBColor = RGBColor(0x75, 0x70, 0xb3);
const OTTER_MATCH: RGBColor = RGBColor(0xe7, 0x29, 0x8a);
const GUIDE: RGBColor = RGBColor(0x88, 0x88, 0x88);
const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
];
const IMPLS: [(Impl, RGBColor); 2] = [(Otter, OTTER), (Erlang, ERLANG)];

/// A chart of `plot` under `title` and `subtitle`, its y axis `y`.
fn chart(title: &str, subtitle: String, y: Axis, plot: Plot) -> Chart {
    let title = title.into();
    Chart {
        title,
        subtitle,
        y,
        plot,
    }
}

/// A line of a log-log chart.
fn line(name: String, color: RGBColor, dashed: bool, marker: Marker, pts: Vec<(f64, f64)>) -> Line {
    let marker = Some(marker);
    let points = pts;
    Line {
        name,
        color,
        dashed,
        marker,
        points,
    }
}

/// Bars of otter and erlang in each of `groups`, `bars` giving an implementation's values.
fn bars(groups: Vec<String>, bars: impl Fn(Impl) -> Vec<Option<f64>>) -> Plot {
    Plot::Bars(
        groups,
        IMPLS.map(|(i, c)| (i.name().into(), c, bars(i))).into(),
    )
}

/// The variables of the figures computed from several medians.
pub(super) fn vars(c: &Ctx<'_>) -> Result<Vec<Var>, String> {
    let (gap, growth) = (closure_gap(c)?, mailbox(c)?.1);
    let names = ["gap_otter", "gap_erlang", "gap"].map(String::from);
    let mut v: Vec<Var> = names.into_iter().zip(gap).collect();
    v.push(("growth".into(), growth.join(" | ")));
    Ok(v)
}

/// message / closure of seed #1 on otter and on erlang, and the gap's comparison.
fn closure_gap(c: &Ctx<'_>) -> Result<[String; 3], String> {
    let ns = c.metric("ns")?;
    let cid = |st| format!("closure n={} style={st}", c.sizes.closure_n);
    let ratio = |imp| {
        let ns = |st| c.res.median(&cid(st), imp, &ns);
        ns("message").zip(ns("closure")).map(|(m, c)| m / c)
    };
    let x = |r: Option<f64>| r.map_or("—".into(), |x| format!("{}×", factor(x)));
    let gap = match (ratio(Otter), ratio(Erlang)) {
        (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
        (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
        _ => "—".into(),
    };
    Ok([x(ratio(Otter)), x(ratio(Erlang)), gap])
}

/// The ring's N × M grid: in each cell otter, erlang and otter vs erlang, or why it did not run.
pub(super) fn ring_grid(c: &Ctx<'_>) -> Result<String, String> {
    let ring = &c.sizes.ring;
    let heads: Vec<String> = ring.iter().map(|&m| format!("M = {}", si_u(m))).collect();
    let mut md = format!(
        "| N \\ M | {} |\n|---|{}\n",
        heads.join(" | "),
        "---|".repeat(ring.len())
    );
    for &n in ring {
        md += &format!("| **N = {}** |", si_u(n));
        for &m in ring {
            let mut k = c.with(&[]);
            k.slots = [Otter, Erlang]
                .map(|i| (format!("ring n={n} m={m}"), i))
                .into();
            md += &match k.holds("ran")? {
                true => k.fill(" otter {$0 rate}<br>erlang {$1 rate}<br>{$0/$1 rate} |")?,
                false => format!(" not run ({} sends: `--full`) |", si_u(n * m)),
            };
        }
        md.push('\n');
    }
    Ok(md)
}

/// The charts of the SVG file `file`.
pub(super) fn svg(c: &Ctx<'_>, file: &str) -> Result<String, String> {
    let (s, res) = (c.sizes, c.res);
    let charts = match file {
        "ring.svg" => {
            let (rate, cid) = (c.metric("rate")?, |n, m| format!("ring n={n} m={m}"));
            let mut lines = Vec::new();
            for (imp, color) in IMPLS {
                for (&n, marker) in s.ring.iter().zip(MARKERS.iter().cycle()) {
                    let at = |&m: &u64| {
                        res.median(&cid(n, m), imp, &rate)
                            .map(|y| ((n * m) as f64, y))
                    };
                    let pts = s.ring.iter().filter_map(at).collect();
                    let name = format!("{} N={}", imp.name(), si_u(n));
                    lines.push(line(name, color, imp == Erlang, *marker, pts));
                }
            }
            let sub = "seed #4; median of repetitions; higher is better".into();
            let plot = Plot::Lines(Axis::log("N·M sends (log)", si), lines);
            let y = Axis::log("sends per second (log)", si);
            vec![chart("Ring: sends per second over N·M", sub, y, plot)]
        }
        "spawn.svg" => {
            let (rate, cid) = (c.metric("rate")?, |ch| {
                format!("spawn n={} c={ch}", s.spawn_n)
            });
            let groups = s.spawn_c.iter().map(|ch| format!("c = {ch}")).collect();
            let of = |imp| {
                s.spawn_c
                    .iter()
                    .map(|&ch| res.median(&cid(ch), imp, &rate))
                    .collect()
            };
            let sub = format!("seed #3; n = {}; higher is better", si_u(s.spawn_n));
            let title = "Serial spawn: spawn+exit per second by number of chains";
            let y = Axis::linear("spawn+exit per second", si);
            vec![chart(title, sub, y, bars(groups, of))]
        }
        "mailbox.svg" => {
            let sub =
                "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better";
            let plot = Plot::Lines(Axis::log("k children (log)", si), mailbox(c)?.0);
            let title = "Mailbox: time to take k messages by sender pid";
            vec![chart(
                title,
                sub.into(),
                Axis::log("time (log)", secs),
                plot,
            )]
        }
        "closure.svg" => {
            let (ns, [o, e, _]) = (c.metric("ns")?, closure_gap(c)?);
            let n = si_u(s.closure_n);
            let sub = format!(
                "seed #1; n = {n}; message/closure: otter {o}, erlang {e}; lower is better"
            );
            let groups = vec!["message (process)".into(), "closure chain".into()];
            let cid = |st| format!("closure n={} style={st}", s.closure_n);
            let of = |imp| {
                ["message", "closure"]
                    .map(|st| res.median(&cid(st), imp, &ns))
                    .into()
            };
            let title = "Message vs closure: nanoseconds per increment";
            vec![chart(
                title,
                sub,
                Axis::linear("ns per increment", nanos),
                bars(groups, of),
            )]
        }
        "latency.svg" => {
            let names = ["p50", "p99", "p99.9", "max"];
            let ms = ["p50", "p99", "p999", "max"].map(|m| c.metric(m));
            let ms = ms.into_iter().collect::<Result<Vec<_>, _>>()?;
            let sub = format!(
                "r = {}, b = {LATENCY_B}, w = {LATENCY_W} µs; hog=1: one process never yields; log \
                 scale, lower is better",
                si_u(s.latency_r)
            );
            let groups = [0, 1]
                .iter()
                .flat_map(|h| names.map(|n| format!("{n} h{h}")));
            let id = |hog| {
                format!(
                    "latency r={} b={LATENCY_B} w={LATENCY_W} hog={hog}",
                    s.latency_r
                )
            };
            let of = |imp, hog| {
                ms.iter()
                    .map(|m| res.median(&id(hog), imp, m))
                    .collect::<Vec<_>>()
            };
            let plot = bars(groups.collect(), |imp| [of(imp, 0), of(imp, 1)].concat());
            let y = Axis::log("round trip", micros);
            vec![chart("Round-trip latency under load", sub, y, plot)]
        }
        "echo.svg" => {
            let e = &s.echo;
            // One line per (implementation, size, mode), in two panels.
            let lines = |m| -> Result<Plot, String> {
                let (m, mut v) = (c.metric(m)?, Vec::new());
                for mode in ["passive", "active"] {
                    for (&size, marker) in e.sizes.iter().zip(MARKERS) {
                        for (imp, color) in IMPLS {
                            let id = |n| {
                                format!(
                                    "echo conns={n} size={size} seconds={} mode={mode}",
                                    e.seconds
                                )
                            };
                            let at = |&n: &u64| res.median(&id(n), imp, &m).map(|y| (n as f64, y));
                            let name = format!("{} {}, {mode}", imp.name(), size_name(size));
                            let pts = e.conns.iter().filter_map(at).collect();
                            v.push(line(name, color, mode == "active", marker, pts));
                        }
                    }
                }
                Ok(Plot::Lines(Axis::log("connections", si), v))
            };
            let sub = "server on one core, closed-loop load on the other; log-log; solid = passive, \
                       dashed = active; higher is better";
            let y = Axis::log("round trips/s", si);
            let top = chart(
                "TCP echo: round trips per second",
                sub.into(),
                y,
                lines("ops")?,
            );
            let sub = "log-log; solid = passive, dashed = active; lower is better";
            let y = Axis::log("p99", micros);
            vec![
                top,
                chart("TCP echo: p99 round trip", sub.into(), y, lines("p99")?),
            ]
        }
        _ => return Err(format!("spec.md: no chart {file}")),
    };
    super::plot::svg(&charts)
}

/// Seed #2's lines, time over k for each slot, with the reference slopes ∝ k and ∝ k²
/// anchored at the fastest line's smallest k; and each slot's growth exponent, the log-log
/// slope of time over k between the smallest and largest k.
fn mailbox(c: &Ctx<'_>) -> Result<(Vec<Line>, Vec<String>), String> {
    let time = c.metric("time")?;
    let slots = [
        ("spawn", Otter, "", "otter key, spawn", OTTER),
        ("reverse", Otter, "", "otter key, reverse", OTTER),
        (
            "spawn",
            Otter,
            " style=match",
            "otter match, spawn",
            OTTER_MATCH,
        ),
        (
            "reverse",
            Otter,
            " style=match",
            "otter match, reverse",
            OTTER_MATCH,
        ),
        ("spawn", Erlang, "", "erlang spawn", ERLANG),
        ("reverse", Erlang, "", "erlang reverse", ERLANG),
    ];
    let (mut lines, mut growth) = (Vec::new(), Vec::new());
    for (order, imp, style, head, color) in slots {
        let id = |k| format!("mailbox k={k} order={order}{style}");
        let at = |&k: &u64| c.res.median(&id(k), imp, &time).map(|t| (k as f64, t));
        let pts: Vec<(f64, f64)> = c.sizes.mailbox_k.iter().filter_map(at).collect();
        growth.push(match (pts.first(), pts.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln())
            }
            _ => "—".into(),
        });
        let name = match imp {
            Erlang => format!("erlang, {order} order"),
            _ => format!("{head} order"),
        };
        let rev = order == "reverse";
        lines.push(line(name, color, rev, MARKERS[usize::from(rev)], pts));
    }
    let all: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|l| l.points.iter().copied())
        .collect();
    let (k0, k1) = all
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if k1 > k0 {
        let t0 = all
            .iter()
            .filter(|p| p.0 == k0)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        for (name, power) in [("∝ k", 1), ("∝ k²", 2)] {
            let points = vec![(k0, t0), (k1, t0 * (k1 / k0).powi(power))];
            let (name, color, dashed, marker) = (name.into(), GUIDE, true, None);
            lines.push(Line {
                name,
                color,
                dashed,
                marker,
                points,
            });
        }
    }
    Ok((lines, growth))
}
