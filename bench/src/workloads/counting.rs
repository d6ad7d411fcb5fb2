//! `counting`: the CountingActor.
//!
//! Seed: SEEDS.md #5, "Scala Actor v Erlang gen_server Performance" (2011, 4 cores):
//! 3,000,000 `Count(100)` messages to one counting process, then a synchronous GetAndReset
//! that must return 300,000,000 (Erlang bare receive 2.8M msg/s, gen_server 1.8M msg/s);
//! WORKLOADS.md "counting".
//!
//! Params: `msgs` (default 3000000) `Count(100)` messages, split evenly over `senders`
//! (default 1; the seed's other setting is the number of cores) processes, the first
//! msgs mod senders sending one more; `receivers` (default 1, the seed) counting
//! processes: number the messages 0..msgs in sender order (sender 0's first, then sender
//! 1's...); message g goes to counter g mod receivers, so each sender sends round-robin
//! (the fan-out case of issue 24: each send goes to another process than the one
//! before); `style` (default raw):
//! * `raw`: the plainest receive loop: `Count(k)` adds k; `GetAndReset(from, ref)` replies
//!   `Reply(ref, count)` and goes on with 0 (as `counting.erl`'s `counter/1`);
//! * `server`: each counter is an [`otter::server::Server`] (as `counting_server.erl` is a
//!   `gen_server`): `Count(k)` is a `cast`, GetAndReset a `call` with no timeout
//!   (`gen_server:call(S, get_and_reset, infinity)`); started with `start_link` before the
//!   senders, stopped with `stop` after the timed region;
//! * `channel` (otter only: the hardware's floor, no otter code at all): each counter and
//!   each sender are OS threads, the messages go over `std::sync::mpsc` (crossbeam's
//!   unbounded list channel), GetAndReset replies on a channel of its own. What one
//!   well-tuned queue between two cores costs on this machine, so the report can show
//!   how close otter's raw loop comes to it.
//!
//! The raw senders send with [`Context::send`], which yields when the turn's budget is
//! spent, as the BEAM yields the twin's sender inside `!` when its reductions run out:
//! the counters run between the sender's turns, as on the BEAM, instead of after its
//! whole loop. The server style's casts do not yield (`ServerRef::cast` is a plain send);
//! `gen_server:cast` does on the BEAM.
//!
//! ops = msgs. Extra fields: `get_and_reset_calls`, `style_run` (the style that ran).
//!
//! Timed: from the first send (the senders are spawned beforehand and wait for `Go`) until
//! the reply to the final GetAndReset. Each sender tells the coordinator when it has sent its
//! share; then the coordinator calls GetAndReset on each counter in turn, summing its
//! replies, until that sum reaches 100 times the messages sent to it.
//!
//! Check: each counter's sum is exactly 100 times the messages sent to it (so the total is
//! 100*msgs: every message arrived exactly once), reached within 1000 GetAndReset calls a
//! counter; every sender reported exactly once; (server) no call failed.

use std::sync::{Arc, Barrier, mpsc};
use std::time::Instant;

use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, ExitReason, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::{MESSAGE_BYTES, OS_THREAD_BYTES, PROCESS_BYTES, RING_PROCESS_BYTES};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "counting",
    summary: "msgs Count(100) messages from s senders to r counters, then GetAndReset",
    params: &[
        ParamSpec::int("msgs", 3_000_000),
        ParamSpec::int("senders", 1),
        ParamSpec::int("receivers", 1),
        ParamSpec::choice("style", &["raw", "server", "channel"], "raw"),
    ],
    validate: no_validation,
    footprint,
    run,
};

/// What each Count adds.
const K: u64 = 100;
/// GetAndReset calls a counter before the check gives up.
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

