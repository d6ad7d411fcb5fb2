//! `dist`: messages between nodes over the Erlang distribution protocol (WORKLOADS.md
//! "dist").
//!
//! Two programs, so that every client meets every echo node (otter's and Erlang's):
//!
//! * `dist-pingpong peer=NODE r=R size=S [cookie=C]`: the measurement. It starts an otter
//!   node `otterbench_<os pid>@<short host>` (hidden; registered in epmd, which it starts if
//!   none answers), connects to `peer`, and one process runs round trips to the process
//!   registered as `echo` on `peer`: it sends `{self(), Bin}` by name (`{echo, Peer} ! ..`,
//!   every round trip), `Bin` an S-byte binary, and waits for `{echo, Bin}`. 1,000 round
//!   trips of warm-up ([`WARMUP`]), untimed, then R timed. The Erlang twin is
//!   `erlang-reference/bench dist-pingpong` (`bench_src/dist_pingpong.erl`), the same protocol.
//!   ops = R; `ns_per_op` is a round trip. Extra fields: `peer` (the node), `node` (this one).
//!   Check: every reply arrived (each within [`REPLY_WAIT`]), each one equal to the binary
//!   sent (so its size is right). A peer that cannot be reached is exit 3 with one line on
//!   stderr.
//! * `dist-echo name=NAME [cookie=C]`: an otter node `NAME` (`NAME@<short host>` if NAME has
//!   no `@`) whose process registered as `echo` answers every `{From, Msg}` with
//!   `From ! {echo, Msg}` (`Msg` a binary; `From` a pid, replied to with `Pid::send`, over
//!   the network). It also answers `erpc:call(Node, erlang, iolist_to_binary, [Bin])`
//!   with `Bin`, as an Erlang node does (a function registered with
//!   `Node::register_rpc`), so that an `erpc` client meets either echo node the same
//!   way. Once registered it prints one line,
//!   `{"bench":"dist-echo","impl":"otter","node":"NAME@host","ready":true,"threads":N,..}`,
//!   then reads stdin until it closes, and exits 0. A term that is not `{Pid, Binary}` is
//!   said on stderr (once) and dropped.
//!
//! The default cookie is [`COOKIE`], the suite's.

use std::io::Read;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use otter::dist::{BadTerm, Node};
use otter::{Context, Pid, Runtime};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{Footprint, Outcome, RunError, Workload, count};
use crate::args::{ParamSpec, Params};

/// The cookie when none is given (the suite's).
pub(crate) const COOKIE: &str = "otterbench";
/// Untimed round trips before the measurement.
pub(crate) const WARMUP: u64 = 1000;
/// How long a reply may take before the run fails its check.
const REPLY_WAIT: Duration = Duration::from_secs(10);
/// The largest binary: 64 MiB less 1 KiB, so that the request's frame (the binary, a
/// pid, a tuple and the control message) stays within the 64 MiB otter's nodes take.
const MAX_SIZE: u64 = (64 << 20) - 1024;

/// The client.
pub(crate) const PINGPONG: Workload = Workload {
    name: "dist-pingpong",
    summary: "r round trips of a size-byte binary to {echo, peer} over Erlang distribution (after 1000 untimed)",
    params: &[
        ParamSpec::name("peer", ""),
        ParamSpec::int("r", 10_000),
        ParamSpec::int_in("size", 1, MAX_SIZE, 64),
        ParamSpec::name("cookie", COOKIE),
    ],
    validate: validate_pingpong,
    footprint: pingpong_footprint,
    run,
};

/// The echo node.
pub(crate) const ECHO: Workload = Workload {
    name: "dist-echo",
    summary: "an otter node NAME whose registered echo answers {From, Msg} with From ! {echo, Msg}, until stdin closes",
    params: &[
        ParamSpec::name("name", ""),
        ParamSpec::name("cookie", COOKIE),
    ],
    validate: validate_echo,
    footprint: echo_footprint,
    run: not_one_measurement,
};

/// The program that runs `bench`, if it is the echo node.
pub(crate) fn program(bench: &str) -> Option<fn(&Params, usize) -> ExitCode> {
    (bench == "dist-echo").then_some(echo_main as fn(&Params, usize) -> ExitCode)
}

