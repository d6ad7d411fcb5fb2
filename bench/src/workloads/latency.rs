//! `latency`: round trips, each timed on its own, while the runtime is loaded.
//!
//! Seed: WORKLOADS.md "latency — round trips while the runtime is loaded" (issue 24, item 2):
//! a runtime is judged by its tail latency as much as by its throughput. The BEAM preempts a
//! process after 4,000 reductions; otter's scheduler is cooperative, so a process that
//! computes without awaiting holds its worker. This workload measures what that costs.
//!
//! Params: `r` (default 100000) timed round trips; `b` (1000) background processes; `w` (5,
//! at most 1,000,000) µs of computing per background message; `hog` (0 or 1, default 0).
//!
//! * The background: a ring of b processes with `tokens` = b/2 tokens in flight (at least
//!   one: b = 1 is a process passing one token to itself), spread evenly round the ring.
//!   Each member loops: receive a token, compute for about w µs, pass it to the next member.
//!   "Compute" is a busy loop on the monotonic clock (`Instant::now()` until w µs have
//!   passed), not a sleep: the Erlang twin spins on `erlang:monotonic_time(nanosecond)` the
//!   same way, so both do the same work whatever their compilers make of arithmetic.
//! * `hog=1`: one more process computes without ever awaiting until the measurement ends: a
//!   loop reading an `AtomicBool` stop flag, which A sets when the timed part is over. otter
//!   cannot preempt it: it holds one worker for the whole run; what is queued on that
//!   worker waits for the watchdog thread's look, which hands it on and starts a spare
//!   thread in the held worker's place (ARCHITECTURE.md, "Watchdog" and "Spare
//!   threads"). So that a run ends even if nothing stands in for the worker (a runtime
//!   whose spare slots are all taken), the hog watches the round trips: when none has
//!   completed for [`STALL`] (50 ms, plus 4·b·w), it yields once and goes on computing. The stalled round trip's wait is in the samples; `hog_yields`
//!   counts these yields in the timed part (`hog_yields_warmup` before it). The Erlang
//!   twin's hog has the same valve; the BEAM preempts it long before.
//! * The pair: A (the root process) sends `Ping` to B, B replies `Pong`; A times each round
//!   trip with `Instant` and keeps the r samples in a vector allocated beforehand.
//!
//! Before the timed part A makes untimed round trips until the background has delivered at
//! least one message per token and (hog=1) the hog is running.
//!
//! ops = r; `ns_per_op` = the timed part over r (the mean round trip, with the few ns between
//! round trips). Extra fields: `p50_us`, `p99_us`, `p999_us`, `max_us` (nearest rank of the
//! sorted samples, in µs, 2 decimals), `background_msgs_per_s` (messages the background
//! received during the timed part over its seconds), `background_msgs` (that count),
//! `tokens`, `warmup_round_trips`, and with hog=1 `hog_yields`, `hog_yields_warmup`.
//!
//! Timed: from the first timed ping until the r-th pong.
//!
//! Check: r pongs, and B answered every ping (warm-up included); the background delivered at
//! least `tokens` messages during a timed part of at least [`STARVED_AFTER`] (one per token
//! on average; fewer means the background was starved); every token comes back exactly once when the ring is told to
//! stop, and the tokens' hop counts add up to the messages the background received; with
//! hog=1, the hog ran through the timed part and stopped on the flag.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};
use crate::json_line::round_to;
use crate::limits::{MAX_WORK_US, MESSAGE_BYTES, RING_PROCESS_BYTES, SAMPLE_BYTES};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "latency",
    summary: "r timed round trips while b processes (and hog=1: a process that never yields) load the runtime",
    params: &[
        ParamSpec::int("r", 100_000),
        ParamSpec::int("b", 1000),
        ParamSpec::int_in("w", 1, MAX_WORK_US, 5),
        ParamSpec::int_in("hog", 0, 1, 0),
    ],
    validate: no_validation,
    footprint,
    run,
};

/// How long the hog lets the round trips stand still before it yields once (plus 4·b·w:
/// the longest a round trip can wait behind the whole background on one core, twice over).
const STALL: Duration = Duration::from_millis(50);

