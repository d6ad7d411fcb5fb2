//! Rules of reports (`otter::report`, OTP's SASL reports as `tracing` events): a
//! supervisor reports each child it starts (progress), a child's abnormal exit
//! (`child_terminated`), a failed start (`start_error`), a child killed when its
//! shutdown time ran out (`shutdown_error`) and its own shutdown when the
//! restart intensity is reached; a server that ends abnormally is reported
//! (`otter::crash`), one that stops normally or with `shutdown` is not; a plain process
//! that panics is reported; a panic's report names its place.
//!
//! One global subscriber collects every event of this test binary
//! (`support/reports.rs`); each test looks only at the events that name its own
//! processes.

#[path = "support/reports.rs"]
mod reports;
#[path = "support/rt.rs"]
mod support;

use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, ExitReason, ProcessId, Runtime};
use reports::{Report, reports};

/// The reports about `pid` (as supervisor or as the process reported on).
fn about(pid: ProcessId) -> Vec<Report> {
    let pid = pid.to_string();
    reports()
        .into_iter()
        .filter(|r| r.get("supervisor") == pid || r.get("pid") == pid)
        .collect()
}

/// A server that crashes, or stops, on request.
struct Fragile;

enum Req {
    Crash(ReplyTo<()>),
    Stop(ExitReason, ReplyTo<()>),
}

impl Server for Fragile {
    type Args = ();
    type Call = Req;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Fragile)
    }
    async fn handle_call(&mut self, r: Req, _: &mut ServerContext<Self>) -> Flow {
        match r {
            Req::Crash(from) => panic!("fragile crashed ({from:?})"),
            Req::Stop(reason, from) => {
                from.reply(());
                Flow::Stop(reason)
            }
        }
    }
}

rt_test!(
    a_supervisor_reports_its_starts_and_a_childs_abnormal_exit,
    |rt: &Runtime| {
        let _ = reports();
        let (sup, first) = rt
            .block_on(|cx: Context<()>| async move {
                let spec =
                    SupervisorSpec::new(Strategy::OneForOne)
                        .child(ChildSpec::server::<Fragile>("fragile", || ()));
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                let first = sup.child::<Fragile>("fragile").await.unwrap().unwrap();
                let _ = first.call(Req::Crash).await;
                // Restarted: a new child answers.
                let mut again = first;
                while again == first {
                    again = sup
                        .child::<Fragile>("fragile")
                        .await
                        .unwrap()
                        .unwrap_or(first);
                    cx.yield_now().await;
                }
                sup.stop().await.unwrap();
                (sup.id(), first.id())
            })
            .unwrap();
        let mine = about(sup);
        let progress: Vec<_> = mine
            .iter()
            .filter(|r| r.target == "otter::progress")
            .collect();
        assert_eq!(progress.len(), 2, "{mine:?}");
        assert!(progress.iter().all(|r| r.get("child_id") == "fragile"));
        let terminated: Vec<_> = mine
            .iter()
            .filter(|r| r.get("context") == "child_terminated")
            .collect();
        assert_eq!(terminated.len(), 1, "{mine:?}");
        assert_eq!(terminated[0].get("pid"), first.to_string());
        assert!(terminated[0].get("reason").contains("fragile crashed"));
        // The crash of the server itself is reported once, as a crash report.
        let crash: Vec<_> = about(first)
            .into_iter()
            .filter(|r| r.target == "otter::crash")
            .collect();
        assert_eq!(crash.len(), 1);
        assert!(crash[0].get("behaviour").contains("Fragile"));
        // With the place of its panic, which the panic hook kept.
        assert!(
            crash[0].get("location").contains("tests/reports.rs:"),
            "{crash:?}"
        );
    }
);

rt_test!(
    a_process_that_panics_is_reported_with_the_place_of_its_panic,
    |rt: &Runtime| {
        let _ = reports();
        let pid = rt
            .block_on(|mut cx: Context<otter::Down>| async move {
                let (pid, _) = cx.spawn_monitor(|_: Context<()>| async move {
                    panic!("plain boom");
                });
                let down = cx.recv().await;
                assert_eq!(down.reason, ExitReason::Panic("plain boom".into()));
                pid.id()
            })
            .unwrap();
        let crash: Vec<_> = about(pid)
            .into_iter()
            .filter(|r| r.target == "otter::crash")
            .collect();
        assert_eq!(crash.len(), 1, "{crash:?}");
        assert_eq!(crash[0].get("reason"), "panic: plain boom");
        assert!(
            crash[0].get("location").contains("tests/reports.rs:"),
            "{crash:?}"
        );
    }
);

