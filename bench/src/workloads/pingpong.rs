//! `pingpong`: round-trip latency between two processes.
//!
//! Seed: WORKLOADS.md "pingpong", the "a hop between processes must be a few nanoseconds"
//! question of SEEDS.md #4 (the ring showdown) and the call layer of SEEDS.md #5 (gen_server):
//! process A sends ping to B, B replies pong, A waits for it; r round trips.
//!
//! Params: `r` (default 1000000) round trips; `style` (default raw):
//! * `raw`: plain messages: A sends `Ping(a_pid)`, B replies `Pong`;
//! * `server`: B is an [`otter::server::Server`] (as `pingpong_server.erl` is a
//!   `gen_server`), started with `start_link`, and each round trip is one `call(Ping)` with
//!   no timeout (`gen_server:call(B, ping, infinity)`), answered `Pong`;
//! * `statem`: the same calls to B as an [`otter::statem::StateMachine`] in one state
//!   (a `gen_statem` answering `{reply, From, pong}` with `keep_state_and_data`): what a
//!   state machine's event loop adds to a server's call. otter's side only.
//!
//! ops = r; `ns_per_op` = nanoseconds per round trip. A is the root process. Extra field:
//! `style_run` (the style that ran).
//!
//! Timed: from the first ping until the r-th pong is received (B is started just before).
//!
//! Check: r pongs received, and B answered every ping it got (B reports its count at the
//! end: raw, when it is stopped; server, to one more call after the timed region, and then
//! it stops normally).

use std::time::Instant;

use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::statem::{Event, Machine, StateMachine, StatemContext, Transition};
use otter::{Context, ExitReason, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect, no_validation};
use crate::args::{ParamSpec, Params};

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "pingpong",
    summary: "r round trips between two processes",
    params: &[
        ParamSpec::int("r", 1_000_000),
        ParamSpec::choice("style", &["raw", "server", "statem"], "raw"),
    ],
    validate: no_validation,
    footprint,
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

/// r round trips, one message in flight, two processes.
fn footprint(p: &Params) -> Footprint {
    Footprint::new(("r", count(p.int("r"))), ("2", 2))
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let r = p.int("r");
    Ok(match p.choice("style") {
        "server" => run_calls::<Ponger>(rt, r, "server")?,
        "statem" => run_calls::<Machine<StatemPonger>>(rt, r, "statem")?,
        _ => run_raw(rt, r)?,
    })
}

/// `style=server` and `style=statem`: one synchronous call per round trip through otter's
/// server layer (to a server, or to a state machine's), timed and checked like
/// [`run_raw`].
fn run_calls<B: Server<Args = (), Call = Call>>(
    rt: &Runtime,
    r: u64,
    style: &'static str,
) -> Result<Outcome, ExitReason> {
    rt.block_on(move |cx: Context<()>| async move {
        let b = otter::server::start_link::<B, ()>(&cx, ()).await?;
        let t0 = Instant::now();
        let (mut pongs, mut failed) = (0u64, None);
        for _ in 0..r {
            match b.call_timeout(Call::Ping, None).await {
                Ok(Pong) => pongs += 1,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let elapsed = t0.elapsed();
        let pings = b.call_timeout(Call::Pings, None).await;
        let stopped = b.stop(ExitReason::Normal, None).await;
        let check = match (failed, pings, stopped) {
            (Some(e), ..) => Err(format!("call {} failed: {e}", pongs + 1)),
            (None, Err(e), _) => Err(format!("asking B for its count: {e}")),
            (None, Ok(pings), _) if pings != r => Err(format!("B got {pings} pings, want {r}")),
            (None, Ok(_), Err(e)) => Err(format!("stopping B: {e}")),
            (None, Ok(_), Ok(())) => expect("pongs", pongs, r),
        };
        let mut out = Outcome::new(elapsed, r, check);
        out.extra.push(("style_run", style.into()));
        Ok(out)
    })?
}

/// B's calls (style=server), each with its reply's type.
#[derive(Debug)]
enum Call {
    /// Answered `Pong`.
    Ping(ReplyTo<Pong>),
    /// Answered with how many pings B answered.
    Pings(ReplyTo<u64>),
}

/// The answer to a ping (style=server).
#[derive(Debug)]
struct Pong;

/// B as a server (`pingpong_server.erl`); its state counts the pings.
struct Ponger {
    pings: u64,
}

impl Server for Ponger {
    type Args = ();
    type Call = Call;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Ponger { pings: 0 })
    }

    async fn handle_call(&mut self, call: Call, _: &mut ServerContext<Self>) -> Flow {
        match call {
            Call::Ping(from) => {
                self.pings += 1;
                from.reply(Pong);
            }
            Call::Pings(from) => from.reply(self.pings),
        }
        Flow::Continue
    }
}

/// B as a state machine of one state (style=statem); its data counts the pings.
struct StatemPonger {
    pings: u64,
}

impl StateMachine for StatemPonger {
    type Args = ();
    type State = ();
    type Call = Call;
    type Cast = ();
    type Info = ();
    type Internal = ();

    async fn init(
        _: (),
        _: &mut StatemContext<Self>,
    ) -> Result<(Self, Transition<Self>), ExitReason> {
        Ok((StatemPonger { pings: 0 }, Transition::next(())))
    }

    async fn handle_event(
        &mut self,
        _: &(),
        event: Event<Self>,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        match event {
            Event::Call(Call::Ping(from)) => {
                self.pings += 1;
                Transition::keep().reply(from, Pong)
            }
            Event::Call(Call::Pings(from)) => Transition::keep().reply(from, self.pings),
            _ => Transition::keep(),
        }
    }
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
