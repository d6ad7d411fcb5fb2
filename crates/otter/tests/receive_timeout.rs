//! Rules of `receive ... after`: the timeout fires when no message comes, never early,
//! and a message that comes in time is taken instead.

#[path = "support/rt.rs"]
mod support;

use std::time::{Duration, Instant};

use otter::{Context, Runtime};

rt_test!(timeout_fires_and_not_early, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u8>| async move {
        let mut waits = Vec::new();
        for ms in [1u64, 5, 20, 70] {
            let t0 = Instant::now();
            assert_eq!(cx.recv_timeout(Duration::from_millis(ms)).await, None);
            waits.push((ms, t0.elapsed()));
        }
        waits
    });
    for (ms, waited) in r.unwrap() {
        assert!(
            waited >= Duration::from_millis(ms),
            "{ms} ms fired after {waited:?}"
        );
    }
});

rt_test!(message_in_time_wins_over_timeout, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u8>| async move {
        let me = cx.pid();
        cx.spawn(move |c: Context<()>| async move {
            c.sleep(Duration::from_millis(5)).await;
            me.send(7);
        });
        let got = cx.recv_timeout(Duration::from_secs(30)).await;
        // The timer of the receive that got its message is cancelled: the next one
        // still waits its own full time.
        let t0 = Instant::now();
        let none = cx.recv_timeout(Duration::from_millis(10)).await;
        (got, none, t0.elapsed())
    });
    let (got, none, waited) = r.unwrap();
    assert_eq!(got, Some(7));
    assert_eq!(none, None);
    assert!(waited >= Duration::from_millis(10));
});

rt_test!(zero_timeout_polls_once, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u8>| async move {
        let empty = cx.recv_timeout(Duration::ZERO).await;
        cx.pid().send(1);
        (empty, cx.recv_timeout(Duration::ZERO).await)
    });
    assert_eq!(r.unwrap(), (None, Some(1)));
});

rt_test!(thousands_of_timers_fire, |rt: &Runtime| {
    const N: usize = 5_000;
    let r = rt.block_on(|mut cx: Context<usize>| async move {
        let me = cx.pid();
        for i in 0..N {
            cx.spawn(move |mut c: Context<()>| async move {
                let t0 = Instant::now();
                let d = Duration::from_millis((i % 50) as u64);
                assert!(c.recv_timeout(d).await.is_none());
                assert!(t0.elapsed() >= d);
                me.send(1);
            });
        }
        let mut n = 0;
        for _ in 0..N {
            n += cx.recv().await;
        }
        n
    });
    assert_eq!(r.unwrap(), N);
});
