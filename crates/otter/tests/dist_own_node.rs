//! The node's own name, `{Name, node()}`: `Node::send_named`, `Node::remote_name` and
//! `Node::call` given this node's name act locally, as Erlang's `{Name, node()}` does,
//! on the names this node exports to its peers, without a connection.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::dist::etf::Term;
use otter::dist::{BadTerm, RemoteCallError, RemoteServer};
use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, Down, ExitReason, Runtime};
use otter_node::inbox;
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(20);

/// What the inbox receives.
#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    #[serde(rename = "hello")]
    Hello(String),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<BadTerm> for Msg {
    fn from(b: BadTerm) -> Msg {
        Msg::Bad(b)
    }
}

rt_test!(
    a_send_to_the_own_node_name_reaches_the_local_registered_process,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (_, rx) = inbox(rt, &node);
        let n = node.clone();
        rt.block_on(move |cx: Context<()>| async move {
            let own = n.name().to_string();
            n.send_named(cx.pid(), "inbox", &own, &(Term::atom("hello"), "me"))
                .unwrap();
            // A name nobody holds: dropped, as Erlang's send to it.
            n.send_named(cx.pid(), "nobody", &own, &"lost").unwrap();
        })
        .unwrap();
        match rx
            .recv_timeout(WAIT)
            .expect("the local inbox gets the message")
        {
            Msg::Hello(s) => assert_eq!(s, "me"),
            other => panic!("{other:?}"),
        }
        // No connection to itself was made.
        assert!(node.nodes().is_empty());
    }
);

rt_test!(
    a_pid_for_the_own_node_name_sends_to_the_local_registered_process,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (_, rx) = inbox(rt, &node);
        let to = node.remote_name::<Msg>("inbox", node.name());
        to.send(Msg::Hello("by name".into()));
        match rx
            .recv_timeout(WAIT)
            .expect("the local inbox gets the message")
        {
            Msg::Hello(s) => assert_eq!(s, "by name"),
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    a_monitor_of_the_own_node_name_reports_its_holders_exit_and_noproc_without_one,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (holder, _rx) = inbox::<Msg>(rt, &node);
        let n = node.clone();
        let r = rt.block_on(move |mut cx: Context<Down>| async move {
            let own = n.name().to_string();
            let nobody = n.remote_name::<Msg>("nobody", &own);
            cx.monitor(nobody);
            let first = cx.recv_timeout(WAIT).await;
            let name = n.remote_name::<Msg>("inbox", &own);
            cx.monitor(name);
            cx.exit(holder, ExitReason::Kill);
            let second = cx.recv_timeout(WAIT).await;
            (first, second, nobody.id(), name.id())
        });
        let (first, second, nobody, name) = r.unwrap();
        let first = first.expect("a Down for a name nobody holds");
        assert_eq!(first.reason, ExitReason::Noproc);
        assert_eq!(first.pid, nobody);
        let second = second.expect("a Down when the holder exits");
        assert_eq!(second.reason, ExitReason::Killed);
        assert_eq!(
            second.pid, name,
            "the Down names the pid that stands for the name"
        );
    }
);

/// A server that answers `{add, A, B}` with `A + B`.
struct Adder;

impl Server for Adder {
    type Args = ();
    type Call = (i64, i64, ReplyTo<i64>);
    type Cast = ();
    type Info = BadTerm;
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Adder)
    }
    async fn handle_call(&mut self, (a, b, r): Self::Call, _: &mut ServerContext<Self>) -> Flow {
        if a < 0 {
            return Flow::Stop(ExitReason::ShutdownWith("negative".into()));
        }
        r.reply(a + b);
        Flow::Continue
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum AdderRequest {
    Add(i64, i64),
}

impl RemoteServer for Adder {
    type RemoteCall = AdderRequest;
    type RemoteReply = i64;
    type RemoteCast = ();
    async fn remote_call(server: ServerRef<Self>, r: AdderRequest) -> Result<i64, CallError> {
        let AdderRequest::Add(a, b) = r;
        server.call(|from| (a, b, from)).await
    }
    fn remote_cast(_: ()) -> Option<()> {
        None
    }
    fn bad_term(b: BadTerm) -> Option<BadTerm> {
        Some(b)
    }
}

rt_test!(
    a_call_to_the_own_node_name_is_a_local_call,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let n = node.clone();
        let r = rt.block_on(move |cx: Context<()>| async move {
            let adder = Adder::start(&cx, ()).await.unwrap();
            n.register_server("adder", adder);
            let own = n.name().to_string();
            let add = (Term::atom("add"), 2, 3);
            let sum: Result<i64, _> = n.call(&cx, "adder", &own, &add, WAIT).await;
            let missing: Result<i64, _> = n.call(&cx, "nobody", &own, &add, WAIT).await;
            // The server exits during the call: the call ends with its reason.
            let crash = (Term::atom("add"), -1, 3);
            let crashed: Result<i64, _> = n.call(&cx, "adder", &own, &crash, WAIT).await;
            (sum, missing, crashed)
        });
        let (sum, missing, crashed) = r.unwrap();
        assert_eq!(sum, Ok(5));
        assert_eq!(missing, Err(RemoteCallError::Exit(ExitReason::Noproc)));
        assert_eq!(
            crashed,
            Err(RemoteCallError::Exit(ExitReason::ShutdownWith(
                "negative".into()
            )))
        );
        assert!(node.nodes().is_empty());
    }
);
