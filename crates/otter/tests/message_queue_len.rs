//! Rules of `message_queue_len` (Erlang's `process_info(_, message_queue_len)`): from
//! the process itself it counts every message not yet received, those a selective
//! receive left behind included, exactly; from a pid it counts the process's queue,
//! whether or not this worker's stream cache holds the pid, and is `None` once the
//! process has exited.

#[path = "support/rt.rs"]
mod support;

use otter::{Context, Down, ExitReason, Runtime};

rt_test!(
    a_process_counts_the_messages_it_has_not_received_saved_ones_included,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<u32>| async move {
                let me = cx.pid();
                let empty = cx.message_queue_len();
                // Across several of the mailbox's blocks (31 messages each).
                for i in 0..100 {
                    me.send(i);
                }
                let all = cx.message_queue_len();
                // Leaves 0..=49 in the save area and takes 50.
                assert_eq!(cx.try_recv_match(|m| *m == 50), Some(50));
                let after_match = cx.message_queue_len();
                assert_eq!(cx.recv().await, 0);
                let after_recv = cx.message_queue_len();
                while cx.try_recv().is_some() {}
                (empty, all, after_match, after_recv, cx.message_queue_len())
            })
            .unwrap();
        assert_eq!(r, (0, 100, 99, 98, 0));
    }
);

enum Msg {
    Down(Down),
}

impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}

rt_test!(
    a_pid_reads_its_process_queue_and_none_once_it_has_exited,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<Msg>| async move {
                // A process that never receives: its queue only grows.
                let (idle, _) = cx.spawn_monitor(|_: Context<u64>| std::future::pending::<()>());
                let mut lens = vec![idle.message_queue_len()];
                // The first sends of a poll look the pid up; later ones find it in the
                // stream cache, which the read then uses too.
                for i in 0..200 {
                    idle.send(i);
                    lens.push(idle.message_queue_len());
                }
                cx.exit(idle, ExitReason::Kill);
                let Msg::Down(down) = cx.recv().await;
                assert_eq!(down.reason, ExitReason::Killed);
                // The `Down` comes during the exit; the pid stops resolving at its end
                // (`Pid::has_exited`), which on several workers may be a moment later.
                while !idle.has_exited() {
                    cx.yield_now().await;
                }
                (lens, idle.message_queue_len())
            })
            .unwrap();
        let (lens, after_exit) = r;
        let expected: Vec<Option<usize>> = (0..=200).map(Some).collect();
        assert_eq!(lens, expected);
        assert_eq!(after_exit, None);
    }
);

rt_test!(
    a_pid_read_while_its_process_drains_never_exceeds_what_was_sent,
    |rt: &Runtime| {
        let r = rt
            .block_on(|mut cx: Context<()>| async move {
                let me = cx.pid();
                let sink = cx.spawn(move |mut c: Context<u64>| async move {
                    for _ in 0..10_000 {
                        c.recv().await;
                    }
                    me.send(());
                });
                let mut worst = 0;
                for i in 0..10_000u64 {
                    let len = sink.message_queue_len().unwrap_or(0) as u64;
                    worst = worst.max(len.saturating_sub(i));
                    cx.send(sink, i).await;
                }
                cx.recv().await;
                worst
            })
            .unwrap();
        assert_eq!(r, 0, "a read counted more messages than had been sent");
    }
);
