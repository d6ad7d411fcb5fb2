//! Rule of the reactor: a process that a socket's readiness wakes runs, whatever the
//! worker that polled the OS was doing when it did: searching, parking, or looking
//! again at another worker's LIFO slot (`park.rs`, "The rule"). A lost wake-up shows
//! as a request that is never answered; the client's read timeout is the failure
//! guard, not a synchronisation.
//!
//! After each reply the server sets a pair of processes exchanging a burst of messages
//! (a chain in its worker's LIFO slot), so that an idle worker holding the OS poll often
//! parks for a short look again at that slot while the next request arrives: the case
//! in which a woken process once waited in that worker's own LIFO slot until the next
//! timer (7 s, a distribution handshake's timeout). Nothing else runs: no timer wakes
//! an idle worker by chance.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use otter::net::TcpListener;
use otter::{Context, Pid, Runtime};

/// Runtimes started one after the other, connections on each, and round trips on each
/// connection: the first requests on a new runtime were the likeliest to find the
/// worker holding the OS poll in a short look again.
const RUNTIMES: usize = 12;
const CONNECTIONS: usize = 3;
const ROUND_TRIPS: usize = 100;

/// A guard on each of the client's reads: far above any round trip, far below the
/// timers that could rescue a lost wake-up by accident.
const GUARD: Duration = Duration::from_secs(3);

/// What the bursty pair's first process receives.
enum Pair {
    /// Run a burst.
    Go,
    /// The other process's answer.
    Pong,
}

/// A pair that exchanges `burst` messages each time it is told `Go`: a chain in the
/// LIFO slot of the worker that runs it, and nothing at all in between (no timer that
/// could wake an idle worker by chance).
fn bursty_pair(cx: &Context<()>, burst: u32) -> Pid<Pair> {
    cx.spawn(move |mut cx: Context<Pair>| async move {
        let me = cx.pid();
        let other = cx.spawn(move |mut cx: Context<Pid<Pair>>| async move {
            loop {
                let from = cx.recv().await;
                from.send(Pair::Pong);
            }
        });
        let mut goes = 0u32;
        loop {
            if goes == 0 {
                if let Pair::Go = cx.recv().await {
                    goes += 1;
                }
                continue;
            }
            goes -= 1;
            for _ in 0..burst {
                other.send(me);
                // A `Go` that arrives mid-burst is one more burst.
                while let Pair::Go = cx.recv().await {
                    goes += 1;
                }
            }
        }
    })
}

fn serve_echo_and_drive(threads: usize) {
    let rt = Runtime::builder()
        .threads(threads)
        .busy_wait(Duration::ZERO)
        .build()
        .unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    rt.handle().spawn(move |cx: Context<()>| async move {
        let pair = bursty_pair(&cx, 200);
        let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        addr_tx.send(listener.local_addr().unwrap()).unwrap();
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let mut buf = [0u8; 64];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                stream.write_all(&buf[..n]).await.unwrap();
                pair.send(Pair::Go);
            }
            pair.send(Pair::Go);
        }
    });
    let addr = addr_rx.recv().unwrap();
    let mut back = [0u8; 8];
    for c in 0..CONNECTIONS {
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client.set_nodelay(true).unwrap();
        client.set_read_timeout(Some(GUARD)).unwrap();
        for i in 0..ROUND_TRIPS as u64 {
            client.write_all(&i.to_le_bytes()).unwrap();
            client.read_exact(&mut back).unwrap_or_else(|e| {
                panic!("connection {c}, round trip {i}: unanswered after {GUARD:?}: {e}")
            });
            assert_eq!(u64::from_le_bytes(back), i, "the echo of round trip {i}");
        }
    }
}

#[test]
fn a_process_woken_by_its_socket_runs_on_two_workers() {
    for _ in 0..RUNTIMES {
        serve_echo_and_drive(2);
    }
}

#[test]
fn a_process_woken_by_its_socket_runs_on_four_workers() {
    for _ in 0..RUNTIMES {
        serve_echo_and_drive(4);
    }
}

/// A pair that exchanges messages for ever: its worker never runs out of work, so it
/// only sees its sockets through its busy looks at the OS.
fn endless_pair(cx: &Context<()>) {
    let ping = cx.spawn(|mut cx: Context<Pid<u8>>| async move {
        loop {
            let from = cx.recv().await;
            from.send(0);
        }
    });
    cx.spawn(move |mut cx: Context<u8>| async move {
        loop {
            ping.send(cx.pid());
            cx.recv().await;
        }
    });
}

/// Rule of the busy looks (`scheduler/worker.rs`, `next_task`): a worker that never
/// runs out of work still serves a socket that wakes after a quiet spell, however its
/// looks at the OS are spaced (docs/design/0040 tried spacing them out while they find
/// nothing). Every worker runs an endless pair; the client pauses between round trips
/// so that the looks find nothing for a while (the pause makes the quiet, it
/// synchronises nothing); each answer must come before the read guard.
fn a_quiet_socket_is_served_on_busy_workers(threads: usize) {
    let rt = Runtime::builder().threads(threads).build().unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel::<SocketAddr>();
    rt.handle().spawn(move |cx: Context<()>| async move {
        for _ in 0..threads {
            endless_pair(&cx);
        }
        let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        addr_tx.send(listener.local_addr().unwrap()).unwrap();
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 8];
        loop {
            match stream.read(&mut buf).await.unwrap() {
                0 => break,
                n => stream.write_all(&buf[..n]).await.unwrap(),
            }
        }
    });
    let addr = addr_rx.recv().unwrap();
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client.set_read_timeout(Some(GUARD)).unwrap();
    let mut back = [0u8; 8];
    for i in 0..20u64 {
        std::thread::sleep(Duration::from_millis(20));
        client.write_all(&i.to_le_bytes()).unwrap();
        client
            .read_exact(&mut back)
            .unwrap_or_else(|e| panic!("round trip {i}: unanswered after {GUARD:?}: {e}"));
        assert_eq!(u64::from_le_bytes(back), i);
    }
}

#[test]
fn a_quiet_socket_is_served_while_its_one_worker_never_idles() {
    a_quiet_socket_is_served_on_busy_workers(1);
}

#[test]
fn a_quiet_socket_is_served_while_every_worker_never_idles() {
    a_quiet_socket_is_served_on_busy_workers(2);
}
