//! Rules of the name registry (Erlang's `register/2`, `whereis/1`, `unregister/1`): a
//! name maps to one live process, a process has one name, a name is released when its
//! process exits, and registering a taken name or a dead process fails clearly.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Pid, RegisterError, Runtime};

rt_test!(a_name_is_released_when_its_process_exits, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<()>| async move {
        let me = cx.pid();
        let child = cx.spawn(move |mut c: Context<u8>| async move {
            c.recv().await;
            me.send(());
        });
        cx.register("worker", child).unwrap();
        assert_eq!(cx.whereis::<u8>("worker"), Some(child));
        child.send(0);
        cx.recv().await;
        while !child.has_exited() {
            cx.yield_now().await;
        }
        let gone = cx.whereis::<u8>("worker");
        // The name is free again.
        let next = cx.spawn(|mut c: Context<u8>| async move {
            c.recv().await;
        });
        let again = cx.register("worker", next);
        next.send(0);
        (gone, again)
    });
    assert_eq!(r.unwrap(), (None, Ok(())));
});

rt_test!(
    registering_a_dead_process_or_a_taken_name_fails,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let dead = cx.spawn(|_: Context<u8>| async {});
            while !dead.has_exited() {
                cx.yield_now().await;
            }
            let a = cx.register("d", dead);
            let me = cx.pid();
            cx.register("me", me).unwrap();
            let b = cx.register("me", cx.spawn(|_: Context<()>| async {}));
            let c = cx.register("me-again", me);
            (a, b, c)
        });
        assert_eq!(
            r.unwrap(),
            (
                Err(RegisterError::NotAlive),
                Err(RegisterError::NameTaken),
                Err(RegisterError::AlreadyNamed)
            )
        );
    }
);

rt_test!(
    no_name_outlives_its_process_under_concurrent_exits,
    |rt: &Runtime| {
        // Many processes are registered while they exit: afterwards no name resolves.
        const N: usize = 2_000;
        let r = rt.block_on(|mut cx: Context<()>| async move {
            let me = cx.pid();
            let mut pids: Vec<Pid<u8>> = Vec::with_capacity(N);
            for i in 0..N {
                let p = cx.spawn(move |c: Context<u8>| async move {
                    if i % 2 == 0 {
                        c.yield_now().await;
                    }
                    me.send(());
                });
                pids.push(p);
                // Races with the child's exit: either outcome is fine, a stale name is not.
                let _ = cx.register(format!("p{i}"), p);
            }
            for _ in 0..N {
                cx.recv().await;
            }
            for p in &pids {
                while !p.has_exited() {
                    cx.yield_now().await;
                }
            }
            (0..N)
                .filter(|i| cx.whereis::<u8>(&format!("p{i}")).is_some())
                .count()
        });
        assert_eq!(r.unwrap(), 0, "a name outlived its process");
    }
);
