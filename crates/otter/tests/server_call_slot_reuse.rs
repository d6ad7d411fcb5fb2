//! Rules of a reply slot that a worker keeps for its next call to the same server
//! (`server/reply.rs`, rule 3): a reply to an earlier call never reaches a later one; a
//! server that exits between two calls gives the next `Noproc`, one that exits during a
//! call gives that call its reason; calls to more servers than a worker keeps slots for
//! each get their own reply; a caller killed mid-call leaves nothing that answers later
//! calls.

#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Runtime};

/// Requests of [`Keeper`].
enum Req {
    /// Keep the handle, do not answer.
    Hold(ReplyTo<u32>),
    /// Answer every held handle with the value, then this one with the value + 1.
    Release(u32, ReplyTo<u32>),
    /// Answer the value.
    Echo(u32, ReplyTo<u32>),
    /// Exit without answering (the handle is dropped with the server's state).
    Crash(#[allow(dead_code)] ReplyTo<u32>),
}

/// A server that may hold replies back and answer them late.
struct Keeper(Vec<ReplyTo<u32>>);

impl Server for Keeper {
    type Args = ();
    type Call = Req;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Keeper(Vec::new()))
    }
    async fn handle_call(&mut self, r: Req, _: &mut ServerContext<Self>) -> Flow {
        match r {
            Req::Hold(f) => self.0.push(f),
            Req::Release(n, f) => {
                for held in self.0.drain(..) {
                    held.reply(n);
                }
                f.reply(n + 1);
            }
            Req::Echo(n, f) => f.reply(n),
            Req::Crash(_) => return Flow::Stop(ExitReason::ShutdownWith("crashed".into())),
        }
        Flow::Continue
    }
}

rt_test!(a_late_reply_never_reaches_a_later_call, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Keeper::start(&cx, ()).await.unwrap();
        let mut got = Vec::new();
        for i in 0..50u32 {
            // Times out; the server keeps its handle and answers it during the next
            // call, whose own answer must be `i + 1`, never the late `i`.
            let held = s
                .call_timeout(Req::Hold, Some(Duration::from_millis(1)))
                .await;
            let next = s.call(|f| Req::Release(i, f)).await;
            let echo = s.call(|f| Req::Echo(i, f)).await;
            got.push((held, next, echo));
        }
        got
    });
    for (i, (held, next, echo)) in r.unwrap().into_iter().enumerate() {
        let i = i as u32;
        assert_eq!(held, Err(CallError::Timeout));
        assert_eq!(next, Ok(i + 1));
        assert_eq!(echo, Ok(i));
    }
});

rt_test!(
    a_server_that_exits_between_calls_gives_the_next_call_noproc,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Keeper::start(&cx, ()).await.unwrap();
            let first = s.call(|f| Req::Echo(1, f)).await;
            let stopped = s.stop(ExitReason::Normal, None).await;
            (first, stopped, s.call(|f| Req::Echo(2, f)).await)
        });
        assert_eq!(r.unwrap(), (Ok(1), Ok(()), Err(CallError::Noproc)));
    }
);

rt_test!(
    a_server_that_exits_during_a_later_call_gives_it_the_reason,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Keeper::start(&cx, ()).await.unwrap();
            let mut before = Vec::new();
            for i in 0..10 {
                before.push(s.call(|f| Req::Echo(i, f)).await);
            }
            // Not a timeout: the server's exit ends the call.
            let crashed = s.call_timeout(Req::Crash, None).await;
            (before, crashed)
        });
        let (before, crashed) = r.unwrap();
        assert_eq!(before, (0..10).map(Ok).collect::<Vec<_>>());
        assert_eq!(
            crashed,
            Err(CallError::Exit(ExitReason::ShutdownWith("crashed".into())))
        );
    }
);

rt_test!(
    calls_to_more_servers_than_a_worker_keeps_slots_for_each_get_their_reply,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let mut servers = Vec::new();
            for _ in 0..7 {
                servers.push(Keeper::start(&cx, ()).await.unwrap());
            }
            let mut got = Vec::new();
            for round in 0..20u32 {
                for (k, s) in servers.iter().enumerate() {
                    let n = round * 10 + k as u32;
                    got.push((n, s.call(|f| Req::Echo(n, f)).await));
                }
            }
            // A server stopped now: every call to it after is `Noproc`, the others
            // still answer.
            servers[3].stop(ExitReason::Normal, None).await.unwrap();
            for (k, s) in servers.iter().enumerate() {
                let want = if k == 3 {
                    Err(CallError::Noproc)
                } else {
                    Ok(k as u32)
                };
                assert_eq!(s.call(|f| Req::Echo(k as u32, f)).await, want);
            }
            got
        });
        for (n, reply) in r.unwrap() {
            assert_eq!(reply, Ok(n));
        }
    }
);

rt_test!(
    a_caller_that_exits_mid_call_leaves_the_server_answering_others,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Keeper::start(&cx, ()).await.unwrap();
            // Callers that end while their call waits (killed), many times over: the
            // server answers the held handles into abandoned calls, and still answers
            // a live caller with its own reply.
            for _ in 0..20 {
                let c = cx.spawn(move |_: Context<()>| async move {
                    let _ = s.call_timeout(Req::Hold, None).await;
                });
                while s.call(|f| Req::Echo(0, f)).await != Ok(0) {}
                cx.exit(c, ExitReason::Kill);
                while !c.has_exited() {
                    cx.yield_now().await;
                }
            }
            s.call(|f| Req::Release(5, f)).await
        });
        assert_eq!(r.unwrap(), Ok(6));
    }
);