/// The shortest timed part in which a background that received fewer messages than it
/// has tokens counts as starved: a shorter one can fall inside a spell in which the OS
/// runs none of the workers the ring is on (a loaded test machine), which says nothing
/// of the scheduler.
const STARVED_AFTER: Duration = Duration::from_millis(100);

/// What a background member receives.
#[derive(Debug)]
enum Bg {
    /// The member to pass tokens to (the last member created learns it this way).
    Next(Pid<Bg>),
    /// A token: its number and how many times it has been received so far.
    Token { id: u32, hops: u64 },
    /// Exit.
    Stop,
}

/// What B receives.
#[derive(Debug)]
enum ToB {
    /// Reply `Pong` to this pid.
    Ping(Pid<ToA>),
    /// Reply `Pings(count)` and exit.
    Stop(Pid<ToA>),
}

/// What A receives.
#[derive(Debug)]
enum ToA {
    /// The answer to a ping.
    Pong,
    /// B's count of pings, at its end.
    Pings(u64),
    /// A token the ring gave back once the stop flag was set.
    TokenBack { id: u32, hops: u64 },
}

/// The hog's state, in [`Shared::hog`].
const HOG_NOT_STARTED: u8 = 0;
const HOG_RUNNING: u8 = 1;
const HOG_STOPPED: u8 = 2;

/// What the processes share, outside their messages.
#[derive(Debug, Default)]
struct Shared {
    /// Set by A when the timed part is over: the ring gives its tokens back, the hog stops.
    stop: AtomicBool,
    /// Messages the background members have received.
    delivered: AtomicU64,
    /// Round trips A has completed (warm-up included), for the hog's stall watch.
    progress: AtomicU64,
    /// `HOG_*`.
    hog: AtomicU8,
    /// Times the hog yielded because the round trips stood still for [`STALL`].
    hog_yields: AtomicU64,
}

/// b ring processes (each keeps a message block once a token has passed), A, B and the
/// hog; r samples; r round trips; the tokens, each a message.
fn footprint(p: &Params) -> Footprint {
    let (r, b) = (count(p.int("r")), count(p.int("b")));
    Footprint::new(("r", r), ("b+3", b + 3))
        .charge("b", b, "ring processes", RING_PROCESS_BYTES)
        .charge("r", r, "timed samples", SAMPLE_BYTES)
        .charge("b/2", b / 2 + 1, "tokens", MESSAGE_BYTES)
}

/// Busy for `w`: reads the monotonic clock until `w` has passed.
fn compute(w: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < w {
        std::hint::spin_loop();
    }
}

/// The nearest-rank `per_mille`‰ percentile of the sorted samples (ns): the sample of rank
/// ⌈n·q/1000⌉ (at least 1).
fn percentile(sorted: &[u64], per_mille: u64) -> u64 {
    let n = sorted.len() as u64;
    let rank = (n * per_mille).div_ceil(1000).max(1);
    sorted[(rank - 1) as usize]
}

