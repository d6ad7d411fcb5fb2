//! `echo-load`: the closed-loop load generator of the echo workload (WORKLOADS.md "echo").
//!
//! Not built on otter: `threads` OS threads (default: all cores; the suite gives it one
//! core and `threads=1`), each with its own `mio::Poll` and its share of the `conns`
//! connections to 127.0.0.1:port. Each connection, closed loop: write `size` bytes, wait
//! until all `size` have come back, compare them with what was sent, repeat. The bytes of
//! a round trip are a window of a pseudo-random pattern that moves by one byte every round
//! trip and differs between connections, so an echo from the wrong connection, a stale or
//! a duplicated byte fails the comparison.
//!
//! With `rate=R` (round trips per second over all connections; 0, the default: as fast as
//! the server answers), each connection waits after an echo until its next round trip is
//! due, on average `conns / R` seconds after the start of the one before, each gap drawn
//! uniformly from half to one and a half of that so that the connections do not move in
//! step: a server that keeps up sees `R` round trips a second and is idle between them
//! (what its CPU per round trip then says differs from a saturated run's). A server that
//! does not keep up gets the closed loop.
//!
//! Phases: set-up (at most [`CONNECTING`] connects in flight per thread, each connection
//! done once its first round trip is back; at most [`SETUP_LIMIT`]), 1 s of warm-up, then
//! `seconds` measured: a round trip completed in that window is counted and its time (from
//! its first write to its last byte back) goes into a histogram of 1/128 relative
//! resolution (0.8%; exact below 256 ns). Percentiles by nearest rank over it, µs.
//!
//! Output: `ops` = `round_trips`, completed in the measured window; `ops_per_s`;
//! `p50_us`, `p99_us`, `p999_us`, `max_us` (max exact); `errors` (connections that failed:
//! refused, reset, closed by the server, a wrong echo, not set up in time); `connections`
//! (set up); `load_cpu_s` (this process's CPU time in the window: near `threads` ×
//! `seconds` means the generator, not the server, was the limit); with `server_pid`,
//! `server_cpu_s` and `server_cpu_s_per_million` (utime + stime of `/proc/PID/stat` over
//! the window, per million round trips). check: no connection error, every echo intact, at
//! least one round trip.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::args::Params;
use crate::json_line::{json, round_to};
use crate::workloads::{Footprint, Outcome, count};

/// The most connections: far above what one process's descriptors allow by default.
pub(super) const MAX_CONNS: u64 = 1_000_000;
/// The largest round trip: 16 MiB.
pub(super) const MAX_SIZE: u64 = 16 << 20;
/// The longest measurement: an hour.
pub(super) const MAX_SECONDS: u64 = 3600;
/// The largest pid Linux hands out (`pid_max` at most 2^22).
pub(super) const MAX_PID: u64 = 1 << 22;
/// The highest `rate`, round trips per second.
pub(super) const MAX_RATE: u64 = 100_000_000;

/// Connects in flight at once per thread: a burst of thousands would overflow the server's
/// accept queue (1,024 for otter; set to the same for Erlang), and a dropped SYN costs a
/// second.
const CONNECTING: usize = 256;
/// Set-up has this long to bring every connection to its first echo.
const SETUP_LIMIT: Duration = Duration::from_secs(60);
/// The warm-up before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// Descriptors kept free besides the connections (stdio, the poller, the runtime's).
const SPARE_FDS: u64 = 32;
/// Bytes charged per connection besides its two buffers of `size` (socket, state).
const CONN_BYTES: u64 = 1024;
/// `USER_HZ`: the clock ticks of `/proc/PID/stat`, 100 on every Linux ABI.
const TICKS_PER_S: f64 = 100.0;
/// The pattern's extra length: round trips start at offsets 0..PATTERN_EXTRA of it.
const PATTERN_EXTRA: usize = 251;

