//! Real Erlang nodes for tests that talk to one (distribution).
//!
//! [`Node::start`] runs `erl -sname NAME -setcookie COOKIE -noshell [-hidden]` as a
//! child process with a unique name (`PREFIX_<pid>_<counter>`), on the short host name
//! `erl -sname` uses ([`short_host`]), after making sure epmd runs. The node runs the
//! builder's setup expression, prints `otter-ready NODE`, then evaluates expressions
//! from its stdin, one per line, answering each with one line: `otter-ok TERM` or
//! `otter-err CLASS:REASON` (`~0tp`: one line, strings as strings). [`Node::eval`]
//! sends one and waits for its answer; every other line the node prints (its
//! `io:format`s, its logger's reports) is kept, in order, for [`Node::wait_for_line`].
//!
//! Waits are on lines, bounded by a timeout: no sleeps as synchronisation. A `Node`
//! is killed (`SIGKILL`) and reaped when dropped, also when a test fails, so no
//! `beam.smp` outlives its test; [`Node::kill`] does it on demand ("node killed"
//! tests). Closing its stdin also halts the node.
//!
//! Used as `#[path = "support/erlang.rs"] mod erlang;` from `tests/`, and by the
//! crate's own unit tests through a `#[path]` to this file.
//! The otter node such a test talks to comes from `support/otter_node.rs`.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a node may take to start, and an expression to answer, before the test
/// fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The host part of `erl -sname` node names here: the system host name up to its
/// first dot.
pub fn short_host() -> String {
    let full = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| {
            Command::new("hostname")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        })
        .expect("the host name");
    let full = full.trim();
    full.split('.').next().unwrap_or(full).to_owned()
}

/// A node name unique in this machine's tests: `PREFIX_<pid>_<counter>`.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// epmd's port: `ERL_EPMD_PORT` or 4369.
pub fn epmd_port() -> u16 {
    std::env::var("ERL_EPMD_PORT")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(4369)
}

