//! An HTTP job API with axum, served by otter: what a tokio team changes when it moves an
//! axum service onto otter's processes (feature `tokio`).
//!
//! * **Connections**: an acceptor pool (`start_acceptor_pool`), one process per
//!   connection; hyper serves each over otter's own `TcpStream` (`TokioIo`), with the axum
//!   router as its service (`TowerToHyperService`). No tokio runtime is involved.
//! * **Jobs**: each job is a [`Server`] under a simple_one_for_one supervisor, registered
//!   as `job/ID`; `GET /jobs/{id}` calls it by name. A job's blocking work runs on otter's
//!   blocking pool (`spawn_blocking`), awaited by a helper process, so the job answers
//!   calls meanwhile.
//! * **Outgoing HTTP**: the client at the end is hyper's, over a `TcpStream` otter
//!   connected, its connection driven by a process of its own.
//!
//! ```text
//! cargo run --example axum_jobs --features tokio
//! ```
//!
//! It serves on 127.0.0.1 (any free port), sends itself a few requests, prints them, stops
//! its tree and exits 0. The bench's `http` workload runs the same routes against plain
//! tokio (`bench/src/workloads/http/server.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use otter::net::{TcpStream, start_acceptor_pool};
use otter::server::{CallError, Flow, Info, Name, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorRef, SupervisorSpec};
use otter::{Context, ExitReason, Handle, Runtime};
use serde_json::{Value, json};

/// A job: a server that knows whether its work is done.
struct Job {
    done: bool,
}

enum JobCall {
    Done(ReplyTo<bool>),
}

/// From the job's helper: the work is over.
struct WorkDone;

impl Server for Job {
    /// Milliseconds of blocking work.
    type Args = u64;
    type Call = JobCall;
    type Cast = ();
    type Info = WorkDone;

    async fn init(work_ms: u64, cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        let me = ServerRef::<Job>::from(cx.pid());
        cx.spawn(move |_: Context<()>| async move {
            // A blocking call (a file, a library without async): off the workers.
            otter::blocking::spawn_blocking(move || {
                std::thread::sleep(Duration::from_millis(work_ms))
            })
            .await;
            me.info(WorkDone);
        });
        Ok(Job { done: false })
    }

    async fn handle_call(&mut self, call: JobCall, _: &mut ServerContext<Self>) -> Flow {
        let JobCall::Done(reply) = call;
        reply.reply(self.done);
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<WorkDone>, _: &mut ServerContext<Self>) -> Flow {
        if let Info::Message(WorkDone) = info {
            self.done = true;
        }
        Flow::Continue
    }
}

fn job_name(id: u64) -> Name<Job> {
    Name::from(format!("job/{id}"))
}

/// The router's state: the jobs' supervisor, the next id, and a handle for name look-ups.
#[derive(Clone)]
struct Jobs {
    sup: SupervisorRef,
    next: Arc<AtomicU64>,
    handle: Handle,
}

type Failure = (StatusCode, String);

async fn start_job(
    State(jobs): State<Jobs>,
    Json(body): Json<Value>,
) -> Result<(StatusCode, Json<Value>), Failure> {
    let work_ms = body["work_ms"].as_u64().unwrap_or(10).min(1000);
    let id = jobs.next.fetch_add(1, Ordering::Relaxed);
    let spec = ChildSpec::named_server::<Job>("job", job_name(id), move || work_ms)
        .restart(Restart::Temporary);
    jobs.sup
        .start_server_child::<Job>(spec)
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:?}")))?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "status": "running" })),
    ))
}

async fn job_status(State(jobs): State<Jobs>, Path(id): Path<u64>) -> Result<Json<Value>, Failure> {
    match job_name(id).call(&jobs.handle, JobCall::Done).await {
        Ok(done) => {
            let status = if done { "done" } else { "running" };
            Ok(Json(json!({ "id": id, "status": status })))
        }
        Err(CallError::Noproc) => Err((StatusCode::NOT_FOUND, format!("no job {id}"))),
        Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, format!("{e:?}"))),
    }
}

fn router(jobs: Jobs) -> Router {
    Router::new()
        .route("/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/jobs", post(start_job))
        .route("/jobs/{id}", get(job_status))
        .with_state(jobs)
}

/// One request over a client connection: the status and the JSON body.
async fn request(
    send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(body))
        .expect("a request");
    let res = send.send_request(req).await.expect("a response");
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.expect("a body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn main() {
    let rt = Runtime::new();
    let outcome = rt.block_on(|cx: Context<()>| async move {
        let sup = supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne))
            .await
            .expect("the jobs' supervisor");
        let app = router(Jobs {
            sup,
            next: Arc::new(AtomicU64::new(1)),
            handle: cx.handle(),
        });
        let pool = start_acceptor_pool(
            &cx,
            "127.0.0.1:0".parse().expect("an address"),
            4,
            move |_: Context<()>, stream: TcpStream| {
                let service = TowerToHyperService::new(app.clone());
                async move {
                    let _ = stream.set_nodelay(true);
                    // The connection's process serves it until the client closes.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            },
        )
        .await
        .expect("a listener");
        println!("serving on http://{}", pool.local_addr());

        // The outgoing side: hyper's client over a socket otter connected.
        let stream = TcpStream::connect(pool.local_addr())
            .await
            .expect("connect");
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        cx.spawn(move |_: Context<()>| async move {
            let _ = conn.await;
        });

        let health = request(&mut send, "GET", "/health", None).await;
        println!("GET /health -> {} {}", health.0, health.1);
        let created = request(&mut send, "POST", "/jobs", Some(json!({ "work_ms": 20 }))).await;
        println!("POST /jobs -> {} {}", created.0, created.1);
        let id = created.1["id"].as_u64().expect("an id");
        let path = format!("/jobs/{id}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let done = loop {
            let status = request(&mut send, "GET", &path, None).await;
            println!("GET {path} -> {} {}", status.0, status.1);
            if status.1["status"] == "done" || Instant::now() > deadline {
                break status;
            }
            cx.sleep(Duration::from_millis(10)).await;
        };
        let missing = request(&mut send, "GET", "/jobs/999", None).await;
        println!("GET /jobs/999 -> {}", missing.0);
        drop(send);
        // Stop the tree (the jobs with it) before the runtime goes.
        sup.stop().await.expect("the supervisor stops");
        (
            health.0,
            created.0,
            done.0,
            done.1["status"].clone(),
            missing.0,
        )
    });
    let (health, created, done, status, missing) = outcome.expect("the root process");
    assert_eq!((health, created, done, missing), (200, 201, 200, 404));
    assert_eq!(status, "done");
    println!("ok");
}
