//! `global`'s message decoder against hostile input, fuzz-style and seeded (as
//! `pg/tests.rs`): the messages Erlang's `global_name_server` and locker send to
//! another node's server, as OTP 25's `global.erl` writes them, mutated byte by byte.
//! Whatever the bytes, the decoder returns a message or an error, never panics.

use crate::dist::etf::{Atom, Term};
use crate::dist::fuzz::{self, Rng, encode, pid};
use crate::dist::global::wire::{self, Message, Op, Request, WireError};

/// The bytes the mutations favour: tags and length bytes of the terms read here.
const INTERESTING: [u8; 14] = [
    0, 1, 0x7f, 0xff, 88, 97, 98, 104, 105, 106, 107, 108, 113, 119,
];

fn cast(t: Term) -> Term {
    Term::tuple(vec![Term::atom("$gen_cast"), t])
}

fn call(req: Term) -> Term {
    Term::tuple(vec![
        Term::atom("$gen_call"),
        Term::tuple(vec![Term::Pid(pid(3)), Term::Int(77)]),
        req,
    ])
}

fn erl() -> Term {
    Term::atom("erl@host")
}

/// Each message otter reads, as Erlang writes it.
fn erlang_messages() -> Vec<Term> {
    let known = Term::list(vec![Term::tuple(vec![Term::atom("b@host"), Term::Int(8)])]);
    let name = Term::tuple(vec![
        Term::atom("foo"),
        Term::Pid(pid(4)),
        Term::Fun(vec![
            113, 119, 6, b'g', b'l', b'o', b'b', b'a', b'l', 119, 1, b'f', 97, 3,
        ]),
    ]);
    vec![
        cast(Term::tuple(vec![
            Term::atom("init_connect"),
            Term::tuple(vec![Term::Int(8), Term::Int(-576460752303423420)]),
            erl(),
            Term::tuple(vec![
                Term::atom("locker"),
                Term::atom("no_longer_a_pid"),
                Term::Map(vec![]),
                Term::Pid(pid(1)),
            ]),
        ])),
        cast(Term::tuple(vec![
            Term::atom("lock_set"),
            Term::Pid(pid(1)),
            Term::atom("true"),
            known.clone(),
            Term::Int(5),
        ])),
        cast(Term::tuple(vec![
            Term::atom("exchange"),
            erl(),
            Term::list(vec![name.clone()]),
            Term::list(vec![]),
            Term::Int(5),
        ])),
        cast(Term::tuple(vec![
            Term::atom("resolved"),
            erl(),
            Term::list(vec![]),
            known.clone(),
            Term::atom("unused"),
            Term::list(vec![]),
            Term::Int(5),
        ])),
        cast(Term::tuple(vec![
            Term::atom("new_nodes"),
            erl(),
            Term::list(vec![Term::tuple(vec![Term::atom("insert"), name])]),
            Term::list(vec![]),
            known,
            Term::list(vec![]),
        ])),
        cast(Term::tuple(vec![
            Term::atom("in_sync"),
            erl(),
            Term::atom("true"),
        ])),
        call(Term::tuple(vec![
            Term::atom("set_lock"),
            Term::tuple(vec![
                Term::atom("global"),
                Term::list(vec![Term::Pid(pid(1)), Term::Pid(pid(2))]),
            ]),
        ])),
        call(Term::atom("get_known")),
        Term::tuple(vec![Term::atom("cancel_connect"), erl(), Term::Int(5)]),
    ]
}

#[test]
fn each_message_erlang_sends_decodes() {
    let decoded: Vec<_> = erlang_messages()
        .iter()
        .map(|t| wire::decode(&encode(t)))
        .collect();
    assert!(decoded.iter().all(Result::is_ok), "{decoded:?}");
    assert_eq!(
        decoded[0],
        Ok(Message::InitConnect {
            node: Atom::new("erl@host"),
            his_tag: Term::Int(-576460752303423420),
        })
    );
    assert_eq!(
        decoded[3],
        Ok(Message::Resolved {
            node: Atom::new("erl@host"),
            known: vec![Atom::new("b@host")],
        })
    );
    assert_eq!(
        decoded[2],
        Ok(Message::Exchange {
            node: Atom::new("erl@host"),
            names: vec![(Term::atom("foo"), pid(4))],
            tag: Term::Int(5),
        })
    );
    assert!(matches!(
        &decoded[4],
        Ok(Message::NewNodes { nodes, ops })
            if nodes == &[Atom::new("b@host")]
                && ops == &[Op::Insert(Term::atom("foo"), pid(4))]
    ));
    assert!(matches!(
        &decoded[6],
        Ok(Message::Call {
            request: Request::Lock,
            ..
        })
    ));
    assert!(matches!(
        wire::decode(&encode(&call(Term::atom("info")))),
        Ok(Message::Call {
            request: Request::Other(_),
            ..
        })
    ));
    assert!(matches!(
        wire::decode(&encode(&Term::atom("hello"))),
        Err(WireError::Unknown(..))
    ));
    assert!(matches!(
        wire::decode(&[131, 255]),
        Err(WireError::NotATerm(_))
    ));
}

#[test]
fn the_messages_otter_sends_are_globals() {
    let me = Atom::new("otter@host");
    let tag = Term::Int(5);
    let server = pid(9);
    for bytes in [
        wire::init_connect(&me, 1, &server),
        wire::lock_set(&server, Some(&tag)),
        wire::lock_set(&server, None),
        wire::exchange(&me, &tag),
        wire::resolved(&me, &tag),
        wire::in_sync(&me),
    ] {
        let d = wire::decode(&bytes);
        assert!(d.is_ok(), "{d:?}");
    }
}

#[test]
fn mutated_global_messages_never_panic() {
    for (k, t) in erlang_messages().iter().enumerate() {
        let bytes = encode(t);
        for seed in 1..=4_000u64 {
            let mut rng = Rng((seed << 8 | k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let m = fuzz::mutate(&mut rng, &bytes, &INTERESTING);
            if let Ok(Message::Call { request, .. }) = wire::decode(&m) {
                let _ = request.reply();
            }
        }
    }
}