/// Starts `epmd -daemon` if nothing answers on epmd's port (`erl` would too; this
/// makes it explicit), and waits until it answers.
pub fn ensure_epmd() {
    let addr = SocketAddr::from(([127, 0, 0, 1], epmd_port()));
    let up = || TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok();
    if up() {
        return;
    }
    let status = Command::new("epmd")
        .args(["-daemon", "-port", &epmd_port().to_string()])
        .status()
        .expect("run `epmd -daemon` (Erlang/OTP on PATH)");
    assert!(status.success(), "epmd -daemon: {status}");
    let t0 = Instant::now();
    while !up() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "epmd does not answer"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How to start a [`Node`].
#[derive(Debug, Clone)]
pub struct Builder {
    prefix: String,
    cookie: String,
    hidden: bool,
    setup: String,
    args: Vec<String>,
    exact: bool,
}

impl Builder {
    /// The cookie (default `secret`).
    pub fn cookie(mut self, cookie: &str) -> Builder {
        self.cookie = cookie.to_owned();
        self
    }

    /// Start as a hidden node (default: normal).
    pub fn hidden(mut self, hidden: bool) -> Builder {
        self.hidden = hidden;
        self
    }

    /// Erlang expressions evaluated before `otter-ready` (e.g. registering a process);
    /// their variables do not leak into later evaluations.
    pub fn setup(mut self, exprs: &str) -> Builder {
        self.setup = exprs.to_owned();
        self
    }

    /// Use the prefix as the node's name as it is, without the unique suffix (a node
    /// that comes back under the name of one that was killed).
    pub fn exact_name(mut self, exact: bool) -> Builder {
        self.exact = exact;
        self
    }

    /// One more argument for `erl` (e.g. `-kernel net_ticktime 20`: two arguments).
    pub fn arg(mut self, arg: &str) -> Builder {
        self.args.push(arg.to_owned());
        self
    }

    /// Starts the node and waits (at most [`TIMEOUT`]) until it is ready.
    pub fn start(self) -> Node {
        ensure_epmd();
        let alive = if self.exact {
            self.prefix.clone()
        } else {
            unique_name(&self.prefix)
        };
        let name = format!("{alive}@{}", short_host());
        let setup = if self.setup.trim().is_empty() {
            "ok".to_owned()
        } else {
            self.setup.replace('\n', " ")
        };
        let eval = format!(
            "(fun() -> {setup} end)(), \
             io:format(\"otter-ready ~s~n\", [node()]), \
             L = fun Loop() -> \
                 case io:get_line(<<>>) of \
                     eof -> erlang:halt(); \
                     {{error, _}} -> erlang:halt(); \
                     Line -> \
                         R = try \
                             {{ok, T, _}} = erl_scan:string(Line), \
                             {{ok, Es}} = erl_parse:parse_exprs(T), \
                             {{value, V, _}} = erl_eval:exprs(Es, erl_eval:new_bindings()), \
                             io_lib:format(\"otter-ok ~0tp\", [V]) \
                         catch C:E -> io_lib:format(\"otter-err ~0tp:~0tp\", [C, E]) \
                         end, \
                         io:put_chars([R, $\\n]), \
                         Loop() \
                 end \
             end, \
             L()."
        );
        let mut cmd = Command::new("erl");
        cmd.args(["-sname", &alive, "-setcookie", &self.cookie, "-noshell"]);
        if self.hidden {
            cmd.arg("-hidden");
        }
        cmd.args(&self.args)
            .args(["-eval", &eval])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("run `erl` (Erlang/OTP on PATH)");
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in lossy_lines(stdout) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let errs = stderr_lines.clone();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in lossy_lines(stderr) {
                errs.lock().unwrap().push(line);
            }
        });
        let mut node = Node {
            name,
            alive,
            cookie: self.cookie,
            child,
            stdin,
            lines,
            pending: VecDeque::new(),
            log: Vec::new(),
            stderr: stderr_lines,
            killed: false,
        };
        let ready = format!("otter-ready {}", node.name);
        if node.wait_for_line(|l| l == ready, TIMEOUT).is_none() {
            node.fail("the node did not start");
        }
        node
    }
}

/// A running Erlang node, killed when dropped.
#[derive(Debug)]
pub struct Node {
    name: String,
    alive: String,
    cookie: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Lines read and not yet consumed by a wait, in order.
    pending: VecDeque<String>,
    /// Every stdout line, for failure messages.
    log: Vec<String>,
    stderr: Arc<Mutex<Vec<String>>>,
    killed: bool,
}

impl Node {
    /// A builder for a node named `PREFIX_<pid>_<counter>@HOST`.
    pub fn builder(prefix: &str) -> Builder {
        Builder {
            prefix: prefix.to_owned(),
            cookie: "secret".to_owned(),
            hidden: false,
            setup: String::new(),
            args: Vec::new(),
            exact: false,
        }
    }

    /// A normal node with cookie `secret`, started.
    pub fn start(prefix: &str) -> Node {
        Node::builder(prefix).start()
    }

    /// The full node name, `alive@host`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name registered with epmd (before the `@`).
    pub fn alive(&self) -> &str {
        &self.alive
    }

    /// The cookie it was started with.
    pub fn cookie(&self) -> &str {
        &self.cookie
    }

    /// The OS process id of its `beam.smp`.
    pub fn os_pid(&self) -> u32 {
        self.child.id()
    }

    /// Evaluates Erlang expressions (`,`-separated, no final `.`, newlines allowed) on
    /// the node: `Ok(value)` or `Err("class:reason")`, printed with `~0tp`. Fails the
    /// test if no answer comes within [`TIMEOUT`].
    pub fn eval(&mut self, exprs: &str) -> Result<String, String> {
        self.eval_timeout(exprs, TIMEOUT)
            .unwrap_or_else(|| self.fail(&format!("no answer to `{exprs}`")))
    }

