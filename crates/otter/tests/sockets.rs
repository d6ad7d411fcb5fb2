//! Rules of sockets owned by processes (`otter::net`, Erlang's `gen_tcp` and `gen_udp`):
//! bytes arrive in order, none lost or duplicated, also when read by readiness
//! (`readable()` then `try_read`); a socket is closed when its process exits, however it
//! exits; a closed port, a port in use and a peer's close are error values or
//! end-of-stream; sockets are served while every worker is busy; active mode's flow
//! control holds the peer back; datagrams arrive whole. Real sockets on 127.0.0.1; the
//! peers outside otter are plain `std::net` sockets. (No descriptor leaks:
//! `sockets_no_leak.rs`, in a process of its own.)

#[path = "support/rt.rs"]
mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use otter::net::{Active, Tcp, TcpListener, TcpStream};
use otter::{Context, ExitReason, Runtime};

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A guard on blocking reads of the test's own `std` sockets: a failure instead of a
/// hang, not a synchronisation.
const GUARD: Duration = Duration::from_secs(20);

fn std_client(addr: SocketAddr) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    s
}

/// A peer outside otter that accepts one connection and reads it: its thread returns
/// what the first read gave (`Ok(0)`: end-of-stream, the otter side closed).
fn peer_reading_to_the_end() -> (
    SocketAddr,
    std::thread::JoinHandle<Result<usize, ErrorKind>>,
) {
    let peer = std::net::TcpListener::bind(any_port()).unwrap();
    let addr = peer.local_addr().unwrap();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = peer.accept().unwrap();
        conn.set_read_timeout(Some(GUARD)).unwrap();
        conn.read(&mut [0u8; 1]).map_err(|e| e.kind())
    });
    (addr, reader)
}