/// Nanoseconds as µs with 2 decimals, for the JSON line.
fn us(ns: u64) -> serde_json::Value {
    round_to(ns as f64 / 1000.0, 2).into()
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let (r, b, hog) = (p.int("r"), p.int("b"), p.int("hog") == 1);
    let w = Duration::from_micros(p.int("w"));
    let b = usize::try_from(b).map_err(|_| RunError::Refused(format!("b={b} processes")))?;
    let r = usize::try_from(r).map_err(|_| RunError::Refused(format!("r={r} samples")))?;
    let tokens = (b / 2).max(1);
    let stall = STALL + w * 4 * u32::try_from(b).unwrap_or(u32::MAX);
    Ok(rt.block_on(move |mut cx: Context<ToA>| async move {
        let a = cx.pid();
        let shared = Arc::new(Shared::default());

        // The ring, built backwards: each new member is handed the one created before it;
        // the first one created (the last of the ring) learns the first by `Next`.
        let mut ring: Vec<Pid<Bg>> = Vec::with_capacity(b);
        let mut next = None;
        for _ in 0..b {
            let s = Arc::clone(&shared);
            let pid = cx.spawn(move |cx: Context<Bg>| member(cx, next, a, s, w));
            ring.push(pid);
            next = Some(pid);
        }
        ring.reverse();
        ring[b - 1].send(Bg::Next(ring[0]));

        let pong = cx.spawn(ponger);
        if hog {
            let s = Arc::clone(&shared);
            cx.spawn(move |cx: Context<()>| hogger(cx, s, stall));
        }
        for id in 0..tokens {
            ring[id * b / tokens].send(Bg::Token {
                id: id as u32,
                hops: 0,
            });
        }

        // Warm-up: until the background is going and the hog runs.
        let mut warmup = 0u64;
        let mut unexpected = 0u64;
        loop {
            let going = shared.delivered.load(Ordering::Relaxed) >= tokens as u64;
            let hog_on = !hog || shared.hog.load(Ordering::Acquire) != HOG_NOT_STARTED;
            if warmup > 0 && going && hog_on {
                break;
            }
            pong.send(ToB::Ping(a));
            match cx.recv().await {
                ToA::Pong => {}
                _ => unexpected += 1,
            }
            warmup += 1;
            shared.progress.fetch_add(1, Ordering::Relaxed);
        }

        // The timed part.
        let mut samples: Vec<u64> = Vec::with_capacity(r);
        let mut pongs = 0u64;
        let d0 = shared.delivered.load(Ordering::Relaxed);
        let y0 = shared.hog_yields.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for _ in 0..r {
            let t = Instant::now();
            pong.send(ToB::Ping(a));
            match cx.recv().await {
                ToA::Pong => pongs += 1,
                _ => unexpected += 1,
            }
            samples.push(t.elapsed().as_nanos() as u64);
            shared.progress.fetch_add(1, Ordering::Relaxed);
        }
        let elapsed = t0.elapsed();
        let background = shared.delivered.load(Ordering::Relaxed) - d0;
        let hog_at_end = shared.hog.load(Ordering::Acquire);
        let yields = shared.hog_yields.load(Ordering::Relaxed);
        shared.stop.store(true, Ordering::Release);

        // Every token back once; then the ring and B stop.
        let mut back = vec![false; tokens];
        let (mut returned, mut twice, mut hops) = (0usize, 0usize, 0u64);
        while returned < tokens {
            match cx.recv().await {
                ToA::TokenBack { id, hops: h } => {
                    match back.get_mut(id as usize) {
                        Some(seen @ false) => *seen = true,
                        _ => twice += 1,
                    }
                    returned += 1;
                    hops += h;
                }
                _ => unexpected += 1,
            }
        }
        for m in &ring {
            m.send(Bg::Stop);
        }
        pong.send(ToB::Stop(a));
        let pings = loop {
            match cx.recv().await {
                ToA::Pings(n) => break n,
                _ => unexpected += 1,
            }
        };
        // The hog sees the flag within a few ns unless its thread is off the CPU.
        let mut hog_end = shared.hog.load(Ordering::Acquire);
        let waited = Instant::now();
        while hog && hog_end == HOG_RUNNING && waited.elapsed() < Duration::from_secs(10) {
            cx.sleep(Duration::from_millis(1)).await;
            hog_end = shared.hog.load(Ordering::Acquire);
        }
        let delivered = shared.delivered.load(Ordering::Relaxed);

        let check = if pongs != r as u64 {
            Err(format!("pongs: got {pongs}, want {r}"))
        } else if unexpected > 0 {
            Err(format!("{unexpected} unexpected messages at A"))
        } else if pings != warmup + r as u64 {
            Err(format!("B got {pings} pings, want {}", warmup + r as u64))
        } else if hog && (hog_at_end != HOG_RUNNING || hog_end != HOG_STOPPED) {
            Err(format!(
                "the hog was not running through the timed part (state {hog_at_end}, then \
                 {hog_end})"
            ))
        } else if background < tokens as u64 && elapsed >= STARVED_AFTER {
            Err(format!(
                "the background received {background} messages in the timed part, fewer than \
                 its {tokens} tokens"
            ))
        } else if twice > 0 || back.iter().any(|seen| !seen) {
            Err(format!(
                "tokens: {twice} came back twice, {} never",
                back.iter().filter(|s| !**s).count()
            ))
        } else if hops != delivered {
            Err(format!(
                "the tokens made {hops} hops, the ring counted {delivered} messages"
            ))
        } else {
            Ok(())
        };

        samples.sort_unstable();
        let mut out = Outcome::new(elapsed, r as u64, check);
        let secs = elapsed.as_secs_f64().max(1e-9);
        if !samples.is_empty() {
            out.extra.push(("p50_us", us(percentile(&samples, 500))));
            out.extra.push(("p99_us", us(percentile(&samples, 990))));
            out.extra.push(("p999_us", us(percentile(&samples, 999))));
            out.extra
                .push(("max_us", us(*samples.last().unwrap_or(&0))));
        }
        out.extra.push((
            "background_msgs_per_s",
            round_to(background as f64 / secs, 1).into(),
        ));
        out.extra.push(("background_msgs", background.into()));
        out.extra.push(("tokens", (tokens as u64).into()));
        out.extra.push(("warmup_round_trips", warmup.into()));
        if hog {
            out.extra.push(("hog_yields", (yields - y0).into()));
            out.extra.push(("hog_yields_warmup", y0.into()));
        }
        out
    })?)
}

