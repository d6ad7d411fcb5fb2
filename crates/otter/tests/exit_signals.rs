//! Rules of exit signals (reference manual, "Processes": "Receiving Exit Signals";
//! `erlang:exit/2`, `process_flag(trap_exit, _)`): the receipt matrix of signal kind ×
//! trap_exit × reason, `kill` → `killed`, `exit(self(), normal)`, the order of a signal
//! after the sender's earlier messages, and the root's reason when it is killed.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Down, Exit, ExitReason, Pid, ProcessId, Runtime};

/// What the test process receives.
#[derive(Debug)]
enum T {
    Ready,
    Trapped(Exit),
    Alive,
    Down(Down),
    Data(u32),
}

impl From<Down> for T {
    fn from(d: Down) -> T {
        T::Down(d)
    }
}

impl From<Exit> for T {
    fn from(e: Exit) -> T {
        T::Trapped(e)
    }
}

/// What the victim receives.
#[derive(Debug)]
enum V {
    Exit(Exit),
    Probe,
}

impl From<Exit> for V {
    fn from(e: Exit) -> V {
        V::Exit(e)
    }
}

/// Reports every trapped exit to `test`, answers probes, never ends by itself.
async fn victim(mut c: Context<V>, trap: bool, test: Pid<T>) {
    c.trap_exit(trap);
    test.send(T::Ready);
    loop {
        match c.recv().await {
            V::Exit(e) => test.send(T::Trapped(e)),
            V::Probe => test.send(T::Alive),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    /// `exit(victim, reason)`.
    ExitCall,
    /// `exit(victim, reason)` from outside any process (`Handle::exit`).
    Handle,
    /// A linked process exits with `reason`.
    Link,
}

#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// The victim exits with this reason.
    Dies(ExitReason),
    /// The victim gets `Exit { reason }` as a message and lives.
    Message(ExitReason),
    /// Nothing happens.
    Ignored,
}

/// The manual's table, written out row by row (not computed by otter's own rule).
fn expected(via: Via, trap: bool, reason: &ExitReason) -> Outcome {
    use ExitReason::*;
    use Outcome::*;
    match (via, trap, reason) {
        // "If Reason is the atom kill ... an untrappable exit signal is sent to Pid,
        // which unconditionally exits with exit reason killed."
        (Via::ExitCall | Via::Handle, _, Kill) => Dies(Killed),
        // A trapping receiver turns every other signal into {'EXIT', From, Reason}.
        (_, true, r) => Message(r.clone()),
        // "If Reason is the atom normal, Pid does not exit" (not trapping).
        (_, false, Normal) => Ignored,
        // Any other reason, not trapping: the receiver exits with it. `kill` arriving
        // through a link is such an ordinary reason.
        (_, false, r) => Dies(r.clone()),
    }
}

fn reasons() -> Vec<ExitReason> {
    vec![
        ExitReason::Normal,
        ExitReason::Shutdown,
        ExitReason::Panic("boom".into()),
        ExitReason::Kill,
        ExitReason::Killed,
    ]
}

rt_test!(
    exit_signal_matrix_of_kind_trap_and_reason,
    |rt: &Runtime| {
        for via in [Via::ExitCall, Via::Handle, Via::Link] {
            for trap in [false, true] {
                for reason in reasons() {
                    let want = expected(via, trap, &reason);
                    let r2 = reason.clone();
                    let dies = matches!(want, Outcome::Dies(_));
                    let h = rt.handle();
                    let got = rt.block_on(move |mut cx: Context<T>| async move {
                        let me = cx.pid();
                        let (v, _) = cx.spawn_monitor(move |c| victim(c, trap, me));
                        assert!(matches!(cx.recv().await, T::Ready));
                        let from: ProcessId = match via {
                            Via::ExitCall => {
                                cx.exit(v, r2.clone());
                                cx.pid().id()
                            }
                            Via::Handle => {
                                h.exit(v, r2.clone());
                                ProcessId::OUTSIDE
                            }
                            Via::Link => {
                                let r3 = r2.clone();
                                let (linker, _) =
                                    cx.spawn_monitor(move |c: Context<()>| async move {
                                        c.link(v);
                                        r3
                                    });
                                // The linker's Down comes after its link signals are
                                // applied (exit order), so the probe below is later.
                                match cx.recv().await {
                                    T::Down(d) if d.pid == linker.id() => {}
                                    other => panic!("unexpected {other:?}"),
                                }
                                linker.id()
                            }
                        };
                        v.send(V::Probe);
                        match cx.recv().await {
                            T::Down(d) => {
                                assert_eq!(d.pid, v.id());
                                Outcome::Dies(d.reason)
                            }
                            T::Trapped(e) => {
                                assert_eq!(e.from, from);
                                assert!(matches!(cx.recv().await, T::Alive));
                                cx.exit(v, ExitReason::Kill);
                                Outcome::Message(e.reason)
                            }
                            // A victim still running its poll when the signal came
                            // may answer first: the exit takes effect at its next
                            // suspension point (`signal.rs`, "When an exit takes
                            // effect"). Its `Down` follows.
                            T::Alive if dies => match cx.recv().await {
                                T::Down(d) => Outcome::Dies(d.reason),
                                other => panic!("unexpected {other:?}"),
                            },
                            T::Alive => {
                                cx.exit(v, ExitReason::Kill);
                                Outcome::Ignored
                            }
                            other => panic!("unexpected {other:?}"),
                        }
                    });
                    assert_eq!(got.unwrap(), want, "via {via:?}, trap {trap}, {reason:?}");
                }
            }
        }
    }
);

rt_test!(
    kill_turns_into_killed_for_linked_processes,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<T>| async move {
            cx.trap_exit(true);
            let me = cx.pid();
            // The victim traps exits too: kill ends it anyway.
            let v = cx.spawn_link(move |c| victim(c, true, me));
            assert!(matches!(cx.recv().await, T::Ready));
            cx.exit(v, ExitReason::Kill);
            match cx.recv().await {
                T::Trapped(e) => (e.from == v.id(), e.reason),
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(r.unwrap(), (true, ExitReason::Killed));
    }
);

rt_test!(
    an_exit_signal_from_a_handle_comes_from_outside_any_process,
    |rt: &Runtime| {
        let h = rt.handle();
        let r = rt.block_on(move |mut cx: Context<T>| async move {
            let me = cx.pid();
            let (trapping, _) = cx.spawn_monitor(move |c| victim(c, true, me));
            assert!(matches!(cx.recv().await, T::Ready));
            let (plain, _) = cx.spawn_monitor(move |c| victim(c, false, me));
            assert!(matches!(cx.recv().await, T::Ready));
            // From a thread that is no process: a shutdown reaches the trapping process
            // as a message from `OUTSIDE`; normal is ignored by the other; kill ends both.
            let h2 = h.clone();
            std::thread::spawn(move || {
                h2.exit(trapping, ExitReason::Shutdown);
                h2.exit(plain, ExitReason::Normal);
            })
            .join()
            .unwrap();
            let trapped = match cx.recv().await {
                T::Trapped(e) => (e.from, e.reason),
                other => panic!("unexpected {other:?}"),
            };
            plain.send(V::Probe);
            let plain_lives = matches!(cx.recv().await, T::Alive);
            h.exit(trapping, ExitReason::Kill);
            h.exit(plain, ExitReason::Kill);
            let dead_at_once = !trapping.is_alive() && !plain.is_alive();
            let mut downs = Vec::new();
            for _ in 0..2 {
                match cx.recv().await {
                    T::Down(d) => downs.push(d.reason),
                    other => panic!("unexpected {other:?}"),
                }
            }
            (trapped, plain_lives, dead_at_once, downs)
        });
        assert_eq!(
            r.unwrap(),
            (
                (ProcessId::OUTSIDE, ExitReason::Shutdown),
                true,
                true,
                vec![ExitReason::Killed, ExitReason::Killed]
            )
        );
    }
);

fn not_reached() {
    unreachable!("the exit signal acts at the next suspension point");
}

rt_test!(exit_self_normal_ends_the_caller, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<T>| async move {
        let (child, _) = cx.spawn_monitor(|c: Context<u8>| async move {
            c.exit(c.pid(), ExitReason::Normal);
            c.yield_now().await;
            not_reached();
        });
        match cx.recv().await {
            T::Down(d) => (d.pid == child.id(), d.reason),
            other => panic!("unexpected {other:?}"),
        }
    });
    assert_eq!(r.unwrap(), (true, ExitReason::Normal));
});

