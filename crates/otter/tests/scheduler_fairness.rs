//! Rules of the scheduler: a process that hogs its worker does not stop the others
//! (their queued work is taken over by other workers, idle or busy, whatever the
//! injector holds, and by a spare thread when no worker is free, one worker or all of
//! them held); two chatty processes do not starve the rest of their worker; a
//! receiver woken again late in a long send loop runs before the loop ends; futures
//! from outside otter wake processes; a process whose socket never makes it wait
//! yields its worker as a receiving one does.

#[path = "support/rt.rs"]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use otter::{Context, Runtime};

/// Computes without awaiting until `ran` is set: a hog on the caller's worker. How
/// long it took; fails after 20 s.
fn hog_until(ran: &AtomicBool) -> Duration {
    let t0 = Instant::now();
    while !ran.load(Ordering::SeqCst) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the queued process never ran"
        );
        std::hint::spin_loop();
    }
    t0.elapsed()
}

/// On two workers: `yielders` processes that yield until the end keep the other worker
/// busy (it never parks); then a process is queued behind this one, which hogs its
/// worker until that process has run. How long that took.
fn hog_behind_yielders(yielders: usize) -> Duration {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let r = rt.block_on(move |cx: Context<()>| async move {
        for _ in 0..yielders {
            let d = d2.clone();
            cx.spawn(move |c: Context<()>| async move {
                while !d.load(Ordering::SeqCst) {
                    c.yield_now().await;
                }
            });
        }
        // Let the other worker take its share of the yielders.
        for _ in 0..64 {
            cx.yield_now().await;
        }
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        cx.spawn(move |_: Context<()>| async move { r2.store(true, Ordering::SeqCst) });
        hog_until(&ran)
    });
    done.store(true, Ordering::SeqCst);
    r.unwrap()
}

// On one worker, the helper can only run on the spare thread that the watchdog
// thread starts in the held worker's place (`scheduler/watchdog.rs`).
rt_test!(
    a_hog_does_not_stop_processes_queued_behind_it,
    |rt: &Runtime| {
        let r = rt.block_on(move |cx: Context<()>| async move {
            // The worker running this process spawns a helper (queued on its own local
            // queue) and then computes without yielding until the helper has run.
            let ran = Arc::new(AtomicBool::new(false));
            let r2 = ran.clone();
            cx.spawn(move |_: Context<()>| async move { r2.store(true, Ordering::SeqCst) });
            hog_until(&ran)
        });
        assert!(r.unwrap() < Duration::from_secs(20));
    }
);

// As many processes as workers compute without awaiting until told to stop: every
// worker is held at once, and no worker is left to look. A process spawned then still
// runs, on a spare thread the watchdog thread starts (`scheduler/watchdog.rs`).
rt_test!(
    a_runtime_whose_every_worker_is_held_still_runs_processes,
    |rt: &Runtime| {
        let n = rt.threads();
        let handle = rt.handle();
        let running = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..n {
            let (running, stop) = (running.clone(), stop.clone());
            handle.spawn(move |_: Context<()>| async move {
                running.fetch_add(1, Ordering::SeqCst);
                // Gives up after the test's own limit, so that a failure ends the test.
                let t0 = Instant::now();
                while !stop.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(25) {
                    std::hint::spin_loop();
                }
            });
        }
        let limit = Duration::from_secs(20);
        support::eventually("every worker held", limit, || {
            running.load(Ordering::SeqCst) == n
        });
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        handle.spawn(move |_: Context<()>| async move { r2.store(true, Ordering::SeqCst) });
        support::eventually(
            "a process spawned while every worker is held",
            limit,
            || ran.load(Ordering::SeqCst),
        );
        stop.store(true, Ordering::SeqCst);
    }
);

/// The other worker never parks: it always has a process that yields. The process
/// queued behind the hog must still run (the watchdog thread hands it on to the
/// injector, which the busy worker takes from).
#[test]
fn a_hog_does_not_stop_processes_queued_behind_it_while_the_others_are_busy() {
    assert!(hog_behind_yielders(4) < Duration::from_secs(20));
}

/// The same while the injector never empties: more processes yield on the other worker
/// than its local queue holds, so the overflow keeps the injector full, and what the
/// watchdog thread hands on queues behind it there.
#[test]
fn a_hog_does_not_stop_processes_queued_behind_it_while_the_injector_never_empties() {
    assert!(hog_behind_yielders(2_000) < Duration::from_secs(20));
}

