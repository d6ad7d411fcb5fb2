//! The `erpc` decoders against hostile input, fuzz-style and seeded (as
//! `tests/dist_etf.rs` fuzzes the term decoder), so a failure reproduces: a
//! `SPAWN_REQUEST`'s control term and argument list, a `rex` request, the typed
//! argument decoding of a registered function, and the outcome an otter caller
//! reads from an Erlang node's exit reason, each mutated byte by byte. Whatever the
//! bytes, each decoder returns a value or an error, never panics, and a request
//! that still decodes is one the node would answer.

use crate::dist::control::Control;
use crate::dist::erpc::{Ask, as_list, decode_list, outcome, parse, parse_rex, stack};
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};

/// A small seeded generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn usize(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

/// One to four random edits: a byte changed (often to a tag or a length byte), a
/// byte inserted or removed, a cut, a run duplicated.
fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    const INTERESTING: [u8; 12] = [0, 1, 0x7f, 0xff, 97, 98, 104, 106, 107, 108, 109, 119];
    let mut b = bytes.to_vec();
    for _ in 0..=rng.below(4) {
        if b.is_empty() {
            b.push(131);
        }
        let i = rng.usize(b.len());
        match rng.below(6) {
            0 => b[i] = rng.next() as u8,
            1 => b[i] = INTERESTING[rng.usize(INTERESTING.len())],
            2 => b.insert(i, INTERESTING[rng.usize(INTERESTING.len())]),
            3 => {
                b.remove(i);
            }
            4 => b.truncate(i),
            _ => {
                let end = (i + 1 + rng.usize(8)).min(b.len());
                let run = b[i..end].to_vec();
                b.splice(i..i, run);
            }
        }
    }
    b
}

fn pid(n: u32) -> ExternalPid {
    ExternalPid {
        node: Atom::new("erl@host"),
        id: n,
        serial: 0,
        creation: 7,
    }
}

fn reference(n: u32) -> ExternalRef {
    ExternalRef {
        node: Atom::new("erl@host"),
        creation: 7,
        id: vec![n, 0, 0],
    }
}

fn encode(t: &Term) -> Vec<u8> {
    let mut out = Vec::new();
    t.encode(&mut out);
    out
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
