//! The raw data: `results.jsonl` (every run's JSON line plus `case`, `rep`, `exit_code`; failed
//! and skipped runs too, and `steal_pct`, the machine's steal time during the run) and
//! `meta.json` (machine and versions; at the end, the steal time over the whole run and the
//! run with the most).

use serde_json::{Map, Value, json};

use crate::json_line::round_to;
use crate::suite::{Case, Impl, Meta, Options, Outcome, mode};

/// `meta.json`.
pub(crate) fn meta(m: &Meta, o: &Options) -> Value {
    json!({
        "date": m.date, "cpu": m.cpu, "cores": m.cores, "memory": m.memory,
        "kernel": m.kernel, "rustc": m.rustc, "otp": m.otp, "commit": m.commit,
        "build": m.build, "command": m.command, "reps": o.reps,
        "mode": mode(o),
        "erlang": match &m.erlang { Ok(p) => p.display().to_string(), Err(e) => format!("skipped: {e}") },
        "steal_pct": m.steal.map(|s| round_to(s * 100.0, 2)),
        "steal_pct_worst_run": m.steal_worst.as_ref().map(|(s, _)| round_to(s * 100.0, 2)),
        "steal_worst_run": m.steal_worst.as_ref().map(|(_, what)| what.clone()),
    })
}

/// The `results.jsonl` line of one run; `steal`: the machine's steal time during it (a
/// share), recorded as `steal_pct`.
pub(crate) fn line(
    c: &Case,
    imp: Impl,
    rep: usize,
    code: Option<i32>,
    o: &Outcome,
    steal: Option<f64>,
) -> Value {
    let mut m = match o {
        Outcome::Ok(v) | Outcome::CheckFailed(v, _) => v.as_object().cloned().unwrap_or_default(),
        Outcome::Error(_) | Outcome::Skipped(_) => {
            let mut m = Map::new();
            m.insert("bench".into(), c.bench.into());
            m
        }
    };
    m.insert("impl".into(), imp.name().into());
    m.insert("case".into(), c.id.clone().into());
    m.insert("rep".into(), (rep + 1).into());
    m.insert("exit_code".into(), code.map_or(Value::Null, Value::from));
    if let Some(st) = steal {
        m.insert("steal_pct".into(), round_to(st * 100.0, 2).into());
    }
    match o {
        Outcome::Error(e) => {
            m.insert("check".into(), format!("FAILED: {e}").into());
        }
        Outcome::Skipped(why) => {
            m.insert("check".into(), "skipped".into());
            m.insert("skipped".into(), why.clone().into());
        }
        _ => {}
    }
    Value::Object(m)
}
