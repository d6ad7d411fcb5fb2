//! Control messages: the first term of every distribution frame (reference:
//! `erl_dist_protocol`, "Protocol between connected nodes").
//!
//! Every message otter may receive is decoded, whichever of the optional flags the
//! peer uses (the `_TT` forms carry a trace token, which is ignored; the `PAYLOAD_`
//! forms carry the exit reason as the payload term). otter sends the plain forms.

use crate::etf::{Atom, ExternalPid, ExternalRef, Term};

/// Where a message or a monitor goes: a pid or a registered name.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A process.
    Pid(ExternalPid),
    /// The process registered under a name on the receiving node.
    Name(Atom),
}

/// A control message, decoded. Each field is the element of the control tuple that
/// `erl_dist_protocol` names the same way (`FromPid`, `ToPid`, `Reason`, `Ref`,
/// `ReqId`...), in its order.
#[allow(missing_docs)] // The fields: see above.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// `LINK` (1): `from` links to `to`.
    Link { from: ExternalPid, to: ExternalPid },
    /// `SEND` (2), `SEND_SENDER` (22) and their `_TT` forms; payload follows.
    Send { to: ExternalPid },
    /// `EXIT` (3) / `PAYLOAD_EXIT` (24): a link's exit signal.
    Exit {
        from: ExternalPid,
        to: ExternalPid,
        reason: Option<Term>,
    },
    /// `UNLINK` (4, before UNLINK_ID).
    Unlink { from: ExternalPid, to: ExternalPid },
    /// `REG_SEND` (6) and its `_TT` form; payload follows.
    RegSend { from: ExternalPid, to: Atom },
    /// `EXIT2` (8) / `PAYLOAD_EXIT2` (26): `exit/2`.
    Exit2 {
        from: ExternalPid,
        to: ExternalPid,
        reason: Option<Term>,
    },
    /// `MONITOR_P` (19).
    Monitor {
        from: ExternalPid,
        to: Target,
        reference: ExternalRef,
    },
    /// `DEMONITOR_P` (20).
    Demonitor {
        from: ExternalPid,
        to: Target,
        reference: ExternalRef,
    },
    /// `MONITOR_P_EXIT` (21) / `PAYLOAD_MONITOR_P_EXIT` (28).
    MonitorExit {
        from: Target,
        to: ExternalPid,
        reference: ExternalRef,
        reason: Option<Term>,
    },
    /// `ALIAS_SEND` (33) and its `_TT` form; payload follows.
    AliasSend {
        from: ExternalPid,
        alias: ExternalRef,
    },
    /// `UNLINK_ID` (35).
    UnlinkId {
        id: u64,
        from: ExternalPid,
        to: ExternalPid,
    },
    /// `UNLINK_ID_ACK` (36).
    UnlinkIdAck {
        id: u64,
        from: ExternalPid,
        to: ExternalPid,
    },
    /// `SPAWN_REQUEST` (29) and its `_TT` form (30); the argument list follows
    /// (`erpc.rs` answers the ones it knows).
    SpawnRequest {
        req_id: ExternalRef,
        from: ExternalPid,
        group_leader: Term,
        module: Atom,
        function: Atom,
        arity: u64,
        opts: Term,
    },
    /// `SPAWN_REPLY` (31) and its `_TT` form (32): `result` is the new pid or an
    /// error atom; `flags` bit 1 a link, bit 2 a monitor set up by the spawning node.
    SpawnReply {
        req_id: ExternalRef,
        to: ExternalPid,
        flags: u64,
        result: Term,
    },
    /// Anything else (`GROUP_LEADER`, `NODE_LINK`...): ignored (otter announces none
    /// of the capabilities that would make a peer send them).
    Other(i64),
}

/// Why a control term was refused.
#[derive(Debug)]
pub struct BadControl(pub String);

fn pid(t: &Term) -> Result<ExternalPid, BadControl> {
    match t {
        Term::Pid(p) => Ok(p.clone()),
        other => Err(BadControl(format!("expected a pid, got {other:?}"))),
    }
}

fn reference(t: &Term) -> Result<ExternalRef, BadControl> {
    match t {
        Term::Ref(r) => Ok(r.clone()),
        other => Err(BadControl(format!("expected a reference, got {other:?}"))),
    }
}

