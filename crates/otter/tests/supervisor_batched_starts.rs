//! A simple_one_for_one supervisor starts the children asked of it in a row together
//! (`supervisor/batch.rs`): their `init`s overlap, each caller is answered when its own
//! child has acknowledged, a failed start fails alone, and a request of another kind
//! between two starts ends the batch and keeps its place in the order.
//!
//! Most tests first hold the supervisor in a `terminate_child` of a child that traps
//! exits and ends only at the test's word (shutdown `infinity`), so that the requests
//! after it queue in its mailbox in a known order.

#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::server::{Flow, Info, ReplyTo, Server, ServerContext, ServerMsg, ServerRef};
use otter::supervisor::{
    self, ChildError, ChildSpec, Restart, Shutdown, Strategy, SupervisorRef, SupervisorSpec,
};
use otter::{Context, ExitReason, Pid, ProcessId, Runtime};

/// How long a test waits for a note before it fails (a failure guard only).
const GUARD: Duration = Duration::from_secs(20);

/// What the test process hears.
#[derive(Debug)]
enum Note {
    /// A child's `init` has begun (and, if it was gated, waits for [`Go`]).
    Begun(ServerRef<Child>),
    /// Caller `n`'s start ended so.
    Started(usize, Result<ProcessId, ChildError>),
    /// Caller `n`'s `which_children`: the children's pids.
    Children(usize, Vec<ProcessId>),
    /// The holder is trapping exits.
    Holding(Pid<Hold>),
    /// The holder's `terminate_child` ended so.
    Terminated(Result<(), ChildError>),
}

/// What the holder hears.
enum Hold {
    Exit(#[allow(dead_code)] otter::Exit),
    Go,
}

impl From<otter::Exit> for Hold {
    fn from(e: otter::Exit) -> Hold {
        Hold::Exit(e)
    }
}

/// The word a gated child's `init` waits for.
#[derive(Debug)]
struct Go;

/// How a child's `init` goes.
#[derive(Clone, Copy, Debug)]
enum Init {
    /// Tells the test it has begun, then waits for [`Go`].
    Gated,
    /// Tells the test it has begun, and is done.
    Plain,
    /// Fails with `ShutdownWith("refused")`.
    Refuses,
}

struct Child;

impl Server for Child {
    type Args = (Pid<Note>, Init);
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = Go;

    async fn init(
        (test, init): Self::Args,
        cx: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        if let Init::Refuses = init {
            return Err(ExitReason::ShutdownWith("refused".into()));
        }
        test.send(Note::Begun(ServerRef::from(cx.pid())));
        if let Init::Gated = init {
            cx.recv_match(|m| matches!(m, ServerMsg::Info(Go))).await;
        }
        Ok(Child)
    }

    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(());
        Flow::Continue
    }

    async fn handle_info(&mut self, _: Info<Go>, _: &mut ServerContext<Self>) -> Flow {
        Flow::Continue
    }
}

fn spec(test: Pid<Note>, init: Init) -> ChildSpec {
    ChildSpec::server::<Child>("child", move || (test, init))
}

/// Caller `n`: a process that asks `sup` to start `spec` and tells the test how it went.
fn ask_start(cx: &Context<Note>, sup: SupervisorRef, n: usize, spec: ChildSpec) {
    let test = cx.pid();
    cx.spawn(move |_: Context<()>| async move {
        test.send(Note::Started(n, sup.start_child(spec).await));
    });
}

/// Waits until `sup`'s mailbox holds `n` messages (each caller's request is queued).
async fn queued(cx: &mut Context<Note>, sup: SupervisorRef, n: usize) {
    let t0 = std::time::Instant::now();
    while cx.process_info(sup.id()).map_or(0, |i| i.message_queue_len) < n {
        assert!(t0.elapsed() < GUARD, "the requests were never queued");
        cx.yield_now().await;
    }
}

/// A note, or a failure after [`GUARD`].
async fn note(cx: &mut Context<Note>) -> Note {
    cx.recv_timeout(GUARD).await.expect("a note in time")
}

/// A simple_one_for_one supervisor, linked to the test.
async fn simple(cx: &mut Context<Note>) -> SupervisorRef {
    supervisor::start_link(&*cx, SupervisorSpec::new(Strategy::SimpleOneForOne))
        .await
        .unwrap()
}