/// `port` is the server's and must be given; `conns` must fit in the descriptors.
pub(super) fn validate(p: &Params) -> Result<(), String> {
    if p.int("port") == 0 {
        return Err("port= is required: the echo server's port, 1..65535".into());
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

/// Each connection: its socket and state, and the bytes of one round trip twice (what is
/// sent is a window of the shared pattern; what comes back is kept).
pub(super) fn footprint(p: &Params) -> Footprint {
    let (conns, size) = (count(p.int("conns")), count(p.int("size")));
    Footprint::new(("seconds", count(p.int("seconds"))), ("0", 0))
        .charge("conns", conns, "connections", CONN_BYTES)
        .charge("conns*size", conns * size, "bytes received", 1)
}

/// The soft `RLIMIT_NOFILE` (`ulimit -n`) of this process, from `/proc/self/limits`.
pub(crate) fn open_files_limit() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/limits").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs the load and prints its line.
pub(super) fn main(p: &Params, threads: usize) -> ExitCode {
    let port = p.int("port") as u16;
    let conns = p.int("conns") as usize;
    let size = p.int("size") as usize;
    let seconds = Duration::from_secs(p.int("seconds"));
    let server_pid = p.int("server_pid");
    // Each connection's mean gap between round trips.
    let gap = match p.int("rate") {
        0 => None,
        rate => Some(Duration::from_secs_f64(conns as f64 / rate as f64)),
    };
    if server_pid > 0 && process_cpu(&format!("/proc/{server_pid}/stat")).is_none() {
        eprintln!(
            "otter-bench: echo-load: server_pid={server_pid}: no such process (cannot read /proc/{server_pid}/stat)"
        );
        return ExitCode::from(crate::EXIT_USAGE);
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let threads = threads.min(conns).max(1);
    let pattern = Arc::new(pattern(size + PATTERN_EXTRA));

    // Every thread sets up its connections; then the window's start and end come from here.
    let barrier = Arc::new(Barrier::new(threads + 1));
    let mut handles = Vec::with_capacity(threads);
    let mut starts = Vec::with_capacity(threads);
    for t in 0..threads {
        let share = conns / threads + usize::from(t < conns % threads);
        let first = t * (conns / threads) + t.min(conns % threads);
        let (tx, rx) = mpsc::channel::<(Instant, Instant)>();
        starts.push(tx);
        let (barrier, pattern) = (barrier.clone(), pattern.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("echo-load-{t}"))
            .spawn(move || Worker::new(addr, first, share, size, pattern, gap).run(&barrier, &rx));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("otter-bench: echo-load: cannot start a thread: {e}");
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
    let server_stat = format!("/proc/{server_pid}/stat");
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

    let mut total = Tally::default();
    for h in handles {
        match h.join() {
            Ok(t) => total.add(t),
            Err(_) => {
                eprintln!("otter-bench: echo-load: a load thread panicked");
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
    } else if total.round_trips == 0 {
        Err("no round trip completed in the measured window".into())
    } else {
        Ok(())
    };
    let mut out = Outcome::new(seconds, total.round_trips, check);
    out.extra.push(("round_trips", total.round_trips.into()));
    for (key, per_mille) in [("p50_us", 500), ("p99_us", 990), ("p999_us", 999)] {
        out.extra.push((key, us(total.hist.percentile(per_mille))));
    }
    out.extra.push(("max_us", us(total.max_ns)));
    out.extra.push(("errors", total.errors.into()));
    out.extra.push(("connections", total.connected.into()));
    if let (Some(a), Some(b)) = (self0, self1) {
        out.extra.push(("load_cpu_s", round_to(b - a, 2).into()));
    }
    if server_pid > 0 {
        let cpu = match (server0, server1) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        out.extra.push((
            "server_cpu_s",
            cpu.map_or(serde_json::Value::Null, |c| round_to(c, 2).into()),
        ));
        out.extra.push((
            "server_cpu_s_per_million",
            cpu.filter(|_| total.round_trips > 0)
                .map_or(serde_json::Value::Null, |c| {
                    round_to(c * 1e6 / total.round_trips as f64, 3).into()
                }),
        ));
        if cpu.is_none() {
            out.notes.push(format!(
                "the server's /proc/{server_pid}/stat became unreadable"
            ));
        }
    }
    let mut line = json("echo-load", p, threads, &out);
    // The client is not otter: say what it is.
    line["impl"] = "mio".into();
    println!("{line}");
    if out.check.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_CHECK_FAILED)
    }
}

/// µs with 2 decimals (the http load's too).
pub(crate) fn us(ns: u64) -> serde_json::Value {
    round_to(ns as f64 / 1000.0, 2).into()
}

/// utime + stime of a `/proc/PID/stat`, in seconds.
pub(crate) fn process_cpu(path: &str) -> Option<f64> {
    let s = std::fs::read_to_string(path).ok()?;
    // The fields after the command name (which may hold spaces and parentheses): state is
    // field 3, utime 14, stime 15.
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / TICKS_PER_S)
}

/// `len` pseudo-random bytes (xorshift64*), the same on every run.
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// Round-trip times: 128 buckets per power of two (exact below 256 ns). The http load's
/// request times too.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

/// Sub-buckets per power of two, as a shift.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

impl Histogram {
    pub(crate) fn new() -> Histogram {
        Histogram {
            counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB as usize],
            total: 0,
        }
    }

    fn index(ns: u64) -> usize {
        if ns < SUB {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros(); // >= SUB_BITS
        let sub = (ns >> (e - SUB_BITS)) & (SUB - 1);
        ((e - SUB_BITS + 1) as u64 * SUB + sub) as usize
    }

    /// The middle of bucket `i`.
    fn value(i: usize) -> u64 {
        let (block, sub) = (i as u64 / SUB, i as u64 % SUB);
        if block == 0 {
            return sub;
        }
        let shift = block - 1;
        ((SUB + sub) << shift) + ((1u64 << shift) >> 1)
    }

    pub(crate) fn record(&mut self, ns: u64) {
        self.counts[Self::index(ns)] += 1;
        self.total += 1;
    }

    pub(crate) fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
    }

    /// The nearest-rank `per_mille`‰ percentile: the value of the bucket holding the sample
    /// of rank ⌈n·q/1000⌉ (at least 1); 0 with no sample.
    pub(crate) fn percentile(&self, per_mille: u64) -> u64 {
        let rank = (self.total * per_mille).div_ceil(1000).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(i);
            }
        }
        0
    }
}

