//! Rules of servers (`gen_server`, `gen.erl`'s call protocol): synchronous start with
//! init's error, calls answered or failed with timeout / the server's exit reason /
//! noproc / calling_self, no stray late reply, deferred replies, casts in order,
//! `terminate` on stop, on a handler crash and on the parent's exit; calls by registered
//! name, resolved at each call.

#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::server::{
    AlreadyStarted, CallError, Flow, Info, Name, ReplyTo, Server, ServerContext, ServerRef,
};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Down, Exit, ExitReason, Pid, Runtime};

/// A test server: a list of numbers, with ways to misbehave.
struct Store {
    items: Vec<u32>,
    held: Vec<ReplyTo<u32>>,
    report: Option<Pid<Event>>,
    panic_in_terminate: bool,
}

/// The requests, each with the reply type its handle carries.
#[derive(Debug)]
enum Req {
    Push(u32, ReplyTo<()>),
    All(ReplyTo<Vec<u32>>),
    /// Kept unanswered until `ReleaseHeld` (a deferred reply).
    Hold(ReplyTo<u32>),
    ReleaseHeld(u32, ReplyTo<()>),
    Crash(ReplyTo<()>),
    CallSelf(ReplyTo<Result<Vec<u32>, CallError>>),
    StopSelf(ReplyTo<Result<(), CallError>>),
    SleepThenReply(Duration, ReplyTo<()>),
    StopWith(ExitReason, ReplyTo<()>),
    PanicInTerminate(ReplyTo<()>),
}

enum Init {
    Ok(Option<Pid<Event>>),
    Fail,
    Panic,
    Trap(Pid<Event>),
}

#[derive(Debug, PartialEq)]
enum Event {
    Terminated(ExitReason),
    Info(u32),
    Exit(Exit),
    LateCallerWaiting(bool),
    /// The server holds this many deferred calls.
    Held(usize),
    /// A held call was answered with this.
    Got(u32),
}

impl From<Exit> for Event {
    fn from(e: Exit) -> Event {
        Event::Exit(e)
    }
}

fn crash() {
    panic!("handler crash");
}

impl Server for Store {
    type Args = Init;
    type Call = Req;
    type Cast = u32;
    type Info = u32;

    async fn init(args: Init, cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        let report = match args {
            Init::Ok(r) => r,
            Init::Fail => return Err(ExitReason::ShutdownWith("no config".into())),
            Init::Panic => {
                crash();
                None
            }
            Init::Trap(r) => {
                cx.trap_exit(true);
                Some(r)
            }
        };
        Ok(Store {
            items: Vec::new(),
            held: Vec::new(),
            report,
            panic_in_terminate: false,
        })
    }

    async fn handle_call(&mut self, request: Req, cx: &mut ServerContext<Self>) -> Flow {
        match request {
            Req::Push(n, from) => {
                self.items.push(n);
                from.reply(());
            }
            Req::All(from) => from.reply(self.items.clone()),
            Req::Hold(from) => {
                self.held.push(from);
                if let Some(r) = self.report {
                    r.send(Event::Held(self.held.len()));
                }
            }
            Req::ReleaseHeld(v, from) => {
                for h in self.held.drain(..) {
                    h.reply(v);
                }
                from.reply(());
            }
            Req::Crash(from) => {
                crash();
                from.reply(());
            }
            Req::CallSelf(from) => {
                let me = ServerRef::<Store>::from(cx.pid());
                from.reply(me.call(Req::All).await);
            }
            Req::StopSelf(from) => {
                let me = ServerRef::<Store>::from(cx.pid());
                from.reply(me.stop(ExitReason::Normal, None).await);
            }
            Req::SleepThenReply(d, from) => {
                cx.sleep(d).await;
                if let Some(r) = self.report {
                    r.send(Event::LateCallerWaiting(from.is_waiting()));
                }
                from.reply(());
            }
            Req::PanicInTerminate(from) => {
                self.panic_in_terminate = true;
                from.reply(());
            }
            Req::StopWith(reason, from) => {
                from.reply(());
                return Flow::Stop(reason);
            }
        }
        Flow::Continue
    }

