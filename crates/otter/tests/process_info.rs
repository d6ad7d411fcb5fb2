//! Rules of introspection (`otter::introspect`; Erlang's `process_info/1`,
//! `processes/0`, `statistics/1`): a process's info counts its queue, the messages it
//! took, its polls and its memory (the save area of selective receive included), and
//! names its links, the monitors it holds and those on it, its trap flag, parent,
//! supervisor and kind; an exited, unknown or foreign pid gives `None`; a snapshot lists every live
//! process of its runtime, with names, across windows; the runtime's counters count
//! spawns and exits by reason, its timers and its reactor's events.

#[path = "support/rt.rs"]
mod support;

use std::collections::HashSet;
use std::time::Duration;

use otter::introspect::{Kind, Status};
use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Down, Exit, ExitReason, ProcessId, Runtime};
use support::eventually;

const LIMIT: Duration = Duration::from_secs(10);

rt_test!(
    the_save_area_of_selective_receive_counts_in_a_processs_memory_and_queue,
    |rt: &Runtime| {
        rt.block_on(move |mut cx: Context<u64>| async move {
            let me = cx.pid();
            let before = cx.process_info(me).unwrap().memory;
            assert_eq!(before.saved, 0);
            for i in 0..1000 {
                me.send(i);
            }
            // Passes over the 1,000 messages: all of them go to the save area.
            assert_eq!(cx.try_recv_match(|m| *m == u64::MAX), None);
            assert_eq!(cx.message_queue_len(), 1000);
            let after = cx.process_info(me).unwrap();
            let inline = 1000 * std::mem::size_of::<Option<u64>>();
            assert!(after.memory.saved >= inline, "{:?}", after.memory);
            assert_eq!(
                after.memory.total(),
                after.memory.cell + after.memory.mailbox + after.memory.bonds + after.memory.saved
            );
            // Erlang's `message_queue_len` counts them too, and each one taken.
            assert_eq!(after.message_queue_len, 1000);
            assert_eq!(cx.try_recv_match(|m| *m == 500), Some(500));
            assert_eq!(cx.try_recv(), Some(0));
            let taken = cx.process_info(me).unwrap();
            assert_eq!(taken.message_queue_len, 998);
            while cx.try_recv().is_some() {}
            let drained = cx.process_info(me).unwrap();
            assert_eq!((drained.message_queue_len, drained.memory.saved), (0, 0));
        })
        .unwrap();
    }
);

rt_test!(
    a_waiting_process_shows_its_queue_the_messages_it_took_and_its_parent,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<u32>| async move {
            let me = cx.pid();
            let child = cx.spawn(move |mut c: Context<u32>| async move {
                for _ in 0..3 {
                    c.recv().await;
                }
                me.send(0);
                std::future::pending::<()>().await
            });
            for i in 1..=8 {
                child.send(i);
            }
            assert_eq!(cx.recv().await, 0);
            eventually("the child waits", LIMIT, || {
                h.process_info(child).unwrap().status == Status::Waiting
            });
            let info = cx.process_info(child).expect("the child is alive");
            assert_eq!(info.pid, child.id());
            assert_eq!(info.kind, Kind::Process);
            assert_eq!(info.message_queue_len, 5);
            assert_eq!(info.messages_received, 3);
            assert!(info.polls >= 1, "{info:?}");
            assert!(info.memory.cell > 0 && info.memory.mailbox_blocks >= 1);
            assert_eq!(info.parent, Some(me.id()));
            assert_eq!(info.supervisor, None);
            assert_eq!(info.name, None);
            assert!(!info.trap_exit && info.links.is_empty() && info.monitored_by.is_empty());
            // A waiting process is not polled: its count stays.
            let again = h.process_info(child).unwrap();
            assert_eq!(again.polls, info.polls);
            // The reader itself is running.
            let mine = cx.process_info(me).unwrap();
            assert_eq!(mine.status, Status::Running);
            assert_eq!(mine.parent, None);
            cx.exit(child, ExitReason::Kill);
        })
        .unwrap();
    }
);

