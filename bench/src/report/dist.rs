//! The dist workload (WORKLOADS.md "dist"): round trips of a binary between two nodes over
//! Erlang distribution, for each pair (client, echo node) of otter and the BEAM: the round
//! trip's median and spread (the fastest and slowest run), round trips per second, and each
//! pair against Erlang↔Erlang.

use std::fmt::Write as _;

use serde_json::Value;

use super::cell::{Cell, Results, ns_per_op, ops_per_s, rate, ratio};
use super::format;
use crate::suite::{DIST_ECHOES, Impl, Sizes, dist_id, dist_pair};

/// The pairs in report order: (client, echo node).
pub(super) const PAIRS: [(Impl, Impl); 4] = [
    (Impl::Otter, Impl::Otter),
    (Impl::Otter, Impl::Erlang),
    (Impl::Erlang, Impl::Otter),
    (Impl::Erlang, Impl::Erlang),
];

/// The runs of `client` against `echo`'s node at `size` bytes.
pub(super) fn cell<'a>(
    res: &Results<'a>,
    s: &Sizes,
    size: u64,
    client: Impl,
    echo: Impl,
) -> Cell<'a> {
    match dist_id(s, size, echo) {
        Some(id) => res.cell(&id, client),
        None => Cell::NotRun,
    }
}

/// The fastest and slowest of `f` over the passing runs.
fn spread(c: &Cell<'_>, f: impl Fn(&Value) -> Option<f64>) -> Option<(f64, f64)> {
    let Cell::Ok(runs) = c else { return None };
    let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    let lo = v.iter().copied().reduce(f64::min)?;
    let hi = v.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
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
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(
        md,
        "\n## Dist — round trips between nodes over Erlang distribution\n"
    );
    let _ = writeln!(
        md,
        "WORKLOADS.md \"dist\": two nodes on this machine, registered in epmd and connected by \
         Erlang's distribution protocol (both hidden, cookie `otterbench`). The client \
         (`dist-pingpong`) sends `{{self(), Bin}}` to `{{echo, Peer}}` by name and waits for \
         `{{echo, Bin}}`, one round trip at a time, r of them after 1,000 untimed; the echo \
         node (`dist-echo`) answers `From ! {{echo, Msg}}`. The echo node runs on core 0 with one \
         scheduler thread, the client on core 1 with one. A pair is written client-echo: \
         `otter-erlang` is otter's client against an Erlang echo node. Round-trip time: the \
         median of the runs, and in brackets the fastest and the slowest run; lower is better. \
         \"vs erlang-erlang\" compares round trips per second with the BEAM's own pair.\n"
    );
    let _ = writeln!(
        md,
        "| size | r | pair | round trip | round trips/s | vs erlang-erlang |\n|---|---|---|---|---|---|"
    );
    for &(size, r) in &s.dist {
        let base = cell(res, s, size, Impl::Erlang, Impl::Erlang).median(ops_per_s);
        for (client, echo) in PAIRS {
            debug_assert!(DIST_ECHOES.contains(&echo));
            let c = cell(res, s, size, client, echo);
            let rt = match (&c, spread(&c, ns_per_op)) {
                (Cell::Ok(_), Some((lo, hi))) => format!(
                    "{} ({}–{})",
                    c.show(ns_per_op, format::nanos),
                    format::nanos(lo),
                    format::nanos(hi)
                ),
                _ => c.show(ns_per_op, format::nanos),
            };
            let vs = if (client, echo) == (Impl::Erlang, Impl::Erlang) {
                String::new()
            } else {
                ratio(c.median(ops_per_s), base, true, "faster", "slower")
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {rt} | {} | {vs} |",
                size_name(size),
                format::si(r as f64),
                dist_pair(client, echo.name()),
                c.show(ops_per_s, rate),
            );
        }
    }
}
