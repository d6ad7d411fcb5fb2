//! otter calls Erlang (the module docs of `dist/erpc.rs`, "otter calls Erlang"): the
//! request, the pending call, and the `SPAWN_REPLY` and monitor exit that answer it.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ErpcError, as_list};
use crate::dist::bad_term::BadTerm;
use crate::dist::connection::{self, Connection};
use crate::dist::control::{Control, Target};
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};
use crate::dist::node::{Node, NodeShared};
use crate::pid::RawPid;
use crate::process::Context;

impl Node {
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
        let started = self
            .erpc_request(Some(cx.pid().raw), node, module, function, args, true)
            .map(|r| r.send_call(&self.shared));
        let shared = self.shared.clone();
        async move {
            // The pending call is held from its start: its outcome may be in (and its
            // entry gone from the table) before this future is first polled.
            let (conn, req_id, me, pending) = started?;
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
            let mut end = End {
                node: shared.clone(),
                conn,
                req_id,
                me,
                fired: false,
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
        let r = self.erpc_request(None, node, module, function, args, false)?;
        connection::get_or_connect(&self.shared, &r.peer).send_frame(r.frame);
        Ok(())
    }

    /// Encodes the `SPAWN_REQUEST` of a call (`call`: `execute_call/4` with a
    /// monitor, else `execute_cast/3`), from `caller` (the node's own pid if none).
    fn erpc_request<A: Serialize + ?Sized>(
        &self,
        caller: Option<RawPid>,
        node: &str,
        module: &str,
        function: &str,
        args: &A,
        call: bool,
    ) -> Result<Request, ErpcError> {
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
        Ok(Request {
            peer,
            req_id,
            me,
            frame,
        })
    }
}

/// A `SPAWN_REQUEST` encoded, not sent: to whom, its reference, the caller's pid as the
/// peer knows it, and the frame.
struct Request {
    peer: Atom,
    req_id: ExternalRef,
    me: ExternalPid,
    frame: Vec<u8>,
}

impl Request {
    /// Files the call's pending entry under its connection, then sends the request: the
    /// connection, the reference, the caller and the entry its outcome goes to.
    fn send_call(self, shared: &Arc<NodeShared>) -> Started {
        let conn = connection::get_or_connect(shared, &self.peer);
        let pending = Arc::new(Mutex::new(Pending {
            peer: self.peer.clone(),
            conn: conn.id,
            pid: None,
            outcome: None,
            waker: None,
        }));
        let table = || {
            shared
                .erpc
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        table().insert(self.req_id.id.clone(), pending.clone());
        conn.send_frame(self.frame);
        // Gone before the call was filed under it (its teardown's sweep may have
        // passed): this call ends here.
        if conn.is_gone() {
            table().remove(&self.req_id.id);
            complete(&pending, Err(ErpcError::Noconnection));
        }
        (conn, self.req_id, self.me, pending)
    }
}

/// A call sent: its connection, its reference, the caller's pid as the peer knows it,
/// and the pending entry its outcome goes to.
type Started = (
    Arc<Connection>,
    ExternalRef,
    ExternalPid,
    Arc<Mutex<Pending>>,
);

/// An outgoing call waiting for its outcome.
pub(super) struct Pending {
    peer: Atom,
    /// The connection the request went out on (`Connection::id`): its end ends this
    /// call, and no other connection's does (as `call.rs`'s).
    conn: u64,
    /// The spawned process, once the `SPAWN_REPLY` said it.
    pid: Option<ExternalPid>,
    outcome: Option<Result<Term, ErpcError>>,
    waker: Option<Waker>,
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

/// The connection `conn` went down: the calls sent over it end with `Noconnection`.
pub(crate) fn connection_down(node: &NodeShared, conn: u64) {
    let gone: Vec<_> = {
        let mut pending = node
            .erpc
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<_> = pending
            .iter()
            .filter(|(_, p)| p.lock().unwrap_or_else(PoisonError::into_inner).conn == conn)
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| pending.remove(k)).collect()
    };
    for p in gone {
        complete(&p, Err(ErpcError::Noconnection));
    }
}

#[cfg(test)]
mod tests;
