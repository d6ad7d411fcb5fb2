//! `http`: a JSON API as a tokio team would write it (WORKLOADS.md "http", issue 46).
//!
//! The same axum routes served two ways, so that a tokio team sees what moving to otter
//! changes, under one load generator:
//!
//! * `http-server impl=otter|tokio port=P threads=N` (`http/server.rs`): the API on
//!   127.0.0.1:P until its stdin closes. `impl=otter`: axum's router served by hyper over
//!   otter's acceptor pool, each connection in its own process, each job a server under a
//!   simple_one_for_one supervisor, its work on otter's blocking pool. `impl=tokio`: the
//!   same router with `axum::serve` on a tokio runtime of N workers, each job a task, the
//!   jobs in a `Mutex<HashMap>`. It prints `{"bench":"http-server","impl":..,"port":..,
//!   "threads":N,..}` as soon as it accepts, and exits 0 once stdin is closed.
//! * `http-load port=P conns=C seconds=T work_us=W [server_pid=PID]` (`http/load.rs`): C
//!   keep-alive HTTP/1.1 connections, each in a closed loop of `POST /jobs` → `GET
//!   /jobs/{id}` → `DELETE /jobs/{id}`, on `mio` directly (neither otter nor tokio), so
//!   that it measures both servers alike. Its line: `requests`, `ops_per_s` (requests per
//!   second), `p50_us` .. `max_us` of a request, `errors`, and with `server_pid` the
//!   server's CPU seconds and its `VmHWM` and `VmRSS`.
//!
//! The routes (`http/server.rs`):
//!
//! | route | otter | tokio |
//! |---|---|---|
//! | `GET /health` | `{"status":"ok"}` | the same |
//! | `POST /jobs` `{"work_us":W}` | starts a job server (temporary child of a simple_one_for_one supervisor, registered as `job/ID`); 201 `{"id":ID,"status":"running"}` | spawns a task, enters it in the map; the same answer |
//! | `GET /jobs/{id}` | a call to the job's server; 200 `{"id":ID,"status":"running"\|"done"}`, 404 if there is none | a look-up in the map |
//! | `DELETE /jobs/{id}` | stops the job's server (`ServerRef::stop`, `gen_server:stop`) and waits for its exit; 204, 404 if there is none | removes it from the map and aborts its task |
//!
//! A job computes for about W µs on its runtime's blocking pool
//! (`otter::blocking::spawn_blocking`, `tokio::task::spawn_blocking`): a fixed number of
//! rounds, the same on both (`server.rs`), then its status is `done`.
//!
//! Neither program is one measurement on an otter runtime, so `main.rs` hands both to
//! [`program`] once their command line has passed the same checks as every workload's.

mod load;
mod server;

use std::process::ExitCode;

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};

/// The server.
pub(crate) const SERVER: Workload = Workload {
    name: "http-server",
    summary: "the http workload's JSON API (axum) on 127.0.0.1:port (0: any), on otter or plain tokio, until stdin closes",
    params: &[
        ParamSpec::choice("impl", &["otter", "tokio"], "otter"),
        ParamSpec::int_in("port", 0, 65535, 0),
    ],
    validate: no_validation,
    footprint: server_footprint,
    run: not_one_measurement,
};

/// The load generator.
pub(crate) const LOAD: Workload = Workload {
    name: "http-load",
    summary: "conns keep-alive HTTP/1.1 connections to 127.0.0.1:port, each looping POST /jobs, GET /jobs/{id}, DELETE /jobs/{id}, for seconds (after 1 s of warm-up); not on otter or tokio",
    params: &[
        ParamSpec::int_in("port", 0, 65535, 0),
        ParamSpec::int_in("conns", 1, load::MAX_CONNS, 200),
        ParamSpec::int_in("seconds", 1, load::MAX_SECONDS, 10),
        ParamSpec::int_in("work_us", 0, load::MAX_WORK_US, 200),
        ParamSpec::int_in("server_pid", 0, load::MAX_PID, 0),
    ],
    validate: load::validate,
    footprint: load::footprint,
    run: not_one_measurement,
};

/// The program that runs `bench`, if it is one of the http workload's.
pub(crate) fn program(bench: &str) -> Option<fn(&Params, usize) -> ExitCode> {
    match bench {
        "http-server" => Some(server::main),
        "http-load" => Some(load::main),
        _ => None,
    }
}

/// The acceptors, the supervisor and the root; connections and jobs are not known in
/// advance.
fn server_footprint(_: &Params) -> Footprint {
    Footprint::new(("1", 1), ("3", count(3)))
}

/// `main.rs` runs these two through [`program`], never through `run`.
fn not_one_measurement(_: &otter::Runtime, _: &Params) -> Result<Outcome, RunError> {
    Err(RunError::Refused(
        "runs as its own program (workloads::http::program)".into(),
    ))
}
