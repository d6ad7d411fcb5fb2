//! Rule: a panic in user code ends at most the process it belongs to. A message whose
//! `Drop` panics, saved by a selective receive or still queued when its receiver exits,
//! is dropped on its own: the others are still dropped, and the OS process does not
//! abort (a second panic while unwinding would). A panic payload whose own `Drop`
//! panics (`panic_any`) still ends only its process, with an exit reason, and its
//! monitors get their `Down`.

#[path = "support/rt.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use otter::{Context, Down, ExitReason, Runtime};

/// Counts its drop, then panics.
struct Bomb(Arc<AtomicUsize>);
impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("a message's Drop panicked");
    }
}

enum Msg {
    Bomb(#[allow(dead_code)] Bomb),
    Go,
}

fn bombs_dropped_at_exit(rt: &Runtime, saved: bool) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let d2 = dropped.clone();
    let r = rt.block_on(move |mut cx: Context<Down>| async move {
        let (victim, _) = cx.spawn_monitor(move |mut c: Context<Msg>| async move {
            if saved {
                // Skips the bombs into the save area, takes `Go`.
                c.recv_match(|m| matches!(m, Msg::Go)).await;
            } else {
                // Leaves them in the queue.
                std::future::pending::<()>().await
            }
        });
        for _ in 0..3 {
            victim.send(Msg::Bomb(Bomb(d2.clone())));
        }
        if saved {
            victim.send(Msg::Go);
        } else {
            cx.exit(victim, ExitReason::Shutdown);
        }
        cx.recv_timeout(Duration::from_secs(30))
            .await
            .map(|d| d.reason)
    });
    let expected = if saved {
        ExitReason::Normal
    } else {
        ExitReason::Shutdown
    };
    assert_eq!(r, Ok(Some(expected)), "the process exited once, normally");
    support::eventually("every bomb dropped", Duration::from_secs(30), || {
        dropped.load(Ordering::SeqCst) == 3
    });
    // The runtime goes on.
    assert_eq!(rt.block_on(|_: Context<()>| async { 7 }), Ok(7));
}

rt_test!(
    saved_messages_whose_drop_panics_are_dropped_one_at_a_time,
    |rt: &Runtime| bombs_dropped_at_exit(rt, true)
);

rt_test!(
    queued_messages_whose_drop_panics_are_dropped_one_at_a_time,
    |rt: &Runtime| bombs_dropped_at_exit(rt, false)
);

rt_test!(
    a_panic_payload_whose_drop_panics_ends_only_its_process,
    |rt: &Runtime| {
        let dropped = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 * support::MANY {
            let d2 = dropped.clone();
            let r = rt.block_on(move |mut cx: Context<Down>| async move {
                cx.spawn_monitor(move |_: Context<()>| async move {
                    let payload: Result<(), Bomb> = Err(Bomb(d2));
                    if let Err(bomb) = payload {
                        std::panic::panic_any(bomb);
                    }
                });
                cx.recv_timeout(Duration::from_secs(30))
                    .await
                    .map(|d| d.reason)
            });
            assert_eq!(
                r,
                Ok(Some(ExitReason::Panic("<non-string panic payload>".into())))
            );
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 2 * support::MANY);
    }
);