/// Holds `sup` in a `terminate_child` of a child that ends only at [`release`]'s word.
async fn hold(cx: &mut Context<Note>, sup: SupervisorRef) -> Pid<Hold> {
    let test = cx.pid();
    let holder = ChildSpec::process("holder", move || {
        move |mut c: Context<Hold>| async move {
            c.trap_exit(true);
            test.send(Note::Holding(c.pid()));
            c.recv_match(|m| matches!(m, Hold::Go)).await;
        }
    })
    .shutdown(Shutdown::Infinity);
    let pid = sup.start_child(holder).await.unwrap();
    let Note::Holding(holder) = note(cx).await else {
        panic!("the holder's note first")
    };
    cx.spawn(move |_: Context<()>| async move {
        test.send(Note::Terminated(sup.terminate_pid(pid).await));
    });
    // The supervisor's shutdown signal has reached the holder, so the supervisor waits.
    let t0 = std::time::Instant::now();
    while cx.process_info(pid).map_or(0, |i| i.message_queue_len) == 0 {
        assert!(
            t0.elapsed() < GUARD,
            "the supervisor never stopped the holder"
        );
        cx.yield_now().await;
    }
    holder
}

/// Lets the held supervisor go on.
async fn release(cx: &mut Context<Note>, holder: Pid<Hold>) {
    holder.send(Hold::Go);
    match cx.recv_match(|m| matches!(m, Note::Terminated(_))).await {
        Note::Terminated(t) => t.unwrap(),
        _ => unreachable!(),
    }
}

rt_test!(
    starts_asked_in_a_row_of_a_simple_one_for_one_supervisor_overlap_their_inits,
    |rt: &Runtime| {
        const N: usize = 8;
        let r = rt.block_on(|mut cx: Context<Note>| async move {
            let sup = simple(&mut cx).await;
            let holder = hold(&mut cx, sup).await;
            for n in 1..=N {
                ask_start(&cx, sup, n, spec(cx.pid(), Init::Gated));
            }
            queued(&mut cx, sup, N).await;
            release(&mut cx, holder).await;
            // Every init of the batch begins before any is acknowledged: one at a time,
            // the first would wait for its `Go` for ever and no second would begin.
            let mut begun = Vec::new();
            while begun.len() < N {
                match note(&mut cx).await {
                    Note::Begun(child) => begun.push(child),
                    other => panic!("a start ended before every init began: {other:?}"),
                }
            }
            for child in &begun {
                child.info(Go);
            }
            let mut started = Vec::new();
            while started.len() < N {
                if let Note::Started(_, s) = note(&mut cx).await {
                    started.push(s.unwrap());
                }
            }
            started.sort();
            let mut expected: Vec<ProcessId> = begun.iter().map(|c| c.id()).collect();
            expected.sort();
            let active = sup.count_children().await.unwrap().active;
            (started == expected, active)
        });
        assert_eq!(r.unwrap(), (true, N));
    }
);

rt_test!(
    a_request_between_two_starts_ends_the_batch_and_keeps_its_place,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Note>| async move {
            let sup = simple(&mut cx).await;
            let holder = hold(&mut cx, sup).await;
            // Queued in this order: start 1, which_children (caller 2), start 3.
            ask_start(&cx, sup, 1, spec(cx.pid(), Init::Plain));
            queued(&mut cx, sup, 1).await;
            let test = cx.pid();
            cx.spawn(move |_: Context<()>| async move {
                let kids = sup.which_children().await.unwrap();
                test.send(Note::Children(
                    2,
                    kids.into_iter().filter_map(|c| c.pid).collect(),
                ));
            });
            queued(&mut cx, sup, 2).await;
            ask_start(&cx, sup, 3, spec(cx.pid(), Init::Plain));
            queued(&mut cx, sup, 3).await;
            release(&mut cx, holder).await;
            let (mut one, mut children, mut three) = (None, None, None);
            while one.is_none() || children.is_none() || three.is_none() {
                match note(&mut cx).await {
                    Note::Started(1, s) => one = Some(s.unwrap()),
                    Note::Started(3, s) => three = Some(s.unwrap()),
                    Note::Children(2, mut kids) => {
                        kids.sort();
                        children = Some(kids);
                    }
                    _ => {}
                }
            }
            // which_children came after the first start had ended, before the second.
            (children == Some(vec![one.unwrap()]), three.is_some())
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);

rt_test!(a_failed_start_in_a_batch_fails_alone, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Note>| async move {
        let sup = simple(&mut cx).await;
        let holder = hold(&mut cx, sup).await;
        let me = cx.pid();
        ask_start(&cx, sup, 1, spec(me, Init::Plain));
        ask_start(&cx, sup, 2, spec(me, Init::Refuses));
        ask_start(
            &cx,
            sup,
            3,
            ChildSpec::new("panics", |_| -> supervisor::StartFuture {
                panic!("no start today")
            }),
        );
        ask_start(
            &cx,
            sup,
            4,
            ChildSpec::new("panics later", |_| async {
                if true {
                    panic!("no start later");
                }
                Err(ExitReason::Normal)
            }),
        );
        ask_start(&cx, sup, 5, spec(me, Init::Plain));
        queued(&mut cx, sup, 5).await;
        release(&mut cx, holder).await;
        let mut outcomes: Vec<Option<Result<ProcessId, ChildError>>> = vec![None; 6];
        while outcomes[1..].iter().any(Option::is_none) {
            if let Note::Started(n, s) = note(&mut cx).await {
                outcomes[n] = Some(s);
            }
        }
        let failed = |n: usize| matches!(outcomes[n], Some(Err(ChildError::StartFailed(_))));
        let ok = |n: usize| matches!(outcomes[n], Some(Ok(_)));
        let reasons = match &outcomes[2] {
            Some(Err(ChildError::StartFailed(r))) => r.clone(),
            _ => ExitReason::Normal,
        };
        let each = [ok(1), failed(2), failed(3), failed(4), ok(5)];
        drop(outcomes);
        let active = sup.count_children().await.unwrap().active;
        (each, reasons, active)
    });
    assert_eq!(
        r.unwrap(),
        ([true; 5], ExitReason::ShutdownWith("refused".into()), 2)
    );
});

