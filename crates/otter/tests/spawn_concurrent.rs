//! Rule: spawning from many threads at once, inside and outside the runtime, gives every
//! process a distinct pid and runs every one.

#[path = "support/rt.rs"]
mod support;

use std::collections::HashSet;

use otter::{Context, Pid, Runtime};

rt_test!(spawning_from_many_threads_at_once, |rt: &Runtime| {
    const THREADS: usize = 8;
    const EACH: usize = 5_000;
    let (tx, rx) = std::sync::mpsc::channel::<Pid<u8>>();
    let collector = rt
        .handle()
        .spawn(move |mut cx: Context<Pid<u8>>| async move {
            for _ in 0..THREADS * EACH {
                tx.send(cx.recv().await).unwrap();
            }
        });
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let h = rt.handle();
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|_| h.spawn(move |c: Context<u8>| async move { collector.send(c.pid()) }))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let spawned: Vec<Pid<u8>> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let ran: HashSet<Pid<u8>> = (0..THREADS * EACH).map(|_| rx.recv().unwrap()).collect();
    let spawned: HashSet<Pid<u8>> = spawned.into_iter().collect();
    assert_eq!(spawned.len(), THREADS * EACH, "pids are distinct");
    assert_eq!(ran, spawned, "every spawned process ran");
});

rt_test!(spawning_from_many_processes_at_once, |rt: &Runtime| {
    const P: usize = 50;
    const EACH: usize = 2_000;
    let r = rt.block_on(|mut cx: Context<usize>| async move {
        let me = cx.pid();
        for _ in 0..P {
            cx.spawn(move |mut c: Context<()>| async move {
                let sub = c.pid();
                for _ in 0..EACH {
                    c.spawn(move |_: Context<()>| async move { sub.send(()) });
                }
                for _ in 0..EACH {
                    c.recv().await;
                }
                me.send(EACH);
            });
        }
        let mut n = 0;
        for _ in 0..P {
            n += cx.recv().await;
        }
        n
    });
    assert_eq!(r.unwrap(), P * EACH);
});

#[test]
fn pids_print_like_erlang() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let s = rt
        .block_on(|cx: Context<()>| async move { cx.pid().to_string() })
        .unwrap();
    let parts: Vec<&str> = s
        .trim_start_matches('<')
        .trim_end_matches('>')
        .split('.')
        .collect();
    assert_eq!(parts.len(), 3, "{s}");
    assert_eq!(parts[0], "0");
    assert!(parts[1].parse::<u32>().is_ok() && parts[2].parse::<u32>().is_ok());
}
