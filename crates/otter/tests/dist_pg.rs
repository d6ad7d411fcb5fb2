//! `pg`, Erlang's process groups (`src/dist/pg.rs`), on one otter node and between
//! otter and real `erl` nodes in one scope.
//!
//! The cases named after OTP's `lib/kernel/test/pg_SUITE.erl` (OTP 25+, Apache-2.0,
//! Copyright WhatsApp Inc. and its affiliates) port that suite's case of the same name,
//! or combine several (the test's name lists them): `pg`, `single`,
//! `leave_exit_race`, `two` (with `initial` and `process_owner_check`), `nolocal`,
//! `double`, `empty_group_by_remote_leave`, `group_leave`, `overlay_missing` (in the
//! bad-input case), `netsplit`, `scope_restart`, `forced_sync`, `thundering_herd`.
//! Adaptations: the "local" node of a cluster case is the otter node and the peer an
//! `erl` node; `sync(Scope)` (a `sys:log` round trip through a scope process) becomes
//! a bounded wait for the membership the case asserts, since otter's scope has no
//! `sys` interface; `sys:get_state` checks of otter's scope are left out. `errors`,
//! `dyn_distribution`, `trisplit`, `foursplit`, `exchange`, `missing_scope_join` and
//! `disconnected_start` exercise Erlang's gen_server callbacks, its `nodeup`
//! handling, or partitions among Erlang nodes only, and are not ported.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use otter::dist::etf::{Atom, Term};
use otter::dist::pg::{Event, Member, PgError, Scope, Update};
use otter::dist::{BadTerm, Node};
use otter::{Context, Pid, Runtime};
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(10);

/// A process that waits until told to stop (`pg_SUITE`'s `forever()`).
fn forever(rt: &Runtime) -> Pid<Term> {
    rt.handle().spawn(|mut cx: Context<Term>| async move {
        loop {
            if cx.recv().await == Term::atom("stop") {
                return;
            }
        }
    })
}

fn atom(s: &str) -> Atom {
    Atom::new(s)
}

/// A subscriber forwarding its updates to the test thread.
fn subscriber(rt: &Runtime) -> (Pid<Update>, Receiver<Update>) {
    let (tx, rx) = channel();
    let pid = rt
        .handle()
        .spawn(
            move |mut cx: Context<Update>| async move { while tx.send(cx.recv().await).is_ok() {} },
        );
    (pid, rx)
}

fn ids(ms: &[Pid<Term>]) -> Vec<otter::ProcessId> {
    let mut v: Vec<_> = ms.iter().map(|p| p.id()).collect();
    v.sort();
    v
}

// ===== one node =====

rt_test!(pg, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let scope = node.pg_scope("pg").unwrap();
    let me = forever(rt);
    let g = atom("pg");
    scope.join(&g, me).unwrap();
    assert_eq!(scope.local_members::<_, Term>(&g), vec![me]);
    assert_eq!(scope.which_groups(), vec![Term::atom("pg")]);
    assert_eq!(scope.which_local_groups(), vec![Term::atom("pg")]);
    assert_eq!(scope.leave(&g, me), Ok(true));
    assert!(scope.members::<_, Term>(&g).is_empty());
    assert!(scope.which_groups().is_empty());
    assert!(scope.which_local_groups().is_empty());
    // The same scope comes back by name.
    assert_eq!(node.pg_scope("pg").unwrap().id(), scope.id());
});

rt_test!(single, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let scope = node.pg_scope("single").unwrap();
    let me = forever(rt);
    let g = atom("single");
    scope.join(&g, me).unwrap();
    scope.join_many(&g, &[me, me]).unwrap();
    assert_eq!(scope.local_members::<_, Term>(&g), vec![me, me, me]);
    assert_eq!(scope.members::<_, Term>(&g), vec![me, me, me]);
    assert_eq!(scope.leave(&atom("$missing$"), me), Ok(false));
    scope.join_many::<_, Term>(&atom("empty"), &[]).unwrap();
    assert!(!scope.which_groups().contains(&Term::atom("empty")));
    assert_eq!(scope.leave_many(&g, &[me, me]), Ok(true));
    assert_eq!(scope.leave(&g, me), Ok(true));
    assert!(scope.which_groups().is_empty());
    assert!(scope.members::<_, Term>(&g).is_empty());
    // double: a member's exit removes it, the other stays.
    let (watch, updates) = subscriber(rt);
    let (_, now) = scope.monitor(&g, watch).unwrap();
    assert!(now.is_empty());
    scope.join(&g, me).unwrap();
    let other = forever(rt);
    scope.join(&g, other).unwrap();
    assert_eq!(ids(&scope.members::<_, Term>(&g)), ids(&[me, other]));
    other.send(Term::atom("stop"));
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(updates.recv_timeout(WAIT).expect("an update"));
    }
    assert_eq!(seen[2].event, Event::Leave);
    assert_eq!(seen[2].members[0].id(), other.id());
    assert_eq!(scope.local_members::<_, Term>(&g), vec![me]);
    assert_eq!(scope.leave(&g, me), Ok(true));
});

