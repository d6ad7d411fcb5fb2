//! OTP's system messages from other nodes: `sys:get_state({Name, Node})`,
//! `sys:get_status`, `sys:suspend`/`resume`, `sys:trace`, `sys:statistics` and
//! `gen_server:stop({Name, Node})` (`proc_lib:stop`'s `{terminate, Reason}`) against an
//! otter server registered for other nodes ([`Node::register_server`] and
//! [`Node::register_server_name`]).
//!
//! `{system, From, Request}` arrives where a `'$gen_call'` does (`remote_server.rs`);
//! a short-lived process asks the server through [`crate::sys`] and answers `From` as
//! `sys.erl` does:
//!
//! | request | reply |
//! |---|---|
//! | `get_state` | the state as [`Server::format_status`] writes it, a binary |
//! | `get_status` | `{status, Pid, {module, Type}, [[], running \| suspended, Parent, [], Misc]}`, `Misc` as `gen_server`'s (`[{header, _}, {data, [..]}, {data, [{"State", _}]}]`) |
//! | `suspend`, `resume` | `ok` |
//! | `{debug, {trace, Bool}}`, `{debug, {statistics, Bool}}` | `ok` |
//! | `{debug, {statistics, get}}` | `{ok, [{start_time, _}, {current_time, _}, {reductions, 0}, {messages_in, N}, {messages_out, N}]}` (times as `calendar:local_time()`'s shape in UTC), or `{ok, no_statistics}` |
//! | `{terminate, Reason}` | `ok`, then the server stops with `Reason` (the caller's monitor sees it, as `gen_server:stop` waits for) |
//! | `{replace_state, Fun}` | `{error, {callback_failed, ..}}`: an Erlang fun cannot run in otter, so `sys:replace_state` raises |
//! | anything else | `{error, {unknown_system_msg, Msg}}` |
//!
//! A server that is gone gets no reply: the caller's monitor reports it, as in Erlang.
//! A `{terminate, Reason}` goes through otter's [`ExitReason`](crate::ExitReason), so
//! the `'DOWN'` carries the reason as otter maps it back: `{shutdown, bye}` becomes
//! `{shutdown, <<"bye">>}` (`ShutdownWith` holds text), which `gen_server:stop`'s
//! caller then raises; `normal`, `shutdown`, `{shutdown, Binary}` and other terms come
//! back unchanged.
//!
//! [`Node::register_server`]: crate::dist::Node::register_server
//! [`Node::register_server_name`]: crate::dist::Node::register_server_name
//! [`Server::format_status`]: crate::server::Server::format_status

use std::sync::Arc;
use std::time::SystemTime;

use crate::dist::etf::Term;
use crate::dist::node::NodeShared;
use crate::dist::remote_server::RemoteServer;
use crate::server::ServerRef;
use crate::sys::{self, Mode};

/// What a system message asks (module docs' table).
enum Ask {
    GetState,
    GetStatus,
    Suspend,
    Resume,
    Trace(bool),
    Statistics(bool),
    GetStatistics,
    Terminate(Term),
    ReplaceState,
    Unknown(Term),
}

fn ask(request: Term) -> Ask {
    let atom = |t: &Term, s: &str| t.as_atom() == Some(s);
    let flag = |t: &Term| match t.as_atom() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    match &request {
        Term::Atom(a) => match a.as_str() {
            "get_state" => return Ask::GetState,
            "get_status" => return Ask::GetStatus,
            "suspend" => return Ask::Suspend,
            "resume" => return Ask::Resume,
            _ => {}
        },
        Term::Tuple(e) if e.len() == 2 && atom(&e[0], "terminate") => {
            return Ask::Terminate(e[1].clone());
        }
        Term::Tuple(e) if e.len() == 2 && atom(&e[0], "replace_state") => {
            return Ask::ReplaceState;
        }
        Term::Tuple(e) if e.len() == 2 && atom(&e[0], "debug") => {
            if let Term::Tuple(d) = &e[1]
                && d.len() == 2
            {
                if atom(&d[0], "trace")
                    && let Some(on) = flag(&d[1])
                {
                    return Ask::Trace(on);
                }
                if atom(&d[0], "statistics") {
                    if atom(&d[1], "get") {
                        return Ask::GetStatistics;
                    }
                    if let Some(on) = flag(&d[1]) {
                        return Ask::Statistics(on);
                    }
                }
            }
        }
        _ => {}
    }
    Ask::Unknown(request)
}

