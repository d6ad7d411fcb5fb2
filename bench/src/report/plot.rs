//! The report's SVG charts, built with `plotters`' own chart builder: `ChartBuilder` for the
//! frame, `configure_mesh` for axes, ticks, grid and labels (its log scale puts them on the
//! decades), `LineSeries`/`DashedLineSeries` and marker elements for lines, rectangles for
//! bars, `configure_series_labels` for the legend (inside the plot, where `plotters` draws
//! it). What is ours: the data ranges (whole decades on a log axis, from zero on a linear
//! one) and the value written over each bar. No font is loaded: `plotters` is built without
//! its font features, so text is SVG `<text>` and the viewer picks the font.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::{DashedPathElement, DynElement};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::spec::Result;

const W: u32 = 820;
const H: u32 = 480;
const FAMILY: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const GREY: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
const GRID_MINOR: RGBColor = RGBColor(0xf3, 0xf3, 0xf3);

/// One line of a line chart: (x, y) points, drawn in x order, those a log axis cannot show
/// left out. Its marker is a circle, square, triangle or diamond (0 to 3, then again);
/// without one it is a thin reference line (e.g. "∝ k²").
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) name: String,
    pub(crate) color: RGBColor,
    pub(crate) dashed: bool,
    pub(crate) marker: Option<usize>,
    pub(crate) points: Vec<(f64, f64)>,
}

impl Line {
    /// A line without points or marker.
    pub(crate) fn new(name: String, color: RGBColor, dashed: bool) -> Line {
        let (marker, points) = (None, Vec::new());
        Line {
            name,
            color,
            dashed,
            marker,
            points,
        }
    }
}

/// An axis: its label, scale, and how tick values are written.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub(crate) label: String,
    pub(crate) log: bool,
    pub(crate) fmt: fn(f64) -> String,
}

/// What a chart draws.
#[derive(Debug, Clone)]
pub(crate) enum Plot {
    /// Lines over a log x axis (the y axis is log too: every line chart is log-log).
    Lines(Axis, Vec<Line>),
    /// Grouped bars: the groups' names, and the series.
    Bars(Vec<String>, Vec<Series>),
}

/// A series of bars: its name, color and one value per group (`None`: no bar, "n/a").
pub(crate) type Series = (String, RGBColor, Vec<Option<f64>>);

/// A chart: title, subtitle, y axis, and what it draws.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    pub(crate) title: String,
    pub(crate) subtitle: String,
    pub(crate) y: Axis,
    pub(crate) plot: Plot,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Frame<'a, X, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>;
/// How an axis writes its tick values.
type Fmt<'f, V> = &'f dyn Fn(&V) -> String;

fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a chart: {e}")
}

/// The text style of `px` pixels (the SVG backend writes `font-size` as the size over 1.24).
fn font(px: u32) -> TextStyle<'static> {
    (FAMILY, f64::from(px) * 1.24).into()
}

/// The axis range for values in `lo..=hi`: whole decades on a log axis, from zero (or the
/// minimum if negative) to 8% over the maximum on a linear one.
fn range(log: bool, lo: f64, hi: f64) -> (f64, f64) {
    if !log {
        return (lo.min(0.0), if hi > 0.0 { hi * 1.08 } else { 1.0 });
    }
    let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
    (10f64.powf(lo), 10f64.powf(hi.max(lo + 1.0)))
}

