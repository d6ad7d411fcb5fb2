//! Reply addresses from real Erlang nodes: the `From` of a `gen_server:call` (an
//! `[alias | Ref]` tag from OTP 24+, a plain reference from older callers) and an
//! `alias()` sent in a message, answered from a plain otter process.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use otter::dist::etf::{Atom, Term};
use otter::dist::{Alias, BadTerm, CallFrom, Node};
use otter::{Context, Runtime};
use serde::Deserialize;

/// What `answer` takes: a call (`{'$gen_call', From, Request}`).
#[derive(Debug, Deserialize)]
#[serde(from = "(Atom, CallFrom, Term)")]
enum Call {
    Call(Atom, CallFrom, Term),
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<(Atom, CallFrom, Term)> for Call {
    fn from((tag, from, request): (Atom, CallFrom, Term)) -> Call {
        Call::Call(tag, from, request)
    }
}

impl From<BadTerm> for Call {
    fn from(b: BadTerm) -> Call {
        Call::Bad(b)
    }
}

/// What `to_alias` takes: `{Alias, Msg}`.
#[derive(Debug, Deserialize)]
#[serde(from = "(Alias, Term)")]
enum ToAlias {
    Msg(Alias, Term),
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<(Alias, Term)> for ToAlias {
    fn from((alias, msg): (Alias, Term)) -> ToAlias {
        ToAlias::Msg(alias, msg)
    }
}

impl From<BadTerm> for ToAlias {
    fn from(b: BadTerm) -> ToAlias {
        ToAlias::Bad(b)
    }
}

/// `answer` replies `{answered, Request}` to every call; `to_alias` sends `{got, Msg}`
/// to the alias of every `{Alias, Msg}`.
fn answerer(rt: &Runtime, node: &Node) {
    let pid = rt.handle().spawn(|mut cx: Context<Call>| async move {
        loop {
            if let Call::Call(tag, from, request) = cx.recv().await
                && tag.as_str() == "$gen_call"
            {
                from.reply(&(Atom::new("answered"), request)).unwrap();
            }
        }
    });
    node.register("answer", pid);
    let pid = rt.handle().spawn(|mut cx: Context<ToAlias>| async move {
        loop {
            if let ToAlias::Msg(alias, msg) = cx.recv().await {
                alias.send(&(Atom::new("got"), msg)).unwrap();
            }
        }
    });
    node.register("to_alias", pid);
}

rt_test!(
    an_erlang_call_with_an_alias_tag_gets_its_reply,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        answerer(rt, &node);
        let mut e = erlang::Node::builder("erl").start();
        let to = otter_node::at("answer", &node);
        // OTP 24+: `From` is `{Pid, [alias | Ref]}`, the reply goes to the alias.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({to}, ping, 5000)")),
            "{answered,ping}"
        );
        // A plain reference as the tag (pre-24 callers): the reply goes to the pid.
        assert_eq!(
            e.eval_ok(&format!(
                "Ref = make_ref(), {to} ! {{'$gen_call', {{self(), Ref}}, old}}, \
                 receive {{Ref, R}} -> R after 5000 -> timeout end"
            )),
            "{answered,old}"
        );
    }
);

rt_test!(
    an_alias_sent_in_a_message_is_answered_as_an_alias,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        answerer(rt, &node);
        let mut e = erlang::Node::builder("erl").start();
        let to = otter_node::at("to_alias", &node);
        assert_eq!(
            e.eval_ok(&format!(
                "A = alias(), {to} ! {{A, hello}}, \
                 receive {{got, M}} -> M after 5000 -> timeout end"
            )),
            "hello"
        );
        // Once the alias is gone, what is sent to it is dropped by its node.
        assert_eq!(
            e.eval_ok(&format!(
                "B = alias(), unalias(B), {to} ! {{B, late}}, \
                 C = alias(), {to} ! {{C, after_it}}, \
                 receive {{got, M}} -> M after 5000 -> timeout end"
            )),
            "after_it"
        );
    }
);

#[test]
fn an_alias_decodes_only_on_a_node() {
    let mut bytes = Vec::new();
    Term::Ref(otter::dist::etf::ExternalRef {
        node: Atom::new("a@b"),
        creation: 1,
        id: vec![1, 2, 3],
    })
    .encode(&mut bytes);
    assert!(otter::dist::etf::from_slice::<Alias>(&bytes).is_err());
}
