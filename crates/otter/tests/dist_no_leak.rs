//! No descriptor leaks from distribution: a node's listener, its epmd registration and
//! its connections (both directions, to a real Erlang node) are all closed once the node
//! has stopped and its runtime has shut down. One test in its own file: it counts the
//! descriptors of the whole test process.

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;

use std::time::Duration;

use otter::{Context, Runtime};

#[test]
fn no_descriptor_leaks_after_a_node_stops() {
    erlang::ensure_epmd();
    let fds = || std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let before = fds();
    {
        // The Erlang node pings otter (a connection otter accepts); otter calls a
        // second Erlang node (a connection otter makes).
        let mut e1 = erlang::Node::builder("erl").start();
        let e2 = erlang::Node::builder("erl").start();
        let rt = Runtime::new();
        let node = otter_node::start(&rt);
        assert_eq!(
            e1.eval_ok(&format!("net_adm:ping('{}')", node.name())),
            "pong"
        );
        let (n, peer) = (node.clone(), e2.name().to_string());
        let r = rt.block_on(move |cx: Context<()>| async move {
            let r: Result<(otter::dist::etf::Term, String), _> = n
                .call(
                    &cx,
                    "file_server_2",
                    &peer,
                    &(otter::dist::etf::Atom::new("get_cwd"),),
                    Duration::from_secs(20),
                )
                .await;
            r.is_ok()
        });
        assert_eq!(r, Ok(true));
        assert_eq!(node.nodes().len(), 2);
        node.stop();
        drop(node);
        drop(rt);
        drop((e1, e2));
    }
    // The Erlang nodes' output is read by threads of `support/erlang.rs`, which close
    // their pipes once they see the killed node's EOF: a bounded wait for them, a
    // failure guard, not a synchronisation of otter's.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while fds() != before && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(fds(), before, "descriptors before and after");
}