/// An SVG of `charts` one above the other. A chart without any value shows "no data".
pub(crate) fn svg(charts: &[Chart]) -> Result<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (W, H * charts.len().max(1) as u32));
        let root = root.into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let areas = root.split_evenly((charts.len().max(1), 1));
        for (area, c) in areas.iter().zip(charts) {
            let bold = (FAMILY, 17.0 * 1.24, FontStyle::Bold).into_font();
            let area = area.titled(&c.title, bold).map_err(err)?;
            let grey = font(12).color(&GREY);
            let area = area.titled(&c.subtitle, grey).map_err(err)?;
            let drawn = match &c.plot {
                Plot::Lines(x, lines) => line_chart(&area, &c.y, x, lines)?,
                Plot::Bars(groups, series) => bar_chart(&area, &c.y, groups, series)?,
            };
            if !drawn {
                let (w, h) = area.dim_in_pixel();
                let style = font(16).pos(Pos::new(HPos::Center, VPos::Center));
                let at = (w as i32 / 2, h as i32 / 2);
                area.draw(&Text::new("no data", at, style)).map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// A chart's frame on `area` with the x and y ranges given, its axes and grid drawn.
fn frame<'a, X, Y>(
    area: &Area<'a>,
    (xs, ys): (X, Y),
    (x_fmt, x_label): (Fmt<'_, X::Value>, Option<&str>),
    y: &Axis,
) -> Result<Frame<'a, X::CoordDescType, Y::CoordDescType>>
where
    X: AsRangedCoord,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<X::Value>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ch = ChartBuilder::on(area)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d(xs, ys)
        .map_err(err)?;
    let y_fmt = |v: &f64| (y.fmt)(*v);
    let mut mesh = ch.configure_mesh();
    mesh.x_label_formatter(x_fmt)
        .y_label_formatter(&y_fmt)
        .y_desc(&y.label);
    match x_label {
        Some(label) => mesh.x_desc(label),
        None => mesh.disable_x_mesh().x_label_style(font(13)),
    };
    mesh.label_style(font(12))
        .axis_desc_style(font(13))
        .bold_line_style(GRID)
        .light_line_style(GRID_MINOR)
        .draw()
        .map_err(err)?;
    Ok(ch)
}

/// The legend, in the plot's upper left corner (`plotters` draws it inside the plot area),
/// over a light veil.
fn legend<'a, X: Ranged, Y: Ranged>(ch: &mut Frame<'a, X, Y>) -> Result<()> {
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .legend_area_size(40)
        .label_font(font(12))
        .background_style(WHITE.mix(0.85))
        .border_style(GRID)
        .draw()
        .map_err(err)
}

/// Marker `m` filled with `color`, centred on its point.
fn glyph<DB: DrawingBackend>(m: usize, color: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
    let f = color.filled();
    match m % 4 {
        0 => Circle::new((0, 0), 4, f).into_dyn(),
        1 => Rectangle::new([(-4, -4), (4, 4)], f).into_dyn(),
        2 => TriangleMarker::new((0, 0), 5, f).into_dyn(),
        _ => Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], f).into_dyn(),
    }
}

/// Log-log lines on `area`; false if there is no point to draw.
fn line_chart(area: &Area<'_>, y: &Axis, x: &Axis, lines: &[Line]) -> Result<bool> {
    let shown = |p: &&(f64, f64)| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite();
    let pts: Vec<&(f64, f64)> = lines.iter().flat_map(|l| &l.points).filter(shown).collect();
    let span = |f: fn(&(f64, f64)) -> f64| {
        let values = pts.iter().map(|p| f(p));
        let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = range(true, lo, hi);
        (lo..hi).log_scale()
    };
    if pts.is_empty() {
        return Ok(false);
    }
    let x_fmt = |v: &f64| (x.fmt)(*v);
    let ranges = (span(|p| p.0), span(|p| p.1));
    let mut ch = frame(area, ranges, (&x_fmt, Some(&x.label)), y)?;
    for l in lines {
        let mut p: Vec<(f64, f64)> = l.points.iter().filter(shown).copied().collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        let style = l.color.stroke_width(if l.marker.is_some() { 2 } else { 1 });
        let dash = match (l.dashed, l.marker) {
            (false, _) => (30, 0),
            (true, Some(_)) => (6, 4),
            (true, None) => (2, 3),
        };
        if let Some(m) = l.marker {
            let marks = p.iter().map(|&at| EmptyElement::at(at) + glyph(m, l.color));
            ch.draw_series(marks).map_err(err)?;
        }
        let drawn = match l.dashed {
            true => ch.draw_series(DashedLineSeries::new(p, dash.0, dash.1, style)),
            false => ch.draw_series(LineSeries::new(p, style)),
        };
        // The legend's sample: 30 px of the line, with the marker in the middle.
        let (anno, color) = (drawn.map_err(err)?.label(&l.name), l.color);
        let sample =
            move |(x, y)| DashedPathElement::new([(x, y), (x + 30, y)], dash.0, dash.1, style);
        match l.marker {
            Some(m) => anno.legend(move |(x, y)| {
                EmptyElement::at((x + 15, y)) + sample((-15, 0)) + glyph(m, color)
            }),
            None => anno.legend(sample),
        };
    }
    legend(&mut ch).map(|()| true)
}

