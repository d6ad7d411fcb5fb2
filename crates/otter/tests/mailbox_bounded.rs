//! Rules of bounded mailboxes (`SpawnOptions::bounded_mailbox`): `try_send` to a full
//! one hands the message back as `Full`; plain `send` is accepted beyond the bound and
//! nothing is lost; the awaitable send waits for room and holds the queue at the bound;
//! a waiting sender stops waiting when the receiver exits; `Down`s, exit signals and
//! timer messages are never refused; a call to a full server fails with
//! `CallError::Full` and the server answers again once it has drained.

#[path = "support/gate.rs"]
mod gate;
#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use gate::Gate;
use otter::server::{self, CallError, Flow, ReplyTo, Server, ServerContext};
use otter::{Context, Down, Exit, ExitReason, Runtime, SpawnOptions, TrySendError};
use support::eventually;

rt_test!(
    try_send_to_a_full_bounded_mailbox_hands_the_message_back_as_full,
    |rt: &Runtime| {
        let r = rt
            .block_on(|cx: Context<()>| async move {
                let opts = SpawnOptions::new().bounded_mailbox(4);
                // Each keeps its `Context` (its mailbox's receiving end) and never receives.
                let idle = cx.spawn_opt(opts, |c: Context<u32>| async move {
                    let _receiver = c;
                    std::future::pending::<()>().await
                });
                let unbounded = cx.spawn(|c: Context<u32>| async move {
                    let _receiver = c;
                    std::future::pending::<()>().await
                });
                let sent: Vec<_> = (0..6).map(|i| idle.try_send(i)).collect();
                let plain: Vec<_> = (0..6).map(|i| unbounded.try_send(i)).collect();
                (sent, plain, idle.message_queue_len())
            })
            .unwrap();
        assert_eq!(
            r.0,
            vec![
                Ok(()),
                Ok(()),
                Ok(()),
                Ok(()),
                Err(TrySendError::Full(4)),
                Err(TrySendError::Full(5))
            ]
        );
        assert!(r.1.iter().all(Result::is_ok));
        assert_eq!(r.2, Some(4));
    }
);

rt_test!(
    try_send_to_an_exited_bounded_process_says_exited,
    |rt: &Runtime| {
        let r = rt
            .block_on(|cx: Context<()>| async move {
                let opts = SpawnOptions::new().bounded_mailbox(1);
                let gone = cx.spawn_opt(opts, |_: Context<u32>| async {});
                while !gone.has_exited() {
                    cx.yield_now().await;
                }
                gone.try_send(7)
            })
            .unwrap();
        assert_eq!(r, Err(TrySendError::Exited(7)));
    }
);

rt_test!(
    plain_send_to_a_full_bounded_mailbox_is_accepted_beyond_the_bound_and_none_is_lost,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<Vec<u32>>| async move {
                let me = cx.pid();
                let gate = Arc::new(Gate::default());
                let g = gate.clone();
                let opts = SpawnOptions::new().bounded_mailbox(2);
                let child = cx.spawn_opt(opts, move |mut c: Context<u32>| async move {
                    g.wait().await;
                    let mut got = Vec::new();
                    for _ in 0..100 {
                        got.push(c.recv().await);
                    }
                    me.send(got);
                });
                for i in 0..100 {
                    child.send(i);
                }
                let len = child.message_queue_len();
                let refused = child.try_send(1000);
                gate.open();
                (len, refused, cx.recv().await)
            })
            .unwrap();
        assert_eq!(r.0, Some(100));
        assert_eq!(r.1, Err(TrySendError::Full(1000)));
        assert_eq!(r.2, (0..100).collect::<Vec<_>>());
    }
);

rt_test!(
    the_awaitable_send_waits_for_room_and_holds_the_queue_at_the_bound,
    |rt: &Runtime| {
        const N: u32 = 5000;
        const BOUND: usize = 4;
        let r = rt
            .block_on(|mut cx: Context<(usize, bool)>| async move {
                let me = cx.pid();
                let opts = SpawnOptions::new().bounded_mailbox(BOUND);
                let consumer = cx.spawn_opt(opts, move |mut c: Context<u32>| async move {
                    let (mut longest, mut in_order) = (0, true);
                    for i in 0..N {
                        longest = longest.max(c.message_queue_len());
                        in_order &= c.recv().await == i;
                    }
                    me.send((longest, in_order));
                });
                cx.spawn(move |mut p: Context<()>| async move {
                    for i in 0..N {
                        p.send(consumer, i).await;
                    }
                });
                cx.recv().await
            })
            .unwrap();
        assert!(r.1, "messages arrived out of order or were lost");
        // One sender: its test and push are never raced, so the bound holds exactly.
        assert!(
            r.0 <= BOUND,
            "queue reached {} with a bound of {BOUND}",
            r.0
        );
    }
);

