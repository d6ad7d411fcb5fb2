//! `otter::server`s that other nodes call with `gen_server:call/2,3` and
//! `gen_server:cast/2`.
//!
//! A server registered with [`Node::register_server`] receives, under its name:
//! * `{'$gen_call', From, Request}`: `Request` decodes into
//!   [`RemoteServer::RemoteCall`], and a short-lived process runs
//!   [`RemoteServer::remote_call`] (an ordinary typed call to the server) and sends
//!   the reply to `From`: to its alias for OTP 24+ callers (`[alias | Ref]` tags),
//!   else to its pid. If the server exits first, no reply is sent: the Erlang caller's
//!   monitor (set by name, `DEMONITOR`ed after the call as `gen.erl` does) reports it.
//! * `{'$gen_cast', Request}`: `Request` decodes into [`RemoteServer::RemoteCast`],
//!   then [`RemoteServer::remote_cast`] makes it a cast.
//! * a call whose request does not decode: [`RemoteServer::bad_call`] says what to
//!   do; by default the caller gets `{error, {bad_call, Request}}` at once;
//! * anything else, or a request that does not decode and is not answered:
//!   [`RemoteServer::bad_term`] decides what the server sees (an `Info`, or nothing).
//!
//! A server's pid reaches other nodes in terms as well: a [`ServerRef`] (or its
//! `Pid<ServerMsg<S>>`) of a [`RemoteServer`] encodes as an Erlang pid, and requests
//! to that pid (`gen_server:call(Pid, Request)`, casts) are served as above; the
//! peer can monitor, link to and send exit signals to it as to any pid.
//!
//! Requests run through a process each so that the connection's reader never waits
//! for a server: a slow server delays its own callers, not the other traffic from that
//! node.
//!
//! * `{system, From, Request}`: OTP's system messages (`sys:get_state`,
//!   `gen_server:stop` ...), answered through [`crate::sys`] (`system.rs`).
//!
//! An [`ErlangServer`] is a `RemoteServer` (blanket impl) whose requests decode
//! straight into the server's own `Call`, its `ReplyTo` made here: see its docs for the
//! rule, and `ErlangRequest`'s `Deserialize` below for the mechanism.

use std::any::TypeId;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use std::fmt;
use std::sync::atomic::Ordering;

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize};

use crate::dist::bad_term::BadTerm;
use crate::dist::etf::{self, Atom, Raw, Term};
use crate::dist::node::{Exported, Node, NodeShared};
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use crate::server::{
    CallError, DEFAULT_CALL_TIMEOUT, Pending, ReplyTo, Server, ServerMsg, ServerRef,
};

/// A server that other nodes can call (see the module docs of [`crate::dist`]).
///
/// ```no_run
/// use otter::dist::etf::Term;
/// use otter::dist::{BadTerm, RemoteServer};
/// use otter::server::{CallError, Flow, ReplyTo, Server, ServerContext, ServerRef};
/// use otter::ExitReason;
/// use serde::Deserialize;
///
/// struct Counter(i64);
/// enum Call { Add(i64, ReplyTo<i64>) }
/// #[derive(Deserialize)]
/// #[serde(rename_all = "snake_case")]
/// enum Request { Add(i64) }
///
/// impl Server for Counter {
///     type Args = (); type Call = Call; type Cast = (); type Info = BadTerm;
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(0)) }
///     async fn handle_call(&mut self, c: Call, _: &mut ServerContext<Self>) -> Flow {
///         let Call::Add(n, from) = c;
///         self.0 += n;
///         from.reply(self.0);
///         Flow::Continue
///     }
/// }
///
/// impl RemoteServer for Counter {
///     type RemoteCall = Request;
///     type RemoteReply = i64;
///     type RemoteCast = ();
///     async fn remote_call(server: ServerRef<Self>, r: Request) -> Result<i64, CallError> {
///         let Request::Add(n) = r;
///         server.call(|from| Call::Add(n, from)).await
///     }
///     fn remote_cast(_: ()) -> Option<()> { None }
///     fn bad_term(b: BadTerm) -> Option<BadTerm> { Some(b) }
/// }
/// // From Erlang: gen_server:call({counter, 'otter@host'}, {add, 5}) returns 5.
/// ```
pub trait RemoteServer: Server {
    /// What an Erlang caller's `Request` decodes into.
    type RemoteCall: DeserializeOwned + Send + 'static;
    /// What goes back to the caller (as the value `gen_server:call` returns).
    type RemoteReply: Serialize + Send + 'static;
    /// What an Erlang `gen_server:cast`'s `Request` decodes into.
    type RemoteCast: DeserializeOwned + Send + 'static;

