//! `spawn`: serial spawn.
//!
//! Seed: SEEDS.md #3, "How fast can Erlang create processes?" (2006): `serial_spawn(M)`,
//! 1,000,000 processes in M chains, each spawning the next one of its chain and exiting
//! (about 350,000 spawn+exit per second then); WORKLOADS.md "spawn". The seed also ran
//! c = 10 and c = 100.
//!
//! Params: `n` (default 1000000) processes in all, `c` (default 1) chains; c must not exceed
//! n. When c does not divide n, the first n mod c chains get one process more, so exactly n
//! processes are made (and `note` says so). ops = n.
//!
//! `style` (default chain): `chain` is the seed's; `loop` is one process (the
//! coordinator) spawning all n in a loop, each of which adds one to a shared counter and
//! exits, the one that brings it to n sending `Done(n)` (`c` is ignored). The loop awaits
//! [`Context::consume_budget`] after each spawn, so it yields when its turn's budget is
//! spent and the children run and exit in between (their cells reused), as the BEAM
//! yields the twin's loop when its reductions run out.
//!
//! Timed: from spawning the first chain head (or the loop's first process) until the
//! coordinator has all c `Done` messages (loop: the one).
//!
//! Check: c `Done` messages arrive (and no more: the mailbox is empty afterwards), and the
//! process counts they carry add up to n: each process passes on how many processes its chain
//! has made so far, itself included (as `serial_spawn.erl`). Loop: the counter reached n.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Instant;

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect};
use crate::args::{ParamSpec, Params};
use crate::limits::CHAIN_BYTES;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "spawn",
    summary: "n processes in c chains, each spawns the next and exits",
    params: &[
        ParamSpec::int("n", 1_000_000),
        ParamSpec::int("c", 1),
        ParamSpec::choice("style", &["chain", "loop"], "chain"),
    ],
    validate,
    footprint,
    run,
};

/// The end of one chain: how many processes it made.
#[derive(Debug)]
struct Done(u64);

fn validate(p: &Params) -> Result<(), String> {
    let (n, c) = (p.int("n"), p.int("c"));
    if c > n {
        return Err(format!("c={c} exceeds n={n} (every chain needs a process)"));
    }
    Ok(())
}

/// n spawns; about two processes a chain alive at once, and the coordinator.
fn footprint(p: &Params) -> Footprint {
    let (n, c) = (count(p.int("n")), count(p.int("c")));
    Footprint::new(("n", n), ("2*c+1", 2 * c + 1)).charge("c", c, "chains", CHAIN_BYTES)
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let (n, c) = (p.int("n"), p.int("c"));
    if p.choice("style") == "loop" {
        return run_loop(rt, n);
    }
    Ok(rt.block_on(move |mut cx: Context<Done>| async move {
        let coordinator = cx.pid();
        let (len, longer) = (n / c, n % c);
        let t0 = Instant::now();
        for i in 0..c {
            let chain_len = len + u64::from(i < longer);
            cx.spawn(move |cx: Context<()>| Link {
                cx,
                coordinator,
                left: chain_len - 1,
                made: 1,
            });
        }
        let mut made = 0;
        for _ in 0..c {
            let Done(k) = cx.recv().await;
            made += k;
        }
        let elapsed = t0.elapsed();
        let check = if cx.try_recv().is_some() {
            Err("more than c done messages".to_string())
        } else {
            expect("processes", made, n)
        };
        let mut out = Outcome::new(elapsed, n, check);
        if longer > 0 {
            out.notes.push(format!(
                "n mod c = {longer}: {longer} chains of {}, {} of {len}",
                len + 1,
                c - longer
            ));
        }
        out
    })?)
}

/// One process of a chain: `left` processes still to create after this one, `made` created
/// so far including this one. When it runs, it spawns the next process of its chain (or, the
/// last one, reports to the coordinator) and returns, i.e. exits.
///
/// A hand-written future rather than an `async fn`: its type must not depend on itself
/// through the `spawn` inside (an `async fn` here is a cycle for the `Send` check).
struct Link {
    cx: Context<()>,
    coordinator: Pid<Done>,
    left: u64,
    made: u64,
}

impl Future for Link {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        let Link {
            cx,
            coordinator,
            left,
            made,
        } = &*self;
        let (coordinator, left, made) = (*coordinator, *left, *made);
        if left == 0 {
            coordinator.send(Done(made));
        } else {
            cx.spawn(move |cx: Context<()>| Link {
                cx,
                coordinator,
                left: left - 1,
                made: made + 1,
            });
        }
        Poll::Ready(())
    }
}

/// `style=loop`: the coordinator spawns the n processes itself, yielding when its turn's
/// budget is spent (`serial_spawn.erl`'s `spawn_loop`).
fn run_loop(rt: &Runtime, n: u64) -> Result<Outcome, RunError> {
    Ok(rt.block_on(move |mut cx: Context<Done>| async move {
        let coordinator = cx.pid();
        let made = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        for _ in 0..n {
            let made = made.clone();
            cx.spawn(move |_: Context<()>| async move {
                if made.fetch_add(1, Ordering::Relaxed) + 1 == n {
                    coordinator.send(Done(n));
                }
            });
            cx.consume_budget().await;
        }
        let Done(k) = cx.recv().await;
        let elapsed = t0.elapsed();
        let check = if cx.try_recv().is_some() {
            Err("more than one done message".to_string())
        } else {
            expect("processes", k, n)
        };
        Outcome::new(elapsed, n, check)
    })?)
}
