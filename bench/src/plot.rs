//! Hand-written SVG charts for the report: line charts (linear or log axes) and grouped bar
//! charts, with axes, ticks, grid, labels and a legend. No plotting crate: the output is
//! plain SVG 1.1 that browsers, GitHub and `rsvg-convert` render alike.

use std::fmt::Write as _;

/// Canvas size and the plot area inside it.
const W: f64 = 820.0;
const H: f64 = 480.0;
const LEFT: f64 = 86.0;
const RIGHT: f64 = 590.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 410.0;
const FONT: &str = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) color: &'static str,
    pub(crate) dashed: bool,
    pub(crate) marker: Marker,
    /// (x, y) points; drawn in x order. Points a log axis cannot show are left out.
    pub(crate) points: Vec<(f64, f64)>,
}

/// A thin dotted reference line through two points, labelled at its right end (e.g. "∝ k²").
#[derive(Debug, Clone)]
pub(crate) struct Guide {
    pub(crate) label: String,
    pub(crate) from: (f64, f64),
    pub(crate) to: (f64, f64),
}

/// An axis: its label, scale, and how tick values are written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axis {
    pub(crate) label: &'static str,
    pub(crate) log: bool,
    pub(crate) fmt: fn(f64) -> String,
}

/// A line chart.
#[derive(Debug, Clone)]
pub(crate) struct LineChart {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) x: Axis,
    pub(crate) y: Axis,
    pub(crate) series: Vec<Series>,
    pub(crate) guides: Vec<Guide>,
}

/// A grouped bar chart: one group per category, one bar per series in each group.
#[derive(Debug, Clone)]
pub(crate) struct BarChart {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) y: Axis,
    pub(crate) groups: Vec<String>,
    /// (name, color, one value per group; `None` = no bar, e.g. not measured).
    pub(crate) series: Vec<(String, &'static str, Vec<Option<f64>>)>,
}

/// Maps data values to pixels along one axis.
#[derive(Debug, Clone, Copy)]
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn new(log: bool, lo: f64, hi: f64, p0: f64, p1: f64) -> Scale {
        Scale {
            log,
            lo,
            hi,
            p0,
            p1,
        }
    }

    fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.p0 + t * (self.p1 - self.p0)
    }

    /// Major ticks (labelled) and minor ticks.
    fn ticks(&self) -> (Vec<f64>, Vec<f64>) {
        if self.log {
            let (a, b) = (
                self.lo.log10().round() as i32,
                self.hi.log10().round() as i32,
            );
            let majors: Vec<f64> = (a..=b).map(|e| 10f64.powi(e)).collect();
            let minors = (a..b)
                .flat_map(|e| (2..10).map(move |m| f64::from(m) * 10f64.powi(e)))
                .collect();
            (majors, minors)
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut v = (self.lo / step).ceil() * step;
            let mut majors = Vec::new();
            while v <= self.hi + step * 1e-9 {
                majors.push(v);
                v += step;
            }
            (majors, Vec::new())
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// The axis range for values in `lo..=hi`: whole decades on a log axis, nice bounds from
/// zero (or below the minimum if it is negative) on a linear one.
fn range(log: bool, lo: f64, hi: f64) -> (f64, f64) {
    if log {
        let lo = if lo > 0.0 { lo } else { 1.0 };
        let hi = if hi > lo { hi } else { lo * 10.0 };
        (
            10f64.powf(lo.log10().floor()),
            10f64.powf((hi.log10() - 1e-9).ceil().max(lo.log10().floor() + 1.0)),
        )
    } else {
        let lo = lo.min(0.0);
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = nice_step((hi - lo) / 5.0);
        ((lo / step).floor() * step, (hi * 1.08 / step).ceil() * step)
    }
}

/// Escapes text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn header(out: &mut String, title: &str, subtitle: &str) {
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">"
    );
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{H}\" fill=\"white\"/>"
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\" {FONT}>{}</text>",
        (LEFT + RIGHT) / 2.0,
        esc(title)
    );
    if !subtitle.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"42\" text-anchor=\"middle\" font-size=\"12\" fill=\"#555\" {FONT}>{}</text>",
            (LEFT + RIGHT) / 2.0,
            esc(subtitle)
        );
    }
}

