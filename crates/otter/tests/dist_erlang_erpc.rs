//! `erpc` and `rpc` between a real `erl` node and an otter node (`src/dist/erpc.rs`):
//! Erlang's `erpc:call`/`erpc:cast`/`rpc:call` into functions registered with
//! `Node::register_rpc`, with Erlang's result classes (`error:undef` for an
//! unregistered function, `function_clause` for arguments that do not decode), the
//! built-in introspection set, and otter's `Node::erpc_call`/`erpc_cast` into Erlang.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc;
use std::time::Duration;

use otter::dist::etf::Term;
use otter::dist::{ErpcError, Node, Raise};
use otter::{Context, Runtime};

/// Registers the functions the tests call.
fn register(node: &Node) {
    node.register_rpc("calc", "add", |(a, b): (i64, i64)| Ok(a + b));
    node.register_rpc("calc", "divide", |(a, b): (i64, i64)| {
        if b == 0 {
            Err(Raise::error("badarith"))
        } else {
            Ok(a / b)
        }
    });
    node.register_rpc("calc", "nothing", |(): ()| Ok("nothing"));
    node.register_rpc("calc", "quit", |(why,): (String,)| -> Result<(), Raise> {
        Err(Raise::Exit(Term::binary(why.into_bytes())))
    });
    node.register_rpc("calc", "found", |(x,): (Term,)| -> Result<(), Raise> {
        Err(Raise::Throw(Term::tuple(vec![Term::atom("found"), x])))
    });
    node.register_rpc("calc", "sum", |xs: Vec<i64>| Ok(xs.iter().sum::<i64>()));
    node.register_rpc("calc", "boom", |(): ()| -> Result<(), Raise> {
        panic!("boom")
    });
    node.register_rpc_async(
        "calc",
        "later",
        |cx: Context<()>, (ms, v): (u64, Term)| async move {
            cx.sleep(Duration::from_millis(ms)).await;
            Ok(v)
        },
    );
}

fn erl_for(node: &Node) -> erlang::Node {
    let mut e = erlang::Node::builder("erl").setup("ok").start();
    assert_eq!(
        e.eval_ok(&format!("net_kernel:connect_node('{}')", node.name())),
        "true"
    );
    e
}

/// An otter node serving [`register`]'s functions, and an Erlang node connected to it.
fn calc_node(rt: &Runtime) -> (Node, erlang::Node) {
    let node = otter_node::start(rt);
    register(&node);
    let e = erl_for(&node);
    (node, e)
}

/// `call` as an Erlang expression that gives `{value, V}` or the `{Class, Reason}` it
/// raised.
fn catch(call: &str) -> String {
    format!("try {call} of V -> {{value, V}} catch C:R -> {{C, R}} end")
}

rt_test!(
    erpc_call_from_erlang_runs_a_registered_function,
    |rt: &Runtime| {
        let (node, mut e) = calc_node(rt);
        let n = node.name();
        assert_eq!(
            e.eval_ok(&format!("erpc:call('{n}', calc, add, [2, 3])")),
            "5"
        );
        assert_eq!(
            e.eval_ok(&format!("erpc:call('{n}', calc, sum, [1, 2, 3, 4])")),
            "10"
        );
        assert_eq!(
            e.eval_ok(&format!("erpc:call('{n}', calc, nothing, [])")),
            "<<\"nothing\">>"
        );
        assert_eq!(
            e.eval_ok(&format!(
                "erpc:call('{n}', calc, later, [20, {{a, <<\"b\">>}}], 5000)"
            )),
            "{a,<<\"b\">>}"
        );
        // Many callers at once.
        assert_eq!(
        e.eval_ok(&format!(
            "Self = self(), \
             [spawn(fun() -> Self ! {{I, erpc:call('{n}', calc, add, [I, I])}} end) || I <- lists:seq(1, 50)], \
             lists:sum([receive {{I, R}} -> R end || I <- lists:seq(1, 50)])"
        )),
        "2550"
    );
    }
);

