//! OTP's `supervisor:which_children/1` and `count_children/1` from a real `erl` node
//! against an otter supervisor registered for other nodes (`src/dist/remote_supervisor.rs`):
//! OTP's shapes, a nested supervisor walked through its pid, a child killed from Erlang
//! and restarted by otter, a supervisor registered by name reached again after its
//! restart, and bad input (a name nobody holds, a request otter does not
//! serve) answered as an Erlang caller expects, the node going on.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use otter::dist::Node;
use otter::supervisor::{self, ChildSpec, Strategy, Supervisor, SupervisorRef, SupervisorSpec};
use otter::{Context, ProcessId, Runtime};

fn idle(id: &str) -> ChildSpec {
    ChildSpec::process(id, || |mut c: Context<()>| async move { c.recv().await })
}

/// `top`: a worker `w1`, a supervisor `sub` (with a worker `inner`), and a worker
/// `stopped` that has been terminated; registered as `top` for other nodes.
fn start_tree(rt: &Runtime, node: &Node) -> SupervisorRef {
    let node = node.clone();
    // Started outside the root process (it would take the tree down with it when it
    // returns): a process that starts it and then waits for ever.
    let (tx, rx) = std::sync::mpsc::channel();
    rt.handle().spawn(move |mut cx: Context<()>| async move {
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(100, std::time::Duration::from_secs(1))
            .child(idle("w1"))
            .child(ChildSpec::supervisor("sub", || {
                SupervisorSpec::new(Strategy::OneForOne).child(idle("inner"))
            }))
            .child(idle("stopped"));
        let top = supervisor::start_link(&cx, spec).await.unwrap();
        top.terminate_child("stopped").await.unwrap();
        node.register_supervisor("top", top);
        tx.send(top).unwrap();
        cx.recv().await;
    });
    rx.recv().unwrap()
}

/// An otter node serving [`start_tree`]'s `top`, and an Erlang node to ask it.
fn tree_and_erlang(rt: &Runtime) -> (Node, SupervisorRef, erlang::Node) {
    let node = otter_node::start(rt);
    let top = start_tree(rt, &node);
    (node, top, erlang::Node::builder("erl").setup("ok").start())
}

/// The pid of `top`'s first child (`w1`), as otter's own `which_children` gives it.
fn first_child(rt: &Runtime, top: SupervisorRef) -> ProcessId {
    rt.block_on(
        move |_: Context<()>| async move { top.which_children().await.unwrap()[0].pid.unwrap() },
    )
    .unwrap()
}

rt_test!(
    which_children_and_count_children_from_erlang_give_otps_shapes,
    |rt: &Runtime| {
        let (node, top, mut e) = tree_and_erlang(rt);
        let s = otter_node::at("top", &node);
        assert_eq!(
            e.eval_ok(&format!(
                "[{{w1, P1, worker, []}}, {{sub, P2, supervisor, []}}, {{stopped, undefined, worker, []}}] = \
                 supervisor:which_children({s}), \
                 {{is_pid(P1), node(P1), is_pid(P2), node(P2)}}"
            )),
            format!("{{true,{0},true,{0}}}", node.name())
        );
        assert_eq!(
            e.eval_ok(&format!("supervisor:count_children({s})")),
            "[{specs,3},{active,2},{supervisors,1},{workers,2}]"
        );
        // `sys` too: the state is the supervisor's `Debug` text, which lists the children.
        assert_eq!(
            e.eval_ok(&format!(
                "binary:match(sys:get_state({s}), <<\"w1\">>) =/= nomatch"
            )),
            "true"
        );
        // The nested supervisor answers through the pid `which_children` gave.
        assert_eq!(
            e.eval_ok(&format!(
                "{{sub, P, supervisor, []}} = lists:keyfind(sub, 1, supervisor:which_children({s})), \
                 [{{inner, I, worker, []}}] = supervisor:which_children(P), \
                 {{is_pid(I), supervisor:count_children(P)}}"
            )),
            "{true,[{specs,1},{active,1},{supervisors,0},{workers,1}]}"
        );
        // The pids are the children's: otter's own `which_children` agrees (`<0.I.G>`
        // in otter is `<N.I.G>` on the Erlang node).
        let w1 = first_child(rt, top);
        let seen = e.eval_ok(&format!(
            "{{w1, P, worker, []}} = lists:keyfind(w1, 1, supervisor:which_children({s})), \
             pid_to_list(P)"
        ));
        let tail = |p: &str| {
            p.trim_matches('"')
                .split_once('.')
                .map(|(_, t)| t.to_string())
        };
        assert_eq!(tail(&seen), tail(&w1.to_string()), "{seen} against {w1}");
        // Erlang kills a child through its pid; otter's supervisor restarts it, and
        // `which_children` then gives the new pid.
        assert_eq!(
            e.eval_ok(&format!(
                "{{w1, P1, worker, []}} = lists:keyfind(w1, 1, supervisor:which_children({s})), \
                 R = monitor(process, P1), exit(P1, kill), \
                 receive {{'DOWN', R, process, P1, Why}} -> ok end, \
                 W = fun W(0) -> gave_up; \
                         W(N) -> case lists:keyfind(w1, 1, supervisor:which_children({s})) of \
                                   {{w1, P, worker, []}} when is_pid(P), P =/= P1 -> restarted; \
                                   _ -> W(N - 1) end end, \
                 {{Why, W(100000)}}"
            )),
            "{killed,restarted}"
        );
        let w1_now = first_child(rt, top);
        assert_ne!(w1, w1_now);
        assert!(!w1.is_alive());
    }
);