#[derive(Debug)]
enum Msg {
    Down(#[allow(dead_code)] Down),
    Exit(#[allow(dead_code)] Exit),
    Go,
}

impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}

impl From<Exit> for Msg {
    fn from(e: Exit) -> Msg {
        Msg::Exit(e)
    }
}

rt_test!(
    links_monitors_and_the_trap_flag_are_shown_on_each_side,
    |rt: &Runtime| {
        rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let child = cx.spawn_link(move |mut c: Context<Msg>| async move {
                c.trap_exit(true);
                me.send(Msg::Go);
                loop {
                    c.recv().await;
                }
            });
            assert!(matches!(cx.recv().await, Msg::Go));
            let watcher = cx.spawn(move |mut c: Context<Msg>| async move {
                c.monitor(child);
                me.send(Msg::Go);
                loop {
                    c.recv().await;
                }
            });
            assert!(matches!(cx.recv().await, Msg::Go));
            let info = cx.process_info(child).unwrap();
            assert_eq!(info.links, vec![me.id()]);
            assert_eq!(info.monitored_by, vec![watcher.id()]);
            assert!(info.trap_exit);
            assert!(info.memory.bonds > 0);
            let mine = cx.process_info(me).unwrap();
            assert_eq!(mine.links, vec![child.id()]);
            assert!(!mine.trap_exit);
            // The watcher's monitor is on the child's side only (module docs).
            assert!(cx.process_info(watcher).unwrap().monitored_by.is_empty());
            cx.unlink(child);
            cx.exit(child, ExitReason::Kill);
            cx.exit(watcher, ExitReason::Kill);
        })
        .unwrap();
    }
);

fn sorted(mut pids: Vec<ProcessId>) -> Vec<ProcessId> {
    pids.sort();
    pids
}

rt_test!(
    a_process_lists_the_monitors_it_holds_until_each_fires_or_is_stopped,
    |rt: &Runtime| {
        rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let idle = |mut c: Context<()>| async move { c.recv().await };
            let a = cx.spawn(idle);
            let b = cx.spawn(idle);
            let first = cx.monitor(a);
            cx.monitor(a);
            let (c, _) = cx.spawn_monitor(idle);
            cx.monitor(b);
            let held = |cx: &Context<Msg>| sorted(cx.process_info(me).unwrap().monitors);
            // Once per monitor, as Erlang's `monitors` lists them.
            assert_eq!(held(&cx), sorted(vec![a.id(), a.id(), c.id(), b.id()]));
            assert!(cx.demonitor(first));
            assert_eq!(held(&cx), sorted(vec![a.id(), c.id(), b.id()]));
            // The monitored side agrees.
            assert_eq!(cx.process_info(a).unwrap().monitored_by, vec![me.id()]);
            // A fired monitor is not listed, its `Down` received or not.
            b.send(());
            while !b.has_exited() {
                cx.yield_now().await;
            }
            assert_eq!(held(&cx), sorted(vec![a.id(), c.id()]));
            assert!(matches!(cx.recv().await, Msg::Down(_)));
            cx.exit(a, ExitReason::Kill);
            cx.exit(c, ExitReason::Kill);
            assert!(matches!(cx.recv().await, Msg::Down(_)));
            assert!(matches!(cx.recv().await, Msg::Down(_)));
            assert_eq!(held(&cx), vec![]);
            // Another process's view is the same.
            let gone = cx.spawn(idle);
            cx.monitor(gone);
            assert_eq!(cx.process_info(me).unwrap().monitors, vec![gone.id()]);
            cx.exit(gone, ExitReason::Kill);
            assert!(matches!(cx.recv().await, Msg::Down(_)));
        })
        .unwrap();
    }
);

rt_test!(
    the_record_of_monitors_held_stays_bounded_while_their_targets_come_and_go,
    |rt: &Runtime| {
        rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let keep = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
            cx.monitor(keep);
            let base = cx.process_info(me).unwrap().memory.bonds;
            for _ in 0..10_000 {
                let (short, _) = cx.spawn_monitor(|_: Context<()>| async {});
                cx.monitor(short);
                // Two `Down`s: each monitor fires.
                assert!(matches!(cx.recv().await, Msg::Down(_)));
                assert!(matches!(cx.recv().await, Msg::Down(_)));
            }
            let info = cx.process_info(me).unwrap();
            assert_eq!(info.monitors, vec![keep.id()]);
            // Pruned when it doubles: at most about 2 × 64 records, 16 bytes each.
            let held = std::mem::size_of::<(u64, u64)>();
            assert!(
                info.memory.bonds <= base + 2 * 64 * held,
                "{} bytes against {base} with one monitor",
                info.memory.bonds
            );
            cx.exit(keep, ExitReason::Kill);
        })
        .unwrap();
    }
);

rt_test!(
    an_exited_unknown_or_foreign_pid_gives_none,
    |rt: &Runtime| {
        let other = Runtime::builder().threads(1).build().unwrap();
        let foreign = other
            .handle()
            .spawn(|mut c: Context<()>| async move { c.recv().await });
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<Down>| async move {
            let (child, _) = cx.spawn_monitor(|_: Context<()>| async {});
            cx.recv().await;
            assert!(cx.process_info(child).is_none());
            assert!(h.process_info(child).is_none());
            assert!(h.process_info(ProcessId::OUTSIDE).is_none());
            assert!(
                cx.process_info(foreign).is_none(),
                "another runtime's process"
            );
        })
        .unwrap();
        assert!(other.handle().process_info(foreign).is_some());
        foreign.send(());
    }
);

