//! A server with a bounded mailbox, offered ten times the work it can do.
//!
//! The server takes 100 µs a job (10,000 jobs/s) and holds at most 100 messages. Ten
//! clients each offer ten jobs every millisecond (10,000 jobs/s each: 100,000 in all). A
//! client whose `try_cast` meets a full mailbox gets the job back (`TrySendError::Full`)
//! and backs off, doubling its pause up to 4 ms; at the end each asks the server for its
//! count with a call, retrying while the call fails with `CallError::Full`. The server
//! keeps working at its own pace, its mailbox stays at the bound, and memory stays flat;
//! with an unbounded mailbox (`SpawnOptions::new()`) the same load would queue 90,000
//! jobs a second until memory ran out.
//!
//! Run with `cargo run --release -p otter-otp --example bounded_mailbox`.

use std::time::{Duration, Instant};

use otter::server::{self, CallError, Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, ExitReason, Runtime, SpawnOptions, TrySendError};

const BOUND: usize = 100;
const JOB: Duration = Duration::from_micros(100);
const CLIENTS: u32 = 10;
const PACE: Duration = Duration::from_millis(1);
const BURST: u64 = 10;
/// The longest back-off: shorter than the 10 ms the server takes to drain a full
/// mailbox, so that it never runs dry while every client waits.
const MAX_PAUSE: Duration = Duration::from_millis(4);
const RUN: Duration = Duration::from_secs(2);

/// The server: does jobs, and says how many it did.
struct Worker {
    done: u64,
    longest_queue: usize,
}

enum Call {
    /// Jobs done so far, and the longest queue seen.
    Stats(ReplyTo<(u64, usize)>),
}

impl Server for Worker {
    type Args = ();
    type Call = Call;
    type Cast = u32;
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Worker {
            done: 0,
            longest_queue: 0,
        })
    }

    async fn handle_call(&mut self, Call::Stats(r): Call, _: &mut ServerContext<Self>) -> Flow {
        r.reply((self.done, self.longest_queue));
        Flow::Continue
    }

    async fn handle_cast(&mut self, _client: u32, cx: &mut ServerContext<Self>) -> Flow {
        self.longest_queue = self.longest_queue.max(cx.message_queue_len());
        let t0 = Instant::now();
        while t0.elapsed() < JOB {
            std::hint::spin_loop();
        }
        self.done += 1;
        Flow::Continue
    }
}

/// A client: offers `BURST` jobs every `PACE` until `RUN` is over; on `Full` it backs
/// off, doubling its pause. Returns (offered, accepted).
async fn client(cx: Context<(u32, u64, u64)>, id: u32, s: ServerRef<Worker>) -> (u64, u64) {
    let (mut offered, mut accepted) = (0, 0);
    let end = Instant::now() + RUN;
    let mut pause = PACE;
    'run: while Instant::now() < end {
        for _ in 0..BURST {
            offered += 1;
            match s.try_cast(id) {
                Ok(()) => {
                    accepted += 1;
                    pause = PACE;
                }
                Err(TrySendError::Full(_job)) => {
                    pause = (pause * 2).min(MAX_PAUSE);
                    break;
                }
                Err(TrySendError::Exited(_)) => break 'run,
            }
        }
        cx.sleep(pause).await;
    }
    (offered, accepted)
}

fn main() {
    let rt = Runtime::new();
    let r = rt.block_on(|mut cx: Context<(u32, u64, u64)>| async move {
        let opts = SpawnOptions::new().bounded_mailbox(BOUND);
        let s = server::start_opt::<Worker, _>(&cx, (), opts)
            .await
            .expect("the server starts");
        let me = cx.pid();
        for id in 0..CLIENTS {
            cx.spawn(move |c: Context<(u32, u64, u64)>| async move {
                let (offered, accepted) = client(c, id, s).await;
                me.send((id, offered, accepted));
            });
        }
        let (mut offered, mut accepted) = (0, 0);
        for _ in 0..CLIENTS {
            let (_, o, a) = cx.recv().await;
            offered += o;
            accepted += a;
        }
        // The server may still be full: a call fails with `Full` until it has room.
        let (mut refused_calls, mut pause) = (0, Duration::from_millis(1));
        let stats = loop {
            match s.call(Call::Stats).await {
                Ok(stats) => break stats,
                Err(CallError::Full) => {
                    refused_calls += 1;
                    cx.sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(16));
                }
                Err(e) => panic!("the server failed: {e}"),
            }
        };
        (offered, accepted, refused_calls, stats)
    });
    let (offered, accepted, refused_calls, (done, longest)) = r.expect("the example runs");
    let secs = RUN.as_secs_f64();
    let wanted = f64::from(CLIENTS) * BURST as f64 / PACE.as_secs_f64();
    let capacity = 1.0 / JOB.as_secs_f64();
    println!(
        "clients want {wanted:.0} jobs/s ({:.0}x the server's {capacity:.0}/s); backing off, \
         they offered {offered} ({:.0}/s): {accepted} accepted, {} refused",
        wanted / capacity,
        offered as f64 / secs,
        offered - accepted
    );
    println!(
        "the server did {done} jobs by the end ({:.0}/s); longest queue {longest} (bound {BOUND}); \
         the stats call was refused {refused_calls} times first",
        done as f64 / secs
    );
}
