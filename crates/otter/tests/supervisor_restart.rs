//! Rules of supervisors (OTP `supervisor`): start in order and stop in reverse;
//! one_for_one, one_for_all and rest_for_one restart sets and order; restart types;
//! intensity exceeded ends the supervisor with `shutdown`; shutdown timeout escalating to
//! kill; brutal_kill; a failed child start; nesting; names re-registered on restart;
//! simple_one_for_one.

#[path = "support/rt.rs"]
mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::server::{Flow, Name, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{
    self, ChildSpec, Restart, Shutdown, Strategy, SupervisorRef, SupervisorSpec,
};
use otter::{Context, Down, Exit, ExitReason, Pid, ProcessId, Runtime};

/// What the test process hears.
#[derive(Debug)]
enum Log {
    Started(&'static str, ServerRef<Logged>),
    Proc(Pid<()>),
    Stopped(&'static str, #[allow(dead_code)] ExitReason),
    Down(Down),
    Exit(Exit),
}

impl From<Down> for Log {
    fn from(d: Down) -> Log {
        Log::Down(d)
    }
}

impl From<Exit> for Log {
    fn from(e: Exit) -> Log {
        Log::Exit(e)
    }
}

/// What the test tells a child.
#[derive(Debug)]
enum C {
    Crash,
    Quit(ExitReason),
}

fn crash() {
    panic!("child crash");
}

/// A child server that reports its start (from `init`, which the supervisor waits
/// for: starts are reported in start order) and its shutdown (from `terminate`). With
/// `stubborn`, its `terminate` never finishes, so the supervisor has to kill it.
struct Logged {
    id: &'static str,
    log: Pid<Log>,
    stubborn: bool,
}

impl Server for Logged {
    type Args = (&'static str, Pid<Log>, bool);
    type Call = ReplyTo<()>;
    type Cast = C;
    type Info = ();

    async fn init(
        (id, log, stubborn): Self::Args,
        cx: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        cx.trap_exit(true);
        log.send(Log::Started(id, ServerRef::from(cx.pid())));
        Ok(Logged { id, log, stubborn })
    }

    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(());
        Flow::Continue
    }

    async fn handle_cast(&mut self, c: C, _: &mut ServerContext<Self>) -> Flow {
        match c {
            C::Crash => {
                crash();
                Flow::Continue
            }
            C::Quit(r) => Flow::Stop(r),
        }
    }

    async fn terminate(&mut self, reason: &ExitReason, cx: &mut ServerContext<Self>) {
        if *reason == ExitReason::Shutdown {
            if self.stubborn {
                cx.sleep(Duration::from_secs(3600)).await;
            }
            self.log.send(Log::Stopped(self.id, reason.clone()));
        }
    }
}

fn logged(id: &'static str, log: Pid<Log>, stubborn: bool) -> ChildSpec {
    ChildSpec::server::<Logged>(id, move || (id, log, stubborn))
}

async fn started(cx: &mut Context<Log>) -> (&'static str, ServerRef<Logged>) {
    match cx.recv().await {
        Log::Started(id, pid) => (id, pid),
        other => panic!("expected a start, got {other:?}"),
    }
}

async fn stopped(cx: &mut Context<Log>) -> &'static str {
    match cx.recv().await {
        Log::Stopped(id, _) => id,
        other => panic!("expected a stop, got {other:?}"),
    }
}

fn three(strategy: Strategy, log: Pid<Log>) -> SupervisorSpec {
    SupervisorSpec::new(strategy)
        .intensity(10, Duration::from_secs(5))
        .child(logged("a", log, false))
        .child(logged("b", log, false))
        .child(logged("c", log, false))
}

rt_test!(
    children_start_in_order_and_stop_in_reverse,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            let sup = supervisor::start_link(&cx, three(Strategy::OneForOne, cx.pid()))
                .await
                .unwrap();
            let mut order = Vec::new();
            for _ in 0..3 {
                order.push(started(&mut cx).await.0);
            }
            sup.server().stop(ExitReason::Normal, None).await.unwrap();
            for _ in 0..3 {
                order.push(stopped(&mut cx).await);
            }
            order
        });
        assert_eq!(r.unwrap(), ["a", "b", "c", "c", "b", "a"]);
    }
);

