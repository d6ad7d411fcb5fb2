//! `erpc` and `rpc` between otter and Erlang nodes, both ways (reference: OTP's
//! `erpc.erl`, `rpc.erl`, and `erl_dist_protocol`'s `SPAWN_REQUEST`/`SPAWN_REPLY`).
//!
//! # Erlang calls otter
//!
//! OTP 23+ `erpc:call(Node, M, F, A, Timeout)` is a distributed spawn: the caller's
//! node sends `SPAWN_REQUEST {29, ReqId, From, GroupLeader, {erpc, execute_call, 4},
//! [monitor]}` followed by `[Res, M, F, A]`; the spawning node answers
//! `SPAWN_REPLY {31, ReqId, From, 2, Pid}` (flag 2: the monitor is set up, `ReqId`
//! its reference), and when the process ends its monitor fires, `MONITOR_P_EXIT {21,
//! Pid, From, ReqId, Reason}`, `Reason` carrying the outcome:
//!
//! | the function | exit reason | what `erpc:call` does |
//! |---|---|---|
//! | returns `V` | `{Res, return, V}` | returns `V` |
//! | raises [`Raise::Throw`]`(T)` | `{Res, throw, T}` | `throw(T)` |
//! | raises [`Raise::Exit`]`(R)` | `{Res, exit, R}` | `exit({exception, R})` |
//! | raises [`Raise::Error`]`(R)` | `{Res, error, R, [{M, F, Args, []}]}` | `error({exception, R, Stack})` |
//! | is not registered (nor built in) | `{Res, error, undef, [{M, F, Args, []}]}` | `error({exception, undef, _})`, as for an undefined Erlang function |
//! | its arguments do not decode | `{Res, error, function_clause, [{M, F, Args, []}]}` | `error({exception, function_clause, _})`, as when no clause of an Erlang function matches |
//! | panics (a sync function) | `{Res, error, {panic, <<Message>>}, Stack}` | `error({exception, {panic, _}, _})` |
//! | panics or is killed (an async function) | `killed` | `exit({signal, killed})` |
//!
//! `erpc:cast` is the same request for `{erpc, execute_cast, 3}` with `[M, F, A]`
//! and no monitor: the function runs, its outcome goes nowhere. `rpc:call` (OTP 23+)
//! goes through `erpc` too, and turns those outcomes into `{badrpc, _}`; from a peer
//! without `DFLAG_SPAWN` it is a `gen_server:call` of `rex` with `{call, M, F, A,
//! GroupLeader}`, which this module answers the way `rpc.erl`'s `rex` does (the
//! value, `{badrpc, {'EXIT', {Reason, Stack}}}` for an error, `{badrpc, {'EXIT',
//! Reason}}` for an exit, the thrown term for a throw), and `{cast, M, F, A, _}`
//! casts.
//!
//! Each call runs in a fresh otter process (Erlang spawns one too): the process sends
//! the `SPAWN_REPLY` with its own pid before it runs the function, and the outcome
//! after, so the reply always comes first on the connection. Arguments are decoded
//! on the connection's reader before anything is spawned; a request that names an
//! unknown function or whose arguments do not decode is answered at once with the
//! error above and reported (a `tracing` warning, `otter::dist`, [`crate::report`]) once per module, function and kind of fault,
//! and at most [`MAX_LOGGED`] lines in the node's life (not per call: a peer cannot
//! flood the log), and the connection goes on serving everyone else. A request for any other entry point (`spawn(Node, M, F, A)` from
//! Erlang) is refused with `SPAWN_REPLY` `notsup`, and over [`MAX_IN_FLIGHT`] calls
//! at once with `system_limit`, what Erlang answers when it cannot spawn.
//!
//! Functions are registered with [`Node::register_rpc`] (a sync closure, run in the
//! call's process) and [`Node::register_rpc_async`] (a future on the call's process,
//! which may wait, call, sleep). Arguments decode with serde as a tuple: an Erlang
//! call with `[A, B]` decodes into `(A, B)` (a list of the tuple's length reads as
//! the tuple, the ETF mapping's rule); `()` takes no arguments (`[]`); a `Vec<T>`
//! takes any number of one type. The result is any `Serialize` value.
//!
//! ## Built in: what an Erlang operator types first
//!
//! Consulted when no registered function has the name:
//!
//! | call | answer |
//! |---|---|
//! | `erlang:processes()` | the pids of the runtime's live processes |
//! | `erlang:process_info(Pid, registered_name)` | `{registered_name, Name}` for a name exported to peers ([`Node::register`] and the like), `[]` if none, `undefined` if the process is not alive |
//! | `erlang:process_info(Pid, Key)`, other keys | `undefined` if the process is not alive, else `error:badarg` (the key has no otter counterpart) |
//! | `erlang:registered()` | the names exported to peers, and `net_kernel` and `rex` (the node answers those) |
//! | `erlang:memory()` | `total` and `system`: the OS process's resident size (`VmRSS`); the other keys Erlang lists (`processes`, `atom`, `binary`, `code`, `ets`...) as 0: otter keeps no such accounts |
//! | `erlang:system_info(process_count)` | the number of live processes |
//! | `erlang:system_info(Other)` | `error:badarg` |
//!
//! # otter calls Erlang
//!
//! [`Node::erpc_call`] sends the same `SPAWN_REQUEST` an Erlang caller does, from the
//! calling process, with the calling process as the group leader, and waits for the
//! `SPAWN_REPLY` and the monitor's `MONITOR_P_EXIT` (neither reaches the caller's
//! mailbox); the outcome is decoded into `R` or becomes an [`ErpcError`], the
//! classes `erpc:call` raises. A timeout or a dropped future abandons the call: the
//! monitor is removed (`DEMONITOR_P`), and a late outcome is dropped. The connection's
//! loss ends the call with [`ErpcError::Noconnection`]. [`Node::erpc_cast`] is
//! `erpc:cast`. Given the node's own name, both refuse with `notsup`
//! ([`ErpcError::Erpc`]): call the Rust function directly.
//!
//! Differences from Erlang: a called Erlang function's group leader is the otter
//! caller, which answers no I/O requests: a function that prints (`io:format`) waits
//! for ever and the call ends by its timeout. An otter function has no stack: the
//! stack in an error is `[{M, F, Args, []}]`, what `erpc` itself writes for the
//! called function's frame.
//!
//! [`Node::register`]: crate::dist::Node::register

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::connection::Connection;
use crate::dist::control::{Control, Target};
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Raw, Term};
use crate::dist::node::{Node, NodeShared};
use crate::process::Context;

