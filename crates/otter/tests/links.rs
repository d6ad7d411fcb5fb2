//! Rules of links (reference manual, "Processes": "Links"; `erlang:link/1`,
//! `unlink/1`, `spawn_link/1`): bidirectional, idempotent, removed by `unlink` (after
//! which no signal through it arrives), `link` to a dead process gives `noproc`, a crash
//! propagates along a chain of links with its reason, and `spawn_link` never loses the
//! child's exit.

#[path = "support/rt.rs"]
mod support;

use std::collections::HashMap;

use otter::{Context, Down, Exit, ExitReason, ProcessId, Runtime};

#[derive(Debug)]
enum M {
    Exit(Exit),
    Down(Down),
    Go,
    Data(u32),
}

impl From<Exit> for M {
    fn from(e: Exit) -> M {
        M::Exit(e)
    }
}

impl From<Down> for M {
    fn from(d: Down) -> M {
        M::Down(d)
    }
}

fn crash() {
    panic!("link crash");
}

rt_test!(links_are_bidirectional, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<M>| async move {
        let me = cx.pid();
        let mut reasons = Vec::new();
        // `b` calls `link(a)`; first `a` crashes (signal towards the caller of `link`),
        // then the other way round (towards its target).
        for crash_target in [true, false] {
            let a = cx.spawn(|mut c: Context<M>| async move {
                if matches!(c.recv().await, M::Go) {
                    crash()
                }
            });
            let b = cx.spawn(move |mut c: Context<M>| async move {
                c.link(a);
                me.send(M::Go);
                if matches!(c.recv().await, M::Go) {
                    crash()
                }
            });
            assert!(matches!(cx.recv().await, M::Go));
            let (crasher, other) = if crash_target {
                (a.id(), b)
            } else {
                (b.id(), a)
            };
            let m = cx.monitor(other);
            let mc = cx.monitor(crasher);
            if crash_target {
                a.send(M::Go)
            } else {
                b.send(M::Go)
            }
            // Both end; the two `Down`s come in either order (the crasher's exit signal
            // reaches the other before the crasher's own `Down` is sent, and the
            // other's exit runs on its own worker).
            let (mut linked, mut crashed) = (None, None);
            while linked.is_none() || crashed.is_none() {
                match cx.recv().await {
                    M::Down(d) if d.reference == m => linked = Some(d.reason),
                    M::Down(d) if d.reference == mc => crashed = Some(d.reason),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(crashed, Some(ExitReason::Panic("link crash".into())));
            reasons.extend(linked);
        }
        reasons
    });
    let crash = ExitReason::Panic("link crash".into());
    assert_eq!(r.unwrap(), vec![crash.clone(), crash]);
});

rt_test!(link_is_idempotent, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<M>| async move {
        cx.trap_exit(true);
        let child = cx.spawn(|mut c: Context<M>| async move {
            c.recv().await;
            ExitReason::Shutdown
        });
        cx.link(child);
        cx.link(child);
        cx.link(child);
        // One `unlink` removes the one link: no signal at all.
        cx.unlink(child);
        child.send(M::Go);
        let (_, mref) = cx.spawn_monitor(|_: Context<()>| async {});
        // Wait for the child's end through a second, unrelated monitor of it.
        let m2 = cx.monitor(child);
        let mut downs = 0;
        while downs < 2 {
            match cx.recv().await {
                M::Down(d) if d.reference == mref || d.reference == m2 => downs += 1,
                other => panic!("no signal expected, got {other:?}"),
            }
        }
        // And twice linked gives one signal.
        let again = cx.spawn(|mut c: Context<M>| async move {
            c.recv().await;
            ExitReason::Shutdown
        });
        cx.link(again);
        cx.link(again);
        again.send(M::Go);
        let m3 = cx.monitor(again);
        let mut exits = 0;
        loop {
            match cx.recv().await {
                M::Exit(e) if e.from == again.id() => exits += 1,
                M::Down(d) if d.reference == m3 => break,
                other => panic!("{other:?}"),
            }
        }
        (exits, cx.try_recv().is_none())
    });
    assert_eq!(r.unwrap(), (1, true));
});

rt_test!(unlink_stops_the_signals_of_the_link, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<M>| async move {
        // Not trapping: a signal through the link would end us.
        for _ in 0..200 {
            let child = cx.spawn_link(|mut c: Context<M>| async move {
                c.recv().await;
                crash()
            });
            cx.unlink(child);
            let m = cx.monitor(child);
            child.send(M::Go);
            match cx.recv().await {
                M::Down(d) if d.reference == m => {}
                other => panic!("{other:?}"),
            }
        }
        cx.try_recv().is_none()
    });
    assert!(r.unwrap());
});

