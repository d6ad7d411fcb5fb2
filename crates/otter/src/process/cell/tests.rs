//! Small runtime runs that exercise every `unsafe` path of this module (spawn, send,
//! wake, exit, free by the last sender, free by the owner, shutdown of blocked
//! processes, a muted sender's looks at its receiver's queue), sized for Miri.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{Context, ExitReason, Runtime};

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn spawn_send_exit_and_shutdown() {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().threads(2).build().unwrap();
    let d = drops.clone();
    let r = rt.block_on(move |mut cx: Context<u32>| async move {
        let me = cx.pid();
        // Children that echo, exit, and leave messages behind.
        for i in 0..4 {
            let g = Counted(d.clone());
            let child = cx.spawn(move |mut c: Context<Counted>| async move {
                let _g = g;
                let _first = c.recv().await;
                me.send(i);
            });
            child.send(Counted(d.clone()));
            child.send(Counted(d.clone())); // never received: freed with the cell
        }
        let mut sum = 0;
        for _ in 0..4 {
            sum += cx.recv().await;
        }
        // A child that panics.
        fn boom() {
            panic!("miri panic")
        }
        let p = cx.spawn(|_c: Context<()>| async { boom() });
        while !p.has_exited() {
            cx.yield_now().await;
        }
        assert!(p.try_send(()).is_err());
        // Children blocked forever: ended by shutdown.
        for _ in 0..3 {
            let g = Counted(d.clone());
            cx.spawn(move |mut c: Context<u8>| async move {
                let _g = g;
                c.recv().await;
            });
        }
        sum
    });
    assert_eq!(r, Ok(6));
    drop(rt);
    // 4 guards + 8 messages + 3 blocked guards.
    assert_eq!(drops.load(Ordering::SeqCst), 15);
}

#[test]
fn links_trapped_exits_and_kill() {
    use crate::{Down, Exit};
    #[derive(Debug)]
    enum Msg {
        Exit(Exit),
        Down(Down),
    }
    impl From<Exit> for Msg {
        fn from(e: Exit) -> Msg {
            Msg::Exit(e)
        }
    }
    impl From<Down> for Msg {
        fn from(d: Down) -> Msg {
            Msg::Down(d)
        }
    }
    let rt = Runtime::builder().threads(2).build().unwrap();
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        // A trapped exit is pushed through the trap function of our own cell.
        cx.trap_exit(true);
        let a = cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
        let Msg::Exit(e) = cx.recv().await else {
            panic!("expected an exit")
        };
        assert_eq!((e.from, e.reason), (a.id(), ExitReason::Shutdown));
        // Kill ends a waiting, trapping process; its monitor says Killed.
        let (b, _) = cx.spawn_monitor(|mut c: Context<Msg>| async move {
            c.trap_exit(true);
            while let Msg::Exit(_) = c.recv().await {}
        });
        cx.exit(b, ExitReason::Kill);
        let Msg::Down(d) = cx.recv().await else {
            panic!("expected a down")
        };
        assert_eq!(d.reason, ExitReason::Killed);
        // A link to a process that is gone: noproc, as a message.
        cx.link(b);
        let Msg::Exit(e) = cx.recv().await else {
            panic!("expected an exit")
        };
        e.reason
    });
    assert_eq!(r, Ok(ExitReason::Noproc));
}

#[test]
fn a_stream_to_a_process_that_exits_loses_nothing() {
    // Sends past `STREAM_AFTER` keep one table count on their receiver until the
    // poll ends. The receiver exits mid-stream here (on the other worker) or after
    // it (on one): every message is received, handed back or dropped with the
    // cell, once the kept count goes back.
    for threads in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let d = drops.clone();
        let r = rt.block_on(move |cx: Context<()>| async move {
            let child = cx.spawn(|mut c: Context<Counted>| async move {
                c.recv().await;
                c.recv().await;
            });
            let mut accepted = 0;
            for _ in 0..20 {
                if child.try_send(Counted(d.clone())).is_ok() {
                    accepted += 1;
                }
            }
            while !child.has_exited() {
                cx.yield_now().await;
            }
            for _ in 0..6 {
                assert!(child.try_send(Counted(d.clone())).is_err());
            }
            accepted
        });
        assert!(r.unwrap() >= 2);
        drop(rt);
        assert_eq!(drops.load(Ordering::SeqCst), 26, "threads = {threads}");
    }
}

