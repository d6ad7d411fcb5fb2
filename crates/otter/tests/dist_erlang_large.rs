//! Large binaries between otter and a real Erlang node, both ways: a 1 MiB and a
//! 16 MiB binary arrive whole and unchanged (several frames in one direction reuse the
//! reader's grown buffer; speed is the `dist` benchmark's business, not a test's).

#[path = "support/erlang.rs"]
mod erlang;
#[path = "support/otter_node.rs"]
mod otter_node;
#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::dist::BadTerm;
use otter::dist::shapes::Binary as Bin;
use otter::{Context, Pid, Runtime};
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(60);
const SIZES: [usize; 2] = [1 << 20, 16 << 20];

/// `{echo, Bin}`.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    #[serde(rename = "echo")]
    Echo(Bin),
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<BadTerm> for Reply {
    fn from(b: BadTerm) -> Reply {
        Reply::Bad(b)
    }
}

/// `{From, Bin}`.
#[derive(Debug, Deserialize)]
#[serde(from = "(Pid<Reply>, Bin)")]
enum Request {
    Echo(Pid<Reply>, Bin),
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<(Pid<Reply>, Bin)> for Request {
    fn from((from, b): (Pid<Reply>, Bin)) -> Request {
        Request::Echo(from, b)
    }
}

impl From<BadTerm> for Request {
    fn from(b: BadTerm) -> Request {
        Request::Bad(b)
    }
}

/// `size` bytes of a fixed pattern that no byte shift maps onto itself.
fn pattern(size: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// An Erlang echo process registered as `echo`: `{From, Msg}` -> `From ! {echo, Msg}`.
const ECHO: &str = "register(echo, spawn(fun Loop() -> receive {From, Msg} -> From ! {echo, Msg}, Loop() end end))";

rt_test!(
    large_binaries_from_otter_come_back_from_erlang_unchanged,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let e = erlang::Node::builder("erl").setup(ECHO).start();
        let (n, peer) = (node.clone(), e.name().to_string());
        let r = rt.block_on(move |mut cx: Context<Reply>| async move {
            let mut back = Vec::new();
            for size in SIZES {
                let bin = Bin(pattern(size));
                n.send_named(cx.pid(), "echo", &peer, &(cx.pid(), &bin))
                    .unwrap();
                back.push((bin, cx.recv_timeout(WAIT).await));
            }
            back
        });
        for (sent, got) in r.unwrap() {
            match got {
                Some(Reply::Echo(b)) => assert!(b == sent, "{} bytes changed", sent.0.len()),
                other => panic!("{} bytes: {other:?}", sent.0.len()),
            }
        }
    }
);

rt_test!(
    large_binaries_from_erlang_come_back_from_otter_unchanged,
    |rt: &Runtime| {
        let node = otter_node::start(rt);
        let echo = rt.handle().spawn(|mut cx: Context<Request>| async move {
            loop {
                if let Request::Echo(from, b) = cx.recv().await {
                    from.send(Reply::Echo(b));
                }
            }
        });
        node.register("oecho", echo);
        let mut e = erlang::Node::builder("erl").start();
        for size in SIZES {
            let same = e.eval_ok(&format!(
                "B = rand:bytes({size}), {{oecho, '{}'}} ! {{self(), B}}, \
                 receive {{echo, B2}} -> B2 =:= B after 60000 -> timeout end",
                node.name()
            ));
            assert_eq!(same, "true", "{size} bytes");
        }
    }
);
