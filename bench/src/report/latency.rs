//! Latency under load (WORKLOADS.md "latency"): the percentiles of the round trips with
//! hog=0 and hog=1, otter against the BEAM, and `latency.svg`.

use std::fmt::Write as _;

use serde_json::Value;

use super::cell::{Cell, Results, factor, rate};
use super::format;
use super::plot::{self, Axis, BarChart};
use super::{ERLANG, OTTER, write_svg};
use crate::suite::{Impl, LATENCY_B, LATENCY_W, Options, Sizes, latency_id};

/// The percentiles of the JSON line: (its key, its name in the report).
pub(super) const PERCENTILES: [(&str, &str); 4] = [
    ("p50_us", "p50"),
    ("p99_us", "p99"),
    ("p999_us", "p99.9"),
    ("max_us", "max"),
];

/// The field `key` of a run's line (µs, or a count).
pub(super) fn field(key: &'static str) -> impl Fn(&Value) -> Option<f64> + Copy {
    move |v: &Value| v[key].as_f64()
}

/// µs for people: "0.42 µs", "12.1 ms".
pub(super) fn micros(us: f64) -> String {
    format::secs(us * 1e-6)
}

/// otter / erlang of two medians: "2.31×", or "**1/40**" when otter's is shorter (lower is
/// better).
fn over(o: Option<f64>, e: Option<f64>) -> String {
    match (o, e) {
        (Some(o), Some(e)) if e > 0.0 && o > 0.0 => {
            let f = o / e;
            if f < 1.0 {
                format!("**1/{}**", factor(1.0 / f))
            } else {
                format!("{}×", factor(f))
            }
        }
        _ => "—".into(),
    }
}

/// Appends this section to `md`.
pub(super) fn section(
    md: &mut String,
    res: &Results<'_>,
    s: &Sizes,
    o: &Options,
) -> Result<(), String> {
    let _ = writeln!(
        md,
        "\n## Latency — round trips while the runtime is loaded\n"
    );
    let _ = writeln!(
        md,
        "WORKLOADS.md \"latency\" (issue 24): r = {} round trips between two processes, each \
         timed on its own, while a ring of b = {LATENCY_B} processes passes {} tokens, each \
         member computing for w = {LATENCY_W} µs per message (a busy loop on the monotonic \
         clock); with hog=1 one more process computes without yielding for the whole run. \
         Percentiles by nearest rank; the median over the repetitions of each. The figure of \
         merit is the tail; \"otter / erlang\" is bold (1/N) where otter's is shorter.\n",
        format::si(s.latency_r as f64),
        LATENCY_B / 2
    );
    let _ = writeln!(
        md,
        "otter's scheduler is cooperative: the hog holds one worker for the whole run; \
         the runtime's watchdog thread (a look every 5 ms) hands on what was queued on it \
         and starts a spare thread in its place, so the rest keeps as many workers and the \
         OS time-slices the hog's thread with them (docs/design/0026, 0027). The hog yields \
         once when no round trip has completed for 70 ms (50 ms + 4·b·w), so that a run \
         ends even if nothing stood in for its worker; \"hog yields\" counts those in the \
         timed part (the BEAM preempts its hog and never gets there).\n"
    );
    let _ = writeln!(
        md,
        "| hog | measure | otter | erlang | otter / erlang |\n|---|---|---|---|---|"
    );
    let cells = |hog| {
        let id = latency_id(s, hog);
        (res.cell(&id, Impl::Otter), res.cell(&id, Impl::Erlang))
    };
    for hog in [0, 1] {
        let (co, ce) = cells(hog);
        for (key, name) in PERCENTILES {
            let f = field(key);
            let _ = writeln!(
                md,
                "| {hog} | {name} | {} | {} | {} |",
                co.show(f, micros),
                ce.show(f, micros),
                over(co.median(f), ce.median(f))
            );
        }
        let f = field("background_msgs_per_s");
        let _ = writeln!(
            md,
            "| {hog} | background msgs/s | {} | {} | |",
            co.show(f, rate),
            ce.show(f, rate)
        );
        if hog == 1 {
            let f = field("hog_yields");
            let _ = writeln!(
                md,
                "| 1 | hog yields (stalls of 70 ms) | {} | {} | |",
                co.show(f, |x| format!("{x:.0}")),
                ce.show(f, |x| format!("{x:.0}"))
            );
        }
    }
    let bars = |cell: &Cell<'_>| -> Vec<Option<f64>> {
        PERCENTILES
            .iter()
            .map(|(key, _)| cell.median(field(key)))
            .collect()
    };
    let ((o0, e0), (o1, e1)) = (cells(0), cells(1));
    let join = |a: Vec<Option<f64>>, b: Vec<Option<f64>>| -> Vec<Option<f64>> {
        a.into_iter().chain(b).collect()
    };
    let svg = plot::bar_chart(&BarChart {
        title: "Round-trip latency under load".into(),
        subtitle: format!(
            "r = {}, b = {LATENCY_B}, w = {LATENCY_W} µs; hog=1: one process never yields; \
             log scale, lower is better",
            format::si(s.latency_r as f64)
        ),
        y: Axis {
            label: "round trip",
            log: true,
            fmt: micros,
        },
        groups: [0, 1]
            .iter()
            .flat_map(|hog| PERCENTILES.iter().map(move |(_, n)| format!("{n} h{hog}")))
            .collect(),
        series: vec![
            ("otter".into(), OTTER, join(bars(&o0), bars(&o1))),
            ("erlang".into(), ERLANG, join(bars(&e0), bars(&e1))),
        ],
    })?;
    write_svg(o, "latency.svg", &svg)?;
    let _ = writeln!(
        md,
        "\n![round-trip percentiles under load, hog=0 (h0) and hog=1 (h1)](latency.svg)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::over;

    #[test]
    fn ratios() {
        assert_eq!(over(Some(0.3), Some(3180.0)), "**1/10600**");
        assert_eq!(over(Some(2.0), Some(1.0)), "2.00×");
        assert_eq!(over(Some(1.0), Some(1.0)), "1.00×");
        assert_eq!(over(None, Some(1.0)), "—");
    }
}
