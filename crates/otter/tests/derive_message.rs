//! `#[derive(otter::Message)]`: a message enum with no hand-written impl receives
//! trapped exits, monitors' `Down`s (and `demonitor_flush` removes them), and an
//! active socket's messages, on 1 and on N workers. The derive's compile errors are
//! `compile_fail` doctests in `otter-macros` and unit tests of its messages.

#[path = "support/rt.rs"]
mod support;

use std::io::Write;

use otter::net::{Active, Tcp, TcpListener};
use otter::{Context, Down, Exit, ExitReason, Runtime};

#[derive(otter::Message, Debug)]
enum Msg {
    Work(u32),
    Exit(Exit),
    Down(Down),
    Tcp(Tcp),
}

/// A struct variant and a path type are found too; `#[otter(skip)]` leaves one out.
#[derive(otter::Message, Debug)]
enum Named {
    Gone {
        down: otter::Down,
    },
    #[otter(skip)]
    #[allow(dead_code)]
    Kept(Down),
}

/// A generic enum: the impls carry its parameters.
#[derive(otter::Message, Debug)]
enum Generic<T: Send + 'static> {
    Item(T),
    Exit(Exit),
}

rt_test!(a_derived_message_enum_traps_exits, |rt: &Runtime| {
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        cx.trap_exit(true);
        cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
        match cx.recv().await {
            Msg::Exit(e) => e.reason,
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(r.unwrap(), ExitReason::Shutdown);
    let r = rt.block_on(|mut cx: Context<Generic<String>>| async move {
        cx.trap_exit(true);
        // Sent before the child exists: on several workers the child may exit before
        // a send that followed its spawn, and two senders' messages have no order.
        cx.pid().send(Generic::Item("first".to_string()));
        cx.spawn_link(|_: Context<()>| async { ExitReason::Kill });
        let Generic::Item(s) = cx.recv().await else {
            panic!("the item is first")
        };
        match cx.recv().await {
            Generic::Exit(e) => (s, e.reason),
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(r.unwrap(), ("first".to_string(), ExitReason::Kill));
});

rt_test!(
    a_derived_message_enum_receives_downs_from_each_monitor,
    |rt: &Runtime| {
        const N: usize = 16;
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let mut refs = Vec::new();
            for i in 0..N {
                let child = cx.spawn(move |mut c: Context<()>| async move {
                    c.recv().await;
                    if i % 2 == 0 {
                        ExitReason::Normal
                    } else {
                        ExitReason::Shutdown
                    }
                });
                refs.push((cx.monitor(child), child));
            }
            for (_, child) in &refs {
                child.send(());
            }
            let mut shutdowns = 0;
            for _ in 0..N {
                let Msg::Down(d) = cx.recv().await else {
                    panic!("only Downs are sent")
                };
                assert!(refs.iter().any(|(m, _)| *m == d.reference));
                shutdowns += usize::from(d.reason == ExitReason::Shutdown);
            }
            shutdowns
        });
        assert_eq!(r.unwrap(), N / 2);
        let r = rt.block_on(|mut cx: Context<Named>| async move {
            let child = cx.spawn(|_: Context<()>| async {});
            cx.monitor(child);
            let Named::Gone { down } = cx.recv().await else {
                panic!("the Down is Gone")
            };
            down.pid == child.id()
        });
        assert!(r.unwrap());
    }
);

rt_test!(
    demonitor_flush_removes_a_fired_down_from_a_derived_enum,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let child = cx.spawn(move |_: Context<()>| async move {
                me.send(Msg::Work(1));
            });
            let m = cx.monitor(child);
            let Msg::Work(1) = cx.recv().await else {
                panic!("the work is first")
            };
            // Once the child is gone its `Down` is in the mailbox (`Context::demonitor`).
            while child.is_alive() {
                cx.yield_now().await;
            }
            let active = cx.demonitor_flush(m);
            cx.pid().send(Msg::Work(2));
            (active, cx.recv().await)
        });
        let (active, next) = r.unwrap();
        assert!(!active, "the monitor had fired");
        assert!(
            matches!(next, Msg::Work(2)),
            "the Down is flushed: {next:?}"
        );
    }
);

rt_test!(
    an_active_socket_sends_its_data_to_a_derived_enum,
    |rt: &Runtime| {
        let got = rt.block_on(|cx: Context<Msg>| async move {
            let l = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = l.local_addr().unwrap();
            let client = std::thread::spawn(move || {
                std::net::TcpStream::connect(addr)
                    .unwrap()
                    .write_all(b"hi")
                    .unwrap();
            });
            let (s, _) = l.accept().await.unwrap();
            let mut cx = cx;
            let s = s.into_active(&cx, Active::Once);
            let mut data = Vec::new();
            while data.len() < 2 {
                match cx.recv().await {
                    Msg::Tcp(Tcp::Data(_, d)) => {
                        data.extend(d);
                        s.set_active(Active::Once);
                    }
                    Msg::Tcp(Tcp::Closed(_)) => break,
                    other => panic!("{other:?}"),
                }
            }
            client.join().unwrap();
            data
        });
        assert_eq!(got.unwrap(), b"hi");
    }
);

/// With distribution, a node's messages: `Node::register` takes a `Pid<M>` with
/// `M: From<BadTerm>`, `Node::monitor_node` one with `M: From<NodeEvent>`.
#[cfg(feature = "dist")]
#[test]
fn a_derived_enum_takes_a_nodes_messages() {
    use otter::dist::{BadTerm, NodeEvent};
    #[derive(otter::Message, Debug)]
    #[allow(dead_code)] // built by the impls under test, read by `Debug`
    enum FromNodes {
        Bad(BadTerm),
        Node(NodeEvent),
    }
    fn takes<M: From<BadTerm> + From<NodeEvent>>(b: BadTerm) -> M {
        M::from(b)
    }
    let b = BadTerm {
        term: otter::dist::etf::Term::atom("x"),
        error: "e".into(),
    };
    assert!(matches!(takes::<FromNodes>(b), FromNodes::Bad(_)));
}
