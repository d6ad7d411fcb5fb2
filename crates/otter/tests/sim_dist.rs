//! Rules of the distribution under simulation (`otter::sim`, `otter::dist`): otter
//! nodes on a simulation's nodes find each other through its port mappers and run the
//! real handshake, frames and ticks over its network; messages and pids cross in
//! order; a partition that outlasts the tick time ends the connection, and links and
//! monitors across it hear `Noconnection`; a crashed node is `Noconnection` too, and
//! once restarted it is reached again; every run replays from its seed.

use std::time::Duration;

use otter::dist::{BadTerm, Node, NodeEvent};
use otter::sim::{NodeId, Simulation};
use otter::{Context, Down, ExitReason, Pid};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
enum Msg {
    Hello(Pid<Msg>),
    Number(u64),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
    #[serde(skip)]
    Down(Down),
    #[serde(skip)]
    Node(NodeEvent),
}

impl From<BadTerm> for Msg {
    fn from(b: BadTerm) -> Msg {
        Msg::Bad(b)
    }
}
impl From<Down> for Msg {
    fn from(d: Down) -> Msg {
        Msg::Down(d)
    }
}
impl From<NodeEvent> for Msg {
    fn from(e: NodeEvent) -> Msg {
        Msg::Node(e)
    }
}

/// The otter node `alive@<the simulated node's name>` on `at`, ticking every
/// `tick` (OTP's `net_ticktime`).
fn start(sim: &Simulation, at: NodeId, alive: &str, tick: Duration) -> Node {
    Node::builder(format!("{alive}@{}", sim.node_name(at)))
        .cookie("secret")
        .tick_time(tick)
        .start(&sim.handle_on(at))
        .expect("the node starts on the simulated network")
}

/// A process on `at` registered for other nodes as `inbox`: answers each `Hello` with
/// its own pid, then ten numbers, in order.
fn inbox(sim: &mut Simulation, at: NodeId, node: &Node) -> Pid<Msg> {
    let pid = sim.spawn_on(at, |mut cx: Context<Msg>| async move {
        loop {
            if let Msg::Hello(back) = cx.recv().await {
                back.send(Msg::Hello(cx.pid()));
                for i in 0..10 {
                    back.send(Msg::Number(i));
                }
            }
        }
    });
    node.register("inbox", pid);
    sim.run_until_idle();
    pid
}

#[test]
fn two_nodes_shake_hands_and_exchange_messages_in_order_over_the_simulated_network() {
    let mut sim = Simulation::new(1);
    let b = sim.add_node("b");
    let x = start(&sim, NodeId(0), "x", Duration::from_secs(60));
    let y = start(&sim, b, "y", Duration::from_secs(60));
    inbox(&mut sim, b, &y);
    let x2 = x.clone();
    let got = sim
        .block_on(move |mut cx: Context<Msg>| async move {
            x2.connect("y@b").await.unwrap();
            x2.send_named(cx.pid(), "inbox", "y@b", &Msg::Hello(cx.pid()))
                .unwrap();
            let Msg::Hello(_) = cx.recv().await else {
                panic!("the inbox's pid first")
            };
            let mut got = Vec::new();
            for _ in 0..10 {
                match cx.recv().await {
                    Msg::Number(n) => got.push(n),
                    other => panic!("{other:?}"),
                }
            }
            got
        })
        .unwrap();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert_eq!(x.nodes(), vec!["y@b".to_string()]);
    assert_eq!(y.nodes(), vec!["x@node0".to_string()]);
    assert!(
        sim.elapsed() > Duration::ZERO,
        "the handshake took the network's time"
    );
}