/// An echo server: one process per connection, each echoing until its peer closes.
async fn echo_server(cx: Context<()>, listener: TcpListener) {
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            return;
        };
        cx.spawn(move |_: Context<()>| async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if conn.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

rt_test!(
    bytes_arrive_in_order_none_lost_or_duplicated,
    |rt: &Runtime| {
        const CLIENTS: u32 = 20;
        const BYTES: usize = 256 * 1024;
        let r = rt.block_on(|mut cx: Context<usize>| async move {
            let listener = TcpListener::bind(any_port()).unwrap();
            let addr = listener.local_addr().unwrap();
            cx.spawn(move |cx: Context<()>| echo_server(cx, listener));
            let root = cx.pid();
            for k in 0..CLIENTS {
                cx.spawn(move |_: Context<()>| async move {
                    let mut s = TcpStream::connect(addr).await.unwrap();
                    s.set_nodelay(true).unwrap();
                    let data: Vec<u8> = (0..BYTES as u32)
                        .map(|i| (i.wrapping_mul(31) ^ k) as u8)
                        .collect();
                    let mut back = vec![0u8; BYTES];
                    let (mut sent, mut got) = (0, 0);
                    let chunk = 1000 + k as usize * 7;
                    while got < BYTES {
                        if sent < BYTES {
                            let end = (sent + chunk).min(BYTES);
                            s.write_all(&data[sent..end]).await.unwrap();
                            sent = end;
                        }
                        got += s.read(&mut back[got..sent]).await.unwrap();
                    }
                    root.send(usize::from(back == data));
                });
            }
            let mut intact = 0;
            for _ in 0..CLIENTS {
                intact += cx.recv().await;
            }
            intact
        });
        assert_eq!(r.unwrap(), CLIENTS as usize);
    }
);

rt_test!(
    a_socket_is_closed_when_its_process_exits_however_it_exits,
    |rt: &Runtime| {
        // The peer outside otter sees end-of-stream once the owner is gone: after a
        // return, a panic, an exit signal and a kill.
        for how in ["return", "panic", "exit signal", "kill"] {
            let (addr, reader) = peer_reading_to_the_end();
            rt.block_on(move |mut cx: Context<()>| async move {
                let root = cx.pid();
                let owner = cx.spawn(move |mut c: Context<()>| async move {
                    let _s = TcpStream::connect(addr).await.unwrap();
                    root.send(());
                    match how {
                        "return" => {}
                        "panic" => panic!("the owner fails"),
                        _ => c.recv().await, // until the signal ends it
                    }
                });
                cx.recv().await; // connected
                match how {
                    "exit signal" => cx.exit(owner, ExitReason::Shutdown),
                    "kill" => cx.exit(owner, ExitReason::Kill),
                    _ => {}
                }
            })
            .unwrap();
            assert_eq!(reader.join().unwrap(), Ok(0), "after {how}");
        }
    }
);

rt_test!(
    a_socket_is_closed_by_the_runtime_shutdown,
    |_rt: &Runtime| {
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let rt = Runtime::builder().threads(2).build().unwrap();
        rt.handle().spawn(move |mut c: Context<()>| async move {
            let _s = TcpStream::connect(addr).await.unwrap();
            c.recv().await; // never comes
        });
        let (mut conn, _) = peer.accept().unwrap();
        conn.set_read_timeout(Some(GUARD)).unwrap();
        drop(rt);
        assert_eq!(conn.read(&mut [0u8; 1]).map_err(|e| e.kind()), Ok(0));
    }
);

rt_test!(
    connect_to_a_closed_port_is_connection_refused,
    |rt: &Runtime| {
        // A port that was just free: bound, noted, closed.
        let addr = std::net::TcpListener::bind(any_port())
            .unwrap()
            .local_addr()
            .unwrap();
        let r = rt.block_on(move |_: Context<()>| async move {
            TcpStream::connect(addr)
                .await
                .map(|_| ())
                .map_err(|e| e.kind())
        });
        assert_eq!(r.unwrap(), Err(ErrorKind::ConnectionRefused));
    }
);

rt_test!(bind_to_a_port_in_use_is_addr_in_use, |rt: &Runtime| {
    let taken = std::net::TcpListener::bind(any_port()).unwrap();
    let addr = taken.local_addr().unwrap();
    let r = rt.block_on(move |_: Context<()>| async move {
        TcpListener::bind(addr).map(|_| ()).map_err(|e| e.kind())
    });
    assert_eq!(r.unwrap(), Err(ErrorKind::AddrInUse));
});

rt_test!(
    a_peer_that_closes_gives_end_of_stream_and_a_reset_an_error,
    |rt: &Runtime| {
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let closer = std::thread::spawn(move || {
            // First connection: some bytes, then a clean close. Second: a reset
            // (linger 0), after the otter side has written to it.
            let (mut a, _) = peer.accept().unwrap();
            a.write_all(b"bye").unwrap();
            drop(a);
            let (b, _) = peer.accept().unwrap();
            socket2::SockRef::from(&b)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(b);
        });
        let r = rt.block_on(move |_: Context<()>| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut buf = [0u8; 8];
            let mut got = Vec::new();
            loop {
                match s.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            // The reset shows as an error of the connect or of a read, or as
            // end-of-stream if the kernel reported the close first; never as a hang
            // or a panic.
            let after_reset = match TcpStream::connect(addr).await {
                Ok(mut r) => r.read(&mut buf).await.map_err(|e| e.kind()),
                Err(e) => Err(e.kind()),
            };
            (got, after_reset)
        });
        closer.join().unwrap();
        let (got, after_reset) = r.unwrap();
        assert_eq!(got, b"bye");
        assert!(
            matches!(after_reset, Err(ErrorKind::ConnectionReset) | Ok(0)),
            "{after_reset:?}"
        );
    }
);

rt_test!(
    sockets_are_served_while_every_worker_is_busy,
    |rt: &Runtime| {
        // As many processes as workers, and more, each yielding in a loop without ever
        // waiting: no worker parks, so only the busy workers' own polls of the OS can
        // serve the socket.
        let stop = Arc::new(AtomicBool::new(false));
        let busy = 2 * rt.threads();
        let r = rt.block_on({
            let stop = stop.clone();
            move |cx: Context<()>| async move {
                for _ in 0..busy {
                    let stop = stop.clone();
                    cx.spawn(move |c: Context<()>| async move {
                        while !stop.load(Ordering::Relaxed) {
                            c.yield_now().await;
                        }
                    });
                }
                let listener = TcpListener::bind(any_port()).unwrap();
                let addr = listener.local_addr().unwrap();
                let client = std::thread::spawn(move || {
                    let mut s = std_client(addr);
                    let mut round_trips = 0;
                    let mut buf = [0u8; 5];
                    for _ in 0..200 {
                        s.write_all(b"hello").unwrap();
                        s.read_exact(&mut buf).unwrap();
                        round_trips += usize::from(&buf == b"hello");
                    }
                    round_trips
                });
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 64];
                loop {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => conn.write_all(&buf[..n]).await.unwrap(),
                    }
                }
                stop.store(true, Ordering::Relaxed);
                client.join().unwrap()
            }
        });
        stop.store(true, Ordering::Relaxed);
        assert_eq!(r.unwrap(), 200);
    }
);

/// The message type of an active socket's owner in these tests: socket messages and a
/// go-ahead from the test's thread.
#[derive(Debug)]
enum Owner {
    Tcp(Tcp),
    Go,
}

impl From<Tcp> for Owner {
    fn from(t: Tcp) -> Owner {
        Owner::Tcp(t)
    }
}

/// A process that is handed an active stream: socket messages, and the stream.
#[derive(Debug)]
enum Heir {
    Tcp(Tcp),
    Stream(otter::net::ActiveTcpStream),
}

impl From<Tcp> for Heir {
    fn from(t: Tcp) -> Heir {
        Heir::Tcp(t)
    }
}

/// What the test's root process hears: the first owner's end, then the heir's bytes.
#[derive(Debug)]
enum Witness {
    Down,
    Got(Vec<u8>),
}

impl From<otter::Down> for Witness {
    fn from(_: otter::Down) -> Witness {
        Witness::Down
    }
}