    async fn handle_cast(&mut self, n: u32, _: &mut ServerContext<Self>) -> Flow {
        self.items.push(n);
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<u32>, _: &mut ServerContext<Self>) -> Flow {
        if let Some(r) = self.report {
            match info {
                Info::Message(n) => r.send(Event::Info(n)),
                Info::Exit(e) => r.send(Event::Exit(e)),
                Info::Down(_) => {}
            }
        }
        Flow::Continue
    }

    async fn terminate(&mut self, reason: &ExitReason, _: &mut ServerContext<Self>) {
        if self.panic_in_terminate {
            panic!("terminate crash");
        }
        if let Some(r) = self.report {
            r.send(Event::Terminated(reason.clone()));
        }
    }
}

rt_test!(
    call_returns_the_reply_and_casts_keep_order,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Store::start_link(&cx, Init::Ok(None)).await.unwrap();
            for i in 0..100 {
                s.cast(i);
            }
            s.call(|r| Req::Push(100, r)).await.unwrap();
            s.call(Req::All).await
        });
        assert_eq!(r.unwrap(), Ok((0..=100).collect()));
    }
);

rt_test!(
    many_concurrent_callers_each_get_their_reply,
    |rt: &Runtime| {
        const CALLERS: u32 = 50;
        const CALLS: u32 = 100;
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let s = Store::start_link(&cx, Init::Ok(None)).await.unwrap();
            let me = cx.pid();
            for c in 0..CALLERS {
                // Linked: a failed assertion in a caller ends the test's root with it.
                cx.spawn_link(move |_: Context<()>| async move {
                    for i in 0..CALLS {
                        assert_eq!(s.call(|r| Req::Push(c * CALLS + i, r)).await, Ok(()));
                    }
                    me.send(c);
                });
            }
            for _ in 0..CALLERS {
                cx.recv().await;
            }
            let mut v = s.call(Req::All).await.unwrap();
            v.sort_unstable();
            v == (0..CALLERS * CALLS).collect::<Vec<_>>()
        });
        assert!(r.unwrap());
    }
);

rt_test!(
    call_timeout_then_late_reply_never_surfaces,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Event>| async move {
            let s = Store::start_link(&cx, Init::Ok(Some(cx.pid())))
                .await
                .unwrap();
            let slow = s
                .call_timeout(
                    |r| Req::SleepThenReply(Duration::from_millis(50), r),
                    Some(Duration::from_millis(5)),
                )
                .await;
            // When the server gets to its reply, the caller no longer waits: the reply is
            // dropped with the slot (it cannot reach the caller's mailbox, which has another
            // type anyway); the next call gets its own answer.
            let late = cx.recv().await;
            let next = s.call(Req::All).await;
            (slow, late, next, cx.try_recv())
        });
        assert_eq!(
            r.unwrap(),
            (
                Err(CallError::Timeout),
                Event::LateCallerWaiting(false),
                Ok(vec![]),
                None
            )
        );
    }
);

rt_test!(
    a_panic_in_terminate_becomes_the_exit_reason,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Store::start(&cx, Init::Ok(None)).await.unwrap();
            s.call(Req::PanicInTerminate).await.unwrap();
            s.stop(ExitReason::Normal, None).await
        });
        // `stop` asked for `Normal`; the server exited with terminate's panic instead.
        assert_eq!(
            r.unwrap(),
            Err(CallError::Exit(ExitReason::Panic("terminate crash".into())))
        );
    }
);

rt_test!(
    a_failed_named_start_releases_the_name_before_returning,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let failed = Store::start_link_named(&cx, "store", Init::Fail).await;
            // The failed server is gone: the name is free for the next start at once.
            let again = Store::start_link_named(&cx, "store", Init::Ok(None)).await;
            (failed.is_err(), again.is_ok())
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);

