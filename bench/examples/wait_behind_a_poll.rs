//! How long a process woken into a worker's LIFO slot waits when the poll that woke it
//! goes on computing, while the other worker is idle (docs/design/0031).
//!
//! A sends B a ping after a quiet spell (so that the other worker has parked); B replies
//! (A goes into B's worker's LIFO slot) and then computes for `compute_ms` without
//! yielding. A measures from B's reply to its own receive.
//!
//! `cargo run --release -p otter-bench --example wait_behind_a_poll -- [rounds] [compute_ms] [quiet_ms]`
//! (defaults 40, 30, 20) prints the waits' median, 90th percentile and maximum.

use std::time::{Duration, Instant};

use otter::{Context, Pid, Runtime};

enum ToB {
    Ping(Pid<ToA>),
    Stop,
}

enum ToA {
    Pong(Instant),
}

fn compute(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (rounds, compute_ms, quiet_ms) = (arg(1, 40) as usize, arg(2, 30), arg(3, 20));
    let rt = Runtime::builder().threads(2).build().unwrap();
    let mut waits = rt
        .block_on(move |mut cx: Context<ToA>| async move {
            let b = cx.spawn(move |mut cx: Context<ToB>| async move {
                while let ToB::Ping(a) = cx.recv().await {
                    a.send(ToA::Pong(Instant::now()));
                    compute(Duration::from_millis(compute_ms));
                }
            });
            let mut waits = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                cx.sleep(Duration::from_millis(quiet_ms)).await;
                b.send(ToB::Ping(cx.pid()));
                let ToA::Pong(sent) = cx.recv().await;
                waits.push(sent.elapsed());
            }
            b.send(ToB::Stop);
            waits
        })
        .unwrap();
    waits.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{rounds} rounds, {compute_ms} ms computed after each reply: wait p50 {:.0} us, p90 {:.0} us, max {:.0} us",
        us(waits[waits.len() / 2]),
        us(waits[waits.len() * 9 / 10]),
        us(waits[waits.len() - 1])
    );
}
