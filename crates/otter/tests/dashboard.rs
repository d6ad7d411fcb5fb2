//! Rules of the dashboard (`otter::dashboard`, feature `dashboard`), checked with real
//! HTTP requests over std sockets to 127.0.0.1 and with a real headless Chromium: the
//! page loads and draws the supervision tree and the top table; `/api/processes` sorts;
//! a kill works only when allowed and the process then disappears (in Chromium too: a
//! killed child leaves the page, and the successor its supervisor starts shows); an
//! unknown pid is a 404 and a malformed one a 400; requests over a limit are refused,
//! and connections past the limit closed; off the loopback address a token is required;
//! a stuck process and a deadlock of two servers calling each other are listed under
//! the page's problems (in Chromium too); a server's detail shows its state through
//! `sys` and, when logged, its last messages, found by pid alone.

#[path = "support/call_cycle.rs"]
mod call_cycle;
#[path = "support/rt.rs"]
mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use call_cycle::PeerCall;
use otter::dashboard::{Dashboard, StartError, limits};
use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::sys;
use otter::{Context, ExitReason, ProcessId, Runtime};
use serde_json::Value;
use support::eventually;

const LIMIT: Duration = Duration::from_secs(10);

// ===== a small HTTP client =====

/// Sends one request (`Connection: close`) and returns the status and the body.
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(LIMIT)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    // The server may answer (and close) before it has read everything: a refused
    // request's rest is not its to read.
    let _ = s
        .write_all(head.as_bytes())
        .and_then(|()| s.write_all(body));
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    request(addr, "GET", path, &[], b"")
}

