//! Distribution against real Erlang nodes: each test starts an `erl -sname` node
//! (`support/erlang.rs`) and an otter node, and checks one rule of Erlang's
//! distribution, in both directions where it has two: messages to pids and names,
//! terms that do not decode, `net_adm:ping`, `rpc:call`, `gen_server` calls both ways,
//! links, monitors and exit signals across nodes, `noconnection` when a node dies,
//! node monitors, and the cookie.
//!
//! The otter side of a test is a probe: a process registered on the otter node that
//! forwards everything it receives to the test thread, and runs the actions the test
//! sends it (link, monitor...) in its own context. The test thread drives the Erlang
//! node with `eval` and waits on the probe's channel, with a deadline, never a sleep.

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

use otter::dist::etf::Term;
use otter::dist::{
    BadCall, BadTerm, ConnectError, HandshakeError, Node, NodeEvent, RemoteCallError, RemoteReason,
    RemoteServer,
};
use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Down, Exit, ExitReason, Pid, Runtime};
use otter_node::at;
use serde::Deserialize;

const WAIT: Duration = Duration::from_secs(20);

fn erl(setup: &str) -> erlang::Node {
    erlang::Node::builder("erl").setup(setup).start()
}

type Action = Box<dyn FnOnce(&mut Context<In>) + Send>;

/// What a probe receives: Erlang's terms, typed where the tests know them.
#[derive(Deserialize)]
enum In {
    #[serde(rename = "echo")]
    Echo(String),
    #[serde(rename = "pid")]
    Pid(Pid<Term>),
    #[serde(skip)]
    Bad(BadTerm),
    #[serde(skip)]
    Exit(Exit),
    #[serde(skip)]
    Down(Down),
    #[serde(skip)]
    Node(NodeEvent),
    #[serde(skip)]
    Do(Action),
    #[serde(untagged)]
    Other(Term),
}

impl std::fmt::Debug for In {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            In::Echo(s) => write!(f, "Echo({s:?})"),
            In::Pid(p) => write!(f, "Pid({p:?})"),
            In::Other(t) => write!(f, "Other({t})"),
            In::Bad(b) => write!(f, "Bad({b})"),
            In::Exit(e) => write!(f, "{e:?}"),
            In::Down(d) => write!(f, "{d:?}"),
            In::Node(n) => write!(f, "{n:?}"),
            In::Do(_) => f.write_str("Do"),
        }
    }
}

impl From<BadTerm> for In {
    fn from(b: BadTerm) -> In {
        In::Bad(b)
    }
}
impl From<Exit> for In {
    fn from(e: Exit) -> In {
        In::Exit(e)
    }
}
impl From<Down> for In {
    fn from(d: Down) -> In {
        In::Down(d)
    }
}
impl From<NodeEvent> for In {
    fn from(e: NodeEvent) -> In {
        In::Node(e)
    }
}

/// A probe registered as `name` on `node`: forwards what it receives, runs `Do`s.
struct Probe {
    pid: Pid<In>,
    rx: Receiver<In>,
}

