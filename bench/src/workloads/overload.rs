//! `overload`: producers faster than their consumer.
//!
//! Seed: WORKLOADS.md "overload — producers faster than their consumer" (issue 41, item
//! 7): what a flood costs the consumer's throughput and the node's memory, with an
//! unbounded mailbox and with a bounded one.
//!
//! Params: `p` (4) producer processes; `w` (10, at most 1,000,000) µs of computing per
//! message at the consumer (a busy loop on the monotonic clock, as in `latency`);
//! `seconds` (5); `bound` (0 = an unbounded mailbox; otherwise the consumer is spawned
//! with `SpawnOptions::bounded_mailbox(bound)`); `pw` (1, at most 1,000,000) µs each
//! producer computes before each message: 0 is WORKLOADS.md's "as fast as it can",
//! which floods an unbounded mailbox with tens of millions of messages in a few
//! seconds, more than the suite's memory budget, hence the default of 1 (each producer
//! under a million messages a second, ten times the consumer's `w` = 10 pace);
//! `p` = 1 with `pw` = `w`/10 is one producer ten times faster than its consumer.
//! `p` = 0 is the unloaded reference: before the timed part the root queues more items
//! than the consumer can handle in `seconds` (1.1 × seconds × 1e6 / w), then no one
//! sends while the consumer works through them.
//!
//! * A producer loops until the stop flag: compute `pw` µs, then send the next item (its
//!   number and the time it is sent). With `send=try` (the default) it uses `try_send`:
//!   `Full` counts as refused; the producer backs off (a sleep of 50 µs, doubling up to
//!   1 ms, reset by the next accepted send) and retries the same item; every 64
//!   attempts it takes a unit of budget (`consume_budget`), so that it yields as a BEAM
//!   process would. With `send=await` it awaits `Context::send`: it waits for room in a
//!   bounded mailbox, and an unbounded one mutes it past `SpawnOptions::MUTE_AT`
//!   queued messages (`mailbox/bound.rs`, "Muting"); nothing is refused.
//! * The consumer receives, checks the item's number against the producer's last one,
//!   records its queueing delay (receive time − send time), computes `w` µs, and counts.
//!   Once the stop flag is set it drains what is left without computing, so that an
//!   unbounded backlog does not take minutes to check.
//!
//! ops = messages the consumer handled (computed) during the timed part; `ops_per_s` is
//! the consumer's throughput. Extra fields: `sent` (send attempts), `accepted`,
//! `refused`, `backlog_at_stop` (accepted but not yet handled when the timed part
//! ended), `max_queue` (the longest queue the consumer saw), `peak_rss_kb` (`VmHWM` of
//! the whole OS process after the run), `p99_queue_us` (nearest rank of the delays of
//! the handled messages, µs, 2 decimals), `ideal_msgs_per_s` (1e6 / w: a consumer that
//! never waits and pays nothing but its work).
//!
//! Timed: from the producers' spawn until the stop flag, `seconds` later.
//!
//! Check: the consumer handled exactly the accepted messages, each producer's in order
//! and none twice; every producer reported once; with a bound, the queue never passed
//! `bound + p` (the bound plus one racing send per producer).
//!
//! The Erlang twin (`overload.erl`) has no bound: Erlang never bounds a mailbox.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use otter::{Context, Pid, Runtime, SpawnOptions, TrySendError};

use super::{Footprint, Outcome, RunError, Workload, count};
use crate::args::{ParamSpec, Params};
use crate::json_line::round_to;
use crate::limits::{MAX_WORK_US, MESSAGE_BYTES, PROCESS_BYTES, SAMPLE_BYTES};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "overload",
    summary: "p producers flood one consumer (w us a message) for `seconds`; bound=n bounds its mailbox",
    params: &[
        ParamSpec::int_in("p", 0, u32::MAX as u64, 4),
        ParamSpec::int_in("w", 1, MAX_WORK_US, 10),
        ParamSpec::int("seconds", 5),
        ParamSpec::int_in("bound", 0, 1 << 30, 0),
        ParamSpec::int_in("pw", 0, MAX_WORK_US, 1),
        ParamSpec::choice("send", &["try", "await"], "try"),
    ],
    validate,
    footprint,
    run,
};

