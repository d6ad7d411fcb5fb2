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
//!    else running, for a second beside a thread that only spins and for a second
//!    beside one that streams through as much memory as a snapshot reads (controls:
//!    one more busy thread, and its memory traffic), and for a second while a thread
//!    walks snapshots back to back; it prints p50, p99 and p99.9 of each.
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
    // A control: another thread that keeps a core busy without touching the runtime,
    // to tell the snapshot's own effect from that of one more busy thread.
    // A second control: a thread that streams through as much memory as the snapshot
    // reads (about 200 bytes a process), touching nothing of the runtime.
    let spin = |what: u8| {
        let h = rt.handle();
        let on = Arc::new(AtomicBool::new(true));
        let thread = {
            let on = on.clone();
            std::thread::spawn(move || {
                let memory = if what == 1 {
                    vec![1u64; processes * 25]
                } else {
                    Vec::new()
                };
                let mut walks = 0u32;
                let mut sum = 0u64;
                while on.load(Ordering::Relaxed) {
                    match what {
                        0 => std::hint::spin_loop(),
                        1 => sum = sum.wrapping_add(memory.iter().step_by(8).sum::<u64>()),
                        _ => h.processes().for_each(drop),
                    }
                    walks += 1;
                }
                std::hint::black_box(sum);
                walks
            })
        };
        (on, thread)
    };
    let (on, thread) = spin(0);
    let spinning = round_trips(&rt, Duration::from_secs(1));
    on.store(false, Ordering::Relaxed);
    thread.join().expect("the spinner");
    let (on, thread) = spin(1);
    let streaming = round_trips(&rt, Duration::from_secs(1));
    on.store(false, Ordering::Relaxed);
    thread.join().expect("the streamer");
    let (on, thread) = spin(2);
    let walking = round_trips(&rt, Duration::from_secs(1));
    on.store(false, Ordering::Relaxed);
    let walks = thread.join().expect("the walker");
    for (label, times) in [
        ("idle node", &quiet),
        ("beside a thread that spins", &spinning),
        ("beside a thread that streams memory", &streaming),
        ("during snapshots back to back", &walking),
    ] {
        println!(
            "ping-pong, {label}: {} round trips, p50 {:?}, p99 {:?}, p99.9 {:?}",
            times.len(),
            percentile(times, 0.50),
            percentile(times, 0.99),
            percentile(times, 0.999)
        );
    }
    println!("({walks} snapshots walked during the last run)");
    for p in idle {
        p.send(());
    }
}