/// A background member: receives a token, computes for `w`, passes it on; once the stop
/// flag is set, gives the tokens it receives back to A instead.
async fn member(
    mut cx: Context<Bg>,
    mut next: Option<Pid<Bg>>,
    a: Pid<ToA>,
    shared: Arc<Shared>,
    w: Duration,
) {
    loop {
        match cx.recv().await {
            Bg::Next(pid) => next = Some(pid),
            Bg::Token { id, hops } => {
                shared.delivered.fetch_add(1, Ordering::Relaxed);
                compute(w);
                let hops = hops + 1;
                match next {
                    Some(n) if !shared.stop.load(Ordering::Acquire) => {
                        n.send(Bg::Token { id, hops })
                    }
                    _ => a.send(ToA::TokenBack { id, hops }),
                }
            }
            Bg::Stop => return,
        }
    }
}

/// B: answers pings, counts them, and reports the count when stopped.
async fn ponger(mut cx: Context<ToB>) {
    let mut pings = 0u64;
    loop {
        match cx.recv().await {
            ToB::Ping(from) => {
                pings += 1;
                from.send(ToA::Pong);
            }
            ToB::Stop(from) => {
                from.send(ToA::Pings(pings));
                return;
            }
        }
    }
}

/// The hog: computes without awaiting until the stop flag is set. The one exception, so
/// that a run ends: if no round trip has completed for `stall`, it yields once (counted in
/// [`Shared::hog_yields`]) and goes on.
async fn hogger(cx: Context<()>, shared: Arc<Shared>, stall: Duration) {
    shared.hog.store(HOG_RUNNING, Ordering::Release);
    let mut seen = shared.progress.load(Ordering::Relaxed);
    let mut since = Instant::now();
    let mut i = 0u64;
    while !shared.stop.load(Ordering::Acquire) {
        std::hint::spin_loop();
        i = i.wrapping_add(1);
        if i.is_multiple_of(4096) {
            let now = shared.progress.load(Ordering::Relaxed);
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() > stall {
                shared.hog_yields.fetch_add(1, Ordering::Relaxed);
                cx.yield_now().await;
                since = Instant::now();
            }
        }
    }
    shared.hog.store(HOG_STOPPED, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 500), 500);
        assert_eq!(percentile(&v, 990), 990);
        assert_eq!(percentile(&v, 999), 999);
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&v, 500), 5);
        assert_eq!(percentile(&v, 990), 10);
        assert_eq!(percentile(&v, 999), 10);
        assert_eq!(percentile(&[7], 500), 7);
        assert_eq!(us(1_234_567), serde_json::json!(1234.57));
    }
}