rt_test!(
    an_active_stream_handed_on_sends_its_new_owner_everything_after_the_first_ends,
    |rt: &Runtime| {
        // `gen_tcp:controlling_process/2`: the acceptor turns the stream active, hands
        // it to another process and ends; the peer writes only after that, then closes.
        let (written_tx, written_rx) = std::sync::mpsc::channel::<()>();
        let r = rt.block_on(move |mut cx: Context<Witness>| async move {
            let listener = TcpListener::bind(any_port()).unwrap();
            let addr = listener.local_addr().unwrap();
            let me = cx.pid();
            let heir = cx.spawn(move |mut c: Context<Heir>| async move {
                let Heir::Stream(s) = c.recv().await else {
                    panic!("the stream first")
                };
                s.set_active(Active::N(u32::MAX));
                let mut got = Vec::new();
                loop {
                    match c.recv().await {
                        Heir::Tcp(Tcp::Data(_, d)) => got.extend(d),
                        Heir::Tcp(Tcp::Closed(_)) => break,
                        other => panic!("{other:?}"),
                    }
                }
                me.send(Witness::Got(got));
            });
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let client = std::thread::spawn(move || {
                let mut s = std_client(addr);
                // After the acceptor has ended.
                rx.recv().unwrap();
                s.write_all(b"after the hand-over").unwrap();
                written_tx.send(()).unwrap();
            });
            let (conn, _) = listener.accept().await.unwrap();
            let acceptor = cx.spawn(move |c: Context<Heir>| async move {
                let s = conn.into_active(&c, Active::Once);
                s.controlling_process(heir);
                heir.send(Heir::Stream(s));
            });
            cx.monitor(acceptor);
            // The acceptor's end; then the peer may write.
            let down = cx.recv().await;
            tx.send(()).unwrap();
            let got = cx.recv().await;
            client.join().unwrap();
            (down, got)
        });
        let _ = written_rx.recv();
        match r.unwrap() {
            (Witness::Down, Witness::Got(got)) => assert_eq!(got, b"after the hand-over"),
            other => panic!("{other:?}"),
        }
    }
);

rt_test!(
    active_zero_on_a_passive_stream_answers_passive_at_once,
    |rt: &Runtime| {
        // `inet:setopts(S, [{active, 0}])` on a passive socket sends `{tcp_passive, S}`.
        let r = rt.block_on(move |mut cx: Context<Owner>| async move {
            let listener = TcpListener::bind(any_port()).unwrap();
            let addr = listener.local_addr().unwrap();
            let client = std::thread::spawn(move || std_client(addr));
            let (conn, _) = listener.accept().await.unwrap();
            let s = conn.into_active(&cx, Active::N(0));
            let passive =
                |m: Option<Owner>| matches!(m, Some(Owner::Tcp(Tcp::Passive(id))) if id == s.id());
            // The guard turns a missing `Passive` into a failure, not a hang.
            let first = passive(cx.recv_timeout(GUARD).await);
            s.set_active(Active::N(0));
            let second = passive(cx.recv_timeout(GUARD).await);
            // Two in a row, before the reader gets to either: two `Passive`s, then
            // the data asked for after them (a third `Passive` would come before it).
            s.set_active(Active::N(0));
            s.set_active(Active::N(0));
            let mut peer = client.join().unwrap();
            peer.write_all(b"z").unwrap();
            s.set_active(Active::Once);
            let mut rest = Vec::new();
            for _ in 0..3 {
                rest.push(match cx.recv_timeout(GUARD).await {
                    Some(Owner::Tcp(Tcp::Passive(_))) => "passive".to_string(),
                    Some(Owner::Tcp(Tcp::Data(_, d))) => String::from_utf8_lossy(&d).into_owned(),
                    other => format!("{other:?}"),
                });
            }
            (first, second, rest)
        });
        assert_eq!(
            r.unwrap(),
            (
                true,
                true,
                vec![
                    "passive".to_string(),
                    "passive".to_string(),
                    "z".to_string()
                ]
            )
        );
    }
);

rt_test!(
    active_once_gives_one_message_and_holds_the_peer_back_until_asked_again,
    |rt: &Runtime| {
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let r = rt.block_on(move |mut cx: Context<Owner>| async move {
            let root = cx.pid();
            let writer = std::thread::spawn(move || {
                let (mut conn, _) = peer.accept().unwrap();
                conn.write_all(b"first").unwrap();
                // Wait for the owner's word that it took `first` and did not ask again.
                // Then fill the connection without blocking: with the owner asking for
                // nothing, the kernel's buffers fill and the writes stop (TCP holds us
                // back) instead of the bytes piling up in the owner's mailbox.
                let mut buf = [0u8; 1];
                conn.set_read_timeout(Some(GUARD)).unwrap();
                conn.read_exact(&mut buf).unwrap();
                conn.set_nonblocking(true).unwrap();
                let block = vec![7u8; 64 * 1024];
                let mut written = 0usize;
                loop {
                    match conn.write(&block) {
                        Ok(n) => written += n,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => panic!("{e}"),
                    }
                    assert!(written < 256 << 20, "256 MiB taken: no back-pressure");
                }
                root.send(Owner::Go);
                conn.set_nonblocking(false).unwrap();
                drop(conn); // the end: the owner reads up to the close
                written
            });
            let s = TcpStream::connect(addr).await.unwrap();
            let s = s.into_active(&cx, Active::Once);
            let Owner::Tcp(Tcp::Data(id, first)) = cx.recv().await else {
                panic!("data first")
            };
            assert_eq!((id, first.as_slice()), (s.id(), &b"first"[..]));
            s.write_all(b"k").await.unwrap();
            // The writer is held back; only its word comes, no data.
            assert!(matches!(cx.recv().await, Owner::Go));
            let mut got = 0usize;
            loop {
                s.set_active(Active::Once);
                match cx.recv().await {
                    Owner::Tcp(Tcp::Data(_, d)) => got += d.len(),
                    Owner::Tcp(Tcp::Closed(_)) => break,
                    other => panic!("{other:?}"),
                }
            }
            (got, writer.join().unwrap())
        });
        let (got, written) = r.unwrap();
        assert_eq!(got, written, "every byte written arrived, once");
    }
);

