//! `http-server`: the http workload's JSON API, on otter or on plain tokio (WORKLOADS.md
//! "http"; the routes are in `http.rs`'s table).
//!
//! One axum [`Router`], generic over where its jobs live ([`Jobs`]), so that both servers
//! run the same handlers, the same JSON (de)serialisation and the same hyper HTTP/1.1
//! connection code; what differs is what a tokio team would change when moving to otter:
//!
//! * `impl=otter`: a runtime of `threads` workers (otherwise its default options). A root
//!   process starts the jobs' supervisor (simple_one_for_one) and an acceptor pool
//!   (`start_acceptor_pool`, [`ACCEPTORS`] acceptors) on 127.0.0.1:port; each connection's
//!   process serves hyper's `http1` connection over otter's own `TcpStream`
//!   (`TokioIo`, `TowerToHyperService`), so a request's handler runs in its connection's
//!   process. A job is a [`Job`] server registered as `job/ID`, a temporary child: `GET`
//!   calls it by name, `DELETE` stops it (`ServerRef::stop`, OTP's `gen_server:stop`: the
//!   connection's process waits for its exit; the supervisor forgets a temporary child
//!   that exits). Its work is submitted to otter's blocking pool from `init` and sends the
//!   server a message when done, so the job answers calls meanwhile.
//! * `impl=tokio`: a multi-thread tokio runtime of `threads` workers (otherwise its
//!   defaults) and `axum::serve`; a job is a task that awaits `spawn_blocking`, its status
//!   in a `std::sync::Mutex<HashMap>` (axum's advice for state held briefly); `DELETE`
//!   removes it and aborts its task.
//!
//! Both set `TCP_NODELAY` on every connection. The main thread prints the line once the
//! listener is bound, reads stdin until it closes, then drops the runtime and exits 0. A
//! port that cannot be bound is exit 3 with one line on stderr.

use std::collections::HashMap;
use std::future::Future;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use otter::net::TcpStream;
use otter::server::{CallError, Flow, Info, Name, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorRef, SupervisorSpec};
use otter::{Context, ExitReason, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::args::Params;

/// The otter server's acceptor processes.
pub(super) const ACCEPTORS: usize = 4;

/// How long `DELETE` waits for a job to stop (OTP's default for `gen_server:stop`
/// is infinity; a job stops at its next message).
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest job a request may ask for (1 s): the load's bound too.
pub(super) const MAX_WORK_US: u64 = 1_000_000;

/// Runs the server until stdin closes.
pub(super) fn main(p: &Params, threads: usize) -> ExitCode {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, p.int("port") as u16));
    let started = match p.choice("impl") {
        "tokio" => serve_tokio(addr, threads),
        _ => serve_otter(addr, threads),
    };
    let (port, stop) = match started {
        Ok(s) => s,
        Err(why) => {
            eprintln!("otter-bench: http-server: {why}");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
    };
    println!("{}", line(p, port, threads));
    // Until stdin is closed (or fails): whatever arrives on it is ignored.
    let mut sink = [0u8; 256];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    stop();
    ExitCode::SUCCESS
}

/// The server's JSON line, as `echo-server`'s.
fn line(p: &Params, port: u16, threads: usize) -> Value {
    let mut m = Map::new();
    m.insert("bench".into(), "http-server".into());
    m.insert("impl".into(), p.choice("impl").into());
    m.insert("port".into(), port.into());
    m.insert("threads".into(), threads.into());
    let mut params = p.to_json();
    params["port"] = port.into();
    m.insert("params".into(), params);
    crate::json_line::add_build(&mut m);
    Value::Object(m)
}

/// A running server: its port, and what stops it.
type Started = (u16, Box<dyn FnOnce()>);

// ===== The API, on either runtime =====

/// A job's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Status {
    Running,
    Done,
}

/// `POST /jobs`'s body.
#[derive(Debug, Deserialize)]
struct NewJob {
    work_us: u64,
}

/// A job, as the API shows it.
#[derive(Debug, Serialize)]
struct JobView {
    id: u64,
    status: Status,
}

/// Where the jobs live: otter's servers or tokio's tasks. An `Err` is a 500 with its text.
trait Jobs: Clone + Send + Sync + 'static {
    /// Starts a job of `work_us` µs of blocking work; its id.
    fn start(&self, work_us: u64) -> impl Future<Output = Result<u64, String>> + Send;
    /// Job `id`'s status, `None` if there is no such job.
    fn status(&self, id: u64) -> impl Future<Output = Result<Option<Status>, String>> + Send;
    /// Stops job `id`; false if there was no such job.
    fn stop(&self, id: u64) -> impl Future<Output = Result<bool, String>> + Send;
}

/// A handler's failure: its status and text.
type Failure = (StatusCode, String);

