//! Rules of state machines (`gen_statem`): the order of inserted, postponed, queued and
//! zero-time events; postponed events retried only after a change of state; state
//! enter calls; state, event and generic timeouts (restart, update, cancel, the last of
//! a kind wins, a cancelled one never fires); replies now, deferred and before a stop;
//! start, stop, names, supervision and crashes as a server's. Cases ported from OTP's
//! `gen_statem_SUITE` name the case in a comment.
//!
//! Most tests drive one probe machine whose handlers are closures: it logs every event
//! as `state:event` and every enter call as `state:enter(old)`, and answers
//! `Req::Log` with the log so far, which is also the barrier a test waits on.

#[path = "support/rt.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::server::{CallError, Name, ReplyTo};
use otter::statem::{
    Event, Machine, StateMachine, StatemContext, StatemError, StatemRef, Transition,
};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Exit, ExitReason, Pid, Runtime};

type St = &'static str;
type Log = Arc<Mutex<Vec<String>>>;
type OnEvent = Box<dyn FnMut(St, Event<Probe>) -> Transition<Probe> + Send>;
type OnEnter = Box<dyn FnMut(St, St) -> Transition<Probe> + Send>;

struct Probe {
    log: Log,
    watcher: Option<Pid<String>>,
    on_event: OnEvent,
    on_enter: Option<OnEnter>,
}

enum Req {
    /// Handled by the probe's closure.
    Ask(&'static str, ReplyTo<&'static str>),
    /// Answered by the probe itself with the log (not logged).
    Log(ReplyTo<Vec<String>>),
}

/// How a probe starts: its handlers and its first transition.
struct Setup {
    watcher: Option<Pid<String>>,
    on_event: OnEvent,
    on_enter: Option<OnEnter>,
    first: Transition<Probe>,
}

impl Probe {
    fn note(&self, line: String) {
        if let Some(w) = self.watcher {
            w.send(line.clone());
        }
        self.log.lock().unwrap().push(line);
    }
}

fn describe(event: &Event<Probe>) -> String {
    match event {
        Event::Call(Req::Ask(a, _)) => format!("call({a})"),
        Event::Call(Req::Log(_)) => "log".into(),
        Event::Cast(c) => format!("cast({c})"),
        Event::Info(i) => format!("info({i})"),
        Event::Exit(e) => format!("exit({:?})", e.reason),
        Event::Down(d) => format!("down({:?})", d.reason),
        Event::Internal(i) => format!("internal({i})"),
        Event::StateTimeout(c) => format!("state_timeout({c})"),
        Event::EventTimeout(c) => format!("event_timeout({c})"),
        Event::Timeout(n, c) => format!("timeout({n},{c})"),
    }
}

impl StateMachine for Probe {
    type Args = Setup;
    type State = St;
    type Call = Req;
    type Cast = &'static str;
    type Info = &'static str;
    type Internal = &'static str;

    async fn init(
        setup: Setup,
        _: &mut StatemContext<Self>,
    ) -> Result<(Self, Transition<Self>), ExitReason> {
        let probe = Probe {
            log: Log::default(),
            watcher: setup.watcher,
            on_event: setup.on_event,
            on_enter: setup.on_enter,
        };
        Ok((probe, setup.first))
    }

    async fn handle_event(
        &mut self,
        state: &St,
        event: Event<Self>,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        if let Event::Call(Req::Log(from)) = event {
            from.reply(self.log.lock().unwrap().clone());
            return Transition::keep();
        }
        self.note(format!("{state}:{}", describe(&event)));
        (self.on_event)(state, event)
    }

    fn state_enter(
        &mut self,
        old: &St,
        state: &St,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        if self.on_enter.is_none() {
            return Transition::keep();
        }
        self.note(format!("{state}:enter({old})"));
        (self.on_enter.as_mut().unwrap())(old, state)
    }

    async fn terminate(&mut self, reason: &ExitReason, state: &St, _: &mut StatemContext<Self>) {
        self.note(format!("{state}:terminate({reason:?})"));
    }
}

