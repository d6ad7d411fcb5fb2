//! One request enum for Rust and Erlang callers ([`ErlangServer`]) and the ready types
//! for Erlang's shapes (`otter::dist::shapes`), against a real `erl` node
//! (`support/erlang.rs`): the server's own `Call` decodes Erlang's requests, with a
//! reply handle the runtime made, and its replies are Erlang's `{ok, T}` / `{error,
//! E}` / `ok`.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::collections::HashMap;
use std::time::Duration;

use otter::dist::etf::{self, Term};
use otter::dist::shapes::{OkError, OkOrError, Tagged};
use otter::dist::{ErlangServer, Node};
use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, ExitReason, Runtime};
use otter_node::at;
use serde::Deserialize;

fn erl() -> erlang::Node {
    erlang::Node::builder("erl").setup("ok").start()
}

/// A key-value store whose one `Call` enum Rust and Erlang callers both use.
#[derive(Default)]
struct Store {
    map: HashMap<String, i64>,
    /// A `swap` call waiting for the next one (a deferred reply).
    waiting: Option<(i64, ReplyTo<i64>)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Call {
    /// `{put, Key, Value}` -> `ok`
    Put(String, i64, ReplyTo<()>),
    /// `{get, Key}` -> `{ok, Value}` | `{error, not_found}`
    Get(String, ReplyTo<OkError<i64, Term>>),
    /// `{take, Key}` -> `ok` | `{error, not_found}`
    Take(String, ReplyTo<OkOrError<Term>>),
    /// `size` -> `{size, N}`
    Size(ReplyTo<Tagged<usize>>),
    /// `{swap, N}`: answered with the next `swap`'s `N`.
    Swap(i64, ReplyTo<i64>),
    /// `waiting`: whether a `swap` waits.
    Waiting(ReplyTo<bool>),
    /// `stop`: the server exits `shutdown` without replying.
    Stop(ReplyTo<()>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Cast {
    /// `{incr, Key}`
    Incr(String),
}

impl Server for Store {
    type Args = ();
    type Call = Call;
    type Cast = Cast;
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Store::default())
    }
    async fn handle_call(&mut self, c: Call, _: &mut ServerContext<Self>) -> Flow {
        match c {
            Call::Put(k, v, from) => {
                self.map.insert(k, v);
                from.reply(());
            }
            Call::Get(k, from) => from.reply(OkError(
                self.map.get(&k).copied().ok_or(Term::atom("not_found")),
            )),
            Call::Take(k, from) => from.reply(OkOrError(
                self.map
                    .remove(&k)
                    .map(|_| ())
                    .ok_or(Term::atom("not_found")),
            )),
            Call::Size(from) => from.reply(Tagged::new("size", self.map.len())),
            Call::Swap(n, from) => match self.waiting.take() {
                None => self.waiting = Some((n, from)),
                Some((m, earlier)) => {
                    earlier.reply(n);
                    from.reply(m);
                }
            },
            Call::Waiting(from) => from.reply(self.waiting.is_some()),
            Call::Stop(from) => {
                drop(from); // no reply: the caller sees the exit
                return Flow::Stop(ExitReason::Shutdown);
            }
        }
        Flow::Continue
    }
    async fn handle_cast(&mut self, c: Cast, _: &mut ServerContext<Self>) -> Flow {
        let Cast::Incr(k) = c;
        *self.map.entry(k).or_default() += 1;
        Flow::Continue
    }
}

impl ErlangServer for Store {}

fn start_store(rt: &Runtime, node: &Node) -> ServerRef<Store> {
    let n = node.clone();
    rt.block_on(move |cx: Context<()>| async move {
        let s = Store::start(&cx, ()).await.unwrap();
        n.register_server("store", s);
        s
    })
    .unwrap()
}

rt_test!(
    one_request_enum_serves_rust_and_erlang_callers,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let store = start_store(rt, &node);
        let mut e = erl();
        let s = at("store", &node);
        // Erlang puts, Rust reads; Rust puts, Erlang reads: the same `Call`.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{put, <<\"a\">>, 1}})")),
            "ok"
        );
        let got = rt
            .block_on(move |_: Context<()>| async move {
                store.call(|r| Call::Get("a".into(), r)).await
            })
            .unwrap()
            .unwrap();
        assert_eq!(got, OkError(Ok(1)));
        rt.block_on(move |_: Context<()>| async move {
            store.call(|r| Call::Put("b".into(), 2, r)).await.unwrap()
        })
        .unwrap();
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{get, <<\"b\">>}})")),
            "{ok,2}"
        );
        // The shapes, as Erlang sees them.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{get, <<\"zz\">>}})")),
            "{error,not_found}"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{take, <<\"b\">>}})")),
            "ok"
        );
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{take, <<\"b\">>}})")),
            "{error,not_found}"
        );
        // A bare atom request is a variant that holds only its reply handle.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, size)")),
            "{size,1}"
        );
        // A cast decodes into the server's own `Cast`; the call after it sees it.
        e.eval_ok(&format!("gen_server:cast({s}, {{incr, <<\"a\">>}})"));
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{get, <<\"a\">>}})")),
            "{ok,2}"
        );
        // A request no variant takes is refused at once, as `RemoteServer`'s default.
        assert_eq!(
            e.eval_ok(&format!("gen_server:call({s}, {{get, 1, 2}}, 5000)")),
            "{error,{bad_call,{get,1,2}}}"
        );
    }
);

