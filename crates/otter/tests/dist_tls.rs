//! Distribution over TLS (`NodeBuilder::tls`, `src/dist/tls.rs`) against real
//! `erl -proto_dist inet_tls -ssl_dist_optfile ...` nodes, with certificates each test
//! makes (`support/tls.rs`): messages both ways whichever side connects, large
//! messages intact, two otter nodes, and the refusals: a plain peer (both ways, with
//! the reason reported), a certificate from another CA (both ways), a wrong cookie
//! (still checked inside TLS).

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/reports.rs"]
mod reports;
#[path = "support/rt.rs"]
mod support;
#[path = "support/tls.rs"]
mod tls;

use std::time::Duration;

use otter::dist::etf::Term;
use otter::dist::{ConnectError, HandshakeError, Node, TlsConfig};
use otter::{Context, Pid, Runtime};
use otter_node::{at, inbox};
use tls::Pki;

const WAIT: Duration = Duration::from_secs(20);

/// An Erlang echo process registered as `echo`: `{From, Msg}` -> `From ! {echo, Msg}`.
const ECHO: &str = "register(echo, spawn(fun Loop() -> receive {From, Msg} -> From ! {echo, Msg}, Loop() end end))";

fn tls_config(pki: &Pki) -> TlsConfig {
    TlsConfig::from_pem_files(pki.cert(), pki.key(), pki.ca()).expect("the test's PEM files load")
}

/// An otter node with TLS distribution on `pki`'s certificates.
fn tls_node(rt: &Runtime, pki: &Pki) -> Node {
    otter_node::start_with(rt, |b| b.tls(tls_config(pki)))
}

/// Sends `{Inbox, Msg}` to `echo` on `peer` for each of `msgs`, in order, from one
/// process of `node`.
fn send_to_echo(rt: &Runtime, node: &Node, peer: &str, inbox: Pid<Term>, msgs: Vec<Term>) {
    let (n, peer) = (node.clone(), peer.to_string());
    rt.handle().spawn(move |cx: Context<()>| async move {
        for msg in msgs {
            n.send_named(cx.pid(), "echo", &peer, &(inbox, msg))
                .unwrap();
        }
    });
}

/// Whether `node` can connect to `peer` (from a process on its runtime).
fn connect(rt: &Runtime, node: &Node, peer: &str) -> Result<(), ConnectError> {
    let (n, peer) = (node.clone(), peer.to_string());
    rt.block_on(move |_: Context<()>| async move { n.connect(&peer).await })
        .unwrap()
}

rt_test!(
    otter_connects_to_an_erlang_tls_node_and_messages_flow_both_ways,
    |rt: &Runtime| {
        let pki = Pki::new("otter test CA");
        let node = tls_node(rt, &pki);
        let (me, rx) = inbox::<Term>(rt, &node);
        let mut e = pki.erl(ECHO);
        // otter opens the connection: its first message goes out over TLS.
        send_to_echo(rt, &node, e.name(), me, vec![Term::atom("hello")]);
        assert_eq!(rx.recv_timeout(WAIT).unwrap().to_string(), "{echo,hello}");
        // Erlang answers on the same connection, to the name.
        e.eval_ok(&format!("{} ! {{from_erlang, 42}}", at("inbox", &node)));
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap().to_string(),
            "{from_erlang,42}"
        );
        // Erlang sees the connection as TLS distribution's.
        let info = e.eval_ok(&format!("net_kernel:node_info('{}')", node.name()));
        assert!(info.contains("up"), "{info}");
        assert_eq!(node.nodes(), vec![e.name().to_string()]);
    }
);

rt_test!(
    an_erlang_tls_node_connects_to_an_otter_tls_node,
    |rt: &Runtime| {
        let pki = Pki::new("otter test CA");
        let node = tls_node(rt, &pki);
        let (_, rx) = inbox::<Term>(rt, &node);
        let mut e = pki.erl("ok");
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pong"
        );
        e.eval_ok(&format!("{} ! {{hello, <<\"tls\">>}}", at("inbox", &node)));
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap().to_string(),
            "{hello,<<\"tls\">>}"
        );
        let hidden = e.eval_ok("nodes(hidden)");
        assert!(hidden.contains(node.name()), "{hidden}");
    }
);