/// Answers `request` from `from` for `server` (module docs). Runs in its own process.
pub(crate) async fn answer<S: RemoteServer>(
    node: Arc<NodeShared>,
    server: ServerRef<S>,
    from: Term,
    request: Term,
) {
    let ok = || Term::atom("ok");
    let reply = |t: &Term| crate::dist::remote_server::reply_to(&node, &from, t);
    let outcome = match ask(request) {
        Ask::GetState => sys::get_status(server)
            .await
            .map(|s| Term::binary(s.state.into_bytes())),
        Ask::GetStatus => match sys::get_status(server).await {
            Ok(s) => {
                let mode = match s.mode {
                    Mode::Running => "running",
                    Mode::Suspended => "suspended",
                };
                let header = match &s.name {
                    Some(n) => format!("Status for otter server {n}"),
                    None => "Status for otter server".to_string(),
                };
                let text = |k: &str| Term::binary(k.as_bytes().to_vec());
                let misc = Term::list(vec![
                    Term::tuple(vec![Term::atom("header"), text(&header)]),
                    Term::tuple(vec![
                        Term::atom("data"),
                        Term::list(vec![Term::tuple(vec![text("Status"), Term::atom(mode)])]),
                    ]),
                    Term::tuple(vec![
                        Term::atom("data"),
                        Term::list(vec![Term::tuple(vec![text("State"), text(&s.state)])]),
                    ]),
                ]);
                let status = (
                    Term::atom("status"),
                    server,
                    Term::tuple(vec![Term::atom("module"), Term::atom(s.behaviour)]),
                    Term::list(vec![
                        Term::list(vec![]),
                        Term::atom(mode),
                        Term::atom("undefined"),
                        Term::list(vec![]),
                        misc,
                    ]),
                );
                crate::dist::remote_server::reply_to(&node, &from, &status);
                return;
            }
            Err(e) => Err(e),
        },
        Ask::Suspend => sys::suspend(server).await.map(|()| ok()),
        Ask::Resume => sys::resume(server).await.map(|()| ok()),
        Ask::Trace(on) => sys::trace(server, on).await.map(|()| ok()),
        Ask::Statistics(on) => sys::statistics(server, on).await.map(|()| ok()),
        Ask::GetStatistics => sys::get_statistics(server).await.map(|s| {
            let stats = match s {
                None => Term::atom("no_statistics"),
                Some(s) => Term::list(vec![
                    Term::tuple(vec![Term::atom("start_time"), date_time(s.start_time)]),
                    Term::tuple(vec![Term::atom("current_time"), date_time(s.current_time)]),
                    Term::tuple(vec![Term::atom("reductions"), Term::Int(0)]),
                    Term::tuple(vec![Term::atom("messages_in"), count(s.messages_in)]),
                    Term::tuple(vec![Term::atom("messages_out"), count(s.messages_out)]),
                ]),
            };
            Term::tuple(vec![ok(), stats])
        }),
        Ask::Terminate(reason) => {
            // `sys.erl` replies before it terminates; the caller then waits for the
            // server's `'DOWN'`.
            reply(&ok());
            let _ = server
                .stop(crate::dist::reason::from_term(&reason), None)
                .await;
            return;
        }
        Ask::ReplaceState => Ok(error(Term::tuple(vec![
            Term::atom("callback_failed"),
            Term::binary(b"an Erlang fun cannot run in an otter server".to_vec()),
        ]))),
        Ask::Unknown(msg) => Ok(error(Term::tuple(vec![
            Term::atom("unknown_system_msg"),
            msg,
        ]))),
    };
    // A server that is gone gets no reply: the caller's monitor says so.
    if let Ok(t) = outcome {
        reply(&t);
    }
}

fn error(reason: Term) -> Term {
    Term::tuple(vec![Term::atom("error"), reason])
}

fn count(n: u64) -> Term {
    Term::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// `{{Y, M, D}, {H, Mi, S}}` in UTC (`erlang:universaltime()`'s shape).
fn date_time(t: SystemTime) -> Term {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    Term::tuple(vec![
        Term::tuple(vec![Term::Int(y), Term::Int(m), Term::Int(d)]),
        Term::tuple(vec![
            Term::Int(rem / 3_600),
            Term::Int(rem / 60 % 60),
            Term::Int(rem % 60),
        ]),
    ])
}