impl Probe {
    fn start(rt: &Runtime, node: &Node, name: &str) -> Probe {
        let (tx, rx) = channel();
        let pid = rt.handle().spawn(move |mut cx: Context<In>| async move {
            cx.trap_exit(true);
            loop {
                match cx.recv().await {
                    In::Do(f) => f(&mut cx),
                    m => {
                        if tx.send(m).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        node.register(name, pid);
        Probe { pid, rx }
    }

    fn next(&self) -> In {
        self.rx
            .recv_timeout(WAIT)
            .expect("the probe receives a message in time")
    }

    fn run(&self, f: impl FnOnce(&mut Context<In>) + Send + 'static) {
        self.pid.send(In::Do(Box::new(f)));
    }

    /// The next message that is not a node event.
    fn next_message(&self) -> In {
        loop {
            match self.next() {
                In::Node(_) => continue,
                m => return m,
            }
        }
    }
}

/// An Erlang echo process registered as `echo`: `{From, Msg}` -> `From ! {echo, Msg}`.
const ECHO: &str = "register(echo, spawn(fun Loop() -> receive {From, Msg} -> From ! {echo, Msg}, Loop() end end))";

rt_test!(
    an_erlang_node_pings_an_otter_node_and_gets_pong,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let mut e = erl("ok");
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pong"
        );
        // Hidden by default: Erlang lists it only among the hidden nodes.
        let hidden = e.eval_ok("nodes(hidden)");
        assert!(hidden.contains(node.name()), "{hidden}");
        assert_eq!(e.eval_ok("nodes()"), "[]");
        assert_eq!(node.nodes(), vec![e.name().to_string()]);
    }
);

rt_test!(
    a_peer_with_the_wrong_cookie_is_refused_both_ways,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erlang::Node::builder("erl").cookie("wrong").start();
        // Erlang to otter: refused, and nothing it sent is delivered.
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pang"
        );
        e.eval_ok(&format!("{} ! sneaky", at("inbox", &node)));
        // That send made Erlang try to connect again, on its own: a second ping returns
        // once that attempt has failed too.
        assert_eq!(
            e.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pang"
        );
        // Otter to Erlang: refused. (Should Erlang's attempt still be in otter's table,
        // the connect waits on it, and it ends with otter's own refusal, `BadCookie`.)
        let n = node.clone();
        let peer = e.name().to_string();
        let r = rt.block_on(move |_: Context<()>| async move { n.connect(&peer).await });
        let r = r.unwrap();
        assert!(
            matches!(&r, Err(ConnectError::Handshake(e))
                if matches!(**e, HandshakeError::CookieRejected | HandshakeError::BadCookie)),
            "otter connected with a wrong cookie, or failed otherwise: {r:?}"
        );
        assert!(probe.rx.recv_timeout(Duration::from_millis(300)).is_err());
        assert!(node.nodes().is_empty());
    }
);

rt_test!(
    otter_sends_to_a_named_erlang_process_and_receives_the_reply,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let e = erl(ECHO);
        let (n, peer) = (node.clone(), e.name().to_string());
        probe.run(move |cx| {
            n.send_named(cx.pid(), "echo", &peer, &(cx.pid(), "hello"))
                .unwrap();
        });
        match probe.next_message() {
            In::Echo(s) => assert_eq!(s, "hello"),
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    erlang_sends_to_a_name_registered_on_the_otter_node,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl("ok");
        e.eval_ok(&format!(
            "{} ! {{hello, 42, <<\"bin\">>, [1.5], #{{a => b}}}}",
            at("inbox", &node)
        ));
        match probe.next_message() {
            In::Other(t) => assert_eq!(t.to_string(), "{hello,42,<<\"bin\">>,[1.5],#{a => b}}"),
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    erlang_replies_to_an_otter_pid_it_received_in_a_message,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let e = erl(ECHO);
        let (n, peer) = (node.clone(), e.name().to_string());
        // The pid goes out inside the message; the echo sends to that pid, not a name.
        for i in 0..100 {
            let (n, peer) = (n.clone(), peer.clone());
            probe.run(move |cx| {
                n.send_named(cx.pid(), "echo", &peer, &(cx.pid(), format!("m{i}")))
                    .unwrap();
            });
        }
        // Per-pair order: the replies come in the order of the requests.
        for i in 0..100 {
            match probe.next_message() {
                In::Echo(s) => assert_eq!(s, format!("m{i}")),
                other => panic!("{other:?}"),
            }
        }
    }
);

rt_test!(
    a_message_nested_beyond_max_depth_is_refused_alone_and_one_sent_arrives_whole,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (tx, rx) = channel();
        let pid = rt.handle().spawn(move |mut cx: Context<Term>| async move {
            while let Some(m) = cx.recv_timeout(WAIT).await {
                tx.send(m).unwrap();
            }
        });
        node.register("deep", pid);
        let mut e = erl("ok");
        // 200 levels, beyond `etf::MAX_DEPTH`: the process gets the refusal in the
        // message's place, and the message after it arrives on the same connection.
        e.eval_ok(&format!(
            "Deep = lists:foldl(fun(_, A) -> [A] end, [], lists:seq(1, 200)), \
             {0} ! Deep, {0} ! after_it, ok",
            at("deep", &node)
        ));
        assert_eq!(
            rx.recv_timeout(WAIT).unwrap(),
            Term::atom("$otter_term_too_deep")
        );
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), Term::atom("after_it"));
        assert_eq!(node.nodes(), vec![e.name().to_string()]);
        // The other way, Erlang has no such limit, and otter's encoder none either:
        // the term arrives whole.
        e.eval_ok("register(sink, self()), ok");
        let sink: Pid<Term> = node.remote_name("sink", e.name());
        let mut deep = Term::List(vec![]);
        for _ in 0..200 {
            deep = Term::List(vec![deep]);
        }
        sink.send(deep);
        assert_eq!(
            e.eval_ok(
                "receive M -> (fun Dp([X]) -> 1 + Dp(X); Dp([]) -> 0 end)(M) \
                 after 5000 -> timeout end"
            ),
            "200"
        );
    }
);

rt_test!(
    a_term_that_does_not_decode_arrives_as_bad_term,
    |rt: &Runtime| {
        #[derive(Debug, Deserialize)]
        enum Strict {
            #[serde(rename = "ping")]
            Ping(u32),
            #[serde(skip)]
            Bad(BadTerm),
        }
        impl From<BadTerm> for Strict {
            fn from(b: BadTerm) -> Strict {
                Strict::Bad(b)
            }
        }
        let node = otter_node::start(rt);
        let (tx, rx) = channel();
        let pid = rt
            .handle()
            .spawn(move |mut cx: Context<Strict>| async move {
                while let Some(m) = cx.recv_timeout(WAIT).await {
                    tx.send(m).unwrap();
                }
            });
        node.register("strict", pid);
        let mut e = erl("ok");
        e.eval_ok(&format!(
            "{0} ! {{ping, 7}}, {0} ! {{ping, <<\"seven\">>}}, {0} ! {{ping, 8}}",
            at("strict", &node)
        ));
        assert!(matches!(rx.recv_timeout(WAIT).unwrap(), Strict::Ping(7)));
        match rx.recv_timeout(WAIT).unwrap() {
            Strict::Bad(b) => {
                assert_eq!(b.term.to_string(), "{ping,<<\"seven\">>}");
                assert!(!b.error.is_empty());
            }
            other => panic!("{other:?}"),
        }
        // The process goes on.
        assert!(matches!(rx.recv_timeout(WAIT).unwrap(), Strict::Ping(8)));
    }
);