rt_test!(
    erpc_call_from_erlang_raises_the_functions_exception_class,
    |rt: &Runtime| {
        let (node, mut e) = calc_node(rt);
        let n = node.name();
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', calc, divide, [1, 0])"))),
            "{error,{exception,badarith,[{calc,divide,[1,0],[]}]}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!(
                "erpc:call('{n}', calc, quit, [<<\"bye\">>])"
            ))),
            "{exit,{exception,<<\"bye\">>}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', calc, found, [7])"))),
            "{throw,{found,7}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', calc, boom, [])"))),
            "{error,{exception,{panic,<<\"boom\">>},[{calc,boom,[],[]}]}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!(
                "erpc:call('{n}', calc, later, [2000, x], 50)"
            ))),
            "{error,{erpc,timeout}}"
        );
    }
);

rt_test!(
    erpc_call_of_an_unregistered_function_or_bad_arguments_is_refused_and_the_node_serves_on,
    |rt: &Runtime| {
        let (node, mut e) = calc_node(rt);
        let n = node.name();
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', nomod, nofun, [1])"))),
            "{error,{exception,undef,[{nomod,nofun,[1],[]}]}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', calc, add, [1, x])"))),
            "{error,{exception,function_clause,[{calc,add,[1,x],[]}]}}"
        );
        assert_eq!(
            e.eval_ok(&catch(&format!("erpc:call('{n}', calc, add, [1, 2, 3])"))),
            "{error,{exception,function_clause,[{calc,add,[1,2,3],[]}]}}"
        );
        // A spawn of anything else is refused, not run.
        assert_eq!(
            e.eval_ok(&format!(
                "try erlang:spawn_request('{n}', io, format, [\"x\"], [monitor]) of \
                 R -> receive {{spawn_reply, R, error, Why}} -> Why after 5000 -> timeout end \
                 catch C:E -> {{C, E}} end"
            )),
            "notsup"
        );
        // The same connection serves everyone else.
        assert_eq!(
            e.eval_ok(&format!("erpc:call('{n}', calc, add, [20, 22])")),
            "42"
        );
        assert_eq!(
            e.eval_ok(&format!("lists:member('{n}', nodes(hidden))")),
            "true"
        );
    }
);

rt_test!(erpc_cast_from_erlang_runs_the_function, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let (tx, rx) = mpsc::channel::<i64>();
    let tx = std::sync::Mutex::new(tx);
    node.register_rpc("sink", "put", move |(x,): (i64,)| {
        tx.lock().unwrap().send(x).unwrap();
        Ok(())
    });
    let mut e = erl_for(&node);
    let n = node.name();
    assert_eq!(
        e.eval_ok(&format!("erpc:cast('{n}', sink, put, [11])")),
        "ok"
    );
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 11);
    assert_eq!(
        e.eval_ok(&format!("rpc:cast('{n}', sink, put, [12])")),
        "true"
    );
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 12);
});

rt_test!(
    rpc_call_from_erlang_answers_values_and_badrpc,
    |rt: &Runtime| {
        let (node, mut e) = calc_node(rt);
        let n = node.name();
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, add, [2, 3])")),
            "5"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, add, [2, 3], 5000)")),
            "5"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', nomod, nofun, [])")),
            "{badrpc,{'EXIT',{undef,[{nomod,nofun,[],[]}]}}}"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, divide, [1, 0])")),
            "{badrpc,{'EXIT',{badarith,[{calc,divide,[1,0],[]}]}}}"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, quit, [<<\"x\">>])")),
            "{badrpc,{'EXIT',<<\"x\">>}}"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, found, [1])")),
            "{found,1}"
        );
        assert_eq!(
            e.eval_ok(&format!("rpc:call('{n}', calc, later, [2000, x], 50)")),
            "{badrpc,timeout}"
        );
    }
);

