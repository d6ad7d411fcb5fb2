//! `http-load`: the closed-loop HTTP/1.1 load generator of the http workload (WORKLOADS.md
//! "http").
//!
//! Neither otter nor tokio, so that it measures both servers alike: `threads` OS threads
//! (the suite gives it one core and `threads=1`), each with its own `mio::Poll` and its
//! share of the `conns` keep-alive connections to 127.0.0.1:port. Each connection has one
//! request in flight at a time: `GET /health` once (set-up), then `POST /jobs`
//! `{"work_us":W}` → `GET /jobs/{id}` → `DELETE /jobs/{id}` → `POST` ... with the id the
//! `POST` answered. A response is parsed with `httparse` and checked: `POST` 201 with a JSON
//! body whose `id` is a number and `status` `"running"`; `GET` 200 with that `id` and a
//! `status` of `"running"` or `"done"`; `DELETE` 204; a `Content-Length` (none only on a
//! 204), no `Connection: close`, nothing after the response. Anything else fails the
//! connection (counted in `errors`, the connection closed).
//!
//! Phases as `echo-load`'s: set-up (at most [`CONNECTING`] connects in flight per thread,
//! each connection done once its `/health` is back; at most [`SETUP_LIMIT`]), 1 s of
//! warm-up, then `seconds` measured: a response that completes in that window is counted,
//! and its time (from the request's first write to the response's last byte) goes into
//! `echo-load`'s histogram (1/128 relative resolution). Percentiles by nearest rank, µs.
//!
//! Output: `ops` = `requests`, `ops_per_s` (requests per second), `p50_us`, `p99_us`,
//! `p999_us`, `max_us`, `p50_us_by_route` and `p99_us_by_route` (`{"post":..,"get":..,
//! "delete":..}`), `errors`, `connections` (set up), `jobs` (POSTs answered in the
//! window), `load_cpu_s` (this process's CPU time in the window: near `threads` ×
//! `seconds` means the generator was the limit); with `server_pid`: `server_cpu_s` and
//! `server_cpu_s_per_million` (utime + stime of `/proc/PID/stat` over the window, per
//! million requests), `server_vmhwm_kb`, `server_vmrss_kb` and `server_threads`
//! (`/proc/PID/status` at the window's end: the peak and current resident set, kB, and its
//! OS threads, blocking pools included). check: no error, at least one request.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::args::Params;
use crate::json_line::{json, round_to};
use crate::workloads::echo::{Histogram, open_files_limit, process_cpu, us};
use crate::workloads::{Footprint, Outcome, count};

/// The most connections.
pub(super) const MAX_CONNS: u64 = 1_000_000;
/// The longest measurement: an hour.
pub(super) const MAX_SECONDS: u64 = 3600;
/// The longest job: the server's bound.
pub(super) const MAX_WORK_US: u64 = super::server::MAX_WORK_US;
/// The largest pid Linux hands out (`pid_max` at most 2^22).
pub(super) const MAX_PID: u64 = 1 << 22;

/// Connects in flight at once per thread (see `echo-load`).
const CONNECTING: usize = 256;
/// Set-up has this long to bring every connection to its first response.
const SETUP_LIMIT: Duration = Duration::from_secs(60);
/// The warm-up before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// Descriptors kept free besides the connections.
const SPARE_FDS: u64 = 32;
/// Bytes charged per connection (socket, state, a request and a response).
const CONN_BYTES: u64 = 4096;
/// The largest response accepted: ours are under 100 bytes of body.
const MAX_RESPONSE: usize = 64 * 1024;
/// `httparse`'s header slots: hyper sends 3 or 4.
const MAX_HEADERS: usize = 16;

/// `port` is the server's and must be given; `conns` must fit in the descriptors.
pub(super) fn validate(p: &Params) -> Result<(), String> {
    if p.int("port") == 0 {
        return Err("port= is required: the http server's port, 1..65535".into());
    }
    let conns = p.int("conns");
    if let Some(limit) = open_files_limit()
        && conns + SPARE_FDS > limit
    {
        return Err(format!(
            "conns={conns} needs {} descriptors, more than ulimit -n ({limit}) allows",
            conns + SPARE_FDS
        ));
    }
    Ok(())
}