rt_test!(leave_exit_race, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let scope = node.pg_scope("leave_exit_race").unwrap();
    for _ in 0..100 {
        let pid = rt.handle().spawn(|_: Context<Term>| async {});
        scope.join(&atom("test"), pid).unwrap();
        let _ = scope.leave(&atom("test"), pid).unwrap();
    }
    support::eventually("every member gone", WAIT, || {
        scope.which_groups().is_empty()
    });
});

rt_test!(
    a_member_joined_to_several_groups_leaves_each_when_it_exits,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let scope = node.pg_scope("pg").unwrap();
        let (watch, updates) = subscriber(rt);
        let (_, now) = scope.monitor_scope(watch);
        assert!(now.is_empty());
        let p = forever(rt);
        scope.join(&atom("a"), p).unwrap();
        scope.join_many(&atom("b"), &[p, p]).unwrap();
        p.send(Term::atom("stop"));
        let mut left = Vec::new();
        while left.len() < 2 {
            let u = updates.recv_timeout(WAIT).expect("an update");
            if u.event == Event::Leave {
                left.push((u.group, u.members.len()));
            }
        }
        // b was joined twice: its two listings go, one leave each, the group with them.
        support::eventually("b empty", WAIT, || scope.which_groups().is_empty());
        assert!(left.contains(&(Term::atom("a"), 1)));
        assert!(left.contains(&(Term::atom("b"), 1)));
    }
);

/// The message type of the other members of a mixed group.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Job {
    Run(u32),
    #[serde(skip)]
    Bad,
}

impl From<BadTerm> for Job {
    fn from(_: BadTerm) -> Job {
        Job::Bad
    }
}

rt_test!(
    a_group_of_mixed_types_gives_each_type_its_local_members,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let scope = node.pg_scope("pg").unwrap();
        let t = forever(rt);
        let j = rt.handle().spawn(|mut cx: Context<Job>| async move {
            let _ = cx.recv().await;
        });
        let g = (atom("mixed"), 1);
        scope.join(&g, t).unwrap();
        scope.join(&g, j).unwrap();
        assert_eq!(scope.members::<_, Term>(&g), vec![t]);
        assert_eq!(scope.members::<_, Job>(&g), vec![j]);
        let all: Vec<Member> = scope.all_members(&g);
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(Member::is_local));
        assert_eq!(
            scope.which_groups(),
            vec![Term::tuple(vec![Term::atom("mixed"), Term::Int(1)])]
        );
    }
);

rt_test!(
    a_scope_name_held_by_another_process_is_refused,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        node.register("taken", forever(rt));
        assert!(matches!(node.pg_scope("taken"), Err(PgError::NameTaken(_))));
        let scope = node.pg_scope("free").unwrap();
        scope.stop();
        assert_eq!(scope.join(&atom("g"), forever(rt)), Err(PgError::Stopped));
        let again = node.pg_scope("free").unwrap();
        assert_ne!(again.id(), scope.id());
    }
);

/// A subscriber message type whose conversion panics.
struct Fussy;

impl From<Update> for Fussy {
    fn from(_: Update) -> Fussy {
        panic!("no updates here")
    }
}

rt_test!(
    a_subscriber_whose_conversion_panics_is_dropped_and_the_scope_serves_on,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let scope = node.pg_scope("pg").unwrap();
        let fussy = rt.handle().spawn(|mut cx: Context<Fussy>| async move {
            let _ = cx.recv().await;
        });
        let (bad, _) = scope.monitor_scope(fussy);
        let (watch, updates) = subscriber(rt);
        scope.monitor_scope(watch);
        let p = forever(rt);
        scope.join(&atom("g"), p).unwrap();
        assert_eq!(updates.recv_timeout(WAIT).unwrap().event, Event::Join);
        assert!(!scope.demonitor(bad), "the panicking subscriber is gone");
        assert_eq!(scope.leave(&atom("g"), p), Ok(true));
        assert_eq!(updates.recv_timeout(WAIT).unwrap().event, Event::Leave);
    }
);

