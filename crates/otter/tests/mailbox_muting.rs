//! Rules of muting (`mailbox/bound.rs`, "Muting"): an awaited send to an unbounded
//! mailbox whose queue is past `SpawnOptions::MUTE_AT` at the sender's yield point
//! makes the sender wait until the queue has drained to half, and nothing is lost; a
//! plain send is never muted; a sender whose own queue is long is not muted, so
//! processes that flood each other both finish; a muted sender goes on when its
//! receiver exits.

#[path = "support/gate.rs"]
mod gate;
#[path = "support/rt.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gate::Gate;
use otter::introspect::Status;
use otter::{Context, Pid, Runtime, SpawnOptions};

const MUTE_AT: usize = SpawnOptions::MUTE_AT;

#[derive(Debug, PartialEq)]
enum Report {
    /// A sender has sent everything.
    Sent,
    /// A receiver took this many messages, all in order.
    Took(usize),
}

/// A receiver that waits for `gate`, then takes `n` messages and checks their order.
fn gated_receiver(cx: &Context<Report>, gate: Arc<Gate>, n: usize) -> Pid<u32> {
    let root = cx.pid();
    cx.spawn(move |mut c: Context<u32>| async move {
        gate.wait().await;
        for i in 0..n {
            assert_eq!(c.recv().await, i as u32);
        }
        root.send(Report::Took(n));
    })
}

/// Waits, yielding, until `sender` is muted (waiting) with `receiver`'s queue past
/// `MUTE_AT`; fails if the sender finishes first. Returns that queue's length.
async fn until_muted(cx: &mut Context<Report>, sender: Pid<()>, receiver: Pid<u32>) -> usize {
    let t0 = std::time::Instant::now();
    loop {
        assert!(
            cx.try_recv().is_none(),
            "the sender finished: it was never muted"
        );
        let status = cx.process_info(sender).map(|i| i.status);
        let len = receiver.message_queue_len().unwrap();
        if status == Some(Status::Waiting) && len > MUTE_AT {
            return len;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "never muted");
        cx.yield_now().await;
    }
}

rt_test!(
    an_awaited_sender_to_a_flooded_mailbox_waits_until_it_drains_to_half,
    |rt: &Runtime| {
        let (held_at, reports) = rt
            .block_on(|mut cx: Context<Report>| async move {
                let n = 3 * MUTE_AT;
                let gate = Arc::new(Gate::default());
                let receiver = gated_receiver(&cx, gate.clone(), n);
                let root = cx.pid();
                let sender = cx.spawn(move |mut c: Context<()>| async move {
                    for i in 0..n {
                        c.send(receiver, i as u32).await;
                    }
                    root.send(Report::Sent);
                });
                let held_at = until_muted(&mut cx, sender, receiver).await;
                gate.open();
                let reports = [cx.recv().await, cx.recv().await];
                (held_at, reports)
            })
            .unwrap();
        // Muted at its first yield point past the limit: at most a turn's sends more (a
        // sender's turn renewed in place is 8 budgets, 1,024 sends).
        assert!(held_at <= MUTE_AT + 1024 + 128, "queue held at {held_at}");
        assert!(reports.contains(&Report::Sent));
        assert!(reports.contains(&Report::Took(3 * MUTE_AT)));
    }
);

rt_test!(a_plain_send_is_never_muted, |rt: &Runtime| {
    let (first, len) = rt
        .block_on(|mut cx: Context<Report>| async move {
            let n = 2 * MUTE_AT;
            let gate = Arc::new(Gate::default());
            let receiver = gated_receiver(&cx, gate.clone(), n);
            let root = cx.pid();
            cx.spawn(move |_: Context<()>| async move {
                for i in 0..n {
                    receiver.send(i as u32);
                }
                root.send(Report::Sent);
            });
            // The receiver does not read until the sender has finished.
            let first = cx.recv().await;
            let len = receiver.message_queue_len();
            gate.open();
            assert_eq!(cx.recv().await, Report::Took(n));
            (first, len)
        })
        .unwrap();
    assert_eq!(first, Report::Sent);
    assert_eq!(len, Some(2 * MUTE_AT));
});

rt_test!(
    a_muted_sender_goes_on_when_its_receiver_exits,
    |rt: &Runtime| {
        let report = rt
            .block_on(|mut cx: Context<Report>| async move {
                let gate = Arc::new(Gate::default());
                let g = gate.clone();
                // Waits for the gate, then exits without reading.
                let receiver = cx.spawn(move |c: Context<u32>| async move {
                    let _receiver = c;
                    g.wait().await;
                });
                let root = cx.pid();
                let sender = cx.spawn(move |mut c: Context<()>| async move {
                    for i in 0..3 * MUTE_AT {
                        c.send(receiver, i as u32).await;
                    }
                    root.send(Report::Sent);
                });
                until_muted(&mut cx, sender, receiver).await;
                gate.open();
                cx.recv().await
            })
            .unwrap();
        assert_eq!(report, Report::Sent);
    }
);

rt_test!(
    processes_that_flood_each_other_with_awaited_sends_both_finish,
    |rt: &Runtime| {
        let reports = rt
            .block_on(|mut cx: Context<Report>| async move {
                let n = 2 * MUTE_AT + 1000;
                let root = cx.pid();
                // Each sends all its messages to the other before it reads any: both
                // queues pass the limit, and neither sender may wait for the other.
                let peer = move |mut c: Context<u32>, other: Pid<u32>| async move {
                    for i in 0..n {
                        c.send(other, i as u32).await;
                    }
                    for i in 0..n {
                        assert_eq!(c.recv().await, i as u32);
                    }
                    root.send(Report::Took(n));
                };
                // `a` learns `b`'s pid through a slot and a gate, so that its mailbox
                // holds `b`'s messages only.
                let gate = Arc::new(Gate::default());
                let slot: Arc<Mutex<Option<Pid<u32>>>> = Arc::default();
                let (g, s) = (gate.clone(), slot.clone());
                let a = cx.spawn(move |c: Context<u32>| async move {
                    g.wait().await;
                    let other = s.lock().unwrap().take().unwrap();
                    peer(c, other).await
                });
                let b = cx.spawn(move |c: Context<u32>| peer(c, a));
                *slot.lock().unwrap() = Some(b);
                gate.open();
                [cx.recv().await, cx.recv().await]
            })
            .unwrap();
        assert_eq!(
            reports,
            [
                Report::Took(2 * MUTE_AT + 1000),
                Report::Took(2 * MUTE_AT + 1000)
            ]
        );
    }
);
