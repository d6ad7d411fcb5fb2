//! Bad input from a peer after the handshake: garbage, a frame cut short, a length
//! beyond the limit, a control message that is not one, and a flood. Each test plays
//! the peer by hand (the real handshake, then raw bytes) against a real node on
//! 127.0.0.1, and checks that the connection is dropped (its links fire
//! `Noconnection`) and that the node goes on (a second peer connects and is served).

use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde::Deserialize;

use crate::dist::connection::frame;
use crate::dist::control::Control;
use crate::dist::etf::{Atom, ExternalPid, Term};
use crate::dist::{BadTerm, Node, epmd, handshake};
use crate::net::TcpStream;
use crate::{Context, Exit, ExitReason, Pid, Runtime};

pub(in crate::dist) const WAIT: Duration = Duration::from_secs(20);

fn host() -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    h.trim()
        .split('.')
        .next()
        .unwrap_or("localhost")
        .to_string()
}

pub(in crate::dist) fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}_{}_{}@{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        host()
    )
}

#[derive(Debug, Deserialize)]
pub(in crate::dist) enum In {
    #[serde(skip)]
    Exit(Exit),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
    #[serde(untagged)]
    Term(Term),
}

impl From<Exit> for In {
    fn from(e: Exit) -> In {
        In::Exit(e)
    }
}

impl From<BadTerm> for In {
    fn from(b: BadTerm) -> In {
        In::Bad(b)
    }
}

/// Reads one frame's control term and payload (ticks skipped).
pub(in crate::dist) async fn read_frame(s: &mut TcpStream) -> (Term, Option<Term>) {
    loop {
        let mut len = [0u8; 4];
        s.read_exact(&mut len)
            .await
            .expect("the connection stays up");
        let len = u32::from_be_bytes(len) as usize;
        if len == 0 {
            continue;
        }
        let mut buf = vec![0u8; len];
        s.read_exact(&mut buf)
            .await
            .expect("the connection stays up");
        assert_eq!(buf[0], b'p');
        let (control, used) = Term::decode_prefix(&buf[1..]).unwrap();
        let rest = &buf[1 + used..];
        let payload = (!rest.is_empty()).then(|| Term::decode(rest).unwrap());
        return (control, payload);
    }
}

/// A node of a unique name with the cookie `secret`, on `rt`.
pub(in crate::dist) fn test_node(rt: &Runtime) -> Node {
    Node::builder(unique("otter"))
        .cookie("secret")
        .start(&rt.handle())
        .unwrap()
}

/// A node with a probe registered as `inbox` that traps exits and forwards all.
fn node_with_probe(rt: &Runtime) -> (Node, Pid<In>, Receiver<In>) {
    let node = test_node(rt);
    let (tx, rx) = channel();
    let pid = rt.handle().spawn(move |mut cx: Context<In>| async move {
        cx.trap_exit(true);
        loop {
            if tx.send(cx.recv().await).is_err() {
                return;
            }
        }
    });
    node.register("inbox", pid);
    (node, pid, rx)
}

/// A peer named `PREFIX_..@host` with `creation`: connects to the node `target`, runs
/// the real handshake, and returns the socket and a pid of the peer's.
pub(in crate::dist) async fn handshaken(
    target: &str,
    prefix: &str,
    creation: u32,
) -> (TcpStream, ExternalPid) {
    let (alive, h) = target.split_once('@').unwrap();
    let port = epmd::port_please(h, alive).unwrap().port;
    let name = unique(prefix);
    let mut s = TcpStream::connect(([127, 0, 0, 1], port).into())
        .await
        .unwrap();
    let local = handshake::LocalNode::new(&name, creation, true, "secret");
    handshake::connect(&mut s, &local, target).await.unwrap();
    let pid = ExternalPid {
        node: Atom::new(&name),
        id: 1,
        serial: 0,
        creation,
    };
    (s, pid)
}