/// Joins and leaves on one node, one at a time, for about a second: the rate is
/// printed (`--nocapture`), and must reach 10,000 a second.
#[test]
fn ten_thousand_joins_and_leaves_a_second_on_one_node() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let node = otter_node::start(&rt);
    let scope = node.pg_scope("pg").unwrap();
    let pids: Vec<Pid<Term>> = (0..100).map(|_| forever(&rt)).collect();
    let groups: Vec<(Atom, u32)> = (0..100).map(|i| (atom("g"), i)).collect();
    let t0 = Instant::now();
    let mut ops = 0u64;
    while t0.elapsed() < Duration::from_secs(1) {
        for (i, p) in pids.iter().enumerate() {
            scope.join(&groups[i % groups.len()], *p).unwrap();
        }
        for (i, p) in pids.iter().enumerate() {
            assert_eq!(scope.leave(&groups[i % groups.len()], *p), Ok(true));
        }
        ops += 2 * pids.len() as u64;
    }
    let rate = ops as f64 / t0.elapsed().as_secs_f64();
    println!("pg: {rate:.0} joins and leaves a second on one otter node");
    assert!(rate >= 10_000.0, "{rate:.0} joins and leaves a second");
}

// ===== otter and Erlang =====

/// An `erl` node running the scope `pg`, with a registered process `member` to join.
fn erl_pg() -> erlang::Node {
    erlang::Node::builder("erl")
        .setup(
            "{ok, _} = pg:start(pg), \
             register(member, spawn(fun() -> receive stop -> ok end end))",
        )
        .start()
}

/// Evaluates `expr` on `e` until it prints `expected`; fails after [`WAIT`].
fn erl_until(e: &mut erlang::Node, expr: &str, expected: &str) {
    e.eval_until(expr, expected, WAIT);
}

/// The nodes of `pg:get_members(pg, Group)` on `e`, sorted, as Erlang prints them.
fn erl_member_nodes(group: &str) -> String {
    format!("lists:sort([node(P) || P <- pg:get_members(pg, {group})])")
}

/// Connects `node` to `other` and waits for the handshake.
fn connect(rt: &Runtime, node: &Node, other: &str) {
    let (n, o) = (node.clone(), other.to_string());
    rt.block_on(move |_: Context<()>| async move { n.connect(&o).await })
        .expect("the connecting process runs")
        .expect("the nodes connect");
}

/// An otter node with the scope `pg`, connected to a new [`erl_pg`] node.
fn pg_with_erlang(rt: &Runtime) -> (Node, Scope, erlang::Node) {
    let node = otter_node::start(rt);
    let scope = node.pg_scope("pg").unwrap();
    let e = erl_pg();
    connect(rt, &node, e.name());
    (node, scope, e)
}

/// The remote members of `group` on `scope`.
fn remote_count(scope: &Scope, group: &impl Serialize) -> usize {
    scope
        .all_members(group)
        .iter()
        .filter(|m| !m.is_local())
        .count()
}

fn quoted(node: &Node) -> String {
    format!("[{}]", node.name())
}

rt_test!(two, |rt: &Runtime| {
    let node = otter_node::start(rt);
    let scope = node.pg_scope("pg").unwrap();
    let p = forever(rt);
    // `initial`: joined before the nodes meet, told in the first sync.
    scope.join(&atom("two"), p).unwrap();
    let mut e = erl_pg();
    connect(rt, &node, e.name());
    erl_until(&mut e, &erl_member_nodes("two"), &quoted(&node));
    assert_eq!(e.eval_ok("pg:get_local_members(pg, two)"), "[]");
    // A member's exit removes it on the peer.
    p.send(Term::atom("stop"));
    erl_until(&mut e, &erl_member_nodes("two"), "[]");
    // Erlang's joins reach otter.
    e.eval_ok("register(member2, spawn(fun() -> receive stop -> ok end end))");
    assert_eq!(e.eval_ok("pg:join(pg, two, whereis(member))"), "ok");
    assert_eq!(e.eval_ok("pg:join(pg, two, whereis(member2))"), "ok");
    support::eventually("two Erlang members on otter", WAIT, || {
        remote_count(&scope, &atom("two")) == 2
    });
    assert!(scope.local_members::<_, Term>(&atom("two")).is_empty());
    assert_eq!(scope.members::<_, Term>(&atom("two")).len(), 2);
    // A leave, and an Erlang member's exit.
    assert_eq!(e.eval_ok("pg:leave(pg, two, whereis(member))"), "ok");
    support::eventually("one left", WAIT, || remote_count(&scope, &atom("two")) == 1);
    e.eval_ok("member2 ! stop");
    support::eventually("the other exited", WAIT, || scope.which_groups().is_empty());
    // A pid of another node cannot join here (`process_owner_check`).
    assert_eq!(e.eval_ok("pg:join(pg, owner, whereis(member))"), "ok");
    support::eventually("owner", WAIT, || remote_count(&scope, &atom("owner")) == 1);
    let remote = scope.members::<_, Term>(&atom("owner"))[0];
    assert_eq!(
        scope.join(&atom("owner"), remote),
        Err(PgError::NotLocal(remote.id()))
    );
    assert_eq!(
        scope.join_many(&atom("owner"), &[forever(rt), remote]),
        Err(PgError::NotLocal(remote.id()))
    );
    assert_eq!(scope.members::<_, Term>(&atom("owner")), vec![remote]);
});