    /// Serves one call from another node, usually with an ordinary typed
    /// [`ServerRef::call`]. An `Err` sends no reply (the caller's monitor or timeout
    /// ends its call, as with an Erlang server that crashed).
    ///
    /// The Erlang caller's timeout does not travel with the request: with
    /// [`ServerRef::call`]'s default of 5 s, a handler that takes longer ends here with
    /// `Err(Timeout)` and no reply, and a caller that waits `infinity` waits for ever
    /// (the server lives, so its monitor never fires). A server that may take longer
    /// uses [`ServerRef::call_timeout`] with a longer timeout, or `None`.
    fn remote_call(
        server: ServerRef<Self>,
        request: Self::RemoteCall,
    ) -> impl Future<Output = Result<Self::RemoteReply, CallError>> + Send;

    /// The cast a remote cast becomes, if any.
    fn remote_cast(request: Self::RemoteCast) -> Option<Self::Cast>;

    /// What the server sees of a message it cannot take: a request that does not
    /// decode, or a plain message sent to its name (an `Info`, or nothing).
    fn bad_term(term: BadTerm) -> Option<Self::Info>;

    /// What to do with a call whose request does not decode into
    /// [`RemoteServer::RemoteCall`]. By default ([`BadCall::Refuse`]) the caller gets
    /// `{error, {bad_call, Request}}` at once, as from an Erlang server whose
    /// catch-all clause is `handle_call(Request, _, S) -> {reply, {error, {bad_call,
    /// Request}}, S}`. Override it to answer otherwise ([`BadCall::Reply`]) or not
    /// at all ([`BadCall::Ignore`]).
    fn bad_call(request: BadTerm) -> BadCall<Self::RemoteReply> {
        BadCall::Refuse(request)
    }
}

/// What [`RemoteServer::bad_call`] does with a call whose request does not decode.
///
/// The request is the [`BadTerm`] as received: its term, or in place of one too
/// large or too deeply nested to keep whole the atom `'$otter_term_too_large'` or
/// `'$otter_term_too_deep'`.
#[derive(Debug)]
pub enum BadCall<R> {
    /// Reply `{error, {bad_call, Request}}` (the default), `Request` being the
    /// request's term.
    Refuse(BadTerm),
    /// Reply with this value.
    Reply(R),
    /// Send no reply: the request goes to [`RemoteServer::bad_term`], and the caller
    /// waits out its timeout (for ever with `infinity`).
    Ignore(BadTerm),
}

// ===== ErlangServer: the server's own Call, decoded =====

