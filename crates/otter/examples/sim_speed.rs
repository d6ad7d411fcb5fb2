//! How fast a simulation runs (issue 43's figures): seeds a minute of a 10-process
//! system that runs one simulated second, and the real time of a simulated hour of a
//! system that mostly sleeps. Run it in release:
//!
//! ```text
//! cargo run --release --example sim_speed -- [SEEDS]
//! ```

use std::time::{Duration, Instant};

use otter::sim::Simulation;
use otter::{Context, Pid};

enum Msg {
    Next(Pid<Msg>),
    Token(u64),
}

/// Ten processes for one simulated second: three tokens go round a ring of ten, each
/// process holding a token for 1 to 20 ms (a sleep) before passing it on, and
/// timing out every 50 ms without one.
fn ring_for_a_second(sim: &mut Simulation) -> u64 {
    sim.block_on(|mut cx: Context<u64>| async move {
        let me = cx.pid();
        let mut pids: Vec<Pid<Msg>> = Vec::new();
        for i in 0..10u64 {
            pids.push(cx.spawn(move |mut c: Context<Msg>| async move {
                let Msg::Next(next) = c.recv().await else {
                    unreachable!()
                };
                let start = otter::time::now();
                let mut passed = 0u64;
                while otter::time::now() - start < Duration::from_secs(1) {
                    if let Some(Msg::Token(t)) = c.recv_timeout(Duration::from_millis(50)).await {
                        c.sleep(Duration::from_millis(1 + (t + i) % 20)).await;
                        next.send(Msg::Token(t + 1));
                        passed += 1;
                    }
                }
                me.send(passed);
            }));
        }
        for (i, p) in pids.iter().enumerate() {
            p.send(Msg::Next(pids[(i + 1) % pids.len()]));
        }
        for t in 0..3 {
            pids[t * 3].send(Msg::Token(0));
        }
        let mut passed = 0;
        for _ in 0..10 {
            passed += cx.recv().await;
        }
        passed
    })
    .unwrap()
}

/// Ten processes that each wake every second for an hour of simulated time: the turns
/// it took.
fn sleepy_hour(sim: &mut Simulation) -> u64 {
    for _ in 0..10 {
        sim.spawn(|cx: Context<()>| async move {
            for _ in 0..3600 {
                cx.sleep(Duration::from_secs(1)).await;
            }
        });
    }
    sim.advance(Duration::from_secs(3600));
    sim.steps()
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let t0 = Instant::now();
    let mut turns = 0;
    let mut passed = 0;
    for seed in 0..seeds {
        let mut sim = Simulation::new(seed);
        passed += ring_for_a_second(&mut sim);
        turns += sim.steps();
    }
    let took = t0.elapsed();
    println!(
        "{seeds} seeds of 10 processes for 1 simulated second: {took:.2?}, {:.0} seeds a minute \
         ({} turns and {} token passes a seed)",
        seeds as f64 * 60.0 / took.as_secs_f64(),
        turns / seeds,
        passed / seeds
    );
    let t0 = Instant::now();
    let mut sim = Simulation::new(1);
    let turns = sleepy_hour(&mut sim);
    println!(
        "a simulated hour of 10 processes waking every second: {:.2?} of real time, {turns} turns",
        t0.elapsed()
    );
}
