//! `memory`: the cost of an idle process.
//!
//! Seed: WORKLOADS.md "memory", the "spawning a process must be as cheap as allocating a small
//! object" question behind SEEDS.md #3 ("How fast can Erlang create processes?"): spawn p
//! processes, each blocked waiting for a message, and measure what they cost.
//!
//! Params: `p` (default 100000) processes. ops = p.
//!
//! Measured: VmRSS of this OS process (`/proc/self/status`) before spawning and once all p
//! processes are alive and blocked: each child sends `Ready` to the parent just before it
//! blocks in `recv`, and the parent waits for p of them. `bytes_per_process` = RSS delta / p.
//! The delta includes the parent's `Vec` of p pids (8 bytes a process; the Erlang twin's pid
//! list costs it 16) and the process-table slots otter allocates on first use.
//!
//! Timed: from the first spawn until the p-th `Ready` has arrived.
//!
//! Check: after the measurement, every child is told to `Stop` and replies `Ended` as it
//! exits; the parent counts p `Ended`, then waits (up to 10 s) until no child's pid is alive
//! any more. Reading VmRSS must work too.

use std::time::{Duration, Instant};

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::PROCESS_BYTES;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "memory",
    summary: "p idle processes blocked in recv: resident bytes per process",
    params: &[ParamSpec::int("p", 100_000)],
    validate: no_validation,
    footprint,
    run,
};

/// What the parent receives from its children.
#[derive(Debug)]
enum ParentMsg {
    /// A child is about to block in `recv`.
    Ready,
    /// A child was told to stop and is exiting.
    Ended,
}

/// Tells a child to exit.
#[derive(Debug)]
struct Stop;

/// p idle processes, each with its pid kept and its `Ready` maybe queued at the parent.
fn footprint(params: &Params) -> Footprint {
    let p = count(params.int("p"));
    Footprint::new(("p", p), ("p+1", p + 1)).charge("p", p, "idle processes", PROCESS_BYTES)
}

fn run(rt: &Runtime, params: &Params) -> Result<Outcome, RunError> {
    let p = params.int("p");
    Ok(rt.block_on(move |mut cx: Context<ParentMsg>| async move {
        let parent = cx.pid();
        let mut pids: Vec<Pid<Stop>> = Vec::with_capacity(p as usize);
        let rss0 = vm_rss();
        let t0 = Instant::now();
        for _ in 0..p {
            pids.push(cx.spawn(move |mut cx: Context<Stop>| async move {
                parent.send(ParentMsg::Ready);
                let Stop = cx.recv().await;
                parent.send(ParentMsg::Ended);
            }));
        }
        let mut ready = 0u64;
        while ready < p {
            if let ParentMsg::Ready = cx.recv().await {
                ready += 1;
            }
        }
        let elapsed = t0.elapsed();
        let rss1 = vm_rss();

        for pid in &pids {
            pid.send(Stop);
        }
        let mut ended = 0u64;
        while ended < p {
            if let ParentMsg::Ended = cx.recv().await {
                ended += 1;
            }
        }
        // `Ended` is sent just before the child returns: give the exits a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut alive = pids.iter().filter(|pid| !pid.has_exited()).count();
        while alive > 0 && Instant::now() < deadline {
            cx.sleep(Duration::from_millis(1)).await;
            alive = pids.iter().filter(|pid| !pid.has_exited()).count();
        }

        let mut out = Outcome::new(elapsed, p, Ok(()));
        match (rss0, rss1) {
            (Ok(r0), Ok(r1)) => {
                let per = (r1 as f64 - r0 as f64) / p as f64;
                out.extra
                    .push(("bytes_per_process", ((per * 10.0).round() / 10.0).into()));
                out.extra.push(("rss_before_bytes", r0.into()));
                out.extra.push(("rss_after_bytes", r1.into()));
            }
            (Err(e), _) | (_, Err(e)) => {
                out.extra
                    .push(("bytes_per_process", serde_json::Value::Null));
                out.check = Err(e);
            }
        }
        if ended != p {
            out.check = Err(format!("ended: got {ended}, want {p}"));
        } else if alive > 0 {
            out.check = Err(format!("{alive} processes still alive 10 s after Stop"));
        }
        out
    })?)
}

/// VmRSS of this OS process, in bytes.
fn vm_rss() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| "no VmRSS in /proc/self/status".to_string())
}