/// Each connection: its socket, state and buffers.
pub(super) fn footprint(p: &Params) -> Footprint {
    Footprint::new(("seconds", count(p.int("seconds"))), ("0", 0)).charge(
        "conns",
        count(p.int("conns")),
        "connections",
        CONN_BYTES,
    )
}

/// Runs the load and prints its line.
pub(super) fn main(p: &Params, threads: usize) -> ExitCode {
    let port = p.int("port") as u16;
    let conns = p.int("conns") as usize;
    let seconds = Duration::from_secs(p.int("seconds"));
    let work_us = p.int("work_us");
    let server_pid = p.int("server_pid");
    let server_stat = format!("/proc/{server_pid}/stat");
    if server_pid > 0 && process_cpu(&server_stat).is_none() {
        eprintln!(
            "otter-bench: http-load: server_pid={server_pid}: no such process (cannot read {server_stat})"
        );
        return ExitCode::from(crate::EXIT_USAGE);
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let threads = threads.min(conns).max(1);

    let barrier = Arc::new(Barrier::new(threads + 1));
    let mut handles = Vec::with_capacity(threads);
    let mut starts = Vec::with_capacity(threads);
    for t in 0..threads {
        let share = conns / threads + usize::from(t < conns % threads);
        let (tx, rx) = mpsc::channel::<(Instant, Instant)>();
        starts.push(tx);
        let barrier = barrier.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("http-load-{t}"))
            .spawn(move || Worker::new(addr, share, work_us).run(&barrier, &rx));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("otter-bench: http-load: cannot start a thread: {e}");
                std::process::exit(i32::from(crate::EXIT_INTERNAL));
            }
        }
    }
    barrier.wait();
    let warm_end = Instant::now() + WARMUP;
    let end = warm_end + seconds;
    for tx in &starts {
        let _ = tx.send((warm_end, end));
    }
    std::thread::sleep(warm_end.saturating_duration_since(Instant::now()));
    let server0 = (server_pid > 0)
        .then(|| process_cpu(&server_stat))
        .flatten();
    let self0 = process_cpu("/proc/self/stat");
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    let server1 = (server_pid > 0)
        .then(|| process_cpu(&server_stat))
        .flatten();
    let self1 = process_cpu("/proc/self/stat");
    let memory = (server_pid > 0)
        .then(|| std::fs::read_to_string(format!("/proc/{server_pid}/status")).ok())
        .flatten();

    let mut total = Tally::default();
    for h in handles {
        match h.join() {
            Ok(t) => total.add(t),
            Err(_) => {
                eprintln!("otter-bench: http-load: a load thread panicked");
                return ExitCode::from(crate::EXIT_INTERNAL);
            }
        }
    }

    let check = if total.errors > 0 {
        Err(format!(
            "{} connection errors (first: {})",
            total.errors,
            total.first_error.as_deref().unwrap_or("?")
        ))
    } else if total.requests == 0 {
        Err("no request completed in the measured window".into())
    } else {
        Ok(())
    };
    let mut out = Outcome::new(seconds, total.requests, check);
    out.extra.push(("requests", total.requests.into()));
    for (key, per_mille) in [("p50_us", 500), ("p99_us", 990), ("p999_us", 999)] {
        out.extra.push((key, us(total.hist.percentile(per_mille))));
    }
    out.extra.push(("max_us", us(total.max_ns)));
    for (key, per_mille) in [("p50_us_by_route", 500), ("p99_us_by_route", 990)] {
        let m: serde_json::Map<String, serde_json::Value> = ROUTES
            .iter()
            .zip(&total.by_route)
            .map(|(r, h)| (r.to_string(), us(h.percentile(per_mille))))
            .collect();
        out.extra.push((key, m.into()));
    }
    out.extra.push(("errors", total.errors.into()));
    out.extra.push(("connections", total.connected.into()));
    out.extra.push(("jobs", total.jobs.into()));
    if let (Some(a), Some(b)) = (self0, self1) {
        out.extra.push(("load_cpu_s", round_to(b - a, 2).into()));
    }
    if server_pid > 0 {
        let cpu = server0.zip(server1).map(|(a, b)| b - a);
        out.extra.push((
            "server_cpu_s",
            cpu.map_or(serde_json::Value::Null, |c| round_to(c, 2).into()),
        ));
        out.extra.push((
            "server_cpu_s_per_million",
            cpu.filter(|_| total.requests > 0)
                .map_or(serde_json::Value::Null, |c| {
                    round_to(c * 1e6 / total.requests as f64, 3).into()
                }),
        ));
        for (key, field) in [
            ("server_vmhwm_kb", "VmHWM:"),
            ("server_vmrss_kb", "VmRSS:"),
            ("server_threads", "Threads:"),
        ] {
            let kb = memory.as_deref().and_then(|s| status_kb(s, field));
            out.extra
                .push((key, kb.map_or(serde_json::Value::Null, Into::into)));
        }
        if cpu.is_none() || memory.is_none() {
            out.notes
                .push(format!("the server's /proc/{server_pid} became unreadable"));
        }
    }
    let mut line = json("http-load", p, threads, &out);
    // The client is neither otter nor tokio: say what it is.
    line["impl"] = "mio".into();
    println!("{line}");
    if out.check.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    }
}