rt_test!(large_messages_cross_tls_intact_in_order, |rt: &Runtime| {
    let pki = Pki::new("otter test CA");
    let node = tls_node(rt, &pki);
    let (me, rx) = inbox::<Term>(rt, &node);
    let e = pki.erl(ECHO);
    // Larger than a TLS record (16 KiB) and than rustls's buffer limit (64 KiB):
    // the writer's loop of encrypt-and-flush, the reader's of many records.
    let sizes = [1 << 20, 70_000, 3, 16_385, 1 << 20];
    let msgs = sizes.iter().enumerate().map(|(i, &size)| {
        let bytes: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
        Term::tuple(vec![Term::Int(i as i64), Term::binary(bytes)])
    });
    send_to_echo(rt, &node, e.name(), me, msgs.collect());
    for (i, &size) in sizes.iter().enumerate() {
        let got = rx.recv_timeout(WAIT).unwrap();
        let Term::Tuple(echo) = &got else {
            panic!("not a tuple");
        };
        let Term::Tuple(msg) = &echo[1] else {
            panic!("not the message");
        };
        assert_eq!(msg[0], Term::Int(i as i64), "out of order");
        let expected: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
        assert_eq!(msg[1], Term::binary(expected), "message {i} changed");
    }
});

rt_test!(two_otter_nodes_talk_over_tls, |rt: &Runtime| {
    let pki = Pki::new("otter test CA");
    let a = tls_node(rt, &pki);
    let rt_b = Runtime::builder().threads(2).build().unwrap();
    let b = tls_node(&rt_b, &pki);
    let (_, rx) = inbox::<Term>(&rt_b, &b);
    let (na, to) = (a.clone(), b.name().to_string());
    rt.handle().spawn(move |cx: Context<()>| async move {
        for i in 0..100 {
            na.send_named(cx.pid(), "inbox", &to, &Term::Int(i))
                .unwrap();
        }
    });
    for i in 0..100 {
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Term::Int(i));
    }
    assert_eq!(b.nodes(), vec![a.name().to_string()]);
});

