//! The report's SVG charts, built with `plotters`' own chart builder: `ChartBuilder` for
//! the frame, `configure_mesh` for axes, ticks, grid and labels (its log scale puts them on
//! the decades), `LineSeries`/`DashedLineSeries` and its marker elements for lines, its
//! rectangles for bars, `configure_series_labels` for the legend (inside the plot, where
//! `plotters` draws it).
//! What is ours: the data ranges (whole decades on a log axis, from zero on a linear one) and
//! the value written over each bar. No font is loaded: `plotters` is built without its font
//! features, so text is written as SVG `<text>` and the viewer picks the font.
//!
//! Line charts are log-log (every one the report draws is); a bar chart's y axis is linear
//! or log.

use plotters::chart::SeriesAnno;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

const W: u32 = 820;
const H: u32 = 480;
const FAMILY: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GUIDE: RGBColor = RGBColor(0x88, 0x88, 0x88);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const GRID_MINOR: RGBColor = RGBColor(0xf3, 0xf3, 0xf3);

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// One line of a line chart: (x, y) points, drawn in x order; points a log axis cannot show
/// are left out.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) color: RGBColor,
    pub(crate) dashed: bool,
    pub(crate) marker: Marker,
    pub(crate) points: Vec<(f64, f64)>,
}

/// A thin dotted reference line through two points, named in the legend (e.g. "∝ k²").
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

impl Axis {
    pub(crate) const fn log(label: &'static str, fmt: fn(f64) -> String) -> Axis {
        Axis {
            label,
            log: true,
            fmt,
        }
    }
    pub(crate) const fn linear(label: &'static str, fmt: fn(f64) -> String) -> Axis {
        Axis {
            label,
            log: false,
            fmt,
        }
    }
}

impl Series {
    pub(crate) fn new(
        name: String,
        color: RGBColor,
        dashed: bool,
        marker: Marker,
        points: Vec<(f64, f64)>,
    ) -> Series {
        Series {
            name,
            color,
            dashed,
            marker,
            points,
        }
    }
}

/// A log-log line chart.
#[derive(Debug, Clone)]
pub(crate) struct LineChart {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) x: Axis,
    pub(crate) y: Axis,
    pub(crate) series: Vec<Series>,
    pub(crate) guides: Vec<Guide>,
}

impl LineChart {
    pub(crate) fn new(
        title: &str,
        subtitle: &str,
        x: Axis,
        y: Axis,
        series: Vec<Series>,
    ) -> LineChart {
        let (title, subtitle, guides) = (title.into(), subtitle.into(), Vec::new());
        LineChart {
            title,
            subtitle,
            x,
            y,
            series,
            guides,
        }
    }
}

/// A grouped bar chart: one group per category, one bar per series in each group.
#[derive(Debug, Clone)]
pub(crate) struct BarChart {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) y: Axis,
    pub(crate) groups: Vec<String>,
    /// (name, color, one value per group; `None`: no bar, "n/a").
    pub(crate) series: Vec<(String, RGBColor, Vec<Option<f64>>)>,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a chart: {e}")
}

/// The text style of `px` pixels (`plotters`' SVG backend writes `font-size` as the size
/// given over 1.24).
fn font(px: u32) -> TextStyle<'static> {
    (FAMILY, f64::from(px) * 1.24).into()
}

/// The axis range for values in `lo..=hi`: whole decades on a log axis, from zero (or the
/// minimum if negative) to 8% over the maximum on a linear one.
fn range(log: bool, lo: f64, hi: f64) -> (f64, f64) {
    if log {
        let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
        (10f64.powf(lo), 10f64.powf(hi.max(lo + 1.0)))
    } else {
        let hi = if hi > 0.0 { hi * 1.08 } else { 1.0 };
        (lo.min(0.0), hi)
    }
}