#[test]
fn nolocal_double_and_empty_group_by_remote_leave() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let (node, scope, mut e) = pg_with_erlang(&rt);
    // nolocal: an Erlang process joined twice is no local member here.
    assert_eq!(e.eval_ok("pg:join(pg, nolocal, whereis(member))"), "ok");
    assert_eq!(e.eval_ok("pg:join(pg, nolocal, whereis(member))"), "ok");
    support::eventually("joined twice", WAIT, || {
        remote_count(&scope, &atom("nolocal")) == 2
    });
    assert!(scope.local_members::<_, Term>(&atom("nolocal")).is_empty());
    // double: an otter process joined twice is listed twice there.
    let p = forever(&rt);
    scope.join(&atom("double"), p).unwrap();
    scope.join_many(&atom("double"), &[p]).unwrap();
    let twice = format!("[{0},{0}]", node.name());
    erl_until(&mut e, &erl_member_nodes("double"), &twice);
    // empty_group_by_remote_leave: the group goes with its last remote member.
    assert_eq!(
        e.eval_ok("pg:leave(pg, nolocal, [whereis(member), whereis(member)])"),
        "ok"
    );
    support::eventually("nolocal gone", WAIT, || {
        !scope.which_groups().contains(&Term::atom("nolocal"))
    });
    e.eval_ok("register(member2, spawn(fun() -> receive stop -> ok end end))");
    assert_eq!(
        e.eval_ok("pg:join(pg, empty, [whereis(member), whereis(member2)])"),
        "ok"
    );
    support::eventually("two joined", WAIT, || {
        remote_count(&scope, &atom("empty")) == 2
    });
    assert_eq!(
        e.eval_ok("pg:leave(pg, empty, [whereis(member2), whereis(member)])"),
        "ok"
    );
    support::eventually("empty gone", WAIT, || {
        !scope.which_groups().contains(&Term::atom("empty"))
    });
}

/// `group_leave`, then the peer killed (`kill -9`): its members go with its
/// connection, long before `net_ticktime`.
#[test]
fn group_leave_and_a_killed_node_takes_its_members_with_it() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let (_node, scope, mut e) = pg_with_erlang(&rt);
    assert_eq!(
        e.eval_ok("pg:join(pg, two, lists:duplicate(16, whereis(member)))"),
        "ok"
    );
    assert_eq!(
        e.eval_ok("pg:leave(pg, two, lists:duplicate(4, whereis(member)))"),
        "ok"
    );
    support::eventually("12 listings", WAIT, || {
        remote_count(&scope, &atom("two")) == 12
    });
    let t0 = Instant::now();
    e.kill();
    support::eventually("the killed node's members gone", WAIT, || {
        scope.which_groups().is_empty()
    });
    println!(
        "pg: a killed node's members gone on otter after {:?}",
        t0.elapsed()
    );
}

rt_test!(monitor_notices_both_ways, |rt: &Runtime| {
    let (node, scope, mut e) = pg_with_erlang(rt);
    let (watch, updates) = subscriber(rt);
    let (sub, now) = scope.monitor(&atom("mon"), watch).unwrap();
    assert!(now.is_empty());
    let (all_watch, all_updates) = subscriber(rt);
    let (all_sub, _) = scope.monitor_scope(all_watch);
    // Erlang's join and leave, heard on otter.
    assert_eq!(e.eval_ok("pg:join(pg, mon, whereis(member))"), "ok");
    let u = updates.recv_timeout(WAIT).expect("a join");
    assert_eq!((u.subscription, u.event), (sub, Event::Join));
    assert_eq!(u.group, Term::atom("mon"));
    assert!(!u.members[0].is_local());
    assert_eq!(
        all_updates.recv_timeout(WAIT).unwrap().subscription,
        all_sub
    );
    assert_eq!(e.eval_ok("pg:leave(pg, mon, whereis(member))"), "ok");
    let u = updates.recv_timeout(WAIT).expect("a leave");
    assert_eq!(u.event, Event::Leave);
    assert!(scope.demonitor(sub));
    assert!(!scope.demonitor(sub));
    // otter's join and leave, heard by Erlang's `pg:monitor/2`.
    assert_eq!(
        e.eval_ok("{Ref, []} = pg:monitor(pg, omon), put(mref, Ref), ok"),
        "ok"
    );
    let p = forever(rt);
    scope.join(&atom("omon"), p).unwrap();
    assert_eq!(
        e.eval_ok(
            "Ref = get(mref), receive {Ref, join, omon, [P]} -> node(P) after 5000 -> timeout end"
        ),
        node.name()
    );
    assert_eq!(scope.leave(&atom("omon"), p), Ok(true));
    assert_eq!(
        e.eval_ok(
            "Ref = get(mref), receive {Ref, leave, omon, [P]} -> node(P) after 5000 -> timeout end"
        ),
        node.name()
    );
});