rt_test!(
    one_for_one_restarts_only_the_child_that_exited,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            let sup = supervisor::start_link(&cx, three(Strategy::OneForOne, cx.pid()))
                .await
                .unwrap();
            let mut pids = Vec::new();
            for _ in 0..3 {
                pids.push(started(&mut cx).await.1);
            }
            pids[1].cast(C::Crash);
            let again = started(&mut cx).await.0;
            let kids = sup.which_children().await.unwrap();
            let same = kids[0].pid == Some(pids[0].id()) && kids[2].pid == Some(pids[2].id());
            let new_b = kids[1].pid.is_some() && kids[1].pid != Some(pids[1].id());
            (again, same, new_b, cx.try_recv().is_none())
        });
        assert_eq!(r.unwrap(), ("b", true, true, true));
    }
);

rt_test!(one_for_all_restarts_every_child_in_order, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Log>| async move {
        let _sup = supervisor::start_link(&cx, three(Strategy::OneForAll, cx.pid()))
            .await
            .unwrap();
        let mut pids = Vec::new();
        for _ in 0..3 {
            pids.push(started(&mut cx).await.1);
        }
        pids[1].cast(C::Crash);
        // The others stop in reverse order, then all start in order.
        let mut seq = vec![stopped(&mut cx).await, stopped(&mut cx).await];
        for _ in 0..3 {
            seq.push(started(&mut cx).await.0);
        }
        seq
    });
    assert_eq!(r.unwrap(), ["c", "a", "a", "b", "c"]);
});

rt_test!(
    rest_for_one_restarts_the_later_children_in_order,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            let sup = supervisor::start_link(&cx, three(Strategy::RestForOne, cx.pid()))
                .await
                .unwrap();
            let mut pids = Vec::new();
            for _ in 0..3 {
                pids.push(started(&mut cx).await.1);
            }
            pids[1].cast(C::Crash);
            // Only c is stopped (b crashed); then b and c start, in order; a is untouched.
            let mut seq = vec![stopped(&mut cx).await];
            for _ in 0..2 {
                seq.push(started(&mut cx).await.0);
            }
            let kids = sup.which_children().await.unwrap();
            (seq, kids[0].pid == Some(pids[0].id()))
        });
        assert_eq!(r.unwrap(), (vec!["c", "b", "c"], true));
    }
);

rt_test!(restart_types_decide_after_which_exits, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Log>| async move {
        let log = cx.pid();
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(10, Duration::from_secs(5))
            .child(logged("perm", log, false))
            .child(logged("trans", log, false).restart(Restart::Transient))
            .child(logged("temp", log, false).restart(Restart::Temporary));
        let sup = supervisor::start_link(&cx, spec).await.unwrap();
        let mut pids = Vec::new();
        for _ in 0..3 {
            pids.push(started(&mut cx).await.1);
        }
        // A normal exit: only the permanent child comes back. The Downs of the others
        // come after their exit signals reached the supervisor, so its answer to
        // `which_children` below reflects them.
        let refs: Vec<_> = pids[1..].iter().map(|p| cx.monitor(*p)).collect();
        for p in &pids {
            p.cast(C::Quit(ExitReason::Normal));
        }
        let mut downs = 0;
        let mut back = None;
        while downs < 2 || back.is_none() {
            match cx.recv().await {
                Log::Down(d) if refs.contains(&d.reference) => downs += 1,
                Log::Started(id, _) => back = Some(id),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(back, Some("perm"));
        let kids = sup.which_children().await.unwrap();
        let ids: Vec<_> = kids
            .iter()
            .map(|k| (k.id.to_string(), k.pid.is_some()))
            .collect();
        // The transient child comes back after an abnormal exit.
        sup.restart_child("trans").await.unwrap();
        let (_, trans) = started(&mut cx).await;
        trans.cast(C::Crash);
        let again = started(&mut cx).await.0;
        (ids, again)
    });
    let (ids, again) = r.unwrap();
    assert_eq!(
        ids,
        vec![("perm".to_string(), true), ("trans".to_string(), false)],
        "the temporary child is forgotten, the transient one kept but not restarted"
    );
    assert_eq!(again, "trans");
});