rt_test!(
    a_tls_node_refuses_plain_peers_both_ways_and_says_why,
    |rt: &Runtime| {
        let pki = Pki::new("otter test CA");
        let node = tls_node(rt, &pki);
        let (_, rx) = inbox::<Term>(rt, &node);
        // The collector is in place before anything is refused.
        reports::reports();
        let mut plain = erlang::Node::builder("erl").start();
        // A plain Erlang node's handshake is refused, and the refusal is reported
        // with its reason.
        assert_eq!(
            plain.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pang"
        );
        plain.eval_ok(&format!("{} ! sneaky", at("inbox", &node)));
        let refusals = || {
            reports::reports()
                .into_iter()
                .filter(|r| r.target == "otter::dist" && r.get("node") == node.name())
                .collect::<Vec<_>>()
        };
        support::eventually("the refusal is reported", WAIT, || !refusals().is_empty());
        // Once per peer: the node's other attempts are refused without a word.
        for _ in 0..3 {
            assert_eq!(
                plain.eval_ok(&format!("net_adm:ping('{}')", node.name())),
                "pang"
            );
        }
        let said = refusals();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].get("reason").contains("did not speak TLS"),
            "{said:?}"
        );
        assert_eq!(said[0].get("peer"), "127.0.0.1");
        // Our attempt to reach the plain node fails in TLS's handshake (the plain node
        // closes at once or waits), and the error says so.
        match connect(rt, &node, plain.name()) {
            Err(e @ (ConnectError::Tls(_) | ConnectError::Timeout { tls: true })) => {
                assert!(e.to_string().contains("TLS"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        assert!(node.nodes().is_empty());
        // A plain otter node is refused by a TLS Erlang node.
        let rt_plain = Runtime::builder().threads(1).build().unwrap();
        let plain_otter = otter_node::start(&rt_plain);
        let e = pki.erl("ok");
        assert!(connect(&rt_plain, &plain_otter, e.name()).is_err());
    }
);

rt_test!(
    a_certificate_from_another_ca_is_refused_both_ways,
    |rt: &Runtime| {
        let ours = Pki::new("otter test CA");
        let theirs = Pki::new("another CA");
        let node = tls_node(rt, &ours);
        let mut e = theirs.erl("ok");
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pang"
        );
        match connect(rt, &node, e.name()) {
            Err(e @ ConnectError::Tls(_)) => assert!(e.to_string().contains("TLS"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(node.nodes().is_empty());
    }
);

rt_test!(
    an_expired_certificate_is_refused_both_ways,
    |rt: &Runtime| {
        let pki = Pki::new("otter test CA");
        // Erlang shows the expired certificate: otter refuses it as server and client.
        let node = tls_node(rt, &pki);
        let mut e = pki.erl_expired("ok");
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pang"
        );
        match connect(rt, &node, e.name()) {
            Err(ConnectError::Tls(why)) => {
                // The certificate's refusal is rustls's error, the source.
                let source = std::error::Error::source(&*why).map(ToString::to_string);
                assert!(
                    source.is_some_and(|s| s.contains("xpired")),
                    "{why} ({:?})",
                    std::error::Error::source(&*why)
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(node.nodes().is_empty());
        // otter shows it: Erlang refuses it both ways.
        let rt_old = Runtime::builder().threads(1).build().unwrap();
        let old = otter_node::start_with(&rt_old, |b| {
            b.tls(TlsConfig::from_pem_files(pki.expired_cert(), pki.key(), pki.ca()).unwrap())
        });
        let mut e = pki.erl("ok");
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", old.name())),
            "pang"
        );
        assert!(connect(&rt_old, &old, e.name()).is_err());
        assert!(old.nodes().is_empty());
    }
);

rt_test!(the_cookie_is_still_checked_inside_tls, |rt: &Runtime| {
    let pki = Pki::new("otter test CA");
    let node = tls_node(rt, &pki);
    let mut e = erlang::Node::builder("erl")
        .cookie("wrong")
        .arg("-proto_dist")
        .arg("inet_tls")
        .arg("-ssl_dist_optfile")
        .arg(&pki.optfile().display().to_string())
        .start();
    assert_eq!(
        e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
        "pang"
    );
    match connect(rt, &node, e.name()) {
        // Past TLS, the distribution's handshake: Erlang closes on the wrong cookie.
        Err(ConnectError::Handshake(e)) => {
            assert!(matches!(*e, HandshakeError::CookieRejected), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(node.nodes().is_empty());
});

#[test]
fn bad_pem_input_is_an_error_that_names_it() {
    let pki = Pki::new("otter test CA");
    let cert = std::fs::read(pki.cert()).unwrap();
    let key = std::fs::read(pki.key()).unwrap();
    let ca = std::fs::read(pki.ca()).unwrap();
    let err = TlsConfig::from_pem(b"not a certificate", &key, &ca).unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
    let err = TlsConfig::from_pem(&cert, b"", &ca).unwrap_err();
    assert!(err.to_string().contains("private key"), "{err}");
    let err = TlsConfig::from_pem(&cert, &key, b"").unwrap_err();
    assert!(err.to_string().contains("CA certificate"), "{err}");
    let err =
        TlsConfig::from_pem_files(pki.dir().join("missing.pem"), pki.key(), pki.ca()).unwrap_err();
    assert!(err.to_string().contains("missing.pem"), "{err}");
    // A key that is not the certificate's.
    let other = Pki::new("another CA");
    let other_key = std::fs::read(other.key()).unwrap();
    assert!(TlsConfig::from_pem(&cert, &other_key, &ca).is_err());
    assert!(TlsConfig::from_pem(&cert, &key, &ca).is_ok());
}

/// Round trips of `msg` to the process registered as `echo` on `peer`, `n` times from
/// one process of `node`: µs per round trip.
fn round_trips(rt: &Runtime, node: &Node, peer: &str, msg: Term, n: usize) -> f64 {
    let (nd, peer) = (node.clone(), peer.to_string());
    rt.block_on(move |mut cx: Context<Term>| async move {
        // The connection and the first frames out of the way.
        nd.send_named(cx.pid(), "echo", &peer, &(cx.pid(), msg.clone()))
            .unwrap();
        cx.recv().await;
        let start = std::time::Instant::now();
        for _ in 0..n {
            nd.send_named(cx.pid(), "echo", &peer, &(cx.pid(), msg.clone()))
                .unwrap();
            cx.recv().await;
        }
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    })
    .unwrap()
}

/// The same from an Erlang node: `n` round trips of a `size`-byte binary to `echo` on
/// `peer`, µs per round trip.
fn erlang_round_trips(e: &mut erlang::Node, peer: &str, size: usize, n: usize) -> f64 {
    let v = e.eval_ok(&format!(
        "Bin = binary:copy(<<7>>, {size}), P = {{echo, '{peer}'}}, \
         P ! {{self(), Bin}}, receive {{echo, _}} -> ok end, \
         T0 = erlang:monotonic_time(nanosecond), \
         lists:foreach(fun(_) -> P ! {{self(), Bin}}, receive {{echo, _}} -> ok end end, \
                       lists:seq(1, {n})), \
         (erlang:monotonic_time(nanosecond) - T0) / {n} / 1000"
    ));
    v.parse().unwrap_or_else(|_| panic!("not a number: {v}"))
}

/// An otter process registered as `echo` on `node`: `{From, Msg}` -> `From ! {echo, Msg}`.
fn otter_echo(rt: &Runtime, node: &Node) {
    let n = node.clone();
    let pid = rt.handle().spawn(move |mut cx: Context<Term>| async move {
        loop {
            if let Term::Tuple(mut t) = cx.recv().await
                && t.len() == 2
                && let Some(msg) = t.pop()
                && let Term::Pid(from) = &t[0]
            {
                let from: Pid<Term> = n.remote_pid(from);
                from.send(Term::tuple(vec![Term::atom("echo"), msg]));
            }
        }
    });
    node.register("echo", pid);
}

/// The cost of TLS on round trips, otter and Erlang both ways and otter to otter, against
/// Erlang to Erlang over TLS and otter to Erlang over plain TCP, 64 B, 4 KiB and 1 MiB
/// binaries, in one run, alternated (`cargo test --release --features tls --test
/// dist_tls -- --ignored --nocapture`): a measurement, not a check.
#[test]
#[ignore]
fn tls_round_trip_cost() {
    let pki = Pki::new("otter test CA");
    let rt_a = Runtime::builder().threads(2).build().unwrap();
    let a = tls_node(&rt_a, &pki);
    let rt_b = Runtime::builder().threads(2).build().unwrap();
    let b = tls_node(&rt_b, &pki);
    otter_echo(&rt_b, &b);
    let e = pki.erl(ECHO);
    let mut c = pki.erl("ok");
    let rt_p = Runtime::builder().threads(2).build().unwrap();
    let p = otter_node::start(&rt_p);
    let ep = erlang::Node::builder("erl").setup(ECHO).start();
    let cases = [
        "otter→Erlang TLS",
        "Erlang→otter TLS",
        "otter↔otter TLS",
        "Erlang↔Erlang TLS",
        "otter→Erlang plain",
    ];
    for (size, n) in [(64usize, 2000usize), (4096, 2000), (1 << 20, 20)] {
        let bin = Term::binary(vec![7u8; size]);
        let mut t: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        for _ in 0..5 {
            t[0].push(round_trips(&rt_a, &a, e.name(), bin.clone(), n));
            t[1].push(erlang_round_trips(&mut c, b.name(), size, n));
            t[2].push(round_trips(&rt_a, &a, b.name(), bin.clone(), n));
            t[3].push(erlang_round_trips(&mut c, e.name(), size, n));
            t[4].push(round_trips(&rt_p, &p, ep.name(), bin.clone(), n));
        }
        for (case, v) in cases.iter().zip(&mut t) {
            v.sort_by(f64::total_cmp);
            println!(
                "{size:>8} B {case:<20} {:>9.1} µs [{:.1}–{:.1}]",
                v[2], v[0], v[4]
            );
        }
    }
}