/// A server that answers calls and crashes on a cast.
struct Echo;

impl Server for Echo {
    type Args = ();
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Echo)
    }

    async fn handle_call(&mut self, from: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        from.reply(());
        Flow::Continue
    }

    async fn handle_cast(&mut self, _: (), _: &mut ServerContext<Self>) -> Flow {
        Flow::Stop(ExitReason::Panic("asked to crash".into()))
    }
}

rt_test!(
    behaviours_show_their_kind_and_a_child_its_supervisor_and_restarts,
    |rt: &Runtime| {
        rt.block_on(|mut cx: Context<Down>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne)
                .child(ChildSpec::server::<Echo>("echo", || ()));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let first = sup.child::<Echo>("echo").await.unwrap().unwrap();
            let s = cx.process_info(sup.id()).unwrap();
            assert_eq!(s.kind, Kind::Supervisor);
            assert!(s.trap_exit);
            assert_eq!(s.parent, Some(cx.pid().id()));
            let c = cx.process_info(first.id()).unwrap();
            assert_eq!(c.kind, Kind::Server);
            assert_eq!(c.parent, Some(sup.id()));
            assert_eq!(c.supervisor, Some(sup.id()));
            assert_eq!(c.restarts, 0);
            assert!(c.links.contains(&sup.id()));
            cx.monitor(first.pid());
            first.cast(());
            cx.recv().await;
            let second = loop {
                if let Some(s) = sup.child::<Echo>("echo").await.unwrap() {
                    break s;
                }
            };
            let c = cx.process_info(second.id()).unwrap();
            assert_eq!((c.kind, c.restarts), (Kind::Server, 1));
            // A plain process stays a process.
            assert_eq!(cx.process_info(cx.pid()).unwrap().kind, Kind::Process);
        })
        .unwrap();
    }
);

rt_test!(
    a_snapshot_lists_every_live_process_of_its_runtime_across_windows,
    |rt: &Runtime| {
        let other = Runtime::builder().threads(1).build().unwrap();
        let foreign = other
            .handle()
            .spawn(|mut c: Context<()>| async move { c.recv().await });
        let h = rt.handle();
        rt.block_on(move |cx: Context<()>| async move {
            // More than two windows' worth.
            let n = 3 * otter::introspect::WINDOW;
            let pids: Vec<_> = (0..n)
                .map(|_| cx.spawn(|mut c: Context<()>| async move { c.recv().await }))
                .collect();
            cx.register("first", pids[0]).unwrap();
            let seen: Vec<_> = h.processes().collect();
            let ids: HashSet<ProcessId> = seen.iter().map(|i| i.pid).collect();
            assert_eq!(ids.len(), seen.len(), "a process listed twice");
            for p in &pids {
                assert!(ids.contains(&p.id()), "{p:?} missing");
            }
            assert!(ids.contains(&cx.pid().id()));
            assert!(!ids.contains(&foreign.id()), "another runtime's process");
            let first = seen.iter().find(|i| i.pid == pids[0].id()).unwrap();
            assert_eq!(first.name.as_deref(), Some("first"));
            assert!(seen.iter().filter(|i| i.name.is_some()).count() == 1);
            for p in pids {
                p.send(());
            }
        })
        .unwrap();
        foreign.send(());
    }
);

rt_test!(
    the_runtime_counts_spawns_and_exits_by_reason,
    |rt: &Runtime| {
        let h = rt.handle();
        let before = h.runtime_info();
        rt.block_on(move |mut cx: Context<Down>| async move {
            for _ in 0..10 {
                cx.spawn_monitor(|_: Context<()>| async {});
            }
            for _ in 0..3 {
                cx.spawn_monitor(|_: Context<()>| async { panic!("on purpose") });
            }
            for _ in 0..2 {
                let (p, _) = cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
                cx.exit(p, ExitReason::Kill);
            }
            for _ in 0..15 {
                cx.recv().await;
            }
        })
        .unwrap();
        // Spawns and exits reach the workers' counters at their next flush (at the
        // latest when they look for work: `otter::introspect`, rule 6).
        let counted = |f: fn(&otter::introspect::RuntimeInfo) -> u64, n: u64| {
            eventually("the counts are flushed", LIMIT, || {
                f(&h.runtime_info()) - f(&before) >= n
            });
        };
        // The root process and its 15 children; the root's exit is counted too. (A
        // spare thread may run some of them: a panic's report can hold a worker long
        // enough for the watchdog to start one.)
        counted(|i| i.spawns, 16);
        counted(|i| i.exits.normal, 11);
        counted(|i| i.exits.panic, 3);
        counted(|i| i.exits.killed, 2);
        let after = h.runtime_info();
        assert_eq!(after.spawns - before.spawns, 16);
        assert_eq!(after.exits.normal - before.exits.normal, 11);
        assert_eq!(after.exits.panic - before.exits.panic, 3);
        assert_eq!(after.exits.killed - before.exits.killed, 2);
        assert_eq!(after.processes, after.spawns - after.exits.total());
        assert_eq!(after.processes, before.processes);
        assert!(after.workers.iter().filter(|w| !w.spare).count() >= 1);
        assert!(after.workers.iter().map(|w| w.polls).sum::<u64>() >= 16);
        assert!(after.uptime >= before.uptime);
    }
);