rt_test!(
    intensity_exceeded_stops_the_supervisor_with_shutdown,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            cx.trap_exit(true);
            let log = cx.pid();
            // OTP's default: 1 restart in 5 s.
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(logged("a", log, false))
                .child(logged("b", log, false));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let (_, a) = started(&mut cx).await;
            started(&mut cx).await;
            a.cast(C::Crash); // restart 1: allowed
            let (_, a2) = started(&mut cx).await;
            a2.cast(C::Crash); // restart 2 within 5 s: too many
            // The supervisor stops b, then exits `shutdown`.
            let b_stop = stopped(&mut cx).await;
            let exit = match cx.recv().await {
                Log::Exit(e) => (e.from == sup.id(), e.reason),
                other => panic!("{other:?}"),
            };
            (b_stop, exit)
        });
        assert_eq!(r.unwrap(), ("b", (true, ExitReason::Shutdown)));
    }
);

rt_test!(shutdown_timeout_escalates_to_kill, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Log>| async move {
        let log = cx.pid();
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .child(
                logged("stubborn", log, true)
                    .shutdown(Shutdown::Timeout(Duration::from_millis(20))),
            )
            .child(logged("brutal", log, false).shutdown(Shutdown::BrutalKill));
        let sup = supervisor::start_link(&cx, spec).await.unwrap();
        let (_, stubborn) = started(&mut cx).await;
        let (_, brutal) = started(&mut cx).await;
        let m1 = cx.monitor(stubborn);
        let m2 = cx.monitor(brutal);
        let t0 = std::time::Instant::now();
        sup.server().stop(ExitReason::Normal, None).await.unwrap();
        let waited = t0.elapsed();
        let mut reasons = Vec::new();
        for _ in 0..2 {
            match cx.recv().await {
                Log::Down(d) if d.reference == m1 => reasons.push(("stubborn", d.reason)),
                Log::Down(d) if d.reference == m2 => reasons.push(("brutal", d.reason)),
                other => panic!("{other:?}"),
            }
        }
        reasons.sort_by_key(|r| r.0);
        (reasons, waited >= Duration::from_millis(20))
    });
    assert_eq!(
        r.unwrap(),
        (
            vec![
                ("brutal", ExitReason::Killed),
                ("stubborn", ExitReason::Killed)
            ],
            true
        )
    );
});

rt_test!(
    a_failed_child_start_fails_the_supervisor_start,
    |rt: &Runtime| {
        let first: Arc<Mutex<Option<ProcessId>>> = Arc::default();
        let f2 = first.clone();
        let r = rt.block_on(move |cx: Context<Log>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::new("a", move |sup| {
                    let pid = sup.spawn_link(|mut c: Context<()>| async move { c.recv().await });
                    *f2.lock().unwrap() = Some(pid.id());
                    async move { Ok(pid.id()) }
                }))
                .child(ChildSpec::new("bad", |_| async {
                    Err(ExitReason::ShutdownWith("no db".into()))
                }));
            supervisor::start_link(&cx, spec).await.map(|_| ())
        });
        assert_eq!(
            r.unwrap(),
            Err(ExitReason::ShutdownWith(
                "failed_to_start_child bad: {shutdown, no db}".into()
            ))
        );
        // The child started before the failure was stopped before the start returned:
        // the supervisor had its `Down`, so it is no longer alive.
        let a = first.lock().unwrap().expect("a was started");
        assert!(!a.is_alive());
    }
);

/// A named counter server, to check that a restarted child is found by its name.
struct Counter(u32);

/// Counter's one request: count, and answer the count.
struct Next(ReplyTo<u32>);

const COUNTER: Name<Counter> = Name::new("counter");

