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