rt_test!(rpc_call_to_an_otter_node_fails_cleanly, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let mut e = erl("ok");
    let r = e.eval_ok(&format!(
        "rpc:call('{}', erlang, node, [], 5000)",
        node.name()
    ));
    assert!(r.starts_with("{badrpc,"), "{r}");
});

// Servers, both ways.

struct Kv(std::collections::HashMap<String, Term>);

enum KvCall {
    Put(Term, Term, ReplyTo<()>),
    Get(Term, ReplyTo<Option<Term>>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum KvRequest {
    Put(Term, Term),
    Get(Term),
}

#[derive(serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum KvReply {
    Ok,
    #[serde(rename = "ok")]
    Found(Term),
    NotFound,
    #[serde(rename = "error")]
    Refused(Term),
}

impl Server for Kv {
    type Args = ();
    type Call = KvCall;
    type Cast = ();
    type Info = BadTerm;
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Kv(Default::default()))
    }
    async fn handle_call(&mut self, c: KvCall, _: &mut ServerContext<Self>) -> Flow {
        match c {
            KvCall::Put(k, v, from) => {
                self.0.insert(k.to_string(), v);
                from.reply(());
            }
            KvCall::Get(k, from) => from.reply(self.0.get(&k.to_string()).cloned()),
        }
        Flow::Continue
    }
}

impl RemoteServer for Kv {
    type RemoteCall = KvRequest;
    type RemoteReply = KvReply;
    type RemoteCast = ();
    async fn remote_call(server: ServerRef<Self>, r: KvRequest) -> Result<KvReply, CallError> {
        Ok(match r {
            KvRequest::Put(k, v) => {
                server.call(|from| KvCall::Put(k, v, from)).await?;
                KvReply::Ok
            }
            KvRequest::Get(k) => match server.call(|from| KvCall::Get(k, from)).await? {
                Some(v) => KvReply::Found(v),
                None => KvReply::NotFound,
            },
        })
    }
    fn remote_cast(_: ()) -> Option<()> {
        None
    }
    fn bad_term(b: BadTerm) -> Option<BadTerm> {
        Some(b)
    }
    fn bad_call(request: BadTerm) -> BadCall<KvReply> {
        BadCall::Reply(KvReply::Refused(request.term))
    }
}

rt_test!(
    an_erlang_gen_server_call_reaches_an_otter_server,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let n = node.clone();
        rt.block_on(move |cx: Context<()>| async move {
            let kv = Kv::start(&cx, ()).await.unwrap();
            n.register_server("kv", kv);
        })
        .unwrap();
        let mut e = erl("ok");
        let kv = at("kv", &node);
        assert_eq!(
            e.eval_ok(&format!(
                "gen_server:call({kv}, {{put, {{a, 1}}, [x, <<\"y\">>]}})"
            )),
            "ok"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{get, {{a, 1}}}})")),
            "{ok,[x,<<\"y\">>]}"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{get, nope}})")),
            "not_found"
        );
        // A request that does not decode is answered by `bad_call`, at once.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{frobnicate, 1}}, 2000)")),
            "{error,{frobnicate,1}}"
        );
        // A call to a name nobody holds exits the caller with noproc (from the monitor).
        let r = e.eval(&format!(
            "gen_server:call({}, hello, 2000)",
            at("nobody", &node)
        ));
        assert!(
            r.unwrap_err().contains("noproc"),
            "a call to a missing name"
        );
    }
);

/// A server that keeps `bad_call`'s default.
struct Plain;

impl Server for Plain {
    type Args = ();
    type Call = ReplyTo<u32>;
    type Cast = ();
    type Info = BadTerm;
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Plain)
    }
    async fn handle_call(&mut self, from: ReplyTo<u32>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(42);
        Flow::Continue
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PlainRequest {
    Answer,
}

impl RemoteServer for Plain {
    type RemoteCall = PlainRequest;
    type RemoteReply = u32;
    type RemoteCast = ();
    async fn remote_call(server: ServerRef<Self>, _: PlainRequest) -> Result<u32, CallError> {
        server.call(|from| from).await
    }
    fn remote_cast(_: ()) -> Option<()> {
        None
    }
    fn bad_term(_: BadTerm) -> Option<BadTerm> {
        None
    }
}

rt_test!(
    a_call_whose_request_does_not_decode_is_answered_with_an_error_by_default,
    |rt: &Runtime| {
        // An Erlang server's catch-all `handle_call` clause: the caller gets an answer
        // at once, never a wait to its timeout.
        let node = otter_node::start(rt);
        let n = node.clone();
        rt.block_on(move |cx: Context<()>| async move {
            let plain = Plain::start(&cx, ()).await.unwrap();
            n.register_server("plain", plain);
        })
        .unwrap();
        let mut e = erl("ok");
        let plain = at("plain", &node);
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({plain}, answer, 5000)")),
            "42"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({plain}, bogus, 5000)")),
            "{error,{bad_call,bogus}}"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({plain}, {{answer, 1}}, 5000)")),
            "{error,{bad_call,{answer,1}}}"
        );
        // A request nested deeper than a term may be (`etf::MAX_DEPTH`) is named so.
        let deep = "lists:foldl(fun(_, A) -> [A] end, x, lists:seq(1, 200))";
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({plain}, {deep}, 5000)")),
            "{error,{bad_call,'$otter_term_too_deep'}}"
        );
    }
);