/// Draws the frame, grid, ticks and axis labels.
fn axes(out: &mut String, xs: Option<(&Scale, &Axis)>, ys: (&Scale, &Axis), x_label: &str) {
    let (ys, ya) = ys;
    let (majors, minors) = ys.ticks();
    for v in &minors {
        let y = ys.px(*v);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#f0f0f0\"/>\
             <line x1=\"{}\" y1=\"{y:.1}\" x2=\"{LEFT}\" y2=\"{y:.1}\" stroke=\"#333\"/>",
            RIGHT,
            LEFT - 3.0
        );
    }
    for v in &majors {
        let y = ys.px(*v);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\" stroke=\"#dddddd\"/>\
             <line x1=\"{}\" y1=\"{y:.1}\" x2=\"{LEFT}\" y2=\"{y:.1}\" stroke=\"#333\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"12\" {FONT}>{}</text>",
            LEFT - 6.0,
            LEFT - 9.0,
            y + 4.0,
            esc(&(ya.fmt)(*v))
        );
    }
    if let Some((xs, xa)) = xs {
        let (majors, minors) = xs.ticks();
        for v in &minors {
            let x = xs.px(*v);
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{BOTTOM}\" stroke=\"#f0f0f0\"/>\
                 <line x1=\"{x:.1}\" y1=\"{BOTTOM}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333\"/>",
                BOTTOM + 3.0
            );
        }
        for v in &majors {
            let x = xs.px(*v);
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{BOTTOM}\" stroke=\"#dddddd\"/>\
                 <line x1=\"{x:.1}\" y1=\"{BOTTOM}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#333\"/>\
                 <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\" {FONT}>{}</text>",
                BOTTOM + 6.0,
                BOTTOM + 21.0,
                esc(&(xa.fmt)(*v))
            );
        }
    }
    let _ = writeln!(
        out,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>",
        RIGHT - LEFT,
        BOTTOM - TOP
    );
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" {FONT}>{}</text>",
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 44.0,
        esc(x_label)
    );
    let (cx, cy) = (20.0, (TOP + BOTTOM) / 2.0);
    let _ = writeln!(
        out,
        "<text x=\"{cx}\" y=\"{cy}\" text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 {cx} {cy})\" {FONT}>{}</text>",
        esc(ya.label)
    );
}

fn marker(out: &mut String, m: Marker, x: f64, y: f64, color: &str) {
    let _ = match m {
        Marker::Circle => writeln!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{color}\"/>"
        ),
        Marker::Square => writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{color}\"/>",
            x - 4.0,
            y - 4.0
        ),
        Marker::Triangle => writeln!(
            out,
            "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"{color}\"/>",
            x,
            y - 5.0,
            x - 5.0,
            y + 4.0,
            x + 5.0,
            y + 4.0
        ),
        Marker::Diamond => writeln!(
            out,
            "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"{color}\"/>",
            x,
            y - 5.5,
            x + 5.5,
            y,
            x,
            y + 5.5,
            x - 5.5,
            y
        ),
    };
}

fn legend_entry(
    out: &mut String,
    i: usize,
    name: &str,
    color: &str,
    dashed: bool,
    m: Option<Marker>,
) {
    let (x, y) = (RIGHT + 16.0, TOP + 10.0 + 22.0 * i as f64);
    match m {
        Some(m) => {
            let _ = writeln!(
                out,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"{}/>",
                x + 30.0,
                if dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                }
            );
            marker(out, m, x + 15.0, y, color);
        }
        None => {
            let _ = writeln!(
                out,
                "<rect x=\"{x}\" y=\"{}\" width=\"30\" height=\"12\" fill=\"{color}\"/>",
                y - 6.0
            );
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" {FONT}>{}</text>",
        x + 38.0,
        y + 4.0,
        esc(name)
    );
}

