//! Rules of the turn handed on (`coop.rs`, rule 5; `scheduler/worker.rs`, rule 2): a
//! call made while other processes are queued is served and answered in its caller's
//! turn, before they run (unless the chain of handed-on turns reaches its bound, which
//! sends it once behind them); a server's start runs its `init` the same way; and a
//! caller that calls without end still leaves its worker to the processes queued
//! beside it.
//!
//! The first two are about one worker's queue: on several workers, the others poll
//! the queued processes meanwhile (they steal them), so they run on one worker only.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Runtime};

/// Answers each call with its number plus one.
struct Echo;

impl Server for Echo {
    type Args = ();
    type Call = (u64, ReplyTo<u64>);
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Echo)
    }
    async fn handle_call(
        &mut self,
        (n, reply): (u64, ReplyTo<u64>),
        _: &mut ServerContext<Self>,
    ) -> Flow {
        reply.reply(n + 1);
        Flow::Continue
    }
}

/// A server whose `init` reads the queued processes' poll count (`Args`) into its
/// state, and answers a call with it.
struct Snapshot(u64);

impl Server for Snapshot {
    type Args = Arc<AtomicU64>;
    type Call = ReplyTo<u64>;
    type Cast = ();
    type Info = ();
    async fn init(polls: Arc<AtomicU64>, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Snapshot(polls.load(Ordering::SeqCst)))
    }
    async fn handle_call(&mut self, reply: ReplyTo<u64>, _: &mut ServerContext<Self>) -> Flow {
        reply.reply(self.0);
        Flow::Continue
    }
}

/// Spawns `n` processes that count their polls in `polls` and yield until `stop`.
fn spawn_yielders(cx: &Context<()>, n: usize, polls: &Arc<AtomicU64>, stop: &Arc<AtomicBool>) {
    for _ in 0..n {
        let (polls, stop) = (polls.clone(), stop.clone());
        cx.spawn(move |c: Context<()>| async move {
            while !stop.load(Ordering::SeqCst) {
                polls.fetch_add(1, Ordering::SeqCst);
                c.yield_now().await;
            }
        });
    }
}

#[test]
fn a_call_made_while_others_are_queued_is_answered_before_they_run() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|cx: Context<()>| async move {
        let echo = Echo::start(&cx, ()).await.unwrap();
        let (polls, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        spawn_yielders(&cx, 50, &polls, &stop);
        // Queue behind them, so that they are all queued when the calls are made.
        cx.yield_now().await;
        let mut passed = Vec::new();
        for n in 0..20 {
            let before = polls.load(Ordering::SeqCst);
            assert_eq!(echo.call(|r| (n, r)).await, Ok(n + 1));
            passed.push(polls.load(Ordering::SeqCst) - before);
        }
        stop.store(true, Ordering::SeqCst);
        passed
    });
    // Without the turn handed on, the server waits behind the 50 and the caller again:
    // about 100 polls of theirs in every call. Handed on, a call waits for them at most
    // once (when the chain's bound, `MAX_LIFO_POLLS`, ends it), and most not at all.
    let passed = r.unwrap();
    assert!(passed.iter().all(|&p| p <= 50), "{passed:?}");
    assert!(
        passed.iter().filter(|&&p| p == 0).count() >= 10,
        "{passed:?}"
    );
}

#[test]
fn a_server_start_runs_init_in_its_callers_turn() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|cx: Context<()>| async move {
        let (polls, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        spawn_yielders(&cx, 50, &polls, &stop);
        cx.yield_now().await;
        let before = polls.load(Ordering::SeqCst);
        let s = Snapshot::start(&cx, polls.clone()).await.unwrap();
        let after = polls.load(Ordering::SeqCst);
        let seen = s.call(|r| r).await.unwrap();
        stop.store(true, Ordering::SeqCst);
        (before, seen, after)
    });
    let (before, seen, after) = r.unwrap();
    assert_eq!(
        (seen, after),
        (before, before),
        "queued polls during the start"
    );
}

rt_test!(
    a_caller_that_calls_without_end_leaves_room_for_the_queued,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let echo = Echo::start(&cx, ()).await.unwrap();
            let (polls, stop) = (
                Arc::new(AtomicU64::new(0)),
                Arc::new(AtomicBool::new(false)),
            );
            spawn_yielders(&cx, 1, &polls, &stop);
            cx.yield_now().await;
            for n in 0..10_000 {
                assert_eq!(echo.call(|r| (n, r)).await, Ok(n + 1));
            }
            stop.store(true, Ordering::SeqCst);
            polls.load(Ordering::SeqCst)
        });
        // A chain of handed-on turns is bounded (`MAX_LIFO_POLLS`): on one worker the
        // yielder runs at least once per chain of about nine polls, 20,000 polls here.
        let polls = r.unwrap();
        assert!(polls >= 1_000, "the queued process ran {polls} times");
    }
);
