//! The `erpc` decoders against hostile input, fuzz-style and seeded (as
//! `tests/dist_etf.rs` fuzzes the term decoder), so a failure reproduces: a
//! `SPAWN_REQUEST`'s control term and argument list, a `rex` request, the typed
//! argument decoding of a registered function, and the outcome an otter caller
//! reads from an Erlang node's exit reason, each mutated byte by byte. Whatever the
//! bytes, each decoder returns a value or an error, never panics, and a request
//! that still decodes is one the node would answer.

use crate::dist::control::Control;
use crate::dist::erpc::client::outcome;
use crate::dist::erpc::{Ask, as_list, decode_list, parse, parse_rex, stack};
use crate::dist::etf::{self, Atom, ExternalRef, Term};
use crate::dist::fuzz::{self, Rng, encode, pid};

/// The bytes the mutations favour: tags and length bytes of the terms erpc reads.
const INTERESTING: [u8; 12] = [0, 1, 0x7f, 0xff, 97, 98, 104, 106, 107, 108, 109, 119];

/// [`fuzz::mutate`] with this suite's [`INTERESTING`] bytes.
fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    fuzz::mutate(rng, bytes, &INTERESTING)
}

fn reference(n: u32) -> ExternalRef {
    ExternalRef {
        node: Atom::new("erl@host"),
        creation: 7,
        id: vec![n, 0, 0],
    }
}

/// What Erlang's `erpc:call(otter, calc, add, [1, 2])` sends: the control term and
/// the argument list.
fn erpc_call() -> (Term, Vec<u8>) {
    let control = Control::SpawnRequest {
        req_id: reference(1),
        from: pid(40),
        group_leader: Term::Pid(pid(41)),
        module: Atom::new("erpc"),
        function: Atom::new("execute_call"),
        arity: 4,
        opts: Term::list(vec![Term::atom("monitor")]),
    }
    .encode();
    let payload = Term::list(vec![
        Term::Ref(reference(2)),
        Term::atom("calc"),
        Term::atom("add"),
        Term::list(vec![Term::Int(1), Term::Int(300)]),
    ]);
    (control, encode(&payload))
}

/// Decodes a control term and, if it is a spawn request, its payload, as the
/// reader and `spawn_request` do; then the arguments as a registered function would.
fn decode_request(control: &[u8], payload: &[u8]) {
    let Ok(t) = Term::decode(control) else {
        return;
    };
    let Ok(Control::SpawnRequest {
        module,
        function,
        arity,
        opts,
        ..
    }) = Control::decode(&t, None)
    else {
        return;
    };
    // The reader passes on only a payload that is exactly one term.
    if etf::skip_prefix(payload).ok() != Some(payload.len()) {
        return;
    }
    if let Ok(r) = parse(&module, &function, arity, &opts, payload) {
        decode_arguments(&r.args);
        let _ = stack(&r.module, &r.function, &r.args);
    }
}

/// The argument decoding of functions of a few shapes.
fn decode_arguments(args: &[u8]) {
    let _ = decode_list::<(i64, i64)>(args);
    let _ = decode_list::<(String,)>(args);
    let _ = decode_list::<Vec<i64>>(args);
    let _ = decode_list::<()>(args);
    let _ = decode_list::<(Term, Term)>(args);
    let _ = decode_list::<(Vec<u8>, Option<f64>, bool)>(args);
}

#[test]
fn an_erpc_call_request_decodes_to_what_erlang_asked() {
    let (control, payload) = erpc_call();
    let Ok(Control::SpawnRequest {
        module,
        function,
        arity,
        opts,
        from,
        ..
    }) = Control::decode(&control, None)
    else {
        panic!("not a spawn request");
    };
    assert_eq!(from, pid(40));
    let r = parse(&module, &function, arity, &opts, &payload).unwrap();
    assert!(matches!(&r.ask, Ask::Call { res } if *res == Term::Ref(reference(2))));
    assert_eq!((r.module.as_str(), r.function.as_str()), ("calc", "add"));
    assert!(r.monitor);
    assert_eq!(decode_list::<(i64, i64)>(&r.args), Ok((1, 300)));
    // Anything else is refused: another entry point, a malformed list.
    assert_eq!(
        parse(&Atom::new("io"), &Atom::new("format"), 1, &opts, &payload).unwrap_err(),
        "notsup"
    );
    assert_eq!(
        parse(&module, &function, arity, &opts, &encode(&Term::Int(1))).unwrap_err(),
        "badarg"
    );
}

#[test]
fn mutated_spawn_requests_never_panic() {
    let (control, payload) = erpc_call();
    let control = encode(&control);
    for seed in 1..=20_000u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        match rng.below(3) {
            0 => decode_request(&mutate(&mut rng, &control), &payload),
            1 => decode_request(&control, &mutate(&mut rng, &payload)),
            _ => decode_request(&mutate(&mut rng, &control), &mutate(&mut rng, &payload)),
        }
    }
}