fn get_json(addr: SocketAddr, path: &str) -> Value {
    let (status, body) = get(addr, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// `0.I.G`, as the dashboard's URLs write a pid.
fn id(pid: ProcessId) -> String {
    pid.to_string().trim_matches(['<', '>']).to_string()
}

// ===== a small system to look at =====

/// A supervisor with two children, and three processes holding 3, 7 and 5 messages.
struct Demo {
    supervisor: ProcessId,
    children: Vec<ProcessId>,
    queued: Vec<(ProcessId, usize)>,
}

fn demo(rt: &Runtime) -> Demo {
    let (tx, rx) = mpsc::channel();
    rt.handle().spawn(move |cx: Context<()>| async move {
        let idle = || {
            || {
                |mut c: Context<u32>| async move {
                    loop {
                        c.recv().await;
                    }
                }
            }
        };
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .child(ChildSpec::process("cache", idle()))
            .child(ChildSpec::process("sessions", idle()));
        let sup = supervisor::start_link_named(&cx, "demo_sup", spec)
            .await
            .expect("the supervisor starts");
        let children = sup.which_children().await.unwrap();
        let children: Vec<ProcessId> = children.iter().filter_map(|c| c.pid).collect();
        let mut queued = Vec::new();
        for n in [3usize, 7, 5] {
            let p = cx.spawn(|_: Context<u32>| std::future::pending::<()>());
            for i in 0..n {
                p.send(i as u32);
            }
            queued.push((p.id(), n));
        }
        tx.send(Demo {
            supervisor: sup.id(),
            children,
            queued,
        })
        .unwrap();
        std::future::pending::<()>().await
    });
    rx.recv_timeout(LIMIT).expect("the demo starts")
}

// ===== the rules =====

rt_test!(
    the_page_loads_with_its_script_and_style_inline,
    |rt: &Runtime| {
        let d = Dashboard::new(&rt.handle()).start().unwrap();
        let (status, body) = get(d.local_addr(), "/");
        assert_eq!(status, 200);
        assert!(body.contains("<title>otter dashboard</title>"));
        assert!(body.contains("setInterval(refresh"), "the script is inline");
        assert!(body.contains("#tree ul"), "the style is inline");
        // Nothing loaded from elsewhere.
        assert!(!body.contains("/*SCRIPT*/") && !body.contains("src=") && !body.contains("<link"));
        let overview = get_json(d.local_addr(), "/api/overview");
        assert!(overview["processes"].as_u64().unwrap() >= 2);
        assert_eq!(overview["allow_kill"], false);
        d.stop();
    }
);

rt_test!(
    api_processes_lists_the_top_processes_sorted_by_the_key,
    |rt: &Runtime| {
        let demo = demo(rt);
        let d = Dashboard::new(&rt.handle()).start().unwrap();
        let top = get_json(d.local_addr(), "/api/processes?sort=queue&limit=3");
        assert_eq!(top["sort"], "queue");
        assert!(top["total"].as_u64().unwrap() >= 6);
        let rows = top["rows"].as_array().unwrap();
        let seen: Vec<(String, u64)> = rows
            .iter()
            .map(|r| {
                (
                    r["pid"].as_str().unwrap().to_string(),
                    r["queue"].as_u64().unwrap(),
                )
            })
            .collect();
        let mut want: Vec<(String, u64)> = demo
            .queued
            .iter()
            .map(|(p, n)| (p.to_string(), *n as u64))
            .collect();
        want.sort_by_key(|w| std::cmp::Reverse(w.1));
        assert_eq!(seen, want);
        for key in ["polls", "memory", "received"] {
            let top = get_json(
                d.local_addr(),
                &format!("/api/processes?sort={key}&limit=100"),
            );
            let rows = top["rows"].as_array().unwrap();
            assert!(rows.len() >= 6, "{key}: {rows:?}");
            let field = if key == "memory" {
                "memory"
            } else {
                &format!("{key}_delta")[..]
            };
            let values: Vec<u64> = rows.iter().map(|r| r[field].as_u64().unwrap()).collect();
            assert!(
                values.windows(2).all(|w| w[0] >= w[1]),
                "{key} descending: {values:?}"
            );
        }
        assert_eq!(get(d.local_addr(), "/api/processes?sort=age").0, 400);
        assert_eq!(get(d.local_addr(), "/api/processes?limit=0").0, 400);
        assert_eq!(get(d.local_addr(), "/api/processes?limit=x").0, 400);
        d.stop();
    }
);

rt_test!(the_tree_shows_a_supervisors_children, |rt: &Runtime| {
    let demo = demo(rt);
    let d = Dashboard::new(&rt.handle()).start().unwrap();
    let tree = get_json(d.local_addr(), "/api/tree");
    let roots = tree["roots"].as_array().unwrap();
    let sup = roots
        .iter()
        .find(|n| n["pid"] == demo.supervisor.to_string())
        .unwrap_or_else(|| panic!("the supervisor is a root: {tree}"));
    assert_eq!(sup["name"], "demo_sup");
    assert_eq!(sup["kind"], "supervisor");
    // In the table's order, which a reused slot makes other than the start order.
    let mut children: Vec<&str> = sup["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pid"].as_str().unwrap())
        .collect();
    children.sort_unstable();
    let mut want: Vec<String> = demo.children.iter().map(|p| p.to_string()).collect();
    want.sort_unstable();
    assert_eq!(children, want);
    // Its detail gives its sys status and its children by spec id.
    let detail = get_json(
        d.local_addr(),
        &format!("/api/process/{}", id(demo.supervisor)),
    );
    assert_eq!(detail["kind"], "supervisor");
    assert_eq!(detail["sys"]["mode"], "running");
    let ids: Vec<&str> = detail["sys"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cache", "sessions"]);
    d.stop();
});

rt_test!(
    a_kill_works_only_when_allowed_and_the_process_disappears,
    |rt: &Runtime| {
        let demo = demo(rt);
        let (victim, _) = demo.queued[0];
        let path = format!("/api/process/{}/kill", id(victim));
        let kill = [("X-Otter-Dashboard", "kill")];

        let refusing = Dashboard::new(&rt.handle()).start().unwrap();
        assert_eq!(
            request(refusing.local_addr(), "POST", &path, &kill, b"").0,
            403
        );
        refusing.stop();
        assert!(rt.handle().process_info(victim).is_some(), "not killed");

        let d = Dashboard::new(&rt.handle())
            .allow_kill(true)
            .start()
            .unwrap();
        let detail = get_json(d.local_addr(), &format!("/api/process/{}", id(victim)));
        assert_eq!(detail["allow_kill"], true);
        // Without the header a browser cannot send cross-origin: refused.
        assert_eq!(request(d.local_addr(), "POST", &path, &[], b"").0, 403);
        assert_eq!(get(d.local_addr(), &path).0, 405);
        let (status, body) = request(d.local_addr(), "POST", &path, &kill, b"");
        assert_eq!(status, 200, "{body}");
        eventually("the killed process is gone", LIMIT, || {
            get(d.local_addr(), &format!("/api/process/{}", id(victim))).0 == 404
        });
        eventually("the killed process leaves the top table", LIMIT, || {
            let top = get_json(d.local_addr(), "/api/processes?sort=queue&limit=100");
            top["rows"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["pid"] != victim.to_string())
        });
        assert_eq!(request(d.local_addr(), "POST", &path, &kill, b"").0, 404);
        d.stop();
    }
);

rt_test!(
    an_unknown_pid_is_a_404_and_a_malformed_one_a_400,
    |rt: &Runtime| {
        let d = Dashboard::new(&rt.handle()).start().unwrap();
        let (status, body) = get(d.local_addr(), "/api/process/0.999999.7");
        assert_eq!(status, 404);
        let e: Value = serde_json::from_str(&body).unwrap();
        assert!(e["error"].as_str().unwrap().contains("no process"));
        for bad in [
            "x",
            "1.2.3",
            "0.1",
            "0.1.2.3",
            "0.-1.2",
            "0.99999999999.1",
            "0.2147483649.0",
        ] {
            let (status, body) = get(d.local_addr(), &format!("/api/process/{bad}"));
            assert_eq!(status, 400, "{bad}: {body}");
            assert!(serde_json::from_str::<Value>(&body).is_ok());
        }
        assert_eq!(get(d.local_addr(), "/api/nothing").0, 404);
        // The `<0.I.G>` form, percent-encoded as a browser sends it.
        let me = d.pid();
        assert_eq!(
            get(d.local_addr(), &format!("/api/process/%3C{}%3E", id(me))).0,
            200
        );
        d.stop();
    }
);

rt_test!(requests_over_a_limit_are_refused, |rt: &Runtime| {
    let d = Dashboard::new(&rt.handle()).start().unwrap();
    let a = d.local_addr();
    let big = "x".repeat(limits::HEADERS + 1);
    assert_eq!(
        request(a, "GET", "/api/overview", &[("X-Big", &big)], b"").0,
        431
    );
    let long = format!("/api/overview?{}", "a".repeat(limits::URL + 1));
    assert_eq!(get(a, &long).0, 414);
    let body = vec![b'x'; limits::BODY + 1];
    assert_eq!(request(a, "POST", "/api/overview", &[], &body).0, 413);
    // Chunked, with no length declared: refused once the limit is passed.
    let mut chunked = format!("{:x}\r\n", body.len()).into_bytes();
    chunked.extend_from_slice(&body);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(
        request(
            a,
            "PUT",
            "/api/overview",
            &[("Transfer-Encoding", "chunked")],
            &chunked
        )
        .0,
        413
    );
    // A host name that is not the loopback's (DNS rebinding) is refused too.
    let mut s = TcpStream::connect(a).unwrap();
    s.write_all(
        b"GET /api/overview HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    // And the dashboard still serves.
    assert_eq!(get(a, "/api/overview").0, 200);
    d.stop();
});

rt_test!(
    connections_past_the_limit_are_closed_and_the_rest_served,
    |rt: &Runtime| {
        let d = Dashboard::new(&rt.handle()).start().unwrap();
        let a = d.local_addr();
        // Idle connections, each held by a process of the dashboard.
        let held: Vec<TcpStream> = (0..limits::CONNECTIONS)
            .map(|_| TcpStream::connect(a).unwrap())
            .collect();
        // Accepted after them (the backlog is first in, first out): closed at once.
        let mut over = TcpStream::connect(a).unwrap();
        over.set_read_timeout(Some(LIMIT)).unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(over.read(&mut buf).unwrap(), 0, "closed with nothing sent");
        drop(held);
        eventually("a connection is served again", LIMIT, || {
            let mut s = TcpStream::connect(a).unwrap();
            s.set_read_timeout(Some(LIMIT)).unwrap();
            let req =
                format!("GET /api/overview HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n");
            let _ = s.write_all(req.as_bytes());
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer.starts_with("HTTP/1.1 200")
        });
        d.stop();
    }
);

rt_test!(
    off_the_loopback_address_a_token_is_required,
    |rt: &Runtime| {
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        match Dashboard::new(&rt.handle()).bind(any).start() {
            Err(StartError::TokenRequired(a)) => assert_eq!(a, any),
            other => panic!("started without a token: {other:?}"),
        }
        assert!(matches!(
            Dashboard::new(&rt.handle()).bind(any).token("").start(),
            Err(StartError::TokenRequired(_))
        ));
        let d = Dashboard::new(&rt.handle())
            .bind(any)
            .token("s3cret")
            .start()
            .unwrap();
        let a = SocketAddr::from(([127, 0, 0, 1], d.local_addr().port()));
        assert_eq!(get(a, "/").0, 401);
        assert_eq!(get(a, "/api/overview").0, 401);
        assert_eq!(get(a, "/api/overview?token=wrong").0, 401);
        assert_eq!(
            request(
                a,
                "GET",
                "/api/overview",
                &[("Authorization", "Bearer s3creT")],
                b""
            )
            .0,
            401
        );
        assert_eq!(
            request(
                a,
                "GET",
                "/api/overview",
                &[("Authorization", "Bearer s3cret")],
                b""
            )
            .0,
            200
        );
        assert_eq!(get(a, "/?token=s3cret").0, 200);
        d.stop();
    }
);

/// A server that counts its calls and shows the count as its status.
struct Counter(u32);

impl Server for Counter {
    type Args = ();
    type Call = ReplyTo<u32>;
    type Cast = ();
    type Info = ();
    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Counter(0))
    }
    async fn handle_call(&mut self, from: ReplyTo<u32>, _: &mut ServerContext<Self>) -> Flow {
        self.0 += 1;
        from.reply(self.0);
        Flow::Continue
    }
    fn format_status(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "count = {}", self.0)
    }
}

