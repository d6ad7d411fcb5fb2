//! An otter node for the tests that talk to real Erlang nodes: a unique name on the
//! host `erl -sname` uses, the cookie `secret`, started on the test's runtime; and how
//! Erlang expressions name the processes registered on it.
//!
//! Used as `#[path = "support/otter_node.rs"] mod otter_node;` from `tests/`, next to
//! `#[path = "support/erlang.rs"] mod erlang;` at the test crate's root (its names
//! and epmd come from there). It is a file of its own because `support/erlang.rs` is
//! also compiled into the crate's unit tests, where `otter` is not a name.

#![allow(dead_code, unreachable_pub)]

use std::sync::mpsc::{Receiver, channel};

use otter::dist::{BadTerm, Node, NodeBuilder};
use otter::{Context, Pid, Runtime};
use serde::de::DeserializeOwned;

use crate::erlang;

/// Starts an otter node named `otter_<pid>_<n>@<short host>` with the cookie `secret`,
/// after making sure epmd runs.
pub fn start(rt: &Runtime) -> Node {
    start_with(rt, |b| b)
}

/// [`start`], with `configure` applied to the builder (a tick time, a buffer limit,
/// another cookie) before the node starts.
pub fn start_with(rt: &Runtime, configure: impl FnOnce(NodeBuilder) -> NodeBuilder) -> Node {
    erlang::ensure_epmd();
    let name = format!("{}@{}", erlang::unique_name("otter"), erlang::short_host());
    configure(Node::builder(name).cookie("secret"))
        .start(&rt.handle())
        .expect("the otter node starts")
}

/// `{Name, 'otter@host'}`: the process registered as `name` on `node`, as an Erlang
/// expression writes it.
pub fn at(name: &str, node: &Node) -> String {
    format!("{{{name}, '{}'}}", node.name())
}

/// A process registered as `inbox` on `node` for other nodes, that forwards every
/// message it receives to the returned channel.
pub fn inbox<M>(rt: &Runtime, node: &Node) -> (Pid<M>, Receiver<M>)
where
    M: DeserializeOwned + From<BadTerm> + Send + 'static,
{
    let (tx, rx) = channel();
    let pid = rt.handle().spawn(move |mut cx: Context<M>| async move {
        loop {
            let m = cx.recv().await;
            if tx.send(m).is_err() {
                return;
            }
        }
    });
    node.register("inbox", pid);
    (pid, rx)
}
