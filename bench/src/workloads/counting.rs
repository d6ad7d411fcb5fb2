//! `counting`: the CountingActor.
//!
//! Seed: SEEDS.md #5, "Scala Actor v Erlang gen_server Performance" (2011, 4 cores):
//! 3,000,000 `Count(100)` messages to one counting process, then a synchronous GetAndReset
//! that must return 300,000,000 (Erlang bare receive 2.8M msg/s, gen_server 1.8M msg/s);
//! WORKLOADS.md "counting".
//!
//! Params: `msgs` (default 3000000) `Count(100)` messages, split evenly over `senders`
//! (default 1; the seed's other setting is the number of cores) processes, the first
//! msgs mod senders sending one more; `style` (default raw):
//! * `raw`: the plainest receive loop: `Count(k)` adds k; `GetAndReset(from, ref)` replies
//!   `Reply(ref, count)` and goes on with 0 (as `counting.erl`'s `counter/1`);
//! * `server`: the counter is an [`otter::server::Server`] (as `counting_server.erl` is a
//!   `gen_server`): `Count(k)` is a `cast`, GetAndReset a `call` with no timeout
//!   (`gen_server:call(S, get_and_reset, infinity)`); started with `start_link` before the
//!   senders, stopped with `stop` after the timed region;
//! * `channel` (otter only: the hardware's floor, no otter code at all): the counter and
//!   each sender are OS threads, the messages go over `std::sync::mpsc` (crossbeam's
//!   unbounded list channel), GetAndReset replies on a channel of its own. What one
//!   well-tuned queue between two cores costs on this machine, so the report can show
//!   how close otter's raw loop comes to it.
//!
//! ops = msgs. Extra fields: `get_and_reset_calls`, `style_run` (the style that ran).
//!
//! Timed: from the first send (the senders are spawned beforehand and wait for `Go`) until
//! the reply to the final GetAndReset. Each sender tells the coordinator when it has sent its
//! share; then the coordinator calls GetAndReset, summing the replies, until the sum reaches
//! 100*msgs.
//!
//! Check: the sum is exactly 100*msgs, reached within 1000 GetAndReset calls; every sender
//! reported exactly once; (server) no call failed.

use std::sync::{Arc, Barrier, mpsc};
use std::time::Instant;

use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::{MESSAGE_BYTES, OS_THREAD_BYTES, PROCESS_BYTES};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "counting",
    summary: "msgs Count(100) messages from s senders to one counter, then GetAndReset",
    params: &[
        ParamSpec::int("msgs", 3_000_000),
        ParamSpec::int("senders", 1),
        ParamSpec::choice("style", &["raw", "server", "channel"], "raw"),
    ],
    validate: no_validation,
    footprint,
    run,
};

/// What each Count adds.
const K: u64 = 100;
/// GetAndReset calls before the check gives up.
const MAX_CALLS: u64 = 1000;

/// The counting process's protocol (style=raw).
#[derive(Debug)]
enum CounterMsg {
    /// Add to the count.
    Count(u64),
    /// Reply `Reply(ref, count)` to `from` and reset the count.
    GetAndReset(Pid<CoordMsg>, u64),
    /// Exit.
    Stop,
}

/// What the coordinator receives.
#[derive(Debug)]
enum CoordMsg {
    /// Sender `i` has sent its share.
    Sent(u64),
    /// The reply to GetAndReset number `ref`: the count.
    Reply(u64, u64),
}

/// msgs messages, all of which may be queued at the counter at once (a sender does not
/// wait for it); senders processes (each with its pid and report kept), or with
/// style=channel OS threads, plus the counter.
fn footprint(p: &Params) -> Footprint {
    let (msgs, senders) = (count(p.int("msgs")), count(p.int("senders")));
    let f = if p.choice("style") == "channel" {
        Footprint::new(("msgs", msgs), ("1", 1))
            .os_threads("senders+1", senders + 1)
            .charge("senders+1", senders + 1, "OS threads", OS_THREAD_BYTES)
    } else {
        Footprint::new(("msgs", msgs), ("senders+2", senders + 2)).charge(
            "senders",
            senders,
            "sender processes",
            PROCESS_BYTES,
        )
    };
    f.charge("msgs", msgs, "queued messages", MESSAGE_BYTES)
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let (msgs, senders) = (p.int("msgs"), p.int("senders"));
    match p.choice("style") {
        "server" => Ok(run_server(rt, msgs, senders)?),
        "channel" => run_channel(msgs, senders),
        _ => Ok(run_raw(rt, msgs, senders)?),
    }
}