/// What one thread measured.
#[derive(Debug)]
struct Tally {
    round_trips: u64,
    hist: Histogram,
    max_ns: u64,
    errors: u64,
    first_error: Option<String>,
    connected: u64,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            round_trips: 0,
            hist: Histogram::new(),
            max_ns: 0,
            errors: 0,
            first_error: None,
            connected: 0,
        }
    }
}

impl Tally {
    fn add(&mut self, t: Tally) {
        self.round_trips += t.round_trips;
        self.hist.merge(&t.hist);
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

/// Where a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not opened yet (waiting for a connect slot).
    Idle,
    /// Connect in flight.
    Connecting,
    /// In a round trip: `sent` bytes written, `got` back so far.
    Busy,
    /// Paced (`rate`): its next round trip is due (in `Worker::waiting`).
    Waiting,
    /// Failed (counted) or closed.
    Dead,
}

/// One connection.
#[derive(Debug)]
struct Conn {
    stream: Option<TcpStream>,
    state: State,
    /// Its number among all connections: where its pattern windows start.
    id: usize,
    /// Round trips started.
    seq: u64,
    sent: usize,
    got: usize,
    recv: Vec<u8>,
    t0: Instant,
    /// When its latest round trip was due (paced only): the next is due a gap after it,
    /// so that one that started late does not lower the rate.
    due: Option<Instant>,
    /// Its first echo is back (set-up done).
    ready: bool,
}

/// One load thread: its poller and its connections.
struct Worker {
    addr: SocketAddr,
    size: usize,
    pattern: Arc<Vec<u8>>,
    conns: Vec<Conn>,
    tally: Tally,
    /// The mean gap between a connection's round trips (`rate`), if paced.
    gap: Option<Duration>,
    /// Paced connections waiting, by when their next round trip is due.
    waiting: BinaryHeap<Reverse<(Instant, usize)>>,
    /// xorshift64 state for the gaps.
    rng: u64,
}

impl Worker {
    fn new(
        addr: SocketAddr,
        first: usize,
        n: usize,
        size: usize,
        pattern: Arc<Vec<u8>>,
        gap: Option<Duration>,
    ) -> Self {
        let now = Instant::now();
        let conns = (0..n)
            .map(|i| Conn {
                stream: None,
                state: State::Idle,
                id: first + i,
                seq: 0,
                sent: 0,
                got: 0,
                recv: Vec::new(),
                t0: now,
                due: None,
                ready: false,
            })
            .collect();
        Worker {
            addr,
            size,
            pattern,
            conns,
            tally: Tally::default(),
            gap,
            waiting: BinaryHeap::new(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ first as u64,
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

        // Set-up: connects a window at a time, until every connection has its first echo.
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
            let mut wake = if now < warm_end { warm_end } else { end };
            if let Some(&Reverse((at, _))) = self.waiting.peek() {
                wake = wake.min(at);
            }
            // The poller's timeout is in whole milliseconds (rounded up): a round trip due
            // sooner is waited for by polling without a timeout, on the load's own core.
            let mut timeout = wake.saturating_duration_since(now);
            if timeout < Duration::from_millis(1) && !self.waiting.is_empty() {
                timeout = Duration::ZERO;
            }
            if let Err(e) = poll.poll(&mut events, Some(timeout))
                && e.kind() != io::ErrorKind::Interrupted
            {
                self.fail_all(&poll, format!("poll: {e}"));
                break;
            }
            for ev in &events {
                self.on_event(&poll, ev.token().0, Some((warm_end, end)));
            }
            let now = Instant::now();
            while let Some(&Reverse((at, i))) = self.waiting.peek() {
                if at > now {
                    break;
                }
                self.waiting.pop();
                if self.conns[i].state == State::Waiting {
                    self.start_round(&poll, i, Some((warm_end, end)));
                }
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
        c.recv = Vec::new();
        self.tally.error(why);
    }

    fn fail_all(&mut self, poll: &Poll, why: String) {
        for i in 0..self.conns.len() {
            self.fail(poll, i, why.clone());
        }
    }

    /// Handles readiness of connection `i`; `window`: the measured phase's (start, end), in
    /// which completed round trips are counted.
    fn on_event(&mut self, poll: &Poll, i: usize, window: Option<(Instant, Instant)>) {
        match self.conns[i].state {
            State::Idle | State::Dead | State::Waiting => {}
            // Whatever the event says (a refused connect may come as an error or a hang-up,
            // not as writable), the socket's own state tells.
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
                        let c = &mut self.conns[i];
                        if let Some(s) = &c.stream {
                            let _ = s.set_nodelay(true);
                        }
                        c.recv = vec![0; self.size];
                        self.start_round(poll, i, window);
                    }
                    Err(e) => self.fail(poll, i, format!("connect: {e}")),
                }
            }
            State::Busy => self.progress(poll, i, true, window),
        }
    }

