//! An otter node to talk to from an `erl` shell.
//!
//! ```text
//! cargo run --release --example dist_node -- --name otter@localhost --cookie secret
//! ```
//!
//! It registers two processes and prints `{"node":"otter@localhost","ready":true}` once
//! it is registered in epmd; it stops when its stdin closes.
//!
//! * `echo` answers every `{From, Msg}` with `From ! {echo, Msg}`;
//! * `kv`, an `otter::server`, answers `gen_server:call({kv, Node}, {put, Key, Value})`
//!   with `ok` and `{get, Key}` with `{ok, Value}` or `not_found`; keys and values
//!   are any terms.
//!
//! From another terminal:
//!
//! ```text
//! $ erl -sname shell -setcookie secret
//! 1> net_adm:ping('otter@localhost').
//! pong
//! 2> {echo, 'otter@localhost'} ! {self(), hello}, flush().
//! Shell got {echo,hello}
//! 3> gen_server:call({kv, 'otter@localhost'}, {put, {user, 1}, <<"ada">>}).
//! ok
//! 4> gen_server:call({kv, 'otter@localhost'}, {get, {user, 1}}).
//! {ok,<<"ada">>}
//! 5> gen_server:call({kv, 'otter@localhost'}, {get, nobody}).
//! not_found
//! ```

use std::collections::HashMap;
use std::io::Read;

use otter::dist::etf::Term;
use otter::dist::{BadTerm, Node, RemoteServer};
use otter::server::{CallError, Flow, Info, ReplyTo, Server, ServerContext, ServerRef};
use otter::{Context, ExitReason, Pid, Runtime};
use serde::{Deserialize, Serialize};

/// What `echo` takes: `{From, Msg}`, or anything else (reported and dropped).
enum Echo {
    Request(Pid<(Tag, Term)>, Term),
    Bad(BadTerm),
}

/// `{From, Msg}` is a 2-tuple: it decodes as a Rust pair.
impl<'de> Deserialize<'de> for Echo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Echo, D::Error> {
        <(Pid<(Tag, Term)>, Term)>::deserialize(d).map(|(from, msg)| Echo::Request(from, msg))
    }
}

impl From<BadTerm> for Echo {
    fn from(b: BadTerm) -> Echo {
        Echo::Bad(b)
    }
}

/// The atom `echo` of the reply `{echo, Msg}`.
#[derive(Serialize)]
#[serde(rename = "echo")]
struct Tag;

async fn echo(mut cx: Context<Echo>) {
    loop {
        match cx.recv().await {
            Echo::Request(from, msg) => from.send((Tag, msg)),
            Echo::Bad(b) => eprintln!("echo: {b}"),
        }
    }
}

/// The key-value server. Terms are compared by their printed form: equal terms print
/// alike (maps print sorted).
struct Kv(HashMap<String, Term>);

enum Call {
    Put(Term, Term, ReplyTo<()>),
    Get(Term, ReplyTo<Option<Term>>),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Request {
    Put(Term, Term),
    Get(Term),
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    /// `ok`
    Ok,
    /// `{ok, Value}`
    #[serde(rename = "ok")]
    Found(Term),
    /// `not_found`
    NotFound,
}

impl Server for Kv {
    type Args = ();
    type Call = Call;
    type Cast = ();
    type Info = BadTerm;

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Kv(HashMap::new()))
    }

    async fn handle_call(&mut self, call: Call, _: &mut ServerContext<Self>) -> Flow {
        match call {
            Call::Put(k, v, from) => {
                self.0.insert(k.to_string(), v);
                from.reply(());
            }
            Call::Get(k, from) => from.reply(self.0.get(&k.to_string()).cloned()),
        }
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<BadTerm>, _: &mut ServerContext<Self>) -> Flow {
        if let Info::Message(bad) = info {
            eprintln!("kv: {bad}");
        }
        Flow::Continue
    }
}

impl RemoteServer for Kv {
    type RemoteCall = Request;
    type RemoteReply = Reply;
    type RemoteCast = ();

    async fn remote_call(kv: ServerRef<Self>, request: Request) -> Result<Reply, CallError> {
        Ok(match request {
            Request::Put(k, v) => {
                kv.call(|from| Call::Put(k, v, from)).await?;
                Reply::Ok
            }
            Request::Get(k) => match kv.call(|from| Call::Get(k, from)).await? {
                Some(v) => Reply::Found(v),
                None => Reply::NotFound,
            },
        })
    }

    fn remote_cast(_: ()) -> Option<()> {
        None
    }

    fn bad_term(bad: BadTerm) -> Option<BadTerm> {
        Some(bad)
    }
}

fn main() {
    let mut name = String::from("otter@localhost");
    let mut cookie = String::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--name" => name = args.next().expect("--name NODE"),
            "--cookie" => cookie = args.next().expect("--cookie COOKIE"),
            other => {
                eprintln!("usage: dist_node [--name alive@host] [--cookie C]; got {other}");
                std::process::exit(2);
            }
        }
    }
    let rt = Runtime::new();
    let mut builder = Node::builder(name);
    if !cookie.is_empty() {
        builder = builder.cookie(cookie);
    }
    let node = match builder.start(&rt.handle()) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("dist_node: {e}");
            std::process::exit(1);
        }
    };
    let echo = rt.handle().spawn(echo);
    node.register("echo", echo);
    let n = node.clone();
    rt.block_on(move |cx: Context<()>| async move {
        let kv = Kv::start(&cx, ()).await.expect("kv starts");
        n.register_server("kv", kv);
    })
    .expect("the servers start");
    println!("{{\"node\":\"{}\",\"ready\":true}}", node.name());
    // Until stdin closes.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    node.stop();
}
