//! Child specs for what OTP and ranch put under a supervisor: a subtree registered
//! under a name (`supervisor:start_link({local, Name}, ..)` as a child's start), an
//! acceptor pool (ranch's `child_spec/5`), and a child's kind (OTP's `type`: what
//! `which_children` and `count_children` report, and the default shutdown).

#[path = "support/rt.rs"]
mod support;

use std::io::ErrorKind;
use std::net::SocketAddr;

use otter::net::{AcceptorPool, TcpStream};
use otter::server::AlreadyStarted;
use otter::supervisor::{
    self, ChildCounts, ChildKind, ChildSpec, Shutdown, Strategy, SupervisorRef, SupervisorSpec,
};
use otter::{Context, Down, Exit, ExitReason, Runtime};

/// What the test process hears.
#[derive(Debug)]
enum Ev {
    Down(Down),
    /// A child saw an exit signal arrive as a message (it traps exits).
    Trapped(ExitReason),
    /// A child traps exits from now on.
    Trapping,
}

impl From<Down> for Ev {
    fn from(d: Down) -> Ev {
        Ev::Down(d)
    }
}

/// Kills `pid` and waits for its `Down`: its links' exit signals were applied before.
async fn kill(cx: &mut Context<Ev>, pid: otter::ProcessId) {
    let m = cx.monitor(pid);
    cx.exit(pid, ExitReason::Kill);
    loop {
        if let Ev::Down(d) = cx.recv().await
            && d.reference == m
        {
            return;
        }
    }
}

fn waiter(id: &str) -> ChildSpec {
    ChildSpec::process(id.to_string(), || {
        |mut c: Context<()>| async move { c.recv().await }
    })
}

fn sub_of(n: usize) -> impl Fn() -> SupervisorSpec + Send + Sync + 'static {
    move || {
        let mut spec = SupervisorSpec::new(Strategy::OneForOne);
        for i in 0..n {
            spec = spec.child(waiter(&format!("w{i}")));
        }
        spec
    }
}

rt_test!(
    a_named_supervisor_child_is_registered_again_at_each_restart,
    |rt: &Runtime| {
        for n in [1, 4] {
            let r = rt.block_on(move |mut cx: Context<Ev>| async move {
                let spec = SupervisorSpec::new(Strategy::OneForOne)
                    .child(ChildSpec::named_supervisor("sub", "conns", sub_of(n)));
                let top = supervisor::start_link(&cx, spec).await.unwrap();
                let kids = top.which_children().await.unwrap();
                let first = kids[0].supervisor.expect("a supervisor");
                let found = supervisor::whereis(&cx, "conns") == Some(first);
                let leaves = first.which_children().await.unwrap().len();
                kill(&mut cx, first.id()).await;
                // The top heard of the exit before our `Down` came: its answer comes
                // after the restart.
                let again = top.which_children().await.unwrap()[0].supervisor.unwrap();
                let found_again = supervisor::whereis(&cx, "conns") == Some(again);
                let leaves_again = again.which_children().await.unwrap().len();
                // The name is free once the tree has stopped (the next round takes it).
                top.stop().await.unwrap();
                (
                    found,
                    leaves,
                    again != first,
                    found_again,
                    leaves_again,
                    kids[0].kind,
                )
            });
            assert_eq!(r.unwrap(), (true, n, true, true, n, ChildKind::Supervisor));
        }
    }
);

rt_test!(
    a_named_supervisor_child_whose_name_is_taken_fails_to_start,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let holder = supervisor::start_link_named(&cx, "conns", sub_of(1)())
                .await
                .unwrap();
            let top = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne))
                .await
                .unwrap();
            let started = top
                .start_child(ChildSpec::named_supervisor("sub", "conns", sub_of(1)))
                .await;
            match started {
                Err(supervisor::ChildError::StartFailed(r)) => {
                    r.downcast_ref::<AlreadyStarted>() == Some(&AlreadyStarted(holder.id()))
                }
                other => panic!("{other:?}"),
            }
        });
        assert!(r.unwrap());
    }
);

