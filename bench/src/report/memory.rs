//! Memory: bytes per idle process.

use std::fmt::Write as _;

use super::cell::{
    Results, beam_bytes_per_process, bytes, bytes_per_process, faster_or_slower, ratio, seconds,
};
use super::format;
use super::id;
use crate::suite::{Impl, Sizes};

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Memory — an idle process\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"memory\" (the cost-of-a-process question of seed #3): p = {} processes \
         blocked in receive; VmRSS delta / p. Erlang also reports its own accounting \
         (`erlang:memory(processes)`); lower is better.\n",
        format::si(s.memory_p as f64)
    );
    let cid = id("memory", &[("p", s.memory_p.to_string())]);
    let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
    let _ = writeln!(
        md,
        "| | otter | erlang | otter vs erlang |\n|---|---|---|---|\n| RSS bytes per process | {} | {} | {} |\n| runtime's own account | — | {} | |\n| spawn time for p (until all are blocked) | {} | {} | {} |",
        co.show(bytes_per_process, bytes),
        ce.show(bytes_per_process, bytes),
        ratio(
            co.median(bytes_per_process),
            ce.median(bytes_per_process),
            false,
            "smaller",
            "larger"
        ),
        ce.show(beam_bytes_per_process, bytes),
        co.show(seconds, format::secs),
        ce.show(seconds, format::secs),
        faster_or_slower(&co, &ce, seconds, false),
    );
}