rt_test!(chatty_pair_does_not_starve_the_rest, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<()>| async move {
        let me = cx.pid();
        let stop = Arc::new(AtomicBool::new(false));
        // A ping-pong pair that would run forever.
        let s2 = stop.clone();
        let ponger = cx.spawn(move |mut c: Context<otter::Pid<u8>>| async move {
            while let Some(p) = c.recv_timeout(Duration::from_secs(30)).await {
                p.send(0);
            }
        });
        let s3 = s2.clone();
        cx.spawn(move |mut c: Context<u8>| async move {
            let me2 = c.pid();
            while !s3.load(Ordering::SeqCst) {
                ponger.send(me2);
                c.recv().await;
            }
        });
        // Another process on the same runtime must still get to run.
        cx.spawn(move |_: Context<()>| async move { me.send(()) });
        cx.recv().await;
        s2.store(true, Ordering::SeqCst);
    });
    r.unwrap();
});

/// A receiver that empties its mailbox in the middle of a sender's long send loop and is
/// woken again by that same poll waits in the sender's LIFO slot; it must still run
/// before the loop ends, which here it alone can end. The poll hands the slot on every
/// `SPILL_INTERVAL` sends (`scheduler/worker.rs`), and the watchdog would take it
/// otherwise. Two workers: the sender never yields its own.
#[test]
fn a_receiver_woken_late_in_a_long_send_loop_runs_before_the_loop_ends() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let r = rt.block_on(|cx: Context<()>| async move {
        let idle = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicBool::new(false));
        let (idle2, late2) = (idle.clone(), late.clone());
        let receiver = cx.spawn(move |mut c: Context<u64>| async move {
            // The first batch: past the first spill, so this runs on the other worker.
            c.recv().await;
            while c.try_recv().is_some() {}
            idle2.store(true, Ordering::SeqCst);
            // Empty now, but for messages of the first 200 still on their way (the
            // sender waits for `idle`): this receive parks, and a send after `idle`
            // wakes it into the sender's LIFO slot.
            while c.recv().await < 200 {}
            late2.store(true, Ordering::SeqCst);
        });
        let t0 = Instant::now();
        let mut sent = 0u64;
        // One poll throughout: no await until the receiver has seen a late message.
        for _ in 0..200 {
            receiver.send(sent);
            sent += 1;
        }
        while !idle.load(Ordering::SeqCst) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the receiver never ran"
            );
            std::hint::spin_loop();
        }
        while !late.load(Ordering::SeqCst) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the receiver woken late never ran"
            );
            receiver.send(sent);
            sent += 1;
        }
        sent
    });
    assert!(r.unwrap() > 200);
}

/// A one-shot channel that is not otter's: its waker comes from the std `Waker` API.
#[derive(Default)]
struct Shot {
    value: Option<u32>,
    waker: Option<Waker>,
}

struct ShotRecv(Arc<Mutex<Shot>>);