/// The fastest a producer is assumed to send when it does no work (`pw` = 0), for the
/// footprint of an unbounded run: about what one otter process's `try_send` loop does on
/// this class of machine, rounded up.
const MAX_SENDS_PER_S: u128 = 10_000_000;

/// The first and the longest back-off after a refused send.
const BACKOFF_MIN: Duration = Duration::from_micros(50);
const BACKOFF_MAX: Duration = Duration::from_millis(1);

/// Delay samples kept at most (the rest are not sampled).
const MAX_SAMPLES: u64 = 10_000_000;

/// What the consumer receives.
#[derive(Debug)]
enum ToConsumer {
    /// Producer `from`'s item number `seq`, sent at `sent_ns` after the run's start.
    Item { from: u32, seq: u64, sent_ns: u64 },
    /// Report to the root and exit.
    Stop(Pid<ToRoot>),
}

/// What the root receives.
#[derive(Debug)]
enum ToRoot {
    /// A producer's counts: attempts, accepted.
    Produced { from: u32, sent: u64, accepted: u64 },
    /// The consumer's report.
    Consumed(Box<Consumed>),
}

/// The consumer's report.
#[derive(Debug, Default)]
struct Consumed {
    /// Items received from each producer (the next number it expects).
    next: Vec<u64>,
    /// Items out of order or repeated.
    out_of_order: u64,
    /// Items received in all.
    total: u64,
    /// The longest queue seen.
    max_queue: usize,
    /// Queueing delays of the handled items, ns.
    delays: Vec<u64>,
}

/// What the processes share.
#[derive(Debug, Default)]
struct Shared {
    /// Set when the timed part is over.
    stop: AtomicBool,
    /// Items the consumer has handled (computed) so far.
    handled: AtomicU64,
    /// `send=await`: producers await `Context::send` instead of `try_send`.
    awaited: bool,
}

fn validate(p: &Params) -> Result<(), String> {
    if p.int("p") > u64::from(u32::MAX) {
        return Err("p: at most 2^32 - 1 producers".into());
    }
    Ok(())
}

/// p + 2 processes; the queued items (with a bound: bound + p; without: what the
/// producers can send in `seconds`; p = 0: the backlog queued beforehand); the delay
/// samples.
fn footprint(p: &Params) -> Footprint {
    let (producers, seconds) = (count(p.int("p")), count(p.int("seconds")));
    let (w, bound, pw) = (count(p.int("w")), count(p.int("bound")), count(p.int("pw")));
    let rate = 1_000_000u128
        .checked_div(pw)
        .map_or(MAX_SENDS_PER_S, |r| r + 1);
    let samples = (seconds.saturating_mul(1_000_000) / w.max(1)).min(u128::from(MAX_SAMPLES));
    let queued = if producers == 0 {
        // The unloaded reference's backlog (`run`).
        seconds.saturating_mul(1_000_000) / w.max(1) * 11 / 10 + 1
    } else if bound > 0 {
        bound + producers
    } else {
        producers.saturating_mul(rate).saturating_mul(seconds)
    };
    Footprint::new(("seconds*1e6/w", samples), ("p+2", producers + 2))
        .charge("p", producers + 2, "processes", PROCESS_BYTES)
        .charge(
            "bound+p, or p*rate*seconds",
            queued,
            "queued items",
            MESSAGE_BYTES,
        )
        .charge("seconds*1e6/w", samples, "delay samples", SAMPLE_BYTES)
}