/// msgs messages, all of which may be queued at the counters at once (a sender does not
/// wait for them); senders processes (each with its pid and report kept) and receivers
/// counters (each keeps its mailbox's block), or with style=channel OS threads.
fn footprint(p: &Params) -> Footprint {
    let (msgs, senders) = (count(p.int("msgs")), count(p.int("senders")));
    let receivers = count(p.int("receivers"));
    let f = if p.choice("style") == "channel" {
        let threads = senders.saturating_add(receivers);
        Footprint::new(("msgs", msgs), ("1", 1))
            .os_threads("senders+receivers", threads)
            .charge("senders+receivers", threads, "OS threads", OS_THREAD_BYTES)
    } else {
        Footprint::new(
            ("msgs", msgs),
            ("senders+receivers+1", senders.saturating_add(receivers) + 1),
        )
        .charge("senders", senders, "sender processes", PROCESS_BYTES)
        .charge(
            "receivers",
            receivers,
            "counting processes",
            RING_PROCESS_BYTES,
        )
    };
    f.charge("msgs", msgs, "queued messages", MESSAGE_BYTES)
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let plan = Plan {
        msgs: p.int("msgs"),
        senders: p.int("senders"),
        receivers: p.int("receivers"),
    };
    match p.choice("style") {
        "server" => Ok(run_server(rt, plan)?),
        "channel" => run_channel(plan),
        _ => Ok(run_raw(rt, plan)?),
    }
}

/// Who sends how many messages to whom.
#[derive(Debug, Clone, Copy)]
struct Plan {
    msgs: u64,
    senders: u64,
    receivers: u64,
}

impl Plan {
    /// Sender `i`'s share of the messages, and the counter its first one goes to.
    fn sender(&self, i: u64) -> (u64, usize) {
        let (share, longer) = (self.msgs / self.senders, self.msgs % self.senders);
        let first = i * share + i.min(longer);
        (
            share + u64::from(i < longer),
            (first % self.receivers) as usize,
        )
    }

    /// The sum counter `j` must reach: K for each message sent to it.
    fn target(&self, j: usize) -> u64 {
        let j = j as u64;
        K * (self.msgs / self.receivers + u64::from(j < self.msgs % self.receivers))
    }
}

/// Sends `mine` messages round-robin over `to`, the first to `to[first]`. With one
/// receiver, the seed's plain loop. The otter styles run the seed's loop in a sender
/// future of its own instead: a sender whose future holds both loops costs a message
/// 14 instructions more (callgrind, `counting threads=1`), which would move the
/// seed's figures.
#[inline(always)]
fn fan_out<T: Copy>(to: &[T], first: usize, mine: u64, mut send: impl FnMut(T)) {
    if let [one] = to {
        for _ in 0..mine {
            send(*one);
        }
        return;
    }
    let mut j = first;
    for _ in 0..mine {
        send(to[j]);
        j += 1;
        if j == to.len() {
            j = 0;
        }
    }
}

/// What the GetAndReset calls found: how many were made, and the first counter whose sum
/// was not its target.
#[derive(Debug, Default)]
struct Tally {
    calls: u64,
    wrong: Option<String>,
}

impl Tally {
    /// Counter `j` summed to `sum` over `calls` calls; it should have reached `target`.
    fn counter(&mut self, j: usize, sum: u64, target: u64, calls: u64) {
        self.calls += calls;
        if self.wrong.is_none() && sum != target {
            self.wrong = Some(if sum > target {
                format!("counter {j}: sum {sum} exceeds {target}")
            } else {
                format!("counter {j}: sum {sum} short of {target} after {calls} calls")
            });
        }
    }

    /// The check shared by every style.
    fn verdict(self, duplicate: Option<u64>) -> Result<(), String> {
        match (duplicate, self.wrong) {
            (Some(i), _) => Err(format!("sender {i} reported twice")),
            (None, Some(wrong)) => Err(wrong),
            (None, None) => Ok(()),
        }
    }
}