/// A server whose own `Call` and `Cast` types are its requests from other nodes: no
/// second request enum, no forwarding by hand. Every `ErlangServer` is a
/// [`RemoteServer`] (a blanket impl), so [`Node::register_server`],
/// [`Node::register_server_name`] and a [`ServerRef`] in a term work as for any.
///
/// `Call` and `Cast` implement `DeserializeOwned`. A call from another node
/// (`gen_server:call/2,3`) decodes into the server's `Call`, the same enum its Rust
/// callers build with [`ServerRef::call`], and the runtime makes the [`ReplyTo`] that
/// answers the remote caller. The rule that makes one enum fit both: **each `Call`
/// variant ends with its `ReplyTo`**, which the Erlang request does not carry.
/// `gen_server:call(S, {put, K, V})` decodes as `Put(K, V, ReplyTo<R>)`, and a bare
/// atom `gen_server:call(S, stats)` as `Stats(ReplyTo<R>)`: the runtime appends the
/// reply handle to the request tuple (or makes the atom `{Atom, Handle}`) before
/// decoding. Only tuple and newtype variants (serde's `{Tag, ...}`) take a `ReplyTo`;
/// the reply `R: Serialize` is encoded with the [`etf`] mapping when the server
/// replies ([`shapes`](crate::dist::shapes) has Erlang's `{ok, T}` / `{error, E}`).
/// A `ReplyTo` decodes nowhere else: in any other message it is a decoding error (a
/// [`BadTerm`]). A cast (`gen_server:cast/2`) decodes into the server's `Cast`.
///
/// If the server exits before it replies, no reply is sent and the remote caller's
/// monitor reports the exit; a reply that does not come within
/// [`ErlangServer::REMOTE_CALL_TIMEOUT`] is given up on.
///
/// ```no_run
/// use otter::dist::etf::Term;
/// use otter::dist::shapes::OkError;
/// use otter::dist::{ErlangServer, Node};
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::ExitReason;
/// use serde::Deserialize;
///
/// struct Counter(i64);
/// #[derive(Deserialize)]
/// #[serde(rename_all = "snake_case")]
/// enum Call {
///     Add(i64, ReplyTo<i64>),              // {add, N} -> N
///     Sub(i64, ReplyTo<OkError<i64, Term>>) // {sub, N} -> {ok, N} | {error, negative}
/// }
///
/// impl Server for Counter {
///     type Args = (); type Call = Call; type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Counter(0)) }
///     async fn handle_call(&mut self, c: Call, _: &mut ServerContext<Self>) -> Flow {
///         match c {
///             Call::Add(n, from) => { self.0 += n; from.reply(self.0) }
///             Call::Sub(n, from) if n > self.0 => from.reply(OkError(Err(Term::atom("negative")))),
///             Call::Sub(n, from) => { self.0 -= n; from.reply(OkError(Ok(self.0))) }
///         }
///         Flow::Continue
///     }
/// }
/// impl ErlangServer for Counter {}
/// // Rust: counter.call(|r| Call::Add(5, r)).await
/// // Erlang: gen_server:call({counter, 'otter@host'}, {add, 5})
/// ```
pub trait ErlangServer: Server {
    /// How long the runtime waits for the server's reply to a remote call before it
    /// gives up on it (no reply is sent; the caller's own timeout ends its call). The
    /// Erlang caller's timeout does not travel with the request; default
    /// [`DEFAULT_CALL_TIMEOUT`], `None` waits until the server replies or exits.
    const REMOTE_CALL_TIMEOUT: Option<Duration> = Some(DEFAULT_CALL_TIMEOUT);

    /// What the server sees of a message it cannot take, as
    /// [`RemoteServer::bad_term`]. By default nothing (the message is dropped).
    fn bad_term(term: BadTerm) -> Option<Self::Info> {
        let _ = term;
        None
    }

    /// What to do with a call whose request does not decode into `Call`, as
    /// [`RemoteServer::bad_call`] (by default `{error, {bad_call, Request}}`).
    fn bad_call(request: BadTerm) -> BadCall<Term> {
        BadCall::Refuse(request)
    }
}

impl<S> RemoteServer for S
where
    S: ErlangServer,
    S::Call: DeserializeOwned,
    S::Cast: DeserializeOwned,
{
    type RemoteCall = ErlangRequest<S>;
    type RemoteReply = Term;
    type RemoteCast = S::Cast;

    async fn remote_call(
        server: ServerRef<Self>,
        request: ErlangRequest<S>,
    ) -> Result<Term, CallError> {
        let ErlangRequest { call, reply } = request;
        // The watcher goes on the server before the call does: an exit in between
        // ends the wait (`Noproc` if it is already gone).
        let wait = reply(server.pid().raw, S::REMOTE_CALL_TIMEOUT);
        let _ = server.pid().try_send(ServerMsg::Call(call));
        wait.await
    }

    fn remote_cast(request: S::Cast) -> Option<S::Cast> {
        Some(request)
    }

    fn bad_term(term: BadTerm) -> Option<S::Info> {
        <S as ErlangServer>::bad_term(term)
    }

    fn bad_call(request: BadTerm) -> BadCall<Term> {
        <S as ErlangServer>::bad_call(request)
    }
}

/// The wait for a remote call's reply: given the server and the timeout, it watches
/// the server and returns the future of the encoded reply.
type Waiter = Box<
    dyn FnOnce(
            RawPid,
            Option<Duration>,
        ) -> Pin<Box<dyn Future<Output = Result<Term, CallError>> + Send>>
        + Send,
>;

/// A request from another node to an [`ErlangServer`]: the server's own `Call`,
/// decoded with the reply handle the runtime made for it (the
/// [`RemoteServer::RemoteCall`] of every `ErlangServer`).
pub struct ErlangRequest<S: Server> {
    call: S::Call,
    reply: Waiter,
}

impl<S: Server> fmt::Debug for ErlangRequest<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErlangRequest").finish_non_exhaustive()
    }
}

/// The atom that stands for the reply handle in a request being decoded.
const REPLY_MARK: &str = "$otter_reply";