rt_test!(
    active_n_gives_n_messages_then_passive_and_closed_comes_last,
    |rt: &Runtime| {
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let r = rt.block_on(move |mut cx: Context<Owner>| async move {
            let writer = std::thread::spawn(move || {
                let (mut conn, _) = peer.accept().unwrap();
                conn.set_nodelay(true).unwrap();
                conn.set_read_timeout(Some(GUARD)).unwrap();
                // One byte at a time, each acknowledged, so that each is one message.
                for b in 0..5u8 {
                    conn.write_all(&[b]).unwrap();
                    conn.read_exact(&mut [0u8; 1]).unwrap();
                }
            });
            let s = TcpStream::connect(addr).await.unwrap();
            let s = s.into_active(&cx, Active::N(3));
            let mut log = Vec::new();
            loop {
                match cx.recv().await {
                    Owner::Tcp(Tcp::Data(_, d)) => {
                        log.push(format!("data {}", d[0]));
                        s.write_all(b"k").await.unwrap();
                    }
                    Owner::Tcp(Tcp::Passive(_)) => {
                        log.push("passive".into());
                        s.set_active(Active::N(2));
                    }
                    Owner::Tcp(Tcp::Closed(_)) => {
                        log.push("closed".into());
                        break;
                    }
                    other => panic!("{other:?}"),
                }
            }
            writer.join().unwrap();
            log
        });
        assert_eq!(
            r.unwrap(),
            [
                "data 0", "data 1", "data 2", "passive", "data 3", "data 4", "passive", "closed"
            ]
        );
    }
);

rt_test!(
    an_active_socket_is_closed_when_its_owner_exits,
    |rt: &Runtime| {
        let (addr, reader) = peer_reading_to_the_end();
        rt.block_on(move |mut cx: Context<()>| async move {
            let root = cx.pid();
            cx.spawn(move |cx: Context<Owner>| async move {
                let s = TcpStream::connect(addr).await.unwrap();
                let _active = s.into_active(&cx, Active::Once);
                root.send(());
                // Returns: the stream is dropped with the process.
            });
            cx.recv().await;
        })
        .unwrap();
        assert_eq!(reader.join().unwrap(), Ok(0));
    }
);

rt_test!(
    a_read_or_accept_cut_short_by_a_timeout_loses_nothing,
    |rt: &Runtime| {
        // `gen_tcp:accept/2` and `recv/3` with a timeout: `Elapsed`, and the connection
        // or the bytes that come later are there for the next call.
        const SHORT: Duration = Duration::from_millis(20);
        let r = rt.block_on(move |_: Context<()>| async move {
            let listener = TcpListener::bind(any_port()).unwrap();
            let addr = listener.local_addr().unwrap();
            let accept_early = otter::timeout(SHORT, listener.accept()).await.err();
            let (go, wait) = std::sync::mpsc::channel::<()>();
            let client = std::thread::spawn(move || {
                let mut s = std_client(addr);
                wait.recv().unwrap();
                s.write_all(b"late").unwrap();
                s
            });
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 16];
            let read_early = otter::timeout(SHORT, conn.read(&mut buf)).await.err();
            go.send(()).unwrap();
            let mut got = Vec::new();
            while got.len() < 4 {
                let n = conn.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            drop(client.join());
            let as_io = std::io::Error::from(otter::Elapsed).kind();
            (accept_early, read_early, got, as_io)
        });
        assert_eq!(
            r.unwrap(),
            (
                Some(otter::Elapsed),
                Some(otter::Elapsed),
                b"late".to_vec(),
                ErrorKind::TimedOut
            )
        );
    }
);

rt_test!(udp_bind_to_a_port_in_use_is_addr_in_use, |rt: &Runtime| {
    // Taken by otter's own socket, then by another program's.
    let r = rt.block_on(move |_: Context<()>| async move {
        let first = otter::net::UdpSocket::bind(any_port()).unwrap();
        let ours = otter::net::UdpSocket::bind(first.local_addr().unwrap())
            .map(|_| ())
            .map_err(|e| e.kind());
        let taken = std::net::UdpSocket::bind(any_port()).unwrap();
        let theirs = otter::net::UdpSocket::bind(taken.local_addr().unwrap())
            .map(|_| ())
            .map_err(|e| e.kind());
        (ours, theirs)
    });
    assert_eq!(
        r.unwrap(),
        (Err(ErrorKind::AddrInUse), Err(ErrorKind::AddrInUse))
    );
});