/// `style=server`: Count as a cast and GetAndReset as a call through otter's server layer,
/// timed and checked exactly like [`run_raw`].
fn run_server(rt: &Runtime, msgs: u64, senders: u64) -> Result<Outcome, ExitReason> {
    rt.block_on(move |mut cx: Context<u64>| async move {
        let me = cx.pid();
        let counter = Counter::start_link(&cx, ()).await?;
        let (share, longer) = (msgs / senders, msgs % senders);
        let sender_pids: Vec<Pid<()>> = (0..senders)
            .map(|i| {
                let mine = share + u64::from(i < longer);
                cx.spawn(move |mut cx: Context<()>| async move {
                    cx.recv().await;
                    for _ in 0..mine {
                        counter.cast(Count(K));
                    }
                    me.send(i);
                })
            })
            .collect();
        let target = K * msgs;

        let t0 = Instant::now();
        for s in &sender_pids {
            s.send(());
        }
        let mut reported = vec![false; senders as usize];
        let mut duplicate = None;
        for _ in 0..senders {
            let i = cx.recv().await;
            if std::mem::replace(&mut reported[i as usize], true) {
                duplicate = Some(i);
            }
        }
        let (mut sum, mut calls, mut failed) = (0, 0, None);
        while sum < target && calls < MAX_CALLS {
            match counter.call_timeout(GetAndReset, None).await {
                Ok(count) => sum += count,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            calls += 1;
        }
        let elapsed = t0.elapsed();
        let stopped = counter.stop(ExitReason::Normal, None).await;

        let check = if let Some(e) = failed {
            Err(format!("GetAndReset call {calls} failed: {e}"))
        } else if let Err(e) = stopped {
            Err(format!("stopping the counter: {e}"))
        } else {
            verdict(duplicate, sum, target, calls)
        };
        let mut out = Outcome::new(elapsed, msgs, check);
        out.extra.push(("get_and_reset_calls", calls.into()));
        out.extra.push(("style_run", "server".into()));
        Ok(out)
    })?
}

/// Count(k), the counting server's cast.
#[derive(Debug)]
struct Count(u64);

/// GetAndReset, the counting server's call: replies with the count and sets it to 0.
#[derive(Debug)]
struct GetAndReset(ReplyTo<u64>);

/// The counting server (`counting_server.erl`): its state is the count.
struct Counter {
    count: u64,
}

impl Server for Counter {
    type Args = ();
    type Call = GetAndReset;
    type Cast = Count;
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Counter { count: 0 })
    }

    async fn handle_call(
        &mut self,
        GetAndReset(from): GetAndReset,
        _: &mut ServerContext<Self>,
    ) -> Flow {
        from.reply(std::mem::take(&mut self.count));
        Flow::Continue
    }

    async fn handle_cast(&mut self, Count(k): Count, _: &mut ServerContext<Self>) -> Flow {
        self.count += k;
        Flow::Continue
    }
}

/// `style=raw`: a bare receive loop.
fn run_raw(rt: &Runtime, msgs: u64, senders: u64) -> Result<Outcome, ExitReason> {
    rt.block_on(move |mut cx: Context<CoordMsg>| async move {
        let me = cx.pid();
        let counter = cx.spawn(|cx: Context<CounterMsg>| counter(cx));
        let (share, longer) = (msgs / senders, msgs % senders);
        let sender_pids: Vec<Pid<()>> = (0..senders)
            .map(|i| {
                let mine = share + u64::from(i < longer);
                cx.spawn(move |mut cx: Context<()>| async move {
                    cx.recv().await;
                    for _ in 0..mine {
                        counter.send(CounterMsg::Count(K));
                    }
                    me.send(CoordMsg::Sent(i));
                })
            })
            .collect();
        let target = K * msgs;

        let t0 = Instant::now();
        for s in &sender_pids {
            s.send(());
        }
        let mut reported = vec![false; senders as usize];
        let mut duplicate = None;
        for _ in 0..senders {
            if let CoordMsg::Sent(i) = cx.recv_match(|m| matches!(m, CoordMsg::Sent(_))).await {
                if std::mem::replace(&mut reported[i as usize], true) {
                    duplicate = Some(i);
                }
            }
        }
        let (mut sum, mut calls) = (0, 0);
        while sum < target && calls < MAX_CALLS {
            counter.send(CounterMsg::GetAndReset(me, calls));
            let call = calls;
            let reply = cx
                .recv_match(move |m| matches!(m, CoordMsg::Reply(r, _) if *r == call))
                .await;
            if let CoordMsg::Reply(_, count) = reply {
                sum += count;
            }
            calls += 1;
        }
        let elapsed = t0.elapsed();
        counter.send(CounterMsg::Stop);

        let check = verdict(duplicate, sum, target, calls);
        let mut out = Outcome::new(elapsed, msgs, check);
        out.extra.push(("get_and_reset_calls", calls.into()));
        out.extra.push(("style_run", "raw".into()));
        out
    })
}