rt_test!(
    a_reply_handle_made_for_an_erlang_caller_can_be_kept_and_answered_later,
    |rt: &Runtime| {
        // The server keeps Erlang's handle until a Rust caller comes: each gets the
        // other's number.
        let node = otter_node::start(rt);
        let store = start_store(rt, &node);
        let mut e = erl();
        let s = at("store", &node);
        e.eval_ok(&format!(
            "Self = self(), spawn(fun() -> Self ! {{swapped, gen_server:call({s}, {{swap, 1}}, 10000)}} end), ok"
        ));
        // The Erlang call is in the server before the Rust one: wait until it is.
        support::eventually("the Erlang swap waits", Duration::from_secs(20), || {
            rt.block_on(
                move |_: Context<()>| async move { store.call(Call::Waiting).await.unwrap() },
            )
            .unwrap()
        });
        let mine = rt
            .block_on(move |_: Context<()>| async move { store.call(|r| Call::Swap(2, r)).await })
            .unwrap()
            .unwrap();
        assert_eq!(mine, 1);
        assert_eq!(
            e.eval_ok("receive {swapped, N} -> N after 10000 -> timeout end"),
            "2"
        );
    }
);

rt_test!(
    an_erlang_caller_of_a_server_that_exits_without_replying_exits_with_its_reason,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let store = start_store(rt, &node);
        let mut e = erl();
        let s = at("store", &node);
        let r = e.eval_ok(&format!(
            "case catch gen_server:call({s}, stop, 10000) of {{'EXIT', {{R, _}}}} -> R; X -> {{no_exit, X}} end"
        ));
        assert_eq!(r, "shutdown");
        assert!(!store.pid().is_alive());
    }
);

#[test]
fn a_reply_handle_decodes_only_inside_a_call_from_another_node() {
    // The mark the runtime appends, sent as a plain message: not a reply handle.
    let mark = etf::to_vec(&Term::atom("$otter_reply")).unwrap();
    let r = etf::from_slice::<ReplyTo<u8>>(&mark);
    assert!(r.is_err());
    let put = Term::tuple(vec![
        Term::atom("put"),
        Term::from("k"),
        Term::from(1),
        Term::atom("$otter_reply"),
    ]);
    assert!(etf::from_slice::<Call>(&etf::to_vec(&put).unwrap()).is_err());
}

#[test]
fn erlang_result_shapes_round_trip_through_the_term_format() {
    let decode = |t: Term| etf::to_vec(&t).unwrap();
    let ok = Term::tuple(vec![Term::atom("ok"), Term::from(5)]);
    let err = Term::tuple(vec![Term::atom("error"), Term::atom("enoent")]);
    assert_eq!(
        etf::from_slice::<OkError<i64, Term>>(&decode(ok.clone())).unwrap(),
        OkError(Ok(5))
    );
    assert_eq!(
        etf::from_slice::<OkError<i64, Term>>(&decode(err.clone())).unwrap(),
        OkError(Err(Term::atom("enoent")))
    );
    assert_eq!(
        etf::from_slice::<OkOrError<Term>>(&decode(Term::atom("ok"))).unwrap(),
        OkOrError(Ok(()))
    );
    assert_eq!(
        etf::from_slice::<OkOrError<Term>>(&decode(err)).unwrap(),
        OkOrError(Err(Term::atom("enoent")))
    );
    // Each shape refuses the other's terms.
    assert!(etf::from_slice::<OkOrError<Term>>(&decode(ok)).is_err());
    assert!(etf::from_slice::<OkError<i64, Term>>(&decode(Term::atom("ok"))).is_err());
    assert!(
        etf::from_slice::<OkError<i64, Term>>(&decode(Term::tuple(vec![
            Term::atom("maybe"),
            Term::from(1)
        ])))
        .is_err()
    );
}