fn internal(why: String) -> Failure {
    (StatusCode::INTERNAL_SERVER_ERROR, why)
}

/// The routes (see `http.rs`).
fn router<J: Jobs>(jobs: J) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/jobs", post(start_job::<J>))
        .route("/jobs/{id}", get(job_status::<J>).delete(stop_job::<J>))
        .with_state(jobs)
}

async fn health() -> Json<Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn start_job<J: Jobs>(
    State(jobs): State<J>,
    Json(new): Json<NewJob>,
) -> Result<(StatusCode, Json<JobView>), Failure> {
    if new.work_us > MAX_WORK_US {
        return Err((
            StatusCode::BAD_REQUEST,
            format!("work_us is at most {MAX_WORK_US}"),
        ));
    }
    let id = jobs.start(new.work_us).await.map_err(internal)?;
    Ok((
        StatusCode::CREATED,
        Json(JobView {
            id,
            status: Status::Running,
        }),
    ))
}

async fn job_status<J: Jobs>(
    State(jobs): State<J>,
    Path(id): Path<u64>,
) -> Result<Json<JobView>, Failure> {
    match jobs.status(id).await.map_err(internal)? {
        Some(status) => Ok(Json(JobView { id, status })),
        None => Err((StatusCode::NOT_FOUND, format!("no job {id}"))),
    }
}

async fn stop_job<J: Jobs>(
    State(jobs): State<J>,
    Path(id): Path<u64>,
) -> Result<StatusCode, Failure> {
    match jobs.stop(id).await.map_err(internal)? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err((StatusCode::NOT_FOUND, format!("no job {id}"))),
    }
}

/// Rounds of [`work`]'s loop per µs asked for: about 1 µs on the 2-core AMD EPYC the
/// bench runs on (1.7 ns a round, uncontended).
const ROUNDS_PER_US: u64 = 600;

/// A job's work: `work_us` × [`ROUNDS_PER_US`] rounds of a xorshift, as a computation that
/// holds its thread. A fixed amount of computing, not a spin until a deadline: a job whose
/// thread is preempted does not do less, so both servers do the same work however the OS
/// shares their core.
fn work(work_us: u64) -> u64 {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..work_us * ROUNDS_PER_US {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = std::hint::black_box(x);
    }
    x
}

// ===== otter =====

