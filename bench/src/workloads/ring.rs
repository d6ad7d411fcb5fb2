//! `ring`: Armstrong's ring.
//!
//! Seed: SEEDS.md #4, "Erlang vs. Stackless vs. multitask: the Ring Benchmark Showdown"
//! (2007, R11B-5), the ring of *Programming Erlang* exercise 8.11; WORKLOADS.md "ring". The
//! seed's grid is n and m each in 100, 1000, 10000 (Erlang: 20.5 s for 10,000 x 10,000).
//!
//! Params: `n` (default 1000) processes in the ring, `m` (default 1000) times round it.
//! ops = n*m sends. The ring is the running process (the starter) plus n-1 spawned relays,
//! each knowing the next: it is built backwards, so each new relay is handed the pid of the
//! one created before it, and the first one created forwards to the starter.
//!
//! Timed: creating the ring, all m rounds until the token is back at the starter, and telling
//! every process to exit: `Stop` goes round the ring once, each relay forwards it and returns;
//! the clock stops when `Stop` is back at the starter (as `ring.erl`).
//!
//! Check: the token carries the number of sends made so far (each relay adds one as it
//! forwards it); at the end it must equal n*m.

use std::time::Instant;

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::RING_PROCESS_BYTES;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "ring",
    summary: "n processes in a ring, a token round it m times (n*m sends)",
    params: &[ParamSpec::int("n", 1000), ParamSpec::int("m", 1000)],
    validate: no_validation,
    footprint,
    run,
};

/// What goes round the ring.
#[derive(Debug)]
enum Msg {
    /// The token, with the number of sends made so far.
    Token(u64),
    /// Forward once, then exit.
    Stop,
}

/// n processes, each keeping a message block once the token has passed; n*m sends.
fn footprint(p: &Params) -> Footprint {
    let (n, m) = (count(p.int("n")), count(p.int("m")));
    Footprint::new(("n*m", n * m), ("n", n)).charge("n", n, "ring processes", RING_PROCESS_BYTES)
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let (n, m) = (p.int("n"), p.int("m"));
    Ok(rt.block_on(move |mut cx: Context<Msg>| async move {
        let t0 = Instant::now();
        let mut first = cx.pid();
        for _ in 1..n {
            let next = first;
            first = cx.spawn(move |cx: Context<Msg>| relay(cx, next));
        }
        let mut hops = 0;
        for _ in 0..m {
            first.send(Msg::Token(hops + 1));
            match cx.recv().await {
                Msg::Token(back) => hops = back,
                Msg::Stop => unreachable!("stop before it was sent"),
            }
        }
        first.send(Msg::Stop);
        while !matches!(cx.recv().await, Msg::Stop) {}
        let elapsed = t0.elapsed();
        Outcome::new(elapsed, n * m, expect("hops", hops, n * m))
    })?)
}

/// A relay: forwards the token (one more send) and, once, `Stop`.
async fn relay(mut cx: Context<Msg>, next: Pid<Msg>) {
    loop {
        match cx.recv().await {
            Msg::Token(hops) => next.send(Msg::Token(hops + 1)),
            Msg::Stop => {
                next.send(Msg::Stop);
                return;
            }
        }
    }
}
