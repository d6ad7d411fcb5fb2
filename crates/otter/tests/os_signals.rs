//! OS signals as messages (`os:set_signal/2`) and the ordered stop of a tree on SIGTERM
//! (`init:stop/0`), with real signals raised to this test process.
//!
//! Signal handlers and subscriptions are the whole program's, so every test holds
//! [`SERIAL`] and begins with no subscription left, and a signal is raised only while a subscriber to it is alive (a signal
//! with no subscriber takes its default action, which would end the test binary; that
//! rule has its own test, in a child process).

#![cfg(unix)]

#[path = "support/rt.rs"]
mod support;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use otter::os_signal::{self, OsSignal, Signal, Stopped};
use otter::supervisor::{self, ChildSpec, Shutdown, Strategy, SupervisorSpec};
use otter::{Context, Exit, Pid, Runtime};
use support::eventually;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    let serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    // The guard goes before the test's runtime does: wait for that drop to end the
    // previous test's subscriptions.
    eventually("no subscription is left", Duration::from_secs(5), || {
        os_signal::subscriptions() == 0
    });
    serial
}

fn raise(s: Signal) {
    signal_hook::low_level::raise(s.number()).unwrap();
}

/// A process that subscribes to `s`, tells `to` it has, and forwards the first signal.
fn subscriber(cx: &Context<Ev>, s: Signal) -> Pid<OsSignal> {
    let to = cx.pid();
    cx.spawn(move |mut c: Context<OsSignal>| async move {
        os_signal::notify(&c, &[s], c.pid()).unwrap();
        to.send(Ev::Ready);
        let got = c.recv().await;
        to.send(Ev::Got(got.signal));
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Ready,
    Got(Signal),
}

rt_test!(a_signal_reaches_every_subscriber, |rt: &Runtime| {
    let _serial = serial();
    let got = rt.block_on(|mut cx: Context<Ev>| async move {
        for _ in 0..3 {
            subscriber(&cx, Signal::Usr1);
        }
        for _ in 0..3 {
            assert_eq!(cx.recv().await, Ev::Ready);
        }
        raise(Signal::Usr1);
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(cx.recv().await);
        }
        got
    });
    assert_eq!(got.unwrap(), vec![Ev::Got(Signal::Usr1); 3]);
});

rt_test!(
    a_subscriber_gets_only_the_signals_it_asked_for,
    |rt: &Runtime| {
        let _serial = serial();
        let got = rt.block_on(|mut cx: Context<OsSignal>| async move {
            os_signal::notify(&cx, &[Signal::Usr1, Signal::Usr2], cx.pid()).unwrap();
            let other = cx.spawn(|mut c: Context<OsSignal>| async move {
                c.recv().await;
            });
            os_signal::notify(&cx, &[Signal::Usr1], other).unwrap();
            raise(Signal::Usr2);
            let first = cx.recv().await;
            (first, cx.try_recv(), other.is_alive())
        });
        let (first, more, other_waits) = got.unwrap();
        assert_eq!(first.signal, Signal::Usr2);
        assert_eq!(more, None);
        assert!(other_waits, "a Usr1 subscriber got Usr2");
    }
);

rt_test!(
    a_subscription_ends_when_its_subscriber_exits,
    |rt: &Runtime| {
        let _serial = serial();
        rt.block_on(|mut cx: Context<Ev>| async move {
            let sub = subscriber(&cx, Signal::Usr1);
            assert_eq!(cx.recv().await, Ev::Ready);
            assert_eq!(os_signal::subscriptions(), 1);
            raise(Signal::Usr1);
            assert_eq!(cx.recv().await, Ev::Got(Signal::Usr1));
            // The subscriber has returned: its watcher takes the subscription out.
            eventually("the subscription is gone", Duration::from_secs(5), || {
                sub.has_exited() && os_signal::subscriptions() == 0
            });
        })
        .unwrap();
        assert_eq!(os_signal::subscriptions(), 0);
    }
);

rt_test!(a_cancelled_subscription_delivers_nothing, |rt: &Runtime| {
    let _serial = serial();
    let got = rt.block_on(|mut cx: Context<OsSignal>| async move {
        let keep = os_signal::notify(&cx, &[Signal::Usr1], cx.pid()).unwrap();
        let gone = os_signal::notify(&cx, &[Signal::Usr1], cx.pid()).unwrap();
        gone.cancel();
        raise(Signal::Usr1);
        let one = cx.recv().await;
        keep.cancel();
        (one, cx.try_recv())
    });
    let (one, more) = got.unwrap();
    assert_eq!(one.signal, Signal::Usr1);
    assert_eq!(more, None, "the cancelled subscription delivered too");
    eventually("both are gone", Duration::from_secs(5), || {
        os_signal::subscriptions() == 0
    });
});

/// The child side of the next test: run only in the child process it starts.
#[test]
fn default_action_child() {
    if std::env::var_os("OTTER_SIGNAL_CHILD").is_none() {
        return;
    }
    let rt = Runtime::new();
    rt.block_on(|cx: Context<OsSignal>| async move {
        let sub = os_signal::notify(&cx, &[Signal::Term], cx.pid()).unwrap();
        sub.cancel();
        // No subscriber: the default action, which ends this process.
        raise(Signal::Term);
        cx.sleep(Duration::from_secs(30)).await;
    })
    .unwrap();
    std::process::exit(3);
}

#[test]
fn a_signal_nobody_is_subscribed_to_takes_its_default_action() {
    use std::os::unix::process::ExitStatusExt;
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "default_action_child", "--test-threads=1"])
        .env("OTTER_SIGNAL_CHILD", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(Signal::Term.number()), "{status:?}");
}