/// The most calls from other nodes running at once; one more is refused with
/// `system_limit`.
pub const MAX_IN_FLIGHT: usize = 1 << 16;

/// The most distinct faults logged (module, function, kind); after that, none.
const MAX_LOGGED: usize = 1024;

/// What a registered function raises: the three classes of an Erlang exception.
#[derive(Clone, Debug, PartialEq)]
pub enum Raise {
    /// `erlang:error(Reason)`: the caller gets `error:{exception, Reason, Stack}`.
    Error(Term),
    /// `exit(Reason)`: the caller gets `exit:{exception, Reason}`.
    Exit(Term),
    /// `throw(Term)`: the caller gets the throw.
    Throw(Term),
}

impl Raise {
    /// `Raise::Error` of the atom `reason` (`badarg`, `not_found`...).
    pub fn error(reason: &str) -> Raise {
        Raise::Error(Term::atom(reason))
    }
}

/// Why [`Node::erpc_call`] failed: the classes `erpc:call` raises.
#[derive(Clone, Debug, PartialEq)]
pub enum ErpcError {
    /// The function raised an error: `error:{exception, Reason, Stack}`.
    Error {
        /// The error reason.
        reason: Term,
        /// Its stack, as `erpc` trims it.
        stack: Term,
    },
    /// The function called `exit(Reason)`: `exit:{exception, Reason}`.
    Exit(Term),
    /// The process running the function was killed by an exit signal:
    /// `exit:{signal, Reason}`.
    Signal(Term),
    /// The function threw: `throw:Term`.
    Throw(Term),
    /// The connection was lost or could not be made (`error:{erpc, noconnection}`).
    Noconnection,
    /// No outcome within the timeout (`error:{erpc, timeout}`); the function may or
    /// may not have run.
    Timeout,
    /// Another `error:{erpc, Reason}`: `notsup` (the node does not take spawn
    /// requests), `system_limit`, `badarg`.
    Erpc(Term),
    /// The value did not decode into the expected type.
    Decode(BadTerm),
    /// The arguments could not be encoded (or a name is not an atom).
    Encode(String),
}

