//! `global`'s messages to a node's `global_name_server`, as OTP's `global.erl`
//! (protocol version 8, OTP 25 to 27) sends them: what another node can send to
//! otter's server ([`decode`]), and what it sends back ([`init_connect`],
//! [`lock_set`], [`exchange`], [`resolved`], [`in_sync`]).
//!
//! | message from a peer | what otter does (`global.rs`) |
//! |---|---|
//! | `{'$gen_cast', {init_connect, {Vsn, HisTag}, Node, {locker, _, Known, Locker}}}` | remembers `HisTag`; sends its own `init_connect` if it had not |
//! | `{'$gen_cast', {lock_set, Locker, true, Known, MyTag}}` (vsn 8; vsn 7 has no `MyTag`) | `{lock_set, Self, true, [], HisTag}`, then `{exchange, node(), [], [], HisTag}` |
//! | `{'$gen_cast', {lock_set, Locker, false, ...}}` | nothing (the peer's locker tries again) |
//! | `{'$gen_cast', {exchange, Node, Names, NamesExt, MyTag}}` | `{resolved, node(), [], [], unused, [], HisTag}`; `Names` (`[{Name, Pid, Method}]`) go into the node's view (`global/names.rs`) |
//! | `{'$gen_cast', {resolved, Node, Ops, Known, _, NamesExt, MyTag}}` | `{in_sync, node(), true}` to each node of `Known` |
//! | `{'$gen_cast', {new_nodes, Node, Ops, NamesExt, Nodes, Extra}}` | `{in_sync, node(), true}` to each node of `Nodes`; `Ops` (`{insert, {Name, Pid, Method}}`, `{delete, Name}`) applied to the view |
//! | `{'$gen_cast', {in_sync \| async_del_name \| async_del_lock, ...}}` | nothing |
//! | `{'$gen_call', From, {set_lock \| del_lock, Id}}` | `true` |
//! | `{'$gen_call', From, {register \| register_ext, Name, Pid, ...}}` | `yes`; the name goes into the view |
//! | `{'$gen_call', From, {unregister, Name}}` | `ok`; the name leaves the view |
//! | `{'$gen_call', From, get_known \| get_synced \| get_names_ext}` | `[]` |
//! | `{'$gen_call', From, get_protocol_version}` | `8` |
//! | `{cancel_connect, Node, MyTag}` | a new `init_connect` (the peer restarted its side) |
//! | `{init_connect_ack, ...}`, `{lost_connection, ...}` | nothing |
//!
//! Every decoded message is a value or a [`WireError`], whatever the bytes. That the
//! node a message names is the one it came from is checked by the server, not here.

use crate::dist::etf::{Atom, ExternalPid, Term};

/// The `global` protocol version otter speaks (OTP 25's).
pub(crate) const VSN: i64 = 8;