// ===== stopping a tree on SIGTERM =====

/// A child that traps exits and, at its supervisor's `Shutdown`, writes its id into
/// `log`, then exits; `stubborn` children ignore it and run on. Its start returns once
/// it traps exits (a process child's start does not wait for it to run: a signal that
/// came first would end it unlogged).
fn logged(id: &'static str, log: Arc<Mutex<Vec<&'static str>>>, stubborn: bool) -> ChildSpec {
    ChildSpec::new(id, move |sup| {
        let log = log.clone();
        let trapping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ready = trapping.clone();
        let pid = sup
            .spawn_link(move |mut c: Context<Exit>| async move {
                c.trap_exit(true);
                ready.store(true, std::sync::atomic::Ordering::Release);
                loop {
                    let _ = c.recv().await;
                    log.lock().unwrap().push(id);
                    if !stubborn {
                        return;
                    }
                }
            })
            .id();
        std::future::poll_fn(move |cx| {
            if trapping.load(std::sync::atomic::Ordering::Acquire) {
                std::task::Poll::Ready(Ok(pid))
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
    })
    .shutdown(Shutdown::Infinity)
}

rt_test!(
    sigterm_stops_the_tree_in_reverse_start_order_and_returns_to_its_starter,
    |rt: &Runtime| {
        let _serial = serial();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(logged("a", l.clone(), false))
                .child(logged("b", l.clone(), false))
                .child(logged("c", l.clone(), false));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let stopping = os_signal::stop_on_signal(&cx, top, &[Signal::Term, Signal::Int], None);
            // The handler is installed once `stop_on_signal` has returned.
            raise(Signal::Term);
            let how = stopping.await.unwrap();
            (how, top.id().is_alive())
        });
        assert_eq!(r.unwrap(), (Stopped::InOrder(Signal::Term), false));
        assert_eq!(*log.lock().unwrap(), ["c", "b", "a"]);
    }
);

rt_test!(
    a_stop_past_its_deadline_returns_unfinished,
    |rt: &Runtime| {
        let _serial = serial();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(logged("a", l.clone(), false))
                .child(logged("stubborn", l.clone(), true));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let stopping = os_signal::stop_on_signal(
                &cx,
                top,
                &[Signal::Term],
                Some(Duration::from_millis(200)),
            );
            raise(Signal::Term);
            stopping.await.unwrap()
        });
        // Dropping the runtime ended the stubborn child and the stop.
        assert_eq!(r.unwrap(), Stopped::Unfinished(Signal::Term));
        assert_eq!(*log.lock().unwrap(), ["stubborn"]);
    }
);