rt_test!(
    a_forged_member_or_a_message_from_outside_the_scope_is_refused_and_the_scope_serves_on,
    |rt: &Runtime| {
        let (node, scope, mut e) = pg_with_erlang(rt);
        let p = forever(rt);
        scope.join(&atom("own"), p).unwrap();
        erl_until(&mut e, &erl_member_nodes("own"), &quoted(&node));
        let to = otter_node::at("pg", &node);
        // A known peer (Erlang's scope) names otter's own process as its member.
        e.eval_ok(&format!(
            "[O] = pg:get_members(pg, own), {to} ! {{join, whereis(pg), forged, O}}, \
             {to} ! {{'$gen_cast', {{sync, whereis(pg), [{{forged, [O]}}]}}}}"
        ));
        // A message that claims to come from otter's own scope.
        e.eval_ok(&format!(
            "[O] = pg:get_members(pg, own), {to} ! {{join, O, forged, whereis(member)}}"
        ));
        // A join and a leave from a process that is no scope this one knows
        // (`overlay_missing`), and messages that are not pg's.
        e.eval_ok(&format!(
            "{to} ! {{join, self(), outside, self()}}, \
             {to} ! {{leave, self(), self(), [own]}}, \
             {to} ! {{join, whereis(pg), outside}}, {to} ! garbage, \
             {to} ! {{join, whereis(pg), empty, []}}, \
             {to} ! {{'$gen_call', {{self(), make_ref()}}, which_groups}}"
        ));
        // The scope serves on: Erlang's next join arrives, otter's next join leaves.
        assert_eq!(e.eval_ok("pg:join(pg, after_bad, whereis(member))"), "ok");
        support::eventually("after_bad", WAIT, || {
            remote_count(&scope, &atom("after_bad")) == 1
        });
        let mut groups: Vec<String> = scope.which_groups().iter().map(Term::to_string).collect();
        groups.sort();
        assert_eq!(groups, ["after_bad", "own"]);
        assert_eq!(scope.local_members::<_, Term>(&atom("own")), vec![p]);
        scope.join(&atom("after_bad"), forever(rt)).unwrap();
        erl_until(&mut e, "length(pg:get_members(pg, after_bad))", "2");
        // `overlay_missing`: once Erlang's scope is gone, its members go, and a join in
        // its name is refused.
        e.eval_ok("put(oldpg, whereis(pg)), gen_server:stop(pg)");
        support::eventually("Erlang's members gone", WAIT, || {
            remote_count(&scope, &atom("after_bad")) == 0
        });
        e.eval_ok(&format!(
            "{to} ! {{join, get(oldpg), group, whereis(member)}}, \
             {to} ! {{leave, get(oldpg), whereis(member), [after_bad]}}"
        ));
        // A scope started again is discovered again (`scope_restart`, the other way).
        e.eval_ok("{ok, _} = pg:start(pg), ok = pg:join(pg, back, whereis(member))");
        // Erlang's new scope discovers `nodes()` only, which leaves out a hidden node:
        // the next connection makes them meet.
        assert!(node.disconnect(e.name()));
        let gone = e.name().to_string();
        support::eventually("disconnected", WAIT, || !node.nodes().contains(&gone));
        connect(rt, &node, e.name());
        support::eventually("back", WAIT, || remote_count(&scope, &atom("back")) == 1);
        assert!(!scope.which_groups().contains(&Term::atom("group")));
        assert_eq!(scope.all_members(&atom("after_bad")).len(), 1);
    }
);

