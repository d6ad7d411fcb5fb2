//! pg's message decoder against hostile input, fuzz-style and seeded (as
//! `erpc/tests.rs` fuzzes erpc's, and `tests/dist_etf.rs` the term decoder), so a
//! failure reproduces: each message a scope process receives, as Erlang's `pg.erl`
//! writes it and as otter writes it, mutated byte by byte. Whatever the bytes, the
//! decoder returns a message or an error, never panics; and the messages otter writes
//! decode to what was written.

use crate::dist::etf::Term;
use crate::dist::fuzz::{self, Rng, encode, pid};
use crate::dist::pg::wire::{self, Message, WireError};

/// The bytes the mutations favour: tags and length bytes of the terms pg reads.
const INTERESTING: [u8; 14] = [
    0, 1, 0x7f, 0xff, 88, 97, 98, 104, 105, 106, 107, 108, 109, 119,
];

/// [`fuzz::mutate`] with this suite's [`INTERESTING`] bytes.
fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    fuzz::mutate(rng, bytes, &INTERESTING)
}

/// The messages a scope receives, as Erlang's `pg` writes them (a single pid where
/// it sends one, `discover` with a version as OTP 28 will).
fn erlang_messages() -> Vec<Vec<u8>> {
    let group = Term::tuple(vec![Term::atom("workers"), Term::Int(3)]);
    vec![
        encode(&Term::tuple(vec![
            Term::atom("discover"),
            Term::Pid(pid(1)),
        ])),
        encode(&Term::tuple(vec![
            Term::atom("discover"),
            Term::Pid(pid(1)),
            Term::Int(1),
        ])),
        encode(&Term::tuple(vec![
            Term::atom("join"),
            Term::Pid(pid(1)),
            group.clone(),
            Term::Pid(pid(2)),
        ])),
        encode(&Term::tuple(vec![
            Term::atom("leave"),
            Term::Pid(pid(1)),
            Term::Pid(pid(2)),
            Term::list(vec![group.clone(), Term::atom("other")]),
        ])),
        encode(&Term::tuple(vec![
            Term::atom("$gen_cast"),
            Term::tuple(vec![
                Term::atom("sync"),
                Term::Pid(pid(1)),
                Term::list(vec![
                    Term::tuple(vec![group, Term::list(vec![Term::Pid(pid(2))])]),
                    Term::tuple(vec![
                        Term::binary(b"g".to_vec()),
                        Term::list(vec![Term::Pid(pid(3)), Term::Pid(pid(3))]),
                    ]),
                ]),
            ]),
        ])),
    ]
}

#[test]
fn each_message_erlang_sends_decodes() {
    let m = erlang_messages();
    assert_eq!(wire::decode(&m[0]), Ok(Message::Discover { peer: pid(1) }));
    assert_eq!(wire::decode(&m[1]), Ok(Message::Discover { peer: pid(1) }));
    assert!(matches!(
        wire::decode(&m[2]),
        Ok(Message::Join { ref pids, .. }) if *pids == [pid(2)]
    ));
    assert!(matches!(
        wire::decode(&m[3]),
        Ok(Message::Leave { ref pids, ref groups, .. }) if *pids == [pid(2)] && groups.len() == 2
    ));
    let Ok(Message::Sync { groups, .. }) = wire::decode(&m[4]) else {
        panic!("a sync");
    };
    assert_eq!(groups[1].1, [pid(3), pid(3)]);
    // Anything else is an error, not a message.
    for bad in [
        Term::atom("garbage"),
        Term::tuple(vec![Term::atom("join"), Term::Pid(pid(1)), Term::atom("g")]),
        Term::tuple(vec![
            Term::atom("join"),
            Term::atom("notapid"),
            Term::atom("g"),
            Term::Pid(pid(2)),
        ]),
        Term::tuple(vec![
            Term::atom("leave"),
            Term::Pid(pid(1)),
            Term::Pid(pid(2)),
            Term::atom("notalist"),
        ]),
        Term::tuple(vec![
            Term::atom("join"),
            Term::Pid(pid(1)),
            Term::atom("g"),
            Term::list(vec![Term::Pid(pid(2)), Term::Int(1)]),
        ]),
    ] {
        assert!(wire::decode(&encode(&bad)).is_err(), "{bad}");
    }
    assert!(matches!(
        wire::decode(&[131, 255]),
        Err(WireError::NotATerm(_))
    ));
}

#[test]
fn the_messages_otter_sends_decode_to_what_was_sent() {
    let me = pid(9);
    let g = Term::tuple(vec![Term::atom("g"), Term::Int(1)]);
    assert_eq!(
        wire::decode(&wire::discover(&me)),
        Ok(Message::Discover { peer: me.clone() })
    );
    assert_eq!(
        wire::decode(&wire::join(&me, &g, &[pid(1), pid(1)])),
        Ok(Message::Join {
            peer: me.clone(),
            group: g.clone(),
            pids: vec![pid(1), pid(1)],
        })
    );
    assert_eq!(
        wire::decode(&wire::leave(&me, &[pid(2)], &[g.clone(), g.clone()])),
        Ok(Message::Leave {
            peer: me.clone(),
            pids: vec![pid(2)],
            groups: vec![g.clone(), g.clone()],
        })
    );
    let groups = vec![(g.clone(), vec![pid(1)]), (Term::atom("h"), vec![])];
    assert_eq!(
        wire::decode(&wire::sync(&me, &groups)),
        Ok(Message::Sync { peer: me, groups })
    );
}

#[test]
fn mutated_pg_messages_never_panic() {
    let mut samples = erlang_messages();
    samples.push(wire::sync(
        &pid(9),
        &[(Term::atom("g"), vec![pid(1), pid(2)])],
    ));
    for (k, bytes) in samples.iter().enumerate() {
        for seed in 1..=8_000u64 {
            let mut rng = Rng((seed << 8 | k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let m = mutate(&mut rng, bytes);
            if let Ok(message) = wire::decode(&m) {
                // What the scope reads of a message before it acts on it.
                let _ = message.peer();
                let _ = message.members().count();
            }
        }
    }
}
