//! Distribution backpressure against a real Erlang node that stops reading (`SIGSTOP`):
//! past the busy limit an awaitable send waits and nothing is lost, the memory stays
//! bounded by the limit, the waiting senders all wake when the peer reads again, and a
//! plain send past the hard limit still closes the connection (`dist/connection.rs`,
//! "Limits").
//!
//! The same 5 s stop with an otter peer: this test binary run again as a child
//! process (`otter_peer_child`), whose node has an otter `sink`.
//!
//! The tests of this file run one at a time (`serial`): one of them measures the test
//! process's resident memory, which the others would disturb.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::Duration;

use otter::dist::shapes::Binary as Bin;
use otter::dist::{BadTerm, Node};
use otter::{Context, Down, ExitReason, Pid, Runtime, TrySendError};
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(60);
/// The payload of one message.
const CHUNK: usize = 64 << 10;
/// Erlang's `dist_buf_busy_limit` default, the node's default busy limit.
const BUSY_LIMIT: usize = 1 << 20;

/// Runs the tests of this file one at a time (module docs).
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the Erlang `sink` takes: `{chunk, Sender, Seq, Bin}` and `{report, From}`.
#[derive(Debug, Serialize)]
enum ToSink {
    #[serde(rename = "chunk")]
    Chunk(u64, u64, Bin),
    #[serde(rename = "report")]
    Report(Pid<Got>),
}

/// What the test's processes get: the sink's report `{Messages, Bytes, Bad}`, or a
/// `Down`.
#[derive(Debug, Deserialize)]
#[serde(from = "(u64, u64, u64)")]
enum Got {
    Report(u64, u64, u64),
    #[serde(skip)]
    Down(Down),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<(u64, u64, u64)> for Got {
    fn from((n, bytes, bad): (u64, u64, u64)) -> Got {
        Got::Report(n, bytes, bad)
    }
}

impl From<Down> for Got {
    fn from(d: Down) -> Got {
        Got::Down(d)
    }
}

impl From<BadTerm> for Got {
    fn from(b: BadTerm) -> Got {
        Got::Bad(b)
    }
}

/// An Erlang process registered as `sink`: checks that each sender's chunks come in
/// order (`Seq` from 0) and hold their pattern (first and last byte `Seq band 255`),
/// and answers `{report, From}` with the messages, the bytes, and the bad chunks.
const SINK: &str = "register(sink, spawn(fun() -> \
    L = fun Loop(Next, Bytes, Bad) -> \
        receive \
            {chunk, S, Seq, B} -> \
                X = Seq band 255, \
                Ok = maps:get(S, Next, 0) =:= Seq andalso byte_size(B) > 0 \
                    andalso binary:first(B) =:= X andalso binary:last(B) =:= X, \
                Loop(Next#{S => Seq + 1}, Bytes + byte_size(B), \
                     case Ok of true -> Bad; false -> Bad + 1 end); \
            {report, From} -> \
                From ! {maps:fold(fun(_, V, A) -> A + V end, 0, Next), Bytes, Bad}, \
                Loop(Next, Bytes, Bad) \
        end \
    end, \
    L(#{}, 0, 0) end))";

/// Chunk `seq` of a sender: its pattern is `seq` (`SINK`).
fn chunk(sender: u64, seq: u64) -> ToSink {
    ToSink::Chunk(sender, seq, Bin(vec![seq as u8; CHUNK]))
}

/// Asks the sink for its report.
async fn report(cx: &mut Context<Got>, sink: Pid<ToSink>) -> (u64, u64, u64) {
    let me = cx.pid();
    cx.send(sink, ToSink::Report(me)).await;
    match cx.recv_timeout(WAIT).await {
        Some(Got::Report(n, bytes, bad)) => (n, bytes, bad),
        Some(other) => panic!("instead of the sink's report: {other:?}"),
        None => panic!("no report from the sink"),
    }
}

/// `kill -SIG pid`.
fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid}: {status}");
}

/// This process's resident memory (`VmRSS`), in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    let kib: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib << 10
}

/// The highest [`rss`] seen while it runs, read every millisecond on a thread of its
/// own (a measurement, not a synchronisation).
struct PeakRss {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl PeakRss {
    fn start() -> PeakRss {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicUsize::new(rss()));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        PeakRss { stop, peak, thread }
    }

    fn stop(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        self.peak.load(Ordering::Relaxed).max(rss())
    }
}

/// What 200 MiB sent through a peer stopped for 5 s may add to the resident memory:
/// the busy limit, plus one message per sender past it (one here), plus what the
/// allocator keeps of the frames it freed while the queue went up and down. Without
/// the wait, the queue would grow until the hard limit (64 MiB) closed the connection.
const RSS_MARGIN: usize = 8 << 20;

