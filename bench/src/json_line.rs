//! The one JSON line of a workload run (WORKLOADS.md's output contract).
//!
//! Fields, in order: `bench`, `impl` (`"otter"`), `params` (every parameter, defaults filled
//! in), `seconds` (the timed region), `ops`, `ops_per_s`, `ns_per_op`, the workload's extra
//! fields, `check` (`"ok"` or a short reason), `threads`, `build` (`"release"` or `"debug"`:
//! a debug build's numbers mean nothing), and `note` when there is one.

use serde_json::{Map, Value};

use crate::args::Params;
use crate::workloads::Outcome;

/// Rounds `x` to `decimals` decimals.
pub(crate) fn round_to(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// The JSON object for one run.
pub(crate) fn json(bench: &str, params: &Params, threads: usize, out: &Outcome) -> Value {
    // Guard against a zero interval on absurdly small runs.
    let seconds = out.seconds.max(1e-9);
    let mut m = Map::new();
    m.insert("bench".into(), bench.into());
    m.insert("impl".into(), "otter".into());
    m.insert("params".into(), params.to_json());
    m.insert("seconds".into(), round_to(seconds, 9).into());
    m.insert("ops".into(), out.ops.into());
    m.insert(
        "ops_per_s".into(),
        round_to(out.ops as f64 / seconds, 1).into(),
    );
    m.insert(
        "ns_per_op".into(),
        round_to(seconds * 1e9 / out.ops.max(1) as f64, 2).into(),
    );
    for (k, v) in &out.extra {
        m.insert((*k).to_string(), v.clone());
    }
    m.insert(
        "check".into(),
        match &out.check {
            Ok(()) => "ok".to_string(),
            Err(why) => why.clone(),
        }
        .into(),
    );
    m.insert("threads".into(), threads.into());
    add_build(&mut m);
    if !out.notes.is_empty() {
        m.insert("note".into(), out.notes.join("; ").into());
    }
    Value::Object(m)
}

/// The fields every line of this program carries about its build: `build` (debug or
/// release) and `alloc` (the global allocator).
pub(crate) fn add_build(m: &mut Map<String, Value>) {
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    m.insert("build".into(), build.into());
    m.insert("alloc".into(), crate::ALLOC.into());
}
