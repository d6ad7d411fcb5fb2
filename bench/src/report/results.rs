//! The raw data: `results.jsonl` (every run's JSON line plus `case`, `rep`, `exit_code`; failed
//! and skipped runs too) and `meta.json` (machine and versions).

use serde_json::{Map, Value, json};

use crate::suite::{Case, Impl, Meta, Options, Outcome, mode};

/// `meta.json`.
pub(crate) fn meta(m: &Meta, o: &Options) -> Value {
    json!({
        "date": m.date, "cpu": m.cpu, "cores": m.cores, "memory": m.memory,
        "kernel": m.kernel, "rustc": m.rustc, "otp": m.otp, "commit": m.commit,
        "build": m.build, "command": m.command, "reps": o.reps,
        "mode": mode(o),
        "erlang": match &m.erlang { Ok(p) => p.display().to_string(), Err(e) => format!("skipped: {e}") },
    })
}

/// The `results.jsonl` line of one run.
pub(crate) fn line(c: &Case, imp: Impl, rep: usize, code: Option<i32>, o: &Outcome) -> Value {
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
