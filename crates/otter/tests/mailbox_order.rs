//! Rule: messages from one sender to one receiver arrive in the order sent
//! (ref_man_processes.md, "Signal ordering"), with many senders at once.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Runtime};

const SENDERS: u64 = 16;
const PER_SENDER: u64 = 20_000;

rt_test!(
    per_pair_order_with_many_concurrent_senders,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<(u64, u64)>| async move {
            let me = cx.pid();
            for s in 0..SENDERS {
                cx.spawn(move |_: Context<()>| async move {
                    for i in 0..PER_SENDER {
                        me.send((s, i));
                    }
                });
            }
            let mut next = vec![0u64; SENDERS as usize];
            for _ in 0..SENDERS * PER_SENDER {
                let (s, i) = cx.recv().await;
                assert_eq!(next[s as usize], i, "sender {s} out of order");
                next[s as usize] += 1;
            }
            assert!(cx.try_recv().is_none(), "a message was duplicated");
            next
        });
        assert!(r.unwrap().iter().all(|&n| n == PER_SENDER));
    }
);

rt_test!(
    order_holds_across_yields_and_mailbox_blocks,
    |rt: &Runtime| {
        // One sender, far more messages than a receive budget or a queue block holds.
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let me = cx.pid();
            cx.spawn(move |_: Context<()>| async move {
                for i in 0..100_000 {
                    me.send(i);
                }
            });
            for i in 0..100_000 {
                assert_eq!(cx.recv().await, i);
            }
        });
        r.unwrap();
    }
);
