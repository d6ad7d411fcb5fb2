//! Rules of the scheduler for processes that spawn processes and wait for them: a
//! fork-join tree is walked depth-first, so a path's worth of its processes is alive
//! at once, not a level's worth (`scheduler/spawn_stack.rs`, docs/design/0034); and a
//! flat loop of spawns still runs every process it spawned.

#[path = "support/rt.rs"]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use otter::{Context, Pid, Runtime};

/// The tree's depth: fib(20) as 2·fib(20)−1 = 13,529 processes.
const N: u64 = 20;

/// The most processes of the tree alive at once that a depth-first walk may reach.
/// A walk holds about two processes a level of its path (40 here); there is one walk
/// per worker, and one more each time a worker's spawn stack ages (`SPAWN_AGE`, every
/// 5 ms of the run), so a slow run holds more: a debug build sharing two cores with
/// the other tests of this file peaked at 1,240 in CI (about fifty agings in its
/// 0.24 s), where a quiet run stays in the low hundreds. A breadth-first walk
/// (first in, first out on one worker) peaks at 8,572, most of the tree's parents
/// waiting for their children at once: the bound sits well between the two.
const DEPTH_FIRST_BOUND: usize = 3000;

/// Processes alive now and the most seen alive at once.
#[derive(Default)]
struct Alive {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Alive {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One process of the tree for fib(k): a leaf (k ≤ 2) sends 1; any other spawns two
/// children, for k−1 and k−2, and sends the sum of their replies. A hand-written future:
/// an `async fn` that spawns itself has a type that contains itself.
struct Node {
    cx: Context<u64>,
    parent: Pid<u64>,
    k: u64,
    alive: Arc<Alive>,
    forked: bool,
    first: Option<u64>,
}

fn node(cx: Context<u64>, parent: Pid<u64>, k: u64, alive: Arc<Alive>) -> Node {
    alive.enter();
    Node {
        cx,
        parent,
        k,
        alive,
        forked: false,
        first: None,
    }
}

impl Future for Node {
    type Output = ();

    fn poll(self: Pin<&mut Self>, tcx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if !this.forked {
            if this.k <= 2 {
                this.alive.leave();
                this.parent.send(1);
                return Poll::Ready(());
            }
            let (me, k) = (this.cx.pid(), this.k);
            for child in [k - 1, k - 2] {
                let a = this.alive.clone();
                this.cx
                    .spawn(move |cx: Context<u64>| node(cx, me, child, a));
            }
            this.forked = true;
        }
        loop {
            let Poll::Ready(v) = Pin::new(&mut this.cx.recv()).poll(tcx) else {
                return Poll::Pending;
            };
            match this.first {
                None => this.first = Some(v),
                Some(a) => {
                    this.alive.leave();
                    this.parent.send(a + v);
                    return Poll::Ready(());
                }
            }
        }
    }
}

fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..n {
        (a, b) = (b, a + b);
    }
    if n <= 2 { 1 } else { b }
}

rt_test!(a_fork_join_tree_is_walked_depth_first, |rt: &Runtime| {
    let alive = Arc::new(Alive::default());
    let a = alive.clone();
    let sum = rt
        .block_on(move |mut cx: Context<u64>| async move {
            let me = cx.pid();
            cx.spawn(move |c: Context<u64>| node(c, me, N, a));
            cx.recv().await
        })
        .unwrap();
    assert_eq!(sum, fib(N));
    let peak = alive.peak.load(Ordering::Relaxed);
    assert!(
        peak <= DEPTH_FIRST_BOUND,
        "{peak} of the tree's {} processes were alive at once",
        2 * fib(N) - 1
    );
});

rt_test!(every_process_of_a_flat_spawn_loop_runs, |rt: &Runtime| {
    const K: u64 = 10_000;
    let got = rt
        .block_on(move |mut cx: Context<u64>| async move {
            let me = cx.pid();
            for i in 0..K {
                cx.spawn(move |_: Context<()>| async move { me.send(i) });
            }
            let mut seen = vec![false; K as usize];
            for _ in 0..K {
                seen[cx.recv().await as usize] = true;
            }
            seen.iter().all(|s| *s)
        })
        .unwrap();
    assert!(got, "every spawned process sent its number");
});

/// One worker: a process spawned onto the spawn stack beside a ping-pong pair, which
/// spawns nothing and keeps the local queue empty, runs within a few hundred round trips
/// (it ages into the local queue), not when a timer-based turn comes.
#[test]
fn a_spawn_beside_a_chain_that_spawns_nothing_runs_within_a_few_polls() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let round_trips = rt
        .block_on(move |mut cx: Context<u64>| async move {
            let ran = Arc::new(AtomicUsize::new(0));
            let r2 = ran.clone();
            // The pair's other half takes the empty LIFO slot; the next spawn of this
            // turn goes on the spawn stack.
            let ponger = cx.spawn(move |mut c: Context<Pid<u64>>| async move {
                loop {
                    let from = c.recv().await;
                    from.send(0);
                }
            });
            cx.spawn(move |_: Context<()>| async move {
                r2.store(1, Ordering::SeqCst);
            });
            let me = cx.pid();
            let mut n = 0u64;
            while ran.load(Ordering::SeqCst) == 0 && n < 1_000_000 {
                ponger.send(me);
                cx.recv().await;
                n += 1;
            }
            n
        })
        .unwrap();
    assert!(
        round_trips < 1000,
        "the spawned process ran after {round_trips} round trips"
    );
}