/// The otter server: the runtime, the root process holding the supervisor and the pool.
fn serve_otter(addr: SocketAddr, threads: usize) -> Result<Started, String> {
    let rt = Runtime::builder()
        .threads(threads)
        .thread_name("http-server")
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    rt.handle().spawn(move |mut cx: Context<()>| async move {
        // Not in an inner `async` block: that would hold `&cx` (not `Sync`) across an
        // await; each future here owns what it needs.
        let started =
            match supervisor::start_link(&cx, SupervisorSpec::new(Strategy::SimpleOneForOne)).await
            {
                Err(e) => Err(format!("cannot start the jobs' supervisor: {e:?}")),
                Ok(sup) => {
                    let app = router(OtterJobs {
                        sup,
                        next: Arc::new(AtomicU64::new(1)),
                        handle: cx.handle(),
                    });
                    otter::net::start_acceptor_pool(
                        &cx,
                        addr,
                        ACCEPTORS,
                        move |_: Context<()>, stream: TcpStream| {
                            let service = TowerToHyperService::new(app.clone());
                            async move {
                                let _ = stream.set_nodelay(true);
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        },
                    )
                    .await
                    .map(|pool| pool.local_addr().port())
                    .map_err(|e| format!("cannot listen on {addr}: {e}"))
                }
            };
        let failed = started.is_err();
        let _ = bound_tx.send(started);
        if failed {
            return;
        }
        // The supervisor and the pool are linked to this process: it stays.
        loop {
            cx.recv().await;
        }
    });
    let port = bound_rx
        .recv()
        .map_err(|_| "the root process ended before listening".to_string())??;
    Ok((port, Box::new(move || drop(rt))))
}

/// otter's jobs: servers under a simple_one_for_one supervisor, found by name.
#[derive(Clone)]
struct OtterJobs {
    sup: SupervisorRef,
    next: Arc<AtomicU64>,
    /// For the registry's look-ups from a connection's process.
    handle: otter::Handle,
}

/// Job `id`'s registered name.
fn job_name(id: u64) -> Name<Job> {
    Name::from(format!("job/{id}"))
}

impl Jobs for OtterJobs {
    fn start(&self, work_us: u64) -> impl Future<Output = Result<u64, String>> + Send {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let spec = ChildSpec::named_server::<Job>("job", job_name(id), move || (id, work_us))
            .restart(Restart::Temporary);
        let sup = self.sup;
        async move {
            sup.start_server_child::<Job>(spec)
                .await
                .map(|_| id)
                .map_err(|e| format!("job {id} did not start: {e:?}"))
        }
    }

    fn status(&self, id: u64) -> impl Future<Output = Result<Option<Status>, String>> + Send {
        let called = job_name(id).call(&self.handle, Call::Status);
        async move {
            match called.await {
                Ok(s) => Ok(Some(s)),
                Err(CallError::Noproc) => Ok(None),
                Err(e) => Err(format!("job {id}: {e:?}")),
            }
        }
    }

    fn stop(&self, id: u64) -> impl Future<Output = Result<bool, String>> + Send {
        let job = job_name(id).whereis(&self.handle);
        async move {
            let Some(job) = job else { return Ok(false) };
            match job.stop(ExitReason::Normal, Some(STOP_TIMEOUT)).await {
                Ok(()) | Err(CallError::Noproc) => Ok(true),
                Err(e) => Err(format!("job {id} did not stop: {e:?}")),
            }
        }
    }
}

/// A job on otter: a server that knows whether its work is done.
struct Job {
    done: bool,
}

/// A job's requests.
enum Call {
    Status(ReplyTo<Status>),
}

/// The helper's message: the work is done.
struct WorkDone;

impl Server for Job {
    /// (id, µs of work).
    type Args = (u64, u64);
    type Call = Call;
    type Cast = ();
    type Info = WorkDone;

    async fn init(
        (_, work_us): (u64, u64),
        cx: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        let me = ServerRef::<Job>::from(cx.pid());
        // Submitted now; the job tells the server when it is done (a send works from any
        // thread). Not awaited: the server answers calls meanwhile, and a server stopped
        // first leaves the work to finish and its message to be dropped.
        drop(otter::blocking::spawn_blocking(move || {
            std::hint::black_box(work(work_us));
            me.info(WorkDone);
        }));
        Ok(Job { done: false })
    }

    async fn handle_call(&mut self, request: Call, _: &mut ServerContext<Self>) -> Flow {
        let Call::Status(reply) = request;
        reply.reply(if self.done {
            Status::Done
        } else {
            Status::Running
        });
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<WorkDone>, _: &mut ServerContext<Self>) -> Flow {
        if let Info::Message(WorkDone) = info {
            self.done = true;
        }
        Flow::Continue
    }
}

// ===== tokio =====

/// The tokio server: `axum::serve` on a multi-thread runtime of `threads` workers.
fn serve_tokio(addr: SocketAddr, threads: usize) -> Result<Started, String> {
    use axum::serve::ListenerExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("http-server")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(addr))
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?
        .port();
    let listener = listener.tap_io(|s| {
        let _ = s.set_nodelay(true);
    });
    let app = router(TokioJobs::default());
    rt.spawn(async move { axum::serve(listener, app).await });
    // Not waiting for blocking tasks, as otter's runtime does not.
    Ok((port, Box::new(move || rt.shutdown_background())))
}

/// tokio's jobs: tasks, their status in a map.
#[derive(Clone, Default)]
struct TokioJobs {
    inner: Arc<TokioJobsInner>,
}

#[derive(Default)]
struct TokioJobsInner {
    next: AtomicU64,
    jobs: Mutex<HashMap<u64, TokioJob>>,
}

struct TokioJob {
    status: Status,
    task: tokio::task::AbortHandle,
}

impl TokioJobsInner {
    fn jobs(&self) -> std::sync::MutexGuard<'_, HashMap<u64, TokioJob>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Jobs for TokioJobs {
    fn start(&self, work_us: u64) -> impl Future<Output = Result<u64, String>> + Send {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed) + 1;
        let inner = self.inner.clone();
        // Entered before the task can look for itself: it takes the lock held here.
        let mut jobs = self.inner.jobs();
        let task = tokio::spawn(async move {
            if tokio::task::spawn_blocking(move || std::hint::black_box(work(work_us)))
                .await
                .is_ok()
                && let Some(job) = inner.jobs().get_mut(&id)
            {
                job.status = Status::Done;
            }
        });
        jobs.insert(
            id,
            TokioJob {
                status: Status::Running,
                task: task.abort_handle(),
            },
        );
        std::future::ready(Ok(id))
    }

    fn status(&self, id: u64) -> impl Future<Output = Result<Option<Status>, String>> + Send {
        std::future::ready(Ok(self.inner.jobs().get(&id).map(|j| j.status)))
    }

    fn stop(&self, id: u64) -> impl Future<Output = Result<bool, String>> + Send {
        let job = self.inner.jobs().remove(&id);
        if let Some(j) = &job {
            j.task.abort();
        }
        std::future::ready(Ok(job.is_some()))
    }
}
