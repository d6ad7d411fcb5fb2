//! The JSON endpoints (`dashboard.rs`'s table) and the state they share with the
//! sampler and the connections.

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, PoisonError};

use hyper::{HeaderMap, Method, StatusCode};

use super::http::method_is;
use super::sampler::History;
use super::snapshot::{self, SortKey, Walker};
use super::{TOP, json};
use crate::exit::ExitReason;
use crate::introspect::Kind;
use crate::pid::{Pid, ProcessId, RawPid};
use crate::runtime::Handle;
use crate::server::{ServerMsg, ServerRef};
use crate::supervisor::{ChildKind, Supervisor, SupervisorRef};
use crate::sys::{self, Direction, Mode};

/// The page, its script and style put in at start.
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// What the acceptor, its connections and the sampler share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) handle: Handle,
    allow_kill: bool,
    pub(super) token: Option<String>,
    pub(super) local_addr: SocketAddr,
    pub(super) history: Mutex<History>,
    /// Held while a request walks the table: a second request waits for the walk and
    /// takes its snapshot (`snapshot.rs`).
    walker: Mutex<Walker>,
    /// Connections being served.
    pub(super) connections: AtomicUsize,
    page: String,
}

impl Shared {
    pub(super) fn new(
        handle: Handle,
        allow_kill: bool,
        token: Option<String>,
        local_addr: SocketAddr,
    ) -> Shared {
        let page = PAGE
            .replace("/*STYLE*/", STYLE)
            .replace("/*SCRIPT*/", SCRIPT);
        Shared {
            handle,
            allow_kill,
            token,
            local_addr,
            history: Mutex::default(),
            walker: Mutex::default(),
            connections: AtomicUsize::new(0),
            page,
        }
    }

    fn snapshot(&self) -> std::sync::Arc<snapshot::Snapshot> {
        self.walker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .snapshot(&self.handle)
    }
}

/// An answer: its status, content type and body.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) status: StatusCode,
    pub(super) content_type: &'static str,
    pub(super) body: String,
}

impl Answer {
    fn json(body: String) -> Answer {
        Answer {
            status: StatusCode::OK,
            content_type: "application/json",
            body,
        }
    }

    /// `{"error": message}` with `status`.
    pub(super) fn error(status: StatusCode, message: &str) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: json::error(message),
        }
    }
}

/// The value of `name` in a query string (`a=1&b=2`), as written (no decoding).
pub(super) fn param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Answers a request that passed the checks of `http.rs`.
pub(super) async fn route(
    shared: &Shared,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
) -> Answer {
    let answer = match path {
        "/" | "/index.html" => method_is(method, &Method::GET).map(|()| Answer {
            status: StatusCode::OK,
            content_type: "text/html; charset=utf-8",
            body: shared.page.clone(),
        }),
        "/api/overview" => method_is(method, &Method::GET).map(|()| overview(shared)),
        "/api/processes" => match method_is(method, &Method::GET) {
            Ok(()) => processes(shared, query),
            Err(e) => Err(e),
        },
        "/api/tree" => method_is(method, &Method::GET)
            .map(|()| Answer::json(shared.snapshot().tree_json().to_string())),
        "/api/problems" => method_is(method, &Method::GET).map(|()| problems(shared)),
        _ => match path.strip_prefix("/api/process/") {
            Some(rest) => match rest.strip_suffix("/kill") {
                Some(id) => match method_is(method, &Method::POST) {
                    Ok(()) => kill(shared, id, headers),
                    Err(e) => Err(e),
                },
                None => match method_is(method, &Method::GET) {
                    Ok(()) => Ok(process(shared, rest).await),
                    Err(e) => Err(e),
                },
            },
            None => Err(Answer::error(StatusCode::NOT_FOUND, "no such page")),
        },
    };
    answer.unwrap_or_else(|e| e)
}

/// `/api/overview`.
fn overview(shared: &Shared) -> Answer {
    let info = shared.handle.runtime_info();
    let mut out = String::from("{");
    json::num(&mut out, true, "processes", info.processes);
    json::num(&mut out, false, "spawns", info.spawns);
    json::key(&mut out, false, "exits");
    let e = &info.exits;
    out.push('{');
    json::num(&mut out, true, "normal", e.normal);
    json::num(&mut out, false, "shutdown", e.shutdown);
    json::num(&mut out, false, "killed", e.killed);
    json::num(&mut out, false, "panic", e.panic);
    json::num(&mut out, false, "error", e.error);
    json::num(&mut out, false, "other", e.other);
    out.push('}');
    json::num(&mut out, false, "dead_sends", info.dead_sends);
    json::num(&mut out, false, "global_queue", info.global_queue);
    json::num(&mut out, false, "uptime_ms", info.uptime.as_millis());
    json::key(&mut out, false, "allow_kill");
    out.push_str(if shared.allow_kill { "true" } else { "false" });
    json::key(&mut out, false, "workers");
    out.push('[');
    for (i, w) in info.workers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        json::num(&mut out, true, "index", w.index);
        json::key(&mut out, false, "spare");
        out.push_str(if w.spare { "true" } else { "false" });
        json::num(&mut out, false, "polls", w.polls);
        json::num(&mut out, false, "busy_ms", w.busy.as_millis());
        json::num(&mut out, false, "steals", w.steals);
        json::num(&mut out, false, "parks", w.parks);
        json::num(&mut out, false, "run_queue", w.run_queue);
        out.push('}');
    }
    out.push(']');
    json::key(&mut out, false, "history");
    shared
        .history
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .write_json(&mut out);
    out.push('}');
    Answer::json(out)
}

