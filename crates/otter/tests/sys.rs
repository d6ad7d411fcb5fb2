//! Rules of `otter::sys` (OTP's `sys` module, through system messages): get_state and
//! replace_state on servers, state machines and supervisors; a panicking replace keeps
//! the old state; suspension queues user messages; statistics, the log and trace;
//! noproc; stop.
//!
//! One global `tracing` subscriber collects the `otter::sys` events of this binary
//! (`support/reports.rs`); each test looks only at the events of its own server.

#[path = "support/reports.rs"]
mod reports;
#[path = "support/rt.rs"]
mod support;

use std::fmt;
use std::time::Duration;

use otter::server::{CallError, Flow, Name, ReplyTo, Server, ServerContext};
use otter::statem::{Event, Machine, StateMachine, StatemContext, Transition};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::sys::{self, Mode, SysError};
use otter::{Context, ExitReason, Pid, Runtime};
use reports::Report;

// ===== A server that logs what it handles =====

#[derive(Clone, Debug, PartialEq)]
struct Log {
    seen: Vec<String>,
    /// Told of `terminate`.
    watcher: Option<Pid<String>>,
}

enum Req {
    Push(String, ReplyTo<usize>),
    Seen(ReplyTo<Vec<String>>),
}

impl Server for Log {
    type Args = Option<Pid<String>>;
    type Call = Req;
    type Cast = String;
    type Info = ();

    async fn init(
        watcher: Option<Pid<String>>,
        _: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        Ok(Log {
            seen: Vec::new(),
            watcher,
        })
    }
    async fn handle_call(&mut self, r: Req, _: &mut ServerContext<Self>) -> Flow {
        match r {
            Req::Push(s, from) => {
                self.seen.push(s);
                from.reply(self.seen.len());
            }
            Req::Seen(from) => from.reply(self.seen.clone()),
        }
        Flow::Continue
    }
    async fn handle_cast(&mut self, s: String, _: &mut ServerContext<Self>) -> Flow {
        self.seen.push(s);
        Flow::Continue
    }
    async fn terminate(&mut self, reason: &ExitReason, _: &mut ServerContext<Self>) {
        if let Some(w) = self.watcher {
            w.send(format!("terminate {reason}"));
        }
    }
    fn format_status(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seen {:?}", self.seen)
    }
}

fn log(seen: &[&str]) -> Log {
    Log {
        seen: seen.iter().map(|s| s.to_string()).collect(),
        watcher: None,
    }
}

// ===== A state machine =====

#[derive(Clone, Debug, PartialEq)]
struct Door {
    opened: u32,
}

#[derive(Clone, Debug, PartialEq)]
enum Pos {
    Closed,
    Open,
}

impl StateMachine for Door {
    type Args = ();
    type State = Pos;
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();
    type Internal = ();

    async fn init(
        _: (),
        _: &mut StatemContext<Self>,
    ) -> Result<(Self, Transition<Self>), ExitReason> {
        Ok((Door { opened: 0 }, Transition::next(Pos::Closed)))
    }
    async fn handle_event(
        &mut self,
        state: &Pos,
        event: Event<Self>,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Pos::Closed, Event::Call(from)) => {
                self.opened += 1;
                Transition::next(Pos::Open).reply(from, ())
            }
            (Pos::Open, Event::Call(from)) => Transition::next(Pos::Closed).reply(from, ()),
            _ => Transition::keep(),
        }
    }
}

// ===== get_state / replace_state =====

rt_test!(get_state_of_a_server_is_its_state, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Log::start_link(&cx, None).await.unwrap();
        s.cast("a".into());
        s.call(|f| Req::Push("b".into(), f)).await.unwrap();
        sys::get_state(s).await
    });
    assert_eq!(r.unwrap(), Ok(log(&["a", "b"])));
});