impl fmt::Display for ErpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErpcError::Error { reason, .. } => write!(f, "error: {reason}"),
            ErpcError::Exit(r) => write!(f, "exit: {r}"),
            ErpcError::Signal(r) => write!(f, "the process was killed: {r}"),
            ErpcError::Throw(t) => write!(f, "throw: {t}"),
            ErpcError::Noconnection => f.write_str("noconnection"),
            ErpcError::Timeout => f.write_str("timeout"),
            ErpcError::Erpc(r) => write!(f, "erpc: {r}"),
            ErpcError::Decode(b) => write!(f, "bad value: {b}"),
            ErpcError::Encode(e) => write!(f, "cannot encode the call: {e}"),
        }
    }
}

impl std::error::Error for ErpcError {}

/// A call's work, ready to run on its process.
type Job = Box<dyn FnOnce(Context<()>) -> Pin<Box<dyn Future<Output = Outcome> + Send>> + Send>;

/// How a call ended: a value, or an exception.
type Outcome = Result<Term, Raise>;

/// A registered function: decodes the arguments (encoded, 131 included) into a job.
type Entry = Arc<dyn Fn(&Arc<NodeShared>, &[u8]) -> Result<Job, String> + Send + Sync>;

/// A node's `erpc` state: its functions, its calls to other nodes, its counters.
#[derive(Default)]
pub(crate) struct State {
    functions: RwLock<HashMap<(Atom, Atom), Entry>>,
    pending: Mutex<HashMap<Vec<u32>, Arc<Mutex<Pending>>>>,
    in_flight: AtomicUsize,
    logged: Mutex<HashSet<(Atom, Atom, &'static str)>>,
}

/// The encoding of `[]` (131 included).
const NIL: [u8; 2] = [131, 106];

/// Decodes a call's argument list into `A` (module docs: `()` takes `[]`). A list
/// of small integers comes as `STRING_EXT`, which a tuple does not read: it is
/// rewritten as the list it stands for.
fn decode_args<A: DeserializeOwned>(node: &Arc<NodeShared>, args: &[u8]) -> Result<A, String> {
    crate::dist::with_node(node, || decode_list(args))
}

/// [`decode_args`] without a node (a pid in the arguments then fails to decode into
/// a `Pid<M>`; a `Term` takes it).
pub(crate) fn decode_list<A: DeserializeOwned>(args: &[u8]) -> Result<A, String> {
    let spelled;
    let args = match args {
        [131, 107, n0, n1, bytes @ ..]
            if bytes.len() == usize::from(u16::from_be_bytes([*n0, *n1])) =>
        {
            let mut list = Vec::with_capacity(bytes.len() * 2 + 7);
            list.extend_from_slice(&[131, 108]);
            list.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            for b in bytes {
                list.extend_from_slice(&[97, *b]);
            }
            list.push(106);
            spelled = list;
            &spelled[..]
        }
        _ => args,
    };
    match etf::from_slice::<A>(args) {
        Ok(a) => Ok(a),
        Err(e) if args == NIL => {
            // `()` is the atom `ok` in the ETF mapping.
            let mut ok = vec![131];
            etf::encode_term_body(&Term::atom("ok"), &mut ok);
            etf::from_slice::<A>(&ok).map_err(|_| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Encodes a value as a term (through its encoding).
fn to_term<R: Serialize>(node: &Arc<NodeShared>, r: &R) -> Outcome {
    let bytes = crate::dist::with_node(node, || etf::to_vec(r))
        .map_err(|e| Raise::Error(error_text("the result cannot be encoded", &e)))?;
    Term::decode(&bytes).map_err(|e| Raise::Error(error_text("the result cannot be encoded", &e)))
}

fn error_text(what: &str, e: &dyn fmt::Display) -> Term {
    Term::tuple(vec![
        Term::atom("otter"),
        Term::binary(format!("{what}: {e}").into_bytes()),
    ])
}

impl Node {
    /// Registers `function` as `module:function/N` for other nodes' `erpc:call`,
    /// `erpc:cast` and `rpc:call` (module docs). `A` is the argument list, decoded
    /// with serde (a tuple of `N` elements, `()` for none); the function runs in a
    /// process of its own per call. A later registration of the same name replaces
    /// this one.
    pub fn register_rpc<A, R, F>(&self, module: &str, function: &str, f: F)
    where
        A: DeserializeOwned + Send + 'static,
        R: Serialize,
        F: Fn(A) -> Result<R, Raise> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        let entry: Entry = Arc::new(move |node, args| {
            let a: A = decode_args(node, args)?;
            let (f, node) = (f.clone(), node.clone());
            Ok(Box::new(move |_cx: Context<()>| {
                Box::pin(async move {
                    match crate::unwind::catch_panic(|| f(a)) {
                        Ok(Ok(r)) => to_term(&node, &r),
                        Ok(Err(raise)) => Err(raise),
                        Err(panic) => Err(Raise::Error(crate::dist::reason::to_term(&panic))),
                    }
                }) as Pin<Box<dyn Future<Output = Outcome> + Send>>
            }) as Job)
        });
        self.add_rpc(module, function, entry);
    }

    /// Registers an async `function` as `module:function/N` (as
    /// [`register_rpc`](Node::register_rpc)): it runs as the call's process, and
    /// may wait (receive, call, sleep) with its [`Context`].
    pub fn register_rpc_async<A, R, F, Fut>(&self, module: &str, function: &str, f: F)
    where
        A: DeserializeOwned + Send + 'static,
        R: Serialize,
        F: Fn(Context<()>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Raise>> + Send + 'static,
    {
        let f = Arc::new(f);
        let entry: Entry = Arc::new(move |node, args| {
            let a: A = decode_args(node, args)?;
            let (f, node) = (f.clone(), node.clone());
            Ok(Box::new(move |cx: Context<()>| {
                Box::pin(async move {
                    match f(cx, a).await {
                        Ok(r) => to_term(&node, &r),
                        Err(raise) => Err(raise),
                    }
                }) as Pin<Box<dyn Future<Output = Outcome> + Send>>
            }) as Job)
        });
        self.add_rpc(module, function, entry);
    }

    /// Removes `module:function`; false if it was not registered.
    pub fn unregister_rpc(&self, module: &str, function: &str) -> bool {
        let (Some(m), Some(f)) = (Atom::try_new(module), Atom::try_new(function)) else {
            return false;
        };
        self.shared
            .erpc
            .functions
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(m, f))
            .is_some()
    }

    fn add_rpc(&self, module: &str, function: &str, entry: Entry) {
        self.shared
            .erpc
            .functions
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((Atom::new(module), Atom::new(function)), entry);
    }
}

/// Rewrites a tuple's encoding (131 included) as a proper list's; a list stays; the
/// atom `ok` (`()`) is `[]`. None for anything else.
pub(crate) fn as_list(b: &[u8]) -> Option<Vec<u8>> {
    let (arity, body) = match b.get(1)? {
        104 => (u32::from(*b.get(2)?), &b[3..]),
        105 => (u32::from_be_bytes(b.get(2..6)?.try_into().ok()?), &b[6..]),
        106..=108 => return Some(b.to_vec()),
        _ if b == etf::to_vec(&()).ok()? => return Some(NIL.to_vec()),
        _ => return None,
    };
    if arity == 0 {
        return Some(NIL.to_vec());
    }
    let mut out = Vec::with_capacity(b.len() + 4);
    out.extend_from_slice(&[131, 108]);
    out.extend_from_slice(&arity.to_be_bytes());
    out.extend_from_slice(body);
    out.push(106);
    Some(out)
}

// ===== Erlang calls otter =====

/// A spawn request otter runs, decoded.
#[derive(Debug)]
pub(crate) struct Request {
    ask: Ask,
    module: Atom,
    function: Atom,
    /// The argument list, encoded (131 included).
    args: Vec<u8>,
    /// The caller asked for a monitor (its outcome comes back as its exit reason).
    monitor: bool,
}

/// Decodes a `SPAWN_REQUEST`'s entry point, options and argument list (the
/// payload); the refusal's `SPAWN_REPLY` atom if otter does not run it (`notsup`) or
/// it is malformed (`badarg`). Decodes nothing of the user's arguments.
pub(crate) fn parse(
    module: &Atom,
    function: &Atom,
    arity: u64,
    opts: &Term,
    payload: &[u8],
) -> Result<Request, &'static str> {
    let (ask, m, f, args) = match (module.as_str(), function.as_str(), arity) {
        ("erpc", "execute_call", 4) => etf::from_slice::<(Term, Atom, Atom, Raw)>(payload)
            .map(|(res, m, f, a)| (Ask::Call { res }, m, f, a)),
        ("erpc", "execute_cast", 3) => {
            etf::from_slice::<(Atom, Atom, Raw)>(payload).map(|(m, f, a)| (Ask::Cast, m, f, a))
        }
        _ => return Err("notsup"),
    }
    .map_err(|_| "badarg")?;
    if !matches!(args.0.get(1), Some(106..=108)) {
        // `erpc` checks `is_list(A)` before it sends.
        return Err("badarg");
    }
    let monitor = match opts {
        Term::List(o) => o.iter().any(|o| match o {
            Term::Atom(a) => a.as_str() == "monitor",
            Term::Tuple(t) => t.first().and_then(Term::as_atom) == Some("monitor"),
            _ => false,
        }),
        _ => false,
    };
    Ok(Request {
        ask,
        module: m,
        function: f,
        args: args.0,
        monitor,
    })
}

/// What a request asks for.
#[derive(Debug)]
enum Ask {
    /// `erpc:execute_call(Res, M, F, A)`.
    Call { res: Term },
    /// `erpc:execute_cast(M, F, A)`.
    Cast,
}

/// A `SPAWN_REQUEST` from `conn`'s peer (module docs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn_request(
    node: &Arc<NodeShared>,
    conn: &Arc<Connection>,
    req_id: ExternalRef,
    from: ExternalPid,
    module: &Atom,
    function: &Atom,
    arity: u64,
    opts: &Term,
    payload: &[u8],
) {
    let refuse = |why: &str| {
        conn.send_control(
            node,
            &Control::SpawnReply {
                req_id: req_id.clone(),
                to: from.clone(),
                flags: 0,
                result: Term::atom(why),
            },
        );
    };
    let Request {
        ask,
        module: m,
        function: f,
        args,
        monitor,
    } = match parse(module, function, arity, opts, payload) {
        Ok(r) => r,
        Err(why) => {
            log_once(node, module, function, why, || match why {
                "notsup" => format!(
                    "a spawn of {module}:{function}/{arity} from {} refused: otter runs no Erlang code",
                    conn.peer
                ),
                _ => format!("a malformed {module}:{function} request from {}", conn.peer),
            });
            return refuse(why);
        }
    };
    if node.erpc.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
        node.erpc.in_flight.fetch_sub(1, Ordering::AcqRel);
        log_once(node, &m, &f, "system_limit", || {
            format!("{MAX_IN_FLIGHT} calls from other nodes in flight: {m}:{f} refused")
        });
        return refuse("system_limit");
    }
    let job = prepare(node, &conn.peer, &m, &f, &args);
    let (node2, conn2) = (node.clone(), conn.clone());
    node.handle
        .clone()
        .spawn(move |cx: Context<()>| async move {
            let _done = InFlight(node2.clone());
            let me = node2.external_pid(cx.pid().raw);
            conn2.send_control(
                &node2,
                &Control::SpawnReply {
                    req_id: req_id.clone(),
                    to: from.clone(),
                    flags: if monitor { 2 } else { 0 },
                    result: Term::Pid(me.clone()),
                },
            );
            // An async function that panics or is killed drops this guard unsent: the
            // monitor then fires with `killed`, as a killed Erlang process's does.
            let mut guard = Down {
                node: node2.clone(),
                conn: conn2.clone(),
                me,
                to: from,
                req_id,
                reason: monitor.then(|| Term::atom("killed")),
            };
            let outcome = match job {
                Ok(job) => job(cx).await,
                Err(raise) => Err(raise),
            };
            if let Ask::Call { res } = ask {
                guard.reason = Some(exit_reason(res, outcome, &m, &f, &args));
            } else {
                guard.reason = None;
            }
        });
}

/// The job of `m:f(args)`, or the exception a caller gets at once (undefined, or
/// arguments that do not decode; logged once).
fn prepare(
    node: &Arc<NodeShared>,
    peer: &Atom,
    m: &Atom,
    f: &Atom,
    args: &[u8],
) -> Result<Job, Raise> {
    let entry = node
        .erpc
        .functions
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&(m.clone(), f.clone()))
        .cloned();
    let entry = match entry {
        Some(e) => e,
        None => match builtin::builtin(m.as_str(), f.as_str()) {
            Some(b) => {
                let node = node.clone();
                let args = args.to_vec();
                return Ok(Box::new(move |_cx: Context<()>| {
                    Box::pin(async move { b(&node, &args) })
                        as Pin<Box<dyn Future<Output = Outcome> + Send>>
                }));
            }
            None => {
                log_once(node, m, f, "undef", || {
                    format!("{peer} called {m}:{f}, which is not registered: undef")
                });
                return Err(Raise::error("undef"));
            }
        },
    };
    // User code (`Deserialize`): a panic is a decode failure.
    match crate::unwind::catch_panic(|| entry(node, args)) {
        Ok(Ok(job)) => Ok(job),
        Ok(Err(e)) => {
            log_once(node, m, f, "function_clause", || {
                format!("{peer} called {m}:{f} with arguments that do not decode: {e}")
            });
            Err(Raise::error("function_clause"))
        }
        Err(_) => Err(Raise::error("function_clause")),
    }
}