rt_test!(
    a_servers_detail_shows_its_state_and_its_last_messages_by_pid_alone,
    |rt: &Runtime| {
        let (tx, rx) = mpsc::channel();
        rt.handle().spawn(move |cx: Context<()>| async move {
            let logged = Counter::start(&cx, ()).await.unwrap();
            let quiet = Counter::start(&cx, ()).await.unwrap();
            sys::log(logged, Some(4)).await.unwrap();
            for _ in 0..3 {
                logged.call(|f| f).await.unwrap();
                quiet.call(|f| f).await.unwrap();
            }
            tx.send((logged.id(), quiet.id())).unwrap();
            std::future::pending::<()>().await
        });
        let (logged, quiet) = rx.recv_timeout(LIMIT).unwrap();
        let d = Dashboard::new(&rt.handle()).start().unwrap();
        let detail = get_json(d.local_addr(), &format!("/api/process/{}", id(logged)));
        assert_eq!(detail["kind"], "server");
        let sys = &detail["sys"];
        assert!(
            sys["behaviour"].as_str().unwrap().ends_with("Counter"),
            "{detail}"
        );
        assert_eq!(sys["mode"], "running");
        assert_eq!(sys["state"], "count = 3");
        // The last four of six events, oldest first: the second call and its reply,
        // the third call and its reply.
        let log: Vec<(String, String)> = sys["log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["direction"].as_str().unwrap().to_string(),
                    e["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let want = [
            ("in", "call"),
            ("out", "reply"),
            ("in", "call"),
            ("out", "reply"),
        ];
        assert_eq!(
            log,
            want.map(|(a, b)| (a.to_string(), b.to_string())),
            "{detail}"
        );
        // Not logged: its state, and an empty log.
        let detail = get_json(d.local_addr(), &format!("/api/process/{}", id(quiet)));
        assert_eq!(detail["sys"]["state"], "count = 3");
        assert_eq!(detail["sys"]["log"].as_array().map(Vec::len), Some(0));
        d.stop();
    }
);

rt_test!(a_stopped_dashboard_refuses_connections, |rt: &Runtime| {
    let d = Dashboard::new(&rt.handle()).start().unwrap();
    assert_eq!(get(d.local_addr(), "/api/overview").0, 200);
    d.stop();
    eventually("the listener is closed", LIMIT, || {
        TcpStream::connect(d.local_addr()).is_err()
    });
});

// ===== in a real browser =====

/// Renders `url` in headless Chromium and returns the DOM after `budget_ms` of virtual
/// time; `None` (with a message) if Chromium is absent outside CI.
fn chromium(url: &str, budget_ms: u32, screenshot: Option<&str>) -> Option<String> {
    let present = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing, and CI is set: install it (.ci/run does)"
        );
        eprintln!(
            "SKIPPED: chromium is not installed (apt-get install -y chromium); CI would fail here"
        );
        return None;
    }
    // A profile of its own per run: tests run at once, and Chromium locks its profile.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = std::env::temp_dir().join(format!(
        "otter-dashboard-chromium-{}-{run}",
        std::process::id()
    ));
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--window-size=1280,900",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--virtual-time-budget={budget_ms}"));
    match screenshot {
        Some(path) => cmd.arg(format!("--screenshot={path}")),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(url).output().expect("chromium runs");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The part of `dom` from the element with `id` to the next of `ends`.
fn part<'a>(dom: &'a str, id: &str, end: &str) -> &'a str {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {dom}"));
    let rest = &dom[start..];
    &rest[..rest.find(&format!("id=\"{end}\"")).unwrap_or(rest.len())]
}