thread_local! {
    /// While a [`ErlangRequest`] decodes on this thread: the wait of the `ReplyTo` decoded
    /// in it, if any yet (outside: `None`, and a `ReplyTo` does not decode).
    static DECODING: RefCell<Option<Option<Waiter>>> = const { RefCell::new(None) };
}

/// `body` (one term's encoding, no version byte) with the reply mark appended: a
/// tuple gets one more element, an atom `A` becomes `{A, Mark}`; anything else is
/// left as it is (it decodes into no `Call` variant that takes a reply).
fn with_reply_mark(body: &[u8]) -> Vec<u8> {
    const SMALL_TUPLE: u8 = 104;
    const LARGE_TUPLE: u8 = 105;
    const SMALL_ATOM_UTF8: u8 = 119;
    let mark = {
        let mut m = vec![SMALL_ATOM_UTF8, REPLY_MARK.len() as u8];
        m.extend_from_slice(REPLY_MARK.as_bytes());
        m
    };
    let mut out = Vec::with_capacity(body.len() + mark.len() + 6);
    out.push(131);
    match body.first() {
        Some(&SMALL_TUPLE) if body.len() >= 2 && body[1] < u8::MAX => {
            out.extend_from_slice(&[SMALL_TUPLE, body[1] + 1]);
            out.extend_from_slice(&body[2..]);
        }
        Some(&SMALL_TUPLE) if body.len() >= 2 => {
            out.push(LARGE_TUPLE);
            out.extend_from_slice(&256u32.to_be_bytes());
            out.extend_from_slice(&body[2..]);
        }
        Some(&LARGE_TUPLE) if body.len() >= 5 => {
            let arity = u32::from_be_bytes([body[1], body[2], body[3], body[4]]);
            let Some(arity) = arity.checked_add(1) else {
                out.extend_from_slice(body);
                return out;
            };
            out.push(LARGE_TUPLE);
            out.extend_from_slice(&arity.to_be_bytes());
            out.extend_from_slice(&body[5..]);
        }
        // ATOM_EXT, SMALL_ATOM_EXT, ATOM_UTF8_EXT, SMALL_ATOM_UTF8_EXT
        Some(100 | 115 | 118 | 119) => {
            out.extend_from_slice(&[SMALL_TUPLE, 2]);
            out.extend_from_slice(body);
        }
        _ => {
            out.extend_from_slice(body);
            return out;
        }
    }
    out.extend_from_slice(&mark);
    out
}

impl<'de, S> Deserialize<'de> for ErlangRequest<S>
where
    S: Server,
    S::Call: DeserializeOwned,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ErlangRequest<S>, D::Error> {
        let raw = Raw::deserialize(d)?;
        let bytes = with_reply_mark(&raw.0[1..]);
        struct Restore(Option<Option<Waiter>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let old = self.0.take();
                DECODING.with(|c| *c.borrow_mut() = old);
            }
        }
        let restore = Restore(DECODING.with(|c| c.replace(Some(None))));
        let call = etf::from_slice::<S::Call>(&bytes).map_err(de::Error::custom)?;
        let reply = DECODING.with(|c| c.borrow_mut().as_mut().and_then(Option::take));
        drop(restore);
        match reply {
            Some(reply) => Ok(ErlangRequest { call, reply }),
            None => Err(de::Error::custom(
                "the request decodes into a call that takes no ReplyTo",
            )),
        }
    }
}

/// A reply handle decodes only inside a call from another node to an
/// [`ErlangServer`], where the runtime makes it (see [`ErlangServer`]): the reply
/// goes to the remote caller. Anywhere else decoding one is an error.
impl<'de, R: Serialize + Send + 'static> Deserialize<'de> for ReplyTo<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReplyTo<R>, D::Error> {
        let mark = Atom::deserialize(d)?;
        let (decoding, node) = (
            DECODING.with(|c| c.borrow().is_some()),
            crate::dist::current_node(),
        );
        let (true, Some(node), REPLY_MARK) = (decoding, node, mark.as_str()) else {
            return Err(de::Error::custom(
                "a ReplyTo decodes only as the last field of a call from another node",
            ));
        };
        let (mut pending, reply_to) = Pending::<R>::new();
        let waiter: Waiter = Box::new(move |server, timeout| {
            pending.watch(server, |reason| Err(CallError::Exit(reason)));
            Box::pin(async move {
                let reply = pending.wait(timeout).await?;
                match crate::dist::with_node(&node, || etf::to_vec(&reply)) {
                    Ok(bytes) => Term::decode(&bytes).map_err(|_| CallError::Timeout),
                    Err(e) => {
                        // No reply can go: the caller's timeout ends its call.
                        crate::report::dist_fault(
                            "reply_failed",
                            &format_args!(
                                "a reply to a call from another node does not encode: {e}"
                            ),
                        );
                        Err(CallError::Timeout)
                    }
                }
            })
        });
        DECODING.with(|c| {
            if let Some(slot) = c.borrow_mut().as_mut() {
                *slot = Some(waiter);
            }
        });
        Ok(reply_to)
    }
}

