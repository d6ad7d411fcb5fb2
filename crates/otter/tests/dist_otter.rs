//! Distribution between two otter nodes (two runtimes in this test process, each with
//! its own node, talking over TCP on 127.0.0.1): typed messages and pids both ways,
//! per-pair order, each node's count of its traffic with the other, links, monitors and exit signals, a `RemoteServer` called with
//! `Node::call`, and `Noconnection` when a node stops.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/reports.rs"]
mod reports;
#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use otter::dist::{
    BadTerm, ConnectError, EpmdError, HandshakeError, Node, NodeEvent, RemoteCallError,
    RemoteServer,
};
use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, Down, Exit, ExitReason, Pid, Runtime};
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(20);

/// The messages of both sides.
#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    Hello(Pid<Msg>, u64, String),
    Number(u64),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
    #[serde(skip)]
    Exit(Exit),
    #[serde(skip)]
    Down(Down),
    #[serde(skip)]
    Node(NodeEvent),
}

impl From<BadTerm> for Msg {
    fn from(b: BadTerm) -> Msg {
        Msg::Bad(b)
    }
}
impl From<Exit> for Msg {
    fn from(e: Exit) -> Msg {
        Msg::Exit(e)
    }
}
impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}
impl From<NodeEvent> for Msg {
    fn from(e: NodeEvent) -> Msg {
        Msg::Node(e)
    }
}

/// A process registered as `name` on `node` that forwards what it gets.
fn probe(rt: &Runtime, node: &Node, name: &str) -> (Pid<Msg>, Receiver<Msg>) {
    let (tx, rx) = channel();
    let pid = rt.handle().spawn(move |mut cx: Context<Msg>| async move {
        cx.trap_exit(true);
        while tx.send(cx.recv().await).is_ok() {}
    });
    node.register(name, pid);
    (pid, rx)
}

/// `node`'s `connect` to `peer`, from a process of `rt`.
fn connect(rt: &Runtime, node: &Node, peer: &str) -> Result<(), ConnectError> {
    let (node, peer) = (node.clone(), peer.to_string());
    rt.block_on(move |_: Context<()>| async move { node.connect(&peer).await })
        .unwrap()
}

fn two(rt: &Runtime) -> (Runtime, Node, Node) {
    let other = Runtime::builder().threads(rt.threads()).build().unwrap();
    let a = otter_node::start(rt);
    let b = otter_node::start(&other);
    (other, a, b)
}