fn setup(
    first: St,
    on_event: impl FnMut(St, Event<Probe>) -> Transition<Probe> + Send + 'static,
) -> Setup {
    Setup {
        watcher: None,
        on_event: Box::new(on_event),
        on_enter: None,
        first: Transition::next(first),
    }
}

impl Setup {
    /// Starts with `first` (its state and initial actions) instead.
    fn starting(mut self, first: Transition<Probe>) -> Setup {
        self.first = first;
        self
    }

    /// With enter calls, each logged, answered by `on_enter`.
    fn entering(
        mut self,
        on_enter: impl FnMut(St, St) -> Transition<Probe> + Send + 'static,
    ) -> Setup {
        self.on_enter = Some(Box::new(on_enter));
        self
    }
}

/// A probe that also sends each line of its log to `watcher`.
fn watched(
    watcher: Pid<String>,
    first: Transition<Probe>,
    on_event: impl FnMut(St, Event<Probe>) -> Transition<Probe> + Send + 'static,
) -> Setup {
    Setup {
        watcher: Some(watcher),
        on_event: Box::new(on_event),
        on_enter: None,
        first,
    }
}

/// The watched lines up to and including the first that `last` accepts.
async fn until(cx: &mut Context<String>, last: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let line = cx.recv().await;
        let done = last(&line);
        lines.push(line);
        if done {
            return lines;
        }
    }
}

fn is(want: &'static str) -> impl Fn(&str) -> bool {
    move |line| line == want
}

async fn log_of(m: StatemRef<Probe>) -> Vec<String> {
    m.call(Req::Log).await.unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// OTP: start1, start6 (do_func_test/do_sync_func_test).
rt_test!(
    start_link_gives_a_ref_that_calls_and_casts_reach,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("idle", |state, event| match (state, event) {
                    ("idle", Event::Cast("go")) => Transition::next("busy"),
                    (s, Event::Call(Req::Ask(_, from))) => Transition::keep().reply(from, s),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let before = m.call(|r| Req::Ask("state?", r)).await.unwrap();
            m.cast("go");
            let after = m.call(|r| Req::Ask("state?", r)).await.unwrap();
            (before, after, log_of(m).await)
        });
        let (before, after, log) = got.unwrap();
        assert_eq!((before, after), ("idle", "busy"));
        assert_eq!(
            log,
            ["idle:call(state?)", "idle:cast(go)", "busy:call(state?)"]
        );
    }
);

// OTP: start4, start5 (init returning ignore / {stop, Reason}).
rt_test!(init_failing_or_stopping_fails_the_start, |rt: &Runtime| {
    struct Fails;
    impl StateMachine for Fails {
        type Args = u8;
        type State = ();
        type Call = ();
        type Cast = ();
        type Info = ();
        type Internal = ();
        async fn init(
            how: u8,
            _: &mut StatemContext<Self>,
        ) -> Result<(Self, Transition<Self>), ExitReason> {
            match how {
                0 => Err(ExitReason::Shutdown),
                1 => Ok((Fails, Transition::stop(ExitReason::Killed))),
                _ => Ok((Fails, Transition::keep())),
            }
        }
        async fn handle_event(
            &mut self,
            _: &(),
            _: Event<Self>,
            _: &mut StatemContext<Self>,
        ) -> Transition<Self> {
            Transition::keep()
        }
    }
    let got = rt.block_on(|cx: Context<()>| async move {
        let err = Fails::start_link(&cx, 0).await.unwrap_err();
        let stop = Fails::start_link(&cx, 1).await.unwrap_err();
        let keep = Fails::start(&cx, 2).await.unwrap_err();
        (err, stop, keep.downcast_ref::<StatemError>().copied())
    });
    let (err, stop, keep) = got.unwrap();
    assert_eq!(err, ExitReason::Shutdown);
    assert_eq!(stop, ExitReason::Killed);
    assert_eq!(keep, Some(StatemError::NoFirstState));
});