impl Node {
    /// Registers `server` under `name` for other nodes: `gen_server:call({Name, Node},
    /// Request)` and `gen_server:cast` reach it (see [`RemoteServer`]), and so do
    /// monitors by name.
    ///
    /// # Panics
    ///
    /// If `name` is longer than 255 characters (Erlang's limit for an atom).
    pub fn register_server<S: RemoteServer>(&self, name: &str, server: ServerRef<S>) {
        self.shared
            .export_name(name, server_exported::<S>(server.pid().raw));
    }

    /// Registers `name` for other nodes as the name of whichever server of type `S`
    /// holds it in this runtime's registry when a request arrives
    /// ([`Server::start_link_named`], [`ChildSpec::named_server`](crate::supervisor::ChildSpec::named_server)):
    /// `gen_server:call({Name, Node}, Request)`, casts and monitors by name reach the
    /// server that has the name then. A server its supervisor restarts under the same
    /// name is reached again, as with OTP's `{local, Name}`; [`Node::register_server`]
    /// keeps the one server it was given. A call while no server has the name is
    /// answered as for a name nobody holds (`noproc`, from the caller's monitor).
    ///
    /// # Panics
    ///
    /// If `name` is longer than 255 characters (Erlang's limit for an atom).
    pub fn register_server_name<S: RemoteServer>(&self, name: &str) {
        let e = Exported {
            pid: RawPid {
                index: 0,
                generation: 0,
            },
            type_id: TypeId::of::<ServerMsg<S>>(),
            deliver: deliver::<S>,
            by_local_name: true,
        };
        self.shared.export_name(name, e);
    }
}

// ===== A server's pid in terms =====

/// A server's pid: a pid in terms (and from Erlang, a pid that `gen_server:call/2,3`,
/// `gen_server:cast/2`, `erlang:monitor/2`, `link/1` and `exit/2` take). Encoding it
/// makes the server reachable from the peer as [`Node::register_server`] makes it by
/// name: requests decode as [`RemoteServer`] says. Decoding one back is not
/// supported (a `ServerMsg` is no term).
impl<S: RemoteServer> Serialize for ServerRef<S> {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        self.pid().serialize(s)
    }
}

/// A server's pid, as its [`ServerRef`]'s.
impl<S: RemoteServer> Serialize for Pid<ServerMsg<S>> {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        crate::dist::pid_serde::serialize_pid(self.raw, server_exported::<S>, s)
    }
}

/// The decoder record of a server's process (`node.rs`'s `Exported`).
fn server_exported<S: RemoteServer>(pid: RawPid) -> Exported {
    Exported {
        pid,
        type_id: TypeId::of::<ServerMsg<S>>(),
        deliver: deliver::<S>,
        by_local_name: false,
    }
}

/// The most calls from other nodes served at once by one node: beyond, a call is
/// dropped (its caller times out) and the drop is logged. A flood of calls would
/// otherwise be a flood of processes.
const MAX_REMOTE_CALLS: usize = 100_000;

/// The largest term kept whole for [`BadTerm`]; a larger one is replaced by the atom
/// `'$otter_term_too_large'` (a decoded term takes up to 50 times its encoding).
const MAX_BAD_TERM: usize = 1 << 20;

/// The term `raw` holds, if it is small enough to keep whole.
fn term_of(raw: &Raw) -> Term {
    if raw.0.len() > MAX_BAD_TERM {
        return Term::atom("$otter_term_too_large");
    }
    match Term::decode(&raw.0) {
        Ok(t) => t,
        // The connection's reader took it for a term: it is one nested deeper than a
        // `Term` may be (`etf::MAX_DEPTH`).
        Err(etf::DecodeError::TooDeep { .. }) => Term::atom("$otter_term_too_deep"),
        Err(_) => Term::atom("$otter_bad_term"),
    }
}