    /// Starts the next round trip of `i`: the pattern window of this round, written at once.
    fn start_round(&mut self, poll: &Poll, i: usize, window: Option<(Instant, Instant)>) {
        let c = &mut self.conns[i];
        c.seq += 1;
        c.sent = 0;
        c.got = 0;
        c.t0 = Instant::now();
        c.state = State::Busy;
        // Nothing can have come back yet: no read (its echo's arrival is an edge of its own).
        self.progress(poll, i, false, window);
    }

    /// The bytes round trip `seq` of connection `id` sends.
    fn window(&self, id: usize, seq: u64) -> &[u8] {
        let off = (id.wrapping_mul(7) + seq as usize) % PATTERN_EXTRA;
        &self.pattern[off..off + self.size]
    }

    /// Writes what the socket takes of the round trip, then (`read`) reads what has come
    /// back, each until done or `WouldBlock` (the poller is edge-triggered). Reading while
    /// still writing keeps a round trip larger than the sockets' buffers from deadlocking.
    /// A complete echo is checked, counted (in the window) and followed by the next round.
    fn progress(&mut self, poll: &Poll, i: usize, read: bool, window: Option<(Instant, Instant)>) {
        let size = self.size;
        let (id, seq) = (self.conns[i].id, self.conns[i].seq);
        let off = (id.wrapping_mul(7) + seq as usize) % PATTERN_EXTRA;
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        let mut failure = None;
        while c.sent < size {
            match s.write(&self.pattern[off + c.sent..off + size]) {
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
        while read && failure.is_none() && c.got < size {
            match s.read(&mut c.recv[c.got..]) {
                Ok(0) => failure = Some("read: the server closed the connection".to_string()),
                Ok(n) => c.got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failure = Some(format!("read: {e}")),
            }
        }
        if let Some(why) = failure {
            return self.fail(poll, i, why);
        }
        if c.got < size {
            return;
        }
        let (t0, done) = (c.t0, Instant::now());
        if self.conns[i].recv != self.window(id, seq) {
            return self.fail(poll, i, "the echo differs from what was sent".into());
        }
        self.conns[i].ready = true;
        if let Some((from, to)) = window
            && done >= from
            && done < to
        {
            let ns = done.duration_since(t0).as_nanos() as u64;
            self.tally.round_trips += 1;
            self.tally.hist.record(ns);
            self.tally.max_ns = self.tally.max_ns.max(ns);
        }
        // Paced in the measured phases only: set-up brings every connection up at once.
        if let (Some(gap), Some(_)) = (self.gap, window) {
            let next = self.conns[i].due.unwrap_or(t0) + gap.mul_f64(0.5 + self.uniform());
            self.conns[i].due = Some(next);
            if next > done {
                self.conns[i].state = State::Waiting;
                self.waiting.push(Reverse((next, i)));
                return;
            }
        }
        self.start_round(poll, i, window);
    }

    /// A number in [0, 1) (xorshift64).
    fn uniform(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_within_one_128th() {
        for ns in [
            0u64,
            1,
            127,
            128,
            255,
            256,
            1000,
            12_345,
            999_999,
            1 << 40,
            u64::MAX / 2,
        ] {
            let v = Histogram::value(Histogram::index(ns));
            let err = v.abs_diff(ns) as f64 / (ns.max(1)) as f64;
            assert!(err <= 1.0 / 128.0, "{ns} -> {v}");
        }
        assert!(Histogram::index(u64::MAX) < Histogram::new().counts.len());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut h = Histogram::new();
        for ns in 1..=100 {
            h.record(ns);
        }
        assert_eq!(h.percentile(500), 50);
        assert_eq!(h.percentile(990), 99);
        assert_eq!(h.percentile(999), 100);
        assert_eq!(Histogram::new().percentile(500), 0);
    }

    #[test]
    fn proc_stat_cpu() {
        assert!(process_cpu("/proc/self/stat").is_some());
        assert!(process_cpu("/proc/0/stat").is_none());
    }
}
