//! The report's SVG charts, drawn with `plotters` (SVG backend): line charts (linear or log
//! axes) and grouped bar charts, with title, subtitle, axes, ticks, grid, labels and a legend
//! right of the plot. No font is loaded: `plotters` is built without its font features, so
//! text is written as SVG `<text>` elements and the viewer picks the font.
//!
//! What is ours: the axis ranges (whole decades on a log axis, nice bounds from zero on a
//! linear one) and their ticks, so a chart's scale does not depend on the library's choice;
//! and the point markers (squares and diamonds are polygons, `plotters` has none).

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::element::{DashedPathElement, Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

/// Canvas size and the plot area inside it.
const W: u32 = 820;
const H: u32 = 480;
const LEFT: i32 = 86;
const RIGHT: i32 = 590;
const TOP: i32 = 56;
const BOTTOM: i32 = 410;
const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const GRID_MINOR: RGBColor = RGBColor(0xf0, 0xf0, 0xf0);
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GUIDE: RGBColor = RGBColor(0x88, 0x88, 0x88);
const GUIDE_TEXT: RGBColor = RGBColor(0x66, 0x66, 0x66);
const NA: RGBColor = RGBColor(0x99, 0x99, 0x99);

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
    pub(crate) color: RGBColor,
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
    pub(crate) series: Vec<(String, RGBColor, Vec<Option<f64>>)>,
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

/// Major ticks (labelled, with a grid line) and minor ticks (a light grid line) of the axis
/// `lo..=hi`: every decade and its 2..9 multiples on a log axis, a nice step on a linear one.
fn ticks(log: bool, lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    if log {
        let (a, b) = (lo.log10().round() as i32, hi.log10().round() as i32);
        let majors = (a..=b).map(|e| 10f64.powi(e)).collect();
        let minors = (a..b)
            .flat_map(|e| (2..10).map(move |m| f64::from(m) * 10f64.powi(e)))
            .collect();
        (majors, minors)
    } else {
        let step = nice_step((hi - lo) / 5.0);
        let mut v = (lo / step).ceil() * step;
        let mut majors = Vec::new();
        while v <= hi + step * 1e-9 {
            majors.push(v);
            v += step;
        }
        (majors, Vec::new())
    }
}

/// The text style of `px` pixels. `plotters`' SVG backend writes `font-size` as the size
/// given over 1.24.
fn text(px: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, px * 1.24).into_font())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'r, 'a> = ChartContext<'r, SVGBackend<'a>, Cartesian2d<Scale, Scale>>;

/// `plotters`' error as ours.
fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a chart: {e}")
}

/// Renders on a white canvas with the title and subtitle; `draw` draws the rest.
fn canvas(
    title: &str,
    subtitle: &str,
    draw: impl FnOnce(&Area<'_>) -> Result<(), String>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let centre = (LEFT + RIGHT) / 2;
        let anchor = Pos::new(HPos::Center, VPos::Bottom);
        let bold = TextStyle::from((FONT, 17.0 * 1.24, FontStyle::Bold).into_font()).pos(anchor);
        root.draw(&Text::new(title.to_string(), (centre, 24), bold))
            .map_err(err)?;
        if !subtitle.is_empty() {
            let style = text(12.0).color(&GREY).pos(anchor);
            root.draw(&Text::new(subtitle.to_string(), (centre, 42), style))
                .map_err(err)?;
        }
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// "no data", for a chart without any point.
fn no_data(root: &Area<'_>) -> Result<(), String> {
    let style = text(16.0).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new("no data", (W as i32 / 2, H as i32 / 2), style))
        .map_err(err)
}

/// One axis for `plotters`: its linear or logarithmic scale (`plotters`' own), with our
/// ticks as its key points (majors labelled; minors light grid lines).
struct Scale {
    mapping: Mapping,
    majors: Vec<f64>,
    minors: Vec<f64>,
}

enum Mapping {
    Linear(RangedCoordf64),
    Log(LogCoord<f64>),
}

impl Scale {
    fn new(log: bool, lo: f64, hi: f64) -> Scale {
        let (majors, minors) = ticks(log, lo, hi);
        let mapping = if log {
            Mapping::Log((lo..hi).log_scale().into())
        } else {
            Mapping::Linear((lo..hi).into())
        };
        Scale {
            mapping,
            majors,
            minors,
        }
    }
}

impl Ranged for Scale {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        match &self.mapping {
            Mapping::Linear(r) => r.map(v, limit),
            Mapping::Log(r) => r.map(v, limit),
        }
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minors.clone()
        } else {
            self.majors.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        match &self.mapping {
            Mapping::Linear(r) => r.range(),
            Mapping::Log(r) => r.range(),
        }
    }
}

