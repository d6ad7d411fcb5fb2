//! Rule: a call's timeout fires at its deadline, never before, whether the caller's
//! worker goes idle, stays busy, or is held by one long poll. (A timeout of
//! `DEFER_TIMER_AFTER` or more is deferred: the call arms its timer only if it still
//! waits at its worker's second flush, which comes every few dozen polls and before the
//! worker parks, or at the watchdog's look at a held worker, and wakes it for that; these
//! tests take every path.)

#[path = "support/rt.rs"]
mod support;

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Runtime};

/// A server that keeps every caller waiting.
struct Silent(Vec<ReplyTo<()>>);

impl Server for Silent {
    type Args = ();
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Silent(Vec::new()))
    }
    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        self.0.push(from);
        Flow::Continue
    }
}

/// Calls a silent server with `timeout` from a new root process; returns the outcome
/// and how long it took.
fn call_silent(rt: &Runtime, timeout: Duration) -> (Result<(), CallError>, Duration) {
    rt.block_on(move |cx: Context<()>| async move {
        let s = Silent::start(&cx, ()).await.unwrap();
        let t0 = Instant::now();
        let r = s.call_timeout(|f| f, Some(timeout)).await;
        (r, t0.elapsed())
    })
    .unwrap()
}

const LONG: Duration = Duration::from_millis(120);
const SHORT: Duration = Duration::from_millis(5);

rt_test!(
    a_call_timeout_fires_when_the_callers_worker_goes_idle,
    |rt: &Runtime| {
        for timeout in [LONG, SHORT] {
            let (r, took) = call_silent(rt, timeout);
            assert_eq!(r, Err(CallError::Timeout));
            assert!(took >= timeout, "fired early: {took:?} < {timeout:?}");
        }
    }
);

rt_test!(
    a_call_timeout_fires_while_the_callers_worker_stays_busy,
    |rt: &Runtime| {
        // Processes that yield for ever keep every worker busy: no worker parks, so the
        // deferred deadline is armed by the flushes between polls.
        let stop = Arc::new(AtomicBool::new(false));
        for _ in 0..2 * support::MANY {
            let stop = stop.clone();
            rt.handle().spawn(move |cx: Context<()>| async move {
                while !stop.load(Ordering::Relaxed) {
                    cx.yield_now().await;
                }
            });
        }
        for timeout in [LONG, SHORT] {
            let (r, took) = call_silent(rt, timeout);
            assert_eq!(r, Err(CallError::Timeout));
            assert!(took >= timeout, "fired early: {took:?} < {timeout:?}");
        }
        stop.store(true, Ordering::Relaxed);
    }
);

rt_test!(
    a_call_timeout_fires_while_a_process_holds_the_callers_worker,
    |rt: &Runtime| {
        // As many processes as workers compute without awaiting until the call has
        // returned; the last spawned runs on the caller's worker as soon as the call
        // waits, and holds it. Its worker's flushes wait for that poll to end, so the
        // deadline deferred there is armed by the watchdog's look at the held worker.
        // (The guard only turns a failure into an assertion rather than a hang.)
        const GUARD: Duration = Duration::from_secs(30);
        let threads = rt.threads();
        let (r, hogs_stopped_early) = rt
            .block_on(move |cx: Context<()>| async move {
                let s = Silent::start(&cx, ()).await.unwrap();
                let returned = Arc::new(AtomicBool::new(false));
                let guard_hit = Arc::new(AtomicBool::new(false));
                for _ in 0..threads {
                    let (returned, guard_hit) = (returned.clone(), guard_hit.clone());
                    cx.spawn(move |_: Context<()>| async move {
                        let t0 = Instant::now();
                        while !returned.load(Ordering::Relaxed) {
                            if t0.elapsed() > GUARD {
                                guard_hit.store(true, Ordering::Relaxed);
                                break;
                            }
                            std::hint::spin_loop();
                        }
                    });
                }
                let r = s.call_timeout(|f| f, Some(LONG)).await;
                returned.store(true, Ordering::Relaxed);
                (r, guard_hit.load(Ordering::Relaxed))
            })
            .unwrap();
        assert_eq!(r, Err(CallError::Timeout));
        assert!(
            !hogs_stopped_early,
            "the call timed out only after the processes holding the workers stopped"
        );
    }
);

rt_test!(
    a_deferred_call_answered_in_time_is_not_timed_out,
    |rt: &Runtime| {
        // The reply comes after the worker has flushed (and armed) the deadline: the
        // armed timer is cancelled, and the call returns the reply.
        struct Late(Option<ReplyTo<u8>>);
        impl Server for Late {
            type Args = ();
            type Call = Option<ReplyTo<u8>>;
            type Cast = ();
            type Info = ();
            async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
                Ok(Late(None))
            }
            async fn handle_call(
                &mut self,
                from: Option<ReplyTo<u8>>,
                _: &mut ServerContext<Self>,
            ) -> Flow {
                match from {
                    Some(f) => self.0 = Some(f),
                    None => {
                        if let Some(f) = self.0.take() {
                            f.reply(7);
                        }
                    }
                }
                Flow::Continue
            }
        }
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Late::start(&cx, ()).await.unwrap();
            // A second process answers the first call after a pause long enough for the
            // caller's worker to park (and flush) in between.
            cx.spawn(move |c: Context<()>| async move {
                c.sleep(Duration::from_millis(20)).await;
                // A reply handle it does not need: the server replies to the first call.
                let _ = s
                    .call_timeout(|_: ReplyTo<u8>| None, Some(Duration::from_millis(1)))
                    .await;
            });
            s.call_timeout(Some, Some(Duration::from_secs(5))).await
        });
        assert_eq!(r.unwrap(), Ok(7));
    }
);

rt_test!(
    many_calls_waiting_at_once_each_time_out_never_early,
    |rt: &Runtime| {
        // One process waits on more calls at once than a worker looks back through when
        // a call ends (`context::undefer`): every deadline is deferred, the flush wakes
        // the process, and each call arms its own timer at that poll.
        const CALLS: usize = 20;
        let outcomes = rt
            .block_on(|cx: Context<()>| async move {
                let s = Silent::start(&cx, ()).await.unwrap();
                let t0 = Instant::now();
                type Call<'a> = Pin<Box<dyn Future<Output = Result<(), CallError>> + Send + 'a>>;
                let mut calls: Vec<Call<'_>> = (0..CALLS)
                    .map(|_| Box::pin(s.call_timeout(|f| f, Some(LONG))) as Call<'_>)
                    .collect();
                // Each call's outcome, and when it came.
                let mut outcomes = vec![None; CALLS];
                poll_fn(|task| {
                    for (call, outcome) in calls.iter_mut().zip(outcomes.iter_mut()) {
                        if outcome.is_none()
                            && let Poll::Ready(r) = call.as_mut().poll(task)
                        {
                            *outcome = Some((r, t0.elapsed()));
                        }
                    }
                    if outcomes.iter().all(Option::is_some) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await;
                outcomes
            })
            .unwrap();
        for (r, took) in outcomes.into_iter().flatten() {
            assert_eq!(r, Err(CallError::Timeout));
            assert!(took >= LONG, "fired early: {took:?} < {LONG:?}");
        }
    }
);