rt_test!(
    a_supervisor_that_reaches_its_restart_intensity_reports_its_shutdown,
    |rt: &Runtime| {
        let _ = reports();
        let sup = rt
            .block_on(|mut cx: Context<otter::Exit>| async move {
                cx.trap_exit(true);
                let spec = SupervisorSpec::new(Strategy::OneForOne)
                    .intensity(1, std::time::Duration::from_secs(60))
                    .child(ChildSpec::server::<Fragile>("fragile", || ()));
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                for _ in 0..2 {
                    let mut child = None;
                    while child.is_none() {
                        child = sup.child::<Fragile>("fragile").await.ok().flatten();
                        cx.yield_now().await;
                    }
                    let _ = child.unwrap().call(Req::Crash).await;
                }
                let exit = cx.recv().await;
                assert_eq!(exit.reason, ExitReason::Shutdown);
                sup.id()
            })
            .unwrap();
        let shutdown: Vec<_> = about(sup)
            .into_iter()
            .filter(|r| r.get("context") == "shutdown")
            .collect();
        assert_eq!(shutdown.len(), 1);
        assert_eq!(shutdown[0].get("reason"), "reached_max_restart_intensity");
    }
);

rt_test!(
    a_child_killed_when_its_shutdown_time_runs_out_is_reported,
    |rt: &Runtime| {
        let _ = reports();
        let sup = rt
            .block_on(|cx: Context<()>| async move {
                // A child that traps the supervisor's `shutdown` and never ends.
                let trapping = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                let t = trapping.clone();
                let stubborn = ChildSpec::process("stubborn", move || {
                    let t = t.clone();
                    move |mut c: Context<otter::Exit>| async move {
                        c.trap_exit(true);
                        t.store(true, std::sync::atomic::Ordering::SeqCst);
                        loop {
                            c.recv().await;
                        }
                    }
                })
                .shutdown(supervisor::Shutdown::Timeout(
                    std::time::Duration::from_millis(20),
                ));
                let spec = SupervisorSpec::new(Strategy::OneForOne).child(stubborn);
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                // Its first poll sets the trap; a stop before it would end it at once.
                while !trapping.load(std::sync::atomic::Ordering::SeqCst) {
                    cx.yield_now().await;
                }
                sup.stop().await.unwrap();
                sup.id()
            })
            .unwrap();
        let errors: Vec<_> = about(sup)
            .into_iter()
            .filter(|r| r.get("context") == "shutdown_error")
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].get("reason"), "killed");
    }
);

rt_test!(a_failed_start_is_reported, |rt: &Runtime| {
    let _ = reports();
    let sup = rt
        .block_on(|cx: Context<()>| async move {
            let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne))
                .await
                .unwrap();
            let failing = ChildSpec::new("failing", |_| async { Err(ExitReason::Killed) });
            assert!(sup.start_child(failing).await.is_err());
            sup.stop().await.unwrap();
            sup.id()
        })
        .unwrap();
    let errors: Vec<_> = about(sup)
        .into_iter()
        .filter(|r| r.get("context") == "start_error")
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].get("child_id"), "failing");
});

rt_test!(
    a_server_that_stops_normally_or_with_shutdown_is_not_reported,
    |rt: &Runtime| {
        let _ = reports();
        let pids = rt
            .block_on(|cx: Context<()>| async move {
                let mut pids = Vec::new();
                for reason in [ExitReason::Normal, ExitReason::Shutdown] {
                    let s = Fragile::start(&cx, ()).await.unwrap();
                    s.call(|r| Req::Stop(reason, r)).await.unwrap();
                    pids.push(s.id());
                }
                let s = Fragile::start(&cx, ()).await.unwrap();
                s.call(|r| Req::Stop(ExitReason::Killed, r)).await.unwrap();
                while !s.pid().has_exited() {
                    cx.yield_now().await;
                }
                (pids, s.id())
            })
            .unwrap();
        let (quiet, reported) = pids;
        for pid in quiet {
            assert!(about(pid).is_empty(), "{:?}", about(pid));
        }
        let crash = about(reported);
        assert_eq!(crash.len(), 1, "{crash:?}");
        assert_eq!(crash[0].get("reason"), "killed");
    }
);