fn target(t: &Term) -> Result<Target, BadControl> {
    match t {
        Term::Pid(p) => Ok(Target::Pid(p.clone())),
        Term::Atom(a) => Ok(Target::Name(a.clone())),
        other => Err(BadControl(format!(
            "expected a pid or a name, got {other:?}"
        ))),
    }
}

fn atom(t: &Term) -> Result<Atom, BadControl> {
    match t {
        Term::Atom(a) => Ok(a.clone()),
        other => Err(BadControl(format!("expected an atom, got {other:?}"))),
    }
}

fn int(t: &Term) -> Result<u64, BadControl> {
    match t {
        Term::Int(i) if *i >= 0 => Ok(*i as u64),
        Term::BigInt(b) => i128::try_from(b)
            .ok()
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| BadControl("unlink id out of range".into())),
        other => Err(BadControl(format!("expected an integer, got {other:?}"))),
    }
}

impl Control {
    /// Decodes a control term. `payload` is the term that followed it, if any: the
    /// `PAYLOAD_` forms take their reason from it.
    pub fn decode(t: &Term, payload: Option<&Term>) -> Result<Control, BadControl> {
        let Term::Tuple(e) = t else {
            return Err(BadControl(format!(
                "a control message is a tuple, got {t:?}"
            )));
        };
        let Some(Term::Int(op)) = e.first() else {
            return Err(BadControl("a control message starts with its op".into()));
        };
        let arg = |i: usize| {
            e.get(i)
                .ok_or_else(|| BadControl(format!("control {op}: missing element {i}")))
        };
        Ok(match *op {
            1 => Control::Link {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
            },
            2 | 12 => Control::Send { to: pid(arg(2)?)? },
            22 | 23 => Control::Send { to: pid(arg(2)?)? },
            3 | 13 => Control::Exit {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
                reason: Some(arg(if *op == 3 { 3 } else { 4 })?.clone()),
            },
            24 | 25 => Control::Exit {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
                reason: payload.cloned(),
            },
            4 => Control::Unlink {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
            },
            6 | 16 => Control::RegSend {
                from: pid(arg(1)?)?,
                to: atom(arg(3)?)?,
            },
            8 | 18 => Control::Exit2 {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
                reason: Some(arg(if *op == 8 { 3 } else { 4 })?.clone()),
            },
            26 | 27 => Control::Exit2 {
                from: pid(arg(1)?)?,
                to: pid(arg(2)?)?,
                reason: payload.cloned(),
            },
            19 => Control::Monitor {
                from: pid(arg(1)?)?,
                to: target(arg(2)?)?,
                reference: reference(arg(3)?)?,
            },
            20 => Control::Demonitor {
                from: pid(arg(1)?)?,
                to: target(arg(2)?)?,
                reference: reference(arg(3)?)?,
            },
            21 => Control::MonitorExit {
                from: target(arg(1)?)?,
                to: pid(arg(2)?)?,
                reference: reference(arg(3)?)?,
                reason: Some(arg(4)?.clone()),
            },
            28 => Control::MonitorExit {
                from: target(arg(1)?)?,
                to: pid(arg(2)?)?,
                reference: reference(arg(3)?)?,
                reason: payload.cloned(),
            },
            33 | 34 => Control::AliasSend {
                from: pid(arg(1)?)?,
                alias: reference(arg(2)?)?,
            },
            35 => Control::UnlinkId {
                id: int(arg(1)?)?,
                from: pid(arg(2)?)?,
                to: pid(arg(3)?)?,
            },
            36 => Control::UnlinkIdAck {
                id: int(arg(1)?)?,
                from: pid(arg(2)?)?,
                to: pid(arg(3)?)?,
            },
            29 | 30 => {
                let Term::Tuple(mfa) = arg(4)? else {
                    return Err(BadControl("SPAWN_REQUEST: the entry is not a tuple".into()));
                };
                let [m, f, a] = &mfa[..] else {
                    return Err(BadControl(
                        "SPAWN_REQUEST: the entry is not {M, F, A}".into(),
                    ));
                };
                Control::SpawnRequest {
                    req_id: reference(arg(1)?)?,
                    from: pid(arg(2)?)?,
                    group_leader: arg(3)?.clone(),
                    module: atom(m)?,
                    function: atom(f)?,
                    arity: int(a)?,
                    opts: arg(5)?.clone(),
                }
            }
            31 | 32 => Control::SpawnReply {
                req_id: reference(arg(1)?)?,
                to: pid(arg(2)?)?,
                flags: int(arg(3)?)?,
                result: arg(4)?.clone(),
            },
            op => Control::Other(op),
        })
    }

