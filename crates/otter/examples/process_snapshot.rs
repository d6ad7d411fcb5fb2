//! A snapshot of a million idle processes (`otter::introspect`), and what it does to a
//! ping-pong pair's round trips while it runs.
//!
//! ```text
//! cargo run --release --example process_snapshot -- [processes] [threads]
//! ```
//!
//! 1. Spawns `processes` (default 1,000,000) processes that wait for a message.
//! 2. Times `Handle::processes()` walked to the end, three times, and prints each.
//! 3. Starts a ping-pong pair and measures its round trips for a second with nothing
//!    else running, then for a second while another thread walks snapshots in a loop,
//!    and prints both p50 and p99.
//!
//! It prints figures and checks only that every idle process was seen: no timed
//! assertion (the figures depend on the machine and on what else runs on it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use otter::{Context, Pid, Runtime};

/// Round trips of the pair for `for_how_long`, each timed, sorted.
fn round_trips(rt: &Runtime, for_how_long: Duration) -> Vec<Duration> {
    rt.block_on(move |mut cx: Context<()>| async move {
        let me = cx.pid();
        let echo: Pid<()> = cx.spawn(move |mut c: Context<()>| async move {
            loop {
                c.recv().await;
                me.send(());
            }
        });
        let mut times = Vec::with_capacity(1 << 20);
        let start = Instant::now();
        while start.elapsed() < for_how_long {
            let t = Instant::now();
            echo.send(());
            cx.recv().await;
            times.push(t.elapsed());
        }
        cx.exit(echo, otter::ExitReason::Kill);
        times.sort();
        times
    })
    .expect("the pair runs")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p) as usize]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let processes: usize = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("processes"));
    let threads: usize = args.next().map_or_else(
        || std::thread::available_parallelism().map_or(2, |n| n.get()),
        |a| a.parse().expect("threads"),
    );
    let rt = Runtime::builder()
        .threads(threads)
        .build()
        .expect("runtime");
    let h = rt.handle();

    let t = Instant::now();
    let idle: Vec<Pid<()>> = rt
        .block_on(move |mut cx: Context<()>| async move {
            let mut idle = Vec::with_capacity(processes);
            for _ in 0..processes {
                idle.push(cx.spawn(|mut c: Context<()>| async move { c.recv().await }));
                cx.consume_budget().await;
            }
            idle
        })
        .expect("spawned");
    println!(
        "spawned {processes} idle processes on {threads} workers in {:?}",
        t.elapsed()
    );

    for run in 1..=3 {
        let t = Instant::now();
        let seen = h.processes().count();
        let took = t.elapsed();
        assert!(seen >= processes, "a snapshot saw {seen} of {processes}");
        println!(
            "snapshot {run}: {seen} processes in {took:?} ({:.0} ns a process)",
            took.as_nanos() as f64 / seen as f64
        );
    }

    let quiet = round_trips(&rt, Duration::from_secs(1));
    let walking = Arc::new(AtomicBool::new(true));
    let walker = {
        let h = rt.handle();
        let walking = walking.clone();
        std::thread::spawn(move || {
            let mut walks = 0u32;
            while walking.load(Ordering::Relaxed) {
                h.processes().for_each(drop);
                walks += 1;
            }
            walks
        })
    };
    let busy = round_trips(&rt, Duration::from_secs(1));
    walking.store(false, Ordering::Relaxed);
    let walks = walker.join().expect("the walker");
    for (label, times) in [("idle node", &quiet), ("during snapshots", &busy)] {
        println!(
            "ping-pong, {label}: {} round trips, p50 {:?}, p99 {:?}",
            times.len(),
            percentile(times, 0.50),
            percentile(times, 0.99)
        );
    }
    println!("({walks} snapshots walked during the second run)");
    for p in idle {
        p.send(());
    }
}