rt_test!(
    an_erlang_node_calls_and_monitors_an_otter_server_by_its_pid,
    |rt: &Runtime| {
        // A `ServerRef` in a term is a pid to Erlang: `gen_server:call/3`,
        // `erlang:monitor/2` and `exit/2` take it.
        #[derive(serde::Serialize)]
        enum ToErl {
            #[serde(rename = "server")]
            Server(ServerRef<Kv>),
            #[serde(rename = "server_pid")]
            ServerPid(Pid<otter::server::ServerMsg<Kv>>),
        }
        let node = otter_node::start(rt);
        let kv = rt
            .block_on(|cx: Context<()>| async move { Kv::start(&cx, ()).await.unwrap() })
            .unwrap();
        let mut e = erl("ok");
        e.eval_ok("register(sink, self()), ok");
        let sink: Pid<ToErl> = node.remote_name("sink", e.name());
        sink.send(ToErl::Server(kv));
        sink.send(ToErl::ServerPid(kv.pid()));
        let r = e.eval_ok(
            "receive {server, P} -> \
               receive {server_pid, P} -> ok after 5000 -> exit(no_second_pid) end, \
               R1 = gen_server:call(P, {put, a, 1}, 5000), \
               R2 = gen_server:call(P, {get, a}, 5000), \
               M = erlang:monitor(process, P), \
               exit(P, kill), \
               R3 = receive {'DOWN', M, process, P, Why} -> Why after 5000 -> no_down end, \
               {is_pid(P), node(P), R1, R2, R3} \
             after 5000 -> timeout end",
        );
        assert_eq!(r, format!("{{true,{},ok,{{ok,1}},killed}}", node.name()));
        assert!(!kv.pid().is_alive());
    }
);

rt_test!(
    a_name_exported_by_local_name_goes_to_whoever_holds_it,
    |rt: &Runtime| {
        // `{Name, Node} ! Msg` reaches the process registered as Name on the node at the
        // time, not the one that held it when the name was exported.
        let node = otter_node::start(rt);
        node.register_name::<In>("box");
        let (tx, rx) = channel();
        // A process that takes the name, forwards one message and ends.
        let holder = |tag: &'static str| {
            let tx = tx.clone();
            rt.handle().spawn(move |mut cx: Context<In>| async move {
                cx.register("box", cx.pid()).unwrap();
                tx.send(("ready", String::new())).unwrap();
                if let In::Echo(s) = cx.recv().await {
                    // The name free before the test goes on to the next holder.
                    cx.unregister("box");
                    tx.send((tag, s)).unwrap();
                }
            })
        };
        let mut e = erl("ok");
        let send = format!("{} ! {{echo, <<\"hi\">>}}", at("box", &node));
        for tag in ["first", "second"] {
            holder(tag);
            assert_eq!(rx.recv_timeout(WAIT).unwrap().0, "ready");
            e.eval_ok(&send);
            assert_eq!(rx.recv_timeout(WAIT).unwrap(), (tag, "hi".to_string()));
        }
    }
);

rt_test!(
    a_server_exported_by_name_is_reached_again_after_its_supervisor_restarts_it,
    |rt: &Runtime| {
        // OTP's `{local, Name}`: the name follows the restarted server.
        let node = otter_node::start(rt);
        node.register_server_name::<Kv>("kv");
        // The supervisor lives in a process of its own (a root's end would end it).
        let (tx, rx) = channel();
        rt.handle().spawn(move |mut cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::named_server::<Kv>("kv", "kv", || ()));
            tx.send(supervisor::start_link(&cx, spec).await.unwrap())
                .unwrap();
            cx.recv().await
        });
        let sup = rx.recv_timeout(WAIT).unwrap();
        let mut e = erl("ok");
        let kv = at("kv", &node);
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{put, a, 1}})")),
            "ok"
        );
        // The server killed; its supervisor has restarted it once our monitor fires
        // (the link's signal to the supervisor goes before the `Down`).
        let restarted = rt
            .block_on(move |mut cx: Context<Down>| async move {
                let first: ServerRef<Kv> = sup.child("kv").await.unwrap().unwrap();
                cx.monitor(first.pid());
                cx.exit(first.pid(), ExitReason::Kill);
                cx.recv().await;
                let second: ServerRef<Kv> = sup.child("kv").await.unwrap().unwrap();
                first != second
            })
            .unwrap();
        assert!(restarted);
        // A fresh server, reached by the same name: the key put before is gone.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{get, a}})")),
            "not_found"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({kv}, {{put, a, 2}})")),
            "ok"
        );
    }
);