/// A subtree started by a start function of its own, which the spec cannot see.
fn hand_started_sub(id: &str) -> ChildSpec {
    ChildSpec::new(id.to_string(), |sup| {
        let started = supervisor::start_link(sup, SupervisorSpec::new(Strategy::OneForOne));
        async move { started.await.map(|s| s.id()) }
    })
}

rt_test!(
    a_child_kind_set_on_its_spec_is_what_the_supervisor_reports,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(hand_started_sub("unmarked"))
                .child(hand_started_sub("marked").kind(ChildKind::Supervisor))
                .child(waiter("worker"))
                .child(ChildSpec::supervisor("sub", sub_of(1)))
                .child(ChildSpec::supervisor("as-worker", sub_of(1)).kind(ChildKind::Worker));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let kinds: Vec<ChildKind> = top
                .which_children()
                .await
                .unwrap()
                .iter()
                .map(|c| c.kind)
                .collect();
            let counts = top.count_children().await.unwrap();
            // The kind describes the child; a `SupervisorRef` comes from what the spec
            // started, whatever its kind says.
            let refs: Vec<bool> = top
                .which_children()
                .await
                .unwrap()
                .iter()
                .map(|c| c.supervisor.is_some())
                .collect();
            (kinds, counts, refs)
        });
        use ChildKind::{Supervisor as S, Worker as W};
        assert_eq!(
            r.unwrap(),
            (
                vec![W, S, W, S, W],
                ChildCounts {
                    specs: 5,
                    active: 5,
                    supervisors: 2,
                    workers: 3
                },
                vec![false, false, false, true, true]
            )
        );
    }
);

/// A child that traps exits and tells the test of each exit signal it gets as a
/// message, then exits with its reason.
fn trapping(id: &str, log: otter::Pid<Ev>) -> ChildSpec {
    ChildSpec::process(id.to_string(), move || {
        move |mut c: Context<Exit>| async move {
            c.trap_exit(true);
            log.send(Ev::Trapping);
            let e = c.recv().await;
            log.send(Ev::Trapped(e.reason.clone()));
            e.reason
        }
    })
}

rt_test!(
    a_shutdown_set_on_a_spec_outlasts_a_later_kind,
    |rt: &Runtime| {
        // BrutalKill set before or after the kind: the child is killed, never asked to
        // shut down (a kind's default would have sent `shutdown`).
        let r = rt.block_on(|mut cx: Context<Ev>| async move {
            let log = cx.pid();
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(
                    trapping("before", log)
                        .shutdown(Shutdown::BrutalKill)
                        .kind(ChildKind::Supervisor),
                )
                .child(
                    trapping("after", log)
                        .kind(ChildKind::Supervisor)
                        .shutdown(Shutdown::BrutalKill),
                )
                .child(trapping("default", log).kind(ChildKind::Supervisor));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            // A process child is not waited for at its start: until its first poll it
            // does not trap exits, and a shutdown then ends it untrapped.
            for _ in 0..3 {
                cx.recv_match(|e| matches!(e, Ev::Trapping)).await;
            }
            let mut reasons = Vec::new();
            for c in top.which_children().await.unwrap() {
                let pid = c.pid.unwrap();
                let m = cx.monitor(pid);
                top.terminate_child(&c.id).await.unwrap();
                let mut trapped = None;
                loop {
                    match cx.recv().await {
                        Ev::Trapped(r) => trapped = Some(r),
                        Ev::Down(d) if d.reference == m => {
                            reasons.push((trapped.take(), d.reason));
                            break;
                        }
                        Ev::Down(_) | Ev::Trapping => {}
                    }
                }
            }
            reasons
        });
        assert_eq!(
            r.unwrap(),
            vec![
                (None, ExitReason::Killed),
                (None, ExitReason::Killed),
                (Some(ExitReason::Shutdown), ExitReason::Shutdown)
            ]
        );
    }
);

