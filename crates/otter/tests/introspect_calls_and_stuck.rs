//! Rules of introspection's calls and stuck processes (`otter::introspect`, "Calls" and
//! "Stuck processes"): a server lists the processes waiting on its calls, and not once
//! the call has ended (replied or timed out); two servers that call each other show as
//! one deadlock, their other callers outside it; a process inside one long poll shows as stuck while its poll lasts,
//! and one that yields never does.

#[path = "support/call_cycle.rs"]
mod call_cycle;
#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use call_cycle::PeerCall;
use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Runtime};
use support::eventually;

const LIMIT: Duration = Duration::from_secs(10);

/// Keeps its callers waiting until told to answer them all.
struct Holder(Vec<ReplyTo<u32>>);

enum HolderCall {
    Wait(ReplyTo<u32>),
    Release(ReplyTo<u32>),
}

impl Server for Holder {
    type Args = ();
    type Call = HolderCall;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Holder(Vec::new()))
    }
    async fn handle_call(&mut self, call: HolderCall, _: &mut ServerContext<Self>) -> Flow {
        match call {
            HolderCall::Wait(f) => self.0.push(f),
            HolderCall::Release(f) => {
                let n = self.0.len() as u32;
                for w in self.0.drain(..) {
                    w.reply(n);
                }
                f.reply(n);
            }
        }
        Flow::Continue
    }
}

rt_test!(
    a_server_lists_the_processes_waiting_on_its_calls_until_each_call_ends,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<u32>| async move {
            let server = Holder::start(&cx, ()).await.unwrap();
            let me = cx.pid();
            let callers: Vec<_> = (0..3)
                .map(|_| {
                    cx.spawn(move |_: Context<()>| async move {
                        let n = server.call(HolderCall::Wait).await.unwrap();
                        me.send(n);
                    })
                })
                .collect();
            // One more that gives up after a short wait.
            let quitter = cx.spawn(move |_: Context<()>| async move {
                let r = server
                    .call_timeout(HolderCall::Wait, Some(Duration::from_millis(50)))
                    .await;
                assert_eq!(r, Err(CallError::Timeout));
                me.send(99);
            });
            let mut want: Vec<_> = callers.iter().map(|p| p.id()).collect();
            want.push(quitter.id());
            want.sort();
            eventually("all four wait on the server", LIMIT, || {
                let mut got = h.process_info(server.pid()).unwrap().callers;
                got.sort();
                got == want
            });
            assert_eq!(cx.recv().await, 99);
            // The call that timed out no longer waits.
            let mut got = h.process_info(server.pid()).unwrap().callers;
            got.sort();
            want.retain(|&p| p != quitter.id());
            assert_eq!(got, want);
            let n = server.call(HolderCall::Release).await.unwrap();
            assert_eq!(n, 4);
            for _ in 0..3 {
                assert_eq!(cx.recv().await, 4);
            }
            assert!(h.process_info(server.pid()).unwrap().callers.is_empty());
            assert!(h.deadlocks().is_empty());
        })
        .unwrap();
    }
);

rt_test!(
    two_servers_that_call_each_other_show_as_one_deadlock_until_a_timeout_ends_it,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<()>| async move {
            let (a, b) = call_cycle::pair(&cx, Some(Duration::from_secs(2))).await;
            let me = cx.pid();
            let outer = cx.spawn(move |_: Context<()>| async move {
                let _ = a
                    .call_timeout(PeerCall::Ping, Some(Duration::from_secs(5)))
                    .await;
                me.send(());
            });
            let cycle = call_cycle::cycle(a, b);
            let t0 = Instant::now();
            eventually("the cycle shows", LIMIT, || {
                h.deadlocks() == vec![cycle.clone()]
            });
            // The outer caller waits on `a` but is not in the cycle.
            assert!(
                h.process_info(a.pid())
                    .unwrap()
                    .callers
                    .contains(&outer.id())
            );
            println!("deadlock seen after {:?}", t0.elapsed());
            // a's call to b times out after 2 s, and a answers the outer caller (b's
            // request to a, still queued, may start the cycle again: only timeouts end it).
            cx.recv().await;
        })
        .unwrap();
    }
);

