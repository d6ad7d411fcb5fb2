//! The dashboard's HTTP side: the acceptor process, a process per connection running
//! hyper's HTTP/1 server, and each request's checks (limits, token, method) before
//! [`api`](super::api) answers it.

use std::convert::Infallible;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::api::{self, Answer, Shared};
use super::io::Io;
use super::sampler;
use crate::introspect::{self, Kind};
use crate::net::{TcpListener, TcpStream};
use crate::process::Context;

/// The dashboard's limits (module docs, "Security").
pub mod limits {
    use std::time::Duration;

    /// The most bytes of a request's line and headers (hyper's read buffer); more gets
    /// 431, as do more than 100 headers.
    pub const HEADERS: usize = 16 * 1024;
    /// The most bytes of a request's path and query; more gets 414.
    pub const URL: usize = 2048;
    /// The most bytes of a request's body; more gets 413.
    pub const BODY: usize = 4096;
    /// The most connections served at once; the next are closed as soon as accepted.
    pub const CONNECTIONS: usize = 64;
    /// How long a connection is served before it is closed (a browser opens another).
    pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
}

/// The acceptor's messages: none is ever sent (its pid is the dashboard's handle for
/// an exit signal).
#[derive(Debug)]
pub(super) struct AcceptorMsg(());

/// The acceptor's process: takes over `listener`, starts the sampler, and spawns a
/// process per connection; all are linked to it (`dashboard.rs`, "Processes and cost").
pub(super) async fn accept_loop(
    cx: Context<AcceptorMsg>,
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
) -> std::io::Result<()> {
    let listener = TcpListener::from_std(listener)?;
    let sampled = shared.clone();
    cx.spawn_link(move |c: Context<()>| sampler::run(c, sampled));
    loop {
        let (stream, _) = listener.accept_next().await;
        if shared.connections.fetch_add(1, Ordering::Relaxed) >= limits::CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        let shared = shared.clone();
        let pid = cx.spawn_link(move |c: Context<()>| connection(c, stream, shared));
        introspect::set_kind(pid.id().0, Kind::Connection);
    }
}

/// Gives a connection's place back when its process ends, however it ends.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's process: hyper serves it until the client closes it, an error, or
/// [`limits::CONNECTION_LIFETIME`].
async fn connection(cx: Context<()>, stream: TcpStream, shared: Arc<Shared>) {
    let slot = Slot(shared);
    let _ = stream.set_nodelay(true);
    let served = slot.0.clone();
    let service = hyper::service::service_fn(move |req| {
        let shared = served.clone();
        async move { Ok::<_, Infallible>(respond(&shared, req).await) }
    });
    let mut conn = pin!(
        hyper::server::conn::http1::Builder::new()
            .max_buf_size(limits::HEADERS)
            .serve_connection(Io(stream), service)
    );
    let mut lifetime = pin!(cx.sleep(limits::CONNECTION_LIFETIME));
    // A protocol error or a reset ends the connection: nothing to report.
    poll_fn(|task| {
        if conn.as_mut().poll(task).is_ready() || lifetime.as_mut().poll(task).is_ready() {
            return Poll::Ready(());
        }
        Poll::Pending
    })
    .await;
}

/// Checks a request and answers it.
async fn respond(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    if path.len() + query.len() > limits::URL {
        return reply(Answer::error(
            StatusCode::URI_TOO_LONG,
            "the URL is too long",
        ));
    }
    if let Some(refused) = refuse(shared, &parts.headers, query) {
        return reply(refused);
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits::BODY as u64) {
        return reply(Answer::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is too large",
        ));
    }
    // No endpoint reads a body; it is read (up to the limit) so that one too large is
    // refused whatever its framing.
    if Limited::new(body, limits::BODY).collect().await.is_err() {
        return reply(Answer::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is too large",
        ));
    }
    reply(api::route(shared, &parts.method, path, query, &parts.headers).await)
}

/// The answer to a request that may not go on: a missing or wrong token (401), or,
/// with no token, a `Host` that is not the loopback address the dashboard listens on
/// (403: a page of another site that renamed itself to 127.0.0.1, DNS rebinding).
fn refuse(shared: &Shared, headers: &hyper::HeaderMap, query: &str) -> Option<Answer> {
    match &shared.token {
        Some(token) => {
            let bearer = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let given = bearer.or_else(|| api::param(query, "token"));
            if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
                None
            } else {
                Some(Answer::error(
                    StatusCode::UNAUTHORIZED,
                    "this dashboard needs its token",
                ))
            }
        }
        None => {
            let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
            let port = shared.local_addr.port();
            let local = host.is_none_or(|h| {
                ["127.0.0.1", "localhost", "[::1]"]
                    .iter()
                    .any(|name| h == format!("{name}:{port}"))
            });
            (!local).then(|| Answer::error(StatusCode::FORBIDDEN, "not a local host name"))
        }
    }
}

/// Whether `a == b`, in a time that does not depend on where they first differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn reply(a: Answer) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(a.body)));
    *r.status_mut() = a.status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(a.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// The methods an endpoint takes, for a 405.
pub(super) fn method_is(method: &Method, want: &Method) -> Result<(), Answer> {
    if method == want {
        Ok(())
    } else {
        Err(Answer::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        ))
    }
}
