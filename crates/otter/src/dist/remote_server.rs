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
//! * anything else, or a request that does not decode: [`RemoteServer::bad_term`]
//!   decides what the server sees (an `Info`, or nothing).
//!
//! Requests run through a process each so that the connection's reader never waits
//! for a server: a slow server delays its own callers, not the other traffic from that
//! node.

use std::any::TypeId;
use std::future::Future;
use std::sync::{Arc, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::etf::{self, Atom, Term};
use crate::dist::node::{Exported, Node, NodeShared};
use crate::pid::{Pid, RawPid};
use crate::process::Context;
use crate::server::{CallError, Server, ServerMsg, ServerRef};

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
    fn remote_call(
        server: ServerRef<Self>,
        request: Self::RemoteCall,
    ) -> impl Future<Output = Result<Self::RemoteReply, CallError>> + Send;

    /// The cast a remote cast becomes, if any.
    fn remote_cast(request: Self::RemoteCast) -> Option<Self::Cast>;

    /// What the server sees of a message it cannot take: a request that does not
    /// decode, or a plain message sent to its name (an `Info`, or nothing).
    fn bad_term(term: BadTerm) -> Option<Self::Info>;
}

impl Node {
    /// Registers `server` under `name` for other nodes: `gen_server:call({Name, Node},
    /// Request)` and `gen_server:cast` reach it (see [`RemoteServer`]), and so do
    /// monitors by name.
    pub fn register_server<S: RemoteServer>(&self, name: &str, server: ServerRef<S>) {
        let e = Exported {
            pid: server.pid().raw,
            type_id: TypeId::of::<ServerMsg<S>>(),
            deliver: deliver::<S>,
        };
        self.shared
            .names
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(Atom::new(name), e);
    }
}

fn deliver<S: RemoteServer>(node: &Arc<NodeShared>, to: RawPid, payload: &[u8]) {
    let server = ServerRef::<S>::from_pid(Pid::from_raw(to));
    let Ok(term) = crate::dist::with_node(node, || Term::decode(payload)) else {
        return;
    };
    let bad = |term: Term, error: String| {
        if let Some(info) = S::bad_term(BadTerm { term, error }) {
            server.pid().send(ServerMsg::Info(info));
        }
    };
    let elements = match &term {
        Term::Tuple(t) => &t[..],
        _ => return bad(term.clone(), "not a gen_server request".into()),
    };
    match elements {
        [tag, from, request] if *tag == Term::atom("$gen_call") => {
            let decoded: Result<S::RemoteCall, _> = decode_part(node, request);
            let request = match decoded {
                Ok(r) => r,
                Err(e) => return bad(request.clone(), e),
            };
            let (node, from) = (node.clone(), from.clone());
            node.handle.clone().spawn(move |_: Context<()>| async move {
                if let Ok(reply) = S::remote_call(server, request).await {
                    reply_to(&node, &from, &reply);
                }
            });
        }
        [tag, request] if *tag == Term::atom("$gen_cast") => {
            match decode_part::<S::RemoteCast>(node, request) {
                Ok(c) => {
                    if let Some(c) = S::remote_cast(c) {
                        server.cast(c);
                    }
                }
                Err(e) => bad(request.clone(), e),
            }
        }
        _ => bad(term.clone(), "not a gen_server request".into()),
    }
}

/// Decodes one element of a request (re-encoded: requests are not the hot path).
fn decode_part<T: DeserializeOwned>(node: &Arc<NodeShared>, t: &Term) -> Result<T, String> {
    let mut bytes = Vec::new();
    t.encode(&mut bytes);
    crate::dist::with_node(node, || etf::from_slice(&bytes)).map_err(|e| e.to_string())
}

/// Sends `{Tag, Reply}` to a caller's `From`.
fn reply_to<R: Serialize>(node: &Arc<NodeShared>, from: &Term, reply: &R) {
    let Term::Tuple(f) = from else { return };
    let [Term::Pid(pid), _] = &f[..] else { return };
    let Some(conn) = crate::dist::connection::get(node, &pid.node) else {
        return;
    };
    let mut bytes = Vec::new();
    if crate::dist::with_node(node, || etf::encode_into(reply, &mut bytes)).is_err() {
        return;
    }
    let Ok(reply) = Term::decode(&bytes) else {
        return;
    };
    crate::dist::receive::reply_gen_call(node, &conn, from, reply);
}