rt_test!(rpc_call_through_rex_answers_as_rex_does, |rt: &Runtime| {
    // A peer without DFLAG_SPAWN calls `rex` with gen_server:call; this is that call.
    let (node, mut e) = calc_node(rt);
    let n = node.name();
    assert_eq!(
        e.eval_ok(&format!(
            "gen_server:call({{rex, '{n}'}}, {{call, calc, add, [1, 2], group_leader()}})"
        )),
        "3"
    );
    assert_eq!(
        e.eval_ok(&format!(
            "gen_server:call({{rex, '{n}'}}, {{call, no, such, [], group_leader()}})"
        )),
        "{badrpc,{'EXIT',{undef,[{no,such,[],[]}]}}}"
    );
});

rt_test!(
    erlang_introspection_calls_answer_for_the_otter_node,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        // A process exported under a name.
        let (tx, rx) = mpsc::channel();
        let n2 = node.clone();
        rt.handle().spawn(move |mut cx: Context<Term>| async move {
            n2.register("probe", cx.pid());
            tx.send(()).unwrap();
            let _ = cx.recv().await;
        });
        rx.recv().unwrap();
        let mut e = erl_for(&node);
        let n = node.name();
        assert_eq!(
            e.eval_ok(&format!(
                "Ps = erpc:call('{n}', erlang, processes, []), \
             {{length(Ps) >= 1, lists:all(fun(P) -> node(P) =:= '{n}' end, Ps)}}"
            )),
            "{true,true}"
        );
        assert_eq!(
            e.eval_ok(&format!(
                "Ps = erpc:call('{n}', erlang, processes, []), \
             Count = erpc:call('{n}', erlang, system_info, [process_count]), \
             is_integer(Count) andalso Count >= 1"
            )),
            "true"
        );
        assert_eq!(
        e.eval_ok(&format!(
            "lists:sort([N || N <- erpc:call('{n}', erlang, registered, []), N =/= net_kernel, N =/= rex])"
        )),
        "[probe]"
    );
        assert_eq!(
        e.eval_ok(&format!(
            "[P] = [P || P <- erpc:call('{n}', erlang, processes, []), \
                         erpc:call('{n}', erlang, process_info, [P, registered_name]) =:= {{registered_name, probe}}], \
             node(P) =:= '{n}'"
        )),
        "true"
    );
        assert_eq!(
            e.eval_ok(&format!(
                "M = erpc:call('{n}', erlang, memory, []), \
             {{proplists:get_value(total, M) > 0, lists:sort(proplists:get_keys(M))}}"
            )),
            "{true,[atom,atom_used,binary,code,ets,processes,processes_used,system,total]}"
        );
        assert_eq!(
        e.eval_ok(&format!(
            "try erpc:call('{n}', erlang, system_info, [otp_release]) catch C:{{exception, R, _}} -> {{C, R}} end"
        )),
        "{error,badarg}"
    );
        assert_eq!(
            e.eval_ok(&format!(
                "rpc:call('{n}', erlang, system_info, [process_count]) > 0"
            )),
            "true"
        );
    }
);

// otter calls Erlang.

const LONG: Duration = Duration::from_secs(10);

rt_test!(
    erpc_call_to_erlang_returns_the_decoded_value,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let e = erlang::Node::builder("erl").setup("ok").start();
        let peer = e.name().to_string();
        let n = node.clone();
        let (abs, seq, name, tuple) = rt
            .block_on(move |cx: Context<()>| async move {
                let abs: i64 = n
                    .erpc_call(&cx, &peer, "erlang", "abs", &(-5i64,), LONG)
                    .await
                    .unwrap();
                let seq: Vec<i64> = n
                    .erpc_call(&cx, &peer, "lists", "seq", &(1, 4), LONG)
                    .await
                    .unwrap();
                let name: Term = n
                    .erpc_call(&cx, &peer, "erlang", "node", &(), LONG)
                    .await
                    .unwrap();
                let tuple: (String, i64) = n
                    .erpc_call(
                        &cx,
                        &peer,
                        "erlang",
                        "list_to_tuple",
                        &(vec![Term::binary(b"x".to_vec()), Term::from(2i64)],),
                        LONG,
                    )
                    .await
                    .unwrap();
                (abs, seq, name, tuple)
            })
            .unwrap();
        assert_eq!(abs, 5);
        assert_eq!(seq, vec![1, 2, 3, 4]);
        assert_eq!(name, Term::atom(e.name()));
        assert_eq!(tuple, ("x".to_string(), 2));
    }
);

