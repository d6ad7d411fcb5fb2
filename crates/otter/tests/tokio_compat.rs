//! The tokio ecosystem inside processes (feature `tokio`): a real tokio-based HTTP
//! server (hyper) and client (hyper) run inside otter processes, over tokio's sockets on
//! 127.0.0.1, each wrapped in `otter::compat::tokio`.

#[path = "support/rt.rs"]
mod support;

use std::convert::Infallible;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use otter::compat::tokio as in_tokio;
use otter::{Context, Runtime};

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello from an otter process, {}", req.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

/// Serves one HTTP/1.1 connection with `hello`.
async fn serve(stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin) {
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
        .await
        .unwrap();
}

/// A GET of `path` over a hyper client connection's sender: the body.
async fn get(
    send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: &str,
) -> String {
    let req = Request::get(path)
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let res = send.send_request(req).await.unwrap();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

rt_test!(
    a_hyper_server_and_client_run_inside_processes,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<()>| async move {
            let listener = in_tokio(tokio::net::TcpListener::bind("127.0.0.1:0"))
                .await
                .unwrap();
            let addr = listener.local_addr().unwrap();
            // The server: one otter process, serving three connections.
            cx.spawn(move |_: Context<()>| {
                in_tokio(async move {
                    for _ in 0..3 {
                        let (stream, _) = listener.accept().await.unwrap();
                        serve(stream).await;
                    }
                })
            });
            // The client: this process, three requests on three connections.
            let mut bodies = Vec::new();
            for path in ["/a", "/b", "/c"] {
                let body = in_tokio(async move {
                    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
                    let (mut send, conn) =
                        hyper::client::conn::http1::handshake(TokioIo::new(stream))
                            .await
                            .unwrap();
                    tokio::spawn(conn);
                    get(&mut send, path).await
                })
                .await;
                bodies.push(body);
            }
            bodies
        });
        assert_eq!(
            r.unwrap(),
            ["/a", "/b", "/c"].map(|p| format!("hello from an otter process, {p}"))
        );
    }
);

rt_test!(
    a_hyper_server_and_client_run_over_otters_own_sockets_without_a_tokio_context,
    |rt: &Runtime| {
        // otter's `TcpStream` implements tokio's IO traits: hyper serves a socket that
        // otter's listener accepted (one process per connection), and its client talks
        // over a socket otter connected; nothing is wrapped in `compat::tokio`.
        let r = rt.block_on(|cx: Context<()>| async move {
            let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = listener.local_addr().unwrap();
            cx.spawn(move |cx: Context<()>| async move {
                for _ in 0..3 {
                    let (stream, _) = listener.accept().await.unwrap();
                    cx.spawn(move |_: Context<()>| async move {
                        serve(stream).await;
                    });
                }
            });
            let mut bodies = Vec::new();
            for path in ["/x", "/y", "/z"] {
                let stream = otter::net::TcpStream::connect(addr).await.unwrap();
                let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .unwrap();
                cx.spawn(move |_: Context<()>| async move {
                    let _ = conn.await;
                });
                bodies.push(get(&mut send, path).await);
            }
            bodies
        });
        assert_eq!(
            r.unwrap(),
            ["/x", "/y", "/z"].map(|p| format!("hello from an otter process, {p}"))
        );
    }
);

/// Spawns a tokio task when dropped: what hyper-util's pooled connections and
/// `async-compat`'s guards do in their `Drop`, which panics outside a tokio context.
struct SpawnOnDrop(otter::Pid<Msg>);

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        tokio::spawn(async {});
        self.0.send(Msg::DroppedInContext);
    }
}

#[derive(Debug)]
enum Msg {
    Ready,
    DroppedInContext,
    Down(otter::Down),
}

impl From<otter::Down> for Msg {
    fn from(d: otter::Down) -> Msg {
        Msg::Down(d)
    }
}

rt_test!(
    a_wrapped_future_dropped_by_its_processs_exit_is_dropped_inside_tokios_context,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let me = cx.pid();
            let (pid, _) = cx.spawn_monitor(move |_: Context<()>| {
                in_tokio(async move {
                    let _guard = SpawnOnDrop(me);
                    me.send(Msg::Ready);
                    std::future::pending::<()>().await
                })
            });
            let ready = cx.recv().await;
            cx.exit(pid, otter::ExitReason::Kill);
            let mut dropped = false;
            let mut down = None;
            while down.is_none() || !dropped {
                match cx.recv_timeout(std::time::Duration::from_secs(10)).await {
                    Some(Msg::DroppedInContext) => dropped = true,
                    Some(Msg::Down(d)) => down = Some(d.reason),
                    other => return Err(format!("unexpected {other:?} (dropped: {dropped})")),
                }
            }
            Ok((matches!(ready, Msg::Ready), down))
        });
        assert_eq!(r.unwrap(), Ok((true, Some(otter::ExitReason::Killed))));
    }
);

/// The slow handler: the request is in flight for a while, so a kill lands mid-request.
async fn slow(
    req: Request<Incoming>,
    arrived: otter::Pid<Arrival>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    arrived.send(Arrival);
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    Ok(Response::new(Full::new(Bytes::from(
        req.uri().path().to_string(),
    ))))
}