rt_test!(
    an_otter_process_calls_a_real_erlang_gen_server,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let e = erl("ok");
        let peer = e.name().to_string();
        let n = node.clone();
        let r = rt.block_on(move |cx: Context<()>| async move {
            // file_server_2 is a gen_server of every Erlang node: {get_cwd} -> {ok, Cwd}.
            let cwd: Result<(Term, String), _> = n
                .call(
                    &cx,
                    "file_server_2",
                    &peer,
                    &(otter::dist::etf::Atom::new("get_cwd"),),
                    WAIT,
                )
                .await;
            let missing: Result<Term, _> = n.call(&cx, "no_such_server", &peer, &"hi", WAIT).await;
            (cwd, missing)
        });
        let (cwd, missing) = r.unwrap();
        let (ok, dir) = cwd.expect("file_server_2 answers");
        assert_eq!(ok, Term::atom("ok"));
        assert!(dir.starts_with('/'), "{dir}");
        assert_eq!(missing, Err(RemoteCallError::Exit(ExitReason::Noproc)));
    }
);

rt_test!(
    an_otter_call_ends_with_the_erlang_servers_exit_reason,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        // A registered process that takes a call and dies with reason `boom`.
        let e = erl(
            "register(dier, spawn(fun() -> receive {'$gen_call', _, _} -> exit(boom) end end))",
        );
        let (n, peer) = (node.clone(), e.name().to_string());
        let r = rt.block_on(move |cx: Context<()>| async move {
            let r: Result<Term, _> = n.call(&cx, "dier", &peer, &"die", WAIT).await;
            r
        });
        match r.unwrap() {
            Err(RemoteCallError::Exit(ExitReason::Error(e))) => {
                assert_eq!(
                    e.0.downcast_ref::<RemoteReason>(),
                    Some(&RemoteReason(Term::atom("boom")))
                );
            }
            other => panic!("{other:?}"),
        }
    }
);

// Links, monitors, exit signals.

/// An Erlang process that registers as `peer`, tells the otter probe its pid, and then
/// runs `body` (an Erlang fun body).
fn erl_peer(node: &Node, body: &str) -> erlang::Node {
    erl(&format!(
        "Pid = spawn(fun() -> {body} end), register(peer, Pid), {} ! {{pid, Pid}}",
        at("inbox", node)
    ))
}

/// An Erlang expression that waits (bounded, 10 s) until `peer`'s `process_info` item
/// `item` (links, monitored_by) has `n` entries: the signals otter sent have arrived.
fn wait_for(item: &str, n: usize) -> String {
    format!(
        "W = fun Loop(0) -> timeout; Loop(K) -> case process_info(whereis(peer), {item}) of \
         {{{item}, L}} when length(L) =:= {n} -> ok; _ -> receive after 10 -> Loop(K - 1) end end end, W(1000)"
    )
}

/// Tells `peer` to go, waits for its death, then sends `after_exit` to the probe: any
/// signal the dead process sent otter is ahead of the marker on the connection.
fn after_death(node: &Node) -> String {
    format!(
        "P = whereis(peer), R = erlang:monitor(process, P), P ! go, \
         receive {{'DOWN', R, process, P, _}} -> ok end, {} ! after_exit",
        at("inbox", node)
    )
}

/// Waits (bounded) until the process registered as `named` is monitored.
fn wait_for_named_monitor() -> String {
    "W = fun Loop(0) -> timeout; Loop(K) -> case process_info(whereis(named), monitored_by) of \
     {monitored_by, [_]} -> ok; _ -> receive after 10 -> Loop(K - 1) end end end, W(1000)"
        .to_string()
}

fn expect_pid(probe: &Probe) -> Pid<Term> {
    match probe.next_message() {
        In::Pid(p) => p,
        other => panic!("expected the Erlang pid, got {other:?}"),
    }
}

