//! The built-in functions an Erlang operator types first (the module docs' table of
//! `dist/erpc.rs`): answered only when no registered function has the name.

use std::sync::{Arc, PoisonError};

use super::{Outcome, Raise, decode_args};
use crate::dist::etf::Term;
use crate::dist::node::NodeShared;
use crate::pid::RawPid;

type Builtin = fn(&Arc<NodeShared>, &[u8]) -> Outcome;

/// The built-in function `m:f`, if there is one (module docs' table).
pub(super) fn builtin(m: &str, f: &str) -> Option<Builtin> {
    Some(match (m, f) {
        ("erlang", "processes") => processes,
        ("erlang", "process_info") => process_info,
        ("erlang", "registered") => registered,
        ("erlang", "memory") => memory,
        ("erlang", "system_info") => system_info,
        _ => return None,
    })
}

fn no_args(node: &Arc<NodeShared>, args: &[u8]) -> Result<(), Raise> {
    decode_args::<()>(node, args).map_err(|_| Raise::error("undef"))
}

/// The live processes of the runtime.
fn live() -> impl Iterator<Item = RawPid> {
    (0..crate::process::table::high_water()).filter_map(|index| {
        let slot = crate::process::table::slot(index)?;
        let generation = slot.word.generation();
        slot.word
            .is_alive(generation)
            .then_some(RawPid { index, generation })
    })
}

fn processes(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    Ok(Term::list(
        live().map(|p| Term::Pid(node.external_pid(p))).collect(),
    ))
}

fn process_info(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    let (pid, key): (Term, Term) = decode_args(node, args).map_err(|_| Raise::error("undef"))?;
    let (Term::Pid(pid), Term::Atom(key)) = (pid, key) else {
        return Err(Raise::error("badarg"));
    };
    let Some(raw) = node.local_pid(&pid) else {
        return Err(Raise::error("badarg"));
    };
    let alive =
        crate::process::table::slot(raw.index).is_some_and(|s| s.word.is_alive(raw.generation));
    if !alive {
        return Ok(Term::atom("undefined"));
    }
    match key.as_str() {
        "registered_name" => {
            let names = node.names.read().unwrap_or_else(PoisonError::into_inner);
            let name = names
                .iter()
                .find(|(n, e)| e.target(node, n) == Some(raw))
                .map(|(n, _)| n.clone());
            Ok(match name {
                Some(n) => Term::tuple(vec![Term::atom("registered_name"), Term::Atom(n)]),
                None => Term::list(vec![]),
            })
        }
        _ => Err(Raise::error("badarg")),
    }
}

fn registered(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    let mut names: Vec<Term> = node
        .names
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .map(|n| Term::Atom(n.clone()))
        .collect();
    names.push(Term::atom("net_kernel"));
    names.push(Term::atom("rex"));
    Ok(Term::list(names))
}

fn memory(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let pair = |k: &str, v: u64| Term::tuple(vec![Term::atom(k), Term::from(v)]);
    Ok(Term::list(vec![
        pair("total", rss),
        pair("processes", 0),
        pair("processes_used", 0),
        pair("system", rss),
        pair("atom", 0),
        pair("atom_used", 0),
        pair("binary", 0),
        pair("code", 0),
        pair("ets", 0),
    ]))
}

fn system_info(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    let (what,): (Term,) = decode_args(node, args).map_err(|_| Raise::error("undef"))?;
    match what.as_atom() {
        Some("process_count") => Ok(Term::from(live().count() as u64)),
        _ => Err(Raise::error("badarg")),
    }
}
