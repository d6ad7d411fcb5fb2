//! Rules of monitors (reference manual, "Monitors"; `erlang:monitor/2`,
//! `erlang:demonitor/2`): a `Down` carries the exit reason; monitoring a process that
//! does not exist gives `Noproc` at once; monitors are independent; `demonitor` stops
//! one, with `flush` also removing a delivered `Down`; and the `Down` comes after every
//! message the monitored process sent to the watcher.

#[path = "support/rt.rs"]
mod support;

use std::collections::HashSet;

use otter::{Context, Down, DownMessage, ExitReason, MonitorRef, Runtime};

#[derive(Debug)]
enum Msg {
    Down(Down),
    Data(u32),
}

impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}

impl DownMessage for Msg {
    fn as_down(&self) -> Option<&Down> {
        match self {
            Msg::Down(d) => Some(d),
            Msg::Data(_) => None,
        }
    }
}

async fn next_down(cx: &mut Context<Msg>) -> Down {
    match cx.recv_match(|m| matches!(m, Msg::Down(_))).await {
        Msg::Down(d) => d,
        Msg::Data(_) => unreachable!(),
    }
}

fn failing() {
    panic!("crash");
}

rt_test!(down_carries_the_exit_reason, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        let normal = cx.spawn(|_: Context<()>| async {});
        let m1 = cx.monitor(normal);
        let crashed = cx.spawn(|mut c: Context<()>| async move {
            c.recv().await;
            failing()
        });
        let m2 = cx.monitor(crashed);
        crashed.send(());
        let errored = cx.spawn(|_: Context<()>| async { ExitReason::Shutdown });
        let m3 = cx.monitor(errored);
        let mut got = Vec::new();
        for _ in 0..3 {
            let d = next_down(&mut cx).await;
            got.push((d.reference, d.reason));
        }
        got.sort_by_key(|(r, _)| *r);
        let mut want = vec![
            (m1, ExitReason::Normal),
            (m2, ExitReason::Panic("crash".into())),
            (m3, ExitReason::Shutdown),
        ];
        want.sort_by_key(|(r, _)| *r);
        // A process that exited before `monitor` gives `Noproc` instead of `Normal`.
        got.iter()
            .zip(&want)
            .all(|((gr, g), (wr, w))| gr == wr && (g == w || *g == ExitReason::Noproc))
    });
    assert!(r.unwrap());
});

rt_test!(
    monitoring_a_dead_process_gives_noproc_at_once,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let child = cx.spawn(|_: Context<()>| async {});
            while !child.has_exited() {
                cx.yield_now().await;
            }
            let m = cx.monitor(child);
            // Already in the mailbox: no waiting.
            let d = cx.try_recv().map(|m| match m {
                Msg::Down(d) => d,
                Msg::Data(_) => unreachable!(),
            });
            d.map(|d| (d.reference == m, d.pid == child.id(), d.reason))
        });
        assert_eq!(r.unwrap(), Some((true, true, ExitReason::Noproc)));
    }
);

rt_test!(monitors_are_independent, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        let child = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
        let a = cx.monitor(child);
        let b = cx.monitor(child);
        let c = cx.monitor(child);
        assert!(a != b && b != c);
        assert!(cx.demonitor(b));
        assert!(!cx.demonitor(b), "a stopped monitor is not active");
        child.send(());
        let mut refs: HashSet<MonitorRef> = HashSet::new();
        refs.insert(next_down(&mut cx).await.reference);
        refs.insert(next_down(&mut cx).await.reference);
        cx.pid().send(Msg::Data(0));
        let rest = cx.recv().await;
        (refs == HashSet::from([a, c]), matches!(rest, Msg::Data(0)))
    });
    assert_eq!(r.unwrap(), (true, true));
});

rt_test!(demonitor_flush_removes_a_delivered_down, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        let child = cx.spawn(|_: Context<()>| async {});
        let m = cx.monitor(child);
        while !child.has_exited() {
            cx.yield_now().await;
        }
        let active = cx.demonitor_flush(m);
        cx.pid().send(Msg::Data(7));
        (
            active,
            matches!(cx.recv().await, Msg::Data(7)),
            cx.try_recv().is_none(),
        )
    });
    assert_eq!(r.unwrap(), (false, true, true));
});

