//! A server child started through a supervisor comes back typed, as a `ServerRef<S>`
//! (Elixir's `DynamicSupervisor.start_child/2` with the pid typed), on a
//! simple_one_for_one supervisor and on one of static children; a spec of another type
//! starts nothing.

#[path = "support/rt.rs"]
mod support;

use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{self, ChildError, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, ExitReason, Runtime};

/// Answers its start argument, plus what it is asked.
struct Adder(u32);

impl Server for Adder {
    type Args = u32;
    type Call = (u32, ReplyTo<u32>);
    type Cast = ();
    type Info = ();

    async fn init(n: u32, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Adder(n))
    }

    async fn handle_call(
        &mut self,
        (k, from): (u32, ReplyTo<u32>),
        _: &mut ServerContext<Self>,
    ) -> Flow {
        from.reply(self.0 + k);
        Flow::Continue
    }
}

/// Another server type.
struct Other;

impl Server for Other {
    type Args = ();
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Other)
    }

    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(());
        Flow::Continue
    }
}

fn adder(id: &str, n: u32) -> ChildSpec {
    ChildSpec::server::<Adder>(id.to_string(), move || n)
}

rt_test!(
    a_server_child_started_under_simple_one_for_one_comes_back_typed,
    |rt: &Runtime| {
        for n in [1u32, 20] {
            let r = rt.block_on(move |cx: Context<()>| async move {
                let spec = SupervisorSpec::new(Strategy::SimpleOneForOne);
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                let mut refs: Vec<ServerRef<Adder>> = Vec::new();
                for i in 0..n {
                    refs.push(
                        sup.start_server_child(adder("adder", i * 10))
                            .await
                            .unwrap(),
                    );
                }
                let mut answers = Vec::new();
                for r in &refs {
                    answers.push(r.call(|f| (1, f)).await.unwrap());
                }
                let kids: Vec<_> = sup
                    .which_children()
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|c| c.pid)
                    .collect();
                let ids: Vec<_> = refs.iter().map(|r| Some(r.id())).collect();
                (answers, kids == ids)
            });
            let expected: Vec<u32> = (0..n).map(|i| i * 10 + 1).collect();
            assert_eq!(r.unwrap(), (expected, true));
        }
    }
);

rt_test!(
    a_server_child_started_under_a_static_supervisor_comes_back_typed,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne).child(adder("first", 1));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let added: ServerRef<Adder> =
                sup.start_server_child(adder("added", 100)).await.unwrap();
            let answer = added.call(|f| (5, f)).await;
            // The same child as the supervisor knows it by id.
            let by_id = sup.child::<Adder>("added").await;
            // Ids stay unique among static children.
            let again = sup.start_server_child::<Adder>(adder("added", 7)).await;
            (
                answer,
                by_id == Ok(Some(added)),
                again == Err(ChildError::AlreadyPresent(Some(added.id()))),
            )
        });
        assert_eq!(r.unwrap(), (Ok(105), true, true));
    }
);

rt_test!(
    a_spec_that_does_not_start_that_server_type_starts_nothing,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne))
                .await
                .unwrap();
            let other = sup
                .start_server_child::<Adder>(ChildSpec::server::<Other>("other", || ()))
                .await;
            let process = sup
                .start_server_child::<Adder>(ChildSpec::process("p", || {
                    |mut c: Context<()>| async move { c.recv().await }
                }))
                .await;
            let raw = sup
                .start_server_child::<Adder>(ChildSpec::new("raw", |s| {
                    let started = Adder::start_link(s, 0);
                    async move { started.await.map(|a| a.id()) }
                }))
                .await;
            let counts = sup.count_children().await.unwrap();
            (other, process, raw, counts.specs)
        });
        let e = Err(ChildError::WrongType);
        assert_eq!(r.unwrap(), (e.clone(), e.clone(), e, 0));
    }
);