#[test]
fn a_partition_past_the_tick_time_is_noconnection_and_the_heal_reconnects() {
    let mut sim = Simulation::new(2);
    let b = sim.add_node("b");
    let tick = Duration::from_secs(4);
    let x = start(&sim, NodeId(0), "x", tick);
    let y = start(&sim, b, "y", tick);
    inbox(&mut sim, b, &y);
    let x2 = x.clone();
    let watcher = sim.spawn(move |mut cx: Context<Msg>| async move {
        x2.connect("y@b").await.unwrap();
        x2.monitor_node(cx.pid(), "y@b");
        x2.send_named(cx.pid(), "inbox", "y@b", &Msg::Hello(cx.pid()))
            .unwrap();
        for _ in 0..11 {
            cx.recv().await;
        }
        match cx.recv().await {
            Msg::Node(NodeEvent::Down(n)) => assert_eq!(n, "y@b"),
            other => panic!("{other:?}"),
        }
    });
    sim.advance(Duration::from_secs(1));
    assert!(watcher.is_alive());
    sim.partition(NodeId(0), b);
    // OTP's rule: down after between 3/4 and 5/4 of the tick time without a word.
    sim.advance(tick * 3 / 4 - Duration::from_millis(10));
    assert!(watcher.is_alive(), "too early for the ticks to tell");
    sim.advance(tick);
    assert!(
        !watcher.is_alive(),
        "the node went down within the tick time"
    );
    assert!(x.nodes().is_empty() && y.nodes().is_empty());
    sim.heal(NodeId(0), b);
    let x2 = x.clone();
    let back = sim
        .block_on(move |_: Context<()>| async move { x2.connect("y@b").await })
        .unwrap();
    assert!(back.is_ok(), "{back:?}");
}

#[test]
fn a_crashed_node_is_noconnection_for_monitors_and_a_restart_is_reached_again() {
    let mut sim = Simulation::new(3);
    let b = sim.add_node("b");
    let x = start(&sim, NodeId(0), "x", Duration::from_secs(60));
    let y = start(&sim, b, "y", Duration::from_secs(60));
    inbox(&mut sim, b, &y);
    let x2 = x.clone();
    let watcher = sim.spawn(move |mut cx: Context<Msg>| async move {
        x2.send_named(cx.pid(), "inbox", "y@b", &Msg::Hello(cx.pid()))
            .unwrap();
        let Msg::Hello(remote) = cx.recv().await else {
            panic!("the inbox's pid")
        };
        let watch = cx.monitor(remote);
        x2.monitor_node(cx.pid(), "y@b");
        let (mut down, mut nodedown) = (None, false);
        while down.is_none() || !nodedown {
            match cx.recv().await {
                Msg::Number(_) => {}
                Msg::Down(d) if d.reference == watch => down = Some(d.reason),
                Msg::Node(NodeEvent::Down(n)) => nodedown = n == "y@b",
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(down, Some(ExitReason::Noconnection));
    });
    sim.advance(Duration::from_secs(1));
    assert!(watcher.is_alive());
    assert_eq!(x.nodes(), vec!["y@b".to_string()]);
    sim.crash(b);
    sim.advance(Duration::from_secs(1));
    assert!(
        !watcher.is_alive(),
        "the crash closed the connection: nodedown, and Noconnection for the monitor"
    );
    // The crashed node's handle outlives it here, as a leaked reference could: the
    // crash closed its sockets and its registration all the same.
    drop(y);
    sim.restart(b);
    let y = start(&sim, b, "y", Duration::from_secs(60));
    inbox(&mut sim, b, &y);
    let x2 = x.clone();
    let got = sim
        .block_on(move |mut cx: Context<Msg>| async move {
            x2.send_named(cx.pid(), "inbox", "y@b", &Msg::Hello(cx.pid()))
                .unwrap();
            cx.recv().await
        })
        .unwrap();
    assert!(matches!(got, Msg::Hello(_)), "{got:?}");
}

#[test]
fn a_distributed_run_replays_from_its_seed() {
    for seed in 0..10 {
        otter::sim::check(seed, |sim| {
            let b = sim.add_node("b");
            let x = start(sim, NodeId(0), "x", Duration::from_secs(5));
            let y = start(sim, b, "y", Duration::from_secs(5));
            inbox(sim, b, &y);
            sim.block_on(move |mut cx: Context<Msg>| async move {
                for _ in 0..3 {
                    x.send_named(cx.pid(), "inbox", "y@b", &Msg::Hello(cx.pid()))
                        .unwrap();
                    let Msg::Hello(_) = cx.recv().await else {
                        panic!("the inbox's pid")
                    };
                    for i in 0..10 {
                        match cx.recv().await {
                            Msg::Number(n) => assert_eq!(n, i),
                            other => panic!("{other:?}"),
                        }
                    }
                }
                cx.sleep(Duration::from_secs(20)).await;
            })
            .unwrap();
        });
    }
}