rt_test!(
    a_link_to_an_erlang_process_carries_its_exit_reason,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl_peer(&node, "receive go -> exit(boom) end");
        let peer = expect_pid(&probe);
        probe.run(move |cx| cx.link(peer));
        // The link is in place on the Erlang side before the process is told to exit.
        assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
        e.eval_ok("peer ! go");
        match probe.next_message() {
            In::Exit(x) => {
                assert_eq!(x.from, peer.id());
                let ExitReason::Error(r) = x.reason else {
                    panic!("{:?}", x.reason)
                };
                assert_eq!(
                    r.0.downcast_ref::<RemoteReason>(),
                    Some(&RemoteReason(Term::atom("boom")))
                );
            }
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    an_erlang_process_linked_to_an_otter_process_gets_its_exit_and_down,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        // The otter process Erlang links to and monitors; it exits `Shutdown` when told.
        let victim = rt.handle().spawn(|mut cx: Context<In>| async move {
            loop {
                if let In::Do(_) = cx.recv().await {
                    return ExitReason::Shutdown;
                }
            }
        });
        let body = format!(
            "process_flag(trap_exit, true), \
         receive {{victim, V}} -> link(V), M = erlang:monitor(process, V), {inbox} ! linked, \
           receive {{'EXIT', V, R}} -> io:format(\"exit ~p~n\", [R]) end, \
           receive {{'DOWN', M, process, V, R2}} -> io:format(\"down ~p~n\", [R2]) end \
         end",
            inbox = at("inbox", &node)
        );
        let mut e = erl_peer(&node, &body);
        let _peer = expect_pid(&probe);
        let (n, peer_node) = (node.clone(), e.name().to_string());
        probe.run(move |cx| {
            n.send_named(
                cx.pid(),
                "peer",
                &peer_node,
                &(otter::dist::etf::Atom::new("victim"), victim),
            )
            .unwrap();
        });
        // `linked` comes after the LINK and MONITOR signals on the same connection: when
        // the probe has it, both are in place on the otter side.
        match probe.next_message() {
            In::Other(t) => assert_eq!(t, Term::atom("linked")),
            other => panic!("{other:?}"),
        }
        victim.send(In::Do(Box::new(|_| ())));
        e.wait_for_text("exit shutdown", WAIT)
            .expect("the exit signal");
        e.wait_for_text("down shutdown", WAIT).expect("the Down");
    }
);

rt_test!(
    a_monitor_of_an_erlang_process_reports_its_exit_and_noproc,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl_peer(&node, "receive go -> exit(shutdown) end");
        let peer = expect_pid(&probe);
        let (tx, rx) = channel();
        probe.run(move |cx| tx.send(cx.monitor(peer)).unwrap());
        let mref = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(e.eval_ok(&wait_for("monitored_by", 1)), "ok");
        e.eval_ok("peer ! go");
        match probe.next_message() {
            In::Down(d) => {
                assert_eq!(d.reference, mref);
                assert_eq!(d.reason, ExitReason::Shutdown);
            }
            other => panic!("{other:?}"),
        }
        // Monitoring it again, now that it is gone: noproc.
        probe.run(move |cx| {
            cx.monitor(peer);
        });
        match probe.next_message() {
            In::Down(d) => assert_eq!(d.reason, ExitReason::Noproc),
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    a_killed_erlang_node_fires_noconnection_on_links_monitors_and_node_monitors,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl_peer(&node, "receive _ -> ok end");
        let peer = expect_pid(&probe);
        let n = node.clone();
        let peer_node = e.name().to_string();
        probe.run(move |cx| {
            cx.link(peer);
            cx.monitor(peer);
            n.monitor_node(cx.pid(), &peer_node);
        });
        assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
        assert_eq!(e.eval_ok(&wait_for("monitored_by", 1)), "ok");
        e.kill();
        let mut seen = (false, false, false);
        while seen != (true, true, true) {
            match probe.next() {
                In::Exit(x) => {
                    assert_eq!(x.reason, ExitReason::Noconnection);
                    seen.0 = true;
                }
                In::Down(d) => {
                    assert_eq!(d.reason, ExitReason::Noconnection);
                    seen.1 = true;
                }
                In::Node(NodeEvent::Down(_)) => seen.2 = true,
                other => panic!("{other:?}"),
            }
        }
        assert!(node.nodes().is_empty());
    }
);

rt_test!(
    unlink_from_an_erlang_process_stops_its_exit_signal,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl_peer(&node, "receive go -> exit(boom) end");
        let peer = expect_pid(&probe);
        probe.run(move |cx| cx.link(peer));
        assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
        probe.run(move |cx| cx.unlink(peer));
        // UNLINK_ID reached Erlang: its side of the link is gone.
        assert_eq!(e.eval_ok(&wait_for("links", 0)), "ok");
        // No exit signal: the next thing the probe gets is the marker sent once the
        // process is dead (a signal it sent would be ahead of it on the connection).
        e.eval_ok(&after_death(&node));
        match probe.next_message() {
            In::Other(t) => assert_eq!(t, Term::atom("after_exit")),
            other => panic!("an exit signal arrived after unlink: {other:?}"),
        }
    }
);

