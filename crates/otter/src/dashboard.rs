//! A live dashboard served by the node itself (feature `dashboard`): one web page, in
//! the spirit of Erlang's `observer` and Phoenix LiveDashboard, that shows the
//! supervision tree, the top processes, a process's detail and the workers' load,
//! refreshed every second. It is served by otter processes on otter's own sockets
//! (hyper's HTTP/1 server, no tokio).
//!
//! ```no_run
//! use otter::dashboard::Dashboard;
//!
//! let rt = otter::Runtime::new();
//! let dashboard = Dashboard::new(&rt.handle()).start().unwrap();
//! println!("dashboard on http://{}/", dashboard.local_addr());
//! // ... the program runs ...
//! dashboard.stop();
//! ```
//!
//! # The page
//!
//! `GET /` is one HTML page (its script and style inline, nothing from elsewhere) that
//! polls the JSON endpoints below every second:
//!
//! * **Supervision tree**: each supervisor and its children, from the processes'
//!   [`supervisor`](crate::introspect::ProcessInfo::supervisor) fields, and under an
//!   acceptor of an acceptor pool the connections it accepted (their
//!   [`parent`](crate::introspect::ProcessInfo::parent)); at most
//!   [`TREE_CHILDREN`] children are drawn per supervisor, with the count of the rest.
//! * **Top processes** by queue length, polls, memory or messages received, with each
//!   counter's delta since the previous snapshot; a click on a column sorts by it.
//! * **A process's detail** (a click on a pid): its [`ProcessInfo`](crate::introspect::ProcessInfo);
//!   for a server, state machine or supervisor its `sys` status (the state as its
//!   `format_status` writes it); for a server or state machine whose log is on
//!   ([`sys::log`](crate::sys::log)) its last messages in and replies out; for a
//!   supervisor its children (`which_children`); a kill button if the dashboard was
//!   started with [`Dashboard::allow_kill`]. A server is asked by its pid alone: each
//!   server files, at its start, how to reach it without its type (`server/untyped.rs`).
//! * **Workers**: each worker's utilisation (busy time over wall time) and run queue,
//!   plotted over the last [`HISTORY`] samples (one a second).
//!
//! # The endpoints
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /api/overview` | the runtime's counters and the workers' history |
//! | `GET /api/processes?sort=queue\|polls\|memory\|received&limit=N` | the top `N` (at most [`TOP`]) processes by the key, descending |
//! | `GET /api/tree` | the supervision tree |
//! | `GET /api/process/0.I.G` | one process (`<0.I.G>`); 404 if it names no live process |
//! | `POST /api/process/0.I.G/kill` | sends it the exit signal `Kill`; 403 unless allowed |
//!
//! Errors are JSON, `{"error": "..."}`, with their status: 400 for a malformed pid or
//! parameter, 404 for an unknown pid or path, 405 for a wrong method.
//!
//! # Security
//!
//! * Bound to `127.0.0.1` by default. Bound to any other address it needs a token
//!   ([`Dashboard::token`]): [`Dashboard::start`] refuses to start without one, and a
//!   request that does not carry it (`Authorization: Bearer TOKEN`, or `?token=TOKEN`
//!   in the URL, which the page passes on to its requests) gets 401. The comparison
//!   takes the same time wherever the first difference is.
//! * With no token, a request whose `Host` is not the loopback address and port the
//!   dashboard listens on (`127.0.0.1`, `localhost` or `[::1]`) gets 403: a page of
//!   another site whose name was made to resolve to 127.0.0.1 (DNS rebinding) cannot
//!   read the dashboard.
//! * A kill (a `POST`) must carry the header `X-Otter-Dashboard: kill`: a browser
//!   sends no custom header cross-origin without a preflight, which the dashboard
//!   does not answer, so another site's page cannot post a kill to a local dashboard.
//! * Limits ([`limits`]): request headers over [`limits::HEADERS`] bytes get 431 (from
//!   hyper), a URL over [`limits::URL`] bytes 414, a body over [`limits::BODY`] bytes
//!   413; at most [`limits::CONNECTIONS`] connections are served at once (the next are
//!   closed at once) and each is closed after [`limits::CONNECTION_LIFETIME`], so a
//!   client that holds connections open cannot keep the dashboard from others for long.
//!
//! # Processes and cost
//!
//! [`Dashboard::start`] binds the listening socket on the calling thread and spawns
//! one acceptor process, which spawns a process per connection and a sampler, all
//! linked to it; [`Running::stop`] ends the acceptor with `Shutdown`, and the links
//! end the rest. A connection's code returns errors as values and never panics (a
//! panic would end the dashboard through the links, as a crash of an OTP worker with
//! no supervisor does).
//!
//! The sampler reads [`Handle::runtime_info`] once a second, a few loads per worker,
//! into the workers' history. The process table is walked only when a request needs
//! it, at most once per [`SNAPSHOT_MAX_AGE`] whatever the number of clients, and less
//! often on a node whose walk takes long: the walks take at most [`WALK_SHARE`] of one
//! core on average. A node nobody looks at pays for the sampler only. A walk ([`Handle::processes`]) keeps the
//! top [`TOP`] processes per key and each process's previous counters (for the
//! deltas), not the whole table.
//!
//! The page's problems (`/api/problems`) are the processes inside one poll for 100 ms
//! or more ([`Handle::stuck`](crate::Handle::stuck), read per worker at each request:
//! cheap) and the cycles of calls the latest walk found (each process's callers,
//! [`Handle::deadlocks`](crate::Handle::deadlocks)'s rule, from the same walk).
//!
//! # Left out
//!
//! * **The last messages of a plain process**: only servers and state machines keep a
//!   log ([`sys::log`](crate::sys::log)); a plain process's mailbox is its own, and
//!   what it took out is gone. A message's value is not kept either, only its kind
//!   and type (a server's messages need not be `Debug`).

mod api;
mod http;
mod io;
mod json;
mod sampler;
mod snapshot;

use std::fmt;
use std::io as stdio;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::exit::ExitReason;
use crate::pid::Pid;
use crate::runtime::Handle;

pub use http::limits;
pub use snapshot::WALK_SHARE;

/// Samples of the workers' load the dashboard keeps: one a second, five minutes.
pub const HISTORY: usize = 300;

/// The most processes `/api/processes` returns (and keeps per key).
pub const TOP: usize = 100;

/// The most children of one supervisor `/api/tree` lists.
pub const TREE_CHILDREN: usize = 50;

/// How old a snapshot of the processes may be before a request walks the table again,
/// at least (a large table is walked less often: [`WALK_SHARE`]).
pub const SNAPSHOT_MAX_AGE: Duration = Duration::from_millis(500);

/// Why [`Dashboard::start`] did not start.
#[non_exhaustive]
#[derive(Debug)]
pub enum StartError {
    /// The address is not a loopback address and no token was given.
    TokenRequired(SocketAddr),
    /// Binding the address failed.
    Bind(stdio::Error),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::TokenRequired(a) => write!(
                f,
                "the dashboard needs a token to listen on {a}, which is not a loopback address"
            ),
            StartError::Bind(e) => write!(f, "the dashboard could not bind its address: {e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Bind(e) => Some(e),
            StartError::TokenRequired(_) => None,
        }
    }
}

/// A dashboard to start (module docs): `Dashboard::new(&handle).bind(addr).start()`.
#[derive(Debug, Clone)]
pub struct Dashboard {
    handle: Handle,
    addr: SocketAddr,
    allow_kill: bool,
    token: Option<String>,
}

impl Dashboard {
    /// A dashboard of the runtime of `handle`, to listen on `127.0.0.1` on a port the
    /// system picks, with no token and no kill button.
    pub fn new(handle: &Handle) -> Dashboard {
        Dashboard {
            handle: handle.clone(),
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            allow_kill: false,
            token: None,
        }
    }

    /// Listens on `addr` instead (port 0: a free port). An address that is not a
    /// loopback address needs a [`token`](Dashboard::token).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Whether the page shows a kill button, and `POST /api/process/../kill` kills
    /// (default: no, and the request gets 403).
    pub fn allow_kill(mut self, allow: bool) -> Self {
        self.allow_kill = allow;
        self
    }

    /// Requires `token` on every request (module docs, "Security").
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Binds the address (on the calling thread, which need not be a process's) and
    /// starts the acceptor and the sampler on the runtime.
    ///
    /// # Panics
    ///
    /// If the runtime has been shut down.
    pub fn start(self) -> Result<Running, StartError> {
        if !self.addr.ip().is_loopback() && self.token.as_deref().is_none_or(str::is_empty) {
            return Err(StartError::TokenRequired(self.addr));
        }
        let listener = std::net::TcpListener::bind(self.addr).map_err(StartError::Bind)?;
        let local_addr = listener.local_addr().map_err(StartError::Bind)?;
        let shared = Arc::new(api::Shared::new(
            self.handle.clone(),
            self.allow_kill,
            self.token,
            local_addr,
        ));
        let acceptor = self
            .handle
            .spawn(move |cx| http::accept_loop(cx, listener, shared));
        Ok(Running {
            handle: self.handle,
            local_addr,
            acceptor,
        })
    }
}

/// A running dashboard ([`Dashboard::start`]). Dropping it leaves the dashboard
/// running; [`stop`](Running::stop) ends it.
#[derive(Debug, Clone)]
pub struct Running {
    handle: Handle,
    local_addr: SocketAddr,
    acceptor: Pid<http::AcceptorMsg>,
}

impl Running {
    /// The address it listens on (the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The acceptor's process: its exit ends the dashboard.
    pub fn pid(&self) -> crate::ProcessId {
        self.acceptor.id()
    }

    /// Stops it: the acceptor exits with `Shutdown`, which ends its connections and
    /// its sampler, and closes the listening socket.
    pub fn stop(&self) {
        self.handle.exit(self.acceptor, ExitReason::Shutdown);
    }
}
