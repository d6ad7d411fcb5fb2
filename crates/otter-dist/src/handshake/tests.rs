//! The handshake against itself, against scripted peers (bad cookies, missing
//! flags, garbage, truncation, the old `'n'` name) and against real Erlang nodes,
//! both directions.
//!
//! Sockets are real 127.0.0.1 `std` sockets, read and written blocking through
//! [`Blocking`] (the futures then never wait: [`block_on`] polls them on a thread).
//! The handshake over `otter::net` sockets inside a runtime is every distribution test
//! of `otter-otp`'s.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use super::*;
use crate::epmd;

#[path = "../../../otter/tests/support/erlang.rs"]
mod erlang;

/// A failure guard on blocking reads: a failed test instead of a hang.
const GUARD: Duration = Duration::from_secs(20);

/// A `std` socket as a futures-io stream whose calls block.
struct Blocking(TcpStream);

impl AsyncRead for Blocking {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.get_mut().0.read(buf))
    }
}

impl AsyncWrite for Blocking {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.get_mut().0.write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.get_mut().0.flush())
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.shutdown(std::net::Shutdown::Write))
    }
}

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future on this thread, parking while it waits.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

fn guarded(s: TcpStream) -> TcpStream {
    s.set_read_timeout(Some(GUARD)).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Two connected sockets: (initiator's, acceptor's).
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (guarded(a), guarded(b))
}

fn node(name: &str, cookie: &str) -> LocalNode {
    LocalNode::new(name, 7, true, cookie)
}

/// `connect` from `a` on one thread, `accept` at `b` on another (deciding `status`).
fn both(
    a: LocalNode,
    b: LocalNode,
    status: Status,
) -> (Result<Peer, HandshakeError>, Result<Peer, HandshakeError>) {
    let (sa, sb) = pair();
    let b_name = b.name.clone();
    let acceptor = std::thread::spawn(move || {
        let mut s = Blocking(sb);
        block_on(accept(&mut s, &b, |_| status))
    });
    let mut s = Blocking(sa);
    let ra = block_on(connect(&mut s, &a, &b_name));
    drop(s); // the acceptor may wait on us after a failure
    (ra, acceptor.join().unwrap())
}

/// A scripted peer's side: one message out, one in.
fn send(s: &mut TcpStream, m: &[u8]) {
    s.write_all(&(m.len() as u16).to_be_bytes()).unwrap();
    s.write_all(m).unwrap();
}

fn recv(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).unwrap();
    let mut m = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut m).unwrap();
    m
}

fn name_msg(
    tag: u8,
    flags: DistFlags,
    challenge: Option<u32>,
    creation: u32,
    name: &str,
) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&flags.bits().to_be_bytes());
    if let Some(c) = challenge {
        m.extend_from_slice(&c.to_be_bytes());
    }
    m.extend_from_slice(&creation.to_be_bytes());
    m.extend_from_slice(&(name.len() as u16).to_be_bytes());
    m.extend_from_slice(name.as_bytes());
    m
}

