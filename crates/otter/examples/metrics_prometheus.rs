//! The runtime's metrics served to Prometheus (`otter::metrics`, feature `metrics`).
//!
//! ```text
//! cargo run -p otter-otp --features metrics --example metrics_prometheus -- [port] [seconds]
//! curl http://127.0.0.1:9000/metrics
//! ```
//!
//! `metrics-exporter-prometheus` is the recorder, with its HTTP listener on
//! 127.0.0.1:`port` (default 9000); an `otter::metrics::Publisher` process sets the
//! runtime's metrics every second. A few processes make something to see: a job
//! starter spawns a short job every 10 ms, and one job in five fails (`Err`), one in
//! ten is shut down, and 100 idle processes wait for a message.
//!
//! With `seconds`, it stops after that long, first fetching its own `/metrics` and
//! printing the `otter_` lines; without, it runs until it is killed.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use otter::metrics::Publisher;
use otter::{Context, ErrorReason, ExitReason, Runtime};

fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map_or(9000, |p| p.parse().expect("a port"));
    let seconds: Option<u64> = args.next().map(|s| s.parse().expect("seconds"));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));

    // The recorder, installed globally, with its listener on its own thread.
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .expect("the Prometheus exporter starts");

    let rt = Runtime::new();
    let handle = rt.handle();
    Publisher::new(&handle).start(Duration::from_secs(1));

    // Idle processes, and a starter of short jobs.
    for _ in 0..100 {
        handle.spawn(|mut cx: Context<()>| async move { cx.recv().await });
    }
    handle.spawn(|cx: Context<()>| async move {
        for n in 0u64.. {
            cx.spawn(move |_: Context<()>| async move {
                match n % 10 {
                    0 | 5 => ExitReason::Error(ErrorReason(Arc::new(std::io::Error::other(
                        "a failed job",
                    )))),
                    3 => ExitReason::Shutdown,
                    _ => ExitReason::Normal,
                }
            });
            cx.sleep(Duration::from_millis(10)).await;
        }
    });
    println!("serving http://{addr}/metrics");

    let Some(seconds) = seconds else {
        loop {
            std::thread::park();
        }
    };
    std::thread::sleep(Duration::from_secs(seconds));
    let mut s = TcpStream::connect(addr).expect("the listener answers");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    for line in page.lines().filter(|l| l.starts_with("otter_")) {
        println!("{line}");
    }
    drop(rt);
}
