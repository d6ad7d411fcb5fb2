//! The summary table: one headline figure per seed, in REPORT.md and on stdout.

use serde_json::Value;

use super::cell::{
    Results, bytes, bytes_per_process, factor, ns_per_op, ops_per_s, rate, ratio, seconds,
};
use super::format;
use super::id;
use crate::suite::{Impl, Sizes, latency_id};

/// One row of the summary table.
#[derive(Debug)]
pub(super) struct Headline {
    pub(super) seed: &'static str,
    pub(super) measure: String,
    pub(super) otter: String,
    pub(super) erlang: String,
    pub(super) ratio: String,
}

pub(super) fn headline(res: &Results<'_>, s: &Sizes) -> Vec<Headline> {
    let mut v = Vec::new();
    let mut row = |seed,
                   measure: String,
                   id: &str,
                   f: fn(&Value) -> Option<f64>,
                   fmt: fn(f64) -> String,
                   higher_better: bool,
                   better: &str| {
        let (co, ce) = (res.cell(id, Impl::Otter), res.cell(id, Impl::Erlang));
        v.push(Headline {
            seed,
            measure,
            otter: co.show(f, fmt),
            erlang: ce.show(f, fmt),
            ratio: ratio(co.median(f), ce.median(f), higher_better, better, "slower"),
        });
    };
    let ring_n = if s.ring.contains(&1000) {
        1000
    } else {
        s.ring[0]
    };
    row(
        "#4 ring",
        format!("sends/s, {ring_n}×{ring_n}"),
        &id(
            "ring",
            &[("n", ring_n.to_string()), ("m", ring_n.to_string())],
        ),
        ops_per_s,
        rate,
        true,
        "faster",
    );
    row(
        "#3 spawn",
        format!("spawn+exit/s, n={} c=1", format::si(s.spawn_n as f64)),
        &id("spawn", &[("n", s.spawn_n.to_string()), ("c", "1".into())]),
        ops_per_s,
        rate,
        true,
        "faster",
    );
    for style in ["raw", "server"] {
        row(
            "#5 counting",
            format!("msgs/s, {style}, 1 sender"),
            &id(
                "counting",
                &[
                    ("msgs", s.counting_msgs.to_string()),
                    ("senders", "1".into()),
                    ("style", style.into()),
                ],
            ),
            ops_per_s,
            rate,
            true,
            "faster",
        );
    }
    let k = if s.mailbox_k.contains(&10_000) {
        10_000
    } else {
        *s.mailbox_k.last().unwrap_or(&1000)
    };
    for order in ["spawn", "reverse"] {
        row(
            "#2 mailbox",
            format!("time, k={k} {order} order"),
            &id("mailbox", &[("k", k.to_string()), ("order", order.into())]),
            seconds,
            format::secs,
            false,
            "faster",
        );
    }
    for style in ["message", "closure"] {
        row(
            "#1 closure",
            format!("ns per increment, {style}"),
            &id(
                "closure",
                &[("n", s.closure_n.to_string()), ("style", style.into())],
            ),
            ns_per_op,
            format::nanos,
            false,
            "faster",
        );
    }
    // The figure of merit of seed #1: message / closure, per implementation.
    let mc = |imp| {
        let m = res
            .cell(
                &id(
                    "closure",
                    &[("n", s.closure_n.to_string()), ("style", "message".into())],
                ),
                imp,
            )
            .median(ns_per_op);
        let c = res
            .cell(
                &id(
                    "closure",
                    &[("n", s.closure_n.to_string()), ("style", "closure".into())],
                ),
                imp,
            )
            .median(ns_per_op);
        m.zip(c).map(|(m, c)| m / c)
    };
    let (mo, me) = (mc(Impl::Otter), mc(Impl::Erlang));
    v.push(Headline {
        seed: "#1 closure",
        measure: "message / closure (lower is better)".into(),
        otter: mo.map_or("—".into(), |x| format!("{}×", factor(x))),
        erlang: me.map_or("—".into(), |x| format!("{}×", factor(x))),
        ratio: match (mo, me) {
            (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
            (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
            _ => "—".into(),
        },
    });
    let mut row2 = |seed,
                    measure: String,
                    id: &str,
                    f: fn(&Value) -> Option<f64>,
                    fmt: fn(f64) -> String,
                    better: &str| {
        let (co, ce) = (res.cell(id, Impl::Otter), res.cell(id, Impl::Erlang));
        let worse = if better == "smaller" {
            "larger"
        } else {
            "slower"
        };
        v.push(Headline {
            seed,
            measure,
            otter: co.show(f, fmt),
            erlang: ce.show(f, fmt),
            ratio: ratio(co.median(f), ce.median(f), false, better, worse),
        });
    };
    row2(
        "memory",
        format!(
            "bytes per idle process, p={}",
            format::si(s.memory_p as f64)
        ),
        &id("memory", &[("p", s.memory_p.to_string())]),
        bytes_per_process,
        bytes,
        "smaller",
    );
    for style in ["raw", "server"] {
        row2(
            "pingpong",
            format!("ns per round trip, {style}"),
            &id(
                "pingpong",
                &[("r", s.pingpong_r.to_string()), ("style", style.into())],
            ),
            ns_per_op,
            format::nanos,
            "faster",
        );
    }
    row2(
        "forkjoin",
        format!("seconds, fib({}) tree", s.forkjoin_n),
        &id("forkjoin", &[("n", s.forkjoin_n.to_string())]),
        seconds,
        format::secs,
        "faster",
    );
    row2(
        "forkjoin",
        format!("peak RSS, fib({}) tree", s.forkjoin_n),
        &id("forkjoin", &[("n", s.forkjoin_n.to_string())]),
        super::forkjoin::peak_rss,
        super::forkjoin::mebibytes,
        "smaller",
    );
    fn p999_us(v: &Value) -> Option<f64> {
        v["p999_us"].as_f64()
    }
    for hog in [0, 1] {
        row2(
            "latency",
            format!("p99.9 round trip under load, hog={hog}"),
            &latency_id(s, hog),
            p999_us,
            super::latency::micros,
            "faster",
        );
    }
    v
}