/// The number of `field` (`"VmHWM:"`, kB; `"Threads:"`) in a `/proc/PID/status`.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What one thread measured.
#[derive(Debug)]
struct Tally {
    requests: u64,
    jobs: u64,
    hist: Histogram,
    /// The same, per route: POST, GET, DELETE (set-up's /health is not measured).
    by_route: [Histogram; 3],
    max_ns: u64,
    errors: u64,
    first_error: Option<String>,
    connected: u64,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            requests: 0,
            jobs: 0,
            hist: Histogram::new(),
            by_route: [Histogram::new(), Histogram::new(), Histogram::new()],
            max_ns: 0,
            errors: 0,
            first_error: None,
            connected: 0,
        }
    }
}

impl Tally {
    fn add(&mut self, t: Tally) {
        self.requests += t.requests;
        self.jobs += t.jobs;
        self.hist.merge(&t.hist);
        for (a, b) in self.by_route.iter_mut().zip(&t.by_route) {
            a.merge(b);
        }
        self.max_ns = self.max_ns.max(t.max_ns);
        self.errors += t.errors;
        self.connected += t.connected;
        if self.first_error.is_none() {
            self.first_error = t.first_error;
        }
    }

    fn error(&mut self, why: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(why);
        }
    }
}

/// The measured routes, as `p50_us_by_route` and `p99_us_by_route` name them.
const ROUTES: [&str; 3] = ["post", "get", "delete"];

/// The request a connection has in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `GET /health`: set-up.
    Health,
    /// `POST /jobs`.
    Post,
    /// `GET /jobs/{id}`.
    Get(u64),
    /// `DELETE /jobs/{id}`.
    Delete(u64),
}

impl Step {
    /// Its index in [`ROUTES`], `None` for set-up's `/health`.
    fn route(self) -> Option<usize> {
        match self {
            Step::Health => None,
            Step::Post => Some(0),
            Step::Get(_) => Some(1),
            Step::Delete(_) => Some(2),
        }
    }

    /// The request's bytes.
    fn request(self, work_us: u64) -> Vec<u8> {
        const HOST: &str = "Host: 127.0.0.1\r\n";
        match self {
            Step::Health => format!("GET /health HTTP/1.1\r\n{HOST}\r\n").into_bytes(),
            Step::Post => {
                let body = format!("{{\"work_us\":{work_us}}}");
                format!(
                    "POST /jobs HTTP/1.1\r\n{HOST}Content-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes()
            }
            Step::Get(id) => format!("GET /jobs/{id} HTTP/1.1\r\n{HOST}\r\n").into_bytes(),
            Step::Delete(id) => format!("DELETE /jobs/{id} HTTP/1.1\r\n{HOST}\r\n").into_bytes(),
        }
    }

    /// Checks the response to this step (status `code`, `body`); the next step.
    fn next(self, code: u16, body: &[u8]) -> Result<Step, String> {
        let json = || -> Result<serde_json::Value, String> {
            serde_json::from_slice(body)
                .map_err(|e| format!("{self:?}: a body that is not JSON: {e}"))
        };
        let want = |c: u16| {
            if code == c {
                Ok(())
            } else {
                Err(format!(
                    "{self:?}: status {code}, want {c} (body {:?})",
                    String::from_utf8_lossy(body)
                ))
            }
        };
        match self {
            Step::Health => {
                want(200)?;
                (json()?["status"] == "ok")
                    .then_some(Step::Post)
                    .ok_or_else(|| format!("{self:?}: a body without status ok"))
            }
            Step::Post => {
                want(201)?;
                let v = json()?;
                match (v["id"].as_u64(), v["status"].as_str()) {
                    (Some(id), Some("running")) => Ok(Step::Get(id)),
                    _ => Err(format!("{self:?}: an unexpected body {v}")),
                }
            }
            Step::Get(id) => {
                want(200)?;
                let v = json()?;
                match (v["id"].as_u64(), v["status"].as_str()) {
                    (Some(i), Some("running" | "done")) if i == id => Ok(Step::Delete(id)),
                    _ => Err(format!("{self:?}: an unexpected body {v}")),
                }
            }
            Step::Delete(_) => {
                want(204)?;
                Ok(Step::Post)
            }
        }
    }
}

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not opened yet (waiting for a connect slot).
    Idle,
    /// Connect in flight.
    Connecting,
    /// A request in flight.
    Busy,
    /// Failed (counted).
    Dead,
}