/// Keeps a peer's connection open until the node closes it (or the runtime ends).
pub(in crate::dist) async fn hold_open(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(1..) = s.read(&mut buf).await {}
}

/// Plays a peer: the handshake, then `bytes` (built with the peer's pid), then waits
/// until the node closes the socket.
fn peer(rt: &Runtime, node: &Node, bytes: impl FnOnce(&ExternalPid) -> Vec<u8> + Send + 'static) {
    let target = node.name().to_string();
    let (tx, rx) = channel();
    rt.handle().spawn(move |_: Context<()>| async move {
        let (mut s, me) = handshaken(&target, "raw", 7).await;
        s.write_all(&bytes(&me)).await.unwrap();
        hold_open(&mut s).await;
        tx.send(()).unwrap();
    });
    rx.recv_timeout(WAIT)
        .expect("the node closes the connection");
}

/// A LINK from the peer's pid to the probe, then `rest`.
fn link_then(
    node: &Node,
    probe: Pid<In>,
    rest: Vec<u8>,
) -> impl FnOnce(&ExternalPid) -> Vec<u8> + Send + 'static {
    let to = node.shared.external_pid(probe.raw);
    move |me| {
        let mut b = frame::<()>(
            &Control::Link {
                from: me.clone(),
                to,
            },
            None,
        )
        .unwrap();
        b.extend_from_slice(&rest);
        b
    }
}

/// The probe gets `Exit { reason: Noconnection }` from the peer's pid.
fn expect_noconnection(rx: &Receiver<In>) {
    match rx.recv_timeout(WAIT).expect("an exit signal") {
        In::Exit(e) => assert_eq!(e.reason, ExitReason::Noconnection),
        other => panic!("{other:?}"),
    }
}