/// Busy for `w`: reads the monotonic clock until `w` has passed.
fn compute(w: Duration) {
    if w.is_zero() {
        return;
    }
    let t0 = Instant::now();
    while t0.elapsed() < w {
        std::hint::spin_loop();
    }
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let producers = p.int("p") as u32;
    let w = Duration::from_micros(p.int("w"));
    let pw = Duration::from_micros(p.int("pw"));
    let seconds = Duration::from_secs(p.int("seconds"));
    let bound = p.int("bound") as usize;
    let samples_cap =
        (p.int("seconds").saturating_mul(1_000_000) / p.int("w").max(1)).min(MAX_SAMPLES) as usize;
    let awaited = p.choice("send") == "await";
    Ok(rt.block_on(move |mut cx: Context<ToRoot>| async move {
        let root = cx.pid();
        let shared = Arc::new(Shared {
            awaited,
            ..Shared::default()
        });
        let start = Instant::now();
        let opts = if bound > 0 {
            SpawnOptions::new().bounded_mailbox(bound)
        } else {
            SpawnOptions::new()
        };
        let s = Arc::clone(&shared);
        let consumer = cx.spawn_opt(opts, move |c: Context<ToConsumer>| {
            consume(c, s, w, producers, start, samples_cap)
        });
        // p = 0: the unloaded reference. The root queues a backlog the consumer cannot
        // finish in `seconds` (plain sends: beyond any bound), and the timed part starts
        // once it is queued: the consumer then works with no producer running.
        let prefill = if producers == 0 {
            (seconds.as_micros() / w.as_micros().max(1)) as u64 * 11 / 10 + 1
        } else {
            0
        };
        for seq in 0..prefill {
            let sent_ns = start.elapsed().as_nanos() as u64;
            consumer.send(ToConsumer::Item {
                from: 0,
                seq,
                sent_ns,
            });
        }
        let h0 = shared.handled.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for from in 0..producers {
            let s = Arc::clone(&shared);
            cx.spawn(move |c: Context<()>| produce(c, from, consumer, root, s, pw, start));
        }
        cx.sleep(seconds).await;
        shared.stop.store(true, Ordering::Release);
        let elapsed = t0.elapsed();
        let handled = shared.handled.load(Ordering::Relaxed) - h0;

        let (mut sent, mut accepted) = (prefill, vec![None; producers as usize]);
        let mut unexpected = 0u64;
        while accepted.iter().any(Option::is_none) {
            match cx.recv().await {
                ToRoot::Produced {
                    from,
                    sent: s,
                    accepted: a,
                } => {
                    sent += s;
                    match accepted.get_mut(from as usize) {
                        Some(slot @ None) => *slot = Some(a),
                        _ => unexpected += 1,
                    }
                }
                ToRoot::Consumed(_) => unexpected += 1,
            }
        }
        let mut accepted: Vec<u64> = accepted.into_iter().map(|a| a.unwrap_or(0)).collect();
        if producers == 0 {
            accepted.push(prefill);
        }
        let total_accepted: u64 = accepted.iter().sum();
        // A plain send: never refused, behind every item (each producer reported after
        // its last send).
        consumer.send(ToConsumer::Stop(root));
        let mut c = loop {
            match cx.recv().await {
                ToRoot::Consumed(c) => break c,
                ToRoot::Produced { .. } => unexpected += 1,
            }
        };
        let rss = peak_rss_kb();

        let check = if unexpected > 0 {
            Err(format!("{unexpected} unexpected reports"))
        } else if c.out_of_order > 0 {
            Err(format!("{} items out of order or repeated", c.out_of_order))
        } else if c.next != accepted {
            Err(format!(
                "the consumer handled {} items, the producers had {total_accepted} accepted",
                c.total
            ))
        } else if bound > 0 && c.max_queue > bound + producers as usize {
            Err(format!(
                "the queue reached {} with bound {bound} and {producers} producers",
                c.max_queue
            ))
        } else {
            rss.as_ref().map(|_| ()).map_err(Clone::clone)
        };

        let mut out = Outcome::new(elapsed, handled, check);
        out.extra.push(("sent", sent.into()));
        out.extra.push(("accepted", total_accepted.into()));
        out.extra.push(("refused", (sent - total_accepted).into()));
        out.extra.push((
            "backlog_at_stop",
            total_accepted.saturating_sub(handled).into(),
        ));
        out.extra.push(("max_queue", (c.max_queue as u64).into()));
        if let Ok(kb) = rss {
            out.extra.push(("peak_rss_kb", kb.into()));
        }
        if !c.delays.is_empty() {
            c.delays.sort_unstable();
            let n = c.delays.len() as u64;
            let rank = (n * 990).div_ceil(1000).max(1);
            let p99 = c.delays[(rank - 1) as usize];
            out.extra
                .push(("p99_queue_us", round_to(p99 as f64 / 1000.0, 2).into()));
        }
        out.extra.push((
            "ideal_msgs_per_s",
            round_to(1e6 / w.as_micros().max(1) as f64, 1).into(),
        ));
        out.extra.push(("bound", (bound as u64).into()));
        out
    })?)
}

