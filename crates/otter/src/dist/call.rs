//! Calls to `gen_server`s of other nodes (`gen_server:call({Name, Node}, Request)`
//! from an otter process), and the replies that come back to an alias.
//!
//! The request goes out as `{'$gen_call', {Caller, [alias | Ref]}, Request}`, the
//! form OTP 24+ uses: the server answers `Alias ! {[alias | Ref], Reply}`, which
//! arrives as an `ALIAS_SEND` to `Ref`, not in the caller's mailbox, so a typed caller
//! needs no message variant for replies, and a reply that comes after the call gave up
//! finds no alias and is dropped (what OTP's aliases are for). The caller monitors the
//! server for the call's duration, as `gen.erl` does, so that the server's exit or the
//! connection's loss ends the call at once.

use std::collections::HashMap;
use std::fmt;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::dist::bad_term::BadTerm;
use crate::dist::connection::{self, Connection};
use crate::dist::control::{Control, Target};
use crate::dist::etf::{self, Atom, ExternalPid, ExternalRef, Term};
use crate::dist::node::{Node, NodeShared};
use crate::exit::ExitReason;
use crate::pid::RawPid;
use crate::process::Context;
use crate::timer::Sleep;

/// A call waiting for its reply.
#[derive(Debug)]
pub(crate) struct Pending {
    peer: Atom,
    /// The connection the request went out on (`Connection::id`), once it has: its end
    /// ends this call, and no other connection's does (a peer that comes back at once
    /// may have a new connection before the old one's teardown reaches its calls).
    conn: u64,
    outcome: Option<Result<Vec<u8>, RemoteCallError>>,
    waker: Option<Waker>,
}

/// The calls of a node waiting for replies, by the alias's reference words.
pub(crate) type Calls = Mutex<HashMap<Vec<u32>, Arc<Mutex<Pending>>>>;

/// An `ALIAS_SEND` arrived over the connection to `peer`: the reply of the call with
/// that alias, if it still waits and went to that peer. `payload` is `{Tag, Reply}`
/// encoded.
pub(crate) fn alias_reply(
    node: &Arc<NodeShared>,
    peer: &Atom,
    alias: &ExternalRef,
    payload: &[u8],
) {
    if alias.node != node.name || alias.creation != node.creation {
        return;
    }
    let p = {
        let mut calls = node.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let ours = calls
            .get(&alias.id)
            .is_some_and(|p| p.lock().unwrap_or_else(PoisonError::into_inner).peer == *peer);
        if !ours {
            return;
        }
        calls.remove(&alias.id)
    };
    if let Some(p) = p {
        complete(&p, Ok(payload.to_vec()));
    }
}

fn complete(p: &Mutex<Pending>, outcome: Result<Vec<u8>, RemoteCallError>) {
    let waker = {
        let mut p = p.lock().unwrap_or_else(PoisonError::into_inner);
        p.outcome.get_or_insert(outcome);
        p.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// The monitor the call set on the server fired (reported over the connection to
/// `peer`): the call ends with its reason. False if `reference` is not a call's.
pub(crate) fn monitor_exit(
    node: &NodeShared,
    peer: &Atom,
    reference: &ExternalRef,
    reason: ExitReason,
) -> bool {
    if reference.node != node.name || reference.creation != node.creation {
        return false;
    }
    let p = {
        let mut calls = node.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let ours = calls
            .get(&reference.id)
            .is_some_and(|p| p.lock().unwrap_or_else(PoisonError::into_inner).peer == *peer);
        if !ours {
            return false;
        }
        calls.remove(&reference.id)
    };
    match p {
        Some(p) => {
            complete(&p, Err(RemoteCallError::Exit(reason)));
            true
        }
        None => false,
    }
}

/// The connection `conn` went down: the calls sent over it end with `Noconnection`.
pub(crate) fn connection_down(node: &NodeShared, conn: u64) {
    let gone: Vec<_> = {
        let mut calls = node.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let keys: Vec<_> = calls
            .iter()
            .filter(|(_, p)| p.lock().unwrap_or_else(PoisonError::into_inner).conn == conn)
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| calls.remove(k)).collect()
    };
    for p in gone {
        complete(&p, Err(RemoteCallError::Exit(ExitReason::Noconnection)));
    }
}

/// Why a call to another node's server failed.
#[derive(Clone, Debug, PartialEq)]
pub enum RemoteCallError {
    /// No reply within the timeout.
    Timeout,
    /// The server exited (or did not exist: `Noproc`; or its node is unreachable:
    /// `Noconnection`) before it replied.
    Exit(ExitReason),
    /// The reply did not decode into the expected type.
    BadReply(BadTerm),
    /// The request could not be encoded.
    Encode(String),
}

impl fmt::Display for RemoteCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteCallError::Timeout => f.write_str("timeout"),
            RemoteCallError::Exit(r) => write!(f, "the server exited: {r}"),
            RemoteCallError::BadReply(b) => write!(f, "bad reply: {b}"),
            RemoteCallError::Encode(e) => write!(f, "cannot encode the request: {e}"),
        }
    }
}

