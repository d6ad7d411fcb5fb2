//! The echo workload (WORKLOADS.md "echo", issue 25): a TCP echo server, otter's and the
//! BEAM's, under the same closed-loop load (`echo-load`): round trips per second, p99 and
//! the server's CPU per million round trips, by connections, size and mode; and `echo.svg`
//! (round trips/s above, p99 below, against connections).

use std::fmt::Write as _;

use serde_json::Value;

use super::cell::{Results, faster_or_slower, rate};
use super::format;
use super::latency::{field, micros};
use super::plot::{self, Axis, LineChart, Marker, Series};
use super::{ERLANG, OTTER, write_svg};
use crate::suite::{Impl, Options, Sizes, echo_id};

const MODES: [&str; 2] = ["passive", "active"];

fn round_trips_per_s(v: &Value) -> Option<f64> {
    v["ops_per_s"].as_f64()
}

/// "64 B", "4 KiB".
fn size_name(size: u64) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// Appends this section to `md`.
pub(super) fn section(
    md: &mut String,
    res: &Results<'_>,
    s: &Sizes,
    o: &Options,
) -> Result<(), String> {
    let e = &s.echo;
    let _ = writeln!(
        md,
        "\n## Echo — a TCP echo server under a closed-loop load\n"
    );
    let _ = writeln!(
        md,
        "WORKLOADS.md \"echo\" (issue 25): the server (`echo-server`, one process per \
         connection: otter's on `otter::net`, Erlang's on `gen_tcp`) on core 0 with one \
         scheduler thread, the same load generator for both (`otter-bench echo-load`, one \
         thread on `mio`, not on otter) on core 1. Each connection sends `size` bytes, waits \
         for all of them back and checks them, and repeats; 1 s of warm-up, then {} s \
         measured. **passive**: the connection's process reads the socket itself (`read`; \
         Erlang `{{active,false}}` + `gen_tcp:recv`); **active**: data arrives as messages, \
         one at a time (`Active::Once`; Erlang `{{active,once}}`). Round trips per second, \
         higher is better; p99 of the round trip; the server's CPU seconds (utime + stime) \
         per million round trips, lower is better.\n",
        e.seconds
    );
    let cpu = field("server_cpu_s_per_million");
    let p99 = field("p99_us");
    for mode in MODES {
        let _ = writeln!(md, "\n### {mode}\n");
        let _ = writeln!(
            md,
            "| size | conns | otter round trips/s | erlang round trips/s | otter vs erlang | \
             otter p99 | erlang p99 | otter CPU s / M | erlang CPU s / M |\n\
             |---|---|---|---|---|---|---|---|---|"
        );
        for &size in &e.sizes {
            for &conns in &e.conns {
                let id = echo_id(s, conns, size, mode);
                let (co, ce) = (res.cell(&id, Impl::Otter), res.cell(&id, Impl::Erlang));
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    size_name(size),
                    format::si(conns as f64),
                    co.show(round_trips_per_s, rate),
                    ce.show(round_trips_per_s, rate),
                    faster_or_slower(&co, &ce, round_trips_per_s, true),
                    co.show(p99, micros),
                    ce.show(p99, micros),
                    co.show(cpu, |x| format!("{x:.2}")),
                    ce.show(cpu, |x| format!("{x:.2}")),
                );
            }
        }
    }

    // The chart: one series per (implementation, size, mode), in two panels.
    let series = |f: fn(&Value) -> Option<f64>| -> Vec<Series> {
        let mut v = Vec::new();
        for mode in MODES {
            for (si, &size) in e.sizes.iter().enumerate() {
                for (imp, color) in [(Impl::Otter, OTTER), (Impl::Erlang, ERLANG)] {
                    let points = e
                        .conns
                        .iter()
                        .filter_map(|&c| {
                            let id = echo_id(s, c, size, mode);
                            res.cell(&id, imp).median(f).map(|y| (c as f64, y))
                        })
                        .collect();
                    v.push(Series {
                        name: format!("{} {}, {mode}", imp.name(), size_name(size)),
                        color,
                        dashed: mode == "active",
                        marker: if si == 0 {
                            Marker::Circle
                        } else {
                            Marker::Square
                        },
                        points,
                    });
                }
            }
        }
        v
    };
    let conns_axis = Axis {
        label: "connections",
        log: true,
        fmt: format::si,
    };
    let top = plot::line_chart(&LineChart {
        title: "TCP echo: round trips per second".into(),
        subtitle: "server on one core, closed-loop load on the other; log-log; solid = \
                   passive, dashed = active; higher is better"
            .into(),
        x: conns_axis,
        y: Axis {
            label: "round trips/s",
            log: true,
            fmt: format::si,
        },
        series: series(round_trips_per_s),
        guides: Vec::new(),
    })?;
    let bottom = plot::line_chart(&LineChart {
        title: "TCP echo: p99 round trip".into(),
        subtitle: "log-log; solid = passive, dashed = active; lower is better".into(),
        x: conns_axis,
        y: Axis {
            label: "p99",
            log: true,
            fmt: micros,
        },
        series: series(|v| v["p99_us"].as_f64()),
        guides: Vec::new(),
    })?;
    write_svg(o, "echo.svg", &stack(&top, &bottom))?;
    let _ = writeln!(
        md,
        "\n![echo: round trips/s and p99 against connections, otter and erlang](echo.svg)"
    );
    Ok(())
}

/// Two SVG documents one above the other, in one: each becomes a nested `<svg>` at its
/// offset, in an outer one as wide as the wider and as tall as both.
fn stack(top: &str, bottom: &str) -> String {
    let size = |svg: &str| -> (u32, u32) {
        let attr = |name: &str| {
            let head = &svg[..svg.find('>').unwrap_or(svg.len())];
            let at = head.find(&format!(" {name}=\""))? + name.len() + 3;
            head[at..].split('"').next()?.parse::<u32>().ok()
        };
        (attr("width").unwrap_or(820), attr("height").unwrap_or(480))
    };
    let ((w1, h1), (w2, h2)) = (size(top), size(bottom));
    let (w, h) = (w1.max(w2), h1 + h2);
    let strip = |svg: &str| svg.trim_start().trim_start_matches("<svg").to_string();
    format!(
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n<svg x=\"0\" y=\"0\"{}\n<svg x=\"0\" y=\"{h1}\"{}\n</svg>\n",
        strip(top).trim_end(),
        strip(bottom).trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacked_svgs() {
        let a = "<svg width=\"10\" height=\"20\" xmlns=\"x\"><g/></svg>\n";
        let b = "<svg width=\"30\" height=\"5\" xmlns=\"x\"></svg>";
        let s = stack(a, b);
        assert!(s.starts_with("<svg width=\"30\" height=\"25\""), "{s}");
        assert!(s.contains("<svg x=\"0\" y=\"20\" width=\"30\""), "{s}");
        assert!(s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<svg").count(), 3);
        assert_eq!(size_name(4096), "4 KiB");
        assert_eq!(size_name(64), "64 B");
    }
}