#[derive(Debug)]
struct Arrival;

#[derive(Debug)]
enum Load {
    Arrived,
    Down,
}

impl From<Arrival> for Load {
    fn from(_: Arrival) -> Load {
        Load::Arrived
    }
}

impl From<otter::Down> for Load {
    fn from(_: otter::Down) -> Load {
        Load::Down
    }
}

rt_test!(
    a_pooled_client_whose_processes_are_killed_mid_request_keeps_serving,
    |rt: &Runtime| {
        use hyper_util::client::legacy::Client;
        use hyper_util::rt::TokioExecutor;
        const KILLS: usize = 1000;
        let r = rt.block_on(|mut cx: Context<Load>| async move {
            // The service: otter's listener, a process per connection, hyper inside.
            let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = listener.local_addr().unwrap();
            let me = cx.pid();
            let arrivals: otter::Pid<Arrival> =
                cx.spawn(move |mut acx: Context<Arrival>| async move {
                    loop {
                        acx.recv().await;
                        me.send(Load::Arrived);
                    }
                });
            cx.spawn(move |cx: Context<()>| async move {
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    cx.spawn(move |_: Context<()>| {
                        in_tokio(async move {
                            let service = hyper::service::service_fn(move |r| slow(r, arrivals));
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        })
                    });
                }
            });
            // The client: one pool shared by every requesting process.
            // With a pool timer, the pool spawns its idle reaper when a connection first
            // goes back to it: a spawn that may come from a dropped request's `Drop`.
            let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
                .pool_timer(hyper_util::rt::TokioTimer::new())
                .build_http();
            let uri: hyper::Uri = format!("http://{addr}/job").parse().unwrap();
            let mut served = 0;
            for i in 0..KILLS {
                let (pool, to) = (client.clone(), uri.clone());
                let (pid, _) = cx.spawn_monitor(move |_: Context<()>| {
                    in_tokio(async move {
                        let _ = pool.get(to).await;
                    })
                });
                // Killed once its request has reached the service, mid-request.
                let mut arrived = false;
                while !arrived {
                    match cx.recv().await {
                        Load::Arrived => arrived = true,
                        Load::Down => return Err(format!("request {i} ended before its kill")),
                    }
                }
                cx.exit(pid, otter::ExitReason::Kill);
                match cx.recv().await {
                    Load::Down => {}
                    Load::Arrived => return Err("an arrival without a request".into()),
                }
                if i % 100 == 99 {
                    // The pool still works and the service still serves.
                    let (pool, to) = (client.clone(), uri.clone());
                    let status =
                        in_tokio(async move { pool.get(to).await.map(|r| r.status()) }).await;
                    match cx.recv().await {
                        Load::Arrived => {}
                        Load::Down => return Err("a Down without a kill".into()),
                    }
                    if status.map_err(|e| e.to_string())? == hyper::StatusCode::OK {
                        served += 1;
                    }
                }
            }
            Ok(served)
        });
        assert_eq!(r.unwrap(), Ok(KILLS / 100));
    }
);

/// tokio code as written, in a runtime built with `tokio_context(true)`, on `threads`.
fn tokio_as_written(threads: usize) {
    let rt = Runtime::builder()
        .threads(threads)
        .tokio_context(true)
        .build()
        .unwrap();
    let r = rt.block_on(|mut cx: Context<Msg>| async move {
        let timed_out = tokio::time::timeout(
            std::time::Duration::from_millis(1),
            std::future::pending::<()>(),
        )
        .await
        .is_err();
        let spawned = tokio::spawn(async { 7 }).await.unwrap();
        // A child process, whichever thread runs it, has the context too.
        let (child, _) = cx.spawn_monitor(|_: Context<()>| async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let (a, b) = tokio::join!(l.accept(), tokio::net::TcpStream::connect(addr));
            assert!(a.is_ok() && b.is_ok());
        });
        let _ = child;
        let child_exit = match cx.recv().await {
            Msg::Down(d) => d.reason,
            other => panic!("unexpected {other:?}"),
        };
        (timed_out, spawned, child_exit)
    });
    assert_eq!(r.unwrap(), (true, 7, otter::ExitReason::Normal));
}

#[test]
fn tokio_code_runs_as_written_with_tokio_context_on_one_worker() {
    tokio_as_written(1);
}

#[test]
fn tokio_code_runs_as_written_with_tokio_context_on_many_workers() {
    tokio_as_written(support::MANY);
}