rt_test!(
    sends_to_an_exited_pid_are_counted_on_the_senders_worker,
    |rt: &Runtime| {
        let h = rt.handle();
        let before = h.runtime_info().dead_sends;
        rt.block_on(move |mut cx: Context<Down>| async move {
            let (gone, _) = cx.spawn_monitor(|_: Context<u8>| async {});
            cx.recv().await;
            for i in 0..5 {
                gone.send(i);
            }
            assert!(gone.try_send(9).is_err());
        })
        .unwrap();
        eventually("the count is flushed", LIMIT, || {
            h.runtime_info().dead_sends - before >= 6
        });
        assert_eq!(h.runtime_info().dead_sends - before, 6);
    }
);

/// A machine with one state that answers nothing.
struct Still;

impl otter::statem::StateMachine for Still {
    type Args = ();
    type State = ();
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();
    type Internal = ();

    async fn init(
        _: (),
        _: &mut otter::statem::StatemContext<Self>,
    ) -> Result<(Self, otter::statem::Transition<Self>), ExitReason> {
        Ok((Still, otter::statem::Transition::next(())))
    }

    async fn handle_event(
        &mut self,
        _: &(),
        _: otter::statem::Event<Self>,
        _: &mut otter::statem::StatemContext<Self>,
    ) -> otter::statem::Transition<Self> {
        otter::statem::Transition::keep()
    }
}

rt_test!(
    a_machine_an_acceptor_and_a_connection_show_their_kind,
    |rt: &Runtime| {
        use otter::net::{TcpStream, start_acceptor_pool};
        use otter::statem::StateMachine;
        rt.block_on(|mut cx: Context<u8>| async move {
            let machine = Still::start_link(&cx, ()).await.unwrap();
            assert_eq!(cx.process_info(machine.id()).unwrap().kind, Kind::Statem);
            let me = cx.pid();
            let pool = start_acceptor_pool(
                &cx,
                "127.0.0.1:0".parse().unwrap(),
                1,
                move |_: Context<()>, mut s: TcpStream| async move {
                    me.send(1);
                    // Holds the connection until the client closes it.
                    let mut b = [0u8; 1];
                    let _ = s.read(&mut b).await;
                },
            )
            .await
            .unwrap();
            let sup = cx.process_info(pool.supervisor().id()).unwrap();
            assert_eq!(sup.kind, Kind::Supervisor);
            let client = TcpStream::connect(pool.local_addr()).await.unwrap();
            assert_eq!(cx.recv().await, 1);
            let all: Vec<_> = cx.handle().processes().collect();
            let acceptor = all.iter().find(|i| i.kind == Kind::Acceptor).unwrap();
            assert_eq!(acceptor.supervisor, Some(sup.pid));
            let conn = all.iter().find(|i| i.kind == Kind::Connection).unwrap();
            assert_eq!(conn.parent, Some(acceptor.pid));
            assert!(conn.links.contains(&acceptor.pid));
            drop(client);
        })
        .unwrap();
    }
);

rt_test!(
    the_runtime_counts_its_timers_and_its_reactor_events,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<u32>| async move {
            let before = h.runtime_info();
            let far = cx.send_after(cx.pid(), 1, Duration::from_secs(3600));
            cx.send_after(cx.pid(), 2, Duration::from_millis(1));
            assert_eq!(cx.recv().await, 2);
            let after = h.runtime_info();
            assert!(after.timers >= 1, "the far timer is armed: {after:?}");
            assert!(after.timers_fired > before.timers_fired);
            assert!(far.cancel());
            // A socket's readiness goes through the reactor.
            let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = listener.local_addr().unwrap();
            let client = std::thread::spawn(move || std::net::TcpStream::connect(addr).unwrap());
            let _conn = listener.accept().await.unwrap();
            client.join().unwrap();
            assert!(h.runtime_info().reactor_events > before.reactor_events);
        })
        .unwrap();
    }
);
