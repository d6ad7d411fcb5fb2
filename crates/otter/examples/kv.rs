//! A key-value server over TCP with a line protocol: one process per connection under an
//! acceptor pool, and the store a server registered by name under a supervisor. Try it
//! with `nc`:
//!
//! ```text
//! cargo run --release --example kv -- 7379
//! nc 127.0.0.1 7379
//! PUT greeting hello world
//! OK
//! GET greeting
//! VALUE hello world
//! DEL greeting
//! OK
//! GET greeting
//! NOT_FOUND
//! CRASH
//! ```
//!
//! `CRASH` makes the connection's process panic: its socket closes, every other
//! connection goes on, the store keeps its keys. The server stops when its standard
//! input closes (Ctrl-D).
//!
//! Built with the feature `dashboard`, `--dashboard PORT` also serves the live dashboard
//! (`otter::dashboard`) on 127.0.0.1:
//!
//! ```text
//! cargo run --release --features dashboard --example kv -- 7379 --dashboard 7380
//! ```
//!
//! The Erlang original of this shape: a `ranch` listener whose protocol module calls a
//! `gen_server` registered under a name.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use otter::net::{TcpStream, start_acceptor_pool};
use otter::server::{Flow, Name, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, ExitReason, Runtime};

/// The store's registered name: connections call it by name, as
/// `gen_server:call(kv, Request)` does.
pub(crate) const KV: Name<Store> = Name::new("kv");

/// The store: keys and values, in the server's process.
pub(crate) struct Store {
    map: BTreeMap<String, String>,
}

#[derive(Debug)]
pub(crate) enum Request {
    Put(String, String, ReplyTo<()>),
    Get(String, ReplyTo<Option<String>>),
    Del(String, ReplyTo<bool>),
    Keys(ReplyTo<Vec<String>>),
}

impl Server for Store {
    type Args = ();
    type Call = Request;
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Store {
            map: BTreeMap::new(),
        })
    }

    async fn handle_call(&mut self, request: Request, _: &mut ServerContext<Self>) -> Flow {
        match request {
            Request::Put(k, v, r) => {
                self.map.insert(k, v);
                r.reply(());
            }
            Request::Get(k, r) => r.reply(self.map.get(&k).cloned()),
            Request::Del(k, r) => r.reply(self.map.remove(&k).is_some()),
            Request::Keys(r) => r.reply(self.map.keys().cloned().collect()),
        }
        Flow::Continue
    }
}

/// The store under its supervisor (`tests/sim_kv.rs` runs it under simulation).
pub(crate) fn store_tree() -> SupervisorSpec {
    SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::named_server::<Store>(
        "kv",
        KV,
        || (),
    ))
}

/// One connection: reads lines, answers each.
pub(crate) async fn connection(mut cx: Context<()>, mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).trim().to_string();
            let answer = match answer(&mut cx, &line).await {
                Some(a) => a,
                None => return, // QUIT
            };
            if stream.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

fn crash() -> ! {
    panic!("CRASH asked for")
}

/// The answer to one line; `None` to close the connection. (`&mut`: a process's
/// `Context` is `Send` but not `Sync`, and this future crosses awaits.)
pub(crate) async fn answer<M: Send + 'static>(cx: &mut Context<M>, line: &str) -> Option<String> {
    let mut words = line.splitn(3, ' ');
    let reply = match (words.next().unwrap_or(""), words.next(), words.next()) {
        ("PUT", Some(k), Some(v)) => {
            let (k, v) = (k.to_string(), v.to_string());
            KV.call(cx, |r| Request::Put(k, v, r))
                .await
                .map(|()| "OK".to_string())
        }
        ("GET", Some(k), None) => {
            let k = k.to_string();
            KV.call(cx, |r| Request::Get(k, r)).await.map(|v| match v {
                Some(v) => format!("VALUE {v}"),
                None => "NOT_FOUND".into(),
            })
        }
        ("DEL", Some(k), None) => {
            let k = k.to_string();
            KV.call(cx, |r| Request::Del(k, r))
                .await
                .map(|found| if found { "OK" } else { "NOT_FOUND" }.into())
        }
        ("KEYS", None, None) => KV
            .call(cx, Request::Keys)
            .await
            .map(|keys| format!("KEYS {}", keys.join(" "))),
        ("QUIT", None, None) => return None,
        ("CRASH", None, None) => crash(),
        _ => Ok("ERR commands: PUT k v | GET k | DEL k | KEYS | QUIT | CRASH".into()),
    };
    Some(match reply {
        Ok(line) => line + "\n",
        Err(e) => format!("ERR the store: {e}\n"),
    })
}

/// The dashboard on `--dashboard PORT`, if given (127.0.0.1 only: no token needed).
#[cfg(feature = "dashboard")]
fn start_dashboard(rt: &Runtime) -> Option<otter::dashboard::Running> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--dashboard")?;
    let port: u16 = args
        .get(at + 1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(7380);
    let dashboard = otter::dashboard::Dashboard::new(&rt.handle())
        .bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .start();
    match dashboard {
        Ok(d) => {
            println!("kv: dashboard on http://{}/", d.local_addr());
            Some(d)
        }
        Err(e) => {
            eprintln!("kv: {e}");
            std::process::exit(1);
        }
    }
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(7379);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let rt = Runtime::new();
    #[cfg(feature = "dashboard")]
    let _dashboard = start_dashboard(&rt);
    let r = rt.block_on(move |cx: Context<()>| async move {
        let _store = supervisor::start_link(&cx, store_tree()).await?;
        let pool = start_acceptor_pool(&cx, addr, 4, connection)
            .await
            .map_err(|e| ExitReason::ShutdownWith(e.to_string().into()))?;
        println!("kv: listening on {} (Ctrl-D stops it)", pool.local_addr());
        // Until standard input closes, read off the workers.
        otter::blocking::spawn_blocking(|| {
            std::io::copy(&mut std::io::stdin(), &mut std::io::sink())
        })
        .await
        .ok();
        Ok::<(), ExitReason>(())
    });
    match r {
        Ok(Ok(())) => {}
        Ok(Err(reason)) | Err(reason) => {
            eprintln!("kv: {reason}");
            std::process::exit(1);
        }
    }
}