/// One connection.
#[derive(Debug)]
struct Conn {
    stream: Option<TcpStream>,
    state: State,
    step: Step,
    /// The request's bytes, `sent` of them written.
    out: Vec<u8>,
    sent: usize,
    /// The response so far.
    input: Vec<u8>,
    t0: Instant,
    /// Its `/health` is back (set-up done).
    ready: bool,
}

/// What a response buffer holds.
enum Parsed {
    /// Not all of it yet.
    Partial,
    /// A whole response: its status and its body.
    Whole(u16, std::ops::Range<usize>),
}

/// Parses one response from `buf` (see the module docs for what is refused).
fn parse(buf: &[u8]) -> Result<Parsed, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let head = match r.parse(buf) {
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Ok(httparse::Status::Complete(n)) => n,
        Err(e) => return Err(format!("a malformed response: {e}")),
    };
    let code = r.code.unwrap_or(0);
    let mut length = None;
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_none() {
                return Err("a bad Content-Length".into());
            }
        } else if h.name.eq_ignore_ascii_case("connection")
            && h.value.eq_ignore_ascii_case(b"close")
        {
            return Err("the server closes the connection (Connection: close)".into());
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err("a body without Content-Length (Transfer-Encoding)".into());
        }
    }
    let length = match (length, code) {
        (Some(n), _) => n,
        (None, 204) => 0,
        (None, _) => return Err(format!("status {code} without Content-Length")),
    };
    let end = head + length;
    if buf.len() < end {
        return Ok(Parsed::Partial);
    }
    if buf.len() > end {
        return Err("bytes after the response".into());
    }
    Ok(Parsed::Whole(code, head..end))
}

/// One load thread: its poller and its connections.
struct Worker {
    addr: SocketAddr,
    work_us: u64,
    conns: Vec<Conn>,
    tally: Tally,
}

impl Worker {
    fn new(addr: SocketAddr, n: usize, work_us: u64) -> Self {
        let now = Instant::now();
        let conns = (0..n)
            .map(|_| Conn {
                stream: None,
                state: State::Idle,
                step: Step::Health,
                out: Vec::new(),
                sent: 0,
                input: Vec::new(),
                t0: now,
                ready: false,
            })
            .collect();
        Worker {
            addr,
            work_us,
            conns,
            tally: Tally::default(),
        }
    }

