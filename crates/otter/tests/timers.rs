//! Rules of timers (`erlang:send_after/3`, `cancel_timer/1`, `timer:send_interval/3`):
//! an interval sends until cancelled and not after, ends with its receiver, does not
//! drift; thousands of one-shot timers all fire, each once; a one-shot timer is
//! cancelled when its destination exits, and one aimed at a process that has ended
//! never holds its message.

#[path = "support/rt.rs"]
mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use otter::{Context, Down, ExitReason, Runtime};

/// A message that counts its drops: a timer's message is dropped when the timer is
/// cancelled (or when it reaches a process that has ended).
#[derive(Debug)]
struct Probe(Arc<AtomicUsize>);

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// What the test's root hears: the `Down` of its child.
#[derive(Debug)]
struct Downed;

impl From<Down> for Downed {
    fn from(_: Down) -> Downed {
        Downed
    }
}

rt_test!(
    an_interval_sends_until_cancelled_and_not_after,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let t = cx.send_interval(cx.pid(), 1, Duration::from_millis(1));
            let mut n = 0;
            while n < 10 {
                n += cx.recv().await;
            }
            let was_running = t.cancel();
            // Drain what was already sent; after that, silence.
            while cx.recv_timeout(Duration::from_millis(5)).await.is_some() {}
            let after = cx.recv_timeout(Duration::from_millis(20)).await;
            (was_running, after)
        });
        assert_eq!(r.unwrap(), (true, None));
    }
);

rt_test!(an_interval_does_not_drift, |rt: &Runtime| {
    const PERIOD: Duration = Duration::from_millis(5);
    const TICKS: u32 = 40;
    let r = rt.block_on(|mut cx: Context<()>| async move {
        let t0 = Instant::now();
        let t = cx.send_interval(cx.pid(), (), PERIOD);
        let mut late = Vec::new();
        for k in 1..=TICKS {
            cx.recv().await;
            // How late tick k is against t0 + k·period (never early).
            late.push(Instant::now() - (t0 + PERIOD * k));
        }
        t.cancel();
        late
    });
    let late = r.unwrap();
    // Scheduling each tick from the previous *firing* would add the delivery delay and
    // the millisecond rounding at every tick (tens of ms after 40 ticks); from the
    // previous deadline, lateness stays bounded. The least late of the last five ticks
    // tolerates one scheduling hiccup on a loaded machine.
    let tail = late[late.len() - 5..].iter().min().unwrap();
    assert!(*tail < Duration::from_millis(15), "drifted: {late:?}");
});

rt_test!(an_interval_ends_when_its_receiver_exits, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let child = cx.spawn(|mut c: Context<u8>| async move {
            c.recv().await;
        });
        let t = cx.send_interval(child, 1, Duration::from_millis(1));
        while !child.has_exited() {
            cx.yield_now().await;
        }
        // The receiver's exit stopped it (before its pid stopped resolving): no tick
        // needed to find it gone.
        (t.is_running(), t.cancel())
    });
    assert_eq!(r.unwrap(), (false, false));
});

rt_test!(thousands_of_timers_all_fire_once, |rt: &Runtime| {
    const N: u32 = 10_000;
    let r = rt.block_on(|mut cx: Context<u32>| async move {
        let mut cancelled = HashSet::new();
        for i in 0..N {
            let t = cx.send_after(cx.pid(), i, Duration::from_millis(u64::from(i % 50)));
            if i % 10 == 0 && t.cancel() {
                cancelled.insert(i);
            }
        }
        let mut seen = HashSet::new();
        while seen.len() + cancelled.len() < N as usize {
            let i = cx.recv().await;
            assert!(!cancelled.contains(&i), "cancelled timer {i} fired");
            assert!(seen.insert(i), "timer {i} fired twice");
        }
        cx.recv_timeout(Duration::from_millis(60)).await
    });
    assert_eq!(r.unwrap(), None);
});

rt_test!(
    a_timeout_of_duration_max_waits_for_ever_without_panicking,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let me = cx.pid();
            // Erlang's `infinity`: a receive that waits for the message, however late.
            cx.spawn(move |c: Context<()>| async move {
                c.sleep(Duration::from_millis(2)).await;
                me.send(7);
            });
            let got = cx.recv_timeout(Duration::MAX).await;
            let matched = {
                me.send(8);
                cx.recv_match_timeout(|m| *m == 8, Duration::MAX).await
            };
            // A timer that will never fire, cancelled; a sleep that never ends.
            let never = cx.send_after(me, 9, Duration::MAX);
            let interval = cx.send_interval(me, 10, Duration::MAX);
            cx.spawn(move |c: Context<()>| async move {
                let forever = c.sleep(Duration::MAX);
                me.send(11);
                forever.await;
            });
            let slept = cx.recv().await;
            (got, matched, never.cancel(), interval.cancel(), slept)
        });
        assert_eq!(r, Ok((Some(7), Some(8), true, true, 11)));
    }
);

rt_test!(
    a_timer_is_cancelled_when_its_destination_exits,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Downed>| async move {
            let mut answers = Vec::new();
            // The child returns after one message, or is killed, with a timer of an
            // hour aimed at it.
            for kill in [false, true] {
                let dropped = Arc::new(AtomicUsize::new(0));
                let (child, _) = cx.spawn_monitor(|mut c: Context<Probe>| async move {
                    drop(c.recv().await);
                });
                let hour = Duration::from_secs(3600);
                let t = cx.send_after(child, Probe(dropped.clone()), hour);
                if kill {
                    cx.exit(child, ExitReason::Kill);
                } else {
                    child.send(Probe(dropped.clone()));
                }
                cx.recv().await;
                // The `Down` comes after the exit's cancellation: the hour's message
                // has been dropped (beside the one received), and the timer can no
                // longer be cancelled.
                answers.push((dropped.load(Ordering::SeqCst), t.cancel()));
            }
            answers
        });
        assert_eq!(r.unwrap(), vec![(2, false), (1, false)]);
    }
);

rt_test!(
    a_timer_aimed_at_a_process_that_has_ended_is_dropped_at_once,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Downed>| async move {
            let dropped = Arc::new(AtomicUsize::new(0));
            let (child, _) = cx.spawn_monitor(|_: Context<Probe>| async move {});
            cx.recv().await;
            let hour = Duration::from_secs(3600);
            let t = cx.send_after(child, Probe(dropped.clone()), hour);
            (dropped.load(Ordering::SeqCst), t.cancel())
        });
        assert_eq!(r.unwrap(), (1, false));
    }
);

rt_test!(
    a_timer_outlives_an_exit_of_another_process_than_its_destination,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<u8>| async move {
            // A child sets the timer for the root, then exits: the timer is the root's.
            let me = cx.pid();
            let child = cx.spawn(move |c: Context<()>| async move {
                c.send_after(me, 7, Duration::from_millis(2));
                me.send(1);
            });
            let first = cx.recv().await;
            while !child.has_exited() {
                cx.yield_now().await;
            }
            (first, cx.recv().await)
        });
        assert_eq!(r.unwrap(), (1, 7));
    }
);
