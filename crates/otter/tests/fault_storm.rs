//! A fault storm under a supervision tree: thousands of random crashes (panics in
//! handlers, `kill`, abnormal `exit` signals) hit the workers of three subtrees
//! (one_for_one, one_for_all, rest_for_one) while clients call them and they stream
//! acknowledgements to a sink that never crashes. Checked: every call either gets its
//! own reply or fails with the worker's exit (never a wrong or lost reply); every message
//! sent to the live sink arrives (none lost); afterwards the tree is whole (every
//! subtree and worker running, every name registered) and its shutdown leaves no
//! worker alive.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use otter::server::{self, CallError, Flow, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, ExitReason, Pid, Runtime};

const SUBTREES: usize = 3;
const WORKERS: usize = 8;
const CRASHES: u32 = 2_000;
const CLIENTS: u32 = 6;

/// Shared counters of the run.
#[derive(Default)]
struct Tally {
    /// Acknowledgements the workers sent to the sink.
    acks_sent: AtomicU64,
    /// Worker states alive right now (a guard in each).
    live_workers: AtomicUsize,
    /// Workers started, including restarts.
    starts: AtomicU64,
}

struct LiveGuard(Arc<Tally>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.live_workers.fetch_sub(1, Ordering::SeqCst);
    }
}

enum SinkMsg {
    Ack,
    Count(Pid<u64>),
}

struct Worker {
    sink: Pid<SinkMsg>,
    tally: Arc<Tally>,
    _live: LiveGuard,
}

enum Cast {
    Crash,
}

fn crash() {
    panic!("storm");
}

impl Server for Worker {
    type Args = (Pid<SinkMsg>, Arc<Tally>);
    type Call = (u64, ReplyTo<u64>);
    type Cast = Cast;
    type Info = ();

    async fn init(
        (sink, tally): Self::Args,
        _: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        tally.live_workers.fetch_add(1, Ordering::SeqCst);
        tally.starts.fetch_add(1, Ordering::Relaxed);
        Ok(Worker {
            sink,
            _live: LiveGuard(tally.clone()),
            tally,
        })
    }

    async fn handle_call(
        &mut self,
        (n, from): (u64, ReplyTo<u64>),
        _: &mut ServerContext<Self>,
    ) -> Flow {
        self.tally.acks_sent.fetch_add(1, Ordering::SeqCst);
        self.sink.send(SinkMsg::Ack);
        from.reply(n * 2 + 1);
        Flow::Continue
    }

    async fn handle_cast(&mut self, c: Cast, _: &mut ServerContext<Self>) -> Flow {
        match c {
            Cast::Crash => crash(),
        }
        Flow::Continue
    }
}

fn name(s: usize, w: usize) -> String {
    format!("storm-{s}-{w}")
}

/// xorshift64*: a fixed-seed generator, so a failing storm can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