/// An SVG of `panels` charts one above the other; `draw` draws panel `i` on its area, under
/// its title and subtitle.
fn svg(
    titles: &[(&str, &str)],
    mut draw: impl FnMut(usize, &Area<'_>) -> Result<(), String>,
) -> Result<String, String> {
    let mut out = String::new();
    {
        let n = titles.len().max(1);
        let root = SVGBackend::with_string(&mut out, (W, H * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        for (i, (area, (title, subtitle))) in
            root.split_evenly((n, 1)).iter().zip(titles).enumerate()
        {
            let area = area
                .titled(title, (FAMILY, 17.0 * 1.24, FontStyle::Bold).into_font())
                .map_err(err)?;
            let area = area.titled(subtitle, font(12).color(&GREY)).map_err(err)?;
            draw(i, &area)?;
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// "no data", for a chart without any point.
fn no_data(area: &Area<'_>) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let style = font(16).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Center,
    ));
    area.draw(&Text::new("no data", (w as i32 / 2, h as i32 / 2), style))
        .map_err(err)
}

/// The marker `m` of `color` at each point of `pts`, as a series.
fn marks<'c, 'a>(
    ch: &'c mut LogChart<'a>,
    pts: &[(f64, f64)],
    m: Marker,
    color: RGBColor,
) -> Result<&'c mut SeriesAnno<'a, SVGBackend<'a>>, String> {
    let (s, at) = (color.filled(), |p| EmptyElement::at(p));
    match m {
        Marker::Circle => ch.draw_series(pts.iter().map(|&p| Circle::new(p, 4, s))),
        Marker::Square => ch.draw_series(
            pts.iter()
                .map(|&p| at(p) + Rectangle::new([(-4, -4), (4, 4)], s)),
        ),
        Marker::Triangle => ch.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 5, s))),
        Marker::Diamond => ch.draw_series(
            pts.iter()
                .map(|&p| at(p) + Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], s)),
        ),
    }
    .map_err(err)
}

type LogChart<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

/// A builder on `area`: margins and label areas.
fn builder<'b, 'a>(area: &'b Area<'a>) -> ChartBuilder<'b, 'a, SVGBackend<'a>> {
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(76);
    b
}

/// The chart's legend, in the upper left corner of its plot (`plotters` draws series labels
/// inside the plot area, clipped to it), over a light veil.
fn legend<'a, X: Ranged, Y: Ranged>(
    ch: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> Result<(), String> {
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .legend_area_size(40)
        .label_font(font(12))
        .background_style(WHITE.mix(0.85))
        .border_style(GRID)
        .draw()
        .map_err(err)
}

/// Renders line charts one above the other. A chart without any point shows "no data".
pub(crate) fn line_charts(charts: &[LineChart]) -> Result<String, String> {
    let titles: Vec<(&str, &str)> = charts
        .iter()
        .map(|c| (c.title.as_str(), c.subtitle.as_str()))
        .collect();
    svg(&titles, |i, area| {
        let c = &charts[i];
        let shown = |p: &(f64, f64)| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite();
        let guides = c.guides.iter().flat_map(|g| [g.from, g.to]);
        let pts: Vec<(f64, f64)> = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .chain(guides)
            .filter(shown)
            .collect();
        if pts.is_empty() {
            return no_data(area);
        }
        let fold = |f: fn(&(f64, f64)) -> f64| {
            pts.iter()
                .map(f)
                .fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(v), b.max(v)))
        };
        let ((x0, x1), (y0, y1)) = (fold(|p| p.0), fold(|p| p.1));
        let ((x0, x1), (y0, y1)) = (range(true, x0, x1), range(true, y0, y1));
        let mut ch = builder(area)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(err)?;
        let (xf, yf) = (|v: &f64| (c.x.fmt)(*v), |v: &f64| (c.y.fmt)(*v));
        ch.configure_mesh()
            .x_desc(c.x.label)
            .y_desc(c.y.label)
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(font(12))
            .axis_desc_style(font(13))
            .bold_line_style(GRID)
            .light_line_style(GRID_MINOR)
            .draw()
            .map_err(err)?;
        for g in &c.guides {
            let style = GUIDE.stroke_width(1);
            ch.draw_series(DashedLineSeries::new([g.from, g.to], 2, 3, style))
                .map_err(err)?
                .label(&g.label)
                .legend(move |(x, y)| DashedPathElement::new([(x, y), (x + 30, y)], 2, 3, style));
        }
        for s in &c.series {
            let mut p: Vec<(f64, f64)> = s.points.iter().copied().filter(shown).collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (color, dashed, m) = (s.color, s.dashed, s.marker);
            let line = color.stroke_width(2);
            if dashed {
                ch.draw_series(DashedLineSeries::new(p.clone(), 6, 4, line))
                    .map_err(err)?;
            } else {
                ch.draw_series(LineSeries::new(p.clone(), line))
                    .map_err(err)?;
            }
            let dash = if dashed { (6, 4) } else { (30, 0) };
            // The legend's sample: 30 px of the line with the marker in the middle.
            let line = move |at| {
                EmptyElement::at(at)
                    + DashedPathElement::new([(0, 0), (30, 0)], dash.0, dash.1, line)
            };
            let (anno, f) = (marks(&mut ch, &p, m, color)?.label(&s.name), color.filled());
            match m {
                Marker::Circle => anno.legend(move |at| line(at) + Circle::new((15, 0), 4, f)),
                Marker::Square => {
                    anno.legend(move |at| line(at) + Rectangle::new([(11, -4), (19, 4)], f))
                }
                Marker::Triangle => {
                    anno.legend(move |at| line(at) + TriangleMarker::new((15, 0), 5, f))
                }
                Marker::Diamond => anno.legend(move |at| {
                    line(at) + Polygon::new(vec![(15, -6), (21, 0), (15, 6), (9, 0)], f)
                }),
            };
        }
        legend(&mut ch)
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
    svg(&[(&c.title, &c.subtitle)], |_, area| {
        if values.is_empty() || c.groups.is_empty() {
            return no_data(area);
        }
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (y0, y1) = range(log, lo, hi);
        if log {
            bars(area, c, (y0..y1).log_scale(), y0)
        } else {
            bars(area, c, y0..y1, 0f64.max(y0))
        }
    })
}

