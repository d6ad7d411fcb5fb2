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
//! error above and logged on stderr once per module, function and kind of fault,
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
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::connection::{self, Connection};
use crate::dist::control::{Control, Target};
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Raw, Term};
use crate::dist::node::{Node, NodeShared};
use crate::pid::RawPid;
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

/// An outgoing call waiting for its outcome.
struct Pending {
    peer: Atom,
    /// The spawned process, once the `SPAWN_REPLY` said it.
    pid: Option<ExternalPid>,
    outcome: Option<Result<Term, ErpcError>>,
    waker: Option<Waker>,
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

    /// Calls `module:function(Args...)` on `node` (`erpc:call(Node, M, F, Args,
    /// Timeout)`) and decodes its value into `R`. `args` is the argument list: a tuple
    /// (one element per argument), `()` for none, or a sequence. The request is sent
    /// before this returns; the future waits for the outcome (module docs).
    pub fn erpc_call<M, A, R>(
        &self,
        cx: &Context<M>,
        node: &str,
        module: &str,
        function: &str,
        args: &A,
        timeout: Duration,
    ) -> impl Future<Output = Result<R, ErpcError>> + Send + 'static
    where
        M: Send + 'static,
        A: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let sleep = cx.sleep(timeout);
        let started = self.start_erpc(Some(cx.pid().raw), node, module, function, args, true);
        let shared = self.shared.clone();
        async move {
            let (conn, req_id, me) = started?;
            let mut sleep = sleep;
            // Whether the call ends here or the future is dropped, its entry goes and
            // the remote monitor is removed.
            struct End {
                node: Arc<NodeShared>,
                conn: Arc<Connection>,
                req_id: ExternalRef,
                me: ExternalPid,
                fired: bool,
            }
            impl Drop for End {
                fn drop(&mut self) {
                    let p = self
                        .node
                        .erpc
                        .pending
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&self.req_id.id);
                    if self.fired {
                        return;
                    }
                    let pid = p
                        .and_then(|p| p.lock().unwrap_or_else(PoisonError::into_inner).pid.clone());
                    if let Some(pid) = pid {
                        self.conn.send_control(
                            &self.node,
                            &Control::Demonitor {
                                from: self.me.clone(),
                                to: Target::Pid(pid),
                                reference: self.req_id.clone(),
                            },
                        );
                    }
                }
            }
            let pending = shared
                .erpc
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&req_id.id)
                .cloned();
            let mut end = End {
                node: shared.clone(),
                conn,
                req_id,
                me,
                fired: false,
            };
            let Some(pending) = pending else {
                return Err(ErpcError::Noconnection);
            };
            let outcome = poll_fn(|t| {
                {
                    let mut p = pending.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(o) = p.outcome.take() {
                        return Poll::Ready(o);
                    }
                    p.waker = Some(t.waker().clone());
                }
                match Pin::new(&mut sleep).poll(t) {
                    Poll::Ready(()) => Poll::Ready(Err(ErpcError::Timeout)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            end.fired = !matches!(outcome, Err(ErpcError::Timeout));
            drop(end);
            let value = outcome?;
            let mut bytes = Vec::new();
            value.encode(&mut bytes);
            crate::dist::with_node(&shared, || etf::from_slice::<R>(&bytes)).map_err(|e| {
                ErpcError::Decode(BadTerm {
                    term: value,
                    error: e.to_string(),
                })
            })
        }
    }

    /// Runs `module:function(Args...)` on `node` and waits for nothing
    /// (`erpc:cast`); `args` as [`erpc_call`](Node::erpc_call)'s. Errors only if the
    /// request cannot be encoded.
    pub fn erpc_cast<A: Serialize + ?Sized>(
        &self,
        node: &str,
        module: &str,
        function: &str,
        args: &A,
    ) -> Result<(), ErpcError> {
        self.start_erpc(None, node, module, function, args, false)
            .map(|_| ())
    }

    /// Sends the `SPAWN_REQUEST` of a call (`call`: `execute_call/4` with a
    /// monitor, else `execute_cast/3`), from `caller` (the node's own pid if none).
    fn start_erpc<A: Serialize + ?Sized>(
        &self,
        caller: Option<RawPid>,
        node: &str,
        module: &str,
        function: &str,
        args: &A,
        call: bool,
    ) -> Result<(Arc<Connection>, ExternalRef, ExternalPid), ErpcError> {
        let shared = &self.shared;
        let atom = |s: &str| {
            Atom::try_new(s).ok_or_else(|| ErpcError::Encode(format!("{s:?} is not an atom")))
        };
        let (peer, m, f) = (atom(node)?, atom(module)?, atom(function)?);
        if peer == shared.name {
            return Err(ErpcError::Erpc(Term::atom("notsup")));
        }
        let me = match caller {
            Some(raw) => shared.external_pid(raw),
            None => connection::node_pid(shared),
        };
        let list = crate::dist::with_node(shared, || etf::to_vec(args))
            .map_err(|e| ErpcError::Encode(e.to_string()))
            .and_then(|b| {
                as_list(&b).ok_or_else(|| {
                    ErpcError::Encode("the arguments are not a tuple or a list".into())
                })
            })?;
        let req_id = shared.make_ref();
        let res = shared.make_ref();
        let (entry, arity, opts) = match call {
            true => ("execute_call", 4, Term::list(vec![Term::atom("monitor")])),
            false => ("execute_cast", 3, Term::list(vec![])),
        };
        let control = Control::SpawnRequest {
            req_id: req_id.clone(),
            from: me.clone(),
            group_leader: Term::Pid(me.clone()),
            module: Atom::new("erpc"),
            function: Atom::new(entry),
            arity,
            opts,
        };
        // The payload: `[Res, M, F, Args]` or `[M, F, Args]`, `Args` already encoded.
        let frame = connection::frame_with(&control, |out| {
            out.push(131);
            out.push(108);
            out.extend_from_slice(&(arity as u32).to_be_bytes());
            if call {
                etf::encode_term_body(&Term::Ref(res.clone()), out);
            }
            etf::encode_term_body(&Term::Atom(m), out);
            etf::encode_term_body(&Term::Atom(f), out);
            out.extend_from_slice(&list[1..]);
            out.push(106);
            Ok(())
        })
        .map_err(|e| ErpcError::Encode(e.to_string()))?;
        let conn = connection::get_or_connect(shared, &peer);
        if call {
            let pending = Arc::new(Mutex::new(Pending {
                peer: peer.clone(),
                pid: None,
                outcome: None,
                waker: None,
            }));
            shared
                .erpc
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(req_id.id.clone(), pending);
        }
        conn.send_frame(frame);
        if conn.is_gone() {
            connection_down(shared, &peer);
        }
        Ok((conn, req_id, me))
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
        None => match builtin(m.as_str(), f.as_str()) {
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

/// Logs `line()` on stderr, once per module, function and kind of fault.
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
    eprintln!("otter: erpc: {} (logged once)", line());
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

// ===== otter calls Erlang: replies =====

/// A `SPAWN_REPLY` over the connection to `peer`: a pid is recorded (the monitor's
/// target), an error atom ends the call. Replies to casts find no entry.
pub(crate) fn spawn_reply(node: &NodeShared, peer: &Atom, req_id: &ExternalRef, result: Term) {
    let Some(p) = ours(node, peer, req_id) else {
        return;
    };
    match result {
        Term::Pid(pid) => {
            p.lock().unwrap_or_else(PoisonError::into_inner).pid = Some(pid);
        }
        why => {
            node.erpc
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&req_id.id);
            complete(&p, Err(ErpcError::Erpc(why)));
        }
    }
}

/// A `MONITOR_P_EXIT` over the connection to `peer`: the outcome of a call, if
/// `reference` is one of this node's calls. False if it is not.
pub(crate) fn monitor_exit(
    node: &NodeShared,
    peer: &Atom,
    reference: &ExternalRef,
    reason: Option<&Term>,
) -> bool {
    if ours(node, peer, reference).is_none() {
        return false;
    }
    let Some(p) = node
        .erpc
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&reference.id)
    else {
        return false;
    };
    let normal = Term::atom("normal");
    complete(&p, outcome(reason.unwrap_or(&normal)));
    true
}

/// What `erpc:call` makes of an exit reason (`erpc.erl`'s `result/4`); the result
/// reference is not checked (the monitor's reference is this call's).
pub(crate) fn outcome(reason: &Term) -> Result<Term, ErpcError> {
    if let Term::Tuple(t) = reason
        && matches!(t.first(), Some(Term::Ref(_)))
    {
        match (t.get(1).and_then(Term::as_atom), t.len()) {
            (Some("return"), 3) => return Ok(t[2].clone()),
            (Some("throw"), 3) => return Err(ErpcError::Throw(t[2].clone())),
            (Some("exit"), 3) => return Err(ErpcError::Exit(t[2].clone())),
            (Some("error"), 4) => {
                return Err(ErpcError::Error {
                    reason: t[2].clone(),
                    stack: t[3].clone(),
                });
            }
            (Some("error"), 3) => {
                if let Term::Tuple(e) = &t[2]
                    && e.len() == 2
                    && e[0].as_atom() == Some("erpc")
                {
                    return Err(ErpcError::Erpc(e[1].clone()));
                }
            }
            _ => {}
        }
    }
    match reason.as_atom() {
        Some("noconnection") => Err(ErpcError::Noconnection),
        _ => Err(ErpcError::Signal(reason.clone())),
    }
}

/// The pending call of `reference` if it went to `peer`.
fn ours(node: &NodeShared, peer: &Atom, reference: &ExternalRef) -> Option<Arc<Mutex<Pending>>> {
    if reference.node != node.name || reference.creation != node.creation {
        return None;
    }
    let pending = node
        .erpc
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    pending
        .get(&reference.id)
        .filter(|p| p.lock().unwrap_or_else(PoisonError::into_inner).peer == *peer)
        .cloned()
}

fn complete(p: &Mutex<Pending>, outcome: Result<Term, ErpcError>) {
    let waker = {
        let mut p = p.lock().unwrap_or_else(PoisonError::into_inner);
        p.outcome.get_or_insert(outcome);
        p.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// The connection to `peer` went down: its calls end with `Noconnection`.
pub(crate) fn connection_down(node: &NodeShared, peer: &Atom) {
    let gone: Vec<_> = {
        let mut pending = node
            .erpc
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<_> = pending
            .iter()
            .filter(|(_, p)| p.lock().unwrap_or_else(PoisonError::into_inner).peer == *peer)
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| pending.remove(k)).collect()
    };
    for p in gone {
        complete(&p, Err(ErpcError::Noconnection));
    }
}

// ===== Built in =====

type Builtin = fn(&Arc<NodeShared>, &[u8]) -> Outcome;

/// The built-in function `m:f`, if there is one (module docs' table).
fn builtin(m: &str, f: &str) -> Option<Builtin> {
    Some(match (m, f) {
        ("erlang", "processes") => processes,
        ("erlang", "process_info") => process_info,
        ("erlang", "registered") => registered,
        ("erlang", "memory") => memory,
        ("erlang", "system_info") => system_info,
        _ => return None,
    })
}

fn no_args(node: &Arc<NodeShared>, args: &[u8]) -> Result<(), Raise> {
    decode_args::<()>(node, args).map_err(|_| Raise::error("undef"))
}

/// The live processes of the runtime.
fn live() -> impl Iterator<Item = RawPid> {
    (0..crate::process::table::high_water()).filter_map(|index| {
        let slot = crate::process::table::slot(index)?;
        let generation = slot.word.generation();
        slot.word
            .is_alive(generation)
            .then_some(RawPid { index, generation })
    })
}

fn processes(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    Ok(Term::list(
        live().map(|p| Term::Pid(node.external_pid(p))).collect(),
    ))
}

fn process_info(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    let (pid, key): (Term, Term) = decode_args(node, args).map_err(|_| Raise::error("undef"))?;
    let (Term::Pid(pid), Term::Atom(key)) = (pid, key) else {
        return Err(Raise::error("badarg"));
    };
    let Some(raw) = node.local_pid(&pid) else {
        return Err(Raise::error("badarg"));
    };
    let alive =
        crate::process::table::slot(raw.index).is_some_and(|s| s.word.is_alive(raw.generation));
    if !alive {
        return Ok(Term::atom("undefined"));
    }
    match key.as_str() {
        "registered_name" => {
            let names = node.names.read().unwrap_or_else(PoisonError::into_inner);
            let name = names
                .iter()
                .find(|(n, e)| e.target(node, n) == Some(raw))
                .map(|(n, _)| n.clone());
            Ok(match name {
                Some(n) => Term::tuple(vec![Term::atom("registered_name"), Term::Atom(n)]),
                None => Term::list(vec![]),
            })
        }
        _ => Err(Raise::error("badarg")),
    }
}

fn registered(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    let mut names: Vec<Term> = node
        .names
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .map(|n| Term::Atom(n.clone()))
        .collect();
    names.push(Term::atom("net_kernel"));
    names.push(Term::atom("rex"));
    Ok(Term::list(names))
}

fn memory(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    no_args(node, args)?;
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let pair = |k: &str, v: u64| Term::tuple(vec![Term::atom(k), Term::from(v)]);
    Ok(Term::list(vec![
        pair("total", rss),
        pair("processes", 0),
        pair("processes_used", 0),
        pair("system", rss),
        pair("atom", 0),
        pair("atom_used", 0),
        pair("binary", 0),
        pair("code", 0),
        pair("ets", 0),
    ]))
}

fn system_info(node: &Arc<NodeShared>, args: &[u8]) -> Outcome {
    let (what,): (Term,) = decode_args(node, args).map_err(|_| Raise::error("undef"))?;
    match what.as_atom() {
        Some("process_count") => Ok(Term::from(live().count() as u64)),
        _ => Err(Raise::error("badarg")),
    }
}

#[cfg(test)]
mod tests;