#[test]
fn mutated_arguments_never_panic() {
    let args = [
        Term::list(vec![Term::Int(1), Term::Int(2)]),
        Term::list(vec![Term::binary(b"text".to_vec())]),
        Term::list(vec![
            Term::binary(vec![1, 2]),
            Term::Float(1.5),
            Term::atom("true"),
        ]),
        Term::list(vec![]),
        Term::list(vec![Term::tuple(vec![Term::atom("a"), Term::Pid(pid(3))])]),
    ];
    for (k, a) in args.iter().enumerate() {
        let bytes = encode(a);
        for seed in 1..=4_000u64 {
            let mut rng = Rng((seed << 8 | k as u64).wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
            let m = mutate(&mut rng, &bytes);
            decode_arguments(&m);
            let _ = as_list(&m);
        }
    }
}

#[test]
fn mutated_rex_requests_never_panic() {
    let call = Term::tuple(vec![
        Term::atom("$gen_call"),
        Term::tuple(vec![Term::Pid(pid(5)), Term::Ref(reference(9))]),
        Term::tuple(vec![
            Term::atom("call"),
            Term::atom("calc"),
            Term::atom("add"),
            Term::list(vec![Term::Int(1), Term::Int(2)]),
            Term::Pid(pid(6)),
        ]),
    ]);
    let bytes = encode(&call);
    let (from, m, f, args) = parse_rex(&bytes).expect("a rex call");
    assert!(from.is_some());
    assert_eq!((m.as_str(), f.as_str()), ("calc", "add"));
    assert_eq!(decode_list::<(i64, i64)>(&args.0), Ok((1, 2)));
    for seed in 1..=20_000u64 {
        let mut rng = Rng(seed.wrapping_mul(0xd129_0b4f_5a2e_b5c3) | 1);
        if let Some((_, _, _, args)) = parse_rex(&mutate(&mut rng, &bytes)) {
            decode_arguments(&args.0);
        }
    }
}

#[test]
fn mutated_exit_reasons_give_an_outcome_never_a_panic() {
    let res = Term::Ref(reference(3));
    let reasons = [
        Term::tuple(vec![res.clone(), Term::atom("return"), Term::Int(5)]),
        Term::tuple(vec![res.clone(), Term::atom("throw"), Term::atom("x")]),
        Term::tuple(vec![res.clone(), Term::atom("exit"), Term::atom("bye")]),
        Term::tuple(vec![
            res.clone(),
            Term::atom("error"),
            Term::atom("badarg"),
            Term::list(vec![]),
        ]),
        Term::tuple(vec![
            res.clone(),
            Term::atom("error"),
            Term::tuple(vec![Term::atom("erpc"), Term::atom("system_limit")]),
        ]),
        Term::atom("noconnection"),
        Term::atom("killed"),
    ];
    for (k, r) in reasons.iter().enumerate() {
        // Unmutated, each is its class.
        let _ = outcome(r);
        let bytes = encode(r);
        for seed in 1..=3_000u64 {
            let mut rng = Rng((seed << 8 | k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            if let Ok(t) = Term::decode(&mutate(&mut rng, &bytes)) {
                let _ = outcome(&t);
            }
        }
    }
    use crate::dist::erpc::ErpcError;
    assert_eq!(outcome(&reasons[0]), Ok(Term::Int(5)));
    assert_eq!(outcome(&reasons[1]), Err(ErpcError::Throw(Term::atom("x"))));
    assert_eq!(
        outcome(&reasons[2]),
        Err(ErpcError::Exit(Term::atom("bye")))
    );
    assert!(matches!(outcome(&reasons[3]), Err(ErpcError::Error { .. })));
    assert_eq!(
        outcome(&reasons[4]),
        Err(ErpcError::Erpc(Term::atom("system_limit")))
    );
    assert_eq!(outcome(&reasons[5]), Err(ErpcError::Noconnection));
    assert_eq!(
        outcome(&reasons[6]),
        Err(ErpcError::Signal(Term::atom("killed")))
    );
}

// The same, over a real connection: a peer sends hundreds of spawn requests, valid
// and mutated (each still one term, as the reader requires), and every one is
// answered (a `SPAWN_REPLY`, then the monitor's exit if it asked for one), the
// connection stays up, and a valid call at the end is answered with its value.

mod wire {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::{Rng, encode, mutate};
    use crate::dist::connection::frame_raw;
    use crate::dist::control::Control;
    use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};
    use crate::dist::tests::{read_frame, unique};
    use crate::dist::{epmd, handshake};
    use crate::net::TcpStream;
    use crate::{Context, Runtime};

    #[test]
    fn hostile_spawn_requests_are_each_answered_and_the_connection_serves_on() {
        const N: u32 = 400;
        let rt = Runtime::builder().threads(2).build().unwrap();
        let node = crate::dist::tests::test_node(&rt);
        node.register_rpc("calc", "add", |(a, b): (i64, i64)| Ok(a + b));
        let target = node.name().to_string();
        let result = rt.block_on(move |_: Context<()>| async move {
            crate::timer::timeout(Duration::from_secs(60), async move {
                let (alive, h) = target.split_once('@').unwrap();
                let port = epmd::port_please(h, alive).unwrap().port;
                let name = unique("fuzzpeer");
                let mut s = TcpStream::connect(([127, 0, 0, 1], port).into())
                    .await
                    .unwrap();
                let local = handshake::LocalNode::new(&name, 7, true, "secret");
                handshake::connect(&mut s, &local, &target).await.unwrap();
                let me = ExternalPid {
                    node: Atom::new(&name),
                    id: 1,
                    serial: 0,
                    creation: 7,
                };
                let reference = |i: u32| ExternalRef {
                    node: Atom::new(&name),
                    creation: 7,
                    id: vec![i, 1, 2],
                };
                let args = Term::list(vec![Term::Int(1), Term::Int(2)]);
                let call = encode(&Term::list(vec![
                    Term::Ref(reference(0)),
                    Term::atom("calc"),
                    Term::atom("add"),
                    args.clone(),
                ]));
                let cast = encode(&Term::list(vec![
                    Term::atom("calc"),
                    Term::atom("add"),
                    args.clone(),
                ]));
                let mut rng = Rng(0x005e_ed0f_e49c);
                let mut frames = Vec::new();
                for i in 1..=N {
                    let (entry, arity, base) = match rng.below(5) {
                        0 => ("execute_cast", 3, &cast),
                        1 => ("format", 1, &call),
                        _ => ("execute_call", 4, &call),
                    };
                    let mut payload = base.clone();
                    if rng.below(4) != 0 {
                        // A mutation that is still one term (else the reader drops
                        // the connection, by design: `connection/pump.rs`).
                        for _ in 0..50 {
                            let m = mutate(&mut rng, base);
                            if etf::skip_prefix(&m).ok() == Some(m.len()) {
                                payload = m;
                                break;
                            }
                        }
                    }
                    let opts = match rng.below(3) {
                        0 => Term::list(vec![]),
                        _ => Term::list(vec![Term::atom("monitor")]),
                    };
                    let control = Control::SpawnRequest {
                        req_id: reference(i),
                        from: me.clone(),
                        group_leader: Term::Pid(me.clone()),
                        module: Atom::new(if entry == "format" { "io" } else { "erpc" }),
                        function: Atom::new(entry),
                        arity,
                        opts,
                    };
                    frames.extend(frame_raw(&control, &payload).unwrap());
                }
                s.write_all(&frames).await.unwrap();
                // Every request gets its reply; each monitored spawn its exit.
                let mut replies: HashMap<u32, Term> = HashMap::new();
                let mut monitored = 0;
                let mut exits = 0;
                while replies.len() < N as usize || exits < monitored {
                    let (control, _) = read_frame(&mut s).await;
                    let Term::Tuple(t) = control else {
                        panic!("not a control tuple")
                    };
                    match (&t[0], &t[1], t.get(3)) {
                        // `{31, ReqId, To, Flags, Result}`
                        (Term::Int(31), Term::Ref(r), _) => {
                            if matches!(t[4], Term::Pid(_)) && t[3] == Term::Int(2) {
                                monitored += 1;
                            }
                            assert!(replies.insert(r.id[0], t[4].clone()).is_none());
                        }
                        // `{21, From, To, Ref, Reason}`
                        (Term::Int(21), Term::Pid(_), Some(Term::Ref(_))) => exits += 1,
                        _ => panic!("unexpected {t:?}"),
                    }
                }
                // The connection still serves: a valid call, its value.
                let control = Control::SpawnRequest {
                    req_id: reference(N + 1),
                    from: me.clone(),
                    group_leader: Term::Pid(me.clone()),
                    module: Atom::new("erpc"),
                    function: Atom::new("execute_call"),
                    arity: 4,
                    opts: Term::list(vec![Term::atom("monitor")]),
                };
                s.write_all(&frame_raw(&control, &call).unwrap())
                    .await
                    .unwrap();
                loop {
                    let (control, _) = read_frame(&mut s).await;
                    let Term::Tuple(t) = control else { continue };
                    if t[0] == Term::Int(21) && t[3] == Term::Ref(reference(N + 1)) {
                        return (replies, t[4].clone());
                    }
                }
            })
            .await
            .expect("the node answers within the limit")
        });
        let (replies, last) = result.unwrap();
        // Both kinds of answer occurred: some requests ran, some were refused.
        assert!(replies.values().any(|r| matches!(r, Term::Pid(_))));
        assert!(replies.values().any(|r| r.as_atom() == Some("badarg")));
        assert!(replies.values().any(|r| r.as_atom() == Some("notsup")));
        let Term::Tuple(t) = last else {
            panic!("{last:?}")
        };
        assert_eq!(t[1..], [Term::atom("return"), Term::Int(3)]);
    }
}