rt_test!(
    exit_2_across_nodes_follows_the_receipt_rules,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        // `peer` traps exits and prints what it gets; `killer` sends exit(P, normal) to the
        // pid it is given, and exit(P, kill) when told.
        let mut e = erl(&format!(
            "Pid = spawn(fun() -> process_flag(trap_exit, true), \
           receive {{'EXIT', _, R}} -> io:format(\"got ~p~n\", [R]) end end), \
         register(peer, Pid), {inbox} ! {{pid, Pid}}, \
         register(killer, spawn(fun() -> receive {{target, P}} -> exit(P, normal), \
           receive kill_now -> exit(P, kill) end end end))",
            inbox = at("inbox", &node)
        ));
        let peer = expect_pid(&probe);
        // otter's exit/2 to a trapping Erlang process: a message there.
        probe.run(move |cx| cx.exit(peer, ExitReason::Shutdown));
        e.wait_for_text("got shutdown", WAIT)
            .expect("Erlang gets the exit signal as a message");
        // Erlang's exit/2 to the trapping probe: `normal` is a message, `kill` kills.
        let probe_pid = probe.pid;
        let (tx, downs) = channel();
        rt.handle().spawn(move |mut cx: Context<In>| async move {
            cx.monitor(probe_pid);
            while let Some(m) = cx.recv_timeout(WAIT).await {
                if let In::Down(d) = m {
                    tx.send(d.reason).unwrap();
                    return;
                }
            }
        });
        let (n, peer_node) = (node.clone(), e.name().to_string());
        probe.run(move |cx| {
            n.send_named(
                cx.pid(),
                "killer",
                &peer_node,
                &(otter::dist::etf::Atom::new("target"), cx.pid()),
            )
            .unwrap();
        });
        match probe.next_message() {
            In::Exit(x) => assert_eq!(x.reason, ExitReason::Normal),
            other => panic!("{other:?}"),
        }
        e.eval_ok("killer ! kill_now");
        assert_eq!(downs.recv_timeout(WAIT).unwrap(), ExitReason::Killed);
    }
);

rt_test!(
    demonitor_of_an_erlang_process_removes_the_monitor_there,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl_peer(&node, "receive go -> exit(boom) end");
        let peer = expect_pid(&probe);
        let (tx, rx) = channel();
        probe.run(move |cx| tx.send(cx.monitor(peer)).unwrap());
        let mref = rx.recv_timeout(WAIT).unwrap();
        assert_eq!(e.eval_ok(&wait_for("monitored_by", 1)), "ok");
        let (tx, rx) = channel();
        probe.run(move |cx| tx.send(cx.demonitor(mref)).unwrap());
        assert!(rx.recv_timeout(WAIT).unwrap(), "the monitor was there");
        assert_eq!(e.eval_ok(&wait_for("monitored_by", 0)), "ok");
        e.eval_ok(&after_death(&node));
        match probe.next_message() {
            In::Other(t) => assert_eq!(t, Term::atom("after_exit")),
            other => panic!("a Down arrived after demonitor: {other:?}"),
        }
    }
);

rt_test!(
    a_silent_erlang_node_is_noticed_within_net_ticktime,
    |rt: &Runtime| {
        // Both sides tick every second (net_ticktime 4 s); a stopped Erlang node (SIGSTOP)
        // neither ticks nor closes its socket: only the ticks can tell.
        reports::reports();
        let node = otter_node::start_with(rt, |b| b.tick_time(Duration::from_secs(4)));
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erlang::Node::builder("erl")
        .arg("-kernel")
        .arg("net_ticktime")
        .arg("4")
        .setup(&format!(
            "Pid = spawn(fun() -> receive _ -> ok end end), register(peer, Pid), {} ! {{pid, Pid}}",
            at("inbox", &node)
        ))
        .start();
        let peer = expect_pid(&probe);
        probe.run(move |cx| cx.link(peer));
        assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
        let stopped = std::time::Instant::now();
        let status = std::process::Command::new("kill")
            .args(["-STOP", &e.os_pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let got = probe.next_message();
        let waited = stopped.elapsed();
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &e.os_pid().to_string()])
            .status();
        match got {
            In::Exit(x) => assert_eq!(x.reason, ExitReason::Noconnection),
            other => panic!("{other:?}"),
        }
        // Within net_ticktime (4 s), with as much again of slack for a loaded machine:
        // a bound on the protocol's rule, not a speed check.
        assert!(waited <= Duration::from_secs(8), "noticed after {waited:?}");
        // Reported as lost, with why: this node closed it (not "closed by the peer").
        let said = reports::reports().into_iter().find(|r| {
            r.target == "otter::dist" && r.get("node") == node.name() && r.get("peer") == e.name()
        });
        let said = said.expect("a report of the lost connection");
        assert_eq!(
            said.get("reason"),
            "the peer stopped ticking (net_ticktime)"
        );
    }
);

