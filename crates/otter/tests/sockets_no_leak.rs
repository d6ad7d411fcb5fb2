//! No descriptor leaks after many connections: every socket, and the reactor's own epoll
//! and eventfd, closed by the runtime's shutdown. One test in its own file: it counts the
//! descriptors of the whole test process, which other tests running beside it (those of
//! `sockets.rs`) would change.

use otter::net::{TcpListener, TcpStream};
use otter::{Context, Runtime};

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
    // Counted with no runtime, then after four rounds of 200 connections on one and its
    // shutdown: every socket, and the reactor's own epoll and eventfd, closed.
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
    drop(rt);
    assert_eq!(
        fds(),
        before,
        "descriptors before the runtime and after its shutdown"
    );
}
