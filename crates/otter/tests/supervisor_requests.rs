//! Rules of the requests to a supervisor (OTP `supervisor`: `terminate_child/2`,
//! `restart_child/2`, `delete_child/2`): a child terminated while its restart keeps
//! failing stays stopped until `restart_child`; `terminate_child` by pid is for
//! simple_one_for_one children, and a pid that has exited is already terminated.

#[path = "support/gate.rs"]
mod gate;
#[path = "support/rt.rs"]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Poll;
use std::time::Duration;

use gate::Gate;
use otter::supervisor::{
    self, ChildError, ChildSpec, Restart, Strategy, SupervisorRef, SupervisorSpec,
};
use otter::{Context, Down, ExitReason, Pid, Runtime};

/// What the test process hears.
#[derive(Debug)]
enum Ev {
    /// A child the start function started.
    Proc(Pid<()>),
    /// The start function's failing attempt waits on its gate.
    Blocked,
    Down(Down),
}

impl From<Down> for Ev {
    fn from(d: Down) -> Ev {
        Ev::Down(d)
    }
}

/// A child whose start function counts its attempts: attempt 2 waits on `gate` and
/// then fails; every other attempt starts a process that exits when sent `()`. While
/// attempt 2 waits, the supervisor is busy inside that start, and requests sent
/// meanwhile queue.
fn gated(log: Pid<Ev>, attempts: Arc<AtomicU32>, gate: Arc<Gate>) -> ChildSpec {
    ChildSpec::new("gated", move |sup| {
        let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
        let started = (n != 2).then(|| {
            let pid = sup.spawn_link(|mut c: Context<()>| async move { c.recv().await });
            log.send(Ev::Proc(pid));
            pid.id()
        });
        let gate = gate.clone();
        async move {
            match started {
                Some(id) => Ok(id),
                None => {
                    log.send(Ev::Blocked);
                    gate.wait().await;
                    Err(ExitReason::ShutdownWith(
                        format!("attempt {n} failed").into(),
                    ))
                }
            }
        }
    })
}

async fn proc_started(cx: &mut Context<Ev>) -> Pid<()> {
    match cx.recv().await {
        Ev::Proc(p) => p,
        other => panic!("expected a start, got {other:?}"),
    }
}

async fn blocked(cx: &mut Context<Ev>) {
    match cx.recv().await {
        Ev::Blocked => {}
        other => panic!("expected the failing restart, got {other:?}"),
    }
}

/// A one_for_one supervisor of the gated child, whose first start succeeds and whose
/// restart (attempt 2) fails once `gate` opens; returns once that child has crashed and
/// the restart waits at the gate.
async fn restarting(cx: &mut Context<Ev>, attempts: Arc<AtomicU32>) -> (SupervisorRef, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let spec = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(5))
        .child(gated(cx.pid(), attempts, gate.clone()));
    let sup = supervisor::start_link(cx, spec).await.unwrap();
    proc_started(cx).await.send(());
    blocked(cx).await;
    (sup, gate)
}

/// Polls a call once: a call sends its request before it first waits, so the request
/// is in the supervisor's mailbox when this returns.
async fn send_now<F: Future>(mut call: Pin<&mut F>) {
    std::future::poll_fn(|cx| {
        assert!(call.as_mut().poll(cx).is_pending(), "answered at once");
        Poll::Ready(())
    })
    .await
}

rt_test!(
    a_child_terminated_while_restarting_stays_stopped,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Ev>| async move {
            // The restart (attempt 2) fails once the gate opens; the supervisor then
            // queues its retry behind the request sent meanwhile.
            let (sup, gate) = restarting(&mut cx, a2).await;
            let mut terminate = std::pin::pin!(sup.terminate_child("gated"));
            send_now(terminate.as_mut()).await;
            gate.open();
            let terminated = terminate.await;
            // The retry found the child terminated: it stays stopped (OTP), until
            // restart_child.
            let stopped = sup.which_children().await.unwrap()[0].pid.is_none();
            let again = sup.restart_child("gated").await.unwrap();
            let p = proc_started(&mut cx).await;
            (terminated, stopped, again == p.id())
        });
        assert_eq!(r.unwrap(), (Ok(()), true, true));
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
);

