//! What the dashboard (`otter::dashboard`) costs a node with many idle processes while
//! a client polls it as the page does (one refresh a second: overview, top processes,
//! tree), against the same node with the dashboard running and nobody looking.
//!
//! ```text
//! cargo run --release --features dashboard --example dashboard_cost -- [processes] [windows] [seconds]
//! ```
//!
//! Spawns `processes` (default 100,000) processes that wait for a message, starts the
//! dashboard, then runs `windows` (default 3) pairs of windows of `seconds` (default
//! 10) each, interleaved: one with no client, one with a client thread that makes the
//! page's three requests every second. A window's CPU is the process's user plus
//! system time (`/proc/self/stat`, fields 14 and 15) over the window, minus the client
//! thread's own (`/proc/thread-self/stat`), as a share of one core. It prints each
//! window and checks nothing (the figures depend on the machine and its load).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use otter::dashboard::Dashboard;
use otter::{Context, Runtime};

/// utime + stime, in clock ticks, from a `stat` file.
fn ticks(path: &str) -> u64 {
    let s = std::fs::read_to_string(path).expect("stat");
    // The fields after the command's closing parenthesis; utime and stime are 14 and 15.
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

const TICKS_PER_SECOND: f64 = 100.0;

fn get(addr: SocketAddr, path: &str) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = Vec::new();
    s.read_to_end(&mut body).unwrap();
    assert!(body.starts_with(b"HTTP/1.1 200"), "{path}");
    body.len()
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let processes = args.next().unwrap_or(100_000);
    let windows = args.next().unwrap_or(3);
    let seconds = args.next().unwrap_or(10);
    let rt = Runtime::new();
    let h = rt.handle();
    for _ in 0..processes {
        h.spawn(|mut cx: Context<()>| async move { cx.recv().await });
    }
    for _ in 0..3 {
        let t = Instant::now();
        let n = h.processes().count();
        println!(
            "a bare walk of the table ({n} processes): {:?}",
            t.elapsed()
        );
    }
    let d = Dashboard::new(&h).start().unwrap();
    let addr = d.local_addr();
    println!("{processes} idle processes, dashboard on http://{addr}/");
    // One walk first: its per-process map is allocated once.
    for _ in 0..3 {
        let t = Instant::now();
        let bytes = get(addr, "/api/processes?sort=queue&limit=20");
        println!(
            "a top-processes answer (a walk): {bytes} bytes in {:?}",
            t.elapsed()
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let window = Duration::from_secs(seconds);
    for w in 0..windows {
        for polling in [false, true] {
            let stop = Arc::new(AtomicBool::new(false));
            let client = polling.then(|| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let own = ticks("/proc/thread-self/stat");
                    let mut refreshes = 0u64;
                    let mut next = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        get(addr, "/api/overview");
                        get(addr, "/api/processes?sort=queue&limit=20");
                        get(addr, "/api/tree");
                        refreshes += 1;
                        next += Duration::from_secs(1);
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                    (ticks("/proc/thread-self/stat") - own, refreshes)
                })
            });
            let t0 = Instant::now();
            let c0 = ticks("/proc/self/stat");
            std::thread::sleep(window);
            let c1 = ticks("/proc/self/stat");
            let wall = t0.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            let (client_ticks, refreshes) = client.map_or((0, 0), |c| c.join().unwrap());
            let node = (c1 - c0).saturating_sub(client_ticks) as f64 / TICKS_PER_SECOND;
            println!(
                "window {w} {}: node CPU {:.2}% of one core ({:.2} s over {wall:.1} s; client thread {:.2} s, {refreshes} refreshes)",
                if polling { "polling" } else { "idle   " },
                100.0 * node / wall,
                node,
                client_ticks as f64 / TICKS_PER_SECOND,
            );
        }
    }
    d.stop();
}