impl Server for Counter {
    type Args = ();
    type Call = Next;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Counter(0))
    }

    async fn handle_call(&mut self, Next(from): Next, _: &mut ServerContext<Self>) -> Flow {
        self.0 += 1;
        from.reply(self.0);
        Flow::Continue
    }

    async fn handle_cast(&mut self, _: (), _: &mut ServerContext<Self>) -> Flow {
        Flow::Stop(ExitReason::Panic("asked to crash".into()))
    }
}

rt_test!(
    a_restarted_child_is_reachable_by_its_name_in_a_nested_tree,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            // top (one_for_one) -> sub (one_for_one) -> "counter" (named server)
            let sub = || {
                SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::named_server(
                    "counter",
                    COUNTER,
                    || (),
                ))
            };
            let top =
                SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::supervisor("sub", sub));
            let top = supervisor::start_link(&cx, top).await.unwrap();
            let first = COUNTER.whereis(&cx).unwrap();
            assert_eq!(first.call(Next).await, Ok(1));
            assert_eq!(COUNTER.call(&cx, Next).await, Ok(2));
            let m = cx.monitor(first);
            first.cast(());
            match cx.recv().await {
                Log::Down(d) if d.reference == m => {}
                other => panic!("{other:?}"),
            }
            // Restarted with a fresh state, under the same name. The sub-supervisor got
            // the counter's exit signal before our `Down` was sent, so its answer comes
            // after the restart: no polling.
            let subs = top.which_children().await.unwrap();
            let sub = subs[0].supervisor.expect("sub is a supervisor");
            let again: ServerRef<Counter> = sub.child("counter").await.unwrap().unwrap();
            let n = COUNTER.call(&cx, Next).await;
            (n, again != first, subs.len(), subs[0].kind)
        });
        assert_eq!(
            r.unwrap(),
            (Ok(1), true, 1, supervisor::ChildKind::Supervisor)
        );
    }
);

rt_test!(
    a_subtree_that_gives_up_is_restarted_by_its_parent,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            let log = cx.pid();
            let sub = move || {
                SupervisorSpec::new(Strategy::OneForOne)
                    .intensity(0, Duration::from_secs(5))
                    .child(logged("leaf", log, false))
            };
            let top =
                SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::supervisor("sub", sub));
            let top: SupervisorRef = supervisor::start_link(&cx, top).await.unwrap();
            let sub1 = top.which_children().await.unwrap()[0].pid;
            let (_, leaf) = started(&mut cx).await;
            leaf.cast(C::Crash); // sub allows 0 restarts: it exits shutdown
            let (_, _leaf2) = started(&mut cx).await; // top restarted sub, sub started leaf
            let sub2 = top.which_children().await.unwrap()[0].pid;
            sub1 != sub2 && sub2.is_some()
        });
        assert!(r.unwrap());
    }
);

rt_test!(simple_one_for_one_children_are_dynamic, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Log>| async move {
        let log = cx.pid();
        let sup = supervisor::start_link(
            &cx,
            SupervisorSpec::new(Strategy::SimpleOneForOne).intensity(5, Duration::from_secs(5)),
        )
        .await
        .unwrap();
        let ids: Arc<[&'static str]> = Arc::from(["w0", "w1", "w2"]);
        let mut pids = Vec::new();
        for id in ids.iter() {
            sup.start_child(logged(id, log, false)).await.unwrap();
            pids.push(started(&mut cx).await);
        }
        // One crash restarts that one child only.
        pids[1].1.cast(C::Crash);
        let again = started(&mut cx).await.0;
        // Terminate by pid forgets it.
        let kids = sup.which_children().await.unwrap();
        sup.terminate_pid(kids[0].pid.unwrap()).await.unwrap();
        let stop = stopped(&mut cx).await;
        let left = sup.which_children().await.unwrap().len();
        // Shutdown stops the rest.
        sup.server().stop(ExitReason::Normal, None).await.unwrap();
        let mut rest = vec![stopped(&mut cx).await, stopped(&mut cx).await];
        rest.sort_unstable();
        (again, stop, left, rest)
    });
    assert_eq!(r.unwrap(), ("w1", "w0", 2, vec!["w1", "w2"]));
});

