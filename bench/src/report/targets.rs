//! The targets, under the summary table (REPORT.md and stdout). The server layer's: counting
//! `style=server` within 1.5× of otter's own `style=raw` and at least 10× the BEAM's
//! `gen_server`, for every number of senders; a pingpong `style=server` round trip at most
//! 1/5 of the BEAM's `gen_server:call`. Latency under load (issue 24): with hog=0, otter's
//! p99 and p99.9 no worse than the BEAM's; with hog=1, otter's p99.9 at most 2× the BEAM's
//! and its max at most 10 ms. Distribution (WORKLOADS.md "dist"), for each size: otter↔otter
//! at least the round trips per second of Erlang↔Erlang, and otter's client against an
//! Erlang echo node no slower than Erlang↔Erlang. http (issue 46): otter's requests/s at
//! least plain tokio's, its p99 and its server's peak RSS no higher. A missed target is
//! reported, not a failed run.

use std::fmt::Write as _;

use super::format::{kib, micros, nanos, rate};
use super::sections::{MAX, NS, OPS_PER_S, P99, P999, RATE, VMHWM};
use super::table::{Metric, Results, factor};
use crate::suite::{Impl, Sizes, dist_id, http_id, latency_id};

/// counting: otter's server may be at most this many times slower than otter's raw loop.
const COUNTING_MAX_OVER_RAW: f64 = 1.5;
/// counting: otter's server must be at least this many times faster than `gen_server`.
const COUNTING_MIN_VS_GEN_SERVER: f64 = 10.0;
/// pingpong: a `call` round trip must be at least this many times faster than
/// `gen_server:call`.
const CALL_MIN_VS_GEN_SERVER: f64 = 5.0;
/// latency hog=1: otter's p99.9 may be at most this many times the BEAM's.
const HOG_P999_MAX_VS_BEAM: f64 = 2.0;
/// latency hog=1: otter's longest round trip, at most (µs).
const HOG_MAX_US: f64 = 10_000.0;

/// One target and how the run did.
#[derive(Debug)]
pub(super) struct Target {
    /// What is compared.
    pub(super) what: String,
    /// The bar.
    pub(super) goal: String,
    /// The measured factor, or "—" without data.
    pub(super) measured: String,
    /// `None` without data.
    pub(super) met: Option<bool>,
}

impl Target {
    /// "met", "missed", or "—".
    pub(super) fn verdict(&self) -> &'static str {
        match self.met {
            Some(true) => "met",
            Some(false) => "missed",
            None => "—",
        }
    }
}

/// `f` (how many times faster) as "N× faster" or "N× slower".
fn faster(f: f64) -> String {
    if f >= 1.0 {
        format!("{}× faster", factor(f))
    } else {
        format!("{}× slower", factor(1.0 / f))
    }
}

