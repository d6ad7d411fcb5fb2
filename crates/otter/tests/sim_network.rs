//! Rules of the simulated network (`otter::sim`, `io/network.rs`): TCP between the
//! nodes of a simulation, with `otter::net`'s own sockets; bytes arrive after a delay,
//! in order, within a window; a close reads as the end of the stream; a partition
//! holds what crosses it until the heal and refuses connects; a reset fails both ends;
//! a crashed node's sockets close and it can be restarted; UDP's datagrams arrive
//! after a delay or are lost (at the set rate, or across a cut); one seed, one trace.

use std::net::SocketAddr;
use std::time::Duration;

use otter::Context;
use otter::net::{TcpListener, TcpStream, UdpSocket};
use otter::sim::{NodeId, Simulation};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// An echo server on node `at`, port 7000: each connection's bytes back, until it
/// closes. Listening when this returns.
fn echo_server(sim: &mut Simulation, at: NodeId) {
    sim.spawn_on(at, |cx: Context<()>| async move {
        let l = TcpListener::bind(addr("0.0.0.0:7000")).unwrap();
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            cx.spawn(move |_: Context<()>| async move {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    sim.run_until_idle();
}

#[test]
fn an_echo_between_two_nodes_takes_the_links_delays() {
    let mut sim = Simulation::new(1);
    let b = sim.add_node("b");
    sim.set_latency(Duration::from_millis(10), Duration::from_millis(10));
    echo_server(&mut sim, b);
    let (got, took, local, peer) = sim
        .block_on(|_: Context<()>| async move {
            let t0 = otter::time::now();
            let mut s = TcpStream::connect_host("b:7000").await.unwrap();
            s.write_all(b"hello").await.unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await.unwrap();
            (
                buf,
                otter::time::now() - t0,
                s.local_addr().unwrap(),
                s.peer_addr().unwrap(),
            )
        })
        .unwrap();
    assert_eq!(&got, b"hello");
    // There and back: two delays of 10 ms (the accept travels with the first bytes).
    assert_eq!(took, Duration::from_millis(20));
    assert_eq!(local.ip().to_string(), "10.0.0.1");
    assert_eq!(peer, addr("10.0.0.2:7000"));
}

#[test]
fn a_stream_arrives_whole_and_in_order_through_its_window_then_ends() {
    let mut sim = Simulation::new(2);
    let b = sim.add_node("b");
    const LEN: usize = 1 << 20; // Sixteen windows.
    sim.spawn_on(b, |_: Context<()>| async move {
        let l = TcpListener::bind(addr("0.0.0.0:7001")).unwrap();
        let (mut s, _) = l.accept().await.unwrap();
        let data: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
        s.write_all(&data).await.unwrap();
        // Dropped: the close follows the bytes.
    });
    sim.run_until_idle();
    let got = sim
        .block_on(|_: Context<()>| async move {
            let mut s = TcpStream::connect(addr("10.0.0.2:7001")).await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 7000];
            loop {
                match s.read(&mut buf).await.unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
        })
        .unwrap();
    assert_eq!(got.len(), LEN);
    assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
}

#[test]
fn a_partition_holds_what_crosses_it_until_the_heal_and_refuses_connects() {
    let mut sim = Simulation::new(3);
    let b = sim.add_node("b");
    let c = sim.add_node("c");
    echo_server(&mut sim, b);
    let client = sim.spawn(|mut cx: Context<&'static str>| async move {
        let mut s = TcpStream::connect_host("b:7000").await.unwrap();
        s.write_all(b"1").await.unwrap();
        let mut one = [0u8; 1];
        s.read_exact(&mut one).await.unwrap();
        // Cut now (the test's cue), then write: held.
        cx.recv().await;
        s.write_all(b"2").await.unwrap();
        s.read_exact(&mut one).await.unwrap();
        assert_eq!(&one, b"2");
    });
    sim.advance(Duration::from_secs(1));
    sim.partition(NodeId(0), b);
    client.send("go");
    sim.advance(Duration::from_secs(60));
    assert!(client.is_alive(), "nothing crossed the cut");
    // A connect across it fails; one to another node does not.
    let r = sim
        .block_on(|_: Context<()>| async move {
            let cut = TcpStream::connect_host("b:7000").await.map(|_| ());
            let other = TcpStream::connect_host("c:7000").await.map(|_| ());
            (cut.unwrap_err().kind(), other.unwrap_err().kind())
        })
        .unwrap();
    assert_eq!(
        r,
        (
            std::io::ErrorKind::TimedOut,
            std::io::ErrorKind::ConnectionRefused
        )
    );
    let _ = c;
    sim.heal(NodeId(0), b);
    sim.advance(Duration::from_secs(1));
    assert!(
        !client.is_alive(),
        "the held byte went through after the heal"
    );
}

#[test]
fn a_reset_fails_both_ends() {
    let mut sim = Simulation::new(4);
    let b = sim.add_node("b");
    echo_server(&mut sim, b);
    let client = sim.spawn(|mut cx: Context<()>| async move {
        let mut s = TcpStream::connect_host("b:7000").await.unwrap();
        s.write_all(b"x").await.unwrap();
        let mut one = [0u8; 1];
        s.read_exact(&mut one).await.unwrap();
        cx.recv().await;
        let read = s.read(&mut one).await.unwrap_err().kind();
        let write = s.write(b"y").await.unwrap_err().kind();
        assert_eq!(read, std::io::ErrorKind::ConnectionReset);
        assert_eq!(write, std::io::ErrorKind::BrokenPipe);
    });
    sim.advance(Duration::from_secs(1));
    sim.reset(NodeId(0), b);
    client.send(());
    sim.advance(Duration::from_secs(1));
    assert!(!client.is_alive());
    assert_eq!(sim.processes().len(), 1, "the echo server's acceptor only");
}

#[test]
fn a_crashed_node_closes_its_sockets_and_restarts_empty() {
    let mut sim = Simulation::new(5);
    let b = sim.add_node("b");
    echo_server(&mut sim, b);
    let client = sim.spawn(|mut cx: Context<()>| async move {
        let mut s = TcpStream::connect_host("b:7000").await.unwrap();
        s.write_all(b"x").await.unwrap();
        let mut one = [0u8; 1];
        s.read_exact(&mut one).await.unwrap();
        cx.recv().await;
        assert_eq!(s.read(&mut one).await.unwrap(), 0, "the crash closed it");
        let again = TcpStream::connect_host("b:7000").await.map(|_| ());
        assert_eq!(
            again.unwrap_err().kind(),
            std::io::ErrorKind::ConnectionRefused
        );
        cx.recv().await;
        let mut s = TcpStream::connect_host("b:7000").await.unwrap();
        s.write_all(b"z").await.unwrap();
        s.read_exact(&mut one).await.unwrap();
        assert_eq!(&one, b"z");
    });
    sim.advance(Duration::from_secs(1));
    sim.crash(b);
    assert!(!sim.is_up(b));
    client.send(());
    sim.advance(Duration::from_secs(1));
    assert!(client.is_alive(), "waiting for the restart");
    sim.restart(b);
    echo_server(&mut sim, b);
    sim.advance(Duration::from_millis(100));
    client.send(());
    sim.advance(Duration::from_secs(1));
    assert!(!client.is_alive());
}

#[test]
fn a_networked_run_replays_from_its_seed() {
    for seed in 0..10 {
        otter::sim::check(seed, |sim| {
            let b = sim.add_node("b");
            echo_server(sim, b);
            sim.block_on(|cx: Context<()>| async move {
                let me = cx.pid();
                let _ = me;
                let mut clients = Vec::new();
                for i in 0..4u8 {
                    clients.push(cx.spawn_link(move |_: Context<()>| async move {
                        let mut s = TcpStream::connect_host("b:7000").await.unwrap();
                        for j in 0..5u8 {
                            s.write_all(&[i, j]).await.unwrap();
                            let mut two = [0u8; 2];
                            s.read_exact(&mut two).await.unwrap();
                            assert_eq!(two, [i, j]);
                        }
                    }));
                }
                let _ = clients;
                cx.sleep(Duration::from_secs(1)).await;
            })
            .unwrap();
        });
    }
}

#[test]
fn datagrams_arrive_or_are_lost_at_the_set_rate_and_across_a_cut() {
    let mut sim = Simulation::new(6);
    let b = sim.add_node("b");
    sim.set_loss(0.25);
    let (tx, rx) = std::sync::mpsc::channel();
    // Counts what arrives until a second passes with nothing, then says so.
    let receiver = move |tx: std::sync::mpsc::Sender<(usize, bool)>| {
        move |_: Context<()>| async move {
            let s = UdpSocket::bind(addr("0.0.0.0:9000")).unwrap();
            let (mut n, mut ordered, mut last) = (0, true, 0u32);
            let mut buf = [0u8; 4];
            while let Ok(Ok((4, _))) =
                otter::timeout(Duration::from_secs(1), s.recv_from(&mut buf)).await
            {
                let seq = u32::from_be_bytes(buf);
                ordered &= seq >= last;
                last = seq;
                n += 1;
            }
            tx.send((n, ordered)).unwrap();
        }
    };
    let to = SocketAddr::from((sim.node_ip(b), 9000));
    let sender = move |_: Context<()>| async move {
        let s = UdpSocket::bind(addr("0.0.0.0:0")).unwrap();
        for seq in 0..1000u32 {
            s.send_to(&seq.to_be_bytes(), to).await.unwrap();
        }
    };
    sim.spawn_on(b, receiver(tx.clone()));
    sim.run_until_idle();
    sim.spawn(sender);
    sim.advance(Duration::from_secs(5));
    let (n, ordered) = rx.try_recv().unwrap();
    // A quarter lost, give or take: 750 expected, a standard deviation of 14.
    assert!((650..850).contains(&n), "{n} of 1000 arrived");
    assert!(
        !ordered,
        "each datagram's own delay lets some overtake others"
    );
    // Across a cut, nothing.
    sim.set_loss(0.0);
    sim.partition(NodeId(0), b);
    sim.spawn_on(b, receiver(tx));
    sim.run_until_idle();
    sim.spawn(sender);
    sim.advance(Duration::from_secs(5));
    assert_eq!(rx.try_recv().unwrap().0, 0);
}