impl Future for ShotRecv {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<u32> {
        let mut s = self.0.lock().unwrap();
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

rt_test!(a_foreign_future_wakes_its_process, |rt: &Runtime| {
    let shot = Arc::new(Mutex::new(Shot::default()));
    let s2 = shot.clone();
    let t = std::thread::spawn(move || {
        // Wait until the process is parked on the future, then complete it.
        support::eventually("process waits", Duration::from_secs(20), || {
            s2.lock().unwrap().waker.is_some()
        });
        let mut s = s2.lock().unwrap();
        s.value = Some(5);
        s.waker.take().unwrap().wake();
    });
    let r = rt.block_on(move |_: Context<()>| ShotRecv(shot));
    t.join().unwrap();
    assert_eq!(r.unwrap(), 5);
});

/// A process that receives a long backlog yields when its budget is spent if another
/// process waits for its worker: the one queued behind it runs before the backlog is
/// drained. One worker, so that nobody else can take the waiting process; the worker
/// goes on with the receiver without a yield only when nothing else waits
/// (`renew_turn`).
#[test]
fn a_spent_budget_yields_to_a_process_queued_behind() {
    const BACKLOG: u64 = 100_000;
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|mut cx: Context<u64>| async move {
        let me = cx.pid();
        for i in 0..BACKLOG {
            me.send(i);
        }
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        cx.spawn(move |_: Context<()>| async move { r2.store(true, Ordering::SeqCst) });
        let mut seen_at = None;
        for i in 0..BACKLOG {
            assert_eq!(cx.recv().await, i);
            if seen_at.is_none() && ran.load(Ordering::SeqCst) {
                seen_at = Some(i);
            }
        }
        seen_at
    });
    let seen_at = r
        .unwrap()
        .expect("the queued process ran only after the backlog");
    assert!(seen_at < 1_000, "it waited for {seen_at} receives");
}

/// On two workers, one held by a process that computes without awaiting: two other
/// processes that can only finish if both run at the same time (each waits, computing,
/// for the other's mark) finish. Without a spare thread in the held worker's place, the
/// first of the two to run would hold the last worker and the second would never run.
/// The test's thread waits and spawns from outside, holding no worker.
#[cfg(target_os = "linux")]
#[test]
fn a_process_holding_its_worker_leaves_the_others_as_many_workers() {
    let rt = Runtime::builder()
        .threads(2)
        .thread_name("held")
        .build()
        .unwrap();
    let handle = rt.handle();
    let hog_on = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (on, off) = (hog_on.clone(), stop.clone());
    handle.spawn(move |_: Context<()>| async move {
        on.store(true, Ordering::SeqCst);
        while !off.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
    });
    let limit = Duration::from_secs(20);
    support::eventually("the hog running", limit, || hog_on.load(Ordering::SeqCst));
    // The watchdog's looks, 5 ms apart, find the hog's worker held and start a spare
    // thread in its place (named after the runtime's threads, `-spare-` and a number).
    support::eventually("a spare thread in the held worker's place", limit, || {
        support::threads_named("held-spare-") > 0
    });
    let marks = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    let met = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
    for i in 0..2 {
        let (marks, met) = (marks.clone(), met.clone());
        handle.spawn(move |_: Context<()>| async move {
            marks[i].store(true, Ordering::SeqCst);
            // Gives up after the test's own limit, so that a failure ends the test.
            let t0 = Instant::now();
            while !marks[1 - i].load(Ordering::SeqCst) {
                if t0.elapsed() > Duration::from_secs(25) {
                    return;
                }
                std::hint::spin_loop();
            }
            met[i].store(true, Ordering::SeqCst);
        });
    }
    support::eventually("both processes running at once", limit, || {
        met.iter().all(|m| m.load(Ordering::SeqCst))
    });
    stop.store(true, Ordering::SeqCst);
}

/// Socket operations take the budget as receives do, and a turn that spends it sends
/// the worker to the injector next. On one worker, two processes send datagrams as fast
/// as they can (a UDP send never waits for its peer, so neither ever awaits anything
/// that is not ready). A process spawned from outside once both are in their loops (it
/// waits in the injector) runs within a few of their turns of 128 operations. Without
/// the budget the two senders would hold the worker and its one spare thread, and it
/// would run only once one of them ended; without the look after a spent turn, at the
/// worker's next look at the injector, up to 61 turns later. The datagrams are counted
/// from the spawn on (read after it returns), so a late start of the outside thread on a
/// loaded machine does not count against the runtime.
#[test]
fn a_process_whose_socket_is_always_ready_yields_to_a_process_queued_behind() {
    const DATAGRAMS: usize = 50_000;
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = sink.local_addr().unwrap();
    let rt = Runtime::builder().threads(1).build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    // Datagrams sent by both senders so far; and that count when the spawn returned,
    // and when the spawned process ran (`usize::MAX`: not yet).
    let total = Arc::new(AtomicUsize::new(0));
    let at_spawn = Arc::new(AtomicUsize::new(0));
    let ran_at = Arc::new(AtomicUsize::new(usize::MAX));
    let outside = {
        let handle = rt.handle();
        let (started, total, at_spawn, ran_at) = (
            started.clone(),
            total.clone(),
            at_spawn.clone(),
            ran_at.clone(),
        );
        std::thread::spawn(move || {
            support::eventually(
                "both senders in their loops",
                Duration::from_secs(20),
                || started.load(Ordering::SeqCst) == 2,
            );
            let t = total.clone();
            handle.spawn(move |_: Context<()>| async move {
                ran_at.store(t.load(Ordering::SeqCst), Ordering::SeqCst);
            });
            at_spawn.store(total.load(Ordering::SeqCst), Ordering::SeqCst);
        })
    };
    let r = rt.block_on(move |mut cx: Context<()>| async move {
        let me = cx.pid();
        for _ in 0..2 {
            let (started, total) = (started.clone(), total.clone());
            cx.spawn(move |_: Context<()>| async move {
                let socket = otter::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
                socket.send_to(&[0u8; 64], target).await.unwrap();
                started.fetch_add(1, Ordering::SeqCst);
                for _ in 0..DATAGRAMS {
                    socket.send_to(&[0u8; 64], target).await.unwrap();
                    total.fetch_add(1, Ordering::SeqCst);
                }
                me.send(());
            });
        }
        cx.recv().await;
        cx.recv().await;
    });
    outside.join().unwrap();
    drop(sink);
    r.unwrap();
    let ran_at = ran_at.load(Ordering::SeqCst);
    assert!(
        ran_at < 2 * DATAGRAMS,
        "the process queued behind ran only after both senders had finished"
    );
    let waited = ran_at.saturating_sub(at_spawn.load(Ordering::SeqCst));
    assert!(
        waited < 1024,
        "it waited for {waited} datagrams of the two senders"
    );
}