rt_test!(
    a_dynamic_child_terminated_while_restarting_stays_stopped,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Ev>| async move {
            let gate = Arc::new(Gate::default());
            let spec = SupervisorSpec::new(Strategy::SimpleOneForOne)
                .intensity(10, Duration::from_secs(5));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            sup.start_child(gated(cx.pid(), a2, gate.clone()))
                .await
                .unwrap();
            let first = proc_started(&mut cx).await;
            first.send(());
            blocked(&mut cx).await;
            // OTP's terminate_child(Sup, Pid) finds a restarting dynamic child by the
            // pid it had.
            let mut terminate = std::pin::pin!(sup.terminate_pid(first.id()));
            send_now(terminate.as_mut()).await;
            gate.open();
            let terminated = terminate.await;
            let left = sup.which_children().await.unwrap().len();
            (terminated, left)
        });
        assert_eq!(r.unwrap(), (Ok(()), 0));
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }
);

fn waiter(id: &'static str) -> ChildSpec {
    ChildSpec::process(id, || |mut c: Context<()>| async move { c.recv().await })
}

rt_test!(
    terminate_pid_of_an_exited_dynamic_child_is_ok,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Ev>| async move {
            let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne))
                .await
                .unwrap();
            let pid = sup
                .start_child(waiter("w").restart(Restart::Temporary))
                .await
                .unwrap();
            let m = cx.monitor(pid);
            cx.exit(pid, ExitReason::Shutdown);
            match cx.recv().await {
                Ev::Down(d) if d.reference == m => {}
                other => panic!("{other:?}"),
            }
            // The child's exit signal reached the supervisor before our Down: it has
            // forgotten the child by now.
            let left = sup.which_children().await.unwrap().len();
            // OTP: a pid that is not alive is terminated already (`ok`); a live process
            // that is not a child is `not_found`.
            let exited = sup.terminate_pid(pid).await;
            let stranger = sup.terminate_pid(cx.pid().id()).await;
            (left, exited, stranger)
        });
        assert_eq!(r.unwrap(), (0, Ok(()), Err(ChildError::NotFound)));
    }
);

rt_test!(
    terminate_pid_on_a_supervisor_of_static_children_is_not_found,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne).child(waiter("w"));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let pid = sup.which_children().await.unwrap()[0].pid.unwrap();
            // OTP's terminate_child(Sup, Pid) looks a pid up only among
            // simple_one_for_one children: elsewhere it is `not_found`.
            let answer = sup.terminate_pid(pid).await;
            let still = sup.which_children().await.unwrap()[0].pid == Some(pid);
            (answer, still, pid.is_alive())
        });
        assert_eq!(r.unwrap(), (Err(ChildError::NotFound), true, true));
    }
);

rt_test!(
    restart_and_delete_of_a_restarting_child_say_so,
    |rt: &Runtime| {
        let attempts = Arc::new(AtomicU32::new(0));
        let a2 = attempts.clone();
        let r = rt.block_on(move |mut cx: Context<Ev>| async move {
            let (sup, gate) = restarting(&mut cx, a2).await;
            let mut restart = std::pin::pin!(sup.restart_child("gated"));
            send_now(restart.as_mut()).await;
            let mut delete = std::pin::pin!(sup.delete_child("gated"));
            send_now(delete.as_mut()).await;
            gate.open();
            // OTP: `{error, restarting}` to both; the retry then restarts the child.
            let answers = (restart.await.map(|_| ()), delete.await);
            let p = proc_started(&mut cx).await;
            let kids = sup.which_children().await.unwrap();
            (answers, kids[0].pid == Some(p.id()))
        });
        assert_eq!(
            r.unwrap(),
            (
                (Err(ChildError::Restarting), Err(ChildError::Restarting)),
                true
            )
        );
        assert_eq!(attempts.load(Ordering::SeqCst), 3);
    }
);

rt_test!(
    requests_by_id_to_simple_one_for_one_say_so,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne))
                .await
                .unwrap();
            let pid = sup.start_child(waiter("w")).await.unwrap();
            // OTP: `{error, simple_one_for_one}`; the child is untouched.
            let answers = (
                sup.terminate_child("w").await,
                sup.restart_child("w").await.map(|_| ()),
                sup.delete_child("w").await,
            );
            let kids = sup.which_children().await.unwrap();
            (answers, kids.len(), kids[0].pid == Some(pid))
        });
        let e = Err(ChildError::SimpleOneForOne);
        assert_eq!(r.unwrap(), ((e.clone(), e.clone(), e), 1, true));
    }
);