/// `peer` must be given, as `alive@host`.
fn validate_pingpong(p: &Params) -> Result<(), String> {
    let peer = p.name("peer");
    match peer.split_once('@') {
        Some((a, h)) if !a.is_empty() && !h.is_empty() && !h.contains('@') => Ok(()),
        _ if peer.is_empty() => Err("peer= is required: the echo node, alive@host".into()),
        _ => Err(format!("peer={peer:?} is not a node name alive@host")),
    }
}

/// `name` must be given; `alive` or `alive@host`.
fn validate_echo(p: &Params) -> Result<(), String> {
    let name = p.name("name");
    let ok = match name.split_once('@') {
        None => !name.is_empty(),
        Some((a, h)) => !a.is_empty() && !h.is_empty() && !h.contains('@'),
    };
    if ok {
        Ok(())
    } else if name.is_empty() {
        Err("name= is required: the node's name, alive or alive@host".into())
    } else {
        Err(format!(
            "name={name:?} is not a node name (alive or alive@host)"
        ))
    }
}

/// r round trips, one in flight; the binary is held four times at most (sent, encoded,
/// received, decoded).
fn pingpong_footprint(p: &Params) -> Footprint {
    Footprint::new(("r", count(p.int("r"))), ("1", 1)).charge(
        "4*size",
        4 * count(p.int("size")),
        "bytes of binary",
        1,
    )
}

/// The echo process; requests are answered one at a time.
fn echo_footprint(_: &Params) -> Footprint {
    Footprint::new(("1", 1), ("1", 1))
}

/// `main.rs` runs the echo node through [`program`], never through `run`.
fn not_one_measurement(_: &Runtime, _: &Params) -> Result<Outcome, RunError> {
    Err(RunError::Refused(
        "runs as its own program (workloads::dist::program)".into(),
    ))
}