/// The exit reason `erpc:execute_call` ends with for `outcome` (module docs' table).
fn exit_reason(res: Term, outcome: Outcome, m: &Atom, f: &Atom, args: &[u8]) -> Term {
    match outcome {
        Ok(v) => Term::tuple(vec![res, Term::atom("return"), v]),
        Err(Raise::Throw(t)) => Term::tuple(vec![res, Term::atom("throw"), t]),
        Err(Raise::Exit(r)) => Term::tuple(vec![res, Term::atom("exit"), r]),
        Err(Raise::Error(r)) => Term::tuple(vec![res, Term::atom("error"), r, stack(m, f, args)]),
    }
}

/// `[{M, F, Args, []}]`: the frame `erpc` writes for the called function.
pub(crate) fn stack(m: &Atom, f: &Atom, args: &[u8]) -> Term {
    let args = if args.len() <= 64 << 10 {
        Term::decode(args).unwrap_or(Term::List(vec![]))
    } else {
        Term::atom("$otter_term_too_large")
    };
    Term::list(vec![Term::tuple(vec![
        Term::Atom(m.clone()),
        Term::Atom(f.clone()),
        args,
        Term::list(vec![]),
    ])])
}

/// A call from another node in flight (counted against [`MAX_IN_FLIGHT`]).
struct InFlight(Arc<NodeShared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.erpc.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The monitor of a call's process: fires when it drops, with `reason` (none: no
/// monitor, or a cast).
struct Down {
    node: Arc<NodeShared>,
    conn: Arc<Connection>,
    me: ExternalPid,
    to: ExternalPid,
    req_id: ExternalRef,
    reason: Option<Term>,
}

impl Drop for Down {
    fn drop(&mut self) {
        let Some(reason) = self.reason.take() else {
            return;
        };
        self.conn.send_control(
            &self.node,
            &Control::MonitorExit {
                from: Target::Pid(self.me.clone()),
                to: self.to.clone(),
                reference: self.req_id.clone(),
                reason: Some(reason),
            },
        );
    }
}

/// Reports `line()` (`otter::dist`), once per module, function and kind of fault.
fn log_once(
    node: &NodeShared,
    m: &Atom,
    f: &Atom,
    kind: &'static str,
    line: impl FnOnce() -> String,
) {
    let mut logged = node
        .erpc
        .logged
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if logged.len() >= MAX_LOGGED || !logged.insert((m.clone(), f.clone(), kind)) {
        return;
    }
    drop(logged);
    crate::report::dist_fault("erpc", &format_args!("erpc: {} (logged once)", line()));
}

// ===== rex: rpc:call from a node without DFLAG_SPAWN =====

/// `{call | block_call | cast, M, F, Args, GroupLeader}`.
type RexRequest = (Atom, Atom, Atom, Raw, Term);

/// A request to `rex`: the caller's `From` (none for a cast), `M`, `F` and the
/// encoded `Args`; none for anything else.
pub(crate) fn parse_rex(payload: &[u8]) -> Option<(Option<Term>, Atom, Atom, Raw)> {
    let call: Result<(Atom, Term, RexRequest), _> = etf::from_slice(payload);
    match call {
        Ok((tag, from, (kind, m, f, a, _)))
            if tag.as_str() == "$gen_call" && matches!(kind.as_str(), "call" | "block_call") =>
        {
            Some((Some(from), m, f, a))
        }
        _ => {
            let cast: Result<(Atom, RexRequest), _> = etf::from_slice(payload);
            match cast {
                Ok((tag, (kind, m, f, a, _)))
                    if tag.as_str() == "$gen_cast" && kind.as_str() == "cast" =>
                {
                    Some((None, m, f, a))
                }
                _ => None,
            }
        }
    }
}

/// A message to `rex`: `{'$gen_call', From, {call, M, F, A, Gl}}` (or `block_call`),
/// answered as `rpc.erl`'s `rex` answers; `{'$gen_cast', {cast, M, F, A, Gl}}` runs.
pub(crate) fn rex(node: &Arc<NodeShared>, peer: &Atom, payload: &[u8]) {
    let Some((from, m, f, args)) = crate::dist::with_node(node, || parse_rex(payload)) else {
        return;
    };
    if node.erpc.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
        node.erpc.in_flight.fetch_sub(1, Ordering::AcqRel);
        if let Some(from) = from {
            let why = Term::tuple(vec![Term::atom("badrpc"), Term::atom("system_limit")]);
            crate::dist::receive::reply_gen_call(node, &from, why);
        }
        return;
    }
    let job = prepare(node, peer, &m, &f, &args.0);
    let node = node.clone();
    node.handle
        .clone()
        .spawn(move |cx: Context<()>| async move {
            let _done = InFlight(node.clone());
            let outcome = match job {
                Ok(job) => job(cx).await,
                Err(raise) => Err(raise),
            };
            let Some(from) = from else { return };
            let exit = |r: Term| {
                Term::tuple(vec![
                    Term::atom("badrpc"),
                    Term::tuple(vec![Term::atom("EXIT"), r]),
                ])
            };
            let reply = match outcome {
                Ok(v) => v,
                Err(Raise::Throw(t)) => t,
                Err(Raise::Exit(r)) => exit(r),
                Err(Raise::Error(r)) => exit(Term::tuple(vec![r, stack(&m, &f, &args.0)])),
            };
            crate::dist::receive::reply_gen_call(&node, &from, reply);
        });
}

mod builtin;
pub(crate) mod client;

use client::Pending;
pub(crate) use client::{connection_down, monitor_exit, spawn_reply};

#[cfg(test)]
mod tests;
