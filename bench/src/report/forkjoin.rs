//! Fork-join: a process tree that sums its leaves, its time and its peak RSS.

use std::fmt::Write as _;

use serde_json::Value;

use super::cell::{Results, faster_or_slower, ops_per_s, rate, ratio, seconds};
use super::format;
use super::id;
use crate::suite::{Impl, Sizes};

/// The run's peak RSS (`VmHWM`), in bytes.
pub(super) fn peak_rss(v: &Value) -> Option<f64> {
    v["peak_rss_bytes"].as_f64()
}

/// Bytes as MiB.
pub(super) fn mebibytes(x: f64) -> String {
    format!("{:.1} MiB", x / f64::from(1u32 << 20))
}

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## Fork-join — a process tree that sums its leaves\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"forkjoin\": fib({}) as processes, each spawning two children and \
         summing their replies ({} processes). Walked depth-first, a few hundred are alive at \
         once; breadth-first, a large part of the tree: the peak RSS (`VmHWM`, the whole OS \
         process) tells which. Lower is better for time and memory.\n",
        s.forkjoin_n,
        format::si((2 * fib(s.forkjoin_n) - 1) as f64)
    );
    let cid = id("forkjoin", &[("n", s.forkjoin_n.to_string())]);
    let (co, ce) = (res.cell(&cid, Impl::Otter), res.cell(&cid, Impl::Erlang));
    let _ = writeln!(
        md,
        "| | otter | erlang | otter vs erlang |\n|---|---|---|---|\n| time | {} | {} | {} |\n| processes/s | {} | {} | |\n| peak RSS | {} | {} | {} |",
        co.show(seconds, format::secs),
        ce.show(seconds, format::secs),
        faster_or_slower(&co, &ce, seconds, false),
        co.show(ops_per_s, rate),
        ce.show(ops_per_s, rate),
        co.show(peak_rss, mebibytes),
        ce.show(peak_rss, mebibytes),
        ratio(
            co.median(peak_rss),
            ce.median(peak_rss),
            false,
            "smaller",
            "larger"
        ),
    );
}

/// fib(n), with fib(1) = fib(2) = 1.
fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..n {
        (a, b) = (b, a + b);
    }
    if n <= 2 { 1 } else { b }
}