rt_test!(
    a_supervisor_child_is_reachable_as_a_supervisor_ref,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::supervisor("sub", || {
                    SupervisorSpec::new(Strategy::SimpleOneForOne)
                }))
                .child(waiter("w"));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let kids = top.which_children().await.unwrap();
            let sub = kids[0].supervisor.expect("sub runs");
            let same = Some(sub.id()) == kids[0].pid;
            let worker = kids[1].supervisor;
            // The handle works: the subtree takes a child.
            let leaf = sub.start_child(waiter("leaf")).await.unwrap();
            let leaves = sub.which_children().await.unwrap();
            // A stopped supervisor child has no handle.
            top.terminate_child("sub").await.unwrap();
            let gone = top.which_children().await.unwrap()[0].supervisor;
            (same, worker, leaves[0].pid == Some(leaf), gone)
        });
        assert_eq!(r.unwrap(), (true, None, true, None));
    }
);

rt_test!(
    a_supervisor_found_by_name_is_a_supervisor_ref,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne).child(waiter("w"));
            let sup = supervisor::start_link_named(&cx, "top", spec)
                .await
                .unwrap();
            let found = otter::server::whereis::<supervisor::Supervisor, _>(&cx, "top")
                .map(supervisor::SupervisorRef::from);
            let n = found.unwrap().which_children().await.unwrap().len();
            (found == Some(sup), n)
        });
        assert_eq!(r.unwrap(), (true, 1));
    }
);

rt_test!(
    a_simple_one_for_one_supervisor_of_many_children_finds_each_by_pid,
    |rt: &Runtime| {
        // Children taken out from anywhere (exits, terminate_pid), restarted ones under
        // new pids: every later exit and terminate_pid still finds its child.
        const N: usize = 300;
        let r = rt.block_on(|mut cx: Context<Ev>| async move {
            let spec = SupervisorSpec::new(Strategy::SimpleOneForOne)
                .intensity(N as u32, Duration::from_secs(3600));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let mut pids = Vec::new();
            for i in 0..N {
                let restart = if i % 2 == 0 {
                    Restart::Permanent
                } else {
                    Restart::Temporary
                };
                pids.push(sup.start_child(waiter("w").restart(restart)).await.unwrap());
            }
            // Every third killed: the permanent ones come back under new pids. Each
            // `Down` comes after the supervisor heard of the exit.
            for (i, &p) in pids.iter().enumerate() {
                if i % 3 == 0 {
                    let m = cx.monitor(p);
                    cx.exit(p, ExitReason::Kill);
                    match cx.recv().await {
                        Ev::Down(d) if d.reference == m => {}
                        other => panic!("{other:?}"),
                    }
                }
            }
            // Every fifth terminated by its first pid (of those killed: gone already).
            for (i, &p) in pids.iter().enumerate() {
                if i % 5 == 0 {
                    assert_eq!(sup.terminate_pid(p).await, Ok(()));
                }
            }
            let left = sup.which_children().await.unwrap();
            let expected = (0..N)
                .filter(|i| {
                    let killed_temporary = i % 3 == 0 && i % 2 == 1;
                    let terminated = i % 5 == 0 && i % 3 != 0;
                    !killed_temporary && !terminated
                })
                .count();
            let counts = sup.count_children().await.unwrap();
            assert_eq!(
                (
                    counts.specs,
                    counts.active,
                    counts.workers,
                    counts.supervisors
                ),
                (left.len(), left.len(), left.len(), 0)
            );
            let running: std::collections::HashSet<_> =
                left.iter().map(|c| c.pid.unwrap()).collect();
            let all_alive = running.iter().all(|p| p.is_alive());
            // The rest, newest first, each found by its pid.
            for c in left.iter().rev() {
                assert_eq!(sup.terminate_pid(c.pid.unwrap()).await, Ok(()));
            }
            let after = sup.which_children().await.unwrap().len();
            (
                left.len() == expected,
                running.len() == left.len(),
                all_alive,
                after,
            )
        });
        assert_eq!(r.unwrap(), (true, true, true, 0));
    }
);
