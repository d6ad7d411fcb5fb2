//! Rule: no message to a live process is lost or duplicated: a million messages from
//! many OS threads, sent from outside the runtime, all arrive exactly once.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Runtime};

const THREADS: u64 = 8;
const PER_THREAD: u64 = 125_000;

rt_test!(
    a_million_messages_from_many_threads_all_arrive,
    |rt: &Runtime| {
        let (tx, rx) = std::sync::mpsc::channel();
        let receiver = rt
            .handle()
            .spawn(move |mut cx: Context<(u64, u64)>| async move {
                let mut next = vec![0u64; THREADS as usize];
                let mut sum = 0u64;
                for _ in 0..THREADS * PER_THREAD {
                    let (t, i) = cx.recv().await;
                    assert_eq!(
                        next[t as usize], i,
                        "thread {t}: lost, duplicated or reordered"
                    );
                    next[t as usize] += 1;
                    sum += i;
                }
                let extra = cx.try_recv();
                tx.send((sum, extra.is_none())).unwrap();
            });
        let senders: Vec<_> = (0..THREADS)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        receiver.send((t, i));
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().unwrap();
        }
        let (sum, no_extra) = rx.recv().unwrap();
        assert_eq!(sum, THREADS * (PER_THREAD * (PER_THREAD - 1) / 2));
        assert!(no_extra, "a message arrived twice");
    }
);

rt_test!(
    messages_between_processes_on_all_workers_all_arrive,
    |rt: &Runtime| {
        // Many processes each send to many others: every process must get exactly its share.
        const P: usize = 64;
        const EACH: u64 = 2_000;
        let r = rt.block_on(|mut cx: Context<u64>| async move {
            let parent = cx.pid();
            let pids: Vec<_> = (0..P)
                .map(|_| {
                    cx.spawn(move |mut c: Context<u64>| async move {
                        let mut sum = 0;
                        for _ in 0..EACH * P as u64 {
                            sum += c.recv().await;
                        }
                        parent.send(sum);
                    })
                })
                .collect();
            for _ in 0..P {
                let pids = pids.clone();
                cx.spawn(move |_: Context<()>| async move {
                    for i in 0..EACH {
                        for p in &pids {
                            p.send(i);
                        }
                    }
                });
            }
            let mut total = 0;
            for _ in 0..P {
                total += cx.recv().await;
            }
            total
        });
        let expect = (P * P) as u64 * (EACH * (EACH - 1) / 2);
        assert_eq!(r.unwrap(), expect);
    }
);