rt_test!(call_to_a_dying_server_returns_its_reason, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        // Crash while handling the call.
        let a = Store::start(&cx, Init::Ok(None)).await.unwrap();
        let crashed = a.call(Req::Crash).await;
        // Exit while holding the request (a deferred reply never sent).
        let b = Store::start(&cx, Init::Ok(None)).await.unwrap();
        let waiting = cx.spawn(move |_: Context<()>| async move {
            let _ = b.call(Req::Hold).await;
        });
        let _ = waiting;
        let (held, stopped) = support::join(
            b.call(Req::Hold),
            b.stop(ExitReason::ShutdownWith("bye".into()), None),
        )
        .await;
        (crashed, held, stopped)
    });
    assert_eq!(
        r.unwrap(),
        (
            Err(CallError::Exit(ExitReason::Panic("handler crash".into()))),
            Err(CallError::Exit(ExitReason::ShutdownWith("bye".into()))),
            Ok(())
        )
    );
});

/// What a linked caller's parent hears: the call returned, or the caller's `Down`.
#[derive(Debug)]
enum CallerSeen {
    Returned(Result<(), CallError>),
    Down(Down),
}

impl From<Down> for CallerSeen {
    fn from(d: Down) -> CallerSeen {
        CallerSeen::Down(d)
    }
}

rt_test!(
    a_server_crash_ends_its_linked_caller_before_the_call_returns,
    |rt: &Runtime| {
        // Erlang: the crashing server's `'EXIT'` to its linked caller, which does not
        // trap exits, comes before the `'DOWN'` that would end the call. The caller
        // dies with the server's reason; its call never returns. Many rounds, for the
        // caller polled on one worker while the server exits on another.
        let r = rt.block_on(|mut cx: Context<CallerSeen>| async move {
            let me = cx.pid();
            for _ in 0..200 {
                // Spawned and monitored at once: a monitor set after the spawn could
                // come after the caller's end, and say `Noproc`.
                let _ = cx.spawn_monitor(move |cx: Context<u32>| async move {
                    // Messages that wake the caller while it waits, so that it is
                    // polled while the server exits.
                    let to = cx.pid();
                    cx.spawn_link(move |noise: Context<()>| async move {
                        loop {
                            to.send(0);
                            noise.yield_now().await;
                        }
                    });
                    let s = Store::start_link(&cx, Init::Ok(None)).await.unwrap();
                    let r = s.call(Req::Crash).await;
                    me.send(CallerSeen::Returned(r));
                });
                match cx.recv().await {
                    CallerSeen::Down(d) => {
                        assert_eq!(d.reason, ExitReason::Panic("handler crash".into()))
                    }
                    CallerSeen::Returned(r) => return Err(r),
                }
            }
            Ok(())
        });
        assert_eq!(r.unwrap(), Ok(()));
    }
);

rt_test!(call_to_a_dead_server_is_noproc, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Store::start(&cx, Init::Ok(None)).await.unwrap();
        s.stop(ExitReason::Normal, None).await.unwrap();
        let call = s.call(Req::All).await;
        let stop = s.stop(ExitReason::Normal, None).await;
        (call, stop)
    });
    assert_eq!(r.unwrap(), (Err(CallError::Noproc), Err(CallError::Noproc)));
});

rt_test!(a_server_calling_itself_gets_calling_self, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Store::start(&cx, Init::Ok(None)).await.unwrap();
        s.call(Req::CallSelf).await
    });
    assert_eq!(r.unwrap(), Ok(Err(CallError::CallingSelf)));
});

rt_test!(
    a_server_stopping_itself_through_its_ref_gets_calling_self,
    |rt: &Runtime| {
        // `gen_server:stop(self())` exits with `calling_self`: waiting for its own exit
        // would hold the server for ever. The server stays and answers the next call.
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Store::start(&cx, Init::Ok(None)).await.unwrap();
            let stopped = s
                .call_timeout(Req::StopSelf, Some(Duration::from_secs(20)))
                .await;
            (stopped, s.call(Req::All).await.is_ok())
        });
        assert_eq!(r.unwrap(), (Ok(Err(CallError::CallingSelf)), true));
    }
);

