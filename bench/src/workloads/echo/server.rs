//! `echo-server`: otter's TCP echo server (WORKLOADS.md "echo").
//!
//! On a runtime of `threads` workers, a listener process binds 127.0.0.1:port
//! (`SO_REUSEADDR`, a backlog of 1,024: `TcpListener::bind`) and accepts in a loop; each
//! connection gets a process of its own, which sets `TCP_NODELAY` and echoes what arrives
//! until the peer closes:
//!
//! * `mode=passive`: the process reads the socket itself (`read`, Erlang's `{active,false}`
//!   and `gen_tcp:recv(S, 0)`) into a 16 KiB buffer and writes back what it read;
//! * `mode=active`: the socket's data arrives as `Tcp::Data` messages, one at a time
//!   (`Active::Once`, Erlang's `{active,once}`); the process writes each back, then asks for
//!   the next.
//!
//! The main thread prints the line once the listener is bound, then reads stdin until it
//! closes, and drops the runtime (which closes every socket) and exits 0. A port that
//! cannot be bound is exit 3 with one line on stderr.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use otter::net::{Active, Tcp, TcpListener, TcpStream};
use otter::{Context, Runtime};
use serde_json::{Map, Value};

use crate::args::Params;

/// The buffer of a passive connection's reads.
const READ_BUF: usize = 16 * 1024;

/// Runs the server until stdin closes.
pub(super) fn main(p: &Params, threads: usize) -> ExitCode {
    let port = p.int("port") as u16;
    let active = p.choice("mode") == "active";
    let rt = match Runtime::builder()
        .threads(threads)
        .thread_name("echo-server")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("otter-bench: echo-server: cannot start the runtime: {e}");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
    };
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    rt.handle().spawn(move |cx: Context<()>| async move {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = match TcpListener::bind(addr) {
            Ok(l) => l,
            Err(e) => {
                let _ = bound_tx.send(Err(format!("cannot listen on {addr}: {e}")));
                return;
            }
        };
        let _ = bound_tx.send(
            listener
                .local_addr()
                .map(|a| a.port())
                .map_err(|e| format!("no local address: {e}")),
        );
        accept_loop(cx, listener, active).await;
    });
    let port = match bound_rx.recv() {
        Ok(Ok(port)) => port,
        Ok(Err(why)) => {
            eprintln!("otter-bench: echo-server: {why}");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
        Err(_) => {
            eprintln!("otter-bench: echo-server: the listener process ended before binding");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
    };
    println!("{}", line(p, port, threads));
    // Until stdin is closed (or fails): whatever arrives on it is ignored.
    let mut sink = [0u8; 256];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    drop(rt);
    ExitCode::SUCCESS
}

/// The server's JSON line: the contract's fields, then `params`, `build` and `alloc` as in
/// every line of this binary.
fn line(p: &Params, port: u16, threads: usize) -> Value {
    let mut m = Map::new();
    m.insert("bench".into(), "echo-server".into());
    m.insert("impl".into(), "otter".into());
    m.insert("port".into(), port.into());
    m.insert("mode".into(), p.choice("mode").into());
    m.insert("threads".into(), threads.into());
    let mut params = p.to_json();
    params["port"] = port.into();
    m.insert("params".into(), params);
    crate::json_line::add_build(&mut m);
    Value::Object(m)
}

/// Accepts connections, one process each. An accept that fails (out of descriptors, say) is
/// said on stderr and retried after a pause, so that the server outlives a burst.
async fn accept_loop(cx: Context<()>, listener: TcpListener, active: bool) {
    loop {
        match listener.accept().await {
            Ok((conn, _)) => {
                if active {
                    cx.spawn(move |cx: Context<Tcp>| echo_active(cx, conn));
                } else {
                    cx.spawn(move |_: Context<()>| echo_passive(conn));
                }
            }
            Err(e) => {
                eprintln!("otter-bench: echo-server: accept: {e}");
                cx.sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Passive: reads what has arrived and writes it back, until the peer closes.
async fn echo_passive(mut conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut buf = vec![0u8; READ_BUF];
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
}

/// Active, once: each chunk arrives as a message; written back, then the next is asked for.
async fn echo_active(mut cx: Context<Tcp>, conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let conn = conn.into_active(&cx, Active::Once);
    loop {
        match cx.recv().await {
            Tcp::Data(_, data) => {
                if conn.write_all(&data).await.is_err() {
                    return;
                }
                conn.set_active(Active::Once);
            }
            Tcp::Passive(_) => conn.set_active(Active::Once),
            Tcp::Closed(_) | Tcp::Error(..) => return,
        }
    }
}