/// A message to `global_name_server` from another node.
#[derive(Debug, PartialEq)]
pub(crate) enum Message {
    /// `init_connect`: the peer starts its side of the handshake, under `his_tag`.
    InitConnect { node: Atom, his_tag: Term },
    /// `lock_set` from the peer's locker: `tag` is our tag for that node (absent
    /// before version 8).
    LockSet {
        locker: ExternalPid,
        set: bool,
        tag: Option<Term>,
    },
    /// `exchange`: the peer's names, once its lock is set.
    Exchange {
        node: Atom,
        names: Vec<(Term, ExternalPid)>,
        tag: Term,
    },
    /// `resolved`: the peer is done; `known` are the nodes it knows.
    Resolved { node: Atom, known: Vec<Atom> },
    /// `new_nodes`: nodes the sender has joined to its cluster, and the name
    /// operations of that join.
    NewNodes { nodes: Vec<Atom>, ops: Vec<Op> },
    /// `{cancel_connect, Node, Tag}`.
    CancelConnect { node: Atom, tag: Term },
    /// A `gen_server` call.
    Call { from: Term, request: Request },
    /// One of `global`'s messages that needs nothing from a node without names: its
    /// tag.
    Ignored(&'static str),
}

/// A name operation of `new_nodes`.
#[derive(Debug, PartialEq)]
pub(crate) enum Op {
    /// `{insert, {Name, Pid, Method}}`.
    Insert(Term, ExternalPid),
    /// `{delete, Name}`.
    Delete(Term),
}

/// What a `gen_server` call to `global_name_server` asks.
#[derive(Debug, PartialEq)]
pub(crate) enum Request {
    /// `{set_lock, Id}` or `{del_lock, Id}`.
    Lock,
    /// `{register, Name, Pid, Method}` or `{register_ext, Name, Pid, Method, RegNode}`.
    Register { name: Term, pid: ExternalPid },
    /// `{unregister, Name}`.
    Unregister { name: Term },
    /// `get_known`, `get_synced`, `get_names_ext`.
    EmptyList,
    /// `get_protocol_version`.
    ProtocolVersion,
    /// Anything else (Erlang's server logs it and does not answer).
    Other(String),
}

impl Request {
    /// The answer otter gives, if any.
    pub(crate) fn reply(&self) -> Option<Term> {
        match self {
            Request::Lock => Some(Term::atom("true")),
            Request::Register { .. } => Some(Term::atom("yes")),
            Request::Unregister { .. } => Some(Term::atom("ok")),
            Request::EmptyList => Some(Term::List(Vec::new())),
            Request::ProtocolVersion => Some(Term::Int(VSN)),
            Request::Other(_) => None,
        }
    }
}

pub(crate) use crate::dist::wire_error::WireError;

/// This protocol's name in its [`WireError`]s.
const PROTOCOL: &str = "global";

/// Decodes a message to `global_name_server` (encoded, 131 included).
pub(crate) fn decode(payload: &[u8]) -> Result<Message, WireError> {
    let term = Term::decode(payload).map_err(|e| WireError::NotATerm(e.to_string()))?;
    let Term::Tuple(t) = &term else {
        return Err(unknown(&term));
    };
    match (t.first().and_then(Term::as_atom), t.len()) {
        (Some("$gen_cast"), 2) => cast(&t[1]),
        (Some("$gen_call"), 3) => Ok(Message::Call {
            from: t[1].clone(),
            request: request(&t[2]),
        }),
        (Some("cancel_connect"), 3) => Ok(Message::CancelConnect {
            node: atom(&t[1], "cancel_connect's Node")?,
            tag: t[2].clone(),
        }),
        (Some("init_connect_ack"), _) => Ok(Message::Ignored("init_connect_ack")),
        (Some("lost_connection"), _) => Ok(Message::Ignored("lost_connection")),
        _ => Err(unknown(&term)),
    }
}

fn cast(c: &Term) -> Result<Message, WireError> {
    let Term::Tuple(c) = c else {
        return Err(unknown(c));
    };
    match (c.first().and_then(Term::as_atom), c.len()) {
        (Some("init_connect"), 4) => {
            // `{Vsn, Tag}`, or a longer tuple from a later version.
            let his_tag = match &c[1] {
                Term::Tuple(v) if v.len() >= 2 => v[1].clone(),
                _ => return Err(WireError::Malformed(PROTOCOL, "init_connect's Vsn")),
            };
            Ok(Message::InitConnect {
                node: atom(&c[2], "init_connect's Node")?,
                his_tag,
            })
        }
        (Some("lock_set"), 4 | 5) => Ok(Message::LockSet {
            locker: match &c[1] {
                Term::Pid(p) => p.clone(),
                _ => return Err(WireError::Malformed(PROTOCOL, "lock_set's Pid")),
            },
            set: match c[2].as_atom() {
                Some("true") => true,
                Some("false") => false,
                _ => return Err(WireError::Malformed(PROTOCOL, "lock_set's Set")),
            },
            tag: c.get(4).cloned(),
        }),
        (Some("exchange"), 5) => Ok(Message::Exchange {
            node: atom(&c[1], "exchange's Node")?,
            names: names(&c[2])?,
            tag: c[4].clone(),
        }),
        (Some("resolved"), 7) => Ok(Message::Resolved {
            node: atom(&c[1], "resolved's Node")?,
            known: nodes(&c[3], "resolved's Known")?,
        }),
        (Some("new_nodes"), 6) => Ok(Message::NewNodes {
            nodes: nodes(&c[4], "new_nodes's Nodes")?,
            ops: ops(&c[2])?,
        }),
        (Some("in_sync"), _) => Ok(Message::Ignored("in_sync")),
        (Some("async_del_name"), _) => Ok(Message::Ignored("async_del_name")),
        (Some("async_del_lock"), _) => Ok(Message::Ignored("async_del_lock")),
        _ => Err(unknown(&Term::Tuple(c.clone()))),
    }
}

fn request(r: &Term) -> Request {
    let head = match r {
        Term::Tuple(t) => t.first().and_then(Term::as_atom),
        t => t.as_atom(),
    };
    match head {
        Some("set_lock" | "del_lock") if matches!(r, Term::Tuple(t) if t.len() == 2) => {
            Request::Lock
        }
        Some("register" | "register_ext") => match r {
            Term::Tuple(t) if t.len() == 4 || t.len() == 5 => match &t[2] {
                Term::Pid(pid) => Request::Register {
                    name: t[1].clone(),
                    pid: pid.clone(),
                },
                _ => Request::Other(head_of(r)),
            },
            _ => Request::Other(head_of(r)),
        },
        Some("unregister") => match r {
            Term::Tuple(t) if t.len() == 2 => Request::Unregister { name: t[1].clone() },
            _ => Request::Other(head_of(r)),
        },
        Some("get_known" | "get_synced" | "get_names_ext") if matches!(r, Term::Atom(_)) => {
            Request::EmptyList
        }
        Some("get_protocol_version") if matches!(r, Term::Atom(_)) => Request::ProtocolVersion,
        _ => Request::Other(head_of(r)),
    }
}

fn atom(t: &Term, what: &'static str) -> Result<Atom, WireError> {
    match t {
        Term::Atom(a) => Ok(a.clone()),
        _ => Err(WireError::Malformed(PROTOCOL, what)),
    }
}

/// A list of nodes, each `Node` or `{Node, Vsn}`.
fn nodes(t: &Term, what: &'static str) -> Result<Vec<Atom>, WireError> {
    let Term::List(l) = t else {
        return Err(WireError::Malformed(PROTOCOL, what));
    };
    l.iter()
        .map(|n| match n {
            Term::Atom(a) => Ok(a.clone()),
            Term::Tuple(p) if p.len() == 2 => atom(&p[0], what),
            _ => Err(WireError::Malformed(PROTOCOL, what)),
        })
        .collect()
}

/// `[{Name, Pid, Method}]`: an `exchange`'s names.
fn names(t: &Term) -> Result<Vec<(Term, ExternalPid)>, WireError> {
    let Term::List(l) = t else {
        return Err(WireError::Malformed(PROTOCOL, "exchange's Names"));
    };
    l.iter()
        .map(|n| match n {
            Term::Tuple(e) if e.len() == 3 => match &e[1] {
                Term::Pid(p) => Ok((e[0].clone(), p.clone())),
                _ => Err(WireError::Malformed(PROTOCOL, "exchange's Names")),
            },
            _ => Err(WireError::Malformed(PROTOCOL, "exchange's Names")),
        })
        .collect()
}

/// `[{insert, {Name, Pid, Method}} | {delete, Name}]`: `new_nodes`' operations.
fn ops(t: &Term) -> Result<Vec<Op>, WireError> {
    let bad = || WireError::Malformed(PROTOCOL, "new_nodes's Ops");
    let Term::List(l) = t else {
        return Err(bad());
    };
    l.iter()
        .map(|o| {
            let Term::Tuple(o) = o else {
                return Err(bad());
            };
            match (o.first().and_then(Term::as_atom), o.get(1)) {
                (Some("insert"), Some(Term::Tuple(e))) if o.len() == 2 && e.len() == 3 => {
                    match &e[1] {
                        Term::Pid(p) => Ok(Op::Insert(e[0].clone(), p.clone())),
                        _ => Err(bad()),
                    }
                }
                (Some("delete"), Some(name)) if o.len() == 2 => Ok(Op::Delete(name.clone())),
                _ => Err(bad()),
            }
        })
        .collect()
}

fn head_of(t: &Term) -> String {
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
    s
}

fn unknown(t: &Term) -> WireError {
    WireError::Unknown(PROTOCOL, head_of(t))
}

fn encode(t: &Term) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    t.encode(&mut out);
    out
}

