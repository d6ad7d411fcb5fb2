//! Rule: a panic in user code, in any callback the runtime calls, ends at most the
//! process it belongs to (with `ExitReason::Panic`) or loses only the one notification
//! it was building; it never takes a worker, the timer thread or the runtime with it.
//! (Panics in the runtime's own code abort instead: `unwind.rs`.) The runtime is checked
//! to go on after each one, on 1 worker too, where a lost worker would hang the test.

#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::{Context, Down, Exit, ExitReason, Keyed, Runtime};

const BOUND: Duration = Duration::from_secs(30);

fn panic_reason(msg: &str) -> ExitReason {
    ExitReason::Panic(msg.into())
}

/// Spawns `child` monitored and returns the reason its `Down` carries.
fn exit_reason_of<F, Fut>(rt: &Runtime, child: F) -> ExitReason
where
    F: FnOnce(Context<u32>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    rt.block_on(move |mut cx: Context<Down>| async move {
        cx.spawn_monitor(child);
        cx.recv_timeout(BOUND).await.expect("a Down").reason
    })
    .unwrap()
}

fn the_runtime_goes_on(rt: &Runtime) {
    assert_eq!(rt.block_on(|_: Context<()>| async { 42 }), Ok(42));
}

rt_test!(a_panic_in_a_process_is_its_exit_reason, |rt: &Runtime| {
    let r = exit_reason_of(rt, |_| async { panic!("in poll") });
    assert_eq!(r, panic_reason("in poll"));
    the_runtime_goes_on(rt);
});

rt_test!(
    a_panic_in_a_spawn_closure_is_the_spawners_exit_reason,
    |rt: &Runtime| {
        let r = exit_reason_of(rt, |cx| async move {
            let _: otter::Pid<()> =
                cx.spawn(|_: Context<()>| -> std::future::Ready<()> { panic!("in closure") });
        });
        assert_eq!(r, panic_reason("in closure"));
        the_runtime_goes_on(rt);
    }
);

rt_test!(
    a_panic_in_a_selective_receives_predicate_is_its_exit_reason,
    |rt: &Runtime| {
        let r = exit_reason_of(rt, |mut cx| async move {
            cx.pid().send(1);
            cx.recv_match(|_| panic!("in predicate")).await;
        });
        assert_eq!(r, panic_reason("in predicate"));
        the_runtime_goes_on(rt);
    }
);

struct BadKey;
impl Keyed for BadKey {
    type Key = u32;
    fn key(&self) -> Option<u32> {
        panic!("in key")
    }
}

rt_test!(
    a_panic_in_a_keyed_messages_key_is_its_exit_reason,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<Down>| async move {
                cx.spawn_monitor(|mut c: Context<BadKey>| async move {
                    c.pid().send(BadKey);
                    c.recv_key(&7).await;
                });
                cx.recv_timeout(BOUND).await.expect("a Down").reason
            })
            .unwrap();
        assert_eq!(r, panic_reason("in key"));
        the_runtime_goes_on(rt);
    }
);

/// Panics when dropped: held by a future that is dropped at its exit.
struct PanicOnDrop;
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("in the future's drop");
    }
}

rt_test!(
    a_panic_dropping_a_future_keeps_the_exit_reason,
    |rt: &Runtime| {
        // Killed while it waits: its future is dropped by the exit, and the drop panics.
        let r = rt
            .block_on(|mut cx: Context<Down>| async move {
                let (child, _) = cx.spawn_monitor(|mut c: Context<()>| async move {
                    let _bomb = PanicOnDrop;
                    c.recv().await;
                });
                cx.exit(child, ExitReason::Kill);
                cx.recv_timeout(BOUND).await.expect("a Down").reason
            })
            .unwrap();
        assert_eq!(
            r,
            ExitReason::Killed,
            "the exit signal's reason, not the drop's"
        );
        the_runtime_goes_on(rt);
    }
);

/// A watcher type whose `From<Down>` panics for one reason.
enum Watch {
    Down(Down),
}
impl From<Down> for Watch {
    fn from(d: Down) -> Watch {
        if d.reason == ExitReason::Shutdown {
            panic!("in From<Down>");
        }
        Watch::Down(d)
    }
}

rt_test!(a_panic_in_from_down_loses_only_that_down, |rt: &Runtime| {
    let r = rt
        .block_on(|mut cx: Context<Watch>| async move {
            // Its `Down` cannot be built: lost, nothing else.
            let (a, _) = cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
            cx.exit(a, ExitReason::Shutdown);
            let (_b, _) = cx.spawn_monitor(|_: Context<()>| async {});
            let Watch::Down(d) = cx.recv_timeout(BOUND).await.expect("b's Down");
            d.reason
        })
        .unwrap();
    assert_eq!(r, ExitReason::Normal);
    the_runtime_goes_on(rt);
});

/// A trapping process's type whose `From<Exit>` panics for one reason.
enum Trap {
    Exit(Exit),
}
impl From<Exit> for Trap {
    fn from(e: Exit) -> Trap {
        if e.reason == ExitReason::Shutdown {
            panic!("in From<Exit>");
        }
        Trap::Exit(e)
    }
}

rt_test!(a_panic_in_from_exit_loses_only_that_exit, |rt: &Runtime| {
    let r = rt
        .block_on(|mut cx: Context<Trap>| async move {
            cx.trap_exit(true);
            let me = cx.pid();
            cx.exit(me, ExitReason::Shutdown);
            cx.exit(me, ExitReason::Normal);
            let Trap::Exit(e) = cx.recv_timeout(BOUND).await.expect("the second Exit");
            e.reason
        })
        .unwrap();
    assert_eq!(r, ExitReason::Normal);
    the_runtime_goes_on(rt);
});

/// A message whose `Drop` panics, dropped by the runtime: a `send_after` to a process
/// that has exited (cancelled at once), or to one that exits before the deadline.
struct Bomb;
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a message's drop on the timer thread");
    }
}

/// A runtime dropped with a timer still pending, whose message panics when dropped:
/// the shutdown drops it under a catch and finishes.
#[test]
fn a_panic_dropping_a_pending_timers_message_spares_the_runtimes_shutdown() {
    for threads in [1, support::MANY] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let live = rt.handle().spawn(|mut c: Context<Bomb>| async move {
            drop(c.recv().await);
        });
        rt.block_on(move |cx: Context<()>| async move {
            // Two, so that the second drop does not happen while the first unwinds.
            cx.send_after(live, Bomb, Duration::from_secs(3600));
            cx.send_after(live, Bomb, Duration::from_secs(3600));
        })
        .unwrap();
        drop(rt);
    }
}

rt_test!(
    a_panic_dropping_a_timers_message_spares_the_timer_thread,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<u8>| async move {
                let gone: otter::Pid<Bomb> = cx.spawn(|_: Context<Bomb>| async {});
                while !gone.has_exited() {
                    cx.yield_now().await;
                }
                cx.send_after(gone, Bomb, Duration::from_millis(1));
                let leaving = cx.spawn(|mut c: Context<Bomb>| async move {
                    c.recv().await;
                });
                cx.send_after(leaving, Bomb, Duration::from_secs(3600));
                cx.exit(leaving, ExitReason::Kill);
                // Timers after them still fire, and both processes went on.
                cx.send_after(cx.pid(), 9, Duration::from_millis(5));
                cx.recv_timeout(BOUND).await
            })
            .unwrap();
        assert_eq!(r, Some(9));
        the_runtime_goes_on(rt);
    }
);
