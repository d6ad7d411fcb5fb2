//! Ping-pong: nanoseconds per round trip by style.

use std::fmt::Write as _;

use super::cell::{Results, faster_or_slower, ns_per_op, server_vs_raw};
use super::format;
use super::id;
use crate::suite::{Impl, Sizes};

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Ping-pong — round-trip latency\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"pingpong\" (the per-hop cost of seed #4, the call layer of seed #5): r = \
         {} round trips between two processes; nanoseconds per round trip, lower is better.\n",
        format::si(s.pingpong_r as f64)
    );
    let _ = writeln!(
        md,
        "`style=raw`: plain messages; `style=server`: B is an `otter::server` and each round \
         trip is one `call` (Erlang: a `gen_server` and `gen_server:call`). \"server vs raw\" is \
         each runtime's call against its own raw round trip.\n"
    );
    let _ = writeln!(
        md,
        "| style | otter ns/round trip | erlang ns/round trip | otter vs erlang | server vs raw, otter | server vs raw, erlang |\n|---|---|---|---|---|---|"
    );
    let cid = |style: &str| {
        id(
            "pingpong",
            &[("r", s.pingpong_r.to_string()), ("style", style.into())],
        )
    };
    for style in ["raw", "server"] {
        let (co, ce) = (
            res.cell(&cid(style), Impl::Otter),
            res.cell(&cid(style), Impl::Erlang),
        );
        let (vs_raw_o, vs_raw_e) = if style == "server" {
            let raw = |imp| res.cell(&cid("raw"), imp);
            (
                server_vs_raw(&co, &raw(Impl::Otter), ns_per_op, false),
                server_vs_raw(&ce, &raw(Impl::Erlang), ns_per_op, false),
            )
        } else {
            (String::new(), String::new())
        };
        let _ = writeln!(
            md,
            "| {style} | {} | {} | {} | {vs_raw_o} | {vs_raw_e} |",
            co.show(ns_per_op, format::nanos),
            ce.show(ns_per_op, format::nanos),
            faster_or_slower(&co, &ce, ns_per_op, false),
        );
    }
}