/// Echoes what it reads until the peer closes.
async fn echo(_: Context<()>, mut s: TcpStream) {
    let mut buf = [0u8; 64];
    while let Ok(n @ 1..) = s.read(&mut buf).await {
        if s.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
}

async fn echoes(addr: SocketAddr, what: &[u8]) -> bool {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(what).await.unwrap();
    let mut back = vec![0u8; what.len()];
    c.read_exact(&mut back).await.unwrap();
    back == what
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

rt_test!(
    a_supervised_acceptor_pool_is_a_supervisor_child_that_serves,
    |rt: &Runtime| {
        for acceptors in [1, 4] {
            let r = rt.block_on(move |cx: Context<Ev>| async move {
                let (pool, listening) =
                    AcceptorPool::child_spec("pool", any_port(), acceptors, echo);
                let before = listening.get();
                let spec = SupervisorSpec::new(Strategy::OneForOne).child(pool);
                let top = supervisor::start_link(&cx, spec).await.unwrap();
                let addr = listening.get().unwrap();
                let mut served = 0;
                for i in 0..10u8 {
                    served += usize::from(echoes(addr, &[i; 3]).await);
                }
                let pool: SupervisorRef =
                    top.which_children().await.unwrap()[0].supervisor.unwrap();
                let n = pool.which_children().await.unwrap().len();
                let counts = top.count_children().await.unwrap();
                top.stop().await.unwrap();
                (before, addr.port() != 0, served, n, counts.supervisors)
            });
            assert_eq!(r.unwrap(), (None, true, 10, acceptors, 1));
        }
    }
);

rt_test!(
    a_restarted_acceptor_pool_listens_again_on_the_same_address,
    |rt: &Runtime| {
        for acceptors in [1, 4] {
            let r = rt.block_on(move |mut cx: Context<Ev>| async move {
                let (pool, listening) =
                    AcceptorPool::child_spec("pool", any_port(), acceptors, echo);
                let spec = SupervisorSpec::new(Strategy::OneForOne).child(pool);
                let top = supervisor::start_link(&cx, spec).await.unwrap();
                let addr = listening.get().unwrap();
                let mut held = TcpStream::connect(addr).await.unwrap();
                held.write_all(b"x").await.unwrap();
                held.read_exact(&mut [0u8; 1]).await.unwrap();
                // The pool crashes (killed): its parent starts it again.
                let first = top.which_children().await.unwrap()[0].pid.unwrap();
                kill(&mut cx, first).await;
                let second = top.which_children().await.unwrap()[0].pid.unwrap();
                // Its connections went with it; new ones are served at the same address.
                let end = held.read(&mut [0u8; 1]).await.map_err(|e| e.kind());
                let ended = matches!(end, Ok(0) | Err(ErrorKind::ConnectionReset));
                let served = echoes(addr, b"again").await;
                // Stopped by its parent and started again by request: the same.
                top.terminate_child("pool").await.unwrap();
                let third = top.restart_child("pool").await.unwrap();
                let served_after_restart = echoes(addr, b"third").await;
                (
                    second != first && third != second,
                    ended,
                    served,
                    served_after_restart,
                    listening.get() == Some(addr),
                )
            });
            assert_eq!(r.unwrap(), (true, true, true, true, true));
        }
    }
);

rt_test!(
    a_supervised_acceptor_pool_whose_address_is_taken_fails_to_start,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let taken = std::net::TcpListener::bind(any_port()).unwrap();
            let (pool, listening) =
                AcceptorPool::child_spec("pool", taken.local_addr().unwrap(), 2, echo);
            let top = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne))
                .await
                .unwrap();
            let started = top.start_child(pool).await;
            let kind = match started {
                Err(supervisor::ChildError::StartFailed(r)) => {
                    r.downcast_ref::<std::io::Error>().map(|e| e.kind())
                }
                other => panic!("{other:?}"),
            };
            (kind, listening.get())
        });
        assert_eq!(r.unwrap(), (Some(ErrorKind::AddrInUse), None));
    }
);