rt_test!(
    udp_datagrams_arrive_whole_and_a_closed_peer_is_an_error_value,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            // IPv6 loopback where the machine has it, else IPv4.
            let ip: std::net::IpAddr = if std::net::UdpSocket::bind("[::1]:0").is_ok() {
                "::1".parse().unwrap()
            } else {
                "127.0.0.1".parse().unwrap()
            };
            let a = otter::net::UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
            let b = otter::net::UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
            let b_addr = b.local_addr().unwrap();
            let a_addr = a.local_addr().unwrap();
            // The echo side in its own process.
            cx.spawn(move |_: Context<()>| async move {
                let mut buf = [0u8; 2048];
                for _ in 0..100 {
                    let (n, from) = b.recv_from(&mut buf).await.unwrap();
                    b.send_to(&buf[..n], from).await.unwrap();
                }
            });
            let mut whole = 0;
            let mut buf = [0u8; 2048];
            for i in 0..100usize {
                let msg: Vec<u8> = (0..(i * 13 % 1400 + 1)).map(|j| (i + j) as u8).collect();
                a.send_to(&msg, b_addr).await.unwrap();
                let (n, from) = a.recv_from(&mut buf).await.unwrap();
                whole += usize::from(from == b_addr && buf[..n] == msg[..]);
            }
            // A connected socket to a port nobody listens on: the ICMP error comes back
            // as an error value of a later call, never as a panic.
            let dead = std::net::UdpSocket::bind(a_addr.ip().to_string() + ":0")
                .unwrap()
                .local_addr()
                .unwrap();
            let c = otter::net::UdpSocket::bind(SocketAddr::new(a_addr.ip(), 0)).unwrap();
            c.connect(dead).unwrap();
            c.send(b"anyone?").await.unwrap();
            let after = c.recv(&mut buf).await.map_err(|e| e.kind());
            (whole, after)
        });
        let (whole, after) = r.unwrap();
        assert_eq!(whole, 100);
        assert_eq!(after, Err(ErrorKind::ConnectionRefused));
    }
);

rt_test!(
    a_crashing_connection_process_closes_its_socket_and_nothing_else,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            fn crash() {
                panic!("the connection's process fails")
            }
            let pool = otter::net::start_acceptor_pool(
                &cx,
                any_port(),
                3,
                |_: Context<()>, mut s: TcpStream| async move {
                    let mut buf = [0u8; 64];
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) if &buf[..n] == b"crash" => crash(),
                            Ok(n) => s.write_all(&buf[..n]).await.unwrap(),
                        }
                    }
                },
            )
            .await
            .unwrap();
            let acceptors = |v: Vec<otter::supervisor::ChildInfo>| {
                v.into_iter().map(|c| c.pid).collect::<Vec<_>>()
            };
            let before = acceptors(pool.supervisor().which_children().await.unwrap());
            let mut a = TcpStream::connect(pool.local_addr()).await.unwrap();
            let mut b = TcpStream::connect(pool.local_addr()).await.unwrap();
            let mut buf = [0u8; 5];
            a.write_all(b"hello").await.unwrap();
            a.read_exact(&mut buf).await.unwrap();
            b.write_all(b"crash").await.unwrap();
            // The crashed connection's socket is closed: end-of-stream (or a reset).
            let b_end = b.read(&mut buf).await.map_err(|e| e.kind());
            // The other connection and the acceptors are untouched.
            a.write_all(b"again").await.unwrap();
            a.read_exact(&mut buf).await.unwrap();
            let after = acceptors(pool.supervisor().which_children().await.unwrap());
            (
                b_end,
                &buf == b"again",
                before == after && before.len() == 3,
            )
        });
        let (b_end, a_alive, acceptors_same) = r.unwrap();
        assert!(
            matches!(b_end, Ok(0) | Err(ErrorKind::ConnectionReset)),
            "{b_end:?}"
        );
        assert!(a_alive && acceptors_same);
    }
);

rt_test!(
    stopping_an_acceptor_pool_ends_its_connections,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<otter::Exit>| async move {
            // The pool's supervisor is linked to us: its stop must not end us.
            cx.trap_exit(true);
            let pool = otter::net::start_acceptor_pool(
                &cx,
                any_port(),
                2,
                |mut c: Context<()>, _s: TcpStream| async move {
                    c.recv().await; // holds the connection until ended
                },
            )
            .await
            .unwrap();
            let mut conns = Vec::new();
            for _ in 0..10 {
                conns.push(TcpStream::connect(pool.local_addr()).await.unwrap());
            }
            pool.supervisor()
                .server()
                .stop(ExitReason::Shutdown, None)
                .await
                .ok();
            let mut ended = 0;
            for c in &mut conns {
                let end = c.read(&mut [0u8; 1]).await;
                ended += usize::from(matches!(end, Ok(0)) || end.is_err());
            }
            ended
        });
        assert_eq!(r.unwrap(), 10);
    }
);

