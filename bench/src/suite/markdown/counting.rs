//! Seed #5, the CountingActor: messages per second by style and senders.

use std::fmt::Write as _;

use super::cell::{Results, ops_per_s, rate, ratio};
use super::headline::qualified;
use super::id;
use super::pingpong::style_note;
use crate::plot;
use crate::suite::{Impl, Sizes};

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
        plot::si(s.counting_msgs as f64)
    );
    let _ = writeln!(
        md,
        "| style | senders | otter msgs/s | erlang msgs/s | otter vs erlang | note |\n|---|---|---|---|---|---|"
    );
    for style in ["raw", "server"] {
        for &senders in &s.senders {
            let cid = id(
                "counting",
                &[
                    ("msgs", s.counting_msgs.to_string()),
                    ("senders", senders.to_string()),
                    ("style", style.into()),
                ],
            );
            let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
            let note = style_note(&co, style);
            let _ = writeln!(
                md,
                "| {style} | {senders} | {} | {} | {} | {note} |",
                co.show(ops_per_s, rate),
                ce.show(ops_per_s, rate),
                qualified(
                    ratio(
                        co.median(ops_per_s),
                        ce.median(ops_per_s),
                        true,
                        "faster",
                        "slower"
                    ),
                    &note
                )
            );
        }
    }
}