/// `style=server`: Count as a cast and GetAndReset as a call through otter's server layer,
/// timed and checked exactly like [`run_raw`].
fn run_server(rt: &Runtime, plan: Plan) -> Result<Outcome, ExitReason> {
    rt.block_on(move |mut cx: Context<u64>| async move {
        let me = cx.pid();
        let mut counters = Vec::with_capacity(plan.receivers as usize);
        for _ in 0..plan.receivers {
            counters.push(Counter::start_link(&cx, ()).await?);
        }
        let to: Arc<[ServerRef<Counter>]> = counters.into();
        let sender_pids: Vec<Pid<()>> = (0..plan.senders)
            .map(|i| {
                let (mine, first) = plan.sender(i);
                if let [counter] = *to {
                    // The seed's loop, in a future of its own: see `fan_out`.
                    return cx.spawn(move |mut cx: Context<()>| async move {
                        cx.recv().await;
                        for _ in 0..mine {
                            counter.cast(Count(K));
                        }
                        me.send(i);
                    });
                }
                let to = to.clone();
                cx.spawn(move |mut cx: Context<()>| async move {
                    cx.recv().await;
                    fan_out(&to, first, mine, |c| c.cast(Count(K)));
                    me.send(i);
                })
            })
            .collect();

        let t0 = Instant::now();
        for s in &sender_pids {
            s.send(());
        }
        let mut reported = vec![false; plan.senders as usize];
        let mut duplicate = None;
        for _ in 0..plan.senders {
            let i = cx.recv().await;
            if std::mem::replace(&mut reported[i as usize], true) {
                duplicate = Some(i);
            }
        }
        let (mut tally, mut failed) = (Tally::default(), None);
        'counters: for (j, counter) in to.iter().enumerate() {
            let (target, mut sum, mut calls) = (plan.target(j), 0, 0);
            while sum < target && calls < MAX_CALLS {
                match counter.call_timeout(GetAndReset, None).await {
                    Ok(count) => sum += count,
                    Err(e) => {
                        failed = Some(format!("counter {j}: GetAndReset call {calls} failed: {e}"));
                        break 'counters;
                    }
                }
                calls += 1;
            }
            tally.counter(j, sum, target, calls);
        }
        let elapsed = t0.elapsed();
        let mut stopped = Ok(());
        for counter in to.iter() {
            let s = counter.stop(ExitReason::Normal, None).await;
            stopped = stopped.and(s);
        }

        let calls = tally.calls;
        let check = if let Some(e) = failed {
            Err(e)
        } else if let Err(e) = stopped {
            Err(format!("stopping a counter: {e}"))
        } else {
            tally.verdict(duplicate)
        };
        let mut out = Outcome::new(elapsed, plan.msgs, check);
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
fn run_raw(rt: &Runtime, plan: Plan) -> Result<Outcome, ExitReason> {
    rt.block_on(move |mut cx: Context<CoordMsg>| async move {
        let me = cx.pid();
        let to: Arc<[Pid<CounterMsg>]> = (0..plan.receivers)
            .map(|_| cx.spawn(|cx: Context<CounterMsg>| counter(cx)))
            .collect();
        let sender_pids: Vec<Pid<()>> = (0..plan.senders)
            .map(|i| {
                let (mine, first) = plan.sender(i);
                if let [counter] = *to {
                    // The seed's loop, in a future of its own: see `fan_out`.
                    return cx.spawn(move |mut cx: Context<()>| async move {
                        cx.recv().await;
                        for _ in 0..mine {
                            cx.send(counter, CounterMsg::Count(K)).await;
                        }
                        me.send(CoordMsg::Sent(i));
                    });
                }
                let to = to.clone();
                cx.spawn(move |mut cx: Context<()>| async move {
                    cx.recv().await;
                    // `fan_out`'s loop, with the awaitable send.
                    let mut j = first;
                    for _ in 0..mine {
                        cx.send(to[j], CounterMsg::Count(K)).await;
                        j += 1;
                        if j == to.len() {
                            j = 0;
                        }
                    }
                    me.send(CoordMsg::Sent(i));
                })
            })
            .collect();

        let t0 = Instant::now();
        for s in &sender_pids {
            s.send(());
        }
        let mut reported = vec![false; plan.senders as usize];
        let mut duplicate = None;
        for _ in 0..plan.senders {
            if let CoordMsg::Sent(i) = cx.recv_match(|m| matches!(m, CoordMsg::Sent(_))).await
                && std::mem::replace(&mut reported[i as usize], true)
            {
                duplicate = Some(i);
            }
        }
        let mut tally = Tally::default();
        for (j, counter) in to.iter().enumerate() {
            let (target, mut sum, mut calls) = (plan.target(j), 0, 0);
            while sum < target && calls < MAX_CALLS {
                let call = tally.calls + calls;
                counter.send(CounterMsg::GetAndReset(me, call));
                let reply = cx
                    .recv_match(move |m| matches!(m, CoordMsg::Reply(r, _) if *r == call))
                    .await;
                if let CoordMsg::Reply(_, count) = reply {
                    sum += count;
                }
                calls += 1;
            }
            tally.counter(j, sum, target, calls);
        }
        let elapsed = t0.elapsed();
        for counter in to.iter() {
            counter.send(CounterMsg::Stop);
        }

        let calls = tally.calls;
        let check = tally.verdict(duplicate);
        let mut out = Outcome::new(elapsed, plan.msgs, check);
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
fn run_channel(plan: Plan) -> Result<Outcome, RunError> {
    let refused = |what: &str, e: std::io::Error| {
        RunError::Refused(format!("the system refused an OS thread ({what}): {e}"))
    };
    let mut to = Vec::with_capacity(plan.receivers as usize);
    let mut counters = Vec::with_capacity(plan.receivers as usize);
    for j in 0..plan.receivers {
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
        counters.push(counter.map_err(|e| refused(&format!("counter {j}"), e))?);
        to.push(tx);
    }
    let go = Arc::new(Barrier::new(plan.senders as usize + 1));
    let (sent_tx, sent_rx) = mpsc::channel::<u64>();
    let threads = (0..plan.senders)
        .map(|i| {
            let (to, go, sent) = (to.clone(), go.clone(), sent_tx.clone());
            let (mine, first) = plan.sender(i);
            std::thread::Builder::new()
                .spawn(move || {
                    go.wait();
                    let to: Vec<&mpsc::Sender<ThreadMsg>> = to.iter().collect();
                    fan_out(&to, first, mine, |tx| {
                        let _ = tx.send(ThreadMsg::Count(K));
                    });
                    let _ = sent.send(i);
                })
                .map_err(|e| refused(&format!("sender {i} of {}", plan.senders), e))
        })
        .collect::<Result<Vec<_>, _>>()?;

    go.wait();
    let t0 = Instant::now();
    let mut reported = vec![false; plan.senders as usize];
    let mut duplicate = None;
    for _ in 0..plan.senders {
        let Ok(i) = sent_rx.recv() else { break };
        if std::mem::replace(&mut reported[i as usize], true) {
            duplicate = Some(i);
        }
    }
    let mut tally = Tally::default();
    let (reply_tx, reply_rx) = mpsc::channel();
    for (j, tx) in to.iter().enumerate() {
        let (target, mut sum, mut calls) = (plan.target(j), 0, 0);
        while sum < target && calls < MAX_CALLS {
            let _ = tx.send(ThreadMsg::GetAndReset(reply_tx.clone()));
            sum += reply_rx.recv().unwrap_or(0);
            calls += 1;
        }
        tally.counter(j, sum, target, calls);
    }
    let elapsed = t0.elapsed();
    for tx in &to {
        let _ = tx.send(ThreadMsg::Stop);
    }
    for t in threads {
        let _ = t.join();
    }
    for c in counters {
        let _ = c.join();
    }

    let calls = tally.calls;
    let check = tally.verdict(duplicate);
    let mut out = Outcome::new(elapsed, plan.msgs, check);
    out.extra.push(("get_and_reset_calls", calls.into()));
    out.extra.push(("style_run", "channel".into()));
    Ok(out)
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
