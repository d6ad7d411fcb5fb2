//! Rules of selective receive (Erlang reference manual, "Receive"): a receive takes the
//! oldest matching message; messages that do not match stay in the mailbox in arrival
//! order; one receive never examines the same message twice. And otter's keyed receive.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use otter::{Context, Keyed, Pid, Runtime};

rt_test!(unmatched_messages_stay_in_order, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u32>| async move {
        for i in 0..1000 {
            cx.pid().send(i);
        }
        // Take every multiple of 7, from the back of the mailbox's order.
        let mut got = Vec::new();
        for _ in 0..(1000 / 7 + 1) {
            got.push(cx.recv_match(|m| m % 7 == 0).await);
        }
        let rest: Vec<u32> = (0..1000 - got.len())
            .map(|_| cx.try_recv().unwrap())
            .collect();
        (got, rest)
    });
    let (got, rest) = r.unwrap();
    assert_eq!(got, (0..1000).filter(|m| m % 7 == 0).collect::<Vec<_>>());
    assert_eq!(rest, (0..1000).filter(|m| m % 7 != 0).collect::<Vec<_>>());
});

rt_test!(a_receive_never_examines_a_message_twice, |rt: &Runtime| {
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let r = rt.block_on(|mut cx: Context<u32>| async move {
        let me = cx.pid();
        // A sender that trickles 100 non-matching messages, then the match, each after
        // a yield so the receive waits many times in between.
        cx.spawn(move |c: Context<()>| async move {
            for i in 0..100 {
                me.send(i);
                c.yield_now().await;
            }
            me.send(1000);
        });
        let m = cx
            .recv_match(|m| {
                c2.fetch_add(1, Ordering::Relaxed);
                *m == 1000
            })
            .await;
        let rest: Vec<u32> = (0..100).map(|_| cx.try_recv().unwrap()).collect();
        (m, rest)
    });
    let (m, rest) = r.unwrap();
    assert_eq!(m, 1000);
    assert_eq!(rest, (0..100).collect::<Vec<_>>());
    assert_eq!(
        calls.load(Ordering::Relaxed),
        101,
        "each message examined once"
    );
});

#[derive(Debug, PartialEq)]
enum Msg {
    From(Pid<Msg>, u32),
    Noise(u32),
}

impl Keyed for Msg {
    type Key = Pid<Msg>;
    fn key(&self) -> Option<Pid<Msg>> {
        match self {
            Msg::From(p, _) => Some(*p),
            Msg::Noise(_) => None,
        }
    }
}

rt_test!(
    keyed_receive_takes_each_senders_messages_in_order,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let kids: Vec<Pid<Msg>> = (0..200)
                .map(|_| {
                    cx.spawn(move |c: Context<Msg>| async move {
                        me.send(Msg::Noise(0));
                        me.send(Msg::From(c.pid(), 1));
                        me.send(Msg::From(c.pid(), 2));
                    })
                })
                .collect();
            for k in kids.iter().rev() {
                assert_eq!(cx.recv_key(k).await, Msg::From(*k, 1));
            }
            // A plain receive in between: the index must not hand out a taken message.
            let mut noise = 0;
            let mut seconds = Vec::new();
            for _ in 0..400 {
                match cx.recv().await {
                    Msg::Noise(_) => noise += 1,
                    Msg::From(p, 2) => seconds.push(p),
                    m => panic!("unexpected {m:?}"),
                }
            }
            assert!(cx.try_recv().is_none());
            // Children run concurrently: their second messages arrive in any order across
            // children (only per-sender order is promised), one from each.
            let (mut seconds, mut kids) = (seconds, kids);
            seconds.sort();
            kids.sort();
            (noise, seconds == kids)
        });
        assert_eq!(r.unwrap(), (200, true));
    }
);

rt_test!(keyed_and_predicate_receives_mix, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        let me = cx.pid();
        let a = cx.spawn(|_: Context<Msg>| async {});
        let b = cx.spawn(|_: Context<Msg>| async {});
        me.send(Msg::From(a, 1));
        me.send(Msg::From(b, 1));
        me.send(Msg::From(a, 2));
        // Predicate receive takes a's second message; the key index must skip it.
        let m = cx.recv_match(|m| *m == Msg::From(a, 2)).await;
        assert_eq!(m, Msg::From(a, 2));
        assert_eq!(cx.recv_key(&a).await, Msg::From(a, 1));
        assert_eq!(cx.recv_key(&b).await, Msg::From(b, 1));
        assert!(cx.try_recv().is_none());
        me.send(Msg::From(a, 3));
        assert_eq!(cx.recv_key(&a).await, Msg::From(a, 3));
    });
    r.unwrap();
});

rt_test!(
    keyed_receive_in_reverse_order_of_many_children,
    |rt: &Runtime| {
        // The seed's slow case; linear here (the benchmark measures the time).
        const K: usize = 20_000;
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let kids: Vec<Pid<Msg>> = (0..K)
                .map(|i| {
                    cx.spawn(
                        move |c: Context<Msg>| async move { me.send(Msg::From(c.pid(), i as u32)) },
                    )
                })
                .collect();
            for (i, k) in kids.iter().enumerate().rev() {
                assert_eq!(cx.recv_key(k).await, Msg::From(*k, i as u32));
            }
            cx.try_recv().is_none()
        });
        assert!(r.unwrap());
    }
);