#[test]
fn netsplit_and_scope_restart() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let (node, scope, mut e) = pg_with_erlang(&rt);
    let p = forever(&rt);
    scope.join(&atom("invisible"), p).unwrap();
    assert_eq!(e.eval_ok("pg:join(pg, invisible, whereis(member))"), "ok");
    support::eventually("joined", WAIT, || {
        remote_count(&scope, &atom("invisible")) == 1
    });
    erl_until(&mut e, "length(pg:get_members(pg, invisible))", "2");
    // Partition: each side forgets the other's members.
    assert!(node.disconnect(e.name()));
    support::eventually("Erlang's gone", WAIT, || {
        remote_count(&scope, &atom("invisible")) == 0
    });
    erl_until(&mut e, "length(pg:get_members(pg, invisible))", "1");
    // Joins and leaves in the partition, on both sides.
    assert_eq!(e.eval_ok("pg:leave(pg, invisible, whereis(member))"), "ok");
    assert_eq!(e.eval_ok("pg:join(pg, visible, whereis(member))"), "ok");
    let q = forever(&rt);
    scope.join(&atom("visible"), q).unwrap();
    // Healed: each side sees the other's members as they are now.
    connect(&rt, &node, e.name());
    support::eventually("visible", WAIT, || {
        remote_count(&scope, &atom("visible")) == 1
    });
    erl_until(&mut e, "length(pg:get_members(pg, visible))", "2");
    erl_until(&mut e, &erl_member_nodes("invisible"), &quoted(&node));
    assert_eq!(remote_count(&scope, &atom("invisible")), 0);
    // scope_restart: otter's scope stops (Erlang forgets its members) and starts again
    // without its local members, but with the peers'.
    scope.stop();
    let erl_only = format!("[{}]", e.name());
    erl_until(&mut e, &erl_member_nodes("visible"), &erl_only);
    let again = node.pg_scope("pg").unwrap();
    support::eventually("Erlang's members again", WAIT, || {
        remote_count(&again, &atom("visible")) == 1
    });
    assert!(again.local_members::<_, Term>(&atom("visible")).is_empty());
    again.join(&atom("visible"), q).unwrap();
    erl_until(&mut e, "length(pg:get_members(pg, visible))", "2");
}

// ===== a cluster of 3 Erlang and 2 otter nodes =====

fn micros_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as i64
}

/// An `erl` node for the cluster: `erl_pg`'s, and a process that records in the
/// table `lat` when it hears of each `{lat, I}` group's first join.
fn erl_recording() -> erlang::Node {
    erlang::Node::builder("erl")
        .setup(
            "{ok, _} = pg:start(pg), \
             register(member, spawn(fun() -> receive stop -> ok end end)), \
             Self = self(), \
             spawn(fun() -> \
                 ets:new(lat, [public, named_table]), \
                 {_, _} = pg:monitor_scope(pg), \
                 Self ! recording, \
                 (fun L() -> receive \
                     {_, join, {lat, I}, _} -> \
                         ets:insert_new(lat, {I, erlang:system_time(microsecond)}), L(); \
                     _ -> L() \
                 end end)() \
             end), \
             receive recording -> ok end",
        )
        .start()
}

/// `[{I, T}, ...]` as Erlang prints `ets:tab2list(lat)`.
fn parse_pairs(s: &str) -> Vec<(u32, i64)> {
    s.trim_matches(|c| c == '[' || c == ']')
        .split("},{")
        .filter(|p| !p.is_empty())
        .map(|p| {
            let p = p.trim_matches(|c| c == '{' || c == '}');
            let (i, t) = p.split_once(',').expect("{I,T}");
            (i.parse().expect("I"), t.parse().expect("T"))
        })
        .collect()
}

/// An otter node of the cluster: its scope, a member to join, and the times its
/// subscriber hears of each `{lat, I}` group's first join.
struct OtterPeer {
    rt: Runtime,
    node: Node,
    scope: Scope,
    member: Pid<Term>,
    heard: Receiver<(u32, i64)>,
}

fn otter_recording() -> OtterPeer {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let node = otter_node::start(&rt);
    let scope = node.pg_scope("pg").unwrap();
    let member = forever(&rt);
    let (tx, heard) = channel();
    let watch = rt
        .handle()
        .spawn(move |mut cx: Context<Update>| async move {
            loop {
                let u = cx.recv().await;
                let at = micros_now();
                if u.event != Event::Join {
                    continue;
                }
                if let Term::Tuple(t) = &u.group
                    && t.len() == 2
                    && t[0] == Term::atom("lat")
                    && let Some(i) = t[1].as_i64()
                    && tx.send((i as u32, at)).is_err()
                {
                    return;
                }
            }
        });
    scope.monitor_scope(watch);
    OtterPeer {
        rt,
        node,
        scope,
        member,
        heard,
    }
}