/// A child whose start function counts its attempts and fails the ones `fails` says;
/// each started child reports its pid and exits when sent `()`.
fn flaky(log: Pid<Log>, attempts: Arc<AtomicU32>, fails: fn(u32) -> bool) -> ChildSpec {
    ChildSpec::new("flaky", move |sup| {
        let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
        let started = if fails(n) {
            Err(ExitReason::ShutdownWith(
                format!("attempt {n} failed").into(),
            ))
        } else {
            let pid = sup.spawn_link(|mut c: Context<()>| async move { c.recv().await });
            log.send(Log::Proc(pid));
            Ok(pid.id())
        };
        async move { started }
    })
}

async fn proc_started(cx: &mut Context<Log>) -> Pid<()> {
    match cx.recv().await {
        Log::Proc(p) => p,
        other => panic!("expected a start, got {other:?}"),
    }
}

rt_test!(a_failed_restart_is_retried_and_counted, |rt: &Runtime| {
    let attempts = Arc::new(AtomicU32::new(0));
    let a2 = attempts.clone();
    let r = rt.block_on(move |mut cx: Context<Log>| async move {
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(5, Duration::from_secs(5))
            .child(flaky(cx.pid(), a2, |n| n == 2 || n == 3));
        let sup = supervisor::start_link(&cx, spec).await.unwrap();
        let first = proc_started(&mut cx).await;
        first.send(());
        // Attempts 2 and 3 fail; the supervisor retries through its mailbox; 4 runs.
        let again = proc_started(&mut cx).await;
        let kids = sup.which_children().await.unwrap();
        (kids[0].pid == Some(again.id()), again != first)
    });
    assert_eq!(r.unwrap(), (true, true));
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
});

rt_test!(
    a_restart_that_keeps_failing_exceeds_the_intensity,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Log>| async move {
            cx.trap_exit(true);
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .intensity(2, Duration::from_secs(5))
                .child(flaky(cx.pid(), a2, |n| n > 1));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            proc_started(&mut cx).await.send(());
            // Restart 1 fails, retry (restart 2) fails, retry (restart 3) is one too many.
            match cx.recv().await {
                Log::Exit(e) => (e.from == sup.id(), e.reason),
                other => panic!("{other:?}"),
            }
        });
        assert_eq!(r.unwrap(), (true, ExitReason::Shutdown));
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
);

rt_test!(the_intensity_window_forgets_old_restarts, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Log>| async move {
        cx.trap_exit(true);
        let attempts = Arc::new(AtomicU32::new(0));
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(1, Duration::from_millis(100))
            .child(flaky(cx.pid(), attempts, |_| false));
        let sup = supervisor::start_link(&cx, spec).await.unwrap();
        proc_started(&mut cx).await.send(()); // restart 1 in the window
        let p = proc_started(&mut cx).await;
        // The window is a property of time: let the first restart age out of it.
        cx.sleep(Duration::from_millis(150)).await;
        p.send(()); // one restart in the window again: allowed
        let p = proc_started(&mut cx).await;
        p.send(()); // a second one within 100 ms: too many
        match cx.recv().await {
            Log::Exit(e) => (e.from == sup.id(), e.reason),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(r.unwrap(), (true, ExitReason::Shutdown));
});

rt_test!(
    temporary_children_are_forgotten_not_restarted,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Log>| async move {
            let log = cx.pid();
            let spec = SupervisorSpec::new(Strategy::OneForAll)
                .intensity(10, Duration::from_secs(5))
                .child(logged("a", log, false))
                .child(logged("b", log, false).restart(Restart::Temporary))
                .child(logged("c", log, false));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let (_, a) = started(&mut cx).await;
            for _ in 0..2 {
                started(&mut cx).await;
            }
            // one_for_all: c and b are stopped; a and c come back, b does not.
            a.cast(C::Crash);
            let mut seq = vec![stopped(&mut cx).await, stopped(&mut cx).await];
            seq.push(started(&mut cx).await.0);
            seq.push(started(&mut cx).await.0);
            let ids: Vec<String> = sup
                .which_children()
                .await
                .unwrap()
                .iter()
                .map(|k| k.id.to_string())
                .collect();
            // terminate_child forgets a temporary child too.
            let spec = logged("t", log, false).restart(Restart::Temporary);
            sup.start_child(spec).await.unwrap();
            started(&mut cx).await;
            sup.terminate_child("t").await.unwrap();
            let restart = sup.restart_child("t").await;
            (seq, ids, restart.map(|_| ()))
        });
        assert_eq!(
            r.unwrap(),
            (
                vec!["c", "b", "a", "c"],
                vec!["a".to_string(), "c".to_string()],
                Err(supervisor::ChildError::NotFound)
            )
        );
    }
);