/// A producer: sends items until the stop flag (`try_send`, backing off on `Full`, or
/// the awaited send); then reports.
async fn produce(
    mut cx: Context<()>,
    from: u32,
    consumer: Pid<ToConsumer>,
    root: Pid<ToRoot>,
    shared: Arc<Shared>,
    pw: Duration,
    start: Instant,
) {
    let awaited = shared.awaited;
    let (mut sent, mut seq) = (0u64, 0u64);
    let mut backoff = BACKOFF_MIN;
    while !shared.stop.load(Ordering::Acquire) {
        compute(pw);
        let item = ToConsumer::Item {
            from,
            seq,
            sent_ns: start.elapsed().as_nanos() as u64,
        };
        sent += 1;
        if awaited {
            cx.send(consumer, item).await;
            seq += 1;
            continue;
        }
        match consumer.try_send(item) {
            Ok(()) => {
                seq += 1;
                backoff = BACKOFF_MIN;
            }
            Err(TrySendError::Full(_)) => {
                cx.sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
            Err(TrySendError::Exited(_)) => break,
        }
        if sent.is_multiple_of(64) {
            cx.consume_budget().await;
        }
    }
    root.send(ToRoot::Produced {
        from,
        sent,
        accepted: seq,
    });
}

/// The consumer: handles items (computing `w` each) until the stop flag, then drains
/// without computing; reports on `Stop`.
async fn consume(
    mut cx: Context<ToConsumer>,
    shared: Arc<Shared>,
    w: Duration,
    producers: u32,
    start: Instant,
    samples_cap: usize,
) {
    let mut c = Consumed {
        next: vec![0; producers.max(1) as usize],
        delays: Vec::with_capacity(samples_cap),
        ..Consumed::default()
    };
    let mut handled = 0u64;
    let mut stopped = false;
    loop {
        c.max_queue = c.max_queue.max(cx.message_queue_len());
        match cx.recv().await {
            ToConsumer::Item { from, seq, sent_ns } => {
                c.total += 1;
                match c.next.get_mut(from as usize) {
                    Some(next) if *next == seq => *next += 1,
                    _ => c.out_of_order += 1,
                }
                if !stopped {
                    stopped = shared.stop.load(Ordering::Acquire);
                }
                if !stopped {
                    if c.delays.len() < samples_cap {
                        let now = start.elapsed().as_nanos() as u64;
                        c.delays.push(now.saturating_sub(sent_ns));
                    }
                    compute(w);
                    handled += 1;
                    shared.handled.store(handled, Ordering::Relaxed);
                }
            }
            ToConsumer::Stop(root) => {
                root.send(ToRoot::Consumed(Box::new(c)));
                return;
            }
        }
    }
}

/// VmHWM (the peak resident set) of this OS process, in kB.
fn peak_rss_kb() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .ok_or_else(|| "no VmHWM in /proc/self/status".to_string())
}