    /// [`Node::eval`], with `None` if no answer comes within `limit` (the answer
    /// then comes later, as a line [`Node::wait_for_line`] sees).
    pub fn eval_timeout(&mut self, exprs: &str, limit: Duration) -> Option<Result<String, String>> {
        let line = format!(
            "{}.\n",
            exprs.trim().trim_end_matches('.').replace('\n', " ")
        );
        let stdin = self.stdin.as_mut().expect("the node's stdin is open");
        if stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            self.fail(&format!("cannot send `{exprs}`: the node is gone"));
        }
        let answer = self.wait_for_line(
            |l| l.starts_with("otter-ok ") || l.starts_with("otter-err "),
            limit,
        )?;
        Some(match answer.strip_prefix("otter-ok ") {
            Some(v) => Ok(v.to_owned()),
            None => Err(answer["otter-err ".len()..].to_owned()),
        })
    }

    /// [`Node::eval`] that must succeed: the value.
    pub fn eval_ok(&mut self, exprs: &str) -> String {
        match self.eval(exprs) {
            Ok(v) => v,
            Err(e) => self.fail(&format!("`{exprs}` failed: {e}")),
        }
    }

    /// Evaluates `exprs` until it prints `expected`; fails after `limit`. A failure
    /// guard for state that comes over the network (a pg join, a global sync), not a
    /// synchronisation: each try is a round trip to the node.
    pub fn eval_until(&mut self, exprs: &str, expected: &str, limit: Duration) {
        let t0 = Instant::now();
        loop {
            let got = self.eval_ok(exprs);
            if got == expected {
                return;
            }
            if t0.elapsed() >= limit {
                let why = format!("`{exprs}` is {got}, not {expected}, after {limit:?}");
                self.fail(&why);
            }
            std::thread::yield_now();
        }
    }

    /// Waits at most `limit` for a line the node prints that `matches`, and takes it;
    /// lines passed over stay for later waits.
    pub fn wait_for_line(
        &mut self,
        mut matches: impl FnMut(&str) -> bool,
        limit: Duration,
    ) -> Option<String> {
        if let Some(i) = self.pending.iter().position(|l| matches(l)) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if matches(&line) {
                        return Some(line);
                    }
                    self.pending.push_back(line);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Waits at most `limit` for a line containing `text`.
    pub fn wait_for_text(&mut self, text: &str, limit: Duration) -> Option<String> {
        self.wait_for_line(|l| l.contains(text), limit)
    }

    /// Everything the node printed so far, stdout then stderr: for failure messages.
    pub fn output(&mut self) -> String {
        while let Ok(line) = self.lines.try_recv() {
            self.log.push(line.clone());
            self.pending.push_back(line);
        }
        let mut out = self.log.join("\n");
        let errs = self.stderr.lock().unwrap();
        if !errs.is_empty() {
            out.push_str("\n--- stderr ---\n");
            out.push_str(&errs.join("\n"));
        }
        out
    }

    /// Kills the node at once (`SIGKILL`: no goodbye to its peers) and reaps it.
    pub fn kill(&mut self) {
        if !self.killed {
            self.killed = true;
            self.stdin = None;
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Whether the node's process still runs.
    pub fn is_running(&mut self) -> bool {
        !self.killed && matches!(self.child.try_wait(), Ok(None))
    }

    fn fail(&mut self, what: &str) -> ! {
        let out = self.output();
        self.kill();
        panic!("erlang node {}: {what}; its output:\n{out}", self.name);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The lines of a node's output, bytes that are not UTF-8 replaced (`~tp` of a binary
/// prints them): `BufRead::lines` would end at the first, and with it every later
/// `eval`'s answer.
fn lossy_lines(out: impl std::io::Read) -> impl Iterator<Item = String> {
    BufReader::new(out)
        .split(b'\n')
        .map_while(Result::ok)
        .map(|l| {
            String::from_utf8_lossy(&l)
                .trim_end_matches('\r')
                .to_string()
        })
}