rt_test!(
    a_panicking_start_function_is_a_failed_start,
    |rt: &Runtime| {
        fn boom() -> ProcessId {
            panic!("start function bug")
        }
        let r = rt.block_on(|cx: Context<Log>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::new("bug", |_| async { Ok(boom()) }));
            let bad = supervisor::start_link(&cx, spec).await.map(|_| ());
            let zero = supervisor::start_link(
                &cx,
                SupervisorSpec::new(Strategy::OneForOne).intensity(1, Duration::ZERO),
            )
            .await
            .map(|_| ());
            (bad, zero)
        });
        assert_eq!(
            r.unwrap(),
            (
                Err(ExitReason::ShutdownWith(
                    "failed_to_start_child bug: panic: start function bug".into()
                )),
                Err(ExitReason::ShutdownWith(
                    "invalid period: must be > 0".into()
                ))
            )
        );
    }
);

rt_test!(
    rest_for_one_keeps_a_restarted_child_when_a_later_restart_fails,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Log>| async move {
            let log = cx.pid();
            // a, then flaky; flaky's first restart (its attempt 2) fails.
            let spec = SupervisorSpec::new(Strategy::RestForOne)
                .intensity(10, Duration::from_secs(5))
                .child(logged("a", log, false))
                .child(flaky(log, a2, |n| n == 2));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let (_, a) = started(&mut cx).await;
            proc_started(&mut cx).await;
            a.cast(C::Crash);
            // flaky is stopped, a restarted, flaky's restart fails. OTP keeps the new a
            // and tries again from flaky (supervisor_SUITE: `restarting_started_child`).
            let (_, a_again) = started(&mut cx).await;
            let next = match cx.recv().await {
                Log::Proc(_) => "flaky started".to_string(),
                other => format!("{other:?}"),
            };
            let kids = sup.which_children().await.unwrap();
            let a_kept = kids[0].pid == Some(a_again.id());
            let flaky_runs = kids[1].pid.is_some();
            (next, a_kept, flaky_runs, cx.try_recv().is_none())
        });
        assert_eq!(r.unwrap(), ("flaky started".to_string(), true, true, true));
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
);

rt_test!(
    one_for_all_stops_a_restarted_child_when_a_later_restart_fails,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Log>| async move {
            let log = cx.pid();
            let spec = SupervisorSpec::new(Strategy::OneForAll)
                .intensity(10, Duration::from_secs(5))
                .child(logged("a", log, false))
                .child(flaky(log, a2, |n| n == 2));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let (_, a) = started(&mut cx).await;
            proc_started(&mut cx).await;
            a.cast(C::Crash);
            // flaky is stopped, a restarted, flaky's restart fails; the retry restarts
            // them all: the new a is stopped before a third one starts
            // (supervisor_SUITE: `one_for_all_other_child_fails_restart`).
            started(&mut cx).await;
            let stop = stopped(&mut cx).await;
            let (_, a3) = started(&mut cx).await;
            proc_started(&mut cx).await;
            let kids = sup.which_children().await.unwrap();
            (stop, kids[0].pid == Some(a3.id()), kids[1].pid.is_some())
        });
        assert_eq!(r.unwrap(), ("a", true, true));
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
);