    /// Set-up, then the phases the main thread sends once every thread is set up.
    fn run(mut self, barrier: &Barrier, start: &mpsc::Receiver<(Instant, Instant)>) -> Tally {
        let mut poll = match Poll::new() {
            Ok(p) => p,
            Err(e) => {
                for _ in 0..self.conns.len() {
                    self.tally.error(format!("cannot create a poller: {e}"));
                }
                barrier.wait();
                return self.tally;
            }
        };
        let mut events = Events::with_capacity(1024);

        // Set-up: connects a window at a time, until every connection has its /health.
        let setup_end = Instant::now() + SETUP_LIMIT;
        let mut next_idle = 0;
        let mut connecting = 0;
        let mut pending = self.conns.len();
        while pending > 0 {
            while connecting < CONNECTING && next_idle < self.conns.len() {
                let i = next_idle;
                next_idle += 1;
                match self.connect(&poll, i) {
                    Ok(()) => connecting += 1,
                    Err(e) => {
                        self.fail(&poll, i, format!("connect: {e}"));
                        pending -= 1;
                    }
                }
            }
            let now = Instant::now();
            if now >= setup_end {
                for i in 0..self.conns.len() {
                    if !self.conns[i].ready && self.conns[i].state != State::Dead {
                        self.fail(&poll, i, format!("not set up in {SETUP_LIMIT:?}"));
                    }
                }
                break;
            }
            if let Err(e) = poll.poll(&mut events, Some(setup_end - now))
                && e.kind() != io::ErrorKind::Interrupted
            {
                self.fail_all(&poll, format!("poll: {e}"));
                break;
            }
            for ev in &events {
                let i = ev.token().0;
                let before = (self.conns[i].state, self.conns[i].ready);
                self.on_event(&poll, i, None);
                let c = &self.conns[i];
                if before.0 == State::Connecting && c.state != State::Connecting {
                    connecting -= 1;
                }
                if !before.1 && (c.ready || c.state == State::Dead) {
                    pending -= 1;
                }
            }
        }
        self.tally.connected = self.conns.iter().filter(|c| c.ready).count() as u64;

        barrier.wait();
        let Ok((warm_end, end)) = start.recv() else {
            return self.tally;
        };
        loop {
            let now = Instant::now();
            if now >= end {
                break;
            }
            let wake = if now < warm_end { warm_end } else { end };
            if let Err(e) = poll.poll(&mut events, Some(wake - now))
                && e.kind() != io::ErrorKind::Interrupted
            {
                self.fail_all(&poll, format!("poll: {e}"));
                break;
            }
            for ev in &events {
                self.on_event(&poll, ev.token().0, Some((warm_end, end)));
            }
        }
        self.tally
    }