/// The target: in a cluster of 3 Erlang and 2 otter nodes in one scope, a join
/// on any node is seen on every node within 100 ms (median), and a node killed with
/// `kill -9` takes its members with it everywhere within `net_ticktime`. The figures
/// are printed (`--nocapture`).
#[test]
fn a_join_on_any_node_of_a_mixed_cluster_is_seen_everywhere_and_a_killed_node_leaves() {
    let mut erls: Vec<erlang::Node> = (0..3).map(|_| erl_recording()).collect();
    let otters: Vec<OtterPeer> = (0..2).map(|_| otter_recording()).collect();
    // A full mesh: the Erlang nodes among themselves, each otter node to every node.
    let names: Vec<String> = erls.iter().map(|e| e.name().to_string()).collect();
    for (i, e) in erls.iter_mut().enumerate() {
        for n in &names[..i] {
            assert_eq!(
                e.eval_ok(&format!("net_kernel:connect_node('{n}')")),
                "true"
            );
        }
    }
    for (i, o) in otters.iter().enumerate() {
        for n in &names {
            connect(&o.rt, &o.node, n);
        }
        for p in &otters[..i] {
            connect(&o.rt, &o.node, p.node.name());
        }
    }
    // Every scope knows every other: a join of each node is seen by all.
    let mut all_heard: Vec<Vec<(u32, i64)>> = vec![Vec::new(); 2];
    let wait_all = |i: u32, erls: &mut [erlang::Node], heard: &mut Vec<Vec<(u32, i64)>>| {
        for e in erls.iter_mut() {
            erl_until(e, &format!("ets:member(lat, {i})"), "true");
        }
        for (k, o) in otters.iter().enumerate() {
            while !heard[k].iter().any(|(j, _)| *j == i) {
                heard[k].push(o.heard.recv_timeout(WAIT).expect("a join heard"));
            }
        }
    };
    // Warm-up rounds (0..5, one per node) make the scopes meet; then the measured ones.
    const ROUNDS: u32 = 40;
    let mut joined_at = Vec::new();
    for i in 0..ROUNDS + 5 {
        let joiner = (i % 5) as usize;
        let t0 = if joiner < 3 {
            let t = erls[joiner].eval_ok(&format!(
                "T = erlang:system_time(microsecond), ok = pg:join(pg, {{lat, {i}}}, whereis(member)), T"
            ));
            t.parse::<i64>().expect("a time")
        } else {
            let o = &otters[joiner - 3];
            let t = micros_now();
            o.scope.join(&(atom("lat"), i), o.member).unwrap();
            t
        };
        joined_at.push((i, joiner, t0));
        wait_all(i, &mut erls, &mut all_heard);
    }
    // When each node heard of each join.
    let mut heard_by: Vec<Vec<(u32, i64)>> = erls
        .iter_mut()
        .map(|e| parse_pairs(&e.eval_ok("lists:sort(ets:tab2list(lat))")))
        .collect();
    heard_by.extend(all_heard);
    let mut latencies: Vec<i64> = Vec::new();
    for &(i, joiner, t0) in joined_at.iter().skip(5) {
        let slowest = heard_by
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != joiner)
            .map(|(_, h)| h.iter().find(|(j, _)| *j == i).expect("heard").1 - t0)
            .max()
            .unwrap();
        latencies.push(slowest);
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    println!(
        "pg: a join seen on all 5 nodes after {:.2} ms (median of {ROUNDS}), min {:.2} ms, max {:.2} ms",
        median as f64 / 1000.0,
        latencies[0] as f64 / 1000.0,
        latencies[latencies.len() - 1] as f64 / 1000.0,
    );
    assert!(median < 100_000, "median {median} µs");

    // Joins and leaves on one otter node with 4 peers to tell.
    let o = &otters[0];
    let pids: Vec<Pid<Term>> = (0..100).map(|_| forever(&o.rt)).collect();
    let t0 = Instant::now();
    let mut ops = 0u64;
    while t0.elapsed() < Duration::from_secs(1) {
        for p in &pids {
            o.scope.join(&atom("churn"), *p).unwrap();
        }
        for p in &pids {
            o.scope.leave(&atom("churn"), *p).unwrap();
        }
        ops += 2 * pids.len() as u64;
    }
    let rate = ops as f64 / t0.elapsed().as_secs_f64();
    println!("pg: {rate:.0} joins and leaves a second on an otter node with 4 peers");
    // Every one is sent to 4 peers, whose writers and the 3 Erlang nodes share this
    // machine's cores with the caller: the figure is printed, and guarded at half the
    // issue's 10,000 a second (which `ten_thousand_joins_and_leaves_a_second_on_one_node`
    // asserts), so that a loaded machine running a debug build does not fail it.
    assert!(rate >= 5_000.0, "{rate:.0} a second");
    for e in erls.iter_mut() {
        erl_until(e, "pg:get_members(pg, churn)", "[]");
    }
    // The same on an Erlang node of the cluster, for comparison.
    let erl_rate = erls[1].eval_ok(
        "M = whereis(member), T0 = erlang:monotonic_time(microsecond), \
         [begin ok = pg:join(pg, churn, M), ok = pg:leave(pg, churn, M) end \
          || _ <- lists:seq(1, 10000)], \
         round(20000 * 1000000 / (erlang:monotonic_time(microsecond) - T0))",
    );
    println!("pg: {erl_rate} joins and leaves a second on an Erlang node of the same cluster");

    // kill -9 of the first Erlang node: its members (`{lat, 0}`, `{lat, 5}`...) go.
    let dead = erls[0].name().to_string();
    let t0 = Instant::now();
    erls[0].kill();
    let gone = |scope: &Scope| {
        (0..ROUNDS + 5)
            .step_by(5)
            .all(|i| scope.all_members(&(atom("lat"), i)).is_empty())
    };
    for o in &otters {
        support::eventually("the killed node's members gone on otter", WAIT, || {
            gone(&o.scope)
        });
    }
    let on_otter = t0.elapsed();
    for e in erls[1..].iter_mut() {
        erl_until(
            e,
            &format!(
                "[P || G <- pg:which_groups(pg), P <- pg:get_members(pg, G), node(P) =:= '{dead}']"
            ),
            "[]",
        );
    }
    println!(
        "pg: a killed node's members gone on both otter nodes after {:?}, on the Erlang nodes after {:?} (net_ticktime 60 s)",
        on_otter,
        t0.elapsed()
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
}

/// `forced_sync`: a sync replaces what a peer said it has (a group it no longer lists
/// loses its members, a changed one gets the difference), and the peer's next sync
/// sets it right again.
#[test]
fn forced_sync() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let (node, scope, mut e) = pg_with_erlang(&rt);
    let p = forever(&rt);
    scope.join(&atom("one"), p).unwrap();
    assert_eq!(e.eval_ok("pg:join(pg, one, whereis(member))"), "ok");
    support::eventually("one", WAIT, || remote_count(&scope, &atom("one")) == 1);
    let to = otter_node::at("pg", &node);
    // White-box, as the suite: a broken sync in the name of Erlang's scope.
    e.eval_ok(&format!(
        "M = whereis(member), \
         {to} ! {{'$gen_cast', {{sync, whereis(pg), [{{one, [M, M]}}, {{forced_sync, [M, M]}}]}}}}"
    ));
    support::eventually("the broken sync", WAIT, || {
        remote_count(&scope, &atom("forced_sync")) == 2
    });
    assert_eq!(remote_count(&scope, &atom("one")), 2);
    assert_eq!(scope.local_members::<_, Term>(&atom("one")), vec![p]);
    // Erlang's scope is asked for a sync as a `discover` from otter's scope asks.
    e.eval_ok("[Otter] = maps:keys(element(4, sys:get_state(pg))), pg ! {discover, Otter}");
    support::eventually("the true sync", WAIT, || {
        remote_count(&scope, &atom("forced_sync")) == 0
    });
    assert_eq!(remote_count(&scope, &atom("one")), 1);
    assert_eq!(scope.all_members(&atom("one")).len(), 2);
}