fn deliver<S: RemoteServer>(node: &Arc<NodeShared>, to: RawPid, payload: &[u8]) {
    let server = ServerRef::<S>::from_pid(Pid::from_raw(to));
    let bad = |term: Term, error: String| {
        if let Some(info) = S::bad_term(BadTerm { term, error }) {
            server.pid().send(ServerMsg::Info(info));
        }
    };
    let whole = || term_of(&Raw(payload.to_vec()));
    // `{'$gen_call', From, Request}` or `{'$gen_cast', Request}`, taken apart without
    // decoding the request twice.
    let call: Result<(Atom, Term, Raw), _> =
        crate::dist::with_node(node, || etf::from_slice(payload));
    if let Ok((tag, from, request)) = call {
        if tag.as_str() == "system" {
            // `sys` and `gen_server:stop` from another node (`system.rs`).
            if node.remote_calls.fetch_add(1, Ordering::AcqRel) >= MAX_REMOTE_CALLS {
                node.remote_calls.fetch_sub(1, Ordering::AcqRel);
                calls_dropped();
                return;
            }
            let node = node.clone();
            let request = term_of(&request);
            node.handle.clone().spawn(move |_: Context<()>| async move {
                let _done = InFlight(node.clone());
                crate::dist::system::answer(node, server, from, request).await;
            });
            return;
        }
        if tag.as_str() != "$gen_call" {
            return bad(whole(), "not a gen_server request".into());
        }
        let request: S::RemoteCall =
            match crate::dist::with_node(node, || etf::from_slice(&request.0)) {
                Ok(r) => r,
                Err(e) => {
                    let refused = BadTerm {
                        term: term_of(&request),
                        error: e.to_string(),
                    };
                    // (User code, as `deliver` is: its caller catches a panic.)
                    return match S::bad_call(refused) {
                        BadCall::Refuse(b) => {
                            let bad_call = Term::tuple(vec![Term::atom("bad_call"), b.term]);
                            let reply = Term::tuple(vec![Term::atom("error"), bad_call]);
                            reply_to(node, &from, &reply);
                        }
                        BadCall::Reply(reply) => reply_to(node, &from, &reply),
                        BadCall::Ignore(b) => bad(b.term, b.error),
                    };
                }
            };
        if node.remote_calls.fetch_add(1, Ordering::AcqRel) >= MAX_REMOTE_CALLS {
            node.remote_calls.fetch_sub(1, Ordering::AcqRel);
            calls_dropped();
            return;
        }
        let node = node.clone();
        node.handle.clone().spawn(move |_: Context<()>| async move {
            let _done = InFlight(node.clone());
            if let Ok(reply) = S::remote_call(server, request).await {
                reply_to(&node, &from, &reply);
            }
        });
        return;
    }
    let cast: Result<(Atom, Raw), _> = crate::dist::with_node(node, || etf::from_slice(payload));
    match cast {
        Ok((tag, request)) if tag.as_str() == "$gen_cast" => {
            match crate::dist::with_node(node, || etf::from_slice::<S::RemoteCast>(&request.0)) {
                Ok(c) => {
                    if let Some(c) = S::remote_cast(c) {
                        server.cast(c);
                    }
                }
                Err(e) => bad(term_of(&request), e.to_string()),
            }
        }
        _ => bad(whole(), "not a gen_server request".into()),
    }
}

/// A request from another node in flight (counted against [`MAX_REMOTE_CALLS`] until
/// its process ends).
struct InFlight(Arc<NodeShared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.remote_calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sends `{Tag, Reply}` to a caller's `From`.
pub(crate) fn reply_to<R: Serialize>(node: &Arc<NodeShared>, from: &Term, reply: &R) {
    let mut bytes = Vec::new();
    if crate::dist::with_node(node, || etf::encode_into(reply, &mut bytes)).is_err() {
        return;
    }
    let Ok(reply) = Term::decode(&bytes) else {
        return;
    };
    crate::dist::receive::reply_gen_call(node, from, reply);
}

/// A call from another node found [`MAX_REMOTE_CALLS`] in flight: dropped, and said.
fn calls_dropped() {
    crate::report::dist_fault(
        "calls_dropped",
        &format_args!("{MAX_REMOTE_CALLS} calls from other nodes in flight: one dropped"),
    );
}
