//! Rule: a panic in a process ends that process with `ExitReason::Panic(message)`; the
//! runtime and every other process carry on.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, ExitReason, Runtime};

rt_test!(
    a_panicking_process_ends_alone_with_its_reason,
    |rt: &Runtime| {
        let r = rt.block_on(|_cx: Context<()>| async { panic!("deliberate: {}", 42) });
        assert_eq!(r, Err(ExitReason::Panic("deliberate: 42".into())));

        // Others keep running while processes panic around them.
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let me = cx.pid();
            let echo = cx.spawn(move |mut c: Context<u32>| async move {
                loop {
                    let n = c.recv().await;
                    me.send(n);
                    if n == 99 {
                        break;
                    }
                }
            });
            for i in 0..100 {
                let doomed = cx.spawn(|mut c: Context<u32>| async move {
                    if c.recv().await < 1000 {
                        panic!("child crash");
                    }
                });
                doomed.send(0);
                echo.send(i);
                assert_eq!(cx.recv().await, i);
            }
            while !echo.has_exited() {
                cx.yield_now().await;
            }
            echo.is_alive()
        });
        assert_eq!(r, Ok(false), "echo finished after 100 round trips");
        // The runtime is still usable.
        assert_eq!(rt.block_on(|_cx: Context<()>| async { 1 }), Ok(1));
    }
);

rt_test!(sending_to_a_dead_process_is_not_an_error, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let p = cx.spawn(|mut c: Context<u8>| async move {
            if c.try_recv().is_none() {
                panic!("gone");
            }
        });
        while !p.has_exited() {
            cx.yield_now().await;
        }
        p.send(1);
        p.try_send(2)
    });
    assert_eq!(r.unwrap(), Err(otter::TrySendError::Exited(2)));
});

rt_test!(exit_reason_from_the_return_value, |rt: &Runtime| {
    let r = rt.block_on(|_cx: Context<()>| async { Err::<(), _>(ExitReason::Shutdown) });
    assert_eq!(r.unwrap(), Err(ExitReason::Shutdown));
});

rt_test!(
    a_process_that_loops_for_ever_spawns_and_ends_by_signal,
    |rt: &Runtime| {
        // Rust 2024 gives `async move { loop { .. } }` the output `!`: it must spawn.
        let r = rt.block_on(|mut cx: Context<otter::Down>| async move {
            let (pid, _) = cx.spawn_monitor(|mut c: Context<u8>| async move {
                loop {
                    c.recv().await;
                }
            });
            pid.send(1);
            cx.exit(pid, ExitReason::Kill);
            cx.recv().await.reason
        });
        assert_eq!(r, Ok(ExitReason::Killed));
    }
);