rt_test!(
    typed_messages_and_pids_cross_between_otter_nodes_in_order,
    |rt: &Runtime| {
        let (other, a, b) = two(rt);
        let (_, rx_b) = probe(&other, &b, "inbox");
        let (tx, rx_a) = channel();
        let (a2, bname) = (a.clone(), b.name().to_string());
        // A process on `a` greets `inbox` on `b` with its pid, then gets 1000 numbers back.
        rt.handle().spawn(move |mut cx: Context<Msg>| async move {
            a2.send_named(
                cx.pid(),
                "inbox",
                &bname,
                &Msg::Hello(cx.pid(), 7, "hi".into()),
            )
            .unwrap();
            for _ in 0..1000 {
                tx.send(cx.recv().await).unwrap();
            }
        });
        let Msg::Hello(back, 7, hi) = rx_b.recv_timeout(WAIT).unwrap() else {
            panic!("the greeting")
        };
        assert_eq!(hi, "hi");
        assert!(
            back.is_alive(),
            "a remote pid is alive while its node is connected"
        );
        for i in 0..1000 {
            back.send(Msg::Number(i));
        }
        for i in 0..1000 {
            match rx_a.recv_timeout(WAIT).unwrap() {
                Msg::Number(n) => assert_eq!(n, i),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(a.nodes(), vec![b.name().to_string()]);
        // Each side counts its traffic with the other (`Node::peers`).
        let pa = a.peers();
        assert_eq!(pa.len(), 1);
        assert_eq!(pa[0].node, b.name());
        assert!(
            pa[0].frames_in >= 1000 && pa[0].bytes_in > 1000 * 8,
            "{pa:?}"
        );
        assert!(pa[0].frames_out >= 1, "{pa:?}");
        support::eventually("b counts the numbers it wrote", WAIT, || {
            b.peers()
                .first()
                .is_some_and(|p| p.frames_out >= 1000 && p.frames_in >= 1 && !p.busy)
        });
        drop(other);
    }
);

rt_test!(
    links_and_monitors_between_otter_nodes_carry_reasons_and_noconnection,
    |rt: &Runtime| {
        let (other, a, b) = two(rt);
        let (pb, rx_b) = probe(&other, &b, "inbox");
        let (pa, rx_a) = probe(rt, &a, "inbox");
        // `a`'s probe sends its pid to `b`; `b` spawns a worker that links to it and dies.
        let (a2, bname) = (a.clone(), b.name().to_string());
        pa.send(Msg::Number(0));
        let _ = rx_a.recv_timeout(WAIT).unwrap();
        let hello_from = rt.handle().spawn(move |cx: Context<Msg>| async move {
            a2.send_named(cx.pid(), "inbox", &bname, &Msg::Hello(pa, 1, String::new()))
                .unwrap();
        });
        let _ = hello_from;
        let Msg::Hello(remote_probe, 1, _) = rx_b.recv_timeout(WAIT).unwrap() else {
            panic!("the greeting")
        };
        // On `b`: a process links to and monitors the probe of `a`, then panics.
        let (tx, ready) = channel();
        other.handle().spawn(move |cx: Context<Msg>| async move {
            cx.link(remote_probe);
            cx.monitor(remote_probe);
            tx.send(()).unwrap();
            // The LINK and MONITOR frames are ahead of the EXIT on the same connection.
            panic!("on purpose");
        });
        ready.recv_timeout(WAIT).unwrap();
        match rx_a.recv_timeout(WAIT).unwrap() {
            Msg::Exit(x) => assert_eq!(x.reason, ExitReason::Panic("on purpose".into())),
            other => panic!("{other:?}"),
        }
        // A process of `a` links to and monitors `b`'s probe, and `b` stops: the link's
        // exit, the Down and the nodedown all say the connection is gone.
        let (tx, got) = channel();
        let a3 = a.clone();
        let bname = b.name().to_string();
        let watcher = rt.handle().spawn(move |mut cx: Context<Msg>| async move {
            cx.trap_exit(true);
            a3.send_named(
                cx.pid(),
                "inbox",
                &bname,
                &Msg::Hello(cx.pid(), 2, String::new()),
            )
            .unwrap();
            let Msg::Hello(b_probe, 3, _) = cx.recv().await else {
                panic!("b's probe pid")
            };
            cx.link(b_probe);
            cx.monitor(b_probe);
            a3.monitor_node(cx.pid(), &bname);
            tx.send(Some(Msg::Hello(b_probe, 4, String::new())))
                .unwrap();
            for _ in 0..3 {
                let m = cx.recv().await;
                tx.send(Some(m)).unwrap();
            }
            std::future::pending::<()>().await
        });
        let Msg::Hello(asker, 2, _) = rx_b.recv_timeout(WAIT).unwrap() else {
            panic!("the second greeting")
        };
        // From this (non-worker) thread, through `b`'s connection.
        asker.send(Msg::Hello(pb, 3, String::new()));
        let Some(Msg::Hello(b_probe, 4, _)) = got.recv_timeout(WAIT).unwrap() else {
            panic!("the monitored pid")
        };
        // The LINK and MONITOR have reached `b` once a message sent after them has.
        let a4 = a.clone();
        let bname = b.name().to_string();
        rt.handle().spawn(move |cx: Context<Msg>| async move {
            a4.send_named(cx.pid(), "inbox", &bname, &Msg::Number(99))
                .unwrap();
        });
        assert!(matches!(rx_b.recv_timeout(WAIT).unwrap(), Msg::Number(99)));
        // The watcher holds one monitor, of a pid of `b` (introspection's `monitors`).
        let held = rt.handle().process_info(watcher).unwrap().monitors;
        assert_eq!(held, vec![b_probe.id()]);
        b.stop();
        let mut seen = (false, false, false);
        for _ in 0..3 {
            match got.recv_timeout(WAIT).unwrap().unwrap() {
                Msg::Exit(x) => {
                    assert_eq!(x.reason, ExitReason::Noconnection);
                    seen.0 = true;
                }
                Msg::Down(d) => {
                    assert_eq!(d.reason, ExitReason::Noconnection);
                    seen.1 = true;
                }
                Msg::Node(NodeEvent::Down(n)) => {
                    assert_eq!(n, b.name());
                    seen.2 = true;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(seen, (true, true, true));
        // Its `Down` delivered, the monitor is no longer listed.
        assert_eq!(rt.handle().process_info(watcher).unwrap().monitors, vec![]);
        rt.handle().exit(watcher, ExitReason::Kill);
        drop(other);
    }
);

struct Counter(i64);

enum CounterCall {
    Add(i64, ReplyTo<i64>),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CounterRequest {
    Add(i64),
}

impl Server for Counter {
    type Args = ();
    type Call = CounterCall;
    type Cast = ();
    type Info = BadTerm;
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Counter(0))
    }
    async fn handle_call(&mut self, c: CounterCall, _: &mut ServerContext<Self>) -> Flow {
        let CounterCall::Add(n, from) = c;
        self.0 += n;
        from.reply(self.0);
        Flow::Continue
    }
}

impl RemoteServer for Counter {
    type RemoteCall = CounterRequest;
    type RemoteReply = i64;
    type RemoteCast = ();
    async fn remote_call(server: ServerRef<Self>, r: CounterRequest) -> Result<i64, CallError> {
        let CounterRequest::Add(n) = r;
        server.call(|from| CounterCall::Add(n, from)).await
    }
    fn remote_cast(_: ()) -> Option<()> {
        None
    }
    fn bad_term(b: BadTerm) -> Option<BadTerm> {
        Some(b)
    }
}

rt_test!(
    an_otter_server_answers_calls_from_another_otter_node,
    |rt: &Runtime| {
        let (other, a, b) = two(rt);
        let b2 = b.clone();
        other
            .block_on(move |cx: Context<()>| async move {
                let c = Counter::start(&cx, ()).await.unwrap();
                b2.register_server("counter", c);
            })
            .unwrap();
        let (a2, bname) = (a.clone(), b.name().to_string());
        let r = rt.block_on(move |cx: Context<()>| async move {
            let mut last = 0;
            for i in 1..=100 {
                last = a2
                    .call::<_, _, i64>(&cx, "counter", &bname, &CounterRequest::Add(i), WAIT)
                    .await
                    .unwrap();
            }
            let missing = a2
                .call::<_, _, i64>(&cx, "nobody", &bname, &CounterRequest::Add(1), WAIT)
                .await;
            (last, missing)
        });
        let (last, missing) = r.unwrap();
        assert_eq!(last, 5050);
        assert_eq!(missing, Err(RemoteCallError::Exit(ExitReason::Noproc)));
        drop(other);
    }
);

rt_test!(
    simultaneous_connects_settle_on_one_connection_and_lose_no_message,
    |rt: &Runtime| {
        // Both nodes send to each other at the same moment, each starting a connection:
        // the handshake keeps one (`ok_simultaneous` / `nok`), and the frames queued on
        // the losing attempt go out on the winning one.
        for round in 0..10 {
            // A runtime has one node: fresh runtimes each round.
            let rt = &Runtime::builder().threads(rt.threads()).build().unwrap();
            let (other, a, b) = two(rt);
            let (pa, rx_a) = probe(rt, &a, "inbox");
            let (pb, rx_b) = probe(&other, &b, "inbox");
            let a_monitors = {
                let (tx, rx) = channel();
                let (a2, bname) = (a.clone(), b.name().to_string());
                rt.handle().spawn(move |mut cx: Context<Msg>| async move {
                    a2.monitor_nodes_to(cx.pid());
                    while let Some(m) = cx.recv_timeout(Duration::from_secs(2)).await {
                        if let Msg::Node(NodeEvent::Down(n)) = m
                            && n == bname
                        {
                            let _ = tx.send(());
                        }
                    }
                });
                rx
            };
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
            let go = |from: Node,
                      me: Pid<Msg>,
                      to: String,
                      barrier: std::sync::Arc<std::sync::Barrier>| {
                std::thread::spawn(move || {
                    barrier.wait();
                    for i in 0..100 {
                        from.send_named(me, "inbox", &to, &Msg::Number(i)).unwrap();
                    }
                })
            };
            let t1 = go(a.clone(), pa, b.name().to_string(), barrier.clone());
            let t2 = go(b.clone(), pb, a.name().to_string(), barrier);
            t1.join().unwrap();
            t2.join().unwrap();
            for rx in [&rx_a, &rx_b] {
                for i in 0..100 {
                    match rx.recv_timeout(WAIT) {
                        Ok(Msg::Number(n)) => assert_eq!(n, i, "round {round}"),
                        other => panic!("round {round}: {other:?}"),
                    }
                }
            }
            assert_eq!(a.nodes(), vec![b.name().to_string()]);
            assert_eq!(b.nodes(), vec![a.name().to_string()]);
            assert!(a_monitors.try_recv().is_err(), "round {round}: a nodedown");
            drop(other);
        }
    }
);

rt_test!(
    monitor_node_reports_down_at_once_for_a_node_it_cannot_reach,
    |rt: &Runtime| {
        // Erlang's `monitor_node/2`: "if the connection cannot be made, a nodedown
        // message is delivered at once". Names no epmd knows, and names that are none.
        let a = otter_node::start(rt);
        for name in [
            "nosuch@localhost",
            "",
            "@",
            "x",
            "nosuch@no-such-host.invalid",
        ] {
            let (tx, rx) = channel();
            let (a2, n) = (a.clone(), name.to_string());
            rt.handle().spawn(move |mut cx: Context<Msg>| async move {
                a2.monitor_node(cx.pid(), &n);
                let m = cx.recv_timeout(WAIT).await;
                let _ = tx.send(m);
            });
            match rx.recv_timeout(WAIT + Duration::from_secs(5)).unwrap() {
                Some(Msg::Node(NodeEvent::Down(n))) => assert_eq!(n, name),
                other => panic!("{name:?}: {other:?}"),
            }
        }
    }
);

rt_test!(
    a_message_over_the_frame_limit_is_refused_at_the_sender,
    |rt: &Runtime| {
        // A peer refuses a frame over 64 MiB by dropping the connection: the sender
        // refuses it first, with an error, and the connection stays up.
        let (other, a, b) = two(rt);
        let (pa, _rx_a) = probe(rt, &a, "inbox");
        let (_pb, rx_b) = probe(&other, &b, "inbox");
        let bname = b.name().to_string();
        a.send_named(pa, "inbox", &bname, &Msg::Number(1)).unwrap();
        assert!(matches!(rx_b.recv_timeout(WAIT).unwrap(), Msg::Number(1)));
        let huge = otter::dist::etf::Term::binary(vec![0; 64 << 20]);
        match a.send_named(pa, "inbox", &bname, &huge) {
            Err(otter::dist::etf::EncodeError::FrameTooLarge { size, max }) => {
                assert!(size > max && max == 64 << 20, "{size} {max}");
            }
            other => panic!("{other:?}"),
        }
        // A remote pid's `try_send` hands the message back.
        let (tx, got) = channel();
        let (a2, bname2) = (a.clone(), bname.clone());
        rt.handle().spawn(move |cx: Context<Msg>| async move {
            a2.send_named(
                cx.pid(),
                "inbox",
                &bname2,
                &Msg::Hello(cx.pid(), 0, String::new()),
            )
            .unwrap();
            let _ = tx.send(());
        });
        got.recv_timeout(WAIT).unwrap();
        let Msg::Hello(back, 0, _) = rx_b.recv_timeout(WAIT).unwrap() else {
            panic!("a pid of a")
        };
        let big = Msg::Hello(back, 2, "x".repeat(64 << 20));
        assert!(back.try_send(big).is_err(), "refused at the sender");
        a.send_named(pa, "inbox", &bname, &Msg::Number(2)).unwrap();
        assert!(matches!(rx_b.recv_timeout(WAIT).unwrap(), Msg::Number(2)));
        assert_eq!(a.nodes(), vec![bname]);
    }
);

#[test]
fn node_names_are_checked_as_erl_checks_them() {
    // `erl -sname` / `-name`: the part before `@` of letters, digits, `_` and `-`;
    // the host of printable characters without spaces, and one `@` in all.
    let rt = Runtime::builder().threads(1).build().unwrap();
    erlang::ensure_epmd();
    for bad in [
        "a\nb@h", "a b@h", "a@b@c", "a@h h", "a@h\n", "\u{e9}@h", "a.b@h", "@h", "a@", "ab", "",
        "@",
    ] {
        match Node::builder(bad).cookie("secret").start(&rt.handle()) {
            Err(e @ otter::dist::StartError::BadName(_)) => {
                assert!(e.to_string().contains("bad node name"), "{e}");
            }
            other => panic!("{bad:?}: {:?}", other.map(|n| n.name().to_string())),
        }
    }
    let good = format!(
        "{}-x_9@{}",
        erlang::unique_name("Otter"),
        erlang::short_host()
    );
    let node = Node::builder(good.as_str())
        .cookie("secret")
        .start(&rt.handle())
        .unwrap();
    assert_eq!(node.name(), good);
}

rt_test!(
    a_failed_connect_says_why_with_the_protocols_own_error_as_its_source,
    |rt: &Runtime| {
        let other = Runtime::builder().threads(rt.threads()).build().unwrap();
        let a = otter_node::start(rt);
        let wrong = otter_node::start_with(&other, |b| b.cookie("not the secret"));
        for bad in ["no_host_part", a.name()] {
            match connect(rt, &a, bad) {
                Err(ConnectError::BadName(n)) => assert_eq!(n, bad),
                r => panic!("{bad}: {r:?}"),
            }
        }
        let host = a.name().split_once('@').unwrap().1.to_string();
        let nobody = format!("nobody_{}@{host}", std::process::id());
        let e = connect(rt, &a, &nobody).unwrap_err();
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<EpmdError>());
        assert!(
            matches!(source, Some(EpmdError::NotRegistered { .. })),
            "{e:?}"
        );
        let e = connect(rt, &a, wrong.name()).unwrap_err();
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<HandshakeError>());
        assert!(
            matches!(source, Some(HandshakeError::CookieRejected)),
            "{e:?}"
        );
        assert!(e.to_string().contains("cookie"), "{e}");
        drop(other);
    }
);

rt_test!(
    a_connect_right_after_a_disconnect_makes_a_new_connection,
    |rt: &Runtime| {
        let (other, a, b) = two(rt);
        let (_, rx_b) = probe(&other, &b, "inbox");
        let (from, _rx_a) = probe(rt, &a, "from");
        for round in 0..10 {
            connect(rt, &a, b.name()).unwrap();
            assert!(a.disconnect(b.name()));
            // Not the closing connection's `Ok`: a new one, which a message crosses.
            connect(rt, &a, b.name()).unwrap();
            a.send_named(from, "inbox", b.name(), &Msg::Number(round))
                .unwrap();
            match rx_b.recv_timeout(WAIT) {
                Ok(Msg::Number(n)) => assert_eq!(n, round),
                other => panic!("round {round}: {other:?}"),
            }
            assert_eq!(a.nodes(), vec![b.name().to_string()]);
        }
        drop(other);
    }
);

rt_test!(
    a_connection_that_goes_down_is_reported_on_each_side_with_why,
    |rt: &Runtime| {
        // The collector first: it keeps what comes after it is installed.
        reports::reports();
        let (other, a, b) = two(rt);
        connect(rt, &a, b.name()).unwrap();
        assert!(a.disconnect(b.name()));
        let said = |node: &Node, peer: &Node| {
            reports::reports().into_iter().find(|r| {
                r.target == "otter::dist"
                    && r.get("node") == node.name()
                    && r.get("peer") == peer.name()
            })
        };
        support::eventually("both sides report", WAIT, || {
            said(&a, &b).is_some() && said(&b, &a).is_some()
        });
        assert_eq!(
            said(&a, &b).unwrap().get("reason"),
            "disconnected by this node"
        );
        assert_eq!(said(&b, &a).unwrap().get("reason"), "closed by the peer");
        drop(other);
    }
);