#[test]
fn a_fan_out_over_more_receivers_than_entries_loses_nothing() {
    // Sends past `STREAM_AFTER` keep a count on each receiver in the entry its index
    // picks; with more receivers than entries, entries are taken over (the count they
    // held goes back) on every round. Every other receiver exits after its first
    // message, mid-stream: every message is received, handed back or dropped with its
    // cell.
    use crate::tuning::STREAM_ENTRIES;
    let receivers = STREAM_ENTRIES + 3;
    for threads in [1, 2] {
        let drops = Arc::new(AtomicUsize::new(0));
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let d = drops.clone();
        let r = rt.block_on(move |cx: Context<()>| async move {
            let to: Vec<_> = (0..receivers)
                .map(|j| {
                    cx.spawn(move |mut c: Context<Counted>| async move {
                        c.recv().await;
                        if j % 2 == 0 {
                            loop {
                                c.recv().await;
                            }
                        }
                    })
                })
                .collect();
            let mut accepted = 0;
            for _ in 0..3 {
                for p in &to {
                    if p.try_send(Counted(d.clone())).is_ok() {
                        accepted += 1;
                    }
                }
            }
            accepted
        });
        assert!(r.unwrap() >= receivers);
        drop(rt);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            3 * receivers,
            "threads = {threads}"
        );
    }
}

#[test]
fn a_message_dropped_with_a_kept_cell_may_stream() {
    // Rule 3 of the stream cache: the kept count of a process that streamed to
    // itself frees its cell after the poll, and the `Drop` of the messages left in
    // it streams to another process, which keeps a count again.
    struct Bomb(crate::Pid<u8>);
    impl Drop for Bomb {
        fn drop(&mut self) {
            for _ in 0..6 {
                self.0.send(1);
            }
        }
    }
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|mut cx: Context<u32>| async move {
        let me = cx.pid();
        let sink = cx.spawn(move |mut c: Context<u8>| async move {
            let mut n = 0;
            while n < 36 {
                n += u32::from(c.recv().await);
            }
            me.send(n);
        });
        cx.spawn(move |c: Context<Bomb>| async move {
            for _ in 0..6 {
                c.pid().send(Bomb(sink));
            }
        });
        cx.recv().await
    });
    assert_eq!(r, Ok(36));
}

#[test]
fn links_and_monitors_cost_an_idle_process_one_word() {
    // Everything links, monitors, trap_exit and exit signals need is behind one
    // lazily boxed record: the header stays 64 bytes.
    assert_eq!(std::mem::size_of::<super::Header>(), 64);
    assert_eq!(
        std::mem::size_of::<std::sync::Mutex<Option<Box<super::Bonds>>>>(),
        16
    );
}

#[test]
fn a_senders_fields_are_the_first_48_bytes_of_the_cell() {
    // The layout of the module docs: the queue's tail and the header's `state` and
    // `rt` come first, within 48 bytes; the exit's fields, the queue's head and the
    // future follow.
    use super::{GAP_OFFSET, Header, Prefix};
    use std::mem::offset_of;
    assert_eq!(
        std::mem::align_of::<super::Cell<std::future::Ready<()>, u64>>(),
        16
    );
    assert!(GAP_OFFSET + offset_of!(Header, state) + 8 <= 48);
    assert!(GAP_OFFSET + offset_of!(Header, rt) + 8 <= 48);
    assert!(GAP_OFFSET + offset_of!(Header, gate) >= 64);
    // The introspection counters follow the queue's head, off the sender's lines.
    assert_eq!(offset_of!(Prefix<u64>, counters), 112);
    assert_eq!(std::mem::size_of::<Prefix<u64>>(), 144);
}

#[test]
fn a_spawn_link_whose_closure_panics_leaks_nothing() {
    // The closure runs before the process is published: its panic unwinds through
    // `spawn`'s `Undo`, which must drop the header's boxed bonds (Miri checks leaks).
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|cx: Context<()>| async move {
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cx.spawn_link(|_c: Context<()>| -> std::future::Ready<()> { panic!("closure") })
        }));
        built.is_err()
    });
    assert_eq!(r, Ok(true));
}

