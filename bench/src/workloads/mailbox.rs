//! `mailbox`: selective receive order.
//!
//! Seed: SEEDS.md #2, "Erlang process mailbox performance" (2010): 10,000 processes each send
//! `{self(), ok}` to the parent, which waits for each pid in turn with selective receive; in
//! reverse spawn order 1.37 s, in spawn order 83 ms, because on the BEAM each receive rescans
//! the messages it skipped (O(k^2)); WORKLOADS.md "mailbox".
//!
//! Params: `k` (default 10000) children; `order` (default spawn): `spawn` | `reverse`, the
//! order in which the parent takes the children's messages; `style` (default key, otter
//! only: the Erlang twin has no such key):
//! * `key`: `Context::recv_key(&child_pid)`, otter's keyed selective receive (the message
//!   type is `Keyed` by the sender's pid): O(1) amortised per message, so linear in k in
//!   either order: otter's answer to the seed;
//! * `match`: `Context::recv_match(|m| m.0 == child_pid)`, Erlang's selective receive with a
//!   predicate on the pid: the BEAM's cost model, quadratic in the reverse order.
//!
//! ops = k.
//!
//! Timed: from the first spawn until the last child's message is taken.
//!
//! Check: all k messages were taken, each from the child it was waited for, and the parent's
//! mailbox is empty afterwards.

use std::time::Instant;

use otter::{Context, Keyed, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::PROCESS_BYTES;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "mailbox",
    summary: "k children each send {pid, ok}; the parent takes them by pid in spawn or reverse order",
    params: &[
        ParamSpec::int("k", 10_000),
        ParamSpec::choice("order", &["spawn", "reverse"], "spawn"),
        ParamSpec::choice("style", &["key", "match"], "key"),
    ],
    validate: no_validation,
    footprint,
    run,
};

/// `{its_pid, ok}`.
#[derive(Debug)]
struct Hello(Pid<()>);

impl Keyed for Hello {
    type Key = Pid<()>;

    fn key(&self) -> Option<Pid<()>> {
        Some(self.0)
    }
}

/// k children, all of them alive at once when the parent spawns them all before any runs
/// (`threads=1`), each with its message and pid kept by the parent.
fn footprint(p: &Params) -> Footprint {
    let k = count(p.int("k"));
    Footprint::new(("k", k), ("k+1", k + 1)).charge("k", k, "children", PROCESS_BYTES)
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let k = p.int("k");
    let reverse = p.choice("order") == "reverse";
    let keyed = p.choice("style") == "key";
    Ok(rt.block_on(move |mut cx: Context<Hello>| async move {
        let parent = cx.pid();
        let mut pids = Vec::with_capacity(k as usize);
        let t0 = Instant::now();
        for _ in 0..k {
            pids.push(cx.spawn(move |cx: Context<()>| async move {
                parent.send(Hello(cx.pid()));
            }));
        }
        if reverse {
            pids.reverse();
        }
        let (mut taken, mut wrong) = (0u64, 0u64);
        for pid in &pids {
            let Hello(from) = if keyed {
                cx.recv_key(pid).await
            } else {
                cx.recv_match(|m: &Hello| m.0 == *pid).await
            };
            taken += 1;
            wrong += u64::from(from != *pid);
        }
        let elapsed = t0.elapsed();
        let mut left = 0u64;
        while cx.try_recv().is_some() {
            left += 1;
        }
        let check = if wrong > 0 {
            Err(format!("{wrong} messages from the wrong child"))
        } else if left > 0 {
            Err(format!("{left} messages left over"))
        } else {
            expect("taken", taken, k)
        };
        let mut out = Outcome::new(elapsed, k, check);
        out.notes.push(if keyed {
            "style=key: recv_key by the child's pid (otter's O(1) keyed receive)".to_string()
        } else {
            "style=match: recv_match on the child's pid (Erlang's selective receive)".to_string()
        });
        out
    })?)
}