/// A chart of the plot area `LEFT..RIGHT` × `TOP..BOTTOM` on `root`, with its frame, grid,
/// ticks and axis labels drawn; `x` `None` draws no x grid or ticks (bar charts: the x
/// labels are the group names `xfmt` gives).
fn chart<'r, 'a>(
    root: &'r Area<'a>,
    xs: Scale,
    ys: Scale,
    x: (&str, &dyn Fn(f64) -> String, bool),
    y: &Axis,
) -> Result<Chart<'r, 'a>, String> {
    let mut c = ChartBuilder::on(root)
        .margin_top(TOP as u32)
        .margin_right(W - RIGHT as u32)
        .margin_left(14)
        .margin_bottom(14)
        .x_label_area_size(H - BOTTOM as u32 - 14)
        .y_label_area_size(LEFT as u32 - 14)
        .build_cartesian_2d(xs, ys)
        .map_err(err)?;
    let (x_label, xfmt, x_grid) = x;
    let yfmt = |v: &f64| (y.fmt)(*v);
    let xfmt = |v: &f64| xfmt(*v);
    let mut mesh = c.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y.label)
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .bold_line_style(GRID)
        .light_line_style(GRID_MINOR)
        .axis_style(INK)
        .label_style(text(12.0))
        .axis_desc_style(text(13.0))
        .set_all_tick_mark_size(6);
    if !x_grid {
        mesh.disable_x_mesh().x_label_style(text(13.0));
    }
    mesh.draw().map_err(err)?;
    let (xr, yr) = (c.x_range(), c.y_range());
    c.draw_series(std::iter::once(Rectangle::new(
        [(xr.start, yr.start), (xr.end, yr.end)],
        INK.stroke_width(1),
    )))
    .map_err(err)?;
    Ok(c)
}

/// The legend, right of the plot area on `root` (outside the chart, which `plotters`' own
/// series labels cannot reach): one sample and name per series.
fn legend(root: &Area<'_>, entries: Vec<(String, Sample)>) -> Result<(), String> {
    let style = text(12.0).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, sample)) in entries.into_iter().enumerate() {
        let (x, y) = (RIGHT + 16, TOP + 10 + 22 * i as i32);
        root.draw(&LegendSample { at: (x, y), sample })
            .map_err(err)?;
        root.draw(&Text::new(name, (x + 38, y), style.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// A point marker at `at`, as a `plotters` element (it has circles and triangles, but no
/// squares or diamonds).
struct Mark<C> {
    at: C,
    marker: Marker,
    color: RGBColor,
}

impl<'a, C> PointCollection<'a, C> for &'a Mark<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Mark<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let c = &self.color;
        match self.marker {
            Marker::Circle => backend.draw_circle((x, y), 4, c, true),
            Marker::Square => backend.draw_rect((x - 4, y - 4), (x + 4, y + 4), c, true),
            Marker::Triangle => {
                backend.fill_polygon([(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)], c)
            }
            Marker::Diamond => {
                backend.fill_polygon([(x, y - 6), (x + 6, y), (x, y + 6), (x - 6, y)], c)
            }
        }
    }
}

/// What a legend entry shows of its series.
#[derive(Clone, Copy)]
enum Sample {
    /// 30 px of the series' line, solid or dashed like it (6 px dashes, 4 px gaps), with its
    /// marker in the middle.
    Line {
        color: RGBColor,
        dashed: bool,
        marker: Marker,
    },
    /// A 30 × 12 px block of the bars' colour.
    Bar(RGBColor),
}

/// A legend sample at `at` (the middle of its left end).
struct LegendSample {
    at: BackendCoord,
    sample: Sample,
}

impl<'a> PointCollection<'a, BackendCoord> for &'a LegendSample {
    type Point = &'a BackendCoord;
    type IntoIter = std::iter::Once<&'a BackendCoord>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for LegendSample {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        dim: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        match self.sample {
            Sample::Bar(color) => backend.draw_rect((x, y - 6), (x + 30, y + 6), &color, true),
            Sample::Line {
                color,
                dashed,
                marker,
            } => {
                let dashes: &[(i32, i32)] = if dashed {
                    &[(0, 6), (10, 16), (20, 26)]
                } else {
                    &[(0, 30)]
                };
                for &(a, b) in dashes {
                    backend.draw_line((x + a, y), (x + b, y), &color.stroke_width(2))?;
                }
                let mark = Mark {
                    at: (),
                    marker,
                    color,
                };
                mark.draw(std::iter::once((x + 15, y)), backend, dim)
            }
        }
    }
}

