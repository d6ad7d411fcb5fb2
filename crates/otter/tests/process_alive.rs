//! `is_alive` is Erlang's `is_process_alive/1`: true while the process exists and is
//! not exiting. It is false from the moment the exit begins, before any link or
//! monitor is signalled, so a watcher that has the `Down` sees it false; and false once
//! an exit signal that will end the process has been sent, so a process that sent
//! `kill` sees it false at once (OTP's guarantee for `exit(P, kill)` followed by
//! `is_process_alive(P)`). `has_exited` is true once the exit is over: the pid no longer
//! resolves.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Down, Exit, ExitReason, Runtime};

#[derive(Debug)]
enum Msg {
    Down(Down),
    Exit(#[allow(dead_code)] Exit),
    Ready,
}

impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}

impl From<Exit> for Msg {
    fn from(e: Exit) -> Msg {
        Msg::Exit(e)
    }
}

/// Rounds per test: the window the rule closes (the end of an exit, after its `Down`
/// is sent) is a few hundred nanoseconds wide, so a watcher on another worker needs
/// many tries to land in it.
const ROUNDS: usize = 20_000;

/// The next message, looked for without suspending the watcher on its mailbox: it
/// yields between looks, so on several workers it keeps running while the exit that
/// sends the message goes on elsewhere (woken by the message, it would instead run
/// after that exit on the same worker, most of the time).
async fn next(cx: &mut Context<Msg>) -> Msg {
    loop {
        if let Some(m) = cx.try_recv() {
            return m;
        }
        cx.yield_now().await;
    }
}

rt_test!(
    is_alive_is_false_once_the_down_has_arrived,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let mut seen_alive = 0;
            for _ in 0..ROUNDS {
                let (child, _) =
                    cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
                child.send(());
                let Msg::Down(_) = next(&mut cx).await else {
                    unreachable!()
                };
                if child.is_alive() {
                    seen_alive += 1;
                }
            }
            seen_alive
        });
        assert_eq!(r.unwrap(), 0, "alive after its Down, in {ROUNDS} rounds");
    }
);

rt_test!(
    is_alive_is_false_once_a_linked_exit_signal_has_arrived,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            cx.trap_exit(true);
            let mut seen_alive = 0;
            for _ in 0..ROUNDS {
                let child = cx.spawn_link(|mut c: Context<()>| async move {
                    c.recv().await;
                    ExitReason::Shutdown
                });
                child.send(());
                let Msg::Exit(_) = next(&mut cx).await else {
                    unreachable!()
                };
                if child.is_alive() {
                    seen_alive += 1;
                }
            }
            seen_alive
        });
        assert_eq!(
            r.unwrap(),
            0,
            "alive after its exit signal, in {ROUNDS} rounds"
        );
    }
);

rt_test!(
    is_alive_is_false_as_soon_as_a_kill_is_sent,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let (child, _) = cx.spawn_monitor(|mut c: Context<Msg>| async move {
                c.trap_exit(true);
                loop {
                    c.recv().await;
                }
            });
            let before = child.is_alive();
            cx.exit(child, ExitReason::Kill);
            let after = child.is_alive();
            let Msg::Down(d) = cx.recv().await else {
                unreachable!()
            };
            (before, after, d.reason)
        });
        assert_eq!(r.unwrap(), (true, false, ExitReason::Killed));
    }
);

rt_test!(
    is_alive_stays_true_after_a_signal_the_process_traps_or_ignores,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let trapping = cx.spawn(move |mut c: Context<Msg>| async move {
                c.trap_exit(true);
                me.send(Msg::Ready);
                loop {
                    c.recv().await;
                }
            });
            let plain = cx.spawn(|mut c: Context<Msg>| async move {
                loop {
                    c.recv().await;
                }
            });
            let Msg::Ready = cx.recv().await else {
                unreachable!()
            };
            cx.exit(plain, ExitReason::Normal);
            cx.exit(trapping, ExitReason::Shutdown);
            let alive = (trapping.is_alive(), plain.is_alive());
            cx.exit(trapping, ExitReason::Kill);
            cx.exit(plain, ExitReason::Kill);
            alive
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);

rt_test!(
    has_exited_means_sends_fail_and_monitors_get_noproc_at_once,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let mut ok = true;
            for _ in 0..1000 {
                let child = cx.spawn(|mut c: Context<u8>| async move {
                    c.recv().await;
                });
                ok &= !child.has_exited();
                child.send(0);
                while !child.has_exited() {
                    cx.yield_now().await;
                }
                ok &= !child.is_alive() && child.try_send(1).is_err();
                let m = cx.monitor(child);
                ok &= matches!(
                    cx.try_recv(),
                    Some(Msg::Down(d)) if d.reference == m && d.reason == ExitReason::Noproc
                );
            }
            ok
        });
        assert!(r.unwrap());
    }
);