rt_test!(
    down_comes_after_the_last_message_of_the_monitored_process,
    |rt: &Runtime| {
        const N: u32 = 5_000;
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let child = cx.spawn(move |mut c: Context<()>| async move {
                c.recv().await;
                for i in 0..N {
                    me.send(Msg::Data(i));
                }
            });
            cx.monitor(child);
            child.send(());
            for i in 0..N {
                match cx.recv().await {
                    Msg::Data(x) => assert_eq!(x, i),
                    Msg::Down(d) => panic!("Down before message {i}: {d:?}"),
                }
            }
            matches!(cx.recv().await, Msg::Down(_))
        });
        assert!(r.unwrap());
    }
);

rt_test!(
    every_monitored_crash_gives_exactly_one_down,
    |rt: &Runtime| {
        const N: u32 = 2_000;
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let mut refs = HashSet::new();
            for i in 0..N {
                let child = cx.spawn(move |c: Context<()>| async move {
                    if i % 3 == 0 {
                        c.yield_now().await;
                    }
                    if i % 2 == 0 {
                        failing();
                    }
                });
                refs.insert(cx.monitor(child));
            }
            let mut crashes = 0;
            for _ in 0..N {
                let d = next_down(&mut cx).await;
                assert!(refs.remove(&d.reference), "duplicate or unknown Down");
                if matches!(d.reason, ExitReason::Panic(_)) {
                    crashes += 1;
                }
            }
            (refs.is_empty(), crashes, cx.try_recv().is_none())
        });
        let (all, crashes, empty) = r.unwrap();
        assert!(all && empty);
        assert!(crashes <= N / 2);
    }
);

rt_test!(
    a_monitor_is_stopped_only_by_the_process_that_set_it,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            // B gets the reference of A's monitor on it and tries to stop that monitor.
            let b = cx.spawn(move |mut c: Context<MonitorRef>| async move {
                let mref = c.recv().await;
                let stopped = c.demonitor(mref);
                me.send(Msg::Data(u32::from(stopped)));
            });
            let mref = cx.monitor(b);
            b.send(mref);
            // B's demonitor had no effect: it says so, and A's Down still comes (after
            // B's message; the timeout only bounds a failure).
            let answer = match cx.recv().await {
                Msg::Data(x) => x,
                Msg::Down(d) => panic!("Down before B's answer: {d:?}"),
            };
            let down = cx
                .recv_timeout(std::time::Duration::from_secs(5))
                .await
                .map(|m| match m {
                    Msg::Down(d) => (d.reference == mref, d.reason),
                    Msg::Data(x) => panic!("unexpected Data({x})"),
                });
            // A's own demonitor still finds nothing to stop: the monitor has fired.
            (answer, down, cx.demonitor(mref))
        });
        assert_eq!(r.unwrap(), (0, Some((true, ExitReason::Normal)), false));
    }
);

rt_test!(
    a_process_watched_by_many_sends_a_down_to_each_monitor_still_active,
    |rt: &Runtime| {
        // Far more monitors on one process than usual (found by key past a few,
        // `process/bonds/keyed.rs`): demonitor removes exactly its own, in any order, and the
        // exit reaches every other once.
        const N: usize = 300;
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let target = cx.spawn(|mut c: Context<()>| async move {
                c.recv().await;
                ExitReason::Shutdown
            });
            let refs: Vec<MonitorRef> = (0..N).map(|_| cx.monitor(target)).collect();
            let mut kept = HashSet::new();
            // Every other one stopped, from the middle outwards.
            let mut order: Vec<usize> = (0..N).collect();
            order.sort_by_key(|&i| (i as isize - N as isize / 2).abs());
            for i in order {
                if i % 2 == 0 {
                    assert!(cx.demonitor(refs[i]));
                } else {
                    kept.insert(refs[i]);
                }
            }
            target.send(());
            let mut downs = HashSet::new();
            while downs.len() < kept.len() {
                let d = next_down(&mut cx).await;
                assert_eq!(d.reason, ExitReason::Shutdown);
                assert!(downs.insert(d.reference), "one Down per monitor");
            }
            cx.pid().send(Msg::Data(1));
            let next = cx.recv().await;
            (downs == kept, matches!(next, Msg::Data(1)))
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);