rt_test!(
    erpc_call_to_erlang_maps_each_failure_to_its_error,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let e = erlang::Node::builder("erl").setup("ok").start();
        let peer = e.name().to_string();
        let bogus = format!("{}@{}", erlang::unique_name("nosuch"), erlang::short_host());
        let n = node.clone();
        let results = rt
            .block_on(move |cx: Context<()>| async move {
                let mut r: Vec<Result<Term, ErpcError>> = Vec::new();
                let short = Duration::from_millis(100);
                r.push(
                    n.erpc_call(
                        &cx,
                        &peer,
                        "erlang",
                        "error",
                        &(Term::atom("badarg"),),
                        LONG,
                    )
                    .await,
                );
                r.push(
                    n.erpc_call(&cx, &peer, "erlang", "exit", &(Term::atom("bye"),), LONG)
                        .await,
                );
                r.push(
                    n.erpc_call(&cx, &peer, "erlang", "throw", &(7i64,), LONG)
                        .await,
                );
                r.push(n.erpc_call(&cx, &peer, "nomod", "nofun", &(), LONG).await);
                r.push(
                    n.erpc_call(&cx, &peer, "timer", "sleep", &(2000i64,), short)
                        .await,
                );
                r.push(n.erpc_call(&cx, &bogus, "erlang", "node", &(), LONG).await);
                // A value of the wrong type.
                let wrong: Result<i64, ErpcError> =
                    n.erpc_call(&cx, &peer, "erlang", "node", &(), LONG).await;
                // After all that, a plain call still works.
                let ok: Result<i64, ErpcError> = n
                    .erpc_call(&cx, &peer, "erlang", "abs", &(-1i64,), LONG)
                    .await;
                (r, wrong, ok)
            })
            .unwrap();
        let (r, wrong, ok) = results;
        assert!(
            matches!(&r[0], Err(ErpcError::Error { reason, .. }) if *reason == Term::atom("badarg")),
            "{:?}",
            r[0]
        );
        assert_eq!(r[1], Err(ErpcError::Exit(Term::atom("bye"))));
        assert_eq!(r[2], Err(ErpcError::Throw(Term::from(7i64))));
        assert!(
            matches!(&r[3], Err(ErpcError::Error { reason, .. }) if *reason == Term::atom("undef")),
            "{:?}",
            r[3]
        );
        assert_eq!(r[4], Err(ErpcError::Timeout));
        assert_eq!(r[5], Err(ErpcError::Noconnection));
        assert!(matches!(wrong, Err(ErpcError::Decode(_))), "{wrong:?}");
        assert_eq!(ok, Ok(1));
    }
);

rt_test!(erpc_cast_to_erlang_runs_the_function, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let mut e = erlang::Node::builder("erl")
        .setup(
            "register(waiter, spawn(fun() -> \
                 receive {hello, X} -> receive {get, P} -> P ! {value, X} end end end))",
        )
        .start();
    node.erpc_cast(
        e.name(),
        "erlang",
        "send",
        &(Term::atom("waiter"), (Term::atom("hello"), 5i64)),
    )
    .unwrap();
    assert_eq!(
        e.eval_ok("waiter ! {get, self()}, receive {value, V} -> V after 10000 -> timeout end"),
        "5"
    );
});

// Throughput: `erpc:call` from Erlang into otter and into Erlang, interleaved.