/// Grouped bars on `area` with each bar's value written above it; false if there is none.
fn bar_chart(area: &Area<'_>, y: &Axis, groups: &[String], series: &[Series]) -> Result<bool> {
    let shown = |v: &f64| v.is_finite() && (!y.log || *v > 0.0);
    let values = series.iter().flat_map(|s| s.2.iter().flatten().copied());
    let values: Vec<f64> = values.filter(shown).collect();
    if values.is_empty() || groups.is_empty() {
        return Ok(false);
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (y0, y1) = range(y.log, lo, hi);
    match y.log {
        true => bars(area, (y0..y1).log_scale(), y, y0, groups, series)?,
        false => bars(area, y0..y1, y, 0f64.max(y0), groups, series)?,
    }
    Ok(true)
}

/// The bars on the y scale `ys`, standing on `base`. x counts hundredths of a group: group g
/// spans `100·g..100·(g+1)`, its name under its centre.
fn bars<Y>(
    area: &Area<'_>,
    ys: Y,
    y: &Axis,
    base: f64,
    groups: &[String],
    series: &[Series],
) -> Result<()>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let g = groups.len() as i32;
    let x = (0..100 * g).with_key_points((0..g).map(|g| 100 * g + 50).collect());
    let name = |v: &i32| groups.get((v / 100).max(0) as usize).cloned();
    let name = |v: &i32| name(v).unwrap_or_default();
    let mut ch = frame(area, (x, ys), (&name, None), y)?;
    // 70% of a group split between the series, at most 70 px a bar.
    let n = series.len().max(1) as i32;
    let px = f64::from(ch.plotting_area().dim_in_pixel().0) / f64::from(g) / 100.0;
    let w = (70.0 / f64::from(n)).min(70.0 / px) as i32;
    let label = font(11).pos(Pos::new(HPos::Center, VPos::Bottom));
    let grey = label.clone().color(&GREY);
    for (i, (s, color, vals)) in series.iter().enumerate() {
        let x = |g: usize| 100 * g as i32 + 50 - w * n / 2 + w * i as i32;
        let f = color.filled();
        let bar = |(g, v): (usize, &Option<f64>)| {
            v.filter(|v| v.is_finite())
                .map(|v| Rectangle::new([(x(g), v), (x(g) + w, base)], f))
        };
        ch.draw_series(vals.iter().enumerate().filter_map(bar))
            .map_err(err)?
            .label(s)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 30, y + 6)], f));
        let text = vals.iter().enumerate().map(|(g, v)| {
            let (at, t, style) = match v {
                Some(v) => ((x(g) + w / 2, *v), (y.fmt)(*v), label.clone()),
                None => ((x(g) + w / 2, base), "n/a".into(), grey.clone()),
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
    use crate::report::charts::chart;

    #[test]
    fn charts_are_svg() {
        let mut c = chart("t <&> |  | log y secs | log x si").unwrap();
        let mut line = Line::new("a".into(), BLACK, true);
        line.points = vec![(1000.0, 0.01), (10_000.0, 1.0), (0.0, 1.0)];
        if let Plot::Lines(_, lines) = &mut c.plot {
            lines.push(line);
        }
        let s = svg(&[c.clone(), c]).unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("t &lt;&amp;&gt;"), "{s}");
        assert!(s.contains("\n10k\n") && s.contains("\n1 s\n"), "{s}");
        let mut b = chart("b |  | linear ns nanos").unwrap();
        let series = vec![
            ("a".into(), BLACK, vec![Some(3.0)]),
            ("b".into(), WHITE, vec![None]),
        ];
        b.plot = Plot::Bars(vec!["g".into()], series);
        let s = svg(&[b.clone()]).unwrap();
        let has = |t: &str| s.contains(t);
        assert!(has("n/a") && has("<rect") && has("\ng\n"), "{s}");
        b.plot = Plot::Bars(Vec::new(), Vec::new());
        assert!(svg(&[b]).unwrap().contains("no data"));
    }
}