// OTP: start8, start9 (local registration, {already_started, Pid}), stop4.
rt_test!(
    a_registered_machine_is_called_by_name_and_its_name_is_taken_while_it_runs,
    |rt: &Runtime| {
        const NAME: Name<Machine<Probe>> = Name::new("probe");
        let got = rt.block_on(|cx: Context<()>| async move {
            let answer = |s: St, e: Event<Probe>| match e {
                Event::Call(Req::Ask(_, from)) => Transition::keep().reply(from, s),
                _ => Transition::keep(),
            };
            let m = Probe::start_link_named(&cx, NAME, setup("idle", answer))
                .await
                .unwrap();
            let again = Probe::start_link_named(&cx, NAME, setup("idle", answer)).await;
            let by_name = NAME.call(&cx, |r| Req::Ask("who", r)).await;
            NAME.cast(&cx, "hello");
            let stopped = m.stop(ExitReason::Normal, None).await;
            let after = NAME.call(&cx, |r| Req::Ask("who", r)).await;
            (
                again.is_err(),
                by_name,
                stopped,
                after,
                NAME.whereis(&cx).is_none(),
            )
        });
        assert_eq!(
            got.unwrap(),
            (true, Ok("idle"), Ok(()), Err(CallError::Noproc), true)
        );
    }
);

// OTP: stop1, stop2 (stop with normal and with another reason; then noproc).
rt_test!(
    stop_runs_terminate_in_the_current_state_and_a_second_stop_is_noproc,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start(&cx, setup("idle", |_, _| Transition::next("other")))
                .await
                .unwrap();
            m.cast("move");
            let before = log_of(m).await;
            let first = m.stop(ExitReason::error(std::fmt::Error), None).await;
            let second = m.stop(ExitReason::Normal, None).await;
            (before, first, second)
        });
        let (before, first, second) = got.unwrap();
        assert_eq!(before, ["idle:cast(move)"]);
        assert_eq!(first, Ok(()));
        assert_eq!(second, Err(CallError::Noproc));
    }
);

// OTP: abnormal1 (a call that times out, then one answered).
rt_test!(
    a_call_times_out_and_the_late_reply_is_dropped,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let held: Arc<Mutex<Vec<ReplyTo<&'static str>>>> = Arc::default();
            let keep = held.clone();
            let m = Probe::start_link(
                &cx,
                setup("idle", move |_, e| match e {
                    Event::Call(Req::Ask("hold", from)) => {
                        keep.lock().unwrap().push(from);
                        Transition::keep()
                    }
                    Event::Call(Req::Ask(_, from)) => {
                        for late in keep.lock().unwrap().drain(..) {
                            late.reply("late");
                        }
                        Transition::keep().reply(from, "now")
                    }
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let timed_out = m.call_timeout(|r| Req::Ask("hold", r), Some(ms(10))).await;
            let answered = m.call(|r| Req::Ask("release", r)).await;
            (timed_out, answered)
        });
        assert_eq!(got.unwrap(), (Err(CallError::Timeout), Ok("now")));
    }
);