rt_test!(
    a_sender_waiting_for_room_stops_waiting_when_the_receiver_exits,
    |rt: &Runtime| {
        for _ in 0..50 {
            let r = rt
                .block_on(|mut cx: Context<&'static str>| async move {
                    let me = cx.pid();
                    let gate = Arc::new(Gate::default());
                    let g = gate.clone();
                    let opts = SpawnOptions::new().bounded_mailbox(1);
                    // Never receives; exits when the gate opens.
                    let consumer = cx.spawn_opt(opts, move |c: Context<u32>| async move {
                        let _receiver = c;
                        g.wait().await;
                    });
                    cx.spawn(move |mut p: Context<()>| async move {
                        p.send(consumer, 1).await;
                        me.send("first sent");
                        p.send(consumer, 2).await; // full: waits
                        me.send("second done");
                    });
                    let first = cx.recv().await;
                    gate.open();
                    (first, cx.recv().await)
                })
                .unwrap();
            assert_eq!(r, ("first sent", "second done"));
        }
    }
);

#[allow(dead_code)] // the fields: only the kinds are checked
enum Msg {
    Data(u32),
    Down(Down),
    Exit(Exit),
    Tick,
}
impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}
impl From<Exit> for Msg {
    fn from(e: Exit) -> Msg {
        Msg::Exit(e)
    }
}

rt_test!(
    downs_exit_signals_and_timer_messages_are_never_refused_by_a_full_mailbox,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<u32>| async move {
                let me = cx.pid();
                let gate = Arc::new(Gate::default());
                let release = Arc::new(Gate::default());
                let (g, r1, r2) = (gate.clone(), release.clone(), release.clone());
                let opts = SpawnOptions::new().bounded_mailbox(1);
                let child = cx.spawn_opt(opts, move |mut c: Context<Msg>| async move {
                    c.trap_exit(true);
                    let watched = c.spawn(|_: Context<()>| async move { r1.wait().await });
                    c.monitor(watched);
                    let linked = c.spawn(|_: Context<()>| async move {
                        r2.wait().await;
                        ExitReason::Shutdown
                    });
                    c.link(linked);
                    c.send_after(c.pid(), Msg::Tick, Duration::from_millis(1));
                    me.send(0); // set up
                    g.wait().await;
                    let mut kinds = 0;
                    for _ in 0..4 {
                        kinds |= match c.recv().await {
                            Msg::Data(_) => 1,
                            Msg::Down(_) => 2,
                            Msg::Exit(_) => 4,
                            Msg::Tick => 8,
                        };
                    }
                    me.send(kinds);
                });
                assert_eq!(cx.recv().await, 0);
                // The timer may have fired already and filled the one slot.
                let data = child.try_send(Msg::Data(1)).map_err(|e| e.is_full());
                let full = child.try_send(Msg::Data(2)).map_err(|e| e.is_full());
                release.open();
                let expected = if data.is_ok() { 4 } else { 3 };
                eventually(
                    "Down, Exit and Tick delivered",
                    Duration::from_secs(10),
                    || child.message_queue_len() == Some(expected),
                );
                gate.open();
                if data.is_err() {
                    // Room now, or soon: the child counts four messages.
                    cx.send(child, Msg::Data(3)).await;
                }
                (full, cx.recv().await)
            })
            .unwrap();
        assert_eq!(r, (Err(true), 15));
    }
);

/// A server whose casts wait on a gate.
struct Stuck {
    gate: Arc<Gate>,
}

impl Server for Stuck {
    type Args = Arc<Gate>;
    type Call = ReplyTo<u32>;
    type Cast = u32;
    type Info = ();
    async fn init(gate: Arc<Gate>, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Stuck { gate })
    }
    async fn handle_call(&mut self, f: ReplyTo<u32>, _: &mut ServerContext<Self>) -> Flow {
        f.reply(42);
        Flow::Continue
    }
    async fn handle_cast(&mut self, _: u32, _: &mut ServerContext<Self>) -> Flow {
        self.gate.wait().await;
        Flow::Continue
    }
}

rt_test!(
    a_call_to_a_full_server_fails_with_full_and_succeeds_once_it_drains,
    |rt: &Runtime| {
        let r = rt
            .block_on(|cx: Context<()>| async move {
                let gate = Arc::new(Gate::default());
                let opts = SpawnOptions::new().bounded_mailbox(3);
                let s = server::start_opt::<Stuck, _>(&cx, gate.clone(), opts)
                    .await
                    .unwrap();
                // The first cast is taken and holds the server; the next three fill it.
                s.cast(0);
                eventually(
                    "the server took the first cast",
                    Duration::from_secs(10),
                    || s.pid().message_queue_len() == Some(0),
                );
                let filled: Vec<_> = (1..=4).map(|i| s.try_cast(i)).collect();
                let refused = s.call(|f| f).await;
                gate.open();
                // The caller's way with `Full`: back off and try again.
                let answered = loop {
                    match s.call(|f| f).await {
                        Err(CallError::Full) => cx.yield_now().await,
                        other => break other,
                    }
                };
                (filled, refused, answered)
            })
            .unwrap();
        assert_eq!(
            r.0,
            vec![Ok(()), Ok(()), Ok(()), Err(TrySendError::Full(4))]
        );
        assert_eq!(r.1, Err(CallError::Full));
        assert_eq!(r.2, Ok(42));
    }
);