impl std::error::Error for RemoteCallError {}

impl Node {
    /// Calls the `gen_server` registered as `name` on `node` and waits for its reply
    /// (`gen_server:call({Name, Node}, Request, Timeout)`), with OTP's protocol: the
    /// caller monitors the server during the call, the reply comes to an alias. The
    /// reply decodes into `R`. The request is encoded and sent before this returns;
    /// the future waits for the outcome. Given this node's own name it is a local
    /// call to the server exported under `name` (`Noproc` at once if none is), as
    /// `gen_server:call({Name, node()}, Request)` is (`local.rs`).
    pub fn call<M, Req, R>(
        &self,
        cx: &Context<M>,
        name: &str,
        node: &str,
        request: &Req,
        timeout: Duration,
    ) -> impl Future<Output = Result<R, RemoteCallError>> + Send + 'static
    where
        M: Send + 'static,
        Req: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let sleep = cx.sleep(timeout);
        let started = self.start_call(cx.pid().raw, name, node, request);
        async move {
            let (shared, via, pending, alias, me, target) = started?;
            shared
                .wait_call(via, pending, alias, me, target, sleep)
                .await
        }
    }

    #[allow(clippy::type_complexity)]
    fn start_call<Req: Serialize + ?Sized>(
        &self,
        caller: RawPid,
        name: &str,
        node: &str,
        request: &Req,
    ) -> Result<
        (
            Arc<NodeShared>,
            Via,
            Arc<Mutex<Pending>>,
            ExternalRef,
            ExternalPid,
            Target,
        ),
        RemoteCallError,
    > {
        let shared = &self.shared;
        let bad_name = |s: &str| RemoteCallError::Encode(format!("{s:?} is too long for an atom"));
        let peer = Atom::try_new(node).ok_or_else(|| bad_name(node))?;
        let name = Atom::try_new(name).ok_or_else(|| bad_name(name))?;
        let own = peer == shared.name;
        // `{Name, node()}` is a local call (`local.rs`): no connection; the name's
        // holder must exist, as `gen_server:call` exits `noproc` at once otherwise.
        let holder = match own {
            true => Some(
                crate::dist::local::holder(shared, &name)
                    .ok_or(RemoteCallError::Exit(ExitReason::Noproc))?,
            ),
            false => None,
        };
        let alias = shared.make_ref();
        let me = shared.external_pid(caller);
        let tag = Term::ImproperList(
            vec![Term::atom("alias")],
            Box::new(Term::Ref(alias.clone())),
        );
        let pending = Arc::new(Mutex::new(Pending {
            peer: peer.clone(),
            conn: 0,
            outcome: None,
            waker: None,
        }));
        shared
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(alias.id.clone(), pending.clone());
        let target = Target::Name(name.clone());
        let control = Control::RegSend {
            from: me.clone(),
            to: name,
        };
        let message = (
            Atom::new("$gen_call"),
            (Term::Pid(me.clone()), tag),
            request,
        );
        let encoded = crate::dist::with_node(shared, || match holder {
            Some(_) => etf::to_vec(&message),
            None => connection::frame(&control, Some(&message)),
        });
        let encoded = match encoded {
            Ok(f) => f,
            Err(e) => {
                shared
                    .calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&alias.id);
                return Err(RemoteCallError::Encode(e.to_string()));
            }
        };
        if let Some(holder) = holder {
            // The call's monitor of the server, here: its exit ends the call.
            let id = crate::monitor::next_id();
            let (weak, reference) = (Arc::downgrade(shared), alias.clone());
            let watcher = crate::monitor::Watcher {
                id,
                owner: None,
                notify: crate::monitor::Notify::Message(Box::new(move |down| {
                    if let Some(n) = weak.upgrade() {
                        monitor_exit(&n, &n.name, &reference, down.reason);
                    }
                    None
                })),
            };
            if crate::process::bonds::add_watcher(holder, watcher).is_err() {
                monitor_exit(shared, &peer, &alias, ExitReason::Noproc);
            }
            crate::dist::local::deliver(shared, &control, &encoded);
            let via = Via::Local { holder, id };
            return Ok((shared.clone(), via, pending, alias, me, target));
        }
        let conn = connection::get_or_connect(shared, &peer);
        pending.lock().unwrap_or_else(PoisonError::into_inner).conn = conn.id;
        conn.send_control(
            shared,
            &Control::Monitor {
                from: me.clone(),
                to: target.clone(),
                reference: alias.clone(),
            },
        );
        conn.send_frame(encoded);
        // Gone before the call was filed under it (its teardown's sweep may have
        // passed): this call ends here.
        if conn.is_gone() {
            let own = shared
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&alias.id);
            if let Some(p) = own {
                complete(&p, Err(RemoteCallError::Exit(ExitReason::Noconnection)));
            }
        }
        Ok((
            shared.clone(),
            Via::Remote(conn),
            pending,
            alias,
            me,
            target,
        ))
    }
}