rt_test!(deferred_replies_are_sent_later, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Event>| async move {
        let me = cx.pid();
        let s = Store::start(&cx, Init::Ok(Some(me))).await.unwrap();
        for _ in 0..10 {
            cx.spawn_link(move |_: Context<()>| async move {
                let v = s.call(Req::Hold).await.expect("a held call is answered");
                me.send(Event::Got(v));
            });
        }
        // The server reports each call it holds; once all ten are held, release them.
        let mut held = 0;
        while held < 10 {
            match cx.recv().await {
                Event::Held(n) => held = n,
                other => panic!("{other:?}"),
            }
        }
        s.call(|r| Req::ReleaseHeld(7, r)).await.unwrap();
        let mut got = Vec::new();
        for _ in 0..10 {
            got.push(cx.recv().await);
        }
        got
    });
    assert_eq!(
        r.unwrap(),
        (0..10).map(|_| Event::Got(7)).collect::<Vec<_>>()
    );
});

rt_test!(start_returns_the_init_error, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<u8>| async move {
        // init's Err: the start fails, and the linked caller is not taken down.
        let failed = Store::start_link(&cx, Init::Fail).await;
        cx.pid().send(1);
        let alive = cx.recv().await == 1;
        (failed, alive)
    });
    assert_eq!(
        r.unwrap(),
        (Err(ExitReason::ShutdownWith("no config".into())), true)
    );
});

rt_test!(
    a_named_start_of_a_taken_name_is_already_started_with_the_holders_pid,
    |rt: &Runtime| {
        // `{error, {already_started, Pid}}`: the holder may be any process, of any
        // message type, or a server of the same kind.
        let r = rt.block_on(|cx: Context<u8>| async move {
            cx.register("taken", cx.pid()).unwrap();
            let by_other = Store::start_link_named(&cx, "taken", Init::Ok(None)).await;
            let first = Store::start_link_named(&cx, "store", Init::Ok(None))
                .await
                .unwrap();
            let by_server = Store::start_link_named(&cx, "store", Init::Ok(None)).await;
            let holder = |r: Result<ServerRef<Store>, ExitReason>| {
                r.err()
                    .and_then(|e| e.downcast_ref::<AlreadyStarted>().copied())
            };
            (
                holder(by_other),
                holder(by_server),
                cx.pid().id(),
                first.pid().id(),
            )
        });
        let (by_other, by_server, me, first) = r.unwrap();
        assert_eq!(by_other, Some(AlreadyStarted(me)));
        assert_eq!(by_server, Some(AlreadyStarted(first)));
    }
);

rt_test!(
    a_crash_in_init_fails_the_start_and_the_link,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Event>| async move {
            cx.trap_exit(true);
            let failed = Store::start_link(&cx, Init::Panic).await;
            let exit = match cx.recv().await {
                Event::Exit(e) => e.reason,
                other => panic!("{other:?}"),
            };
            (failed, exit)
        });
        let crash = ExitReason::Panic("handler crash".into());
        assert_eq!(r.unwrap(), (Err(crash.clone()), crash));
    }
);

rt_test!(terminate_runs_on_stop_and_on_a_crash, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Event>| async move {
        let me = cx.pid();
        let a = Store::start(&cx, Init::Ok(Some(me))).await.unwrap();
        assert_eq!(
            a.call(|r| Req::StopWith(ExitReason::Shutdown, r)).await,
            Ok(())
        );
        let on_stop = cx.recv().await;
        let b = Store::start(&cx, Init::Ok(Some(me))).await.unwrap();
        let _ = b.call(Req::Crash).await;
        let on_crash = cx.recv().await;
        (on_stop, on_crash)
    });
    assert_eq!(
        r.unwrap(),
        (
            Event::Terminated(ExitReason::Shutdown),
            Event::Terminated(ExitReason::Panic("handler crash".into()))
        )
    );
});