/// `thundering_herd`: thousands of syncs from a peer while this node has 10,000
/// groups; the scope keeps up, and a join after them is seen at once.
#[test]
fn thundering_herd() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let node = otter_node::start(&rt);
    let scope = node.pg_scope("pg").unwrap();
    let p = forever(&rt);
    for i in 0..10_000u32 {
        scope.join(&(atom("group"), i), p).unwrap();
    }
    let mut e = erl_pg();
    connect(&rt, &node, e.name());
    erl_until(&mut e, "length(pg:which_groups(pg))", "10000");
    let to = otter_node::at("pg", &node);
    let t0 = Instant::now();
    e.eval_ok(&format!(
        "M = whereis(member), \
         [{to} ! {{'$gen_cast', {{sync, whereis(pg), [{{{{group, 1}}, [M, M]}}]}}}} \
          || _ <- lists:seq(1, 2000)], ok"
    ));
    assert_eq!(e.eval_ok("pg:join(pg, herd, whereis(member))"), "ok");
    support::eventually("the join after the herd", Duration::from_secs(5), || {
        remote_count(&scope, &atom("herd")) == 1
    });
    println!("pg: 2000 syncs and a join handled in {:?}", t0.elapsed());
    assert_eq!(remote_count(&scope, &(atom("group"), 1)), 2);
}

/// A visible otter node: Erlang's scope discovers it on `nodeup` as well as otter's
/// discovers Erlang's; the two discoveries meet in one membership.
#[test]
fn a_visible_otter_node_and_an_erlang_node_discover_each_other() {
    let rt = Runtime::builder().threads(support::MANY).build().unwrap();
    let node = otter_node::start_with(&rt, |b| b.hidden(false));
    let scope = node.pg_scope("pg").unwrap();
    let p = forever(&rt);
    scope.join(&atom("visible"), p).unwrap();
    let mut e = erl_pg();
    connect(&rt, &node, e.name());
    assert_eq!(e.eval_ok("pg:join(pg, visible, whereis(member))"), "ok");
    support::eventually("Erlang's member", WAIT, || {
        remote_count(&scope, &atom("visible")) == 1
    });
    erl_until(&mut e, "length(pg:get_members(pg, visible))", "2");
    assert_eq!(scope.all_members(&atom("visible")).len(), 2);
}