/// The bars of `c` on the y scale `y`, standing on `base`. x counts hundredths of a group:
/// group g spans `100·g..100·(g+1)`, its name under its centre.
fn bars<Y>(area: &Area<'_>, c: &BarChart, y: Y, base: f64) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let groups = c.groups.len();
    let centres = (0..groups as i32).map(|g| 100 * g + 50).collect();
    let x = (0..100 * groups as i32).with_key_points(centres);
    let mut ch = builder(area).build_cartesian_2d(x, y).map_err(err)?;
    let name = |v: &i32| {
        c.groups
            .get((v / 100).max(0) as usize)
            .cloned()
            .unwrap_or_default()
    };
    let yf = |v: &f64| (c.y.fmt)(*v);
    ch.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&name)
        .y_label_formatter(&yf)
        .y_desc(c.y.label)
        .label_style(font(12))
        .x_label_style(font(13))
        .axis_desc_style(font(13))
        .bold_line_style(GRID)
        .light_line_style(GRID_MINOR)
        .draw()
        .map_err(err)?;
    let n = c.series.len().max(1) as f64;
    // 70% of a group split between the series, at most 70 px a bar.
    let px = f64::from(ch.plotting_area().dim_in_pixel().0) / groups as f64 / 100.0;
    let w = (70.0 / n).min(70.0 / px) as i32;
    let n = n as i32;
    let label = font(11).pos(plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Bottom,
    ));
    for (i, (series, color, vals)) in c.series.iter().enumerate() {
        let x = |g: usize| 100 * g as i32 + 50 - w * n / 2 + w * i as i32;
        let bar = |(g, v): (usize, &Option<f64>)| {
            v.filter(|v| v.is_finite())
                .map(|v| Rectangle::new([(x(g), v), (x(g) + w, base)], color.filled()))
        };
        let color = *color;
        ch.draw_series(vals.iter().enumerate().filter_map(bar))
            .map_err(err)?
            .label(series)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 30, y + 6)], color.filled()));
        let text = vals.iter().enumerate().map(|(g, v)| {
            let (at, t, style) = match v {
                Some(v) => ((x(g) + w / 2, *v), (c.y.fmt)(*v), label.clone()),
                None => (
                    (x(g) + w / 2, base),
                    "n/a".to_string(),
                    label.clone().color(&GREY),
                ),
            };
            EmptyElement::at(at) + Text::new(t, (0, -4), style)
        });
        ch.draw_series(text).map_err(err)?;
    }
    legend(&mut ch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::format::{nanos, secs, si};

    #[test]
    fn charts_are_svg() {
        let series = vec![Series {
            name: "a".into(),
            color: BLACK,
            dashed: true,
            marker: Marker::Square,
            points: vec![(1000.0, 0.01), (10_000.0, 1.0), (0.0, 1.0)],
        }];
        let axis = |fmt| Axis {
            label: "x",
            log: true,
            fmt,
        };
        let c = LineChart {
            title: "t <&>".into(),
            subtitle: String::new(),
            x: axis(si),
            y: axis(secs),
            series,
            guides: vec![],
        };
        let s = line_charts(&[c.clone(), c]).unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("t &lt;&amp;&gt;"), "{s}");
        assert!(s.contains("\n10k\n") && s.contains("\n1 s\n"), "{s}");
        let mut b = BarChart {
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
        };
        let s = bar_chart(&b).unwrap();
        assert!(
            s.contains("n/a") && s.contains("<rect") && s.contains("\ng\n"),
            "{s}"
        );
        b.groups.clear();
        assert!(bar_chart(&b).unwrap().contains("no data"));
    }
}