rt_test!(
    a_process_inside_one_long_poll_shows_as_stuck_while_the_poll_lasts,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |cx: Context<()>| async move {
            let started = Arc::new(std::sync::Mutex::new(None::<Instant>));
            let over = Arc::new(AtomicBool::new(false));
            let (s, o) = (started.clone(), over.clone());
            let hog = cx.spawn(move |_: Context<()>| async move {
                *s.lock().unwrap() = Some(Instant::now());
                // A poll that never yields: the worker is held for 600 ms.
                std::thread::sleep(Duration::from_millis(600));
                o.store(true, Ordering::SeqCst);
            });
            loop {
                let stuck = h.stuck(Duration::from_millis(200));
                if let Some(s) = stuck.first() {
                    let since = started.lock().unwrap().expect("the hog started");
                    assert!(
                        !over.load(Ordering::SeqCst),
                        "seen only after the poll ended"
                    );
                    assert_eq!(s.pid, hog.id());
                    assert!(s.polling_for >= Duration::from_millis(200));
                    println!("stuck seen {:?} after the poll began", since.elapsed());
                    break;
                }
                assert!(!over.load(Ordering::SeqCst), "the poll ended unseen");
                cx.sleep(Duration::from_millis(5)).await;
            }
            while !hog.has_exited() {
                cx.sleep(Duration::from_millis(5)).await;
            }
            assert!(h.stuck(Duration::ZERO).is_empty());
        })
        .unwrap();
    }
);

rt_test!(a_process_that_yields_is_never_stuck, |rt: &Runtime| {
    let h = rt.handle();
    rt.block_on(move |cx: Context<()>| async move {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        cx.spawn(move |c: Context<()>| async move {
            let t0 = Instant::now();
            // Busy for 300 ms, yielding every millisecond.
            while t0.elapsed() < Duration::from_millis(300) {
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(1) {}
                c.yield_now().await;
            }
            d.store(true, Ordering::SeqCst);
        });
        while !done.load(Ordering::SeqCst) {
            assert_eq!(h.stuck(Duration::from_millis(100)), vec![]);
            cx.sleep(Duration::from_millis(5)).await;
        }
    })
    .unwrap();
});

/// How soon a long poll shows as stuck and a call cycle as a deadlock, from the moment
/// each begins (issue 40's targets: 250 ms for a 200 ms poll, 1 s for a cycle), over 10
/// tries on 2 workers: `cargo test --release --test introspect_calls_and_stuck --
/// --ignored --nocapture`. A measurement, not a check.
#[test]
#[ignore]
fn how_soon_stuck_and_deadlocked_processes_show() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let h = rt.handle();
    let (mut stuck_ms, mut cycle_ms) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        // A poll of 200 ms without a yield, seen by `stuck(100 ms)`.
        let started = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let s = started.clone();
        let hog = h.spawn(move |_: Context<()>| async move {
            *s.lock().unwrap() = Some(Instant::now());
            std::thread::sleep(Duration::from_millis(200));
        });
        loop {
            if h.stuck(Duration::from_millis(100))
                .iter()
                .any(|s| s.pid == hog.id())
            {
                let t0 = started.lock().unwrap().unwrap();
                stuck_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Two servers that call each other.
        let (tx, rx) = std::sync::mpsc::channel();
        h.spawn(move |cx: Context<()>| async move {
            let (a, b) = call_cycle::pair(&cx, Some(Duration::from_secs(2))).await;
            let t0 = Instant::now();
            cx.spawn(move |_: Context<()>| async move {
                let _ = a
                    .call_timeout(PeerCall::Ping, Some(Duration::from_secs(3)))
                    .await;
            });
            tx.send((t0, a.pid().id(), b.pid().id())).unwrap();
        });
        let (t0, a, b) = rx.recv().unwrap();
        loop {
            if h.deadlocks()
                .iter()
                .any(|c| c.contains(&a) && c.contains(&b))
            {
                cycle_ms.push(t0.elapsed().as_secs_f64() * 1e3);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    for v in [&mut stuck_ms, &mut cycle_ms] {
        v.sort_by(f64::total_cmp);
    }
    println!(
        "stuck (a 200 ms poll, threshold 100 ms): {:.1} ms median [{:.1}–{:.1}] after the poll began",
        stuck_ms[5], stuck_ms[0], stuck_ms[9]
    );
    println!(
        "deadlock (two servers calling each other): {:.2} ms median [{:.2}–{:.2}] after the first call",
        cycle_ms[5], cycle_ms[0], cycle_ms[9]
    );
}