/// The scenario of the "stops reading for five seconds" tests, with an Erlang and with
/// an otter peer: 200 MiB sent with awaited sends to `sink` on a peer (OS process
/// `os_pid`) that reads nothing for 5 s. Every message arrives, the sends wait for the
/// peer, and the resident memory grows by at most the busy limit plus [`RSS_MARGIN`].
fn sends_to_a_peer_stopped_for_five_seconds(rt: &Runtime, sink: Pid<ToSink>, os_pid: u32) {
    const TOTAL: u64 = 200 << 20;
    let resumed = Arc::new(AtomicBool::new(false));
    let r = resumed.clone();
    let out = rt.block_on(move |mut cx: Context<Got>| async move {
        // Connected, and the sink answers.
        assert_eq!(report(&mut cx, sink).await, (0, 0, 0));
        let baseline = rss();
        let peak = PeakRss::start();
        signal(os_pid, "STOP");
        // The scenario: the peer reads nothing for 5 s.
        let cont = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(5));
            r.store(true, Ordering::SeqCst);
            signal(os_pid, "CONT");
        });
        let n = TOTAL / CHUNK as u64;
        for seq in 0..n {
            cx.send(sink, chunk(0, seq)).await;
        }
        // The sends could not all be queued before the peer read again.
        let waited = resumed.load(Ordering::SeqCst);
        let got = report(&mut cx, sink).await;
        let peak = peak.stop();
        (n, baseline, peak, waited, got, cont)
    });
    let (n, baseline, peak, waited, got, cont) = out.unwrap();
    cont.join().unwrap();
    assert_eq!(got, (n, TOTAL, 0), "(messages, bytes, bad) at the sink");
    assert!(
        waited,
        "the awaited sends did not wait for the stopped peer"
    );
    let grew = peak.saturating_sub(baseline);
    assert!(
        grew <= BUSY_LIMIT + RSS_MARGIN,
        "RSS grew by {} KiB (baseline {} KiB), over the busy limit + {} KiB",
        grew >> 10,
        baseline >> 10,
        RSS_MARGIN >> 10
    );
    eprintln!(
        "RSS grew by {} KiB over a baseline of {} KiB",
        grew >> 10,
        baseline >> 10
    );
}

rt_test!(
    a_peer_that_stops_reading_for_five_seconds_gets_every_awaited_message_in_bounded_memory,
    |rt: &Runtime| {
        let _serial = serial();
        let node = otter_node::start(rt);
        let erl = erlang::Node::builder("erl").setup(SINK).start();
        let sink: Pid<ToSink> = node.remote_name("sink", erl.name());
        let os_pid = erl.os_pid();
        sends_to_a_peer_stopped_for_five_seconds(rt, sink, os_pid);
    }
);