rt_test!(
    get_state_of_a_statem_is_its_state_and_data,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let d = Door::start_link(&cx, ()).await.unwrap();
            let before = sys::get_state(d).await;
            d.call(|f| f).await.unwrap();
            let after = sys::get_state(d).await;
            let opened = sys::get_state_with(d, |m: &Machine<Door>| m.data().opened).await;
            (before, after, opened)
        });
        assert_eq!(
            r.unwrap(),
            (
                Ok((Pos::Closed, Door { opened: 0 })),
                Ok((Pos::Open, Door { opened: 1 })),
                Ok(1)
            )
        );
    }
);

rt_test!(
    get_state_of_a_supervisor_shows_its_children,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::server::<Log>("logger", || None));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let state = sys::get_state(sup).await.unwrap();
            let status = sys::get_status(sup).await.unwrap();
            // `which_children` stays where it is, and answers as before.
            let children = sup.which_children().await.unwrap().len();
            (format!("{state:?}"), status, children)
        });
        let (state, status, children) = r.unwrap();
        assert!(state.contains("logger"), "{state}");
        assert!(status.state.contains("logger"), "{}", status.state);
        assert_eq!(status.behaviour, "otter::supervisor::Supervisor");
        assert_eq!(children, 1);
    }
);

rt_test!(replace_state_changes_the_state, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Log::start_link(&cx, None).await.unwrap();
        s.cast("a".into());
        let new = sys::replace_state(s, |mut l: Log| {
            l.seen.push("replaced".into());
            l
        })
        .await;
        let d = Door::start_link(&cx, ()).await.unwrap();
        let door = sys::replace_state(d, |(_, data)| (Pos::Open, data)).await;
        // Open: the next call closes it, without counting an opening.
        d.call(|f| f).await.unwrap();
        (new, s.call(Req::Seen).await, door, sys::get_state(d).await)
    });
    assert_eq!(
        r.unwrap(),
        (
            Ok(log(&["a", "replaced"])),
            Ok(vec!["a".to_string(), "replaced".to_string()]),
            Ok((Pos::Open, Door { opened: 0 })),
            Ok((Pos::Closed, Door { opened: 0 })),
        )
    );
});

rt_test!(
    a_panicking_replace_state_leaves_the_old_state_and_the_server_alive,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Log::start_link(&cx, None).await.unwrap();
            s.cast("kept".into());
            let failed = sys::replace_state(s, |mut l: Log| {
                l.seen.clear();
                panic!("state function fails");
            })
            .await;
            let peek = sys::get_state_with(s, |_: &Log| -> u8 { panic!("reader fails") }).await;
            (failed, peek, s.pid().is_alive(), s.call(Req::Seen).await)
        });
        let (failed, peek, alive, seen) = r.unwrap();
        assert!(
            matches!(&failed, Err(SysError::CallbackFailed(ExitReason::Panic(_)))),
            "{failed:?}"
        );
        assert!(matches!(peek, Err(SysError::CallbackFailed(_))), "{peek:?}");
        assert!(alive);
        assert_eq!(seen, Ok(vec!["kept".to_string()]));
    }
);

// ===== suspend / resume =====

rt_test!(
    a_suspended_server_queues_user_messages_and_handles_them_in_order_after_resume,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Log::start_link(&cx, None).await.unwrap();
            sys::suspend(s).await.unwrap();
            s.cast("1".into());
            let timed_out = s
                .call_timeout(
                    |f| Req::Push("2".into(), f),
                    Some(Duration::from_millis(30)),
                )
                .await;
            s.cast("3".into());
            // System messages are answered meanwhile.
            let status = sys::get_status(s).await.unwrap();
            let state = sys::get_state(s).await.unwrap();
            sys::resume(s).await.unwrap();
            let after = sys::get_status(s).await.unwrap().mode;
            (
                timed_out,
                status.mode,
                state,
                after,
                s.call(Req::Seen).await,
            )
        });
        let (timed_out, suspended, state, after, seen) = r.unwrap();
        assert_eq!(timed_out, Err(CallError::Timeout));
        assert_eq!(suspended, Mode::Suspended);
        assert_eq!(state, log(&[]));
        assert_eq!(after, Mode::Running);
        // The call that timed out was still handled, in its place.
        assert_eq!(seen, Ok(vec!["1".into(), "2".into(), "3".into()]));
    }
);

