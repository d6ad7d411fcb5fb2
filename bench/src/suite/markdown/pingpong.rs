//! Ping-pong: nanoseconds per round trip by style.

use std::fmt::Write as _;

use super::cell::{Cell, Results, ns_per_op, ratio};
use super::headline::qualified;
use super::id;
use crate::plot;
use crate::suite::{Impl, Sizes};

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Ping-pong — round-trip latency\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"pingpong\" (the per-hop cost of seed #4, the call layer of seed #5): r = \
         {} round trips between two processes; nanoseconds per round trip, lower is better.\n",
        plot::si(s.pingpong_r as f64)
    );
    let _ = writeln!(
        md,
        "| style | otter ns/round trip | erlang ns/round trip | otter vs erlang | note |\n|---|---|---|---|---|"
    );
    for style in ["raw", "server"] {
        let cid = id(
            "pingpong",
            &[("r", s.pingpong_r.to_string()), ("style", style.into())],
        );
        let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
        let note = style_note(&co, style);
        let _ = writeln!(
            md,
            "| {style} | {} | {} | {} | {note} |",
            co.show(ns_per_op, plot::nanos),
            ce.show(ns_per_op, plot::nanos),
            qualified(
                ratio(
                    co.median(ns_per_op),
                    ce.median(ns_per_op),
                    false,
                    "faster",
                    "slower"
                ),
                &note
            )
        );
    }
}

/// The note for a row whose otter runs used another style than asked (`style_run` in the
/// JSON: the server layer is missing, so the raw loop ran).
pub(super) fn style_note(otter: &Cell<'_>, style: &str) -> String {
    match otter {
        Cell::Ok(runs) => runs
            .first()
            .and_then(|v| v["style_run"].as_str())
            .filter(|r| *r != style)
            .map(|r| format!("otter ran style={r}: no server layer yet"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}