rt_test!(
    without_tokio_context_a_tokio_call_exits_with_a_reason_that_names_the_fix,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Msg>| async move {
            let (_, _) = cx.spawn_monitor(|_: Context<()>| async {
                tokio::spawn(async {});
            });
            match cx.recv().await {
                Msg::Down(d) => d.reason,
                other => panic!("unexpected {other:?}"),
            }
        });
        match r.unwrap() {
            otter::ExitReason::Panic(m) => {
                assert!(m.contains("otter::compat::tokio"), "{m}");
                assert!(m.contains("tokio_context(true)"), "{m}");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
);

/// A server for calls from outside otter: answers, holds, or crashes.
struct Jobs;

enum JobReq {
    Echo(u32, otter::server::ReplyTo<u32>),
    Never(otter::server::ReplyTo<u32>),
    Crash(otter::server::ReplyTo<u32>),
}

impl otter::server::Server for Jobs {
    type Args = ();
    type Call = JobReq;
    type Cast = ();
    type Info = ();
    async fn init(
        _: (),
        _: &mut otter::server::ServerContext<Self>,
    ) -> Result<Self, otter::ExitReason> {
        Ok(Jobs)
    }
    async fn handle_call(
        &mut self,
        r: JobReq,
        _: &mut otter::server::ServerContext<Self>,
    ) -> otter::server::Flow {
        match r {
            JobReq::Echo(n, from) => from.reply(n),
            JobReq::Never(from) => std::mem::forget(from),
            JobReq::Crash(from) => panic!("job crashed, {from:?} waiting"),
        }
        otter::server::Flow::Continue
    }
}

#[test]
fn a_plain_tokio_task_calls_a_server_by_ref_and_by_name_with_the_same_errors() {
    use otter::server::{CallError, Name, Server};
    const JOBS: Name<Jobs> = Name::new("jobs");
    let rt = Runtime::builder().threads(2).build().unwrap();
    let handle = rt.handle();
    // The server lives in otter; nothing of otter runs on the tokio side but the calls.
    let server = rt
        .block_on(|cx: Context<()>| async move {
            let s = Jobs::start(&cx, ()).await.unwrap();
            cx.register("jobs", s.pid()).unwrap();
            s
        })
        .unwrap();
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let got = tokio_rt.block_on(async move {
        let task = tokio::spawn(async move {
            let by_ref = server.call(|r| JobReq::Echo(1, r)).await;
            let by_name = JOBS.call(&handle, |r| JobReq::Echo(2, r)).await;
            let timeout = server
                .call_timeout(JobReq::Never, Some(std::time::Duration::from_millis(20)))
                .await;
            let crash = server.call(JobReq::Crash).await;
            let noproc = server.call(|r| JobReq::Echo(3, r)).await;
            let noproc_by_name = JOBS.call(&handle, |r| JobReq::Echo(4, r)).await;
            (by_ref, by_name, timeout, crash, noproc, noproc_by_name)
        });
        task.await.unwrap()
    });
    let (by_ref, by_name, timeout, crash, noproc, noproc_by_name) = got;
    assert_eq!((by_ref, by_name), (Ok(1), Ok(2)));
    assert_eq!(timeout, Err(CallError::Timeout));
    assert!(
        matches!(&crash, Err(CallError::Exit(otter::ExitReason::Panic(m))) if m.contains("job crashed")),
        "{crash:?}"
    );
    assert_eq!(noproc, Err(CallError::Noproc));
    assert_eq!(noproc_by_name, Err(CallError::Noproc));
}

rt_test!(
    tokio_select_races_a_receive_against_a_sleep_in_a_process,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<u32>| async move {
            let me = cx.pid();
            cx.send_after(me, 7, std::time::Duration::from_millis(5));
            let mut got = Vec::new();
            for _ in 0..2 {
                tokio::select! {
                    m = cx.recv() => got.push(Some(m)),
                    _ = otter::timeout(std::time::Duration::from_millis(50), std::future::pending::<()>()) => got.push(None),
                }
            }
            got
        });
        assert_eq!(r.unwrap(), [Some(7), None]);
    }
);

/// A byte pattern no two nearby offsets share.
fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ (i / 251) as u8)
        .collect()
}

rt_test!(
    an_otter_socket_read_through_tokio_fills_uninitialized_and_initialized_buffers_alike,
    |rt: &Runtime| {
        use tokio::io::AsyncReadExt;
        const LEN: usize = 1 << 20;
        let r = rt.block_on(|_: Context<()>| async move {
            let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = listener.local_addr().unwrap();
            // Two clients on OS threads, each writing the pattern and closing.
            let clients: Vec<_> = (0..2)
                .map(|_| {
                    std::thread::spawn(move || {
                        use std::io::Write;
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        s.write_all(&pattern(LEN)).unwrap();
                    })
                })
                .collect();
            // An uninitialized buffer (a `Vec`'s spare capacity, as hyper's), read
            // through the scratch buffer.
            let (mut first, _) = listener.accept().await.unwrap();
            let mut uninit = Vec::with_capacity(4096);
            while first.read_buf(&mut uninit).await.unwrap() > 0 {
                uninit.reserve(4096);
            }
            // An initialized one, read into directly.
            let (mut second, _) = listener.accept().await.unwrap();
            let mut init = Vec::new();
            let mut chunk = [0u8; 3000];
            loop {
                match second.read(&mut chunk).await.unwrap() {
                    0 => break,
                    n => init.extend_from_slice(&chunk[..n]),
                }
            }
            for c in clients {
                c.join().unwrap();
            }
            let expected = pattern(LEN);
            (uninit == expected, init == expected)
        });
        assert_eq!(r.unwrap(), (true, true));
    }
);