#[test]
fn a_context_and_pid_kept_by_a_panicking_closure_stay_harmless() {
    // The closure may keep what `spawn` handed it before it panics: its pid must
    // never name the slot's next process, and its `Context` must keep the cell
    // allocated until it is dropped (Miri checks the use-after-free).
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|cx: Context<()>| async move {
        let mut kept: Option<(Context<u64>, crate::Pid<u64>)> = None;
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cx.spawn(|c: Context<u64>| -> std::future::Ready<()> {
                let pid = c.pid();
                kept = Some((c, pid));
                panic!("closure")
            })
        }));
        assert!(built.is_err());
        let (kept_cx, kept_pid) = kept.take().unwrap();
        // The next spawn on this thread reuses the slot (the free-index cache is LIFO).
        let next = cx.spawn(|mut c: Context<u64>| async move {
            c.recv().await;
        });
        assert_eq!(next.raw.index, kept_pid.raw.index, "the slot was reused");
        let stale = kept_pid.try_send(7).is_err();
        assert!(next.try_send(1).is_ok());
        drop(kept_cx);
        stale
    });
    assert_eq!(r, Ok(true));
}

#[test]
fn root_panic_is_its_exit_reason() {
    let rt = Runtime::builder().threads(1).build().unwrap();
    let r = rt.block_on(|_cx: Context<()>| async { panic!("root") });
    assert_eq!(r, Err::<(), _>(ExitReason::Panic("root".into())));
}

/// Counts its drop, then panics.
struct Bomb(Arc<AtomicUsize>);
impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        panic!("bomb");
    }
}

#[test]
fn messages_whose_drop_panics_are_dropped_one_at_a_time() {
    // Two saved by a selective receive (the save area's drop) and two left queued
    // (the queue's drop when the cell is freed): each is dropped, none aborts.
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().threads(1).build().unwrap();
    let d = drops.clone();
    let r = rt.block_on(move |mut cx: Context<crate::Down>| async move {
        let (child, _) = cx.spawn_monitor(|mut c: Context<Option<Bomb>>| async move {
            c.recv_match(|m| m.is_none()).await;
            std::future::pending::<()>().await
        });
        child.send(Some(Bomb(d.clone())));
        child.send(Some(Bomb(d.clone())));
        child.send(None);
        child.send(Some(Bomb(d.clone())));
        child.send(Some(Bomb(d.clone())));
        cx.exit(child, ExitReason::Shutdown);
        cx.recv().await.reason
    });
    assert_eq!(r, Ok(ExitReason::Shutdown));
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
}

#[test]
fn a_panic_payload_whose_drop_panics_is_an_exit_reason() {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::builder().threads(1).build().unwrap();
    let d = drops.clone();
    let r = rt.block_on(move |mut cx: Context<crate::Down>| async move {
        cx.spawn_monitor(move |_: Context<()>| async move {
            let payload: Result<(), Bomb> = Err(Bomb(d));
            if let Err(bomb) = payload {
                std::panic::panic_any(bomb);
            }
        });
        cx.recv().await.reason
    });
    assert_eq!(
        r,
        Ok(ExitReason::Panic("<non-string panic payload>".into()))
    );
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_muted_sender_reads_its_receivers_queue_and_goes_on_when_it_drains() {
    // The muting look (`process/send.rs`'s `flooded`, `still_muted`) reads a queue's
    // ends through the stream cache's count and through a lookup; the receiver reads
    // nothing until the sender has been muted, then takes every message in order.
    use crate::mailbox::bound::MUTE_AT;
    use std::sync::Mutex;
    use std::task::{Poll, Waker};
    let gate: Arc<Mutex<(bool, Option<Waker>)>> = Arc::default();
    let rt = Runtime::builder().threads(1).build().unwrap();
    let h = rt.handle();
    let g = gate.clone();
    let n = 3 * MUTE_AT;
    let got = rt.block_on(move |mut cx: Context<usize>| async move {
        let me = cx.pid();
        let receiver = cx.spawn(move |mut c: Context<usize>| async move {
            std::future::poll_fn(|w| {
                let mut g = g.lock().unwrap();
                if g.0 {
                    Poll::Ready(())
                } else {
                    g.1 = Some(w.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            for i in 0..n {
                assert_eq!(c.recv().await, i);
            }
            me.send(n);
        });
        let sender = cx.spawn(move |mut c: Context<()>| async move {
            for i in 0..n {
                c.send(receiver, i).await;
            }
        });
        while h.process_info(sender).map(|i| i.status) != Some(crate::introspect::Status::Waiting) {
            cx.yield_now().await;
        }
        let queued = receiver.message_queue_len().unwrap();
        let waker = {
            let mut g = gate.lock().unwrap();
            g.0 = true;
            g.1.take()
        };
        waker.expect("the receiver waits").wake();
        (queued, cx.recv().await)
    });
    let (queued, received) = got.unwrap();
    assert!(queued > MUTE_AT, "muted past the limit, at {queued}");
    assert_eq!(received, n);
}
