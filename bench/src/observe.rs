//! A seed workload with every operations feature at work (feature `observe`, and
//! `OTTER_BENCH_OBSERVE=1` in the environment): issue 40's "with every feature on, the
//! cost is stated". Compare its runs with the same binary's without the variable
//! (`otter-bench suite --ab` of two wrappers, or alternated runs by hand).
//!
//! While the workload runs, its runtime also has:
//! * a metrics publisher (`otter::metrics::Publisher`) publishing every second (to the
//!   facade's no-op recorder: the publisher's own reads and process are the cost);
//! * the dashboard (`otter::dashboard`) on 127.0.0.1, and a client thread making the
//!   page's three requests every second (overview, top processes, tree), as an operator
//!   with the page open does.
//!
//! Without the variable nothing starts: the binary then measures what the default
//! build does, with the features compiled in.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use otter::Runtime;

/// What runs beside the workload; dropping it stops the client, the dashboard and the
/// publisher.
pub(crate) struct Observed {
    stop: Arc<AtomicBool>,
    client: Option<std::thread::JoinHandle<()>>,
    dashboard: Option<otter::dashboard::Running>,
    publisher: otter::Pid<()>,
    handle: otter::Handle,
}

/// Starts what the module docs list if `OTTER_BENCH_OBSERVE` is set (to anything but
/// `0`).
pub(crate) fn start(rt: &Runtime) -> Option<Observed> {
    if std::env::var_os("OTTER_BENCH_OBSERVE").is_none_or(|v| v == "0") {
        return None;
    }
    let handle = rt.handle();
    let publisher = otter::metrics::Publisher::new(&handle).start(Duration::from_secs(1));
    let dashboard = match otter::dashboard::Dashboard::new(&handle).start() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("otter-bench: observe: the dashboard did not start: {e}");
            return None;
        }
    };
    let addr = dashboard.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let client = std::thread::spawn(move || {
        let mut next = Instant::now();
        while !stopping.load(Ordering::Relaxed) {
            for path in [
                "/api/overview",
                "/api/processes?sort=queue&limit=20",
                "/api/tree",
            ] {
                get(addr, path);
            }
            next += Duration::from_secs(1);
            // Wakes every 10 ms to see the stop, sleeping to the next refresh.
            while !stopping.load(Ordering::Relaxed) && Instant::now() < next {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    });
    Some(Observed {
        stop,
        client: Some(client),
        dashboard: Some(dashboard),
        publisher,
        handle,
    })
}

/// One request, read to its end; a failure is ignored (the workload's figures are what
/// this mode measures).
fn get(addr: SocketAddr, path: &str) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return;
    };
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let _ = s.read_to_end(&mut Vec::new());
}

impl Drop for Observed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.client.take() {
            let _ = c.join();
        }
        if let Some(d) = self.dashboard.take() {
            d.stop();
        }
        self.handle
            .exit(self.publisher, otter::ExitReason::Shutdown);
    }
}