/// Processes held in one poll for this long or longer are shown as stuck.
const STUCK_AFTER: std::time::Duration = std::time::Duration::from_millis(100);

/// `/api/problems`: `{"stuck":[{"pid","id","worker","ms"}..],"deadlocks":[[{"pid","id"}..]..]}`:
/// the processes inside one poll for [`STUCK_AFTER`] or longer now (read per worker:
/// cheap), and the cycles of calls the latest walk found.
fn problems(shared: &Shared) -> Answer {
    let mut out = String::from("{");
    json::key(&mut out, true, "stuck");
    out.push('[');
    for (i, s) in shared.handle.stuck(STUCK_AFTER).iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        write_pid(&mut out, true, s.pid);
        json::num(&mut out, false, "worker", s.worker);
        json::num(&mut out, false, "ms", s.polling_for.as_millis());
        out.push('}');
    }
    out.push(']');
    json::key(&mut out, false, "deadlocks");
    out.push('[');
    for (i, cycle) in shared.snapshot().deadlocks().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        for (j, &pid) in cycle.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push('{');
            write_pid(&mut out, true, pid);
            out.push('}');
        }
        out.push(']');
    }
    out.push_str("]}");
    Answer::json(out)
}

/// `"pid":"<0.I.G>","id":"0.I.G"`, as the other endpoints write a pid.
fn write_pid(out: &mut String, first: bool, pid: ProcessId) {
    let text = pid.to_string();
    json::text(out, first, "pid", &text);
    json::text(out, false, "id", text.trim_matches(['<', '>']));
}

/// `/api/processes?sort=KEY&limit=N`.
fn processes(shared: &Shared, query: &str) -> Result<Answer, Answer> {
    let key = match param(query, "sort") {
        None => SortKey::Queue,
        Some(s) => SortKey::parse(s).ok_or_else(|| {
            Answer::error(
                StatusCode::BAD_REQUEST,
                "sort must be queue, polls, memory or received",
            )
        })?,
    };
    let limit = match param(query, "limit") {
        None => 20,
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=TOP).contains(n))
            .ok_or_else(|| {
                Answer::error(
                    StatusCode::BAD_REQUEST,
                    "limit must be a number from 1 to 100",
                )
            })?,
    };
    Ok(Answer::json(shared.snapshot().processes_json(key, limit)))
}

/// A pid as the page writes it: `0.I.G` or `<0.I.G>` (also with `<`, `>` as `%3C`,
/// `%3E`); only local pids.
fn parse_pid(id: &str) -> Result<ProcessId, Answer> {
    let bad = || Answer::error(StatusCode::BAD_REQUEST, "a pid is written 0.I.G");
    let id = id.trim_start_matches('<').trim_end_matches('>');
    let id = id.strip_prefix("%3C").unwrap_or(id);
    let id = id.strip_suffix("%3E").unwrap_or(id);
    let mut parts = id.split('.');
    let (Some("0"), Some(index), Some(generation), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let index = index.parse::<u32>().map_err(|_| bad())?;
    let generation = generation.parse::<u32>().map_err(|_| bad())?;
    if index & crate::pid::REMOTE_BIT != 0 {
        return Err(bad());
    }
    Ok(ProcessId(RawPid { index, generation }))
}

fn no_process(pid: ProcessId) -> Answer {
    Answer::error(StatusCode::NOT_FOUND, &format!("no process {pid}"))
}

/// The process `pid` as a supervisor, if it is a live one.
fn supervisor_of(shared: &Shared, pid: ProcessId) -> Option<SupervisorRef> {
    let info = shared.handle.process_info(pid)?;
    // A supervisor sets its kind in its `init`, so its mailbox takes
    // `ServerMsg<Supervisor>`; the pid's generation keeps a process that took the
    // slot since from being reached.
    (info.kind == Kind::Supervisor).then(|| {
        SupervisorRef::from(ServerRef::from(Pid::<ServerMsg<Supervisor>>::from_raw(
            pid.0,
        )))
    })
}

/// `/api/process/0.I.G`.
async fn process(shared: &Shared, id: &str) -> Answer {
    let pid = match parse_pid(id) {
        Ok(pid) => pid,
        Err(e) => return e,
    };
    let Some(info) = shared.handle.process_info(pid) else {
        return no_process(pid);
    };
    let mut out = String::from("{");
    snapshot::write_brief(&mut out, info.pid, info.name.as_deref(), info.kind);
    json::text(
        &mut out,
        false,
        "status",
        snapshot::status_name(info.status),
    );
    json::num(&mut out, false, "queue", info.message_queue_len);
    json::num(&mut out, false, "received", info.messages_received);
    json::num(&mut out, false, "polls", info.polls);
    json::key(&mut out, false, "memory");
    let m = &info.memory;
    out.push('{');
    json::num(&mut out, true, "total", m.total());
    json::num(&mut out, false, "cell", m.cell);
    json::num(&mut out, false, "mailbox", m.mailbox);
    json::num(&mut out, false, "mailbox_blocks", m.mailbox_blocks);
    json::num(&mut out, false, "bonds", m.bonds);
    json::num(&mut out, false, "saved", m.saved);
    out.push('}');
    for (name, pids) in [
        ("links", &info.links),
        ("monitors", &info.monitors),
        ("monitored_by", &info.monitored_by),
    ] {
        json::key(&mut out, false, name);
        out.push('[');
        for (i, p) in pids.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::string(&mut out, &p.to_string());
        }
        out.push(']');
    }
    json::key(&mut out, false, "trap_exit");
    out.push_str(if info.trap_exit { "true" } else { "false" });
    let parent = info.parent.map(|p| p.to_string());
    json::opt_text(&mut out, false, "parent", parent.as_deref());
    let sup = info.supervisor.map(|p| p.to_string());
    json::opt_text(&mut out, false, "supervisor", sup.as_deref());
    json::num(
        &mut out,
        false,
        "spawned_at_ms",
        info.spawned_at.as_millis(),
    );
    json::num(&mut out, false, "restarts", info.restarts);
    json::key(&mut out, false, "allow_kill");
    out.push_str(if shared.allow_kill { "true" } else { "false" });
    json::key(&mut out, false, "sys");
    match supervisor_of(shared, pid) {
        Some(sup) => write_supervisor(&mut out, sup).await,
        None if matches!(info.kind, Kind::Server | Kind::Statem) => {
            write_server(&mut out, &shared.handle, pid).await;
        }
        None => {
            out.push('{');
            json::text(&mut out, true, "unavailable", "not a server");
            out.push('}');
        }
    }
    out.push('}');
    Answer::json(out)
}