// OTP: shutdown ({stop, {shutdown, reason}} seen by a trapping linked caller).
rt_test!(
    a_stop_transition_exits_with_its_reason_to_the_linked_parent,
    |rt: &Runtime| {
        #[derive(Debug)]
        enum Msg {
            Exit(Exit),
        }
        impl From<Exit> for Msg {
            fn from(e: Exit) -> Msg {
                Msg::Exit(e)
            }
        }
        let got = rt.block_on(|mut cx: Context<Msg>| async move {
            cx.trap_exit(true);
            let m = Probe::start_link(
                &cx,
                setup("idle", |_, e| match e {
                    Event::Call(Req::Ask(_, from)) => {
                        Transition::stop(ExitReason::Shutdown).reply(from, "stopped")
                    }
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let reply = m.call(|r| Req::Ask("stop", r)).await;
            let Msg::Exit(exit) = cx.recv().await;
            let after = m.call(|r| Req::Ask("hej", r)).await;
            (reply, exit.from == m.id(), exit.reason, after)
        });
        assert_eq!(
            got.unwrap(),
            (
                Ok("stopped"),
                true,
                ExitReason::Shutdown,
                Err(CallError::Noproc)
            )
        );
    }
);

// OTP: stop_and_reply (a reply kept from an earlier state, then stop and reply both).
rt_test!(
    replies_given_with_a_stop_and_deferred_from_an_earlier_state_arrive_before_the_exit,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let mut kept: Option<ReplyTo<&'static str>> = None;
            let m = Probe::start(
                &cx,
                setup("start", move |state, e| match (state, e) {
                    ("start", Event::Call(Req::Ask("echo", from))) => {
                        kept = Some(from);
                        Transition::next("wait")
                    }
                    ("wait", Event::Call(Req::Ask("stop", from))) => {
                        let first = kept.take().unwrap();
                        Transition::stop(ExitReason::Normal)
                            .reply(first, "reply1")
                            .reply(from, "reply2")
                    }
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let first = m.call_timeout(|r| Req::Ask("echo", r), None);
            let second = m.call(|r| Req::Ask("stop", r));
            let (a, b) = support::join(first, second).await;
            let after = m.call(|r| Req::Ask("hej", r)).await;
            (a, b, after)
        });
        assert_eq!(
            got.unwrap(),
            (Ok("reply1"), Ok("reply2"), Err(CallError::Noproc))
        );
    }
);

// OTP: event_order.
rt_test!(
    inserted_events_come_before_postponed_ones_and_a_zero_event_timeout_is_cancelled_by_them,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("start", |state, e| match (state, e) {
                    ("start", e @ Event::Cast(_)) => Transition::keep().postpone(e),
                    ("start", Event::Call(Req::Ask("buffer", from))) => Transition::next("buffer")
                        .next_event(Event::Internal("ok3"))
                        .next_event(Event::Internal("ok4"))
                        .event_timeout(Duration::ZERO, "ok5")
                        .reply(from, "ok"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("ok1");
            m.cast("ok2");
            let ok = m.call(|r| Req::Ask("buffer", r)).await;
            (ok, log_of(m).await)
        });
        let (ok, log) = got.unwrap();
        assert_eq!(ok, Ok("ok"));
        assert_eq!(
            log,
            [
                "start:cast(ok1)",
                "start:cast(ok2)",
                "start:call(buffer)",
                "buffer:internal(ok3)",
                "buffer:internal(ok4)",
                "buffer:cast(ok1)",
                "buffer:cast(ok2)",
            ]
        );
    }
);

rt_test!(
    a_postponed_event_is_retried_only_after_a_change_of_state,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("a", |state, e| match (state, e) {
                    ("a", e @ Event::Cast("p")) => Transition::keep().postpone(e),
                    ("a", Event::Cast("keep")) => Transition::keep(),
                    ("a", Event::Cast("same")) => Transition::next("a"),
                    ("a", Event::Cast("repeat")) => Transition::repeat(),
                    ("a", Event::Cast("change")) => Transition::next("b"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            for c in ["p", "keep", "same", "repeat", "change", "after"] {
                m.cast(c);
            }
            log_of(m).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:cast(p)",
                "a:cast(keep)",
                "a:cast(same)",
                "a:cast(repeat)",
                "a:cast(change)",
                "b:cast(p)",
                "b:cast(after)",
            ]
        );
    }
);

rt_test!(
    a_zero_timeout_comes_after_the_queued_events_and_before_the_mailbox,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("a", |_, e| match e {
                    Event::Cast("go") => Transition::keep()
                        .state_timeout(Duration::ZERO, "zero")
                        .next_event(Event::Internal("inserted")),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("go");
            m.cast("later");
            log_of(m).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:cast(go)",
                "a:internal(inserted)",
                "a:state_timeout(zero)",
                "a:cast(later)"
            ]
        );
    }
);

rt_test!(
    state_enter_runs_at_the_start_on_each_change_and_on_repeat,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("a", |_, e| match e {
                    Event::Cast("b") => Transition::next("b"),
                    Event::Cast("same") => Transition::next("b"),
                    Event::Cast("repeat") => Transition::repeat(),
                    _ => Transition::keep(),
                })
                .starting(Transition::next("a").next_event(Event::Internal("first")))
                .entering(|_, _| Transition::keep()),
            )
            .await
            .unwrap();
            for c in ["b", "same", "keep", "repeat"] {
                m.cast(c);
            }
            log_of(m).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:enter(a)",
                "a:internal(first)",
                "a:cast(b)",
                "b:enter(a)",
                "b:cast(same)",
                "b:cast(keep)",
                "b:cast(repeat)",
                "b:enter(b)",
            ]
        );
    }
);