/// The host part of `erl -sname` node names: the host name up to its first dot.
pub(crate) fn short_host() -> String {
    let full = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| {
            std::process::Command::new("hostname")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .unwrap_or_else(|| "localhost".into());
    let full = full.trim();
    full.split('.').next().unwrap_or(full).to_owned()
}

/// A binary: written with `serialize_bytes` (an Erlang binary), read from one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bin(Vec<u8>);

impl Serialize for Bin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bin, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bin;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a binary")
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Bin, E> {
                Ok(Bin(b.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, b: Vec<u8>) -> Result<Bin, E> {
                Ok(Bin(b))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

/// The reply, `{echo, Bin}`; what the client's process receives.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Reply {
    #[serde(rename = "echo")]
    Echo(Bin),
    /// Anything else.
    #[serde(skip)]
    Bad(BadTerm),
}

impl From<BadTerm> for Reply {
    fn from(b: BadTerm) -> Reply {
        Reply::Bad(b)
    }
}

/// What the echo process receives: `{From, Msg}`, or a term that is not one.
#[derive(Debug, Deserialize)]
#[serde(from = "(Pid<Reply>, Bin)")]
enum Request {
    Echo(Pid<Reply>, Bin),
    Bad(BadTerm),
}

impl From<(Pid<Reply>, Bin)> for Request {
    fn from((from, msg): (Pid<Reply>, Bin)) -> Request {
        Request::Echo(from, msg)
    }
}

impl From<BadTerm> for Request {
    fn from(b: BadTerm) -> Request {
        Request::Bad(b)
    }
}

/// `size` bytes of a fixed pseudo-random pattern (xorshift64*).
fn pattern(size: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..size)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// The measurement (`dist-pingpong`).
fn run(rt: &Runtime, p: &Params) -> Result<Outcome, RunError> {
    let (peer, cookie) = (p.name("peer").to_string(), p.name("cookie"));
    let (r, size) = (p.int("r"), p.int("size") as usize);
    let name = format!("otterbench_{}@{}", std::process::id(), short_host());
    let node = Node::builder(&name)
        .cookie(cookie)
        .start(&rt.handle())
        .map_err(|e| RunError::Refused(format!("cannot start the node {name}: {e}")))?;
    let n = node.clone();
    let outcome = rt.block_on(move |mut cx: Context<Reply>| async move {
        if let Err(e) = n.connect(&peer).await {
            return Err(format!("cannot connect to {peer}: {e}"));
        }
        let me = cx.pid();
        let bin = Bin(pattern(size));
        let request = (me, &bin);
        // One round trip: `{echo, Peer} ! {self(), Bin}`, then `{echo, Bin}` back.
        let mut failed: Option<String> = None;
        let mut done = 0u64;
        let mut t0 = Instant::now();
        for i in 0..WARMUP + r {
            if i == WARMUP {
                t0 = Instant::now();
            }
            if let Err(e) = n.send_named(me, "echo", &peer, &request) {
                failed = Some(format!("cannot encode the request: {e}"));
                break;
            }
            match cx.recv_timeout(REPLY_WAIT).await {
                Some(Reply::Echo(got)) if got == bin => done += 1,
                Some(Reply::Echo(got)) => {
                    failed = Some(format!(
                        "round trip {}: the reply's binary ({} bytes) differs from the {size} sent",
                        i + 1,
                        got.0.len()
                    ));
                    break;
                }
                Some(Reply::Bad(b)) => {
                    failed = Some(format!(
                        "round trip {}: not {{echo, Bin}}: {}",
                        i + 1,
                        b.term
                    ));
                    break;
                }
                None => {
                    failed = Some(format!(
                        "round trip {}: no reply within {} s",
                        i + 1,
                        REPLY_WAIT.as_secs()
                    ));
                    break;
                }
            }
        }
        let elapsed = t0.elapsed();
        let check = match failed {
            Some(why) => Err(why),
            None => super::expect("replies", done, WARMUP + r),
        };
        let mut out = Outcome::new(elapsed, r, check);
        out.extra.push(("peer", peer.as_str().into()));
        out.extra.push(("node", n.name().into()));
        out.extra.push(("warmup", WARMUP.into()));
        Ok(out)
    })?;
    node.stop();
    outcome.map_err(RunError::Refused)
}

/// The echo node (`dist-echo`): serves until stdin closes.
fn echo_main(p: &Params, threads: usize) -> ExitCode {
    let name = match p.name("name") {
        n if n.contains('@') => n.to_string(),
        n => format!("{n}@{}", short_host()),
    };
    let rt = match Runtime::builder()
        .threads(threads)
        .thread_name("dist-echo")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("otter-bench: dist-echo: cannot start the runtime: {e}");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
    };
    let node = match Node::builder(&name)
        .cookie(p.name("cookie"))
        .start(&rt.handle())
    {
        Ok(n) => n,
        Err(e) => {
            eprintln!("otter-bench: dist-echo: cannot start the node {name}: {e}");
            return ExitCode::from(crate::EXIT_INTERNAL);
        }
    };
    let echo = rt.handle().spawn(|mut cx: Context<Request>| async move {
        let mut warned = false;
        loop {
            match cx.recv().await {
                Request::Echo(from, msg) => from.send(Reply::Echo(msg)),
                Request::Bad(b) => {
                    if !warned {
                        eprintln!(
                            "otter-bench: dist-echo: dropped (not {{Pid, Binary}}): {}",
                            b.term
                        );
                        warned = true;
                    }
                }
            }
        }
    });
    node.register("echo", echo);
    // `erpc:call(Node, erlang, iolist_to_binary, [Bin])`: `Bin`, as on an Erlang node.
    node.register_rpc("erlang", "iolist_to_binary", |(bin,): (Bin,)| Ok(bin));
    let mut m = Map::new();
    m.insert("bench".into(), "dist-echo".into());
    m.insert("impl".into(), "otter".into());
    m.insert("node".into(), node.name().into());
    m.insert("ready".into(), true.into());
    m.insert("threads".into(), threads.into());
    let mut params = p.to_json();
    params["name"] = node.name().into();
    m.insert("params".into(), params);
    crate::json_line::add_build(&mut m);
    println!("{}", Value::Object(m));
    // Until stdin is closed (or fails): whatever arrives on it is ignored.
    let mut sink = [0u8; 256];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    node.stop();
    drop(node);
    drop(rt);
    ExitCode::SUCCESS
}
