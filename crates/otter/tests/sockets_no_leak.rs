//! No descriptor leaks after many connections (TCP passive and active, UDP, and with the
//! feature `tokio` hyper over otter's sockets): every socket, and the reactor's own epoll
//! and eventfd, closed by the runtime's shutdown. One test in its own file: it counts the
//! descriptors of the whole test process, which other tests running beside it (those of
//! `sockets.rs`) would change.

use std::time::Duration;

use otter::net::{Active, ActiveTcpStream, Tcp, TcpListener, TcpStream};
use otter::{Context, Runtime};

/// A process handed an active stream: the stream, then its socket's messages.
#[derive(Debug)]
enum Heir {
    Stream(ActiveTcpStream),
    Tcp(Tcp),
}

impl From<Tcp> for Heir {
    fn from(t: Tcp) -> Heir {
        Heir::Tcp(t)
    }
}

/// How long a client waits for its echo before it reports a failure rather than hang.
const GUARD: Duration = Duration::from_secs(30);

fn any_port() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
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

#[test]
fn no_descriptor_leaks_after_many_connections() {
    // Counted with no runtime, then after four rounds of 200 connections on one, 50
    // active streams handed on, and its shutdown: every socket, and the reactor's own
    // epoll and eventfd, closed.
    let fds = || std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let before = fds();
    let rt = Runtime::builder().threads(4).build().unwrap();
    for _ in 0..4 {
        let r = rt.block_on(|mut cx: Context<usize>| async move {
            let listener = TcpListener::bind(any_port()).unwrap();
            let addr = listener.local_addr().unwrap();
            cx.spawn(move |cx: Context<()>| echo_server(cx, listener));
            let root = cx.pid();
            for _ in 0..200 {
                cx.spawn(move |_: Context<()>| async move {
                    let mut s = TcpStream::connect(addr).await.unwrap();
                    s.write_all(b"x").await.unwrap();
                    let mut b = [0u8; 1];
                    s.read_exact(&mut b).await.unwrap();
                    root.send(1);
                });
            }
            let mut n = 0;
            for _ in 0..200 {
                n += cx.recv().await;
            }
            n
        });
        assert_eq!(r.unwrap(), 200);
    }
    // Active streams handed to another process (`controlling_process`), whose first
    // owner ends; and an accept cut short by a timeout.
    let r = rt.block_on(|mut cx: Context<usize>| async move {
        let listener = TcpListener::bind(any_port()).unwrap();
        let addr = listener.local_addr().unwrap();
        let cut_short = otter::timeout(Duration::from_millis(5), listener.accept())
            .await
            .is_err();
        let root = cx.pid();
        for _ in 0..50 {
            // The client reports its own outcome, so that a connection gone wrong fails
            // the test instead of leaving it waiting.
            cx.spawn(move |_: Context<()>| async move {
                let echoed = async {
                    let mut s = TcpStream::connect(addr).await?;
                    s.write_all(b"y").await?;
                    let mut b = [0u8; 1];
                    s.read_exact(&mut b).await?;
                    Ok::<_, std::io::Error>(b == *b"y")
                };
                let ok = matches!(otter::timeout(GUARD, echoed).await, Ok(Ok(true)));
                root.send(usize::from(ok));
            });
            let (conn, _) = listener.accept().await.unwrap();
            let heir = cx.spawn(move |mut c: Context<Heir>| async move {
                // `Active::N(0)` answers `Passive` to whoever owns the stream when its
                // reader gets to it: possibly this process, before the stream itself.
                let Heir::Stream(s) = c.recv_match(|m| matches!(m, Heir::Stream(_))).await else {
                    unreachable!()
                };
                s.set_active(Active::Once);
                while let Heir::Tcp(t) = c.recv().await {
                    if let Tcp::Data(_, d) = t {
                        let _ = s.write_all(&d).await;
                        return;
                    }
                }
            });
            cx.spawn(move |c: Context<Heir>| async move {
                let s = conn.into_active(&c, Active::N(0));
                s.controlling_process(heir);
                heir.send(Heir::Stream(s));
            });
        }
        let mut n = 0;
        for _ in 0..50 {
            n += cx.recv().await;
        }
        n + usize::from(cut_short)
    });
    assert_eq!(r.unwrap(), 51);
    // UDP senders that end (a socket that is always ready, `scheduler_fairness.rs`).
    let sink = std::net::UdpSocket::bind(any_port()).unwrap();
    let target = sink.local_addr().unwrap();
    let r = rt.block_on(move |mut cx: Context<usize>| async move {
        let root = cx.pid();
        for _ in 0..50 {
            cx.spawn(move |_: Context<()>| async move {
                let socket = otter::net::UdpSocket::bind(any_port()).unwrap();
                let sent = socket.send_to(&[0u8; 64], target).await.is_ok();
                root.send(usize::from(sent));
            });
        }
        let mut n = 0;
        for _ in 0..50 {
            n += cx.recv().await;
        }
        n
    });
    assert_eq!(r.unwrap(), 50);
    drop(sink);
    #[cfg(feature = "tokio")]
    hyper_over_otter_sockets(&rt);
    drop(rt);
    assert_eq!(
        fds(),
        before,
        "descriptors before the runtime and after its shutdown"
    );
}

/// hyper's server and client over otter's own sockets (tokio's IO traits, feature
/// `tokio`): 20 connections, one request each.
#[cfg(feature = "tokio")]
fn hyper_over_otter_sockets(rt: &Runtime) {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper_util::rt::TokioIo;
    let r = rt.block_on(|cx: Context<()>| async move {
        let listener = TcpListener::bind(any_port()).unwrap();
        let addr = listener.local_addr().unwrap();
        cx.spawn(move |cx: Context<()>| async move {
            for _ in 0..20 {
                let (stream, _) = listener.accept().await.unwrap();
                cx.spawn(move |_: Context<()>| async move {
                    let hello = |_| async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from_static(b"hi"),
                        )))
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
                        .await;
                });
            }
        });
        let mut ok = 0;
        for _ in 0..20 {
            let stream = TcpStream::connect(addr).await.unwrap();
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            cx.spawn(move |_: Context<()>| async move {
                let _ = conn.await;
            });
            let req = hyper::Request::get("/")
                .header("host", "localhost")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let body = send.send_request(req).await.unwrap().into_body();
            ok += usize::from(body.collect().await.unwrap().to_bytes() == "hi");
        }
        ok
    });
    assert_eq!(r.unwrap(), 20);
}
