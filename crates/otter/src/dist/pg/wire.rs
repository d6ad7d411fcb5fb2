//! pg's messages between scope processes, as OTP's `pg.erl` (OTP 23+) sends them:
//! what a scope process of another node can send to this one ([`decode`]), and what
//! this one sends ([`discover`], [`sync`], [`join`], [`leave`]).
//!
//! | message | sent | answered with |
//! |---|---|---|
//! | `{discover, Peer}` (OTP 26+ also reads `{discover, Peer, Version}`) | to `{Scope, Node}` when a connection comes up, and back to an unknown `Peer` | a `sync` to `Peer`; if `Peer` was unknown, a monitor of it and `{discover, Self}` to it |
//! | `{'$gen_cast', {sync, Peer, [{Group, [Pid]}]}}` | to a peer that discovered us: every local member | `Peer`'s groups are replaced by these |
//! | `{join, Peer, Group, Pid \| [Pid]}` | to every known peer, on a local join | |
//! | `{leave, Peer, Pid \| [Pid], [Group]}` | to every known peer, on a local leave or a member's exit | |
//!
//! `Peer` is the sending scope's pid. Every decoded message is a value or a
//! [`WireError`], whatever the bytes: this is the decoder the fuzz tests hit
//! (`pg/tests.rs`). What a well-formed message may claim (its pids of its own node,
//! its sender a known peer) is checked by the scope (`pg.rs`), not here.

use crate::dist::etf::{ExternalPid, Term};

/// A message from another node's scope process.
#[derive(Debug, PartialEq)]
pub(crate) enum Message {
    /// `{discover, Peer}` or `{discover, Peer, Version}`.
    Discover { peer: ExternalPid },
    /// `{'$gen_cast', {sync, Peer, Groups}}`: every member `Peer`'s node has.
    Sync {
        peer: ExternalPid,
        groups: Vec<(Term, Vec<ExternalPid>)>,
    },
    /// `{join, Peer, Group, PidOrPids}`.
    Join {
        peer: ExternalPid,
        group: Term,
        pids: Vec<ExternalPid>,
    },
    /// `{leave, Peer, PidOrPids, Groups}`.
    Leave {
        peer: ExternalPid,
        pids: Vec<ExternalPid>,
        groups: Vec<Term>,
    },
}

impl Message {
    /// The scope process that sent it, as the message claims.
    pub(crate) fn peer(&self) -> &ExternalPid {
        match self {
            Message::Discover { peer }
            | Message::Sync { peer, .. }
            | Message::Join { peer, .. }
            | Message::Leave { peer, .. } => peer,
        }
    }

    /// Every member pid the message names.
    pub(crate) fn members(&self) -> Box<dyn Iterator<Item = &ExternalPid> + '_> {
        match self {
            Message::Discover { .. } => Box::new(std::iter::empty()),
            Message::Sync { groups, .. } => Box::new(groups.iter().flat_map(|(_, p)| p.iter())),
            Message::Join { pids, .. } | Message::Leave { pids, .. } => Box::new(pids.iter()),
        }
    }
}

pub(crate) use crate::dist::wire_error::WireError;

/// This protocol's name in its [`WireError`]s.
const PROTOCOL: &str = "pg";

/// Decodes a message to a scope process (encoded, 131 included).
pub(crate) fn decode(payload: &[u8]) -> Result<Message, WireError> {
    let term = Term::decode(payload).map_err(|e| WireError::NotATerm(e.to_string()))?;
    from_term(term)
}