rt_test!(
    a_stopped_pool_closes_the_connections_it_never_accepted,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<otter::Exit>| async move {
            cx.trap_exit(true);
            let pool = otter::net::start_acceptor_pool(
                &cx,
                any_port(),
                1,
                |mut c: Context<()>, _s: TcpStream| async move {
                    c.recv().await;
                },
            )
            .await
            .unwrap();
            // Connected in the kernel's backlog without a yield: on one worker, no
            // acceptor runs before the stop, which it sees before it accepts again.
            let waiting: Vec<_> = (0..5)
                .map(|_| std::net::TcpStream::connect(pool.local_addr()).unwrap())
                .collect();
            pool.supervisor()
                .server()
                .stop(ExitReason::Shutdown, None)
                .await
                .ok();
            // The handle lives on; the listener must not.
            (pool, waiting)
        });
        let (_pool, waiting) = r.unwrap();
        for mut c in waiting {
            // A failure guard, not a synchronisation: the end is due at once.
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let end = c.read(&mut [0u8; 1]);
            assert!(
                matches!(end, Ok(0))
                    || end.as_ref().is_err_and(|e| !matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut
                    )),
                "{end:?}"
            );
        }
    }
);

/// What a reader tells the peer writing to it in the readiness tests.
type Totals = std::sync::mpsc::Sender<usize>;

/// Reads with `readable()` then `try_read` (in reads of at most `chunk` bytes) until the
/// peer closes; before every wait, tells `drained` how many bytes it has so far. It may
/// wait after a `WouldBlock`, or after a read shorter than asked (which tells the
/// runtime the socket is drained, without the system call that would answer
/// `WouldBlock`).
async fn read_by_readiness(s: &TcpStream, chunk: usize, drained: &Totals) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        s.readable().await.unwrap();
        match s.try_read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if n < chunk {
                    let _ = drained.send(got.len());
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let _ = drained.send(got.len());
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A peer outside otter that accepts one connection and writes `chunks` small chunks to
/// it, then closes; at every third chunk it waits for the reader's word (on the sender it
/// returns) that it has drained everything so far. Its thread returns what it sent.
fn chunked_writer(chunks: usize) -> (SocketAddr, Totals, std::thread::JoinHandle<Vec<u8>>) {
    let peer = std::net::TcpListener::bind(any_port()).unwrap();
    let addr = peer.local_addr().unwrap();
    let (drained, totals) = std::sync::mpsc::channel::<usize>();
    let writer = std::thread::spawn(move || {
        let (mut conn, _) = peer.accept().unwrap();
        conn.set_nodelay(true).unwrap();
        let mut sent = Vec::new();
        for k in 0..chunks {
            let len = 1 + (k * 37) % 61;
            let chunk: Vec<u8> = (0..len).map(|i| (k * 7 + i * 13) as u8).collect();
            conn.write_all(&chunk).unwrap();
            sent.extend_from_slice(&chunk);
            if k % 3 == 0 {
                while totals.recv_timeout(GUARD).expect("the reader's word") < sent.len() {}
            }
        }
        sent // and the connection closes
    });
    (addr, drained, writer)
}

rt_test!(readable_then_try_read_loses_no_byte, |rt: &Runtime| {
    // The reader waits on an empty socket again and again (the writer's pauses), and
    // between the pauses chunks come in bursts; it reads in 7-byte reads (a chunk takes
    // several) and in 4 KiB ones. Every byte arrives once, in order, and the close.
    for read_size in [7, 4096] {
        let (addr, drained, writer) = chunked_writer(1500);
        let got = rt.block_on(move |_: Context<()>| async move {
            let s = TcpStream::connect(addr).await.unwrap();
            read_by_readiness(&s, read_size, &drained).await
        });
        assert!(
            got.unwrap() == writer.join().unwrap(),
            "reads of {read_size}"
        );
    }
});

rt_test!(try_read_on_an_idle_socket_would_block, |rt: &Runtime| {
    // And after a WouldBlock, readable() waits for the peer's next bytes.
    let peer = std::net::TcpListener::bind(any_port()).unwrap();
    let addr = peer.local_addr().unwrap();
    let r = rt.block_on(move |mut cx: Context<String>| async move {
        let root = cx.pid();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let (mut conn, _) = peer.accept().unwrap();
            root.send("accepted".into()); // nothing written
            for bytes in [&b"x"[..], b"yz"] {
                wait.recv_timeout(GUARD).unwrap();
                conn.write_all(bytes).unwrap();
            }
            wait.recv_timeout(GUARD).unwrap(); // holds the connection open until then
        });
        let s = TcpStream::connect(addr).await.unwrap();
        assert_eq!(cx.recv().await, "accepted");
        let mut buf = [0u8; 8];
        let mut kinds = vec![s.try_read(&mut buf).map_err(|e| e.kind())];
        // Writable (so the runtime has seen the socket's events), still nothing to read.
        s.writable().await.unwrap();
        kinds.push(s.try_read(&mut buf).map_err(|e| e.kind()));
        // One byte: read once, then the socket is idle again (the kernel says so).
        go.send(()).unwrap();
        let one = loop {
            s.readable().await.unwrap();
            match s.try_read(&mut buf) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                r => break r.map_err(|e| e.kind()),
            }
        };
        kinds.push(s.try_read(&mut buf).map_err(|e| e.kind()));
        // That WouldBlock cleared the readiness: readable() waits for new bytes.
        cx.spawn(move |_: Context<()>| async move {
            s.readable().await.unwrap();
            root.send("readable".into());
            let mut buf = [0u8; 8];
            root.send(match s.try_read(&mut buf) {
                Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
                Err(e) => format!("{:?}", e.kind()),
            });
        });
        let early = cx.recv_timeout(Duration::from_millis(100)).await;
        go.send(()).unwrap();
        let mut late: Vec<String> = early.iter().cloned().collect();
        while late.len() < 2 {
            late.push(cx.recv().await);
        }
        go.send(()).unwrap();
        writer.join().unwrap();
        (kinds, one, early, late)
    });
    let (kinds, one, early, late) = r.unwrap();
    assert_eq!(kinds, [Err(ErrorKind::WouldBlock); 3]);
    assert_eq!(one, Ok(1));
    assert_eq!(early, None, "readable() returned with nothing new to read");
    assert_eq!(late, ["readable", "yz"]);
});

