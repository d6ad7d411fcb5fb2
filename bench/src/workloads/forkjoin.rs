//! `forkjoin`: a process tree that sums its leaves.
//!
//! WORKLOADS.md "forkjoin" (issue 39, item 8): fib(n) as processes. A process for k ≤ 2
//! sends 1 to its parent and ends; otherwise it spawns two children, for k−1 and then
//! k−2, receives their two numbers, sends the sum to its parent and ends. Every process
//! waits for its children, so how many are alive at once depends on the order the
//! scheduler walks the tree: depth-first keeps a path's worth (a few hundred), breadth-
//! first a large part of the tree. The peak RSS (`VmHWM`) says which.
//!
//! Params: `n` (default 27; at most [`MAX_N`]). ops = processes spawned, 2·fib(n)−1
//! (392,835 for n = 27).
//!
//! Timed: from the root's spawn until the root's answer reaches the coordinator.
//!
//! Check: the answer equals fib(n). Extra field: `peak_rss_bytes`, this OS process's
//! `VmHWM` (`/proc/self/status`) read after the run: the high-water mark of the whole
//! program, the runtime's own memory included.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use otter::{Context, Pid, Runtime};

use super::{Footprint, Outcome, RunError, Workload, count, expect, no_validation};
use crate::args::{ParamSpec, Params};
use crate::limits::PROCESS_BYTES;

/// The largest `n`: fib(40) is 102,334,155, so 2·fib(40)−1 processes are far past
/// [`crate::limits::MAX_PROCESSES`]; the footprint check refuses what does not fit.
pub(crate) const MAX_N: u64 = 40;

/// The workload.
pub(crate) const WORKLOAD: Workload = Workload {
    name: "forkjoin",
    summary: "fib(n) as a process tree: each process spawns two children and sums their replies",
    params: &[ParamSpec::int_in("n", 1, MAX_N, 27)],
    validate: no_validation,
    footprint,
    run,
};

/// fib(n), with fib(1) = fib(2) = 1.
fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..n {
        (a, b) = (b, a + b);
    }
    if n <= 2 { 1 } else { b }
}

/// 2·fib(n)−1 spawns. A breadth-first walk may hold most of the tree alive at once, so
/// every process is charged.
fn footprint(p: &Params) -> Footprint {
    let procs = count(2 * fib(p.int("n")) - 1);
    Footprint::new(("2*fib(n)-1", procs), ("2*fib(n)-1", procs)).charge(
        "2*fib(n)-1",
        procs,
        "tree processes",
        PROCESS_BYTES,
    )
}

fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let n = p.int("n");
    let ops = 2 * fib(n) - 1;
    let mut out = rt.block_on(move |mut cx: Context<u64>| async move {
        let me = cx.pid();
        let t0 = Instant::now();
        cx.spawn(move |cx: Context<u64>| Node::new(cx, me, n));
        let answer = cx.recv().await;
        let elapsed = t0.elapsed();
        Outcome::new(elapsed, ops, expect("answer", answer, fib(n)))
    })?;
    match peak_rss() {
        Ok(b) => out.extra.push(("peak_rss_bytes", b.into())),
        Err(e) => {
            out.extra.push(("peak_rss_bytes", serde_json::Value::Null));
            if out.check.is_ok() {
                out.check = Err(e);
            }
        }
    }
    Ok(out)
}

/// One process of the tree, for fib(k).
///
/// A hand-written future rather than an `async fn`: its type must not depend on itself
/// through the `spawn` inside (an `async fn` here is a cycle for the `Send` check), and
/// a `Box` a process would be an allocation the Erlang twin does not make.
struct Node {
    cx: Context<u64>,
    parent: Pid<u64>,
    k: u64,
    /// Whether the children have been spawned.
    forked: bool,
    /// The first child's answer, once it has come.
    first: Option<u64>,
}

impl Node {
    fn new(cx: Context<u64>, parent: Pid<u64>, k: u64) -> Node {
        Node {
            cx,
            parent,
            k,
            forked: false,
            first: None,
        }
    }
}

impl Future for Node {
    type Output = ();

    fn poll(self: Pin<&mut Self>, tcx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if !this.forked {
            if this.k <= 2 {
                this.parent.send(1);
                return Poll::Ready(());
            }
            let (me, k) = (this.cx.pid(), this.k);
            this.cx
                .spawn(move |cx: Context<u64>| Node::new(cx, me, k - 1));
            this.cx
                .spawn(move |cx: Context<u64>| Node::new(cx, me, k - 2));
            this.forked = true;
        }
        loop {
            // `Recv` keeps no state between polls: a new one each time is the same receive.
            let Poll::Ready(v) = Pin::new(&mut this.cx.recv()).poll(tcx) else {
                return Poll::Pending;
            };
            match this.first {
                None => this.first = Some(v),
                Some(a) => {
                    this.parent.send(a + v);
                    return Poll::Ready(());
                }
            }
        }
    }
}

/// VmHWM (the peak resident set) of this OS process, in bytes.
fn peak_rss() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| "no VmHWM in /proc/self/status".to_string())
}

#[cfg(test)]
mod tests {
    use super::fib;

    #[test]
    fn fib_of_the_default_tree() {
        assert_eq!((1..=6).map(fib).collect::<Vec<_>>(), [1, 1, 2, 3, 5, 8]);
        assert_eq!(2 * fib(27) - 1, 392_835);
    }
}