rt_test!(
    a_second_signal_returns_the_stop_unfinished,
    |rt: &Runtime| {
        let _serial = serial();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec =
                SupervisorSpec::new(Strategy::OneForOne).child(logged("stubborn", l.clone(), true));
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let stopping = os_signal::stop_on_signal(&cx, top, &[Signal::Int], None);
            raise(Signal::Int);
            let watcher = l.clone();
            cx.spawn(move |c: Context<()>| async move {
                // Once the stop has reached the child, Ctrl-C again.
                while watcher.lock().unwrap().is_empty() {
                    c.yield_now().await;
                }
                raise(Signal::Int);
            });
            stopping.await.unwrap()
        });
        assert_eq!(r.unwrap(), Stopped::Unfinished(Signal::Int));
    }
);

rt_test!(
    a_top_supervisor_that_exits_first_ends_the_wait,
    |rt: &Runtime| {
        let _serial = serial();
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne);
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let stopping = os_signal::stop_on_signal(&cx, top, &[Signal::Term], None);
            top.stop().await.unwrap();
            stopping.await.unwrap()
        });
        assert_eq!(r.unwrap(), Stopped::Exited(otter::ExitReason::Normal));
        eventually(
            "the stopper's subscription is gone",
            Duration::from_secs(5),
            || os_signal::subscriptions() == 0,
        );
    }
);

rt_test!(
    a_dropped_stop_on_signal_leaves_the_tree_alone,
    |rt: &Runtime| {
        let _serial = serial();
        let r = rt.block_on(|cx: Context<()>| async move {
            let top = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne))
                .await
                .unwrap();
            let stopping = os_signal::stop_on_signal(&cx, top, &[Signal::Term], None);
            assert_eq!(os_signal::subscriptions(), 1);
            drop(stopping);
            eventually(
                "the stopper's subscription is gone",
                Duration::from_secs(5),
                || os_signal::subscriptions() == 0,
            );
            top.id().is_alive()
        });
        assert_eq!(r, Ok(true));
    }
);

/// What the test of a tree with an acceptor pool hears.
#[derive(Debug)]
enum Web {
    /// A connection's process has read its request and waits to be told to answer.
    MidRequest(Pid<()>),
}

rt_test!(
    sigterm_drains_an_acceptor_pool_in_the_tree_before_the_workers_started_before_it,
    |rt: &Runtime| {
        use otter::net::{AcceptorPool, TcpStream};
        use std::io::ErrorKind;
        use std::time::Instant;
        let _serial = serial();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let r = rt.block_on(|mut cx: Context<Web>| async move {
            let me = cx.pid();
            let (pool, listening) = AcceptorPool::child_spec_with_drain(
                "web",
                "127.0.0.1:0".parse().unwrap(),
                2,
                Duration::from_secs(30),
                move |mut c: Context<()>, mut s: TcpStream| async move {
                    let mut req = [0u8; 4];
                    if s.read_exact(&mut req).await.is_ok() {
                        me.send(Web::MidRequest(c.pid()));
                        c.recv().await;
                        let _ = s.write_all(b"pong").await;
                    }
                },
            );
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(logged("db", l.clone(), false))
                .child(pool);
            let top = supervisor::start_link(&cx, spec).await.unwrap();
            let addr = listening.get().unwrap();
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"ping").await.unwrap();
            let Web::MidRequest(conn) = cx.recv().await;
            let stopping = os_signal::stop_on_signal(&cx, top, &[Signal::Term], None);
            raise(Signal::Term);
            // Nothing tells when the stop reaches the pool but the refusal: a bounded
            // poll, paced by 1 ms.
            let give_up = Instant::now() + Duration::from_secs(10);
            loop {
                match TcpStream::connect(addr).await {
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
                    _ => assert!(Instant::now() < give_up, "the listener was never closed"),
                }
                cx.sleep(Duration::from_millis(1)).await;
            }
            // The pool is draining: "db", started before it, is still up.
            let db_before = l.lock().unwrap().is_empty();
            conn.send(());
            // Connections accepted before the listener closed are drained too.
            while let Some(Web::MidRequest(p)) = cx.try_recv() {
                p.send(());
            }
            let mut answer = [0u8; 4];
            c.read_exact(&mut answer).await.unwrap();
            let how = stopping.await.unwrap();
            (db_before, answer, how)
        });
        let (db_still_up_while_draining, answer, how) = r.unwrap();
        assert!(db_still_up_while_draining);
        assert_eq!(&answer, b"pong");
        assert_eq!(how, Stopped::InOrder(Signal::Term));
        assert_eq!(*log.lock().unwrap(), ["db"]);
    }
);