rt_test!(
    a_suspended_server_stops_when_its_parent_exits,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<String>| async move {
            let me = cx.pid();
            // A parent that starts a trapping child server, suspends it, then exits.
            let (tx, rx) = std::sync::mpsc::channel();
            let parent = cx.spawn(move |pcx: Context<()>| async move {
                let s = Trapper::start_link(&pcx, me).await.unwrap();
                sys::suspend(s).await.unwrap();
                tx.send(s).unwrap();
                ExitReason::Shutdown
            });
            let _ = parent;
            let got = cx.recv().await;
            let s = rx.recv().unwrap();
            // Gone, or going (its exit ends the request).
            (got, sys::get_status(s).await.map(|_| ()))
        });
        let (got, after) = r.unwrap();
        assert_eq!(got, "terminate shutdown");
        assert!(
            matches!(
                after,
                Err(SysError::Noproc | SysError::Exit(ExitReason::Shutdown))
            ),
            "{after:?}"
        );
    }
);

/// A server that traps exits and reports its `terminate`.
struct Trapper(Pid<String>);

impl Server for Trapper {
    type Args = Pid<String>;
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();
    async fn init(w: Pid<String>, cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        cx.trap_exit(true);
        Ok(Trapper(w))
    }
    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(());
        Flow::Continue
    }
    async fn terminate(&mut self, reason: &ExitReason, _: &mut ServerContext<Self>) {
        self.0.send(format!("terminate {reason}"));
    }
}

// ===== statistics =====

rt_test!(statistics_count_messages_only_when_on, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Log::start_link(&cx, None).await.unwrap();
        s.call(|f| Req::Push("before".into(), f)).await.unwrap();
        let off = sys::get_statistics(s).await.unwrap();
        sys::statistics(s, true).await.unwrap();
        s.cast("a".into());
        s.call(|f| Req::Push("b".into(), f)).await.unwrap();
        s.call(Req::Seen).await.unwrap();
        let on = sys::get_statistics(s).await.unwrap().unwrap();
        sys::statistics(s, false).await.unwrap();
        s.cast("c".into());
        let again = sys::get_statistics(s).await.unwrap();
        (off, on, again)
    });
    let (off, on, again) = r.unwrap();
    assert_eq!(off, None);
    assert_eq!((on.messages_in, on.messages_out), (3, 2));
    assert!(on.start_time <= on.current_time);
    assert_eq!(again, None);
});

// ===== log =====

rt_test!(
    log_keeps_the_last_n_events_in_and_out_and_off_forgets_them,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Log::start_link(&cx, None).await.unwrap();
            s.call(|f| Req::Push("before".into(), f)).await.unwrap();
            let off = sys::get_log(s).await.unwrap();
            sys::log(s, Some(3)).await.unwrap();
            s.cast("a".into());
            s.call(|f| Req::Push("b".into(), f)).await.unwrap();
            s.call(Req::Seen).await.unwrap();
            let on = sys::get_log(s).await.unwrap();
            sys::log(s, None).await.unwrap();
            s.cast("c".into());
            let again = sys::get_log(s).await.unwrap();
            // The server handled everything, with and without its log.
            let seen = s.call(Req::Seen).await.unwrap();
            (off, on, again, seen)
        });
        let (off, on, again, seen) = r.unwrap();
        assert!(off.is_empty());
        // Five events (cast in, call in, reply out, call in, reply out): the last three.
        let got: Vec<_> = on.iter().map(|e| (e.direction, e.kind)).collect();
        assert_eq!(
            got,
            [
                (sys::Direction::Out, "reply"),
                (sys::Direction::In, "call"),
                (sys::Direction::Out, "reply"),
            ]
        );
        assert!(on[1].message.ends_with("Req"), "{:?}", on[1]);
        assert!(on[2].message.contains("Vec<"), "{:?}", on[2]);
        assert!(on.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(again.is_empty());
        assert_eq!(seen, ["before", "a", "b", "c"]);
    }
);

