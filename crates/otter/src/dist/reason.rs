//! Exit reasons as Erlang terms, both ways.
//!
//! | otter | Erlang |
//! |---|---|
//! | `Normal`, `Shutdown`, `Kill`, `Killed`, `Noproc`, `Noconnection` | the atom of that name |
//! | `ShutdownWith(d)` | `{shutdown, <<d>>}`; any `{shutdown, T}` comes in with `T` printed |
//! | `Panic(m)` | `{panic, <<m>>}` |
//! | `Error(e)` | the term of a [`RemoteReason`] as it came; any other error `{error, <<e>>}` |
//! | any other term | `Error(RemoteReason(term))` |

use std::fmt;
use std::sync::Arc;

use crate::dist::etf::Term;
use crate::exit::{ErrorReason, ExitReason};

/// An exit reason from another node that has no otter variant of its own (`badarg`,
/// `{badmatch, 3}`...), kept as the term it was.
///
/// | otter | Erlang |
/// |---|---|
/// | `Normal`, `Shutdown`, `Kill`, `Killed`, `Noproc`, `Noconnection` | the atom of that name |
/// | `ShutdownWith(d)` | `{shutdown, <<d>>}`; any `{shutdown, T}` comes in with `T` printed |
/// | `Panic(m)` | `{panic, <<m>>}` |
/// | `Error(e)` | the term of a `RemoteReason` as it came; any other error `{error, <<e>>}` |
/// | any other term | `Error(RemoteReason(term))` |
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteReason(pub Term);

impl fmt::Display for RemoteReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for RemoteReason {}

/// The otter reason of an Erlang exit reason.
pub(crate) fn from_term(t: &Term) -> ExitReason {
    match t {
        Term::Atom(a) => match a.as_str() {
            "normal" => ExitReason::Normal,
            "shutdown" => ExitReason::Shutdown,
            "kill" => ExitReason::Kill,
            "killed" => ExitReason::Killed,
            "noproc" => ExitReason::Noproc,
            "noconnection" => ExitReason::Noconnection,
            _ => other(t),
        },
        Term::Tuple(e) if e.len() == 2 && e[0] == Term::atom("shutdown") => {
            ExitReason::ShutdownWith(match &e[1] {
                Term::Binary(b) => String::from_utf8_lossy(b).into(),
                x => x.to_string().into(),
            })
        }
        Term::Tuple(e) if e.len() == 2 && e[0] == Term::atom("panic") => match &e[1] {
            Term::Binary(b) => ExitReason::Panic(String::from_utf8_lossy(b).into()),
            _ => other(t),
        },
        _ => other(t),
    }
}

fn other(t: &Term) -> ExitReason {
    ExitReason::Error(ErrorReason(Arc::new(RemoteReason(t.clone()))))
}

/// The Erlang term of an otter exit reason.
pub(crate) fn to_term(r: &ExitReason) -> Term {
    let bin = |s: &str| Term::Binary(s.as_bytes().to_vec());
    match r {
        ExitReason::Normal => Term::atom("normal"),
        ExitReason::Shutdown => Term::atom("shutdown"),
        ExitReason::ShutdownWith(d) => Term::Tuple(vec![Term::atom("shutdown"), bin(d)]),
        ExitReason::Kill => Term::atom("kill"),
        ExitReason::Killed => Term::atom("killed"),
        ExitReason::Noproc => Term::atom("noproc"),
        ExitReason::Noconnection => Term::atom("noconnection"),
        ExitReason::Panic(m) => Term::Tuple(vec![Term::atom("panic"), bin(m)]),
        ExitReason::Error(e) => match e.0.downcast_ref::<RemoteReason>() {
            Some(RemoteReason(t)) => t.clone(),
            None => Term::Tuple(vec![Term::atom("error"), bin(&e.0.to_string())]),
        },
    }
}