rt_test!(
    a_trapping_server_terminates_when_its_parent_exits,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Event>| async move {
            let me = cx.pid();
            // The parent starts the server linked, then exits `Shutdown`.
            let parent = cx.spawn(move |mut p: Context<()>| async move {
                let s = Store::start_link(&p, Init::Trap(me)).await.unwrap();
                // An exit from a process other than the parent goes to handle_info.
                p.spawn(move |o: Context<()>| async move {
                    o.exit(s, ExitReason::ShutdownWith("not parent".into()));
                });
                p.recv().await;
                ExitReason::Shutdown
            });
            let first = cx.recv().await;
            parent.send(());
            let second = cx.recv().await;
            (first, second, parent.id())
        });
        let (first, second, _) = r.unwrap();
        assert!(
            matches!(first, Event::Exit(ref e) if e.reason == ExitReason::ShutdownWith("not parent".into()))
        );
        assert_eq!(second, Event::Terminated(ExitReason::Shutdown));
    }
);

rt_test!(info_messages_reach_handle_info, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Event>| async move {
        let s = Store::start(&cx, Init::Ok(Some(cx.pid()))).await.unwrap();
        s.info(5);
        cx.send_after(
            s.pid(),
            otter::server::ServerMsg::Info(6),
            Duration::from_millis(1),
        );
        (cx.recv().await, cx.recv().await)
    });
    assert_eq!(r.unwrap(), (Event::Info(5), Event::Info(6)));
});

const STORE: Name<Store> = Name::new("store");

rt_test!(
    a_call_by_name_reaches_the_registered_server,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Store::start_link_named(&cx, STORE, Init::Ok(None))
                .await
                .unwrap();
            STORE.cast(&cx, 1);
            let pushed = STORE.call(&cx, |r| Req::Push(2, r)).await;
            (
                pushed,
                STORE.whereis(&cx) == Some(s),
                s.call(Req::All).await,
            )
        });
        assert_eq!(r.unwrap(), (Ok(()), true, Ok(vec![1, 2])));
    }
);

/// A helper that also receives, so it holds its context by `&mut`: it passes it to a
/// call by name as it is.
async fn push_then_wait(cx: &mut Context<u32>, n: u32) -> u32 {
    STORE.call(cx, |r| Req::Push(n, r)).await.unwrap();
    STORE.cast(cx, n + 1);
    let got = cx.recv().await;
    let found = STORE.whereis(cx).is_some();
    let timed = STORE.call_timeout(cx, |r| Req::Push(got, r), None).await;
    assert!(found && timed.is_ok());
    got
}

rt_test!(
    a_call_by_name_takes_a_mut_context_or_a_handle,
    |rt: &Runtime| {
        let h = rt.handle();
        let r = rt.block_on(move |mut cx: Context<u32>| async move {
            Store::start_link_named(&cx, STORE, Init::Ok(None))
                .await
                .unwrap();
            cx.pid().send(9);
            let got = push_then_wait(&mut cx, 1).await;
            // From a thread that is no process, through the runtime's handle; it tells
            // this process when it is done, so no worker waits on a join.
            let me = cx.pid();
            let t = std::thread::spawn(move || {
                let found = STORE.whereis(&h).is_some();
                STORE.cast(&h, 10);
                let all = block_on(STORE.call(&h, Req::All));
                me.send(0);
                (found, all)
            });
            assert_eq!(cx.recv().await, 0);
            (got, t.join().unwrap())
        });
        assert_eq!(r.unwrap(), (9, (true, Ok(vec![1, 2, 9, 10]))));
    }
);

/// Runs `f` on this thread, parked between polls: a caller with no runtime.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut std::task::Context::from_waker(&waker)) {
            return v;
        }
        std::thread::park();
    }
}

rt_test!(a_call_by_an_unregistered_name_is_noproc, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let never = STORE.call(&cx, Req::All).await;
        // A name held by a process of another type is no server of this one.
        cx.register("store", cx.pid()).unwrap();
        let other = STORE.call(&cx, Req::All).await;
        STORE.cast(&cx, 1); // no error, as gen_server:cast
        (never, other)
    });
    assert_eq!(r.unwrap(), (Err(CallError::Noproc), Err(CallError::Noproc)));
});

