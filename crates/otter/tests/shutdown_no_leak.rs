//! Rule: dropping the runtime ends every process, joins every worker and leaks nothing:
//! futures of processes blocked in receive are dropped, and so are the messages waiting
//! in their mailboxes.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use otter::{Context, Runtime};

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn blocked_processes_are_dropped(threads: usize) {
    const P: usize = 10_000;
    let dropped_futures = Arc::new(AtomicUsize::new(0));
    let dropped_msgs = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (d1, d2) = (dropped_futures.clone(), dropped_msgs.clone());
    let started = rt
        .block_on(move |mut cx: Context<()>| async move {
            let me = cx.pid();
            for i in 0..P {
                let guard = Counted(d1.clone());
                let p = cx.spawn(move |mut c: Context<Counted>| async move {
                    let _guard = guard;
                    me.send(());
                    // Block forever on a message that never matches.
                    c.recv_match(|_| false).await;
                });
                // Half of them also hold messages they never take.
                if i % 2 == 0 {
                    p.send(Counted(d2.clone()));
                    p.send(Counted(d2.clone()));
                }
            }
            for _ in 0..P {
                cx.recv().await;
            }
            P
        })
        .unwrap();
    assert_eq!(started, P);
    assert_eq!(dropped_futures.load(Ordering::SeqCst), 0);
    drop(rt);
    assert_eq!(
        dropped_futures.load(Ordering::SeqCst),
        P,
        "every process future dropped"
    );
    assert_eq!(
        dropped_msgs.load(Ordering::SeqCst),
        P,
        "every waiting message dropped"
    );
}

#[test]
fn shutdown_with_processes_blocked_in_receive_leaks_nothing_one_worker() {
    blocked_processes_are_dropped(1);
}

#[test]
fn shutdown_with_processes_blocked_in_receive_leaks_nothing_many_workers() {
    blocked_processes_are_dropped(support::MANY);
}

#[test]
fn shutdown_with_processes_still_queued_to_run() {
    // Processes spawned from outside that never got to run are dropped too.
    let dropped = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().threads(2).build().unwrap();
    let h = rt.handle();
    for _ in 0..1000 {
        let g = Counted(dropped.clone());
        h.spawn(move |mut c: Context<u8>| async move {
            let _g = g;
            c.recv().await;
        });
    }
    drop(rt);
    assert_eq!(dropped.load(Ordering::SeqCst), 1000);
}

#[test]
fn a_runtime_can_be_created_and_dropped_many_times() {
    for _ in 0..50 {
        let rt = Runtime::builder().threads(2).build().unwrap();
        assert_eq!(rt.block_on(|_cx: Context<()>| async { 3 }), Ok(3));
    }
}