rt_test!(
    a_read_that_fills_the_buffer_leaves_the_rest_readable,
    |rt: &Runtime| {
        // A short read tells the runtime the socket is drained (no WouldBlock system call
        // needed); a read that fills the buffer does not, so the rest is read at once.
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let (mut conn, _) = peer.accept().unwrap();
            conn.write_all(b"0123456789").unwrap(); // one segment on loopback
            wait.recv_timeout(GUARD).unwrap();
            conn.write_all(b"ab").unwrap();
            wait.recv_timeout(GUARD).unwrap();
        });
        let r = rt.block_on(move |_: Context<()>| async move {
            let s = TcpStream::connect(addr).await.unwrap();
            s.readable().await.unwrap();
            let mut buf = [0u8; 4];
            let mut reads = Vec::new();
            for _ in 0..4 {
                reads.push(match s.try_read(&mut buf) {
                    Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
                    Err(e) => format!("{:?}", e.kind()),
                });
            }
            go.send(()).unwrap();
            s.readable().await.unwrap();
            let n = s.try_read(&mut buf).unwrap();
            reads.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            go.send(()).unwrap();
            reads
        });
        writer.join().unwrap();
        assert_eq!(r.unwrap(), ["0123", "4567", "89", "WouldBlock", "ab"]);
    }
);

rt_test!(
    sockets_are_served_while_the_run_queues_stay_full,
    |rt: &Runtime| {
        // 200 processes a worker that always have something to run keep its queue more
        // than half full and never full (no overflow sends them to the injector), which
        // holds back the worker's polls of the OS (so that a long queue drains before the
        // processes that sockets wake join it); the sockets are still served, every few
        // looks, and each read comes back.
        use std::sync::atomic::{AtomicBool, Ordering};
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let (mut conn, _) = peer.accept().unwrap();
            for round in 0..20u8 {
                conn.write_all(&[round]).unwrap();
                let mut back = [0u8];
                std::io::Read::read_exact(&mut conn, &mut back).unwrap();
                assert_eq!(back, [round]);
            }
        });
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let busy = 200 * rt.threads();
        let r = rt.block_on({
            let stop = stop.clone();
            move |cx: Context<()>| async move {
                for _ in 0..busy {
                    let stop = stop.clone();
                    cx.spawn(move |c: Context<()>| async move {
                        while !stop.load(Ordering::Relaxed) {
                            c.yield_now().await;
                        }
                    });
                }
                let mut s = TcpStream::connect(addr).await.unwrap();
                let mut buf = [0u8];
                for _ in 0..20 {
                    s.read_exact(&mut buf).await.unwrap();
                    s.write_all(&buf).await.unwrap();
                }
                stop.store(true, Ordering::Relaxed);
            }
        });
        stop.store(true, Ordering::Relaxed);
        r.unwrap();
        writer.join().unwrap();
    }
);

rt_test!(readable_reports_the_peer_close, |rt: &Runtime| {
    let peer = std::net::TcpListener::bind(any_port()).unwrap();
    let addr = peer.local_addr().unwrap();
    let closer = std::thread::spawn(move || {
        let (mut conn, _) = peer.accept().unwrap();
        conn.write_all(b"bye").unwrap();
        // and closes
    });
    let r = rt.block_on(move |_: Context<()>| async move {
        let s = TcpStream::connect(addr).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 2];
        loop {
            s.readable().await.unwrap();
            match s.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        // The close stays reported: readable at once, and a read of 0, again.
        s.readable().await.unwrap();
        (got, s.try_read(&mut buf).map_err(|e| e.kind()))
    });
    closer.join().unwrap();
    let (got, again) = r.unwrap();
    assert_eq!((got.as_slice(), again), (&b"bye"[..], Ok(0)));
});