#[test]
#[cfg_attr(miri, ignore)]
fn otter_to_otter_with_the_same_cookie() {
    let a = LocalNode::new("a@h", 11, true, "secret");
    let b = LocalNode::new("b@h", 22, false, "secret");
    let (ra, rb) = both(a, b, Status::Ok);
    let (pa, pb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(
        pa,
        Peer {
            name: "b@h".into(),
            flags: DistFlags::ours(false).normalised(),
            creation: 22
        }
    );
    assert!(!pa.is_hidden());
    assert_eq!(pb.name, "a@h");
    assert_eq!(pb.creation, 11);
    assert!(pb.is_hidden());
}

#[test]
#[cfg_attr(miri, ignore)]
fn ok_simultaneous_goes_on_nok_and_not_allowed_stop() {
    let (ra, rb) = both(node("a@h", "c"), node("b@h", "c"), Status::OkSimultaneous);
    assert!(ra.is_ok() && rb.is_ok());
    for st in [Status::Nok, Status::NotAllowed] {
        let (ra, rb) = both(node("a@h", "c"), node("b@h", "c"), st);
        assert!(
            matches!(ra, Err(HandshakeError::Refused(s)) if s == st),
            "{ra:?}"
        );
        assert!(
            matches!(rb, Err(HandshakeError::Refused(s)) if s == st),
            "{rb:?}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn alive_goes_on_when_the_initiator_answers_true() {
    let (ra, rb) = both(node("a@h", "c"), node("b@h", "c"), Status::Alive);
    assert!(ra.is_ok() && rb.is_ok(), "{ra:?} {rb:?}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_wrong_cookie_is_refused_by_the_acceptor_without_an_ack() {
    let (ra, rb) = both(node("a@h", "wrong"), node("b@h", "secret"), Status::Ok);
    assert!(matches!(rb, Err(HandshakeError::BadCookie)), "{rb:?}");
    assert!(matches!(ra, Err(HandshakeError::CookieRejected)), "{ra:?}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_wrong_ack_is_refused_by_the_initiator() {
    // An acceptor that takes any digest and acks with another cookie.
    let (sa, mut sb) = pair();
    let peer = std::thread::spawn(move || {
        recv(&mut sb);
        send(&mut sb, b"sok");
        send(&mut sb, &name_msg(b'N', DistFlags::OURS, Some(5), 1, "b@h"));
        let r = recv(&mut sb);
        let ch_a = u32::from_be_bytes(r[1..5].try_into().unwrap());
        let mut ack = vec![b'a'];
        ack.extend_from_slice(&digest("other", ch_a));
        send(&mut sb, &ack);
        sb
    });
    let r = block_on(connect(&mut Blocking(sa), &node("a@h", "secret"), "b@h"));
    assert!(matches!(r, Err(HandshakeError::BadCookie)), "{r:?}");
    peer.join().unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_acceptor_must_be_the_node_asked_for() {
    let (sa, sb) = pair();
    let b = node("b@h", "c");
    let acceptor =
        std::thread::spawn(move || block_on(accept(&mut Blocking(sb), &b, |_| Status::Ok)));
    let r = block_on(connect(&mut Blocking(sa), &node("a@h", "c"), "z@h"));
    assert!(
        matches!(&r, Err(HandshakeError::WrongPeer { got, .. }) if got == "b@h"),
        "{r:?}"
    );
    assert!(acceptor.join().unwrap().is_err());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_peer_lacking_required_flags_is_refused_both_ways() {
    let lacking = DistFlags::from_bits(
        DistFlags::OURS.bits() & !DistFlags::V4_NC.bits() & !DistFlags::UNLINK_ID.bits(),
    );
    // As the initiator's peer (the acceptor).
    let (ra, rb) = both(
        node("a@h", "c"),
        LocalNode {
            flags: lacking,
            ..node("b@h", "c")
        },
        Status::Ok,
    );
    match ra {
        Err(e @ HandshakeError::MissingFlags(m)) => {
            assert_eq!(m, DistFlags::V4_NC | DistFlags::UNLINK_ID);
            assert!(e.to_string().contains("UNLINK_ID | V4_NC"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(rb.is_err());
    // As the acceptor's peer (the initiator): refused before any status.
    let (ra, rb) = both(
        LocalNode {
            flags: lacking,
            ..node("a@h", "c")
        },
        node("b@h", "c"),
        Status::Ok,
    );
    assert!(
        matches!(rb, Err(HandshakeError::MissingFlags(m)) if m == DistFlags::V4_NC | DistFlags::UNLINK_ID),
        "{rb:?}"
    );
    assert!(
        matches!(ra, Err(HandshakeError::Closed(Stage::Status))),
        "{ra:?}"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_mandatory_25_digest_stands_for_its_flags() {
    let digest_only = DistFlags::from_bits(
        DistFlags::OURS.bits() & !DistFlags::MANDATORY_25.bits() | DistFlags::HANDSHAKE_23.bits(),
    ) | DistFlags::MANDATORY_25_DIGEST;
    let (ra, rb) = both(
        LocalNode {
            flags: digest_only,
            ..node("a@h", "c")
        },
        node("b@h", "c"),
        Status::Ok,
    );
    assert!(ra.is_ok(), "{ra:?}");
    assert!(rb.unwrap().flags.contains(DistFlags::MANDATORY_25));
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_old_name_with_handshake_23_gets_the_complement_read() {
    let (mut sa, sb) = pair();
    let b = node("b@h", "c");
    let acceptor =
        std::thread::spawn(move || block_on(accept(&mut Blocking(sb), &b, |_| Status::Ok)));
    let mut n = vec![b'n', 0, 5];
    n.extend_from_slice(&(DistFlags::OURS.bits() as u32).to_be_bytes());
    n.extend_from_slice(b"a@h");
    send(&mut sa, &n);
    assert_eq!(recv(&mut sa), b"sok");
    let ch = recv(&mut sa);
    assert_eq!(ch[0], b'N');
    let ch_b = u32::from_be_bytes(ch[9..13].try_into().unwrap());
    let mut c = vec![b'c'];
    c.extend_from_slice(&((DistFlags::OURS.bits() >> 32) as u32).to_be_bytes());
    c.extend_from_slice(&99u32.to_be_bytes());
    send(&mut sa, &c);
    let mut r = vec![b'r'];
    r.extend_from_slice(&1234u32.to_be_bytes());
    r.extend_from_slice(&digest("c", ch_b));
    send(&mut sa, &r);
    let ack = recv(&mut sa);
    assert_eq!(&ack[..], &[&b"a"[..], &digest("c", 1234)].concat()[..]);
    let peer = acceptor.join().unwrap().unwrap();
    assert_eq!((peer.name.as_str(), peer.creation), ("a@h", 99));
    assert!(peer.flags.contains(DistFlags::V4_NC));
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_old_name_without_handshake_23_is_refused() {
    let (mut sa, sb) = pair();
    let b = node("b@h", "c");
    let acceptor =
        std::thread::spawn(move || block_on(accept(&mut Blocking(sb), &b, |_| Status::Ok)));
    let mut n = vec![b'n', 0, 5];
    n.extend_from_slice(
        &((DistFlags::OURS.bits() & !DistFlags::HANDSHAKE_23.bits()) as u32).to_be_bytes(),
    );
    n.extend_from_slice(b"a@h");
    send(&mut sa, &n);
    let r = acceptor.join().unwrap();
    assert!(matches!(r, Err(HandshakeError::OldHandshake)), "{r:?}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn over_tls_every_message_has_a_4_byte_length() {
    // Both sides framed as OTP's `inet_tls_dist` frames them.
    let (ra, rb) = both(
        node("a@h", "c").over_tls(),
        node("b@h", "c").over_tls(),
        Status::Ok,
    );
    assert!(ra.is_ok() && rb.is_ok(), "{ra:?} {rb:?}");
    // What the initiator sends first: a 4-byte length, then its name message.
    let (mut sa, sb) = pair();
    let a = node("a@h", "c").over_tls();
    let initiator = std::thread::spawn(move || {
        let _ = block_on(connect(&mut Blocking(sb), &a, "b@h"));
    });
    let mut len = [0u8; 4];
    sa.read_exact(&mut len).unwrap();
    let mut m = vec![0u8; u32::from_be_bytes(len) as usize];
    sa.read_exact(&mut m).unwrap();
    assert_eq!(m[0], b'N');
    assert!(m.ends_with(b"a@h"));
    drop(sa);
    initiator.join().unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_tls_hello_at_a_plain_acceptor_is_named() {
    let (mut sa, sb) = pair();
    let b = node("b@h", "c");
    let acceptor =
        std::thread::spawn(move || block_on(accept(&mut Blocking(sb), &b, |_| Status::Ok)));
    // A TLS record header (handshake, TLS 1.x) where a length should be.
    sa.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).unwrap();
    let r = acceptor.join().unwrap();
    assert!(matches!(r, Err(HandshakeError::PeerSpeaksTls)), "{r:?}");
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Runs `accept` and, separately, `connect` against a peer that writes `bytes` and
/// closes: both must fail, none panic.
fn both_fail_on(bytes: &[u8]) -> (HandshakeError, HandshakeError) {
    let run = |initiator: bool| {
        let (mut peer, ours) = pair();
        let bytes = bytes.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = peer.write_all(&bytes);
            let _ = peer.shutdown(std::net::Shutdown::Write);
            // Drain what we are sent until our side closes.
            let _ = std::io::copy(&mut peer, &mut std::io::sink());
        });
        let local = node("o@h", "c");
        let mut s = Blocking(ours);
        let r = if initiator {
            block_on(connect(&mut s, &local, "p@h"))
        } else {
            block_on(accept(&mut s, &local, |_| Status::Ok))
        };
        drop(s);
        writer.join().unwrap();
        r.expect_err("garbage accepted")
    };
    (run(true), run(false))
}

#[test]
#[cfg_attr(miri, ignore)]
fn garbage_is_an_error_never_a_panic() {
    let (c, a) = both_fail_on(b"\x00\x03xyz");
    assert!(
        matches!(
            c,
            HandshakeError::UnexpectedTag {
                stage: Stage::Status,
                tag: b'x'
            }
        ),
        "{c}"
    );
    assert!(
        matches!(
            a,
            HandshakeError::UnexpectedTag {
                stage: Stage::Name,
                tag: b'x'
            }
        ),
        "{a}"
    );
    let (c, a) = both_fail_on(b"\x00\x00");
    assert!(matches!(c, HandshakeError::Malformed(Stage::Status)), "{c}");
    assert!(matches!(a, HandshakeError::Malformed(Stage::Name)), "{a}");
    let (c, _) = both_fail_on(b"\x00\x06sweird");
    assert!(
        matches!(&c, HandshakeError::UnexpectedStatus(s) if s == "weird"),
        "{c}"
    );
    // A name message too short for its fields, and one whose name is not alive@host.
    let (_, a) = both_fail_on(b"\x00\x05N\x00\x00\x00\x00");
    assert!(matches!(a, HandshakeError::Malformed(Stage::Name)), "{a}");
    let mut bad_name = name_msg(b'N', DistFlags::OURS, None, 1, "nohost");
    bad_name.splice(0..0, (bad_name.len() as u16).to_be_bytes());
    let (_, a) = both_fail_on(&bad_name);
    assert!(matches!(a, HandshakeError::BadName(_)), "{a}");
    // Noise of every length, after a plausible start or not.
    for seed in 1..40u64 {
        let n = noise(seed, (seed as usize * 37) % 300);
        both_fail_on(&n);
        let mut framed = (n.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&n);
        both_fail_on(&framed);
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_stream_ending_mid_message_is_truncated() {
    // The length says 300, 4 bytes follow.
    let (c, a) = both_fail_on(b"\x01\x2csok!");
    assert!(matches!(c, HandshakeError::Truncated(Stage::Status)), "{c}");
    assert!(matches!(a, HandshakeError::Truncated(Stage::Name)), "{a}");
    let (c, a) = both_fail_on(b"\x00");
    assert!(matches!(c, HandshakeError::Truncated(Stage::Status)), "{c}");
    assert!(matches!(a, HandshakeError::Truncated(Stage::Name)), "{a}");
    let (c, a) = both_fail_on(b"");
    assert!(matches!(c, HandshakeError::Closed(Stage::Status)), "{c}");
    assert!(matches!(a, HandshakeError::Closed(Stage::Name)), "{a}");
}

#[test]
fn the_greater_name_wins_a_simultaneous_connect() {
    assert!(simultaneous_winner("b@h", "a@h"));
    assert!(!simultaneous_winner("a@h", "b@h"));
    assert!(simultaneous_winner("a@i", "a@h"));
    assert!(!simultaneous_winner("a@h", "a@h"));
}

#[test]
fn the_digest_is_md5_of_the_cookie_and_the_decimal_challenge() {
    // Erlang: erlang:md5("secret" ++ integer_to_list(4294967295)).
    let got: String = digest("secret", u32::MAX)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, "5dfd181e69aa587cc812eb333e6536b6");
}

#[test]
fn challenges_differ() {
    let a: Vec<u32> = (0..8).map(|_| gen_challenge()).collect();
    assert!(a.windows(2).any(|w| w[0] != w[1]));
}

// ---- against real Erlang ----------------------------------------------------------

/// A registered, listening otter node on this host: (registration, listener, name).
fn otter_node(prefix: &str, hidden: bool) -> (epmd::Registration, TcpListener, String) {
    epmd::ensure_running(epmd::port()).unwrap();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let alive = erlang::unique_name(prefix);
    let reg = epmd::register(&alive, listener.local_addr().unwrap().port(), hidden).unwrap();
    let name = format!("{alive}@{}", erlang::short_host());
    (reg, listener, name)
}

/// Evaluates `expr` on `node` until it gives `want`, for at most 5 s.
fn eventually_eval(node: &mut erlang::Node, expr: &str, want: &str) {
    let t0 = Instant::now();
    loop {
        let got = node.eval(expr);
        if got.as_deref() == Ok(want) {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "`{expr}` gives {got:?}, not {want}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Otter connects to the Erlang node: port_please, then `connect`.
fn connect_to_erlang(
    e: &erlang::Node,
    cookie: &str,
) -> (Result<Peer, HandshakeError>, TcpStream, String) {
    let (reg, _listener, name) = otter_node("otter_c", true);
    let local = LocalNode::new(&name, reg.creation(), true, cookie);
    let host = erlang::short_host();
    let addr = epmd::port_please(&host, e.alive()).unwrap();
    // OTP 25.2 registers versions 5 to 6.
    assert!(
        addr.lowest_version <= 6 && addr.highest_version >= 6,
        "{addr:?}"
    );
    let sock = guarded(TcpStream::connect((host.as_str(), addr.port)).unwrap());
    let mut s = Blocking(sock.try_clone().unwrap());
    let r = block_on(connect(&mut s, &local, e.name()));
    (r, sock, name)
}

#[test]
#[cfg_attr(miri, ignore)]
fn otter_connects_to_a_real_erlang_node() {
    // Ticks every net_ticktime / 4 = 1 s.
    let mut e = erlang::Node::builder("e1")
        .arg("-kernel")
        .arg("net_ticktime")
        .arg("4")
        .start();
    let (r, mut sock, name) = connect_to_erlang(&e, "secret");
    let peer = r.unwrap();
    assert_eq!(peer.name, e.name());
    assert!(!peer.is_hidden());
    assert!(peer.flags.contains(DistFlags::REQUIRED));
    assert_ne!(peer.creation, 0);
    eventually_eval(
        &mut e,
        &format!("lists:member('{name}', nodes(hidden))"),
        "true",
    );
    // The connection is up: the node sends us a message (4-byte length, 'p' frame).
    e.eval_ok(&format!("{{any, '{name}'}} ! hello"));
    let mut len = [0u8; 4];
    sock.read_exact(&mut len).unwrap();
    let len = u32::from_be_bytes(len);
    assert!(len > 1 && len < 1000, "{len}");
    let mut frame = vec![0u8; len as usize];
    sock.read_exact(&mut frame).unwrap();
    assert_eq!(frame[0], b'p', "a pass-through frame");
    assert!(frame.windows(5).any(|w| w == b"hello"));
    // Then a tick: a zero length.
    let mut tick = [0xffu8; 4];
    sock.read_exact(&mut tick).unwrap();
    assert_eq!(tick, [0; 4], "a tick");
}

/// The Erlang node connects to a registered, listening otter node, hidden or normal.
fn erlang_connects_to_otter(hidden: bool) {
    let (reg, listener, name) = otter_node("otter_a", hidden);
    let local = LocalNode::new(&name, reg.creation(), hidden, "secret");
    let acceptor = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let sock = guarded(sock);
        let mut s = Blocking(sock.try_clone().unwrap());
        let mut asked = Vec::new();
        let r = block_on(accept(&mut s, &local, |peer| {
            asked.push(peer.to_owned());
            Status::Ok
        }));
        (r, asked, sock)
    });
    let mut e = erlang::Node::start("e2");
    assert_eq!(
        e.eval_ok(&format!("net_kernel:connect_node('{name}')")),
        "true"
    );
    let (r, asked, _sock) = acceptor.join().unwrap();
    let peer = r.unwrap();
    assert_eq!(asked, [e.name()]);
    assert_eq!(peer.name, e.name());
    assert!(!peer.is_hidden());
    assert!(peer.flags.contains(DistFlags::REQUIRED));
    let (hidden_list, visible_list) = if hidden {
        (format!("[{name}]"), "[]".to_owned())
    } else {
        ("[]".to_owned(), format!("[{name}]"))
    };
    assert_eq!(e.eval_ok("nodes(hidden)"), hidden_list);
    assert_eq!(e.eval_ok("nodes()"), visible_list);
    drop(reg);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_real_erlang_node_connects_to_otter_hidden() {
    erlang_connects_to_otter(true);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_real_erlang_node_connects_to_otter_as_a_normal_node() {
    erlang_connects_to_otter(false);
}

#[test]
#[cfg_attr(miri, ignore)]
fn erlang_refuses_otter_with_a_wrong_cookie() {
    let mut e = erlang::Node::start("e3");
    let (r, _sock, name) = connect_to_erlang(&e, "wrong");
    assert!(matches!(r, Err(HandshakeError::CookieRejected)), "{r:?}");
    assert_eq!(e.eval_ok("nodes(hidden)"), "[]");
    // Erlang says why in its log.
    assert!(
        e.wait_for_line(
            |l| l.contains(&name) && l.contains("Invalid challenge reply"),
            Duration::from_secs(5)
        )
        .is_some(),
        "no log line naming {name}:\n{}",
        e.output()
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn otter_refuses_erlang_with_a_wrong_cookie() {
    let (reg, listener, name) = otter_node("otter_r", true);
    let local = LocalNode::new(&name, reg.creation(), true, "not-the-erlang-one");
    let acceptor = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut s = Blocking(guarded(sock));
        block_on(accept(&mut s, &local, |_| Status::Ok))
    });
    let mut e = erlang::Node::start("e4");
    assert_eq!(
        e.eval_ok(&format!("net_kernel:connect_node('{name}')")),
        "false"
    );
    let r = acceptor.join().unwrap();
    assert!(matches!(r, Err(HandshakeError::BadCookie)), "{r:?}");
    assert_eq!(e.eval_ok("nodes(hidden)"), "[]");
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_erlang_helper_evaluates_waits_and_kills() {
    let mut e = erlang::Node::builder("e6")
        .setup("register(echo, spawn(fun L() -> receive {From, M} -> From ! M, L() end end))")
        .start();
    assert!(e.name().ends_with(&format!("@{}", erlang::short_host())));
    assert_eq!(e.eval_ok("1 + 1"), "2");
    assert_eq!(e.eval_ok("X = \"str\",\n{X, [a]}"), "{\"str\",[a]}");
    assert_eq!(e.eval("erlang:error(boom)"), Err("error:boom".into()));
    e.eval_ok("echo ! {self(), hi}, receive M -> io:format(\"got ~p~n\", [M]) end");
    assert_eq!(
        e.wait_for_text("got", Duration::from_secs(5)).as_deref(),
        Some("got hi")
    );
    assert_eq!(e.eval_ok("erlang:get_cookie()"), "secret");
    // Registered with epmd while it lives; killed, gone from epmd and from the OS.
    assert!(epmd::port_please("127.0.0.1", e.alive()).is_ok());
    let pid = e.os_pid();
    e.kill();
    assert!(!e.is_running());
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    let t0 = Instant::now();
    while epmd::port_please("127.0.0.1", e.alive()).is_ok() {
        assert!(t0.elapsed() < Duration::from_secs(5), "still in epmd");
        std::thread::sleep(Duration::from_millis(20));
    }
}
