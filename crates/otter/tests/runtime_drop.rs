//! Rule: a `Runtime` dropped on any thread, its own workers and its timer thread
//! included, shuts down cleanly: every process still alive is ended (its future and
//! what it owns are dropped), and pids of that runtime stay safe to use afterwards.

#[path = "support/rt.rs"]
mod support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::{Context, Pid, Runtime};
use support::MANY;

/// Tells the test when it is dropped, i.e. when the shutdown ends its process.
struct Guard(mpsc::Sender<()>);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A process that waits for ever, holding a `Guard`.
fn spawn_waiter(rt: &Runtime) -> (Pid<()>, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let pid = rt.handle().spawn(move |_: Context<()>| async move {
        let _guard = Guard(tx);
        std::future::pending::<()>().await
    });
    (pid, rx)
}

/// Runs `carrier` in a process of a new runtime of `threads` workers, with that very
/// `Runtime` handed to it (through a slot, once it runs); then checks that the runtime
/// was shut down cleanly, whatever `carrier` did with it. Returns the carrier's pid.
fn hand_the_runtime_to<F, Fut>(threads: usize, carrier: F) -> Pid<()>
where
    F: FnOnce(Context<()>, Runtime) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (waiter, ended) = spawn_waiter(&rt);
    let slot: Arc<Mutex<Option<Runtime>>> = Arc::default();
    let s2 = slot.clone();
    let pid = rt.handle().spawn(move |mut cx: Context<()>| async move {
        cx.recv().await;
        let rt = s2.lock().unwrap().take().unwrap();
        carrier(cx, rt).await;
    });
    *slot.lock().unwrap() = Some(rt);
    pid.send(());
    ended
        .recv_timeout(Duration::from_secs(30))
        .expect("the shutdown ended the waiting process");
    // The runtime is gone (or going): a send to its pid is dropped, nothing is read
    // from freed memory (valgrind saw an invalid read here before the fix).
    waiter.send(());
    assert!(waiter.has_exited());
    pid
}

/// Declares the rule's test on 1 worker and on `MANY`.
macro_rules! on_1_and_n_workers {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn one_worker() {
                ($body)(1);
            }
            #[test]
            fn many_workers() {
                ($body)(MANY);
            }
        }
    };
}

on_1_and_n_workers!(
    a_runtime_dropped_on_its_timer_thread_shuts_down_cleanly,
    |threads| {
        hand_the_runtime_to(threads, |cx, rt| async move {
            // A process that has already exited: the timer thread drops the message,
            // and with it the runtime.
            let gone: Pid<Runtime> = cx.spawn(|_: Context<Runtime>| async {});
            while !gone.has_exited() {
                cx.yield_now().await;
            }
            cx.send_after(gone, rt, Duration::from_millis(1));
        });
    }
);

on_1_and_n_workers!(
    a_runtime_dropped_by_its_own_process_shuts_down_cleanly,
    |threads| {
        let carrier = hand_the_runtime_to(threads, |mut cx, rt| async move {
            drop(rt);
            // The shutdown ends this process at its next suspension point, or at the
            // latest when the shutdown thread ends every process still alive.
            cx.recv().await;
        });
        assert!(carrier.has_exited());
    }
);

on_1_and_n_workers!(
    a_runtime_dropped_with_an_unread_message_shuts_down_cleanly,
    |threads| {
        // The message holding the runtime is dropped with the mailbox of a process
        // that exits with messages unread: on a worker, in the middle of the exit.
        hand_the_runtime_to(threads, |cx, rt| async move {
            let sink: Pid<Runtime> = cx.spawn(|mut c: Context<Runtime>| async move {
                c.recv_match(|_| false).await;
            });
            sink.send(rt);
            cx.exit(sink, otter::ExitReason::Shutdown);
        });
    }
);

/// A runtime whose worker was held by a process that computes without awaiting has a
/// spare thread (`scheduler/stand_in.rs`); dropped after the hog ends, whether the spare
/// still stands in, is stepping back or lies dormant, it joins every thread it started.
/// On two workers (one worker has no spare) and on `MANY`, twenty times each.
#[cfg(target_os = "linux")]
#[test]
fn a_runtime_joins_its_spare_threads_when_dropped() {
    use std::sync::atomic::{AtomicBool, Ordering};
    for threads in [2, MANY] {
        for round in 0..20 {
            let rt = Runtime::builder()
                .threads(threads)
                .thread_name("spared")
                .build()
                .unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            rt.handle().spawn(move |_: Context<()>| async move {
                while !s.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            });
            support::eventually("a spare thread", Duration::from_secs(20), || {
                support::threads_named("spared-spare-") > 0
            });
            stop.store(true, Ordering::SeqCst);
            if round % 2 == 1 {
                // The spare's next look finds the hog's worker moved on: it steps back
                // while processes come and go.
                let (tx, rx) = mpsc::channel();
                rt.handle()
                    .spawn(move |_: Context<()>| async move { tx.send(()).unwrap() });
                rx.recv().unwrap();
            }
            drop(rt);
            // Joined; a joined thread can still be listed in /proc for a moment (the
            // join returns when the kernel clears its tid, before it reaps the task),
            // while a thread left running stays listed and the guard fails.
            support::eventually(
                "no thread of the runtime left after the drop",
                Duration::from_secs(20),
                || support::threads_named("spared") == 0,
            );
        }
    }
}

#[test]
fn a_runtimes_threads_carry_its_name() {
    // Several runtimes in one program: each thread says whose it is.
    let rt = Runtime::builder()
        .threads(2)
        .thread_name("named-rt")
        .build()
        .unwrap();
    let names = rt
        .block_on(|cx: Context<()>| async move {
            let worker = std::thread::current().name().map(String::from);
            let blocking =
                otter::blocking::spawn_blocking(|| std::thread::current().name().map(String::from))
                    .await;
            // Starts the runtime's timer thread.
            cx.sleep(Duration::from_millis(1)).await;
            (worker, blocking)
        })
        .unwrap();
    assert!(
        names
            .0
            .as_deref()
            .is_some_and(|n| n.starts_with("named-rt-")),
        "{names:?}"
    );
    assert_eq!(names.1.as_deref(), Some("named-rt-blocking"));
    support::eventually("the timer thread by name", Duration::from_secs(20), || {
        support::threads_named("named-rt-timer") == 1
    });
    support::eventually("the watchdog by name", Duration::from_secs(20), || {
        // Linux keeps the first 15 bytes of a thread's name.
        support::threads_named("named-rt-watchd") == 1
    });
}