// OTP: abnormal2's idea (a callback's bad return crashes the machine), for enter calls.
rt_test!(
    an_enter_call_that_changes_the_state_stops_the_machine,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start(
                &cx,
                setup("a", |_, _| Transition::next("b")).entering(|_, state| match state {
                    "b" => Transition::next("c"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let reason = m.stop(ExitReason::Normal, None);
            m.cast("go");
            match reason.await {
                Err(CallError::Exit(r)) => r.downcast_ref::<StatemError>().copied(),
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(got.unwrap(), Some(StatemError::EnterChangedState));
    }
);

// Timeouts. Each test waits on the lines its probe sends, never on a sleep; a timeout
// that must *not* fire is checked against a later one that must, whose deadline is
// well after the first's.

rt_test!(
    a_state_timeout_fires_in_its_state_and_a_change_of_state_cancels_it,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let first = Transition::next("a").state_timeout(ms(5), "fired");
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), first, |state, e| match (state, e) {
                    ("a", Event::StateTimeout(_)) => {
                        Transition::next("b").state_timeout(ms(100), "never")
                    }
                    ("b", Event::Cast("leave")) => {
                        Transition::next("c").timeout("end", ms(300), "end")
                    }
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let fired = until(&mut cx, is("a:state_timeout(fired)")).await;
            m.cast("leave");
            (fired, until(&mut cx, is("c:timeout(end,end)")).await)
        });
        let (fired, rest) = got.unwrap();
        assert_eq!(fired, ["a:state_timeout(fired)"]);
        assert_eq!(rest, ["b:cast(leave)", "c:timeout(end,end)"]);
    }
);

rt_test!(
    a_state_timeout_runs_on_through_keep_and_a_next_to_the_same_state,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let first = Transition::next("a").state_timeout(ms(200), "t");
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), first, |_, e| match e {
                    Event::Cast("same") => Transition::next("a"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("keep");
            m.cast("same");
            until(&mut cx, is("a:state_timeout(t)")).await
        });
        assert_eq!(
            got.unwrap(),
            ["a:cast(keep)", "a:cast(same)", "a:state_timeout(t)"]
        );
    }
);

rt_test!(
    an_event_timeout_fires_when_no_event_comes_and_any_event_cancels_it,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let first = Transition::next("a").event_timeout(ms(5), "idle");
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), first, |_, e| match e {
                    Event::Cast("arm") => Transition::keep()
                        .event_timeout(ms(200), "never")
                        .timeout("end", ms(400), "end"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let idle = until(&mut cx, is("a:event_timeout(idle)")).await;
            m.cast("arm");
            m.cast("poke");
            (idle, until(&mut cx, is("a:timeout(end,end)")).await)
        });
        let (idle, rest) = got.unwrap();
        assert_eq!(idle, ["a:event_timeout(idle)"]);
        assert_eq!(rest, ["a:cast(arm)", "a:cast(poke)", "a:timeout(end,end)"]);
    }
);