#[test]
fn in_chromium_the_page_draws_the_tree_and_the_top_table_and_a_killed_process_disappears() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let demo = demo(&rt);
    let d = Dashboard::new(&rt.handle())
        .allow_kill(true)
        .start()
        .unwrap();
    let url = format!("http://{}/", d.local_addr());
    let Some(dom) = chromium(&url, 3000, None) else {
        return;
    };
    let tree = part(&dom, "tree", "detail-panel");
    for pid in demo.children.iter().chain([&demo.supervisor]) {
        assert!(
            tree.contains(&format!("href=\"#{}\"", id(*pid))),
            "{pid} in the tree: {tree}"
        );
    }
    assert!(tree.contains("demo_sup"), "{tree}");
    let top = part(&dom, "top", "never");
    let top = &top[..top.find("</table>").unwrap_or(top.len())];
    for (pid, n) in &demo.queued {
        assert!(
            top.contains(&format!("href=\"#{}\"", id(*pid))),
            "{pid} in the top table: {top}"
        );
        assert!(top.contains(&format!(">{n}<")), "its queue of {n}: {top}");
    }
    let summary = part(&dom, "summary", "error");
    assert!(summary.contains(" processes"), "{summary}");
    let error = part(&dom, "error", "workers-panel");
    assert!(
        error.starts_with("id=\"error\" class=\"error\"></span>"),
        "no error shown: {error}"
    );
    // A process's detail, linked as `/#0.I.G`: the supervisor's children by spec id.
    let Some(dom) = chromium(&format!("{url}#{}", id(demo.supervisor)), 2000, None) else {
        return;
    };
    let detail = part(&dom, "detail-panel", "never");
    let detail = &detail[..detail.find("</section>").unwrap_or(detail.len())];
    assert!(!detail.contains("hidden"), "the detail is shown: {detail}");
    for child in [
        "cache (worker)",
        "sessions (worker)",
        "otter::supervisor::Supervisor (running)",
    ] {
        assert!(detail.contains(child), "{child} in {detail}");
    }
    assert!(detail.contains("class=\"kill\""), "a kill button: {detail}");
    // Killed (the button's request), a child leaves the page, and the child its
    // supervisor restarts in its place shows.
    let victim = demo.children[0];
    let kill = format!("/api/process/{}/kill", id(victim));
    let (status, body) = request(
        d.local_addr(),
        "POST",
        &kill,
        &[("X-Otter-Dashboard", "kill")],
        b"",
    );
    assert_eq!(status, 200, "{body}");
    let mut restarted = String::new();
    eventually("the supervisor has restarted the child", LIMIT, || {
        let sup = get_json(
            d.local_addr(),
            &format!("/api/process/{}", id(demo.supervisor)),
        );
        match sup["sys"]["children"][0]["pid"].as_str() {
            Some(p) if p != victim.to_string() => {
                restarted = p.trim_matches(['<', '>']).to_string();
                true
            }
            _ => false,
        }
    });
    let Some(dom) = chromium(&url, 3000, None) else {
        return;
    };
    let tree = part(&dom, "tree", "detail-panel");
    assert!(
        !tree.contains(&format!("href=\"#{}\"", id(victim))),
        "{victim} gone: {tree}"
    );
    assert!(
        tree.contains(&format!("href=\"#{restarted}\"")),
        "{restarted} shown: {tree}"
    );
    let top = part(&dom, "top", "never");
    let top = &top[..top.find("</table>").unwrap_or(top.len())];
    assert!(
        !top.contains(&format!("href=\"#{}\"", id(victim))),
        "{victim} gone: {top}"
    );
    // The screenshot in the docs: `OTTER_DASHBOARD_SCREENSHOT=docs/dashboard.png`.
    if let Some(path) = std::env::var_os("OTTER_DASHBOARD_SCREENSHOT") {
        let path = std::path::Path::new(&path);
        let path = if path.is_relative() {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(path)
        } else {
            path.to_path_buf()
        };
        chromium(&url, 4000, Some(path.to_str().unwrap()));
    }
    d.stop();
}

