//! Stopping a tree from the process that started it (OTP's `supervisor:stop/1`,
//! `gen_server:stop(Sup, normal, infinity)`): the supervisor stops its children in
//! reverse start order, exits `Normal`, and its linked caller, which does not trap
//! exits, goes on.

#[path = "support/rt.rs"]
mod support;

use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Down, ExitReason, Runtime};

/// What the test process hears: its children's `Down`s.
#[derive(Debug)]
struct Ev(Down);

impl From<Down> for Ev {
    fn from(d: Down) -> Ev {
        Ev(d)
    }
}

fn waiter(id: &str) -> ChildSpec {
    ChildSpec::process(id.to_string(), || {
        |mut c: Context<()>| async move { c.recv().await }
    })
}

/// Starts a tree of `n` workers linked to the caller, stops it with `stop`, and returns
/// the workers' exit reasons in the order their `Down`s came, then 7: the root gets
/// there only if the stop returned to it.
fn stop_tree_from_its_starter<F, Fut>(
    rt: &Runtime,
    n: usize,
    stop: F,
) -> Result<(Vec<ExitReason>, u8), ExitReason>
where
    F: FnOnce(supervisor::SupervisorRef) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    rt.block_on(move |mut cx: Context<Ev>| async move {
        let mut spec = SupervisorSpec::new(Strategy::OneForOne);
        for i in 0..n {
            spec = spec.child(waiter(&format!("w{i}")));
        }
        let top = supervisor::start_link(&cx, spec).await.unwrap();
        let mut watched = Vec::new();
        for c in top.which_children().await.unwrap() {
            watched.push(cx.monitor(c.pid.unwrap()));
        }
        stop(top).await;
        let mut reasons = Vec::new();
        for _ in 0..n {
            let Ev(d) = cx.recv().await;
            let i = watched.iter().position(|m| *m == d.reference).unwrap();
            reasons.push((i, d.reason));
        }
        // Stopped right to left.
        let order: Vec<usize> = reasons.iter().map(|r| r.0).collect();
        assert_eq!(order, (0..n).rev().collect::<Vec<_>>());
        (reasons.into_iter().map(|r| r.1).collect(), 7)
    })
}

rt_test!(
    stopping_a_tree_returns_to_the_process_that_started_it,
    |rt: &Runtime| {
        for n in [1, 5] {
            let r = stop_tree_from_its_starter(rt, n, |top| async move {
                assert_eq!(top.stop().await, Ok(()));
            });
            assert_eq!(r, Ok((vec![ExitReason::Shutdown; n], 7)));
        }
    }
);

rt_test!(
    stopping_a_tree_with_shutdown_ends_a_linked_caller_that_does_not_trap,
    |rt: &Runtime| {
        // OTP's rule (`gen_server:stop(Sup, shutdown, infinity)` from the process that
        // started it): the supervisor's exit signal reaches its linked caller, which
        // does not trap exits, and ends it. Why `SupervisorRef::stop` uses `Normal`.
        for n in [1, 5] {
            let r = stop_tree_from_its_starter(rt, n, |top| async move {
                let _ = top.server().stop(ExitReason::Shutdown, None).await;
            });
            assert_eq!(r, Err(ExitReason::Shutdown));
        }
    }
);

rt_test!(
    stopping_a_tree_gives_a_trapping_starter_a_normal_exit,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<otter::Exit>| async move {
            cx.trap_exit(true);
            let spec = SupervisorSpec::new(Strategy::OneForAll)
                .child(waiter("a"))
                .child(waiter("b"));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let stopped = top.stop().await;
            let exit = cx.recv().await;
            let again = top.stop().await;
            (stopped, exit.from == top.id(), exit.reason, again)
        });
        assert_eq!(
            r.unwrap(),
            (
                Ok(()),
                true,
                ExitReason::Normal,
                Err(otter::server::CallError::Noproc)
            )
        );
    }
);