/// What the otter `sink` of `otter_peer_child` takes: [`ToSink`], decoded.
#[derive(Debug, Deserialize)]
enum SinkIn {
    #[serde(rename = "chunk")]
    Chunk(u64, u64, Bin),
    #[serde(rename = "report")]
    Report(Pid<(u64, u64, u64)>),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<BadTerm> for SinkIn {
    fn from(b: BadTerm) -> SinkIn {
        SinkIn::Bad(b)
    }
}

/// The child side of the otter-peer test: run only in the child process it starts. A
/// node named `$OTTER_BUSY_PEER` with `SINK`'s rules in an otter process, until its
/// stdin closes.
#[test]
fn otter_peer_child() {
    use std::io::{BufRead, Write};
    let Some(name) = std::env::var_os("OTTER_BUSY_PEER") else {
        return;
    };
    let rt = Runtime::builder().threads(2).build().unwrap();
    let node = Node::builder(name.to_string_lossy())
        .cookie("secret")
        .start(&rt.handle())
        .expect("the peer node starts");
    let sink = rt.handle().spawn(|mut cx: Context<SinkIn>| async move {
        let mut next = std::collections::HashMap::<u64, u64>::new();
        let (mut bytes, mut bad) = (0u64, 0u64);
        loop {
            match cx.recv().await {
                SinkIn::Chunk(s, seq, b) => {
                    let x = seq as u8;
                    let n = next.entry(s).or_insert(0);
                    let ok = *n == seq && b.0.first() == Some(&x) && b.0.last() == Some(&x);
                    *n = seq + 1;
                    bytes += b.0.len() as u64;
                    bad += u64::from(!ok);
                }
                SinkIn::Report(from) => from.send((next.values().sum(), bytes, bad)),
                SinkIn::Bad(_) => bad += 1,
            }
        }
    });
    node.register("sink", sink);
    println!("otter-peer-ready {}", node.name());
    std::io::stdout().flush().unwrap();
    for _ in std::io::stdin().lock().lines() {}
    std::process::exit(0);
}

/// `otter_peer_child` running in a child process, killed when dropped.
struct OtterPeer {
    child: std::process::Child,
    name: String,
}

impl OtterPeer {
    fn start() -> OtterPeer {
        use std::io::BufRead;
        erlang::ensure_epmd();
        let name = format!("{}@{}", erlang::unique_name("peer"), erlang::short_host());
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "otter_peer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("OTTER_BUSY_PEER", &name)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Killed by the drop from here on, also if it does not start.
        let mut peer = OtterPeer { child, name };
        let out = std::io::BufReader::new(peer.child.stdout.take().unwrap());
        // The harness prints the test's name first, on the same line.
        for line in out.lines() {
            if line.unwrap().contains("otter-peer-ready") {
                return peer;
            }
        }
        panic!("the otter peer did not start");
    }
}

impl Drop for OtterPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

rt_test!(
    an_otter_peer_that_stops_reading_for_five_seconds_gets_every_awaited_message_in_bounded_memory,
    |rt: &Runtime| {
        let _serial = serial();
        let node = otter_node::start(rt);
        let peer = OtterPeer::start();
        let sink: Pid<ToSink> = node.remote_name("sink", &peer.name);
        let os_pid = peer.child.id();
        sends_to_a_peer_stopped_for_five_seconds(rt, sink, os_pid);
    }
);

rt_test!(
    a_plain_send_past_the_hard_limit_closes_the_connection_with_noconnection,
    |rt: &Runtime| {
        let _serial = serial();
        const HARD: usize = 4 << 20;
        let node = otter_node::start_with(rt, |b| b.dist_buf_hard_limit(HARD));
        let erl = erlang::Node::builder("erl").setup(SINK).start();
        let sink: Pid<ToSink> = node.remote_name("sink", erl.name());
        let os_pid = erl.os_pid();
        let out = rt.block_on(move |mut cx: Context<Got>| async move {
            assert_eq!(report(&mut cx, sink).await, (0, 0, 0));
            cx.monitor(sink);
            signal(os_pid, "STOP");
            let mut sent = 0usize;
            let mut seq = 0;
            let down = loop {
                sink.send(chunk(0, seq));
                sent += CHUNK;
                seq += 1;
                if seq % 16 == 0 {
                    // Lets the connection's processes run (one worker).
                    cx.yield_now().await;
                    match cx.try_recv() {
                        Some(Got::Down(d)) => break d,
                        Some(other) => panic!("instead of the Down: {other:?}"),
                        None => {}
                    }
                }
                assert!(sent < 1 << 30, "1 GiB of plain sends and no Down");
            };
            signal(os_pid, "CONT");
            (down.reason, sent)
        });
        let (reason, sent) = out.unwrap();
        assert_eq!(reason, ExitReason::Noconnection);
        assert!(
            sent > HARD,
            "closed after {sent} bytes, before the hard limit"
        );
    }
);

rt_test!(
    a_busy_peer_wakes_every_waiting_sender_once_it_reads_again,
    |rt: &Runtime| {
        let _serial = serial();
        const SENDERS: u64 = 4;
        const EACH: u64 = 16 << 20;
        let node = otter_node::start(rt);
        let erl = erlang::Node::builder("erl").setup(SINK).start();
        let sink: Pid<ToSink> = node.remote_name("sink", erl.name());
        let os_pid = erl.os_pid();
        let n = EACH / CHUNK as u64;
        // A process of the test's to take the sink's reports.
        let (tx, reports) = mpsc::channel();
        let probe = rt.handle().spawn(move |mut cx: Context<Got>| async move {
            loop {
                let r = report(&mut cx, sink).await;
                if tx.send(r).is_err() {
                    return;
                }
                // The next report when the test asks for one.
                if !matches!(cx.recv().await, Got::Report(..)) {
                    return;
                }
            }
        });
        assert_eq!(reports.recv_timeout(WAIT).unwrap(), (0, 0, 0));
        signal(os_pid, "STOP");
        let (done_tx, done) = mpsc::channel();
        for id in 0..SENDERS {
            let done_tx = done_tx.clone();
            rt.handle().spawn(move |mut cx: Context<()>| async move {
                for seq in 0..n {
                    cx.send(sink, chunk(id, seq)).await;
                }
                let _ = done_tx.send(id);
            });
        }
        // The connection becomes busy: `try_send` refuses (Erlang's `nosuspend`).
        let mut through = 0u64;
        support::eventually("the peer is busy", WAIT, || {
            match sink.try_send(ToSink::Chunk(99, through, Bin(vec![through as u8]))) {
                Err(TrySendError::Full(_)) => true,
                Ok(()) => {
                    through += 1;
                    false
                }
                Err(TrySendError::Exited(_)) => panic!("the sink's pid does not resolve"),
            }
        });
        // The scenario: the peer reads nothing for one more second, while the senders
        // wait.
        std::thread::sleep(Duration::from_secs(1));
        assert!(done.try_recv().is_err(), "a sender finished while busy");
        signal(os_pid, "CONT");
        for _ in 0..SENDERS {
            done.recv_timeout(WAIT)
                .expect("every waiting sender wakes and finishes");
        }
        // Ask for the report after every chunk (they went before the senders' ends).
        probe.send(Got::Report(0, 0, 0));
        let (messages, bytes, bad) = reports.recv_timeout(WAIT).unwrap();
        assert_eq!(bad, 0, "chunks out of order or changed");
        // With the one-byte chunks `try_send` let through before the refusal.
        assert_eq!(
            (messages, bytes),
            (SENDERS * n + through, SENDERS * EACH + through)
        );
        // Busy no more: `try_send` takes a message again.
        assert!(
            sink.try_send(ToSink::Chunk(100, 0, Bin(vec![0]))).is_ok(),
            "the peer is still busy once its queue is written"
        );
    }
);