rt_test!(exit_normal_to_another_process_is_ignored, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<T>| async move {
        let me = cx.pid();
        let v = cx.spawn(move |c| victim(c, false, me));
        assert!(matches!(cx.recv().await, T::Ready));
        cx.exit(v, ExitReason::Normal);
        v.send(V::Probe);
        let alive = matches!(cx.recv().await, T::Alive);
        cx.exit(v, ExitReason::Kill);
        alive
    });
    assert!(r.unwrap());
});

rt_test!(
    exit_signal_comes_after_the_senders_earlier_messages,
    |rt: &Runtime| {
        const N: u32 = 2_000;
        let r = rt.block_on(|mut cx: Context<T>| async move {
            cx.trap_exit(true);
            let me = cx.pid();
            // Through a link: the child's messages, then its exit signal.
            let child = cx.spawn_link(move |_: Context<()>| async move {
                for i in 0..N {
                    me.send(T::Data(i));
                }
                ExitReason::Shutdown
            });
            for i in 0..N {
                match cx.recv().await {
                    T::Data(x) => assert_eq!(x, i),
                    other => panic!("{other:?} before message {i}"),
                }
            }
            let linked = matches!(cx.recv().await, T::Trapped(e) if e.from == child.id());
            // Through `exit`: a sender's messages, then its `exit` call.
            let sender = cx.spawn(move |c: Context<()>| async move {
                for i in 0..N {
                    me.send(T::Data(i));
                }
                c.exit(me, ExitReason::Shutdown);
            });
            for i in 0..N {
                match cx.recv().await {
                    T::Data(x) => assert_eq!(x, i),
                    other => panic!("{other:?} before message {i}"),
                }
            }
            let called = matches!(cx.recv().await, T::Trapped(e) if e.from == sender.id());
            (linked, called)
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);

rt_test!(
    a_waiting_process_is_ended_by_a_signal_at_once,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<T>| async move {
            // Blocked in a receive with no timeout: the signal schedules it to exit.
            let (child, _) = cx.spawn_monitor(|mut c: Context<u8>| async move {
                c.recv().await;
            });
            cx.exit(child, ExitReason::Shutdown);
            match cx.recv().await {
                T::Down(d) => d.reason,
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(r.unwrap(), ExitReason::Shutdown);
    }
);

rt_test!(the_first_signal_decides_the_reason, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<T>| async move {
        let (child, _) = cx.spawn_monitor(|mut c: Context<u8>| async move {
            c.recv().await;
        });
        cx.exit(child, ExitReason::Shutdown);
        cx.exit(child, ExitReason::Kill);
        match cx.recv().await {
            T::Down(d) => d.reason,
            other => panic!("unexpected {other:?}"),
        }
    });
    assert_eq!(r.unwrap(), ExitReason::Shutdown);
});

rt_test!(a_killed_root_reports_the_signal_reason, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u8>| async move {
        let me = cx.pid();
        cx.spawn(move |c: Context<()>| async move {
            c.exit(me, ExitReason::ShutdownWith("enough".into()));
        });
        loop {
            cx.recv().await;
        }
    });
    assert_eq!(r, Err::<(), _>(ExitReason::ShutdownWith("enough".into())));
});