fn gen_cast(t: Term) -> Vec<u8> {
    encode(&Term::tuple(vec![Term::atom("$gen_cast"), t]))
}

/// `{'$gen_cast', {init_connect, {8, MyTag}, Me, {locker, no_longer_a_pid, [], Server}}}`:
/// this node holds no names and knows no nodes; its locker is the server itself.
pub(crate) fn init_connect(me: &Atom, my_tag: i64, server: &ExternalPid) -> Vec<u8> {
    gen_cast(Term::tuple(vec![
        Term::atom("init_connect"),
        Term::tuple(vec![Term::Int(VSN), Term::Int(my_tag)]),
        Term::Atom(me.clone()),
        Term::tuple(vec![
            Term::atom("locker"),
            Term::atom("no_longer_a_pid"),
            Term::List(Vec::new()),
            Term::Pid(server.clone()),
        ]),
    ]))
}

/// `{'$gen_cast', {lock_set, Server, true, [], HisTag}}` (version 8; without `HisTag`
/// for a peer that sent none).
pub(crate) fn lock_set(server: &ExternalPid, his_tag: Option<&Term>) -> Vec<u8> {
    let mut t = vec![
        Term::atom("lock_set"),
        Term::Pid(server.clone()),
        Term::atom("true"),
        Term::List(Vec::new()),
    ];
    if let Some(tag) = his_tag {
        t.push(tag.clone());
    }
    gen_cast(Term::tuple(t))
}

/// `{'$gen_cast', {exchange, Me, [], [], HisTag}}`: no names.
pub(crate) fn exchange(me: &Atom, his_tag: &Term) -> Vec<u8> {
    gen_cast(Term::tuple(vec![
        Term::atom("exchange"),
        Term::Atom(me.clone()),
        Term::List(Vec::new()),
        Term::List(Vec::new()),
        his_tag.clone(),
    ]))
}

/// `{'$gen_cast', {resolved, Me, [], [], unused, [], HisTag}}`: no operations, no
/// known nodes, no external names.
pub(crate) fn resolved(me: &Atom, his_tag: &Term) -> Vec<u8> {
    gen_cast(Term::tuple(vec![
        Term::atom("resolved"),
        Term::Atom(me.clone()),
        Term::List(Vec::new()),
        Term::List(Vec::new()),
        Term::atom("unused"),
        Term::List(Vec::new()),
        his_tag.clone(),
    ]))
}

/// `{'$gen_cast', {in_sync, Me, true}}`.
pub(crate) fn in_sync(me: &Atom) -> Vec<u8> {
    gen_cast(Term::tuple(vec![
        Term::atom("in_sync"),
        Term::Atom(me.clone()),
        Term::atom("true"),
    ]))
}