rt_test!(link_to_a_dead_process_gives_noproc, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<M>| async move {
        let dead = cx.spawn(|_: Context<()>| async {});
        while !dead.has_exited() {
            cx.yield_now().await;
        }
        // Trapping: the signal is a message.
        cx.trap_exit(true);
        cx.link(dead);
        let trapped = match cx.try_recv() {
            Some(M::Exit(e)) => (e.from == dead.id(), e.reason),
            other => panic!("{other:?}"),
        };
        // Not trapping: the caller exits with noproc.
        let (p, _) = cx.spawn_monitor(move |c: Context<()>| async move {
            c.link(dead);
            c.yield_now().await;
        });
        let down = match cx.recv().await {
            M::Down(d) => (d.pid == p.id(), d.reason),
            other => panic!("{other:?}"),
        };
        (trapped, down)
    });
    assert_eq!(
        r.unwrap(),
        ((true, ExitReason::Noproc), (true, ExitReason::Noproc))
    );
});

rt_test!(a_crash_propagates_along_a_chain_of_links, |rt: &Runtime| {
    const LEN: usize = 300;
    let r = rt.block_on(|mut cx: Context<M>| async move {
        cx.trap_exit(true);
        // Each process spawns the next linked to it; the last crashes.
        fn node(
            mut c: Context<M>,
            left: usize,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
            Box::pin(async move {
                if left == 0 {
                    c.recv().await;
                    crash();
                } else {
                    let next = c.spawn_link(move |c2| node(c2, left - 1));
                    next.send(M::Go);
                    c.recv_match(|_| false).await;
                }
            })
        }
        let head = cx.spawn_link(|c| node(c, LEN));
        match cx.recv().await {
            M::Exit(e) => (e.from == head.id(), e.reason),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(r.unwrap(), (true, ExitReason::Panic("link crash".into())));
});

rt_test!(
    spawn_link_never_reports_noproc_for_a_child_that_exits_at_once,
    |rt: &Runtime| {
        const N: u32 = 2_000;
        let r = rt.block_on(|mut cx: Context<M>| async move {
            cx.trap_exit(true);
            let mut want = HashMap::new();
            for i in 0..N {
                let reason = if i % 2 == 0 {
                    ExitReason::Shutdown
                } else {
                    ExitReason::Normal
                };
                let r2 = reason.clone();
                let child = cx.spawn_link(move |_: Context<()>| async move { r2 });
                want.insert(child.id(), reason);
            }
            for _ in 0..N {
                match cx.recv().await {
                    M::Exit(e) => {
                        let w = want.remove(&e.from).expect("one Exit per child");
                        assert_eq!(e.reason, w);
                    }
                    other => panic!("{other:?}"),
                }
            }
            want.is_empty()
        });
        assert!(r.unwrap());
    }
);

rt_test!(
    linking_to_exiting_processes_gives_exactly_one_exit_each,
    |rt: &Runtime| {
        // Races `link` against the partner's exit: each link ends in exactly one
        // `Exit`, with the partner's reason or `Noproc`.
        const N: u32 = 2_000;
        let r = rt.block_on(|mut cx: Context<M>| async move {
            cx.trap_exit(true);
            let mut pending: HashMap<ProcessId, u32> = HashMap::new();
            for i in 0..N {
                let child = cx.spawn(move |c: Context<()>| async move {
                    if i % 2 == 0 {
                        c.yield_now().await;
                    }
                    ExitReason::Shutdown
                });
                cx.link(child);
                pending.insert(child.id(), i);
            }
            let (mut by_reason, mut noproc) = (0, 0);
            for _ in 0..N {
                match cx.recv().await {
                    M::Exit(e) => {
                        assert!(pending.remove(&e.from).is_some(), "duplicate Exit");
                        match e.reason {
                            ExitReason::Shutdown => by_reason += 1,
                            ExitReason::Noproc => noproc += 1,
                            other => panic!("{other:?}"),
                        }
                    }
                    other => panic!("{other:?}"),
                }
            }
            cx.pid().send(M::Data(0));
            let last = matches!(cx.recv().await, M::Data(0));
            (by_reason + noproc, pending.is_empty(), last)
        });
        assert_eq!(r.unwrap(), (N, true, true));
    }
);

rt_test!(
    a_monitor_set_while_a_linked_process_exits_reports_after_its_exit_signal,
    |rt: &Runtime| {
        // Erlang's `Down` for a monitor set too late comes from the exiting process
        // itself, so it never overtakes the exit signal that process sent first.
        let r = rt.block_on(|mut cx: Context<M>| async move {
            cx.trap_exit(true);
            for round in 0..2_000 {
                let child = cx.spawn_link(|mut c: Context<M>| async move {
                    c.recv().await;
                    ExitReason::Shutdown
                });
                child.send(M::Go);
                // Races with the child's exit: before it, during it, or after it.
                let mref = cx.monitor(child);
                let M::Exit(e) = cx.recv().await else {
                    return Err(format!(
                        "round {round}: the Down came before the exit signal"
                    ));
                };
                assert_eq!((e.from, e.reason), (child.id(), ExitReason::Shutdown));
                match cx.recv().await {
                    M::Down(d) if d.reference == mref => {
                        let expected = [ExitReason::Shutdown, ExitReason::Noproc];
                        assert!(expected.contains(&d.reason), "{:?}", d.reason);
                    }
                    other => return Err(format!("round {round}: {other:?}")),
                }
            }
            Ok(())
        });
        r.unwrap().unwrap();
    }
);

rt_test!(
    a_link_refused_by_an_exiting_process_reports_after_its_down,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<M>| async move {
            cx.trap_exit(true);
            for round in 0..2_000 {
                let (child, mref) = cx.spawn_monitor(|mut c: Context<M>| async move {
                    c.recv().await;
                    ExitReason::Shutdown
                });
                child.send(M::Go);
                // Races with the child's exit: a link before it gives its exit signal,
                // one during or after it `Noproc`, and that after its `Down`.
                cx.link(child);
                let (first, second) = (cx.recv().await, cx.recv().await);
                match (first, second) {
                    (M::Exit(e), M::Down(d)) if e.reason == ExitReason::Shutdown => {
                        assert_eq!((e.from, d.reference), (child.id(), mref));
                    }
                    (M::Down(d), M::Exit(e)) if e.reason == ExitReason::Noproc => {
                        assert_eq!((e.from, d.reference), (child.id(), mref));
                    }
                    other => return Err(format!("round {round}: {other:?}")),
                }
            }
            Ok(())
        });
        r.unwrap().unwrap();
    }
);

rt_test!(
    a_process_linked_to_many_hears_each_exit_and_unlinked_ones_stay_silent,
    |rt: &Runtime| {
        // Far more links than a process usually has (its links are then found by
        // key, `process/bonds/keyed.rs`): each linked child's exit arrives once, with its
        // reason; a child unlinked before it exits sends nothing.
        const N: u32 = 300;
        let r = rt.block_on(|mut cx: Context<M>| async move {
            cx.trap_exit(true);
            let children: Vec<_> = (0..N)
                .map(|i| {
                    cx.spawn_link(move |mut c: Context<M>| async move {
                        c.recv().await;
                        ExitReason::ShutdownWith(i.to_string().into())
                    })
                })
                .collect();
            // Every third unlinked; then all told to exit, newest first.
            for (i, c) in children.iter().enumerate() {
                if i % 3 == 0 {
                    cx.unlink(*c);
                }
            }
            for c in children.iter().rev() {
                c.send(M::Go);
            }
            let ids: HashMap<ProcessId, u32> = children
                .iter()
                .enumerate()
                .map(|(i, c)| (c.id(), i as u32))
                .collect();
            let mut heard = Vec::new();
            let expected = (0..N).filter(|i| i % 3 != 0).count();
            while heard.len() < expected {
                if let M::Exit(e) = cx.recv().await {
                    let i = ids[&e.from];
                    assert_eq!(e.reason, ExitReason::ShutdownWith(i.to_string().into()));
                    heard.push(i);
                }
            }
            // Nothing more: a marker sent to ourselves comes next.
            cx.pid().send(M::Data(7));
            let next = cx.recv().await;
            heard.sort_unstable();
            (heard, matches!(next, M::Data(7)))
        });
        let (heard, nothing_more) = r.unwrap();
        assert_eq!(heard, (0..N).filter(|i| i % 3 != 0).collect::<Vec<_>>());
        assert!(nothing_more);
    }
);