rt_test!(
    a_fault_storm_loses_no_message_and_leaves_the_tree_whole,
    |rt: &Runtime| {
        let tally = Arc::new(Tally::default());
        let t = tally.clone();
        let r = rt.block_on(move |mut cx: Context<u64>| async move {
            let sink = cx.spawn(|mut c: Context<SinkMsg>| async move {
                let mut n = 0u64;
                loop {
                    match c.recv().await {
                        SinkMsg::Ack => n += 1,
                        SinkMsg::Count(to) => {
                            to.send(n);
                            return;
                        }
                    }
                }
            });
            let strategies = [
                Strategy::OneForOne,
                Strategy::OneForAll,
                Strategy::RestForOne,
            ];
            let mut top = SupervisorSpec::new(Strategy::OneForOne)
                .intensity(1_000_000, Duration::from_secs(1));
            for (s, &strategy) in strategies.iter().enumerate().take(SUBTREES) {
                let t2 = t.clone();
                top = top.child(ChildSpec::supervisor(format!("sub-{s}"), move || {
                    let mut sub =
                        SupervisorSpec::new(strategy).intensity(1_000_000, Duration::from_secs(1));
                    for w in 0..WORKERS {
                        let t3 = t2.clone();
                        sub = sub.child(ChildSpec::named_server::<Worker>(
                            format!("w{w}"),
                            name(s, w),
                            move || (sink, t3.clone()),
                        ));
                    }
                    sub
                }));
            }
            let top = supervisor::start_link(&cx, top).await.unwrap();

            // Clients: call random workers by name until told to stop; count replies.
            let me = cx.pid();
            let stop = Arc::new(AtomicUsize::new(0));
            for c in 0..CLIENTS {
                let stop = stop.clone();
                // Linked: a failed check in a client ends the test's root with it.
                cx.spawn_link(move |cx: Context<()>| async move {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(c + 1));
                    let (mut ok, mut failed) = (0u64, 0u64);
                    while stop.load(Ordering::SeqCst) == 0 {
                        let (s, w) = (
                            (rng.next() % SUBTREES as u64) as usize,
                            (rng.next() % WORKERS as u64) as usize,
                        );
                        let Some(worker) = server::whereis::<Worker, _>(&cx, &name(s, w)) else {
                            cx.yield_now().await;
                            continue;
                        };
                        let n = rng.next() >> 8;
                        match worker
                            .call_timeout(|r| (n, r), Some(Duration::from_secs(10)))
                            .await
                        {
                            Ok(reply) => {
                                assert_eq!(reply, n * 2 + 1, "a reply to another call");
                                ok += 1;
                            }
                            Err(CallError::Exit(_) | CallError::Noproc) => failed += 1,
                            Err(e) => panic!("call failed with {e:?}"),
                        }
                    }
                    me.send(ok);
                    me.send(failed);
                });
            }

            // The storm.
            let mut rng = Rng(0xD1B5_4A32_D192_ED03);
            let mut hits = 0u32;
            while hits < CRASHES {
                let (s, w) = (
                    (rng.next() % SUBTREES as u64) as usize,
                    (rng.next() % WORKERS as u64) as usize,
                );
                match server::whereis::<Worker, _>(&cx, &name(s, w)) {
                    Some(worker) => {
                        match rng.next() % 3 {
                            0 => worker.cast(Cast::Crash),
                            1 => cx.exit(worker, ExitReason::Kill),
                            _ => cx.exit(worker, ExitReason::error(std::io::Error::other("storm"))),
                        }
                        hits += 1;
                    }
                    None => cx.yield_now().await,
                }
                if hits.is_multiple_of(16) {
                    cx.yield_now().await;
                }
            }
            stop.store(1, Ordering::SeqCst);
            let (mut ok, mut failed) = (0, 0);
            for _ in 0..CLIENTS {
                ok += cx.recv().await;
                failed += cx.recv().await;
            }

            // The tree is whole again: every subtree and worker runs, every name is
            // registered (restarts may still be under way: wait for them).
            let mut whole = false;
            for _ in 0..5_000 {
                let mut all = true;
                for sub in top.which_children().await.unwrap() {
                    all &= sub.pid.is_some();
                }
                for s in 0..SUBTREES {
                    for w in 0..WORKERS {
                        all &= server::whereis::<Worker, _>(&cx, &name(s, w)).is_some();
                    }
                }
                if all {
                    whole = true;
                    break;
                }
                cx.sleep(Duration::from_millis(1)).await;
            }
            let children = top.which_children().await.unwrap().len();

            // Shut the tree down; every worker ends.
            top.server().stop(ExitReason::Normal, None).await.unwrap();
            sink.send(SinkMsg::Count(cx.pid()));
            let received = cx.recv().await;
            (whole, children, ok, failed, received)
        });
        let (whole, children, ok, failed, received) = r.unwrap();
        eprintln!(
            "storm: {} worker starts, {ok} calls answered, {failed} failed with the worker's exit, {received} acks",
            tally.starts.load(Ordering::Relaxed)
        );
        assert!(whole, "the tree did not recover");
        assert_eq!(children, SUBTREES);
        assert!(ok > 0, "no call succeeded ({failed} failed)");
        assert_eq!(
            received,
            tally.acks_sent.load(Ordering::SeqCst),
            "messages to the live sink were lost"
        );
        assert!(
            tally.starts.load(Ordering::Relaxed) > (SUBTREES * WORKERS) as u64,
            "the storm restarted nothing"
        );
        support::eventually("every worker stopped", Duration::from_secs(5), || {
            tally.live_workers.load(Ordering::SeqCst) == 0
        });
    }
);