    /// Opens connection `i` (non-blocking) and registers it.
    fn connect(&mut self, poll: &Poll, i: usize) -> io::Result<()> {
        let mut s = TcpStream::connect(self.addr)?;
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)?;
        let c = &mut self.conns[i];
        c.stream = Some(s);
        c.state = State::Connecting;
        Ok(())
    }

    /// Counts connection `i` as failed and closes it.
    fn fail(&mut self, poll: &Poll, i: usize, why: String) {
        let c = &mut self.conns[i];
        if c.state == State::Dead {
            return;
        }
        c.state = State::Dead;
        if let Some(mut s) = c.stream.take() {
            let _ = poll.registry().deregister(&mut s);
        }
        c.input = Vec::new();
        c.out = Vec::new();
        self.tally.error(why);
    }

    fn fail_all(&mut self, poll: &Poll, why: String) {
        for i in 0..self.conns.len() {
            self.fail(poll, i, why.clone());
        }
    }

    /// Handles readiness of connection `i`; `window`: the measured phase's (start, end), in
    /// which completed requests are counted.
    fn on_event(&mut self, poll: &Poll, i: usize, window: Option<(Instant, Instant)>) {
        match self.conns[i].state {
            State::Idle | State::Dead => {}
            // As in echo-load: the socket's own state tells whether the connect is done.
            State::Connecting => {
                let done = {
                    let s = self.conns[i].stream.as_ref().expect("a connecting stream");
                    match s.take_error() {
                        Ok(Some(e)) | Err(e) => Err(e),
                        Ok(None) => match s.peer_addr() {
                            Ok(_) => Ok(true),
                            Err(e)
                                if e.kind() == io::ErrorKind::NotConnected
                                    || e.raw_os_error() == Some(115) =>
                            {
                                Ok(false) // EINPROGRESS: not yet
                            }
                            Err(e) => Err(e),
                        },
                    }
                };
                match done {
                    Ok(false) => {}
                    Ok(true) => {
                        if let Some(s) = &self.conns[i].stream {
                            let _ = s.set_nodelay(true);
                        }
                        self.start_request(poll, i, window);
                    }
                    Err(e) => self.fail(poll, i, format!("connect: {e}")),
                }
            }
            State::Busy => self.progress(poll, i, true, window),
        }
    }

    /// Sends connection `i`'s next request (its `step`).
    fn start_request(&mut self, poll: &Poll, i: usize, window: Option<(Instant, Instant)>) {
        let work_us = self.work_us;
        let c = &mut self.conns[i];
        c.out = c.step.request(work_us);
        c.sent = 0;
        c.input.clear();
        c.t0 = Instant::now();
        c.state = State::Busy;
        // Nothing can have come back yet: no read (the response's arrival is an edge).
        self.progress(poll, i, false, window);
    }

    /// Writes what the socket takes of the request, then (`read`) reads what has come
    /// back, each until done or `WouldBlock` (the poller is edge-triggered). A whole
    /// response is checked, counted (in the window) and followed by the next request.
    fn progress(&mut self, poll: &Poll, i: usize, read: bool, window: Option<(Instant, Instant)>) {
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        let mut failure = None;
        while c.sent < c.out.len() {
            match s.write(&c.out[c.sent..]) {
                Ok(0) => {
                    failure = Some("write: wrote 0 bytes".to_string());
                    break;
                }
                Ok(n) => c.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(format!("write: {e}"));
                    break;
                }
            }
        }
        let mut chunk = [0u8; 4096];
        while read && failure.is_none() {
            match s.read(&mut chunk) {
                Ok(0) => failure = Some("read: the server closed the connection".to_string()),
                Ok(n) if c.input.len() + n > MAX_RESPONSE => {
                    failure = Some(format!("a response over {MAX_RESPONSE} bytes"));
                }
                Ok(n) => c.input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failure = Some(format!("read: {e}")),
            }
        }
        if let Some(why) = failure {
            return self.fail(poll, i, why);
        }
        let step = c.step;
        let (code, body) = match parse(&c.input) {
            Ok(Parsed::Partial) => return,
            Ok(Parsed::Whole(code, body)) => (code, body),
            Err(why) => return self.fail(poll, i, format!("{step:?}: {why}")),
        };
        let done = Instant::now();
        let next = match step.next(code, &c.input[body]) {
            Ok(next) => next,
            Err(why) => return self.fail(poll, i, why),
        };
        c.step = next;
        c.ready = true;
        if let Some((from, to)) = window
            && done >= from
            && done < to
        {
            let ns = done.duration_since(c.t0).as_nanos() as u64;
            self.tally.requests += 1;
            self.tally.jobs += u64::from(step == Step::Post);
            self.tally.hist.record(ns);
            if let Some(r) = step.route() {
                self.tally.by_route[r].record(ns);
            }
            self.tally.max_ns = self.tally.max_ns.max(ns);
        }
        self.start_request(poll, i, window);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_cycle_checks_every_response() {
        let post = Step::Post.next(201, br#"{"id":7,"status":"running"}"#);
        assert_eq!(post, Ok(Step::Get(7)));
        assert_eq!(
            Step::Get(7).next(200, br#"{"id":7,"status":"done"}"#),
            Ok(Step::Delete(7))
        );
        assert!(
            Step::Get(7)
                .next(200, br#"{"id":8,"status":"done"}"#)
                .is_err()
        );
        assert!(Step::Get(7).next(404, b"no job 7").is_err());
        assert_eq!(Step::Delete(7).next(204, b""), Ok(Step::Post));
        assert!(Step::Post.next(201, b"not json").is_err());
    }

    #[test]
    fn responses_are_whole_or_refused() {
        let ok = b"HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        assert!(matches!(parse(ok), Ok(Parsed::Whole(201, _))));
        assert!(matches!(parse(&ok[..ok.len() - 1]), Ok(Parsed::Partial)));
        let mut two = ok.to_vec();
        two.push(b'H');
        assert!(parse(&two).is_err());
        assert!(matches!(
            parse(b"HTTP/1.1 204 No Content\r\ndate: x\r\n\r\n"),
            Ok(Parsed::Whole(204, _))
        ));
        assert!(parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
        assert!(
            parse(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n").is_err()
        );
    }

    #[test]
    fn proc_status_kb() {
        let s = "Name:\tx\nVmHWM:\t  12345 kB\nVmRSS:\t   2345 kB\n";
        assert_eq!(status_kb(s, "VmHWM:"), Some(12345));
        assert_eq!(status_kb(s, "VmRSS:"), Some(2345));
        assert_eq!(status_kb(s, "VmSwap:"), None);
    }
}
