//! `echo-server`: otter's TCP echo server (WORKLOADS.md "echo").
//!
//! On a runtime of `threads` workers, a listener process binds 127.0.0.1:port
//! (`SO_REUSEADDR`, a backlog of 1,024: `TcpListener::bind`) and accepts in a loop; each
//! connection gets a process of its own, which sets `TCP_NODELAY` and echoes what arrives
//! until the peer closes:
//!
//! * `mode=passive`: the process reads the socket itself (Erlang's `{active,false}` and
//!   `gen_tcp:recv(S, 0)`): it waits until the socket is readable (`readable`), reads what
//!   has arrived into its worker thread's 16 KiB scratch buffer (`try_read`) and writes it
//!   back without waiting (`try_write`) while the kernel takes it; only what the kernel's
//!   send buffer does not take is copied out, to be written with `write_all`. The buffer
//!   is borrowed between the read and the write, never across an `.await` (the process
//!   may go on on another worker), so an idle connection holds no buffer: its process,
//!   its socket and its registration;
//! * `mode=active`: the socket's data arrives as `Tcp::Data` messages, one at a time
//!   (`Active::Once`, Erlang's `{active,once}`); the process writes each back, then asks for
//!   the next. An idle connection holds two processes (its own and the socket's reader) and
//!   its own mailbox, no read buffer.
//!
//! `busy_wait_us=N` sets the runtime's `Builder::busy_wait` (default 0, the runtime's
//! default): how long an idle worker keeps polling before it may sleep; 200 is otter's
//! rule before the setting (docs/design/0025).
//!
//! The main thread prints the line once the listener is bound, then reads stdin until it
//! closes, and drops the runtime (which closes every socket) and exits 0. A port that
//! cannot be bound is exit 3 with one line on stderr.

use std::cell::RefCell;
use std::io::{ErrorKind, Read};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use otter::net::{Active, Tcp, TcpListener, TcpStream};
use otter::{Context, Runtime};
use serde_json::{Map, Value};

use crate::args::Params;

/// The longest `busy_wait_us` (1 s): a busy wait is a matter of microseconds.
pub(super) const MAX_BUSY_WAIT_US: u64 = 1_000_000;

/// The scratch buffer of passive connections' reads, one per worker thread.
const READ_BUF: usize = 16 * 1024;

thread_local! {
    /// See [`READ_BUF`]; allocated at a worker's first read.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs the server until stdin closes.
pub(super) fn main(p: &Params, threads: usize) -> ExitCode {
    let port = p.int("port") as u16;
    let active = p.choice("mode") == "active";
    let rt = match Runtime::builder()
        .threads(threads)
        .thread_name("echo-server")
        .busy_wait(Duration::from_micros(p.int("busy_wait_us")))
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

/// Passive: waits until the socket is readable, then echoes what has arrived (see the
/// module docs), until the peer closes.
async fn echo_passive(mut conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    loop {
        if conn.readable().await.is_err() {
            return;
        }
        match SCRATCH.with_borrow_mut(|buf| echo_ready(&conn, buf)) {
            Echoed::Done => {}
            Echoed::Rest(rest) => {
                if conn.write_all(&rest).await.is_err() {
                    return;
                }
            }
            Echoed::End => return,
        }
    }
}

/// What one read and its echo left to do.
enum Echoed {
    /// Nothing: all written back, or nothing read (a stale readiness).
    Done,
    /// These bytes, which the kernel's send buffer did not take.
    Rest(Vec<u8>),
    /// The peer closed, or the connection failed.
    End,
}

/// One read into `buf` (the worker's scratch buffer) and its echo, without waiting.
fn echo_ready(conn: &TcpStream, buf: &mut Vec<u8>) -> Echoed {
    if buf.is_empty() {
        buf.resize(READ_BUF, 0);
    }
    let n = match conn.try_read(buf) {
        Ok(0) => return Echoed::End,
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return Echoed::Done,
        Err(_) => return Echoed::End,
    };
    let mut done = 0;
    while done < n {
        match conn.try_write(&buf[done..n]) {
            Ok(0) => return Echoed::End,
            Ok(k) => done += k,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                return Echoed::Rest(buf[done..n].to_vec());
            }
            Err(_) => return Echoed::End,
        }
    }
    Echoed::Done
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

#[cfg(test)]
mod tests {
    /// The size of the futures `f` returns: the state a process of it keeps while it waits.
    fn future_size<A, F>(_: impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn an_idle_passive_connection_holds_no_buffer() {
        // Its future holds the stream and the wait (232 bytes on x86-64 today), not the
        // 16 KiB of a read buffer, which is its worker's.
        let size = future_size(super::echo_passive);
        assert!(size < 1024, "echo_passive's future is {size} bytes");
    }
}