rt_test!(
    in_a_cluster_of_three_erlang_nodes_a_killed_one_fires_noconnection_and_comes_back,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let setup = format!(
            "Pid = spawn(fun() -> receive _ -> ok end end), register(peer, Pid), {} ! {{pid, Pid}}",
            at("inbox", &node)
        );
        let mut nodes: Vec<erlang::Node> = (0..3).map(|_| erl(&setup)).collect();
        let peers: Vec<Pid<Term>> = (0..3).map(|_| expect_pid(&probe)).collect();
        let n = node.clone();
        probe.run(move |cx| {
            n.monitor_nodes_to(cx.pid());
            for p in peers {
                cx.link(p);
                cx.monitor(p);
            }
        });
        for e in &mut nodes {
            assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
            assert_eq!(e.eval_ok(&wait_for("monitored_by", 1)), "ok");
        }
        assert_eq!(node.nodes().len(), 3);
        let victim = nodes.remove(1);
        let victim_name = victim.name().to_string();
        let (alive, _) = victim_name.split_once('@').unwrap();
        let alive = alive.to_string();
        let mut victim = victim;
        victim.kill();
        // The link's exit, the monitor's Down and the nodedown: all `Noconnection`, from the
        // killed node only.
        let mut seen = (0, 0, 0);
        while seen != (1, 1, 1) {
            match probe.next() {
                In::Exit(x) => {
                    assert_eq!(x.reason, ExitReason::Noconnection);
                    seen.0 += 1;
                }
                In::Down(d) => {
                    assert_eq!(d.reason, ExitReason::Noconnection);
                    seen.1 += 1;
                }
                In::Node(NodeEvent::Down(n)) => {
                    assert_eq!(n, victim_name);
                    seen.2 += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(node.nodes().len(), 2);
        // The two others are untouched: their links and monitors still stand.
        for e in &mut nodes {
            assert_eq!(e.eval_ok(&wait_for("links", 1)), "ok");
        }
        // A node of the same name comes back: the otter node reconnects to it on demand.
        let mut back = erlang::Node::builder(&alive)
            .exact_name(true)
            .setup(ECHO)
            .start();
        assert_eq!(back.name(), victim_name);
        let (n, peer) = (node.clone(), victim_name.clone());
        probe.run(move |cx| {
            n.send_named(cx.pid(), "echo", &peer, &(cx.pid(), "again"))
                .unwrap();
        });
        loop {
            match probe.next() {
                In::Echo(s) => {
                    assert_eq!(s, "again");
                    break;
                }
                In::Node(NodeEvent::Up(n)) => assert_eq!(n, victim_name),
                other => panic!("{other:?}"),
            }
        }
        let _ = back.eval_ok("ok");
    }
);

rt_test!(
    a_remote_name_reaches_its_node_again_after_the_node_comes_back,
    |rt: &Runtime| {
        // `{Name, Node} ! M` works again once the node is back; the pid of
        // `Node::remote_name` stands for the name, not for a connection.
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut first = erl(ECHO);
        let name = first.name().to_string();
        let alive = first.alive().to_string();
        let echo: Pid<(Pid<In>, String)> = node.remote_name("echo", &name);
        let n = node.clone();
        probe.run(move |cx| {
            n.monitor_nodes_to(cx.pid());
            echo.send((cx.pid(), "first".to_string()));
        });
        let echoed = |want: &str| loop {
            match probe.next() {
                In::Echo(s) => return assert_eq!(s, want),
                In::Node(NodeEvent::Up(n)) => assert_eq!(n, name),
                other => panic!("{other:?}"),
            }
        };
        echoed("first");
        first.kill();
        // The connection's teardown ends with the nodedown.
        match probe.next() {
            In::Node(NodeEvent::Down(n)) => assert_eq!(n, name),
            other => panic!("{other:?}"),
        }
        let back = erlang::Node::builder(&alive)
            .exact_name(true)
            .setup(ECHO)
            .start();
        assert_eq!(back.name(), name);
        probe.run(move |cx| echo.send((cx.pid(), "again".to_string())));
        echoed("again");
    }
);

rt_test!(
    a_remote_name_sends_by_name_and_its_monitor_follows_the_name,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let probe = Probe::start(rt, &node, "inbox");
        let mut e = erl(
            "register(named, spawn(fun() -> receive {From, M} -> From ! {echo, M}, \
           receive stop -> exit(bye) end end end)), ok",
        );
        let named: Pid<(Pid<In>, String)> = node.remote_name("named", e.name());
        let nobody: Pid<Term> = node.remote_name("nobody", e.name());
        let (tx, rx) = channel();
        probe.run(move |cx| {
            named.send((cx.pid(), "by name".to_string()));
            let m1 = cx.monitor(named);
            let m2 = cx.monitor(nobody);
            tx.send((m1, m2)).unwrap();
        });
        let (m1, m2) = rx.recv_timeout(WAIT).unwrap();
        let mut got = (false, false);
        while got != (true, true) {
            match probe.next_message() {
                In::Echo(s) => {
                    assert_eq!(s, "by name");
                    got.0 = true;
                }
                In::Down(d) => {
                    // The name nobody holds: noproc, naming the name's pid.
                    assert_eq!(d.reference, m2);
                    assert_eq!(d.pid, nobody.id());
                    assert_eq!(d.reason, ExitReason::Noproc);
                    got.1 = true;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(e.eval_ok(&wait_for_named_monitor()), "ok");
        e.eval_ok("named ! stop");
        match probe.next_message() {
            In::Down(d) => {
                assert_eq!(d.reference, m1);
                assert_eq!(d.pid, named.id());
                let ExitReason::Error(r) = d.reason else {
                    panic!("{:?}", d.reason)
                };
                assert_eq!(
                    r.0.downcast_ref::<RemoteReason>(),
                    Some(&RemoteReason(Term::atom("bye")))
                );
            }
            other => panic!("{other:?}"),
        }
        // A link to a name is refused: the exit signal says noproc.
        probe.run(move |cx| cx.link(nobody));
        match probe.next_message() {
            In::Exit(x) => assert_eq!(x.reason, ExitReason::Noproc),
            other => panic!("{other:?}"),
        }
    }
);