rt_test!(
    an_exit_between_starts_is_handled_in_its_place_and_one_that_restarts_ends_the_batch,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Note>| async move {
            let me = cx.pid();
            let sup = simple(&mut cx).await;
            let temporary = sup
                .start_child(spec(me, Init::Plain).restart(Restart::Temporary))
                .await
                .unwrap();
            let permanent = sup.start_child(spec(me, Init::Plain)).await.unwrap();
            // Their `Begun` notes.
            note(&mut cx).await;
            note(&mut cx).await;
            let specs_before = sup.count_children().await.unwrap().specs;
            let holder = hold(&mut cx, sup).await;
            // Queued: start 1, the temporary child's exit, start 3, the permanent
            // child's exit, start 5.
            ask_start(&cx, sup, 1, spec(me, Init::Plain));
            queued(&mut cx, sup, 1).await;
            cx.exit(temporary, ExitReason::Kill);
            queued(&mut cx, sup, 2).await;
            ask_start(&cx, sup, 3, spec(me, Init::Plain));
            queued(&mut cx, sup, 3).await;
            cx.exit(permanent, ExitReason::Kill);
            queued(&mut cx, sup, 4).await;
            ask_start(&cx, sup, 5, spec(me, Init::Plain));
            queued(&mut cx, sup, 5).await;
            release(&mut cx, holder).await;
            let mut started = 0;
            while started < 3 {
                if let Note::Started(_, s) = note(&mut cx).await {
                    s.unwrap();
                    started += 1;
                }
            }
            let kids: Vec<ProcessId> = sup
                .which_children()
                .await
                .unwrap()
                .into_iter()
                .filter_map(|c| c.pid)
                .collect();
            // The temporary child is forgotten; the permanent one runs again under a
            // new pid: 1, 3, 5 and the restarted one.
            (
                specs_before,
                kids.len(),
                kids.contains(&temporary),
                kids.contains(&permanent),
            )
        });
        assert_eq!(r.unwrap(), (2, 4, false, false));
    }
);

rt_test!(
    a_start_asked_while_a_batch_waits_joins_it,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Note>| async move {
            let me = cx.pid();
            let sup = simple(&mut cx).await;
            ask_start(&cx, sup, 0, spec(me, Init::Gated));
            let Note::Begun(first) = note(&mut cx).await else {
                panic!("the first child's init first")
            };
            // The supervisor waits for the first child's init; one at a time, this start
            // would wait for it too.
            ask_start(&cx, sup, 1, spec(me, Init::Plain));
            let second = cx.recv_match(|m| matches!(m, Note::Started(..))).await;
            first.info(Go);
            let first_started = cx.recv_match(|m| matches!(m, Note::Started(0, _))).await;
            (
                matches!(second, Note::Started(1, Ok(_))),
                matches!(first_started, Note::Started(0, Ok(p)) if p == first.id()),
            )
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);
