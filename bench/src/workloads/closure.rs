//! `closure`: message versus function.
//!
//! Seed: SEEDS.md #1, "My shocking Erlang discovery" (R14B01, 2 cores): 10,000,000 increments
//! of a counter held by a process (fire-and-forget `X ! go`) took 39.7 s, the same state
//! carried by a chain of closures 2.4 s; WORKLOADS.md "closure". The figure of merit is the
//! ratio message/closure of `ns_per_op`: run both styles.
//!
//! Params: `n` (default 10000000) increments; `style` (default message):
//! * `message`: a counter process; the driver sends n `Go` messages fire-and-forget, then
//!   `Stop(driver)`; the process replies with its count and the driver waits for it;
//! * `closure`: the state is carried by a chain of closures: each call of a
//!   `Box<dyn FnOnce(Op) -> Out>` with `Op::Go` returns the next boxed closure, holding
//!   count+1; after n calls, `Op::Read` returns the count (`closure.erl`'s
//!   `make_counter/1`). Every closure passes through `std::hint::black_box`, so the chain is
//!   really built and called.
//!
//! ops = n; `ns_per_op` = seconds * 1e9 / n.
//!
//! Timed: message: from the first `Go` until the count arrives back (the counter process is
//! spawned just before); closure: from the first call until the count is read.
//!
//! Check: the count read at the end equals n.

use std::hint::black_box;
use std::time::Instant;

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::MESSAGE_BYTES;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "closure",
    summary: "n increments of a counter: held by a process (message) or by a chain of closures",
    params: &[
        ParamSpec::int("n", 10_000_000),
        ParamSpec::choice("style", &["message", "closure"], "message"),
    ],
    validate: no_validation,
    footprint,
    run,
};

/// The counter process's protocol.
#[derive(Debug)]
enum CounterMsg {
    /// Add one.
    Go,
    /// Reply with the count, then exit.
    Stop(Pid<u64>),
}

/// n increments. style=message: the driver does not wait for the counter, so all n `Go`
/// may be queued at once; style=closure: one closure alive at a time.
fn footprint(p: &Params) -> Footprint {
    let n = count(p.int("n"));
    let f = Footprint::new(("n", n), ("2", 2));
    if p.choice("style") == "closure" {
        f
    } else {
        f.charge("n", n, "queued messages", MESSAGE_BYTES)
    }
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let n = p.int("n");
    let closure = p.choice("style") == "closure";
    Ok(rt.block_on(move |cx: Context<u64>| async move {
        let (elapsed, count) = if closure {
            by_closures(n)
        } else {
            by_messages(cx, n).await
        };
        Outcome::new(elapsed, n, expect("count", count, n))
    })?)
}

async fn by_messages(mut cx: Context<u64>, n: u64) -> (std::time::Duration, u64) {
    let counter = cx.spawn(|mut cx: Context<CounterMsg>| async move {
        let mut count = 0u64;
        loop {
            match cx.recv().await {
                CounterMsg::Go => count += 1,
                CounterMsg::Stop(from) => {
                    from.send(count);
                    return;
                }
            }
        }
    });
    let t0 = Instant::now();
    for _ in 0..n {
        counter.send(CounterMsg::Go);
    }
    counter.send(CounterMsg::Stop(cx.pid()));
    let count = cx.recv().await;
    (t0.elapsed(), count)
}

/// What a counter closure is asked.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Return the next counter, holding count+1.
    Go,
    /// Return the count.
    Read,
}

/// What a counter closure answers.
enum Out {
    Next(Counter),
    Count(u64),
}

/// A counter as a closure: `make_counter(Count)` of `closure.erl`.
struct Counter(Box<dyn FnOnce(Op) -> Out>);

fn make_counter(count: u64) -> Counter {
    Counter(Box::new(move |op| match op {
        Op::Go => Out::Next(make_counter(count + 1)),
        Op::Read => Out::Count(count),
    }))
}

fn by_closures(n: u64) -> (std::time::Duration, u64) {
    let t0 = Instant::now();
    let mut counter = black_box(make_counter(0));
    for _ in 0..n {
        counter = match (counter.0)(black_box(Op::Go)) {
            Out::Next(next) => black_box(next),
            Out::Count(_) => unreachable!("Go returns the next counter"),
        };
    }
    let count = match (counter.0)(Op::Read) {
        Out::Count(c) => c,
        Out::Next(_) => unreachable!("Read returns the count"),
    };
    (t0.elapsed(), count)
}
