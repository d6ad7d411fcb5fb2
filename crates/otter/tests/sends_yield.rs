//! Rules of the turn's budget for sends and spawns (crate docs, "Scheduler"): plain
//! sends and spawns take their unit, so the process's next receive yields once they
//! have spent it; `Context::send` and `Context::consume_budget` yield themselves, so
//! that a loop of them lets its receivers and children run before it ends, as the
//! BEAM yields a sender whose reductions ran out; and an awaited send loop delivers
//! every message once, in order.
//!
//! The yield rules are checked on one worker: there a receiver or a child can only run
//! while the looping process has yielded, so each test fails if the loop does not
//! yield. With several workers the others run them in parallel whether it yields or
//! not (and a worker with nothing else to run renews the turn in place); the delivery
//! rule runs on both.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use otter::{Context, Pid, Runtime};

/// A turn's budget (`tuning.rs`, `BUDGET`): loops below run ten of them.
const BUDGET: usize = 128;
const N: usize = 10 * BUDGET;

fn one_worker() -> Runtime {
    Runtime::builder().threads(1).build().unwrap()
}

/// A receiver that counts the messages it takes in `taken`, and records in `backlog`
/// the longest its mailbox was when it took one. Reports `Done` to `to` after `n`.
fn counting_receiver(
    cx: &Context<Report>,
    n: usize,
    taken: Arc<AtomicUsize>,
    backlog: Arc<AtomicUsize>,
) -> Pid<usize> {
    let to = cx.pid();
    cx.spawn(move |mut c: Context<usize>| async move {
        for expected in 0..n {
            backlog.fetch_max(c.message_queue_len(), Ordering::SeqCst);
            let got = c.recv().await;
            assert_eq!(got, expected, "messages out of order");
            taken.fetch_add(1, Ordering::SeqCst);
        }
        to.send(Report::Done);
    })
}

#[derive(Debug, PartialEq)]
enum Report {
    Done,
    Myself,
}

#[test]
fn a_send_loop_yields_to_its_receiver_when_the_budget_is_spent() {
    let rt = one_worker();
    let (taken_before_end, backlog) = rt
        .block_on(|mut cx: Context<Report>| async move {
            let taken = Arc::new(AtomicUsize::new(0));
            let backlog = Arc::new(AtomicUsize::new(0));
            let to = counting_receiver(&cx, N, taken.clone(), backlog.clone());
            for i in 0..N {
                cx.send(to, i).await;
            }
            let before_end = taken.load(Ordering::SeqCst);
            assert_eq!(cx.recv().await, Report::Done);
            (before_end, backlog.load(Ordering::SeqCst))
        })
        .unwrap();
    // The receiver ran while the loop was yielding: it had taken all but the last
    // budget's worth before the loop ended, and its mailbox never held more than two.
    assert!(
        taken_before_end >= N - 2 * BUDGET,
        "the receiver took {taken_before_end} of {N} messages before the send loop ended"
    );
    assert!(
        backlog <= 2 * BUDGET,
        "the receiver's mailbox held up to {backlog} messages"
    );
}

#[test]
fn plain_sends_spend_the_budget_of_the_senders_next_receive() {
    let rt = one_worker();
    let taken_at_receive = rt
        .block_on(|mut cx: Context<Report>| async move {
            let taken = Arc::new(AtomicUsize::new(0));
            let backlog = Arc::new(AtomicUsize::new(0));
            let to = counting_receiver(&cx, 2 * BUDGET, taken.clone(), backlog);
            for i in 0..2 * BUDGET {
                to.send(i);
            }
            // A message is there: a receive with budget left takes it without
            // yielding; one whose budget the sends spent yields to the receiver first.
            cx.pid().send(Report::Myself);
            assert_eq!(cx.recv().await, Report::Myself);
            let at_receive = taken.load(Ordering::SeqCst);
            assert_eq!(cx.recv().await, Report::Done);
            at_receive
        })
        .unwrap();
    assert!(
        taken_at_receive > 0,
        "the receive after {} plain sends did not yield",
        2 * BUDGET
    );
}

#[test]
fn a_spawn_loop_that_consumes_budget_lets_its_children_run_before_it_ends() {
    let rt = one_worker();
    let ran_before_end = rt
        .block_on(|mut cx: Context<()>| async move {
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..N {
                let ran = ran.clone();
                cx.spawn(move |_: Context<()>| async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                cx.consume_budget().await;
            }
            ran.load(Ordering::SeqCst)
        })
        .unwrap();
    assert!(
        ran_before_end >= N - 2 * BUDGET,
        "{ran_before_end} of {N} children ran before the spawn loop ended"
    );
}

#[test]
fn plain_spawns_spend_the_budget_of_the_parents_next_receive() {
    let rt = one_worker();
    let ran_at_receive = rt
        .block_on(|mut cx: Context<Report>| async move {
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..2 * BUDGET {
                let ran = ran.clone();
                cx.spawn(move |_: Context<()>| async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            }
            cx.pid().send(Report::Myself);
            assert_eq!(cx.recv().await, Report::Myself);
            ran.load(Ordering::SeqCst)
        })
        .unwrap();
    assert!(
        ran_at_receive > 0,
        "the receive after {} plain spawns did not yield",
        2 * BUDGET
    );
}

rt_test!(
    an_awaited_send_loop_delivers_every_message_once_in_order,
    |rt: &Runtime| {
        let taken = rt
            .block_on(|mut cx: Context<Report>| async move {
                let taken = Arc::new(AtomicUsize::new(0));
                let backlog = Arc::new(AtomicUsize::new(0));
                let to = counting_receiver(&cx, N, taken.clone(), backlog);
                for i in 0..N {
                    cx.send(to, i).await;
                }
                assert_eq!(cx.recv().await, Report::Done);
                taken.load(Ordering::SeqCst)
            })
            .unwrap();
        assert_eq!(taken, N);
    }
);

rt_test!(
    an_awaited_send_to_a_process_that_has_exited_drops_the_message,
    |rt: &Runtime| {
        rt.block_on(|mut cx: Context<()>| async move {
            let gone = cx.spawn(|_: Context<u64>| async {});
            while !gone.has_exited() {
                cx.yield_now().await;
            }
            for i in 0..N as u64 {
                cx.send(gone, i).await;
            }
        })
        .unwrap();
    }
);