rt_test!(a_state_machines_log_names_its_events, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let door = Door::start_link(&cx, ()).await.unwrap();
        sys::log(door, Some(10)).await.unwrap();
        door.call(|f| f).await.unwrap();
        door.call(|f| f).await.unwrap();
        sys::get_log(door).await.unwrap()
    });
    let log = r.unwrap();
    let got: Vec<_> = log.iter().map(|e| (e.direction, e.kind)).collect();
    assert_eq!(
        got,
        [
            (sys::Direction::In, "call"),
            (sys::Direction::Out, "reply"),
            (sys::Direction::In, "call"),
            (sys::Direction::Out, "reply"),
        ]
    );
});

rt_test!(
    a_server_is_reached_by_pid_alone_until_it_exits,
    |rt: &Runtime| {
        let h = rt.handle();
        let r = rt.block_on(move |cx: Context<()>| async move {
            let door = Door::start_link(&cx, ()).await.unwrap();
            door.call(|f| f).await.unwrap();
            let s = Log::start(&cx, None).await.unwrap();
            sys::log(s, Some(5)).await.unwrap();
            s.cast("a".into());
            let status = sys::get_status_of(&h, door.id()).await.unwrap();
            let log = sys::get_log_of(&h, s.id()).await.unwrap();
            let id = s.id();
            sys::stop(s, ExitReason::Normal, None).await.unwrap();
            let gone = sys::get_status_of(&h, id).await;
            (status, log, gone)
        });
        let (status, log, gone) = r.unwrap();
        assert!(status.behaviour.contains("Door"), "{}", status.behaviour);
        assert_eq!(status.mode, Mode::Running);
        assert_eq!(log.len(), 1);
        assert_eq!(
            (log[0].direction, log[0].kind),
            (sys::Direction::In, "cast")
        );
        assert_eq!(gone, Err(SysError::Noproc));
    }
);

// ===== trace =====

/// The `otter::sys` events so far (`support/reports.rs` collects them).
fn traced() -> Vec<Report> {
    reports::reports()
        .into_iter()
        .filter(|r| r.target == "otter::sys")
        .collect()
}

rt_test!(
    trace_emits_one_event_per_message_and_per_reply,
    |rt: &Runtime| {
        traced();
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Log::start_link_named(&cx, "traced", None).await.unwrap();
            s.cast("untraced".into());
            sys::trace(s, true).await.unwrap();
            s.cast("a".into());
            s.call(|f| Req::Push("b".into(), f)).await.unwrap();
            s.call(Req::Seen).await.unwrap();
            sys::trace(s, false).await.unwrap();
            s.call(Req::Seen).await.unwrap();
            s.id()
        });
        let pid = r.unwrap().to_string();
        let mine: Vec<Report> = traced()
            .into_iter()
            .filter(|t| t.get("pid") == pid)
            .collect();
        let field = |t: &Report, f: &str| t.get(f).to_string();
        let events: Vec<(String, String)> = mine
            .iter()
            .map(|t| (field(t, "event"), field(t, "kind")))
            .collect();
        let e = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            events,
            vec![
                e("in", "cast"),
                e("in", "call"),
                e("out", "reply"),
                e("in", "call"),
                e("out", "reply")
            ]
        );
        assert_eq!(field(&mine[0], "name"), "traced");
        assert!(field(&mine[0], "message").contains("String"), "{mine:?}");
        assert!(field(&mine[2], "message").contains("usize"), "{mine:?}");
    }
);

// ===== noproc, stop, by name, from a Handle =====

const LOG: Name<Log> = Name::new("sys-log");