rt_test!(
    a_call_by_name_resolves_the_name_at_each_call,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let first = Store::start_link_named(&cx, STORE, Init::Ok(None))
                .await
                .unwrap();
            STORE.call(&cx, |r| Req::Push(1, r)).await.unwrap();
            first.stop(ExitReason::Normal, None).await.unwrap();
            let gone = STORE.call(&cx, Req::All).await;
            let second = Store::start_link_named(&cx, STORE, Init::Ok(None))
                .await
                .unwrap();
            // The same name now reaches the new server, with its own (empty) state.
            let again = STORE.call(&cx, Req::All).await;
            (gone, again, first != second)
        });
        assert_eq!(r.unwrap(), (Err(CallError::Noproc), Ok(vec![]), true));
    }
);

rt_test!(
    a_call_by_name_reaches_the_server_a_supervisor_restarted,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::named_server(
                "store",
                STORE,
                || Init::Ok(None),
            ));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let first: ServerRef<Store> = sup.child("store").await.unwrap().unwrap();
            STORE.call(&cx, |r| Req::Push(1, r)).await.unwrap();
            let crashed = STORE.call(&cx, Req::Crash).await;
            // The supervisor heard of the crash before this request (the link's signal
            // is sent before the caller learns of the exit): it answers with the
            // restarted server, which the name reaches too.
            let second: ServerRef<Store> = sup.child("store").await.unwrap().unwrap();
            let by_name = STORE.call(&cx, Req::All).await;
            let by_ref = second.call(|r| Req::Push(2, r)).await;
            let wrong_type = sup.child::<supervisor::Supervisor>("store").await;
            sup.server().stop(ExitReason::Normal, None).await.unwrap();
            (
                crashed,
                first != second,
                by_name,
                by_ref,
                wrong_type,
                STORE.whereis(&cx).is_none(),
            )
        });
        assert_eq!(
            r.unwrap(),
            (
                Err(CallError::Exit(ExitReason::Panic("handler crash".into()))),
                true,
                Ok(vec![]),
                Ok(()),
                Ok(None),
                true
            )
        );
    }
);

/// A server that monitors a process of its own and counts the `Down`s that reach
/// `handle_info`.
struct Watcher {
    downs: u32,
}

#[derive(Debug)]
enum WatchReq {
    /// Monitors a process that exits at once, waits for its exit inside the handler
    /// (the `Down` is then queued behind this call), and demonitors it, flushing when
    /// told: answers whether the monitor was still active.
    MonitorExitDemonitor(bool, ReplyTo<bool>),
    /// How many `Down`s `handle_info` has seen.
    Downs(ReplyTo<u32>),
}

impl Server for Watcher {
    type Args = ();
    type Call = WatchReq;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Watcher { downs: 0 })
    }

    async fn handle_call(&mut self, request: WatchReq, cx: &mut ServerContext<Self>) -> Flow {
        match request {
            WatchReq::MonitorExitDemonitor(flush, from) => {
                let child = cx.spawn(|_: Context<()>| async {});
                let m = cx.monitor(child);
                while !child.has_exited() {
                    cx.yield_now().await;
                }
                let active = if flush {
                    cx.demonitor_flush(m)
                } else {
                    cx.demonitor(m)
                };
                from.reply(active);
            }
            WatchReq::Downs(from) => from.reply(self.downs),
        }
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<()>, _: &mut ServerContext<Self>) -> Flow {
        if let Info::Down(_) = info {
            self.downs += 1;
        }
        Flow::Continue
    }
}

rt_test!(
    a_server_demonitors_with_flush_and_the_delivered_down_never_reaches_handle_info,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Watcher::start_link(&cx, ()).await.unwrap();
            let flushed = s.call(|r| WatchReq::MonitorExitDemonitor(true, r)).await;
            let after_flush = s.call(WatchReq::Downs).await;
            // Without the flush the delivered `Down` reaches `handle_info`.
            let kept = s.call(|r| WatchReq::MonitorExitDemonitor(false, r)).await;
            let after_plain = s.call(WatchReq::Downs).await;
            (flushed, after_flush, kept, after_plain)
        });
        assert_eq!(r.unwrap(), (Ok(false), Ok(0), Ok(false), Ok(1)));
    }
);