/// A supervisor's `sys::get_status` and `which_children`, as the `sys` field.
async fn write_supervisor(out: &mut String, sup: SupervisorRef) {
    out.push('{');
    write_status(out, sys::get_status(sup).await);
    json::key(out, false, "children");
    match sup.which_children().await {
        Ok(children) => {
            out.push('[');
            for (i, c) in children.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('{');
                json::text(out, true, "id", &c.id);
                let pid = c.pid.map(|p| p.to_string());
                json::opt_text(out, false, "pid", pid.as_deref());
                let kind = match c.kind {
                    ChildKind::Worker => "worker",
                    ChildKind::Supervisor => "supervisor",
                };
                json::text(out, false, "kind", kind);
                out.push('}');
            }
            out.push(']');
        }
        Err(_) => out.push_str("null"),
    }
    out.push('}');
}

/// A server's or state machine's `sys` status and log, asked by pid
/// (`server/untyped.rs`): `{"behaviour", "mode", "state", "log": [..]}`.
async fn write_server(out: &mut String, handle: &Handle, pid: ProcessId) {
    out.push('{');
    write_status(out, sys::get_status_of(handle, pid).await);
    if let Ok(log) = sys::get_log_of(handle, pid).await {
        json::key(out, false, "log");
        out.push('[');
        for (i, e) in log.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            let at =
                e.at.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
            json::num(out, true, "at_ms", at);
            let dir = match e.direction {
                Direction::In => "in",
                Direction::Out => "out",
            };
            json::text(out, false, "direction", dir);
            json::text(out, false, "kind", e.kind);
            json::text(out, false, "message", e.message);
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
}

/// The fields of a `sys` status (without braces), or why there is none.
fn write_status(out: &mut String, status: Result<sys::Status, sys::SysError>) {
    match status {
        Ok(s) => {
            json::text(out, true, "behaviour", s.behaviour);
            let mode = match s.mode {
                Mode::Running => "running",
                Mode::Suspended => "suspended",
            };
            json::text(out, false, "mode", mode);
            json::text(out, false, "state", &s.state);
        }
        Err(e) => json::text(out, true, "unavailable", &e.to_string()),
    }
}

/// `POST /api/process/0.I.G/kill`.
fn kill(shared: &Shared, id: &str, headers: &HeaderMap) -> Result<Answer, Answer> {
    if !shared.allow_kill {
        return Err(Answer::error(
            StatusCode::FORBIDDEN,
            "this dashboard was started without allow_kill",
        ));
    }
    if headers.get("x-otter-dashboard").map(|v| v.as_bytes()) != Some(b"kill") {
        return Err(Answer::error(
            StatusCode::FORBIDDEN,
            "a kill needs the header X-Otter-Dashboard: kill",
        ));
    }
    let pid = parse_pid(id)?;
    if shared.handle.process_info(pid).is_none() {
        return Err(no_process(pid));
    }
    shared.handle.exit(pid, ExitReason::Kill);
    let mut out = String::from("{");
    json::text(&mut out, true, "killed", &pid.to_string());
    out.push('}');
    Ok(Answer::json(out))
}
