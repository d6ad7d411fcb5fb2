//! `pingpong`: round-trip latency between two processes.
//!
//! Seed: WORKLOADS.md "pingpong", the "a hop between processes must be a few nanoseconds"
//! question of SEEDS.md #4 (the ring showdown) and the call layer of SEEDS.md #5 (gen_server):
//! process A sends ping to B, B replies pong, A waits for it; r round trips.
//!
//! Params: `r` (default 1000000) round trips; `style` (default raw):
//! * `raw`: plain messages: A sends `Ping(a_pid)`, B replies `Pong`;
//! * `server`: B is a server and A makes a synchronous call. otter has no server layer yet:
//!   [`run_server`] runs the raw implementation and says so in `note` and `style_run`.
//!   Plugging the layer in means rewriting that one function.
//!
//! ops = r; `ns_per_op` = nanoseconds per round trip. A is the root process.
//!
//! Timed: from the first ping until the r-th pong is received (B is started just before).
//!
//! Check: r pongs received, and B answered every ping it got (B reports its count when it
//! is stopped).

use std::time::Instant;

use otter::{Context, ExitReason, Pid, Runtime};

use super::{Outcome, Workload, expect, no_validation};
use crate::args::{ParamSpec, Params};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "pingpong",
    summary: "r round trips between two processes",
    params: &[
        ParamSpec::int("r", 1_000_000),
        ParamSpec::choice("style", &["raw", "server"], "raw"),
    ],
    validate: no_validation,
    run,
};

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
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, ExitReason> {
    let r = p.int("r");
    match p.choice("style") {
        "server" => run_server(rt, r),
        _ => run_raw(rt, r),
    }
}

/// `style=server`: a synchronous call through otter's server layer.
///
/// The server layer does not exist yet, so this runs [`run_raw`] and marks the result
/// (`note`, `style_run = "raw"`). When the layer lands, replace this body with the
/// server-based implementation, timed and checked exactly like `run_raw`.
fn run_server(rt: &Runtime, r: u64) -> Result<Outcome, ExitReason> {
    let mut out = run_raw(rt, r)?;
    out.notes
        .push("server layer not implemented yet: ran style=raw".to_string());
    Ok(out)
}

/// `style=raw`: plain messages.
fn run_raw(rt: &Runtime, r: u64) -> Result<Outcome, ExitReason> {
    rt.block_on(move |mut cx: Context<ToA>| async move {
        let a = cx.pid();
        let b = cx.spawn(|mut cx: Context<ToB>| async move {
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
        });
        let t0 = Instant::now();
        let mut pongs = 0u64;
        for _ in 0..r {
            b.send(ToB::Ping(a));
            if let ToA::Pong = cx.recv().await {
                pongs += 1;
            }
        }
        let elapsed = t0.elapsed();
        b.send(ToB::Stop(a));
        let check = match cx.recv().await {
            ToA::Pings(pings) if pings != r => Err(format!("B got {pings} pings, want {r}")),
            ToA::Pings(_) => expect("pongs", pongs, r),
            ToA::Pong => Err("a pong too many".to_string()),
        };
        let mut out = Outcome::new(elapsed, r, check);
        out.extra.push(("style_run", "raw".into()));
        out
    })
}
