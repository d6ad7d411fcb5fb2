//! Seed #5, the CountingActor: messages per second by style and senders.

use std::fmt::Write as _;

use super::cell::{Results, faster_or_slower, ops_per_s, rate, server_vs_raw};
use super::format;
use super::id;
use crate::suite::{FAN_OUT_RECEIVERS, Impl, Sizes, fan_out_id};

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(
        md,
        "\n## Seed #5 — the CountingActor (raw receive loop vs server layer)\n"
    );
    let _ = writeln!(
        md,
        "\"Scala Actor v Erlang gen_server Performance\" (2011, 4 cores): 3,000,000 `Count(100)` \
         then a synchronous GetAndReset; Erlang bare receive 2.8 M msg/s, gen_server 1.8 M msg/s. \
         Here msgs = {}. Messages per second.\n",
        format::si(s.counting_msgs as f64)
    );
    let _ = writeln!(
        md,
        "`style=server` is `otter::server` (Count a cast, GetAndReset a call) against Erlang's \
         `gen_server`; \"server vs raw\" is each runtime's server layer against its own raw \
         receive loop, same senders.\n"
    );
    let _ = writeln!(
        md,
        "| style | senders | otter msgs/s | erlang msgs/s | otter vs erlang | server vs raw, otter | server vs raw, erlang |\n|---|---|---|---|---|---|---|"
    );
    let cid = |senders: u64, style: &str| {
        id(
            "counting",
            &[
                ("msgs", s.counting_msgs.to_string()),
                ("senders", senders.to_string()),
                ("style", style.into()),
            ],
        )
    };
    for style in ["raw", "server"] {
        for &senders in &s.senders {
            let (co, ce) = (
                res.cell(&cid(senders, style), Impl::Otter),
                res.cell(&cid(senders, style), Impl::Erlang),
            );
            let (vs_raw_o, vs_raw_e) = if style == "server" {
                let raw = |imp| res.cell(&cid(senders, "raw"), imp);
                (
                    server_vs_raw(&co, &raw(Impl::Otter), ops_per_s, true),
                    server_vs_raw(&ce, &raw(Impl::Erlang), ops_per_s, true),
                )
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                md,
                "| {style} | {senders} | {} | {} | {} | {vs_raw_o} | {vs_raw_e} |",
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                faster_or_slower(&co, &ce, ops_per_s, true),
            );
        }
    }
    let fan = |imp| res.cell(&fan_out_id(s), imp);
    let (fo, fe) = (fan(Impl::Otter), fan(Impl::Erlang));
    let one = |imp| res.cell(&cid(1, "raw"), imp);
    let _ = writeln!(
        md,
        "\nFan-out: 1 sender, raw, round-robin to {FAN_OUT_RECEIVERS} counters (each send \
         to another process than the one before): otter {}, erlang {} ({}); against 1 \
         counter, otter {}, erlang {}.",
        fo.show(ops_per_s, rate),
        fe.show(ops_per_s, rate),
        faster_or_slower(&fo, &fe, ops_per_s, true),
        server_vs_raw(&fo, &one(Impl::Otter), ops_per_s, true),
        server_vs_raw(&fe, &one(Impl::Erlang), ops_per_s, true),
    );
    let floor = res.cell(&cid(1, "channel"), Impl::Otter);
    let raw = res.cell(&cid(1, "raw"), Impl::Otter);
    if let Some(f) = floor.median(ops_per_s) {
        let _ = writeln!(
            md,
            "\nThe floor: the same messages between two OS threads over `std::sync::mpsc` \
             (crossbeam's unbounded channel, no otter; `counting style=channel`): {}. \
             otter's raw loop, 1 sender, runs at {} of it. A message that crosses cores costs \
             cache-line transfers, and the channel pays them too. A stream's send in otter has \
             one locked instruction, the mailbox tail's CAS (the pid table's count is kept \
             across a poll); what the rest of its time is goes in ARCHITECTURE.md \"Where \
             the time goes\".",
            floor.show(ops_per_s, rate),
            raw.median(ops_per_s)
                .map_or("—".into(), |r| format!("{:.0}%", 100.0 * r / f)),
        );
    }
}