rt_test!(
    sys_on_a_dead_pid_or_an_unknown_name_is_noproc,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let s = Log::start(&cx, None).await.unwrap();
            s.stop(ExitReason::Normal, None).await.unwrap();
            (
                sys::get_state(s).await.map(|_| ()),
                sys::get_status(s).await.map(|_| ()),
                sys::suspend(LOG.whereis(&cx)).await,
                sys::replace_state(LOG.whereis(&cx), |l| l)
                    .await
                    .map(|_| ()),
                sys::stop(s, ExitReason::Normal, None).await,
                sys::get_status(supervisor::whereis(&cx, "no-such-supervisor"))
                    .await
                    .map(|_| ()),
            )
        });
        let n = Err(SysError::Noproc);
        assert_eq!(
            r.unwrap(),
            (n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n)
        );
    }
);

rt_test!(stop_through_sys_runs_terminate, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<String>| async move {
        let s = Log::start(&cx, Some(cx.pid())).await.unwrap();
        sys::trace(s, true).await.unwrap();
        let stopped = sys::stop(s, ExitReason::Shutdown, None).await;
        (stopped, cx.recv().await, s.pid().is_alive())
    });
    assert_eq!(
        r.unwrap(),
        (Ok(()), "terminate shutdown".to_string(), false)
    );
});

rt_test!(
    a_suspended_server_still_stops_and_runs_terminate,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<String>| async move {
            let s = Log::start(&cx, Some(cx.pid())).await.unwrap();
            sys::suspend(s).await.unwrap();
            s.cast("held back".into());
            let stopped = sys::stop(s, ExitReason::Normal, None).await;
            (stopped, cx.recv().await)
        });
        assert_eq!(r.unwrap(), (Ok(()), "terminate normal".to_string()));
    }
);

rt_test!(
    sys_by_name_works_from_a_handle_outside_the_runtime,
    |rt: &Runtime| {
        let h = rt.handle();
        let r = rt.block_on(move |mut cx: Context<u8>| async move {
            Log::start_link_named(&cx, LOG, None).await.unwrap();
            let me = cx.pid();
            let outside = std::thread::spawn(move || {
                let status = park_on(sys::get_status(LOG.whereis(&h)));
                let replaced = park_on(sys::replace_state(LOG.whereis(&h), |_| log(&["outside"])));
                me.send(0);
                (status.map(|s| s.state), replaced)
            });
            cx.recv().await;
            let seen = LOG.call(&cx, Req::Seen).await;
            (outside.join().unwrap(), seen)
        });
        let ((status, replaced), seen) = r.unwrap();
        assert_eq!(status, Ok("seen []".to_string()));
        assert_eq!(replaced, Ok(log(&["outside"])));
        assert_eq!(seen, Ok(vec!["outside".to_string()]));
    }
);

/// Runs a future on this (non-runtime) thread.
fn park_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct T(std::thread::Thread);
    impl Wake for T {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark()
        }
    }
    let w = Waker::from(std::sync::Arc::new(T(std::thread::current())));
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&w)) {
            return v;
        }
        std::thread::park();
    }
}

rt_test!(a_server_calling_sys_on_itself_is_refused, |rt: &Runtime| {
    struct Selfish;
    impl Server for Selfish {
        type Args = ();
        type Call = ReplyTo<Result<(), SysError>>;
        type Cast = ();
        type Info = ();
        async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
            Ok(Selfish)
        }
        async fn handle_call(
            &mut self,
            from: ReplyTo<Result<(), SysError>>,
            cx: &mut ServerContext<Self>,
        ) -> Flow {
            from.reply(sys::suspend(otter::server::ServerRef::from(cx.pid())).await);
            Flow::Continue
        }
    }
    let r = rt.block_on(|cx: Context<()>| async move {
        let s = Selfish::start_link(&cx, ()).await.unwrap();
        s.call(|f| f).await
    });
    assert_eq!(r.unwrap(), Ok(Err(SysError::CallingSelf)));
});
