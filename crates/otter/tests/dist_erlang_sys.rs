//! OTP's `sys` and `gen_server:stop` from a real `erl` node against an otter server
//! registered for other nodes (`src/dist/system.rs`): `sys:get_state`,
//! `sys:get_status`, `sys:suspend`/`resume`, `sys:statistics`, `sys:replace_state`
//! refused, an unknown system message answered as `sys.erl` answers it, and
//! `gen_server:stop({Name, Node})` stopping the server with its reason.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc;
use std::time::Duration;

use otter::dist::{ErlangServer, Node};
use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, Down, ExitReason, Runtime};
use serde::Deserialize;

/// A counter that Erlang calls with `get` and `{add, N}`.
struct Counter(i64);

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Call {
    Get(ReplyTo<i64>),
    Add(i64, ReplyTo<i64>),
}

impl Server for Counter {
    type Args = ();
    type Call = Call;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Counter(0))
    }
    async fn handle_call(&mut self, c: Call, _: &mut ServerContext<Self>) -> Flow {
        match c {
            Call::Get(r) => r.reply(self.0),
            Call::Add(n, r) => {
                self.0 += n;
                r.reply(self.0);
            }
        }
        Flow::Continue
    }
    fn format_status(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "count={}", self.0)
    }
}

impl ErlangServer for Counter {}

/// Starts a counter registered as `counter` for other nodes, and a process that
/// reports its exit reason on the returned channel (monitoring before this returns).
fn start_counter(rt: &Runtime, node: &Node) -> (ServerRef<Counter>, mpsc::Receiver<ExitReason>) {
    let n = node.clone();
    let counter = rt
        .block_on(move |cx: Context<()>| async move {
            let s = Counter::start(&cx, ()).await.unwrap();
            n.register_server("counter", s);
            s
        })
        .unwrap();
    let (ready_tx, ready) = mpsc::channel();
    let (tx, exits) = mpsc::channel();
    rt.handle().spawn(move |mut cx: Context<Down>| async move {
        cx.monitor(counter.pid());
        ready_tx.send(()).unwrap();
        let down = cx.recv().await;
        let _ = tx.send(down.reason);
    });
    ready.recv().unwrap();
    (counter, exits)
}

rt_test!(
    sys_from_erlang_reads_and_suspends_an_otter_server,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (_counter, _exits) = start_counter(rt, &node);
        let mut e = erlang::Node::builder("erl").setup("ok").start();
        let s = otter_node::at("counter", &node);
        assert_eq!(e.eval_ok(&format!("gen_server:call({s}, {{add, 5}})")), "5");
        assert_eq!(e.eval_ok(&format!("sys:get_state({s})")), "<<\"count=5\">>");
        assert_eq!(
        e.eval_ok(&format!(
            "{{status, P, {{module, _}}, [[], running, _, [], _]}} = sys:get_status({s}), is_pid(P)"
        )),
        "true"
    );
        // Suspended: a call waits (and times out); system messages are still answered;
        // after resume the held call has been handled, in order.
        assert_eq!(e.eval_ok(&format!("sys:suspend({s})")), "ok");
        assert_eq!(
            e.eval_ok(&format!(
                "try gen_server:call({s}, {{add, 1}}, 100) catch exit:{{timeout, _}} -> timeout end"
            )),
            "timeout"
        );
        assert_eq!(
            e.eval_ok(&format!(
                "{{status, _, _, [_, Mode, _, _, _]}} = sys:get_status({s}), Mode"
            )),
            "suspended"
        );
        assert_eq!(e.eval_ok(&format!("sys:resume({s})")), "ok");
        assert_eq!(e.eval_ok(&format!("gen_server:call({s}, get)")), "6");
        // Statistics: off, then on and counting.
        assert_eq!(
            e.eval_ok(&format!("sys:statistics({s}, get)")),
            "{ok,no_statistics}"
        );
        assert_eq!(e.eval_ok(&format!("sys:statistics({s}, true)")), "ok");
        assert_eq!(e.eval_ok(&format!("gen_server:call({s}, get)")), "6");
        assert_eq!(
            e.eval_ok(&format!(
                "{{ok, L}} = sys:statistics({s}, get), \
             {{proplists:get_value(messages_in, L), proplists:get_value(messages_out, L), \
               element(1, proplists:get_value(start_time, L))}}"
            )),
            "{1,1,{2026,12,4}}".replace("{2026,12,4}", &today()),
        );
    }
);

rt_test!(
    sys_from_erlang_refuses_what_an_otter_server_cannot_do,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (_counter, _exits) = start_counter(rt, &node);
        let mut e = erlang::Node::builder("erl").setup("ok").start();
        let s = otter_node::at("counter", &node);
        // An Erlang fun cannot run in otter: `sys:replace_state` raises.
        assert_eq!(
            e.eval_ok(&format!(
                "try sys:replace_state({s}, fun(X) -> X end) \
                 catch error:{{callback_failed, _}} -> refused end"
            )),
            "refused"
        );
        // A system message otter does not know: `sys.erl`'s answer.
        assert_eq!(
            e.eval_ok(&format!("sys:log({s}, true)")),
            "{error,{unknown_system_msg,{debug,{log,true}}}}"
        );
        // The server still serves.
        assert_eq!(e.eval_ok(&format!("gen_server:call({s}, {{add, 2}})")), "2");
    }
);

rt_test!(
    gen_server_stop_from_erlang_stops_an_otter_server_with_its_reason,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let (counter, exits) = start_counter(rt, &node);
        let mut e = erlang::Node::builder("erl").setup("ok").start();
        let s = otter_node::at("counter", &node);
        assert_eq!(
            // (A binary: otter's `ShutdownWith` holds text, so `{shutdown, bye}` would
            // come back as `{shutdown, <<"bye">>}`, and `proc_lib:stop` raise it.)
            e.eval_ok(&format!(
                "gen_server:stop({s}, {{shutdown, <<\"bye\">>}}, 5000)"
            )),
            "ok"
        );
        assert_eq!(
            exits.recv_timeout(Duration::from_secs(10)).unwrap(),
            ExitReason::ShutdownWith("bye".into())
        );
        assert!(counter.pid().has_exited());
        // A stop of a name nobody holds: `noproc`, from the caller's monitor.
        assert_eq!(
            e.eval_ok(&format!(
                "try gen_server:stop({s}, normal, 5000) catch exit:R -> R end"
            )),
            "noproc"
        );
    }
);

/// Today in UTC as Erlang prints `{Y,M,D}`.
fn today() -> String {
    let mut e = std::process::Command::new("date")
        .args(["-u", "+{%Y,%-m,%-d}"])
        .output()
        .expect("date runs");
    e.stdout.pop();
    String::from_utf8(e.stdout).unwrap()
}