/// Renders a line chart. A chart without any point shows "no data".
pub(crate) fn line_chart(c: &LineChart) -> Result<String, String> {
    let ok = |log: bool, v: f64| v.is_finite() && (!log || v > 0.0);
    let shown = |p: &(f64, f64)| ok(c.x.log, p.0) && ok(c.y.log, p.1);
    let pts: Vec<(f64, f64)> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(c.guides.iter().flat_map(|g| [g.from, g.to]))
        .filter(shown)
        .collect();
    canvas(&c.title, &c.subtitle, |root| {
        if pts.is_empty() {
            return no_data(root);
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
        {
            let (xs, ys) = (Scale::new(c.x.log, x0, x1), Scale::new(c.y.log, y0, y1));
            let mut ch = chart(root, xs, ys, (c.x.label, &c.x.fmt, true), &c.y)?;
            for g in c.guides.iter().filter(|g| shown(&g.from) && shown(&g.to)) {
                ch.draw_series(std::iter::once(DashedPathElement::new(
                    [g.from, g.to],
                    2,
                    3,
                    GUIDE.stroke_width(1),
                )))
                .map_err(err)?;
                let label = Text::new(
                    g.label.clone(),
                    (4, 0),
                    text(12.0)
                        .color(&GUIDE_TEXT)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                );
                ch.draw_series(std::iter::once(EmptyElement::at(g.to) + label))
                    .map_err(err)?;
            }
            for s in &c.series {
                let mut p: Vec<(f64, f64)> = s.points.iter().copied().filter(shown).collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                let line = s.color.stroke_width(2);
                let (color, dashed, m) = (s.color, s.dashed, s.marker);
                if p.len() > 1 && dashed {
                    ch.draw_series(DashedLineSeries::new(p.clone(), 6, 4, line))
                        .map_err(err)?;
                } else if p.len() > 1 {
                    ch.draw_series(LineSeries::new(p.clone(), line))
                        .map_err(err)?;
                }
                let marks = p.iter().map(|&at| Mark {
                    at,
                    marker: m,
                    color,
                });
                ch.draw_series(marks).map_err(err)?;
            }
            let entries = c.series.iter().map(|s| {
                let sample = Sample::Line {
                    color: s.color,
                    dashed: s.dashed,
                    marker: s.marker,
                };
                (s.name.clone(), sample)
            });
            legend(root, entries.collect())
        }
    })
}

/// Renders a grouped bar chart with each bar's value written above it.
pub(crate) fn bar_chart(c: &BarChart) -> Result<String, String> {
    let log = c.y.log;
    let shown = |v: &f64| v.is_finite() && (!log || *v > 0.0);
    let values: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.2.iter().flatten().copied())
        .filter(shown)
        .collect();
    canvas(&c.title, &c.subtitle, |root| {
        if values.is_empty() || c.groups.is_empty() {
            return no_data(root);
        }
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (y0, y1) = range(log, lo, hi);
        let groups = c.groups.len() as f64;
        // x runs over the groups, 0..groups; group g is centred on g + 0.5.
        let group_name = |v: f64| {
            let g = v.floor().max(0.0) as usize;
            c.groups.get(g).cloned().unwrap_or_default()
        };
        {
            let mut xs = Scale::new(false, 0.0, groups);
            xs.majors = (0..c.groups.len()).map(|g| g as f64 + 0.5).collect();
            let ys = Scale::new(log, y0, y1);
            let mut ch = chart(root, xs, ys, ("", &group_name, false), &c.y)?;
            let n = c.series.len().max(1) as f64;
            // Bar width in groups: 70% of a group split between the series, at most 70 px.
            let px_per_group = f64::from(RIGHT - LEFT) / groups;
            let bar_w = (0.7 / n).min(70.0 / px_per_group);
            let px = 1.0 / px_per_group;
            let base = if log { y0 } else { 0f64.max(y0) };
            let value_style = text(11.0).pos(Pos::new(HPos::Center, VPos::Bottom));
            for (i, (_, color, vals)) in c.series.iter().enumerate() {
                let color = *color;
                let mut bars = Vec::new();
                let mut labels = Vec::new();
                for g in 0..c.groups.len() {
                    let x = g as f64 + 0.5 - bar_w * n / 2.0 + bar_w * i as f64;
                    let mid = x + bar_w / 2.0;
                    match vals.get(g).copied().flatten().filter(shown) {
                        Some(v) => {
                            bars.push(Rectangle::new(
                                [(x + px, v), (x + bar_w - px, base)],
                                color.filled(),
                            ));
                            let t = Text::new((c.y.fmt)(v), (0, -4), value_style.clone());
                            labels.push(EmptyElement::at((mid, v)) + t);
                        }
                        None => {
                            let style = value_style.clone().color(&NA);
                            let t = Text::new("n/a".to_string(), (0, -4), style);
                            labels.push(EmptyElement::at((mid, base)) + t);
                        }
                    }
                }
                ch.draw_series(bars).map_err(err)?;
                ch.draw_series(labels).map_err(err)?;
            }
            let entries = c
                .series
                .iter()
                .map(|(name, color, _)| (name.clone(), Sample::Bar(*color)));
            legend(root, entries.collect())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::format::{nanos, secs, si};

    #[test]
    fn log_range_is_whole_decades() {
        assert_eq!(range(true, 2.0e6, 2.0e7), (1e6, 1e8));
        assert_eq!(range(true, 1000.0, 100_000.0), (1e3, 1e5));
        let (majors, minors) = ticks(true, 1e3, 1e5);
        assert_eq!(majors, [1e3, 1e4, 1e5]);
        assert_eq!(minors.len(), 16);
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
                color: BLACK,
                dashed: true,
                marker: Marker::Square,
                points: vec![(1000.0, 0.01), (10_000.0, 1.0), (0.0, 1.0)],
            }],
            guides: vec![],
        })
        .unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("t &lt;&amp;&gt;"), "{s}");
        assert!(s.contains("\n10k\n") && s.contains("\n1 s\n"), "{s}");
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
                ("a".into(), BLACK, vec![Some(3.0)]),
                ("b".into(), WHITE, vec![None]),
            ],
        })
        .unwrap();
        assert!(
            b.contains("n/a") && b.contains("<rect") && b.contains("\ng\n"),
            "{b}"
        );
        let empty = bar_chart(&BarChart {
            groups: vec![],
            ..b_chart()
        })
        .unwrap();
        assert!(empty.contains("no data"));
    }

    fn b_chart() -> BarChart {
        BarChart {
            title: "b".into(),
            subtitle: String::new(),
            y: Axis {
                label: "ns",
                log: false,
                fmt: nanos,
            },
            groups: vec![],
            series: vec![],
        }
    }
}
