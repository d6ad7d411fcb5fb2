//! Two servers that call each other: a [`Peer`], pinged, pings its peer and answers
//! once that call returns. Two peers pinged in a cycle wait on each other until a call's
//! timeout ends it (none with [`PING_TIMEOUT`] = `None`): the deadlock that
//! introspection's `Handle::deadlocks` and the dashboard find.
//!
//! Used as `#[path = "support/call_cycle.rs"] mod call_cycle;` from `tests/`.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::Duration;

use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, ExitReason, ProcessId};

/// A server that, pinged, pings its peer with the timeout it was started with.
pub struct Peer {
    peer: Option<ServerRef<Peer>>,
    timeout: Option<Duration>,
}

/// What a [`Peer`] is asked.
pub enum PeerCall {
    /// Its peer, set once.
    SetPeer(ServerRef<Peer>, ReplyTo<()>),
    /// Ping the peer, then answer.
    Ping(ReplyTo<()>),
}

impl Server for Peer {
    /// The timeout of its own pings (`None`: wait for ever).
    type Args = Option<Duration>;
    type Call = PeerCall;
    type Cast = ();
    type Info = ();
    async fn init(
        timeout: Option<Duration>,
        _: &mut ServerContext<Self>,
    ) -> Result<Self, ExitReason> {
        Ok(Peer {
            peer: None,
            timeout,
        })
    }
    async fn handle_call(&mut self, call: PeerCall, _: &mut ServerContext<Self>) -> Flow {
        match call {
            PeerCall::SetPeer(p, f) => {
                self.peer = Some(p);
                f.reply(());
            }
            PeerCall::Ping(f) => {
                let peer = self.peer.expect("a peer");
                let _ = peer.call_timeout(PeerCall::Ping, self.timeout).await;
                f.reply(());
            }
        }
        Flow::Continue
    }
}

/// Starts two peers of each other, whose pings wait `timeout`: `(a, b)`. Both are
/// spawned by this call; the future (which holds no `Context`) introduces them.
pub fn pair<M: Send + 'static>(
    cx: &Context<M>,
    timeout: Option<Duration>,
) -> impl Future<Output = (ServerRef<Peer>, ServerRef<Peer>)> + Send + use<M> {
    let (a, b) = (Peer::start(cx, timeout), Peer::start(cx, timeout));
    async move {
        let (a, b) = (a.await.unwrap(), b.await.unwrap());
        a.call(|f| PeerCall::SetPeer(b, f)).await.unwrap();
        b.call(|f| PeerCall::SetPeer(a, f)).await.unwrap();
        (a, b)
    }
}

/// The pair's pids, sorted: the cycle `Handle::deadlocks` gives.
pub fn cycle(a: ServerRef<Peer>, b: ServerRef<Peer>) -> Vec<ProcessId> {
    let mut c = vec![a.pid().id(), b.pid().id()];
    c.sort();
    c
}