rt_test!(
    generic_timeouts_outlive_a_change_of_state_and_are_updated_cancelled_and_overridden,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let first = Transition::next("a")
                .timeout("x", ms(200), "x1")
                .timeout("y", ms(300), "y1")
                .timeout("z", ms(5), "z-first")
                .timeout("z", ms(400), "z-last");
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), first, |_, e| match e {
                    Event::Cast("go") => Transition::next("b")
                        .update_timeout("x", "x2")
                        .cancel_timeout("y"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("go");
            until(&mut cx, is("b:timeout(z,z-last)")).await
        });
        assert_eq!(
            got.unwrap(),
            ["a:cast(go)", "b:timeout(x,x2)", "b:timeout(z,z-last)"]
        );
    }
);

rt_test!(
    updating_a_timeout_that_does_not_run_delivers_it_at_once,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), Transition::next("a"), |_, e| match e {
                    Event::Cast("u") => Transition::keep()
                        .update_timeout("n", "now")
                        .update_state_timeout("st-now")
                        .cancel_timeout("none"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("u");
            m.cast("after");
            until(&mut cx, is("a:cast(after)")).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:cast(u)",
                "a:timeout(n,now)",
                "a:state_timeout(st-now)",
                "a:cast(after)"
            ]
        );
    }
);

rt_test!(
    a_cancelled_timeout_never_fires_even_when_its_message_is_already_queued,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), Transition::next("a"), |_, e| match e {
                    Event::Cast("arm") => Transition::keep().state_timeout(ms(1), "late"),
                    Event::Cast("busy") => {
                        // A handler that computes past the deadline: the timer's message
                        // is sent meanwhile, and the cancel below comes after it.
                        std::thread::sleep(ms(20));
                        Transition::keep().cancel_state_timeout()
                    }
                    Event::Cast("after") => Transition::keep().timeout("end", ms(50), "end"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("arm");
            m.cast("busy");
            m.cast("after");
            until(&mut cx, is("a:timeout(end,end)")).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:cast(arm)",
                "a:cast(busy)",
                "a:cast(after)",
                "a:timeout(end,end)"
            ]
        );
    }
);

rt_test!(
    a_panic_in_a_handler_runs_terminate_in_the_current_state,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let m = Probe::start(
                &cx,
                watched(cx.pid(), Transition::next("a"), |_, e| match e {
                    Event::Cast("boom") => panic!("boom"),
                    Event::Cast("b") => Transition::next("b"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("b");
            m.cast("boom");
            let lines = until(&mut cx, |l| l.contains("terminate")).await;
            (lines, m.call(Req::Log).await.unwrap_err())
        });
        let (lines, after) = got.unwrap();
        assert_eq!(lines[..2], ["a:cast(b)", "b:cast(boom)"]);
        assert!(lines[2].starts_with("b:terminate(Panic("), "{lines:?}");
        assert!(matches!(
            after,
            CallError::Noproc | CallError::Exit(ExitReason::Panic(_))
        ));
    }
);

rt_test!(
    a_supervised_machine_is_restarted_and_found_again_by_its_child_id,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let child = ChildSpec::server::<Machine<Probe>>("probe", || {
                setup("fresh", |state, e| match e {
                    Event::Cast("crash") => panic!("crash"),
                    Event::Call(Req::Ask(_, from)) => Transition::next("used").reply(from, state),
                    _ => Transition::keep(),
                })
            });
            let sup =
                supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(child))
                    .await
                    .unwrap();
            let first = sup.child::<Machine<Probe>>("probe").await.unwrap().unwrap();
            let a = first.call(|r| Req::Ask("state?", r)).await;
            let b = first.call(|r| Req::Ask("state?", r)).await;
            first.cast("crash");
            let mut second = first;
            while second == first {
                second = match sup.child::<Machine<Probe>>("probe").await.unwrap() {
                    Some(s) => s,
                    None => first,
                };
                cx.yield_now().await;
            }
            let c = second.call(|r| Req::Ask("state?", r)).await;
            (a, b, c)
        });
        assert_eq!(got.unwrap(), (Ok("fresh"), Ok("used"), Ok("fresh")));
    }
);