/// Two servers calling each other, and a process inside one long poll (`hold`); their
/// pids (`a`, `b`, the hog).
fn trouble(rt: &Runtime, hold: Duration) -> (ProcessId, ProcessId, ProcessId) {
    let (tx, rx) = mpsc::channel();
    rt.handle().spawn(move |cx: Context<()>| async move {
        let (a, b) = call_cycle::pair(&cx, None).await;
        cx.spawn(move |_: Context<()>| async move {
            let _ = a.call_timeout(PeerCall::Ping, None).await;
        });
        let hog = cx.spawn(move |_: Context<()>| async move {
            std::thread::sleep(hold); // a poll that never yields
        });
        tx.send((a.pid().id(), b.pid().id(), hog.id())).unwrap();
        std::future::pending::<()>().await
    });
    rx.recv_timeout(LIMIT).unwrap()
}

#[test]
fn stuck_processes_and_deadlocks_are_listed_under_problems() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let d = Dashboard::new(&rt.handle()).start().unwrap();
    let (a, b, hog) = trouble(&rt, Duration::from_secs(3));
    let mut cycle = [id(a), id(b)];
    cycle.sort();
    eventually("the hog and the cycle show", LIMIT, || {
        let p = get_json(d.local_addr(), "/api/problems");
        let stuck = p["stuck"].as_array().unwrap();
        let deadlocks = p["deadlocks"].as_array().unwrap();
        stuck
            .iter()
            .any(|s| s["id"] == id(hog).as_str() && s["ms"].as_u64() >= Some(100))
            && deadlocks.iter().any(|c| {
                let mut ids: Vec<String> = c
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["id"].as_str().unwrap().to_string())
                    .collect();
                ids.sort();
                ids == cycle
            })
    });
}

#[test]
fn in_chromium_a_deadlock_of_two_servers_calling_each_other_is_flagged() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let d = Dashboard::new(&rt.handle()).start().unwrap();
    let (a, b, _) = trouble(&rt, Duration::ZERO);
    let url = format!("http://{}/", d.local_addr());
    // The walk that finds it may be the page's first: wait until the API has it.
    eventually("the cycle shows in the API", LIMIT, || {
        get_json(d.local_addr(), "/api/problems")["deadlocks"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    });
    let Some(dom) = chromium(&url, 3000, None) else {
        return;
    };
    let problems = part(&dom, "problems", "tree-panel");
    assert!(problems.contains("deadlock"), "{problems}");
    for pid in [a, b] {
        assert!(
            problems.contains(&format!("href=\"#{}\"", id(pid))),
            "{pid} in the cycle: {problems}"
        );
    }
}