    /// The process a signal claims to come from, if it names one: it must be a process
    /// of the peer the connection goes to.
    pub fn sender(&self) -> Option<&ExternalPid> {
        match self {
            Control::Link { from, .. }
            | Control::Exit { from, .. }
            | Control::Unlink { from, .. }
            | Control::RegSend { from, .. }
            | Control::Exit2 { from, .. }
            | Control::Monitor { from, .. }
            | Control::Demonitor { from, .. }
            | Control::AliasSend { from, .. }
            | Control::UnlinkId { from, .. }
            | Control::UnlinkIdAck { from, .. }
            | Control::SpawnRequest { from, .. } => Some(from),
            Control::MonitorExit {
                from: Target::Pid(from),
                ..
            } => Some(from),
            _ => None,
        }
    }

    /// Whether a payload term follows this control message.
    pub fn op_has_payload(op: i64) -> bool {
        matches!(
            op,
            2 | 6 | 12 | 16 | 22 | 23 | 24 | 25 | 26 | 27 | 28 | 33 | 34 | 29 | 30
        )
    }

    /// The control term otter sends for this message.
    pub fn encode(&self) -> Term {
        let t = |v: Vec<Term>| Term::Tuple(v);
        let p = |p: &ExternalPid| Term::Pid(p.clone());
        let r = |r: &ExternalRef| Term::Ref(r.clone());
        let tg = |x: &Target| match x {
            Target::Pid(x) => Term::Pid(x.clone()),
            Target::Name(a) => Term::Atom(a.clone()),
        };
        let reason = |x: &Option<Term>| x.clone().unwrap_or_else(|| Term::atom("normal"));
        match self {
            Control::Link { from, to } => t(vec![Term::Int(1), p(from), p(to)]),
            Control::Send { to } => t(vec![Term::Int(2), Term::atom(""), p(to)]),
            Control::Exit {
                from,
                to,
                reason: x,
            } => t(vec![Term::Int(3), p(from), p(to), reason(x)]),
            Control::Unlink { from, to } => t(vec![Term::Int(4), p(from), p(to)]),
            Control::RegSend { from, to } => t(vec![
                Term::Int(6),
                p(from),
                Term::atom(""),
                Term::Atom(to.clone()),
            ]),
            Control::Exit2 {
                from,
                to,
                reason: x,
            } => t(vec![Term::Int(8), p(from), p(to), reason(x)]),
            Control::Monitor {
                from,
                to,
                reference,
            } => t(vec![Term::Int(19), p(from), tg(to), r(reference)]),
            Control::Demonitor {
                from,
                to,
                reference,
            } => t(vec![Term::Int(20), p(from), tg(to), r(reference)]),
            Control::MonitorExit {
                from,
                to,
                reference,
                reason: x,
            } => t(vec![
                Term::Int(21),
                tg(from),
                p(to),
                r(reference),
                reason(x),
            ]),
            Control::AliasSend { from, alias } => t(vec![Term::Int(33), p(from), r(alias)]),
            Control::UnlinkId { id, from, to } => {
                t(vec![Term::Int(35), Term::from(*id), p(from), p(to)])
            }
            Control::UnlinkIdAck { id, from, to } => {
                t(vec![Term::Int(36), Term::from(*id), p(from), p(to)])
            }
            Control::SpawnRequest {
                req_id,
                from,
                group_leader,
                module,
                function,
                arity,
                opts,
            } => t(vec![
                Term::Int(29),
                r(req_id),
                p(from),
                group_leader.clone(),
                t(vec![
                    Term::Atom(module.clone()),
                    Term::Atom(function.clone()),
                    Term::from(*arity),
                ]),
                opts.clone(),
            ]),
            Control::SpawnReply {
                req_id,
                to,
                flags,
                result,
            } => t(vec![
                Term::Int(31),
                r(req_id),
                p(to),
                Term::from(*flags),
                result.clone(),
            ]),
            Control::Other(op) => t(vec![Term::Int(*op)]),
        }
    }
}