/// The counter thread's protocol (style=channel).
enum ThreadMsg {
    Count(u64),
    GetAndReset(mpsc::Sender<u64>),
    Stop,
}

/// `style=channel`: OS threads and `std::sync::mpsc`, timed and checked like [`run_raw`].
/// An OS thread the system refuses (the checks keep their number far below its limits) is
/// a [`RunError::Refused`]; the threads already started wait for `go` until the exit.
fn run_channel(msgs: u64, senders: u64) -> Result<Outcome, RunError> {
    let refused = |what: &str, e: std::io::Error| {
        RunError::Refused(format!("the system refused an OS thread ({what}): {e}"))
    };
    let (tx, rx) = mpsc::channel::<ThreadMsg>();
    let counter = std::thread::Builder::new().spawn(move || {
        let mut count = 0;
        while let Ok(m) = rx.recv() {
            match m {
                ThreadMsg::Count(k) => count += k,
                ThreadMsg::GetAndReset(reply) => {
                    let _ = reply.send(std::mem::take(&mut count));
                }
                ThreadMsg::Stop => break,
            }
        }
    });
    let counter = counter.map_err(|e| refused("the counter", e))?;
    let (share, longer) = (msgs / senders, msgs % senders);
    let go = Arc::new(Barrier::new(senders as usize + 1));
    let (sent_tx, sent_rx) = mpsc::channel::<u64>();
    let threads = (0..senders)
        .map(|i| {
            let (tx, go, sent) = (tx.clone(), go.clone(), sent_tx.clone());
            let mine = share + u64::from(i < longer);
            std::thread::Builder::new()
                .spawn(move || {
                    go.wait();
                    for _ in 0..mine {
                        let _ = tx.send(ThreadMsg::Count(K));
                    }
                    let _ = sent.send(i);
                })
                .map_err(|e| refused(&format!("sender {i} of {senders}"), e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let target = K * msgs;

    go.wait();
    let t0 = Instant::now();
    let mut reported = vec![false; senders as usize];
    let mut duplicate = None;
    for _ in 0..senders {
        let Ok(i) = sent_rx.recv() else { break };
        if std::mem::replace(&mut reported[i as usize], true) {
            duplicate = Some(i);
        }
    }
    let (mut sum, mut calls) = (0, 0);
    let (reply_tx, reply_rx) = mpsc::channel();
    while sum < target && calls < MAX_CALLS {
        let _ = tx.send(ThreadMsg::GetAndReset(reply_tx.clone()));
        sum += reply_rx.recv().unwrap_or(0);
        calls += 1;
    }
    let elapsed = t0.elapsed();
    let _ = tx.send(ThreadMsg::Stop);
    for t in threads {
        let _ = t.join();
    }
    let _ = counter.join();

    let check = verdict(duplicate, sum, target, calls);
    let mut out = Outcome::new(elapsed, msgs, check);
    out.extra.push(("get_and_reset_calls", calls.into()));
    out.extra.push(("style_run", "channel".into()));
    Ok(out)
}

/// The check shared by every style.
fn verdict(duplicate: Option<u64>, sum: u64, target: u64, calls: u64) -> Result<(), String> {
    if let Some(i) = duplicate {
        Err(format!("sender {i} reported twice"))
    } else if sum == target {
        Ok(())
    } else if sum > target {
        Err(format!("sum {sum} exceeds {target}"))
    } else {
        Err(format!("sum {sum} short of {target} after {calls} calls"))
    }
}

/// The counting process (style=raw).
async fn counter(mut cx: Context<CounterMsg>) {
    let mut count = 0;
    loop {
        match cx.recv().await {
            CounterMsg::Count(k) => count += k,
            CounterMsg::GetAndReset(from, r) => {
                from.send(CoordMsg::Reply(r, count));
                count = 0;
            }
            CounterMsg::Stop => return,
        }
    }
}