// Zero-time timeouts run until they fire: cancelled, updated, restarted and (the state
// timeout) cancelled by a change of state like any other. OTP: gen_statem_SUITE's
// state_timeout ("state_timeout 0 can be restarted") and timeout_cancel_and_update.

rt_test!(
    a_zero_state_timeout_is_cancelled_by_a_change_of_state_before_it_fires,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let first = Transition::next("a")
                .state_timeout(Duration::ZERO, "z")
                .next_event(Event::Internal("go"));
            let m = Probe::start_link(
                &cx,
                setup("a", |_, e| match e {
                    Event::Internal("go") => Transition::next("b"),
                    _ => Transition::keep(),
                })
                .starting(first),
            )
            .await
            .unwrap();
            m.cast("end");
            log_of(m).await
        });
        assert_eq!(got.unwrap(), ["a:internal(go)", "b:cast(end)"]);
    }
);

rt_test!(
    a_zero_timeout_is_cancelled_updated_and_restarted_before_it_fires,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<String>| async move {
            let first = Transition::next("a")
                .timeout("cancelled", Duration::ZERO, "c")
                .update_timeout("updated", "u1")
                .timeout("restarted", Duration::ZERO, "zero")
                .next_event(Event::Internal("change them"));
            let m = Probe::start_link(
                &cx,
                watched(cx.pid(), first, |_, e| match e {
                    Event::Internal("change them") => Transition::keep()
                        .cancel_timeout("cancelled")
                        .update_timeout("updated", "u2")
                        .timeout("restarted", ms(20), "late"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            let _ = m;
            until(&mut cx, is("a:timeout(restarted,late)")).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:internal(change them)",
                "a:timeout(updated,u2)",
                "a:timeout(restarted,late)"
            ]
        );
    }
);

rt_test!(
    a_zero_state_timeout_set_on_entering_comes_after_the_events_already_due,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<()>| async move {
            let m = Probe::start_link(
                &cx,
                setup("a", |state, e| match (state, e) {
                    ("a", e @ Event::Cast("x")) => Transition::keep().postpone(e),
                    ("a", Event::Cast("go")) => Transition::next("b"),
                    _ => Transition::keep(),
                })
                .entering(|_, state| match state {
                    "b" => Transition::keep().state_timeout(Duration::ZERO, "work"),
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            m.cast("x");
            m.cast("go");
            m.cast("end");
            log_of(m).await
        });
        assert_eq!(
            got.unwrap(),
            [
                "a:enter(a)",
                "a:cast(x)",
                "a:cast(go)",
                "b:enter(a)",
                "b:cast(x)",
                "b:state_timeout(work)",
                "b:cast(end)"
            ]
        );
    }
);

#[derive(Debug)]
enum Watch {
    Down(otter::Down),
}

impl From<otter::Down> for Watch {
    fn from(d: otter::Down) -> Watch {
        Watch::Down(d)
    }
}

rt_test!(
    a_machine_that_keeps_inserting_events_yields_and_can_be_killed,
    |rt: &Runtime| {
        let got = rt.block_on(|mut cx: Context<Watch>| async move {
            let m = Probe::start(
                &cx,
                setup("a", |_, e| match e {
                    Event::Cast("spin") | Event::Internal("spin") => {
                        Transition::keep().next_event(Event::Internal("spin"))
                    }
                    _ => Transition::keep(),
                }),
            )
            .await
            .unwrap();
            cx.monitor(m.id());
            m.cast("spin");
            // A call waits behind the spinning: it times out, but the machine yields its
            // worker meanwhile, so this process runs on one worker too.
            let call = m.call_timeout(Req::Log, Some(ms(20))).await;
            cx.exit(m.id(), ExitReason::Kill);
            let Some(Watch::Down(down)) = cx.recv_timeout(Duration::from_secs(10)).await else {
                panic!("the spinning machine was not killed");
            };
            (call.unwrap_err(), down.reason)
        });
        assert_eq!(got.unwrap(), (CallError::Timeout, ExitReason::Killed));
    }
);