/// Where a call went: to another node, or to a name of this one (`local.rs`), with the
/// id of its monitor on the name's holder.
enum Via {
    Remote(Arc<Connection>),
    Local { holder: RawPid, id: u64 },
}

impl NodeShared {
    async fn wait_call<R: DeserializeOwned>(
        self: Arc<Self>,
        via: Via,
        pending: Arc<Mutex<Pending>>,
        alias: ExternalRef,
        me: ExternalPid,
        target: Target,
        mut sleep: Sleep,
    ) -> Result<R, RemoteCallError> {
        // Whether the call ends here or its future is dropped (the caller killed), its
        // entry and its monitor on the server go: `End` does it on drop.
        struct End {
            node: Arc<NodeShared>,
            via: Via,
            alias: ExternalRef,
            me: ExternalPid,
            target: Target,
            monitor_fired: bool,
        }
        impl Drop for End {
            fn drop(&mut self) {
                self.node
                    .calls
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&self.alias.id);
                if self.monitor_fired {
                    return;
                }
                match &self.via {
                    Via::Remote(conn) => conn.send_control(
                        &self.node,
                        &Control::Demonitor {
                            from: self.me.clone(),
                            to: self.target.clone(),
                            reference: self.alias.clone(),
                        },
                    ),
                    Via::Local { holder, id } => {
                        crate::process::bonds::remove_watcher(*holder, *id);
                    }
                }
            }
        }
        let mut end = End {
            node: self.clone(),
            via,
            alias,
            me,
            target,
            monitor_fired: false,
        };
        let shared = &self;
        let outcome = poll_fn(|t| {
            {
                let mut p = pending.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(o) = p.outcome.take() {
                    return Poll::Ready(o);
                }
                p.waker = Some(t.waker().clone());
            }
            match std::pin::Pin::new(&mut sleep).poll(t) {
                Poll::Ready(()) => Poll::Ready(Err(RemoteCallError::Timeout)),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        end.monitor_fired = matches!(&outcome, Err(RemoteCallError::Exit(_)));
        drop(end);
        let payload = outcome?;
        // `{Tag, Reply}`: the reply is the second element.
        let decoded: Result<(Term, R), _> =
            crate::dist::with_node(shared, || etf::from_slice(&payload));
        match decoded {
            Ok((_, r)) => Ok(r),
            Err(e) => {
                let term = match Term::decode(&payload) {
                    Ok(Term::Tuple(mut t)) if t.len() == 2 => t.pop().unwrap_or(Term::List(vec![])),
                    Ok(t) => t,
                    Err(_) => Term::List(vec![]),
                };
                Err(RemoteCallError::BadReply(BadTerm {
                    term,
                    error: e.to_string(),
                }))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! What `erpc/client/tests.rs`'s test of a connection's end needs of a call.

    use super::*;

    /// A call filed as sent over connection `conn`, under the alias words `id`.
    pub(crate) fn pending_on(node: &NodeShared, conn: u64, id: Vec<u32>) -> Arc<Mutex<Pending>> {
        let p = Arc::new(Mutex::new(Pending {
            peer: Atom::new("peer@host"),
            conn,
            outcome: None,
            waker: None,
        }));
        node.calls.lock().unwrap().insert(id, p.clone());
        p
    }

    /// Whether the call ended with `Noconnection`.
    pub(crate) fn ended_with_noconnection(p: &Mutex<Pending>) -> bool {
        matches!(
            p.lock().unwrap().outcome,
            Some(Err(RemoteCallError::Exit(ExitReason::Noconnection)))
        )
    }
}