/// Every target, in report order.
pub(super) fn targets(res: &Results<'_>, s: &Sizes) -> Vec<Target> {
    let mut v = Vec::new();
    let mut push = |what: String, goal: String, measured: Option<(String, bool)>| {
        let (measured, met) = measured.map_or(("—".into(), None), |(m, met)| (m, Some(met)));
        v.push(Target {
            what,
            goal,
            measured,
            met,
        });
    };
    let both = |id: &str, m: &Metric, a, b| res.median(id, a, m).zip(res.median(id, b, m));
    let (o, e) = (Impl::Otter, Impl::Erlang);
    for &senders in &s.senders {
        let msgs = s.counting_msgs;
        let cid = |style: &str| format!("counting msgs={msgs} senders={senders} style={style}");
        let server = res.median(&cid("server"), o, &RATE);
        let who = if senders == 1 {
            "1 sender".to_string()
        } else {
            format!("{senders} senders")
        };
        // Rates: server / raw is how many times faster the server ran.
        push(
            format!("counting: otter server vs otter raw, {who}"),
            format!("at most {COUNTING_MAX_OVER_RAW}× slower"),
            server
                .zip(res.median(&cid("raw"), o, &RATE))
                .map(|(sv, raw)| (faster(sv / raw), raw / sv <= COUNTING_MAX_OVER_RAW)),
        );
        push(
            format!("counting: otter server vs Erlang gen_server, {who}"),
            format!("at least {COUNTING_MIN_VS_GEN_SERVER}× faster"),
            server
                .zip(res.median(&cid("server"), e, &RATE))
                .map(|(sv, beam)| (faster(sv / beam), sv / beam >= COUNTING_MIN_VS_GEN_SERVER)),
        );
    }
    let ping = format!("pingpong r={} style=server", s.pingpong_r);
    push(
        "pingpong: otter call vs Erlang gen_server:call, round trip".into(),
        format!("at most 1/{CALL_MIN_VS_GEN_SERVER} of it"),
        both(&ping, &NS, o, e).map(|(o, e)| {
            (
                format!("1/{} ({} vs {})", factor(e / o), nanos(o), nanos(e)),
                e / o >= CALL_MIN_VS_GEN_SERVER,
            )
        }),
    );
    let vs = |o: f64, e: f64| {
        format!(
            "{}× ({} vs {})",
            factor(o / e.max(1e-9)),
            micros(o),
            micros(e)
        )
    };
    let lat = |hog| latency_id(s, hog);
    for (m, name) in [(P99, "p99"), (P999, "p99.9")] {
        push(
            format!("latency hog=0: otter {name} vs the BEAM's"),
            "no worse (at most 1×)".into(),
            both(&lat(0), &m, o, e).map(|(o, e)| (vs(o, e), o <= e)),
        );
    }
    push(
        "latency hog=1: otter p99.9 vs the BEAM's".into(),
        format!("at most {HOG_P999_MAX_VS_BEAM}×"),
        both(&lat(1), &P999, o, e).map(|(o, e)| (vs(o, e), o <= HOG_P999_MAX_VS_BEAM * e)),
    );
    push(
        "latency hog=1: otter's longest round trip".into(),
        format!("at most {}", micros(HOG_MAX_US)),
        res.median(&lat(1), o, &MAX)
            .map(|o| (micros(o), o <= HOG_MAX_US)),
    );
    for &(size, _) in &s.dist {
        let cell =
            |client, echo| dist_id(s, size, echo).and_then(|id| res.median(&id, client, &RATE));
        let beam = cell(e, e);
        for (echo, what) in [(o, "otter↔otter"), (e, "otter client↔Erlang echo")] {
            push(
                format!("dist {size} B: {what} vs Erlang↔Erlang"),
                "round trips/s at least 1×".into(),
                cell(o, echo).zip(beam).map(|(o, e)| {
                    (
                        format!("{} ({} vs {})", faster(o / e), rate(o), rate(e)),
                        o >= e,
                    )
                }),
            );
        }
    }
    // http (issue 46): otter against plain tokio, the same routes, default options.
    let http = http_id(s);
    for (what, m, fmt) in [
        ("requests/s", OPS_PER_S, rate as fn(f64) -> String),
        ("p99", P99, micros),
        ("peak RSS (VmHWM)", VMHWM, kib),
    ] {
        let higher = m.better == super::table::Better::Higher;
        push(
            format!("http: otter's {what} vs tokio's"),
            if higher {
                "at least 1×"
            } else {
                "at most 1×"
            }
            .into(),
            both(&http, &m, o, Impl::Tokio).map(|(o, t)| {
                let met = if higher { o >= t } else { o <= t };
                (
                    format!("{}× ({} vs {})", factor(o / t), fmt(o), fmt(t)),
                    met,
                )
            }),
        );
    }
    v
}

/// The targets as a REPORT.md subsection.
pub(super) fn markdown(md: &mut String, targets: &[Target]) {
    let _ = writeln!(md, "\n### Targets\n");
    let _ = writeln!(
        md,
        "The server layer, `otter::server` (cast and call), against otter's own raw loop and \
         against Erlang's `gen_server`, from the medians in the counting and ping-pong tables \
         below; round trips under load (issue 24), from the latency table; and round trips \
         between nodes (WORKLOADS.md \"dist\"), from the dist table; a JSON API on otter \
         against plain tokio (WORKLOADS.md \"http\"), from the http table. A missed target \
         does not fail the suite.\n"
    );
    let _ = writeln!(md, "| target | goal | measured | |\n|---|---|---|---|");
    for t in targets {
        let verdict = match t.met {
            Some(false) => "**missed**",
            _ => t.verdict(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {verdict} |",
            t.what, t.goal, t.measured
        );
    }
}

/// The targets for the stdout summary.
pub(super) fn text(out: &mut String, targets: &[Target]) {
    let _ = writeln!(out, "targets:");
    for t in targets {
        let _ = writeln!(
            out,
            "  {:<62} {:<22} {:<28} {}",
            t.what,
            t.goal,
            t.measured,
            t.verdict()
        );
    }
}