/// Renders a line chart. A chart without any point shows "no data".
pub(crate) fn line_chart(c: &LineChart) -> String {
    let ok = |log: bool, v: f64| v.is_finite() && (!log || v > 0.0);
    let pts: Vec<(f64, f64)> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(c.guides.iter().flat_map(|g| [g.from, g.to]))
        .filter(|(x, y)| ok(c.x.log, *x) && ok(c.y.log, *y))
        .collect();
    let mut out = String::new();
    header(&mut out, &c.title, &c.subtitle);
    if pts.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"16\" {FONT}>no data</text></svg>",
            W / 2.0,
            H / 2.0
        );
        return out;
    }
    let fold = |f: fn(&(f64, f64)) -> f64| {
        pts.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            })
    };
    let (x0, x1) = fold(|p| p.0);
    let (y0, y1) = fold(|p| p.1);
    let (x0, x1) = range(c.x.log, x0, x1);
    let (y0, y1) = range(c.y.log, y0, y1);
    let xs = Scale::new(c.x.log, x0, x1, LEFT, RIGHT);
    let ys = Scale::new(c.y.log, y0, y1, BOTTOM, TOP);
    axes(&mut out, Some((&xs, &c.x)), (&ys, &c.y), c.x.label);

    for g in &c.guides {
        if !(ok(c.x.log, g.from.0)
            && ok(c.y.log, g.from.1)
            && ok(c.x.log, g.to.0)
            && ok(c.y.log, g.to.1))
        {
            continue;
        }
        let (ax, ay, bx, by) = (
            xs.px(g.from.0),
            ys.px(g.from.1),
            xs.px(g.to.0),
            ys.px(g.to.1),
        );
        let _ = writeln!(
            out,
            "<line x1=\"{ax:.1}\" y1=\"{ay:.1}\" x2=\"{bx:.1}\" y2=\"{by:.1}\" stroke=\"#888\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#666\" {FONT}>{}</text>",
            bx + 4.0,
            by + 4.0,
            esc(&g.label)
        );
    }
    for s in &c.series {
        let mut p: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| ok(c.x.log, *x) && ok(c.y.log, *y))
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        if p.len() > 1 {
            let path: Vec<String> = p
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", xs.px(*x), ys.px(*y)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                path.join(" "),
                s.color,
                if s.dashed {
                    " stroke-dasharray=\"6 4\""
                } else {
                    ""
                }
            );
        }
        for (x, y) in &p {
            marker(&mut out, s.marker, xs.px(*x), ys.px(*y), s.color);
        }
    }
    for (i, s) in c.series.iter().enumerate() {
        legend_entry(&mut out, i, &s.name, s.color, s.dashed, Some(s.marker));
    }
    out.push_str("</svg>\n");
    out
}