/// Compiles and loads `Mod` from the forms `srcs` on an `erl` node (setup text).
fn compile_on_erl(module: &str, exports: &str, srcs: &[&str]) -> String {
    let srcs = srcs
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Forms = [begin {{ok, Ts, _}} = erl_scan:string(S), {{ok, F}} = erl_parse:parse_form(Ts), F end \
                  || S <- [{srcs}]], \
         {{ok, {module}, Bin}} = compile:forms([{{attribute, 1, module, {module}}}, \
                                               {{attribute, 1, export, {exports}}} | Forms]), \
         {{module, {module}}} = code:load_binary({module}, \"{module}.erl\", Bin)"
    )
}

/// `erpc:call(Target, benchrpc, add, [1, 2])` from 10 Erlang callers for a while, in
/// rounds that alternate between an otter node and an Erlang node serving the same
/// function; prints each round's calls/s and the medians. Run it alone, in release:
/// `cargo test --release -p otter-otp --all-features --test dist_erlang_erpc -- --ignored --nocapture`.
/// `OTTER_ERPC_BENCH_THREADS` (default 2) sets the otter node's workers;
/// `OTTER_ERPC_BENCH_ERL_ARGS` (e.g. `+S 1`) the Erlang target's.
#[test]
#[ignore]
fn erpc_call_throughput_from_erlang_into_otter_and_into_erlang_interleaved() {
    const CALLERS: usize = 10;
    const ROUNDS: usize = 6;
    const ROUND_MS: u64 = 2000;
    let threads = std::env::var("OTTER_ERPC_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let rt = otter::Runtime::builder().threads(threads).build().unwrap();
    let node = otter_node::start(&rt);
    node.register_rpc("benchrpc", "add", |(a, b): (i64, i64)| Ok(a + b));
    let mut target = erlang::Node::builder("erltarget").setup(&compile_on_erl(
        "benchrpc",
        "[{add, 2}]",
        &["add(A, B) -> A + B."],
    ));
    if let Ok(args) = std::env::var("OTTER_ERPC_BENCH_ERL_ARGS") {
        for a in args.split_whitespace() {
            target = target.arg(a);
        }
    }
    let target = target.start();
    let mut caller = erlang::Node::builder("erlcaller")
        .setup(&compile_on_erl(
            "benchcaller",
            "[{run, 3}]",
            &[
                "run(T, C, Ms) -> Self = self(), End = erlang:monotonic_time(millisecond) + Ms, \
                 [spawn_link(fun() -> Self ! {done, loop(T, End, 0)} end) || _ <- lists:seq(1, C)], \
                 lists:sum([receive {done, N} -> N end || _ <- lists:seq(1, C)]).",
                "loop(T, End, N) -> case erlang:monotonic_time(millisecond) < End of \
                 true -> 3 = erpc:call(T, benchrpc, add, [1, 2]), loop(T, End, N + 1); \
                 false -> N end.",
            ],
        ))
        .start();
    let targets = [
        ("otter", node.name().to_string()),
        ("erlang", target.name().to_string()),
    ];
    let run = |caller: &mut erlang::Node, t: &str, ms: u64| -> f64 {
        let n: f64 = caller
            .eval_timeout(
                &format!("benchcaller:run('{t}', {CALLERS}, {ms})"),
                Duration::from_millis(ms) + LONG,
            )
            .expect("the round ends")
            .expect("the round runs")
            .parse()
            .unwrap();
        n * 1000.0 / ms as f64
    };
    for (_, t) in &targets {
        run(&mut caller, t, 500); // warm-up: connections, code
    }
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        // Alternate which goes first, so neither always follows the other.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let r = run(&mut caller, &targets[i].1, ROUND_MS);
            println!("round {round} {:>6}: {r:>9.0} calls/s", targets[i].0);
            rates[i].push(r);
        }
    }
    for (i, (name, _)) in targets.iter().enumerate() {
        let mut v = rates[i].clone();
        v.sort_by(f64::total_cmp);
        println!(
            "{name:>6}: median {:.0} calls/s, min {:.0}, max {:.0} ({CALLERS} callers, {ROUNDS} rounds of {ROUND_MS} ms, otter threads {threads})",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        );
        assert!(v[0] > 0.0);
    }
}