rt_test!(
    try_write_stops_at_a_full_send_buffer_and_writable_waits_for_room,
    |rt: &Runtime| {
        // The peer reads nothing until told: try_write fills the kernel's buffers and
        // answers WouldBlock; then the peer reads everything, and writable() followed by
        // try_write finishes. Every byte arrives once, in order.
        let peer = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = peer.local_addr().unwrap();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let (mut conn, _) = peer.accept().unwrap();
            conn.set_read_timeout(Some(GUARD)).unwrap();
            wait.recv_timeout(GUARD).unwrap();
            let mut got = Vec::new();
            conn.read_to_end(&mut got).unwrap();
            got
        });
        let r = rt.block_on(move |_: Context<()>| async move {
            let s = TcpStream::connect(addr).await.unwrap();
            s.set_send_buffer_size(4096).unwrap();
            let data: Vec<u8> = (0..8u32 << 20).map(|i| ((i * 31) >> 3) as u8).collect();
            // Before its first event the runtime has not seen the socket writable.
            s.writable().await.unwrap();
            let mut sent = 0;
            let mut full = false;
            while sent < data.len() {
                match s.try_write(&data[sent..(sent + 1000).min(data.len())]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if !full {
                            full = true;
                            go.send(()).unwrap();
                        }
                        s.writable().await.unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            (full, data)
        });
        let (full, data) = r.unwrap();
        assert!(full, "8 MiB never filled the send buffer");
        assert!(reader.join().unwrap() == data);
    }
);

rt_test!(
    dropping_an_active_stream_closes_its_socket_while_the_owner_lives,
    |rt: &Runtime| {
        // The reader has credit, so it waits on the socket, not for the owner: the drop
        // must still end it, and the socket close.
        let (addr, reader) = peer_reading_to_the_end();
        let owner = rt
            .block_on(move |mut cx: Context<()>| async move {
                let root = cx.pid();
                let owner = cx.spawn(move |mut c: Context<Owner>| async move {
                    let s = TcpStream::connect(addr).await.unwrap();
                    let active = s.into_active(&c, Active::Once);
                    // Time for the reader to start waiting on the socket (a guard for
                    // the case tested, not a synchronisation: without it the test is
                    // only weaker).
                    assert!(c.recv_timeout(Duration::from_millis(50)).await.is_none());
                    drop(active);
                    root.send(());
                    c.recv().await; // lives on
                });
                cx.recv().await;
                owner
            })
            .unwrap();
        assert_eq!(reader.join().unwrap(), Ok(0));
        owner.send(Owner::Go);
    }
);

/// A connection accepted by otter whose peer (a plain socket, kept open) never reads.
async fn accepted_from_a_peer_that_never_reads() -> (TcpStream, std::net::TcpStream) {
    let listener = TcpListener::bind(any_port()).unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = listener.accept().await.unwrap();
    // Small buffers on both sides, so that writes block soon.
    let _ = socket2::SockRef::from(&peer).set_recv_buffer_size(4096);
    stream.set_send_buffer_size(4096).unwrap();
    (stream, peer)
}

rt_test!(
    a_write_that_outlasts_the_send_timeout_fails_and_shuts_the_stream_for_writing,
    |rt: &Runtime| {
        let r = rt.block_on(|_: Context<()>| async {
            let (mut stream, _peer) = accepted_from_a_peer_that_never_reads().await;
            assert_eq!(stream.send_timeout(), None);
            stream.set_send_timeout(Some(Duration::from_millis(30)));
            let big = vec![7u8; 32 << 20];
            let first = stream.write_all(&big).await.map_err(|e| e.kind());
            // Nothing more may follow data of which an unknown part went out.
            let after = stream.write_all(b"more").await.map_err(|e| e.kind());
            (first, after.is_err())
        });
        assert_eq!(r.unwrap(), (Err(ErrorKind::TimedOut), true));
    }
);

rt_test!(
    a_write_the_peer_takes_in_time_is_not_cut_by_the_send_timeout,
    |rt: &Runtime| {
        let listener = std::net::TcpListener::bind(any_port()).unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            conn.set_read_timeout(Some(GUARD)).unwrap();
            let mut all = Vec::new();
            conn.read_to_end(&mut all)
                .map(|_| all.len())
                .map_err(|e| e.kind())
        });
        let r = rt.block_on(move |_: Context<()>| async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.set_send_timeout(Some(GUARD));
            stream
                .write_all(&vec![1u8; 4 << 20])
                .await
                .map_err(|e| e.kind())
        });
        assert_eq!(r.unwrap(), Ok(()));
        assert_eq!(peer.join().unwrap(), Ok(4 << 20));
    }
);

rt_test!(
    an_active_streams_writes_take_the_send_timeout_too,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Tcp>| async move {
            let (stream, _peer) = accepted_from_a_peer_that_never_reads().await;
            let active = stream.into_active(&cx, Active::N(0));
            active.set_send_timeout(Some(Duration::from_millis(30)));
            let big = vec![7u8; 32 << 20];
            active.write_all(&big).await.map_err(|e| e.kind())
        });
        assert_eq!(r.unwrap(), Err(ErrorKind::TimedOut));
    }
);