fn from_term(term: Term) -> Result<Message, WireError> {
    let Term::Tuple(t) = term else {
        return Err(unknown(&term));
    };
    match (t.first().and_then(Term::as_atom), t.len()) {
        (Some("discover"), 2 | 3) => Ok(Message::Discover {
            peer: pid(&t[1], "discover's Peer")?,
        }),
        (Some("$gen_cast"), 2) => {
            let Term::Tuple(c) = &t[1] else {
                return Err(unknown(&t[1]));
            };
            match (c.first().and_then(Term::as_atom), c.len()) {
                (Some("sync"), 3) => Ok(Message::Sync {
                    peer: pid(&c[1], "sync's Peer")?,
                    groups: groups(&c[2])?,
                }),
                _ => Err(unknown(&t[1])),
            }
        }
        (Some("join"), 4) => Ok(Message::Join {
            peer: pid(&t[1], "join's Peer")?,
            group: t[2].clone(),
            pids: pids(&t[3], "join's PidOrPids")?,
        }),
        (Some("leave"), 4) => {
            let Term::List(gs) = &t[3] else {
                return Err(WireError::Malformed(PROTOCOL, "leave's Groups"));
            };
            Ok(Message::Leave {
                peer: pid(&t[1], "leave's Peer")?,
                pids: pids(&t[2], "leave's PidOrPids")?,
                groups: gs.clone(),
            })
        }
        _ => Err(unknown(&Term::Tuple(t))),
    }
}

fn unknown(t: &Term) -> WireError {
    let head = match t {
        Term::Tuple(t) if !t.is_empty() => &t[0],
        t => t,
    };
    let mut s = head.to_string();
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    WireError::Unknown(PROTOCOL, s)
}

fn pid(t: &Term, what: &'static str) -> Result<ExternalPid, WireError> {
    match t {
        Term::Pid(p) => Ok(p.clone()),
        _ => Err(WireError::Malformed(PROTOCOL, what)),
    }
}

/// A pid or a proper list of pids.
fn pids(t: &Term, what: &'static str) -> Result<Vec<ExternalPid>, WireError> {
    match t {
        Term::Pid(p) => Ok(vec![p.clone()]),
        Term::List(l) => l.iter().map(|p| pid(p, what)).collect(),
        _ => Err(WireError::Malformed(PROTOCOL, what)),
    }
}

/// `[{Group, [Pid]}]`.
fn groups(t: &Term) -> Result<Vec<(Term, Vec<ExternalPid>)>, WireError> {
    let Term::List(l) = t else {
        return Err(WireError::Malformed(PROTOCOL, "sync's Groups"));
    };
    l.iter()
        .map(|g| match g {
            Term::Tuple(p) if p.len() == 2 => match &p[1] {
                Term::List(_) => Ok((p[0].clone(), pids(&p[1], "sync's Groups")?)),
                _ => Err(WireError::Malformed(PROTOCOL, "sync's Groups")),
            },
            _ => Err(WireError::Malformed(PROTOCOL, "sync's Groups")),
        })
        .collect()
}

fn encode(t: &Term) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    t.encode(&mut out);
    out
}

fn pid_list(pids: &[ExternalPid]) -> Term {
    Term::List(pids.iter().cloned().map(Term::Pid).collect())
}

/// `{discover, Me}`, encoded.
pub(crate) fn discover(me: &ExternalPid) -> Vec<u8> {
    encode(&Term::tuple(vec![
        Term::atom("discover"),
        Term::Pid(me.clone()),
    ]))
}

/// `{'$gen_cast', {sync, Me, [{Group, [Pid]}]}}`, encoded.
pub(crate) fn sync(me: &ExternalPid, groups: &[(Term, Vec<ExternalPid>)]) -> Vec<u8> {
    let groups = groups
        .iter()
        .map(|(g, p)| Term::tuple(vec![g.clone(), pid_list(p)]))
        .collect();
    encode(&Term::tuple(vec![
        Term::atom("$gen_cast"),
        Term::tuple(vec![
            Term::atom("sync"),
            Term::Pid(me.clone()),
            Term::List(groups),
        ]),
    ]))
}

/// `{join, Me, Group, [Pid]}`, encoded.
pub(crate) fn join(me: &ExternalPid, group: &Term, pids: &[ExternalPid]) -> Vec<u8> {
    encode(&Term::tuple(vec![
        Term::atom("join"),
        Term::Pid(me.clone()),
        group.clone(),
        pid_list(pids),
    ]))
}

/// `{leave, Me, [Pid], Groups}`, encoded.
pub(crate) fn leave(me: &ExternalPid, pids: &[ExternalPid], groups: &[Term]) -> Vec<u8> {
    encode(&Term::tuple(vec![
        Term::atom("leave"),
        Term::Pid(me.clone()),
        pid_list(pids),
        Term::List(groups.to_vec()),
    ]))
}