rt_test!(
    bad_supervisor_requests_from_erlang_get_erlangs_answers_and_the_supervisor_goes_on,
    |rt: &Runtime| {
        let (node, top, mut e) = tree_and_erlang(rt);
        let s = otter_node::at("top", &node);
        // A name no supervisor holds: `noproc`, as `gen_server:call` exits for it.
        assert_eq!(
            e.eval_ok(&format!(
                "try supervisor:which_children({{nosuch, '{}'}}) \
                 catch exit:{{noproc, {{gen_server, call, [_, which_children, infinity]}}}} -> noproc end",
                node.name()
            )),
            "noproc"
        );
        assert_eq!(
            e.eval_ok(&format!(
                "try supervisor:count_children({{nosuch, '{}'}}) \
                 catch exit:{{noproc, {{gen_server, call, _}}}} -> noproc end",
                node.name()
            )),
            "noproc"
        );
        // A request otter does not serve: `{error, {bad_call, Request}}`.
        assert_eq!(
            e.eval_ok(&format!(
                "supervisor:start_child({s}, #{{id => x, start => {{m, f, []}}}})"
            )),
            "{error,{bad_call,{start_child,#{id => x,start => {m,f,[]}}}}}"
        );
        assert_eq!(
            e.eval_ok(&format!("supervisor:terminate_child({s}, w1)")),
            "{error,{bad_call,{terminate_child,w1}}}"
        );
        // A cast and a plain message are dropped; the supervisor still serves.
        assert_eq!(
            e.eval_ok(&format!("gen_server:cast({s}, hello), {s} ! hello, ok")),
            "ok"
        );
        assert_eq!(
            e.eval_ok(&format!("supervisor:count_children({s})")),
            "[{specs,3},{active,2},{supervisors,1},{workers,2}]"
        );
        let alive = rt
            .block_on(move |_: Context<()>| async move { top.id().is_alive() })
            .unwrap();
        assert!(alive);
    }
);

rt_test!(
    a_supervisor_registered_by_name_answers_again_after_its_restart,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        node.register_server_name::<Supervisor>("conns");
        let (tx, rx) = std::sync::mpsc::channel();
        rt.handle().spawn(move |mut cx: Context<()>| async move {
            let sub = ChildSpec::named_supervisor("sub", "conns", || {
                SupervisorSpec::new(Strategy::OneForOne).child(idle("conn"))
            });
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .intensity(100, std::time::Duration::from_secs(1))
                .child(sub);
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            tx.send(top).unwrap();
            cx.recv().await;
        });
        let top = rx.recv().unwrap();
        let mut e = erlang::Node::builder("erl").setup("ok").start();
        let s = otter_node::at("conns", &node);
        // Erlang kills the supervisor that holds the name; otter's `top` restarts it
        // under the same name, and calls by name reach the new one (between the two, a
        // call exits `noproc`, which the loop passes over).
        assert_eq!(
            e.eval_ok(&format!(
                "{{status, P1, _, _}} = sys:get_status({s}), \
                 [{{conn, C1, worker, []}}] = supervisor:which_children({s}), \
                 R = monitor(process, P1), exit(P1, kill), \
                 receive {{'DOWN', R, process, P1, Why}} -> ok end, \
                 W = fun W(0) -> gave_up; \
                         W(N) -> case catch sys:get_status({s}) of \
                                   {{status, P, _, _}} when P =/= P1 -> \
                                     {{restarted, supervisor:which_children({s})}}; \
                                   _ -> W(N - 1) end end, \
                 {{restarted, [{{conn, C2, worker, []}}]}} = W(100000), \
                 {{Why, is_pid(C2), C2 =/= C1}}"
            )),
            "{killed,true,true}"
        );
        // otter's `top` sees the same: one restart of `sub`, under the name.
        let restarted = rt
            .block_on(move |cx: Context<()>| async move {
                let sub = top.which_children().await.unwrap()[0].supervisor;
                sub.is_some() && sub == supervisor::whereis(&cx, "conns")
            })
            .unwrap();
        assert!(restarted);
    }
);
