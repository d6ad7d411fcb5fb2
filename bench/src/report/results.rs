//! The raw data: `results.jsonl` (every run's JSON line plus `case`, `rep`, `exit_code`; failed
//! and skipped runs too, and `steal_pct`, the machine's steal time during the run) and
//! `meta.json` (machine and versions; at the end, the steal time over the whole run and the
//! run with the most).

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::json_line::round_to;
use crate::suite::{Case, Impl, Meta, Options, Outcome, Record, Sizes, mode};

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

/// A suite's runs again, from its `results.jsonl` at `path` and the `meta.json` beside it.
/// A line's outcome is what the suite recorded: `check` "ok" with exit code 0 (or none)
/// passed, "skipped" was skipped, a line with nothing but the suite's own keys is a run
/// without a JSON line (`check` "FAILED: why"), any other a failed check. The sizes are
/// those of the run's mode, its senders 1 and its machine's cores.
pub(crate) fn load(path: &Path) -> Result<Loaded, String> {
    // The keys of a line that the suite writes itself.
    const OURS: &str = "bench impl case rep exit_code steal_pct check";
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    let meta_path = path.with_file_name("meta.json");
    let m: Value = serde_json::from_str(&read(&meta_path)?)
        .map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let mut o = Options::default();
    (o.quick, o.full) = (m["mode"] == "quick", m["mode"] == "full");
    let mut sizes = Sizes::for_options(&o);
    // The senders of the machine that ran it: 1 and its cores.
    sizes.senders = vec![1];
    sizes.senders.extend(m["cores"].as_u64().filter(|&c| c > 1));
    let mut ids: Vec<String> = Vec::new();
    let mut records = Vec::new();
    let text = read(path)?;
    for (i, l) in text.lines().enumerate().filter(|l| !l.1.trim().is_empty()) {
        let v: Value =
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        let case_id = v["case"].as_str().unwrap_or_default();
        let case = ids.iter().position(|c| c == case_id).unwrap_or_else(|| {
            ids.push(case_id.into());
            ids.len() - 1
        });
        let imp = super::spec::impl_named(v["impl"].as_str().unwrap_or_default());
        let imp = imp.unwrap_or(Impl::Otter);
        let rep = (v["rep"].as_u64().unwrap_or(1) as usize).saturating_sub(1);
        let check = v["check"].as_str().map(str::to_string);
        let code = v["exit_code"].as_i64();
        let ours = |k: &String| OURS.split(' ').any(|o| o == k);
        let bare = v.as_object().is_some_and(|o| o.keys().all(ours));
        let outcome = match check.as_deref() {
            Some("ok") if code.is_none_or(|c| c == 0) => Outcome::Ok(v),
            Some("ok") => Outcome::CheckFailed(
                v,
                format!("check ok but exit code {:?}", code.map(|c| c as i32)),
            ),
            Some("skipped") => Outcome::Skipped(v["skipped"].as_str().unwrap_or_default().into()),
            Some(why) if bare => Outcome::Error(why.strip_prefix("FAILED: ").unwrap_or(why).into()),
            Some(why) => Outcome::CheckFailed(v.clone(), why.into()),
            None => Outcome::CheckFailed(v, "no check field".into()),
        };
        records.push(Record {
            case,
            imp,
            rep,
            outcome,
        });
    }
    Ok((m, sizes, ids, records))
}

/// The runs of a suite as [`load`] reads them back: `meta.json`, the sizes, the case ids
/// ([`Record`]'s `case` is an index of them) and the runs.
pub(crate) type Loaded = (Value, Sizes, Vec<String>, Vec<Record>);