/// After a bad peer, another peer is still served: a message to `inbox` arrives.
fn node_goes_on(rt: &Runtime, node: &Node, rx: &Receiver<In>) {
    let target = node.name().to_string();
    rt.handle().spawn(move |_: Context<()>| async move {
        let (mut s, from) = handshaken(&target, "good", 9).await;
        let f = frame(
            &Control::RegSend {
                from,
                to: Atom::new("inbox"),
            },
            Some(&Atom::new("still_here")),
        )
        .unwrap();
        s.write_all(&f).await.unwrap();
        // Keep the connection (the runtime's end closes it).
        hold_open(&mut s).await;
    });
    match rx.recv_timeout(WAIT).expect("the node still delivers") {
        In::Term(t) => assert_eq!(t, Term::atom("still_here")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_after_the_handshake_drops_the_connection_and_fires_noconnection() {
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    peer(
        &rt,
        &node,
        link_then(&node, probe, b"\x00\x00\x00\x05hello".to_vec()),
    );
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_peer_that_disconnects_mid_frame_is_dropped() {
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    // The peer announces 100 bytes, sends 10, and closes (its process ends).
    let to = node.shared.external_pid(probe.raw);
    let target = node.name().to_string();
    let (tx, done) = channel();
    rt.handle().spawn(move |_: Context<()>| async move {
        let (mut s, me) = handshaken(&target, "cut", 3).await;
        let mut b = frame::<()>(&Control::Link { from: me, to }, None).unwrap();
        b.extend_from_slice(&[0, 0, 0, 100, b'p', 131, 104, 3]);
        s.write_all(&b).await.unwrap();
        tx.send(()).unwrap();
    });
    done.recv_timeout(WAIT).unwrap();
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_frame_cut_short_after_large_frames_is_dropped_and_the_node_goes_on() {
    // Large frames grow the reader's buffer and it is kept (`pump.rs`): a frame cut
    // short in it is still a dropped connection, not a panic or a stale message.
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    let target = node.name().to_string();
    let to = node.shared.external_pid(probe.raw);
    let (tx, done) = channel();
    rt.handle().spawn(move |_: Context<()>| async move {
        let (mut s, me) = handshaken(&target, "big", 4).await;
        let mut b = frame::<()>(
            &Control::Link {
                from: me.clone(),
                to,
            },
            None,
        )
        .unwrap();
        for i in 0..3u8 {
            let bin = Term::Binary(vec![i; 1 << 20]);
            let reg = Control::RegSend {
                from: me.clone(),
                to: Atom::new("inbox"),
            };
            b.extend_from_slice(&frame(&reg, Some(&bin)).unwrap());
        }
        let mut cut = frame(
            &Control::RegSend {
                from: me,
                to: Atom::new("inbox"),
            },
            Some(&Term::Binary(vec![9; 2 << 20])),
        )
        .unwrap();
        cut.truncate(100_000);
        b.extend_from_slice(&cut);
        s.write_all(&b).await.unwrap();
        tx.send(()).unwrap();
    });
    done.recv_timeout(WAIT).unwrap();
    for i in 0..3u8 {
        match rx
            .recv_timeout(WAIT)
            .expect("each whole frame is delivered")
        {
            In::Term(Term::Binary(b)) => assert!(b.len() == 1 << 20 && b.iter().all(|&x| x == i)),
            other => panic!("{other:?}"),
        }
    }
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_frame_longer_than_the_limit_is_refused() {
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    let huge = (crate::dist::connection::MAX_FRAME as u32 + 1)
        .to_be_bytes()
        .to_vec();
    peer(&rt, &node, link_then(&node, probe, huge));
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_control_message_that_is_not_a_tuple_drops_the_connection() {
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    let mut bad = vec![0, 0, 0, 0, b'p'];
    Term::atom("nonsense").encode(&mut bad);
    let len = (bad.len() - 4) as u32;
    bad[..4].copy_from_slice(&len.to_be_bytes());
    peer(&rt, &node, link_then(&node, probe, bad));
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_payload_that_is_not_a_term_drops_the_connection() {
    let rt = Runtime::new();
    let (node, probe, rx) = node_with_probe(&rt);
    let to = node.shared.external_pid(probe.raw);
    let mut bad = vec![0, 0, 0, 0, b'p'];
    Control::Send { to }.encode().encode(&mut bad);
    bad.extend_from_slice(&[131, 108, 0xff, 0xff, 0xff, 0xff]);
    let len = (bad.len() - 4) as u32;
    bad[..4].copy_from_slice(&len.to_be_bytes());
    peer(&rt, &node, link_then(&node, probe, bad));
    expect_noconnection(&rx);
    node_goes_on(&rt, &node, &rx);
}

#[test]
fn a_flood_of_messages_is_delivered_in_order_and_the_node_goes_on() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let (node, probe, rx) = node_with_probe(&rt);
    let to = node.shared.external_pid(probe.raw);
    const N: i64 = 20_000;
    // The probe's pid went out in no message here: export it as the node does when it
    // encodes a pid.
    node.shared
        .export(crate::dist::node::exported::<In>(probe.raw));
    let target = node.name().to_string();
    rt.handle().spawn(move |_: Context<()>| async move {
        let (mut s, _) = handshaken(&target, "flood", 5).await;
        let mut batch = Vec::new();
        for i in 0..N {
            batch.extend_from_slice(&frame(&Control::Send { to: to.clone() }, Some(&i)).unwrap());
            if batch.len() > 64 << 10 {
                s.write_all(&batch).await.unwrap();
                batch.clear();
            }
        }
        s.write_all(&batch).await.unwrap();
        // Keep the connection (the runtime's end closes it).
        hold_open(&mut s).await;
    });
    for i in 0..N {
        match rx.recv_timeout(WAIT).expect("every message of the flood") {
            In::Term(Term::Int(n)) => assert_eq!(n, i),
            other => panic!("{other:?}"),
        }
    }
    node_goes_on(&rt, &node, &rx);
}