/// A process whose mailbox never runs dry does not wait in a receive, and when nothing
/// else waits for its worker it goes on past its budget without yielding (the worker's
/// `renew_turn`); an exit signal still stops it at a budget's end, not when its mailbox
/// is empty. Two workers: the victim drains a million messages on one while the killer
/// spins on the other until the victim has started, then kills it: before it drained
/// them all.
#[test]
fn an_exit_signal_stops_a_process_whose_mailbox_never_runs_dry() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const BACKLOG: u64 = 1_000_000;
    let rt = Runtime::builder().threads(2).build().unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let (s2, r2) = (started.clone(), received.clone());
    let r = rt.block_on(move |mut cx: Context<T>| async move {
        let (victim, _) = cx.spawn_monitor(move |mut c: Context<u64>| async move {
            for i in 0..BACKLOG {
                c.pid().send(i);
            }
            s2.store(true, Ordering::SeqCst);
            // Never ends by itself: no message is `u64::MAX`. Each message takes a
            // little work, so that the backlog lasts seconds, not the milliseconds a
            // descheduled killer thread might lose.
            while c.recv().await != u64::MAX {
                for k in 0..1_000u32 {
                    std::hint::black_box(k);
                }
                r2.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Spin (no await): the victim was queued on this worker, so the other one takes
        // it, and it runs alone there.
        support::eventually(
            "the victim starts",
            std::time::Duration::from_secs(20),
            || started.load(Ordering::SeqCst),
        );
        cx.exit(victim, ExitReason::Kill);
        let T::Down(d) = cx.recv().await else {
            panic!("expected the victim's Down")
        };
        (d.reason, received.load(Ordering::SeqCst))
    });
    let (reason, got) = r.unwrap();
    assert_eq!(reason, ExitReason::Killed);
    assert!(
        got < BACKLOG,
        "the victim received all {BACKLOG} messages before the signal stopped it"
    );
}