/// Renders a grouped bar chart with each bar's value written above it.
pub(crate) fn bar_chart(c: &BarChart) -> String {
    let values: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.2.iter().flatten().copied())
        .filter(|v| v.is_finite() && (!c.y.log || *v > 0.0))
        .collect();
    let mut out = String::new();
    header(&mut out, &c.title, &c.subtitle);
    if values.is_empty() || c.groups.is_empty() {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"16\" {FONT}>no data</text></svg>",
            W / 2.0,
            H / 2.0
        );
        return out;
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (y0, y1) = range(c.y.log, lo, hi);
    let ys = Scale::new(c.y.log, y0, y1, BOTTOM, TOP);
    axes(&mut out, None, (&ys, &c.y), "");

    let group_w = (RIGHT - LEFT) / c.groups.len() as f64;
    let n = c.series.len().max(1) as f64;
    let bar_w = (group_w * 0.7 / n).min(70.0);
    let base = if c.y.log { y0 } else { 0f64.max(y0) };
    for (g, name) in c.groups.iter().enumerate() {
        let gx = LEFT + group_w * (g as f64 + 0.5);
        let _ = writeln!(
            out,
            "<text x=\"{gx:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" {FONT}>{}</text>",
            BOTTOM + 20.0,
            esc(name)
        );
        for (i, (_, color, vals)) in c.series.iter().enumerate() {
            let x = gx - bar_w * n / 2.0 + bar_w * i as f64;
            match vals.get(g).copied().flatten() {
                Some(v) if v.is_finite() && (!c.y.log || v > 0.0) => {
                    let (yt, yb) = (ys.px(v), ys.px(base));
                    let _ = writeln!(
                        out,
                        "<rect x=\"{:.1}\" y=\"{yt:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"/>\
                         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" {FONT}>{}</text>",
                        x + 1.0,
                        bar_w - 2.0,
                        (yb - yt).max(0.5),
                        x + bar_w / 2.0,
                        yt - 5.0,
                        esc(&(c.y.fmt)(v))
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#999\" {FONT}>n/a</text>",
                        x + bar_w / 2.0,
                        BOTTOM - 5.0
                    );
                }
            }
        }
    }
    for (i, (name, color, _)) in c.series.iter().enumerate() {
        legend_entry(&mut out, i, name, color, false, None);
    }
    out.push_str("</svg>\n");
    out
}

/// A count or rate with an SI suffix: 1.5k, 20M, 3.2G.
pub(crate) fn si(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{}{s}", three_digits(v / d))
}

/// A duration in seconds, with a unit: 12 ns, 3.4 µs, 56 ms, 1.2 s.
pub(crate) fn secs(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    let (d, u) = if a >= 1.0 {
        (1.0, "s")
    } else if a >= 1e-3 {
        (1e-3, "ms")
    } else if a >= 1e-6 {
        (1e-6, "µs")
    } else {
        (1e-9, "ns")
    };
    format!("{} {u}", three_digits(v / d))
}

/// About three significant digits, trailing zeros dropped: 123, 12.3, 1.23, 5.
fn three_digits(x: f64) -> String {
    let t = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// Nanoseconds: "18 ns", "1.2 µs".
pub(crate) fn nanos(v: f64) -> String {
    secs(v * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(1000.0), "1k");
        assert_eq!(si(18_637_479.5), "18.6M");
        assert_eq!(si(2.5), "2.5");
        assert_eq!(secs(0.0536), "53.6 ms");
        assert_eq!(secs(1.0), "1 s");
        assert_eq!(nanos(209.0), "209 ns");
        assert_eq!(nanos(1500.0), "1.5 µs");
    }

    #[test]
    fn log_range_is_whole_decades() {
        assert_eq!(range(true, 2.0e6, 2.0e7), (1e6, 1e8));
        assert_eq!(range(true, 1000.0, 100_000.0), (1e3, 1e5));
    }

    #[test]
    fn charts_are_svg() {
        let s = line_chart(&LineChart {
            title: "t <&>".into(),
            subtitle: String::new(),
            x: Axis {
                label: "x",
                log: true,
                fmt: si,
            },
            y: Axis {
                label: "y",
                log: true,
                fmt: secs,
            },
            series: vec![Series {
                name: "a".into(),
                color: "#000",
                dashed: true,
                marker: Marker::Square,
                points: vec![(1000.0, 0.01), (10_000.0, 1.0), (0.0, 1.0)],
            }],
            guides: vec![],
        });
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("t &lt;&amp;&gt;"));
        let b = bar_chart(&BarChart {
            title: "b".into(),
            subtitle: String::new(),
            y: Axis {
                label: "ns",
                log: false,
                fmt: nanos,
            },
            groups: vec!["g".into()],
            series: vec![
                ("a".into(), "#000", vec![Some(3.0)]),
                ("b".into(), "#111", vec![None]),
            ],
        });
        assert!(b.contains("n/a") && b.contains("<rect"));
    }
}
