//! `echo`: a TCP echo server under a closed-loop load (WORKLOADS.md "echo", issue 25).
//!
//! Two programs, so that every server meets the same client:
//!
//! * `echo-server port=P mode=passive|active threads=N` (`echo/server.rs`): otter's echo
//!   server on 127.0.0.1:P, one process per connection, until its stdin closes. It prints
//!   `{"bench":"echo-server","impl":"otter","port":..,"mode":..,"threads":N,..}` as soon as
//!   it accepts, and exits 0 once stdin is closed. The Erlang twin is
//!   `erlang-reference/bench echo-server` (`bench_src/echo_server.erl`).
//! * `echo-load port=P conns=C size=S seconds=T [server_pid=PID] [rate=R]` (`echo/load.rs`): the
//!   load generator, on `mio` directly and not on otter, so that it measures every server
//!   alike. Its line has the contract's `round_trips`, `ops_per_s`, `p50_us` .. `max_us`,
//!   `errors`, `server_cpu_s_per_million`.
//!
//! Neither is one measurement on an otter runtime (the server serves until it is told to
//! stop, the load is not on otter), so `main.rs` hands both to [`program`] once their
//! command line has passed the same checks as every workload's.

mod load;
mod server;

use std::process::ExitCode;

use super::{Footprint, Outcome, RunError, Workload, count, no_validation};
use crate::args::{ParamSpec, Params};
pub(crate) use load::{Histogram, open_files_limit, process_cpu, us};

/// The server.
pub(crate) const SERVER: Workload = Workload {
    name: "echo-server",
    summary: "TCP echo server on 127.0.0.1:port (0: any), one process per connection, until stdin closes",
    params: &[
        ParamSpec::int_in("port", 0, 65535, 0),
        ParamSpec::choice("mode", &["passive", "active"], "passive"),
        ParamSpec::int_in("busy_wait_us", 0, server::MAX_BUSY_WAIT_US, 0),
    ],
    validate: no_validation,
    footprint: server_footprint,
    run: not_one_measurement,
};

/// The load generator.
pub(crate) const LOAD: Workload = Workload {
    name: "echo-load",
    summary: "conns connections to 127.0.0.1:port, each sending size bytes and waiting for them back, for seconds (after 1 s of warm-up); not on otter",
    params: &[
        ParamSpec::int_in("port", 0, 65535, 0),
        ParamSpec::int_in("conns", 1, load::MAX_CONNS, 100),
        ParamSpec::int_in("size", 1, load::MAX_SIZE, 64),
        ParamSpec::int_in("seconds", 1, load::MAX_SECONDS, 5),
        ParamSpec::int_in("server_pid", 0, load::MAX_PID, 0),
        ParamSpec::int_in("rate", 0, load::MAX_RATE, 0),
    ],
    validate: load::validate,
    footprint: load::footprint,
    run: not_one_measurement,
};

/// The program that runs `bench`, if it is one of the echo workload's.
pub(crate) fn program(bench: &str) -> Option<fn(&Params, usize) -> ExitCode> {
    match bench {
        "echo-server" => Some(server::main),
        "echo-load" => Some(load::main),
        _ => None,
    }
}

/// The acceptor and the listener's process; connections are not known in advance.
fn server_footprint(_: &Params) -> Footprint {
    Footprint::new(("1", 1), ("2", count(2)))
}

/// `main.rs` runs these two through [`program`], never through `run`.
fn not_one_measurement(_: &otter::Runtime, _: &Params) -> Result<Outcome, RunError> {
    Err(RunError::Refused(
        "runs as its own program (workloads::echo::program)".into(),
    ))
}
