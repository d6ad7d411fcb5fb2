//! # otter: Erlang's process model for Rust
//!
//! Millions of isolated lightweight processes with typed mailboxes and selective
//! receive, on a multi-core work-stealing scheduler.
//!
//! If you know Erlang, you know otter; the differences are typed messages and `.await`:
//!
//! | Erlang | otter |
//! |---|---|
//! | `spawn(fun() -> loop(S) end)` | `cx.spawn(move \|mut cx: Context<Msg>\| async move { .. })` |
//! | `self()` | `cx.pid()`, a `Pid<Msg>`: it takes only `Msg` |
//! | `Pid ! Msg` | `pid.send(msg)`; in a loop of sends, `cx.send(pid, msg).await`, which yields when the turn's budget is spent as `!` does (Scheduler, below) |
//! | `process_info(self(), message_queue_len)`, `process_info(Pid, message_queue_len)` | `cx.message_queue_len()` (exact), `pid.message_queue_len()` (an estimate; its queue only, `None` once exited) |
//! | `process_info(Pid)`, `processes()`, `erlang:statistics/1` | `handle.process_info(pid)` / `cx.process_info(pid)` (an `Option<introspect::ProcessInfo>`), `handle.processes()` (a snapshot walked while the runtime runs), `handle.runtime_info()` ([`introspect`]) |
//! | a loop of `spawn`s, or of computation (reductions spent at each call) | `cx.spawn(..)` then `cx.consume_budget().await` |
//! | `receive M -> .. end` | `let m = cx.recv().await;` |
//! | `receive {hi, X} -> .. end` (selective) | `cx.recv_match(\|m\| matches!(m, Msg::Hi(_))).await` |
//! | `receive .. after 100 -> timeout end` | `cx.recv_timeout(Duration::from_millis(100)).await` (`None`) |
//! | `loop() -> receive M -> handle(M), loop() end.` | `loop { let m = cx.recv().await; handle(m); }` |
//! | `link(Pid)`, `spawn_link/1` | `cx.link(pid)`, `cx.spawn_link(..)` |
//! | `spawn_opt(Fun, [link])`; no bounded mailbox (a flood grows the heap until `max_heap_size` kills the receiver) | `cx.spawn_opt(SpawnOptions::new().link(), ..)`; [`SpawnOptions::bounded_mailbox`]`(n)`: `pid.try_send(m)` gives `Full(m)` back, `cx.send(pid, m).await` waits for room, a call to a full server fails with `CallError::Full`; plain `send`, `Down`s, exits and timers are never refused |
//! | `monitor(process, Pid)`, `{'DOWN', ..}` | `cx.monitor(pid)`, a [`Down`] message |
//! | `process_flag(trap_exit, true)`, `{'EXIT', ..}` | `cx.trap_exit(true)`, an [`Exit`] message |
//! | `exit(Pid, kill)` | `cx.exit(pid, ExitReason::Kill)`; from outside any process, `handle.exit(pid, ..)` |
//! | `is_process_alive(Pid)` | `pid.is_alive()`: false from the start of its exit, or once an exit signal that ends it was sent; `pid.has_exited()`: its exit is over |
//! | `register(Name, Pid)`, `whereis(Name)` | `cx.register(name, pid)`, `cx.whereis::<Msg>(name)` |
//! | `busy_dist_port` (a sender to a peer that does not read is suspended); `erlang:send(P, M, [nosuspend])` | `cx.send(remote, m).await` waits past `NodeBuilder::dist_buf_busy_limit` (1 MiB); `remote.try_send(m)` gives `Full(m)`; plain `send` queues up to `dist_buf_hard_limit` (64 MiB), then the connection closes |
//! | `erlang:send_after(T, Pid, Msg)`, `timer:sleep(T)` | `cx.send_after(pid, msg, t)`, `cx.sleep(t).await` |
//! | `gen_server`, `gen_statem`, `supervisor` | [`server`], [`statem`], [`supervisor`] (below) |
//! | `gen_tcp:listen/accept/recv/send`, `{active, once}` | [`net::TcpListener`], [`net::TcpStream`], [`net::Active`] (below) |
//! | `gen_statem:call(Pid, Req)`, `{next_state, S, D, [{state_timeout, T, C}]}` | `m.call(Req::Get)`, `Transition::next(s).state_timeout(t, c)` ([`statem`]) |
//! | `{send_timeout, T}`, `{send_timeout_close, true}` | [`net::TcpStream::set_send_timeout`]`(Some(t))` |
//! | `gen_tcp:recv(S, 0, T)`, `gen_tcp:controlling_process/2` | [`timeout`]`(t, s.read(&mut buf))`, send the stream (an active one: [`net::ActiveTcpStream::controlling_process`] first) |
//! | a `ranch` listener | [`net::start_acceptor_pool`] |
//! | `ranch:suspend_listener/1`, then waiting for the connections | [`net::AcceptorPool::graceful_stop`]`(drain)` |
//! | dirty schedulers | [`blocking::spawn_blocking`] |
//! | `erpc:call(OtterNode, m, f, [A, B])` from Erlang; `erpc:call(Node, M, F, Args, T)` from otter | `node.register_rpc("m", "f", \|(a, b): (i64, i64)\| Ok(a + b))`; `node.erpc_call(&cx, node, "m", "f", &(a, b), t).await` ([`dist`], "erpc and rpc") |
//! | `pg:start(Scope)`, `pg:join(Scope, G, Pid)`, `pg:get_members(Scope, G)`, `pg:monitor_scope(Scope)` | `node.pg_scope("pg")`, `scope.join(&g, pid)`, `scope.members::<_, M>(&g)`, `scope.monitor_scope(pid)` ([`dist::pg`]: Erlang's pg protocol, one membership with Erlang nodes) |
//! | `erl -proto_dist inet_tls -ssl_dist_optfile F`; `global:sync()`, `global:whereis_name(N)` with a visible node | `Node::builder(n).tls(TlsConfig::from_pem_files(cert, key, ca)?)` (feature `tls`); `.hidden(false)`, `node.global_whereis_name("n")` ([`dist`]: "TLS", "Visible nodes and `global`") |
//! | `net_kernel:connect_node(N)` (`true`/`false`), `monitor_node/2` | `node.connect(n).await`: `Ok`, or a [`dist::ConnectError`] that says why (`BadName`, `NotFound` with epmd's error, `Handshake` with the handshake's, `Tls` with a [`dist::TlsHandshakeError`], `Timeout`, `Closed`..); `node.monitor_node(pid, n)` |
//! | `os:set_signal(sigterm, handle)`, `{notify, sigterm}` | [`os_signal::notify`]`(&cx, &[Signal::Term], pid)`, an [`OsSignal`] message |
//! | SASL's crash, supervisor and progress reports | `tracing` events ([`report`]): install a subscriber |
//! | a `common_test` case, `-spec main` of an escript | `#[otter::test]` (`workers = [1, 4]`), `#[otter::main]` |
//! | `init:stop/0` on `SIGTERM` | [`os_signal::stop_on_signal`]`(&cx, top, &[Signal::Term], deadline)` |
//! | `erlang:monotonic_time()` | [`time::now`]`()` (the simulated clock under [`sim`]) |
//! | Concuerror, or a `common_test` suite rerun until it flakes | [`sim::sweep`]`(0..1000, \|sim\| ..)`: every run from a seed, a failure's seed replays it (`OTTER_SIM_SEED`); nodes, partitions and crashes in one process ("Simulation", below) |
//!
//! ## Processes
//!
//! A process is an `async` function with its own mailbox. [`Runtime::block_on`] runs a
//! root process and returns its value; [`Context::spawn`] and [`Handle::spawn`] start
//! more. Each gets a [`Context`]: its pid, its mailbox, its runtime.
//!
//! ```
//! use otter::{Context, Runtime};
//!
//! let rt = Runtime::new();
//! let answer = rt.block_on(|mut cx: Context<u64>| async move {
//!     let me = cx.pid();
//!     // A child that doubles what it receives and sends it back.
//!     let child = cx.spawn(move |mut cx: Context<u64>| async move {
//!         let n = cx.recv().await;
//!         me.send(2 * n);
//!     });
//!     child.send(21);
//!     cx.recv().await
//! });
//! assert_eq!(answer, Ok(42));
//! ```
//!
//! A process ends when its function returns, with [`ExitReason::Normal`] (or the reason
//! it returns, see [`IntoExitReason`]). A panic ends only that process, with
//! [`ExitReason::Panic`] and the message; the runtime and all other processes go on.
//! A program with no `tracing` subscriber sees the panic as Rust prints it (its panic
//! hook, with a backtrace under `RUST_BACKTRACE`); one that installs a subscriber (for
//! instance `tracing_subscriber::fmt::init()`) gets one crash report instead, with the
//! process, the message and the place of the panic ([`report`]), as SASL logs a crash:
//! the first runtime built puts a hook in front of the program's, which leaves a
//! process's panic to its report once a subscriber takes them.
//!
//! ## Messages and selective receive
//!
//! [`Pid::send`] never blocks and never fails: sending to a process that has exited drops
//! the message, as in Erlang ([`Pid::try_send`] tells). Messages from one sender to one
//! receiver arrive in the order sent. Messages are moved into the receiver's mailbox
//! inline: no allocation per message beyond the mailbox's shared blocks.
//!
//! Receiving: [`Context::recv`], [`Context::try_recv`], [`Context::recv_timeout`], and
//! Erlang's selective receive [`Context::recv_match`]: it takes the oldest message that
//! matches and leaves the rest in order. Beyond Erlang, [`Context::recv_key`] takes the
//! message with a given key (e.g. a sender's pid) in amortised `O(1)` however many
//! others wait, where a selective receive costs `O(n)`: see the [`mailbox`] module docs.
//!
//! ```
//! use otter::{Context, Runtime};
//!
//! #[derive(Debug, PartialEq)]
//! enum Msg { Low(u8), High(u8) }
//!
//! let rt = Runtime::new();
//! let got = rt.block_on(|mut cx: Context<Msg>| async move {
//!     cx.pid().send(Msg::Low(1));
//!     cx.pid().send(Msg::High(2));
//!     let first = cx.recv_match(|m| matches!(m, Msg::High(_))).await;
//!     (first, cx.recv().await)
//! });
//! assert_eq!(got.unwrap(), (Msg::High(2), Msg::Low(1)));
//! ```
//!
//! ## Futures inside processes
//!
//! A process is an ordinary future: any `Waker`-based future (another library's channel,
//! a timer) can be awaited in it and wakes it. [`Context::sleep`] is otter's own timer.
//!
//! ## For tokio users
//!
//! A process is a future on otter's scheduler, so most async Rust runs in one as
//! written: `tokio::select!` over [`Context::recv`] and a timer, channels, `Waker`-based
//! libraries. What differs, and why:
//!
//! * **tokio's own IO, timers and `tokio::spawn` panic in a process** ("there is no
//!   reactor running"): they need a tokio runtime's context, and otter's workers are not
//!   tokio's. Wrap such code in [`compat::tokio`](crate::compat) (per future), or build
//!   the runtime with `Builder::tokio_context(true)` (every process; entered once per
//!   thread, nothing per poll); both need the feature `tokio`. A process that panics so
//!   exits with a reason naming both. otter's own [`net`] sockets need neither, and
//!   implement tokio's `AsyncRead`/`AsyncWrite` for hyper and axum.
//! * **A process is the unit of failure, not a task.** A panic ends its process only;
//!   whoever is linked to it gets an exit signal, whoever monitors it a [`Down`]. Killing
//!   a process drops its future (and, inside `compat::tokio`, drops it in tokio's
//!   context, so pooled clients survive).
//! * **A server handles one message at a time.** A `handle_call` that awaits a slow
//!   HTTP request holds every other caller of that server behind it (and their 5 s call
//!   timeouts run). Do slow work in a linked worker process and answer later: keep the
//!   [`ReplyTo`](server::ReplyTo), `spawn_link` the worker, and let it call
//!   `from.reply(..)` (a deferred reply, `gen_server:reply/2`).
//! * **Restarts lose state.** A supervisor restarts a crashed server from `init`: what
//!   was only in its memory is gone, as in Erlang. Persist what must survive.
//! * **Restart intensity.** A supervisor gives up after more restarts than its
//!   intensity in its period, OTP's default being 1 in 5 s
//!   ([`SupervisorSpec::intensity`](supervisor::SupervisorSpec::intensity)); it then
//!   stops its children and exits `Shutdown`, and so does its parent, up the tree. A
//!   `simple_one_for_one` pool of jobs that may fail should make its jobs
//!   [`Restart::Temporary`](supervisor::Restart) (a failed job is not restarted) or set
//!   an intensity sized for its load, e.g. `.intensity(100, Duration::from_secs(1))`.
//!   Monitor a supervisor to learn that it gave up.
//! * **Calls from outside a process.** [`ServerRef::call`](server::ServerRef::call)
//!   works from any async code, a tokio task or an axum handler, with the same
//!   timeout, `Noproc` and exit-reason errors; a call by name takes the runtime's
//!   [`Handle`] where a process would pass its `Context`
//!   (`NAME.call(&handle, Req::Get)`). [`Handle::spawn`] starts a process from any
//!   thread.
//!
//! ```
//! use std::time::Duration;
//! use otter::{Context, Runtime};
//!
//! let rt = Runtime::new();
//! let got = rt.block_on(|mut cx: Context<u32>| async move {
//!     cx.send_after(cx.pid(), 7, Duration::from_millis(5));
//!     // A receive raced against a timer, as `tokio::select!` would; `otter::timeout`
//!     // is the one-line form.
//!     otter::timeout(Duration::from_secs(1), cx.recv()).await
//! });
//! assert_eq!(got.unwrap(), Ok(7));
//! ```
//!
//! ## Monitors
//!
//! [`Context::monitor`] watches another process: when it exits, a [`Down`] with the
//! reason arrives as a message (the watcher's message type implements `From<Down>`).
//! Monitoring a process that is gone gives `Down` with [`ExitReason::Noproc`] at once;
//! [`Context::demonitor`] and [`Context::demonitor_flush`] stop a monitor.
//!
//! ## Links, exit signals and `trap_exit`
//!
//! [`Context::link`] / [`Context::spawn_link`] tie two processes together: when one
//! exits abnormally, the other exits with the same reason, unless it traps exits
//! ([`Context::trap_exit`]), in which case the signal arrives as an [`Exit`] message of
//! its own type (`M: From<Exit>`). [`Context::exit`] sends an exit signal; `Kill` cannot
//! be trapped and ends its target `Killed`. The rules, each one Erlang's, are in the
//! `signal` module's docs and tests (`tests/exit_signals.rs`, `tests/links.rs`).
//!
//! ```
//! use otter::{Context, Exit, ExitReason, Runtime};
//! enum Msg { Exit(Exit) }
//! impl From<Exit> for Msg { fn from(e: Exit) -> Msg { Msg::Exit(e) } }
//! let rt = Runtime::new();
//! let r = rt.block_on(|mut cx: Context<Msg>| async move {
//!     cx.trap_exit(true);
//!     cx.spawn_link(|_: Context<()>| async { ExitReason::Shutdown });
//!     let Msg::Exit(e) = cx.recv().await;
//!     e.reason
//! });
//! assert_eq!(r.unwrap(), ExitReason::Shutdown);
//! ```
//!
//! `#[derive(otter::Message)]` ([`Message`]) writes these `From<Exit>`, `From<Down>`
//! and `DownMessage` impls (and `From<Tcp>`, `From<BadTerm>`, `From<NodeEvent>`) for the
//! variants that hold them. [`macro@test`] and [`macro@main`] run an `async fn` as a
//! runtime's root process: `#[otter::test(workers = [1, 4])]` checks a test body on 1
//! and on 4 workers.
//!
//! ## Servers and supervisors
//!
//! [`server`] is `gen_server`, typed per request: a server's requests are one enum, and
//! each variant carries the [`ReplyTo`](server::ReplyTo) its answer goes through, so each
//! request has its own reply type, checked at compile time on both sides.
//! [`supervisor`] is OTP's supervisor: one_for_one, one_for_all, rest_for_one and
//! simple_one_for_one, restart types, restart intensity, shutdown timeouts, nesting.
//!
//! | Erlang/OTP | otter |
//! |---|---|
//! | `-behaviour(gen_server).` | `impl Server for Counter` |
//! | `handle_call(get, From, S) -> {reply, S, S}` | `Req::Get(from) => from.reply(self.0)` |
//! | `gen_server:reply(From, R)` later | keep `from`, call `from.reply(r)` later |
//! | `gen_server:start_link({local, counter}, counter, 10, [])` | `Counter::start_link_named(&cx, COUNTER, 10)` |
//! | `gen_server:call(Pid, get)` | `counter.call(Req::Get)` |
//! | `gen_server:call(counter, {add, 5})` (by name) | `COUNTER.call(&cx, \|r\| Req::Add(5, r))` |
//! | `gen_server:cast(Pid, {bump, 1})` | `counter.cast(1)` |
//! | `{counter, {counter, start_link, [10]}, permanent, 5000, worker, [counter]}` | `ChildSpec::named_server("counter", COUNTER, \|\| 10)` |
//! | `supervisor:stop(Sup)` | `sup.stop().await` |
//! | `sys:get_state(counter)`, `sys:replace_state(Pid, Fun)` | `sys::get_state(COUNTER.whereis(&cx))`, `sys::replace_state(counter, \|s\| ..)` ([`sys`]) |
//! | `sys:get_status/1`, `sys:suspend/1`, `sys:resume/1`, `sys:terminate/2` | `sys::get_status(s)`, `sys::suspend(s)`, `sys::resume(s)`, `sys::stop(s, reason, timeout)` |
//! | `sys:trace(Pid, true)`, `sys:statistics(Pid, true \| get)` | `sys::trace(s, true)` (`tracing`, target `otter::sys`), `sys::statistics(s, true)`, `sys::get_statistics(s)` |
//! | `sys:log(Pid, {true, N} \| get)`; `sys:get_status(Pid)` with only a pid | `sys::log(s, Some(n))`, `sys::get_log(s)`; `sys::get_status_of(&handle, pid)`, `sys::get_log_of(&handle, pid)` |
//! | `sys:get_state({counter, OtterNode})`, `gen_server:stop({counter, OtterNode})` from an Erlang shell | answered by a server registered with `Node::register_server` (`dist` docs, "System messages") |
//! | `DynamicSupervisor.start_child(Sup, Spec)` (typed) | `sup.start_server_child::<S>(ChildSpec::server::<S>(..))` |
//! | `supervisor:start_link({local, N}, ..)` as a child | `ChildSpec::named_supervisor(id, N, spec)` |
//! | `ranch:child_spec(Ref, ..)` | `AcceptorPool::child_spec(id, addr, n, handler)` |
//!
//! ```
//! use otter::server::{CallError, Flow, Name, ReplyTo, Server, ServerContext};
//! use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
//! use otter::{Context, ExitReason, Runtime};
//!
//! struct Counter(u64);
//!
//! /// The calls, each with its reply's type.
//! enum Req {
//!     Get(ReplyTo<u64>),
//!     Add(u64, ReplyTo<u64>),
//!     Crash(ReplyTo<()>),
//! }
//!
//! const COUNTER: Name<Counter> = Name::new("counter");
//!
//! impl Server for Counter {
//!     type Args = u64; // init's argument
//!     type Call = Req; // gen_server:call
//!     type Cast = u64; // gen_server:cast
//!     type Info = (); // other messages
//!
//!     async fn init(n: u64, _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
//!         Ok(Counter(n))
//!     }
//!     async fn handle_call(&mut self, request: Req, _: &mut ServerContext<Self>) -> Flow {
//!         match request {
//!             Req::Get(from) => from.reply(self.0),
//!             Req::Add(n, from) => {
//!                 self.0 += n;
//!                 from.reply(self.0)
//!             }
//!             Req::Crash(_) => panic!("asked to crash"),
//!         }
//!         Flow::Continue
//!     }
//!     async fn handle_cast(&mut self, n: u64, _: &mut ServerContext<Self>) -> Flow {
//!         self.0 += n;
//!         Flow::Continue
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let r = rt.block_on(|cx: Context<()>| async move {
//!     // A server of our own, linked: its typed ref comes back from the start.
//!     let mine = Counter::start_link(&cx, 0).await.unwrap();
//!     mine.cast(2);
//!     assert_eq!(mine.call(|r| Req::Add(3, r)).await, Ok(5));
//!
//!     // One under a supervisor, registered as "counter", called by name.
//!     let spec = SupervisorSpec::new(Strategy::OneForOne)
//!         .child(ChildSpec::named_server("counter", COUNTER, || 10));
//!     let sup = supervisor::start_link(&cx, spec).await.unwrap();
//!     assert_eq!(COUNTER.call(&cx, |r| Req::Add(1, r)).await, Ok(11));
//!     let crashed = COUNTER.call(&cx, Req::Crash).await;
//!     assert_eq!(crashed, Err(CallError::Exit(ExitReason::Panic("asked to crash".into()))));
//!     // The supervisor restarted it under its name (asking it waits for that).
//!     let again = sup.child::<Counter>("counter").await.unwrap();
//!     assert!(again.is_some());
//!     COUNTER.call(&cx, Req::Get).await // a fresh state
//! });
//! assert_eq!(r.unwrap(), Ok(10));
//! ```
//!
//! Calls time out (5 s by default, [`call_timeout`](server::ServerRef::call_timeout)),
//! fail with the server's exit reason if it dies first, or `Noproc` if there is no such
//! server, and never leave a late reply in the caller's mailbox. A timeout fires at its
//! deadline or a little after, never before; a process that computes without awaiting
//! on the caller's worker delays it by a few milliseconds (the watchdog's look, below),
//! as long as another worker or a spare thread is free to run the caller. `examples/bank.rs` puts
//! servers and a supervisor together (`cargo run --example bank`).
//!
//! [`statem`] is `gen_statem`: a server whose handler gets the current state with each
//! event and returns a [`Transition`](statem::Transition) (`next_state`, `keep_state`,
//! `repeat_state`, `stop`) with OTP's actions: replies, postponed events retried after a
//! change of state, inserted events, state enter calls, and state, event and named
//! timeouts. A running machine is a server to everything else (calls by ref or by name,
//! casts, supervisor children). `examples/door_lock.rs` is one with timeouts
//! (`cargo run --example door_lock`).
//!
//! ## Timers
//!
//! [`Context::sleep`], receive timeouts, [`Context::send_after`] (cancel with
//! [`TimerRef::cancel`]) and [`Context::send_interval`]: a hierarchical timing wheel
//! per worker (ERTS has one per scheduler), fired by one thread started by the first
//! timer; a process that uses no timer pays nothing. [`timeout`] bounds any wait (a socket's read, accept or connect, as
//! `gen_tcp`'s `Timeout` arguments do). A timer never fires early; its wheel counts whole
//! milliseconds and rounds a deadline up, so it fires up to a millisecond late (nearly
//! that for a timer set just after another fired, in step with the wheel's clock), plus
//! the timer thread's wake-up, plus however long its process then waits for a worker on
//! a busy runtime (tokio's timers round to the millisecond the same way).
//!
//! ## Names
//!
//! [`Context::register`] gives a process a name on its runtime, [`Context::whereis`] finds
//! it, [`Context::send_named`] sends to it, and the name is released when the process
//! exits (Erlang's `register/2`, `whereis/1`, `Name ! Msg`). Code that holds no
//! `Context` (a hyper service, a closure, another thread) does the same through the
//! runtime's [`Handle`] ([`Context::handle`], [`Handle::whereis`]).
//!
//! ```
//! use otter::{Context, Runtime};
//! let rt = Runtime::new();
//! let r = rt.block_on(|mut cx: Context<&'static str>| async move {
//!     cx.register("logger", cx.pid()).unwrap();
//!     cx.send_named("logger", "hello").unwrap();
//!     cx.recv().await
//! });
//! assert_eq!(r.unwrap(), "hello");
//! ```
//!
//! ## IO: processes that own sockets
//!
//! A process opens sockets and reads and writes them with `.await`, as an Erlang process
//! calls `gen_tcp`: the read suspends the process, never its worker ([`net`]). The
//! socket is a value the process owns, closed when the process exits however it exits;
//! hand it to another process by sending it (`controlling_process`; an active stream
//! with [`net::ActiveTcpStream::controlling_process`] first). Two ways to read:
//! passive ([`net::TcpStream::read`]), or active with flow control
//! ([`net::TcpStream::into_active`]: the data comes as [`net::Tcp`] messages in the
//! process's own mailbox, only as many as it asked for, so a slow process makes TCP hold
//! the peer back). [`net::start_acceptor_pool`] starts a listener with N acceptors under
//! a supervisor and one process per connection; [`blocking::spawn_blocking`] runs
//! blocking work (files, DNS, long computations) off the workers.
//!
//! A process that must hear both its socket and its mailbox (a connection that also
//! gets deliveries, heartbeats, idle timeouts) is what active mode is for, as in
//! Erlang: everything arrives as messages, and one receive waits for all of it. A
//! passive process can also wait for either with a `poll_fn` over `recv()` and
//! `readable()`: both are cancel-safe (a receive that did not complete took nothing;
//! a `readable` that did not complete consumed no data), so the one that loses the
//! race is dropped and made again next time. Socket operations take the process's
//! budget as receives do: a process whose socket is always ready still yields its
//! worker after a turn's worth of them.
//!
//! There is no IO thread: the workers poll the OS themselves (epoll, through `mio`), a
//! parking worker in the poll, busy ones between processes; a runtime that never opens
//! a socket has no reactor. `examples/kv.rs` is a key-value server with one process per
//! connection, to try with `nc`. With the feature `tokio`, `otter::compat::tokio` lets a
//! process await the futures of tokio-based libraries (hyper, reqwest, sqlx ...).
//!
//! ```
//! use otter::net::{Active, Tcp, TcpListener, TcpStream};
//! use otter::{Context, Runtime};
//! #[derive(Debug)]
//! enum Msg { Tcp(Tcp), Note(&'static str) }
//! impl From<Tcp> for Msg { fn from(t: Tcp) -> Msg { Msg::Tcp(t) } }
//! let rt = Runtime::new();
//! let r = rt.block_on(|mut cx: Context<Msg>| async move {
//!     let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     cx.spawn(move |_: Context<()>| async move {
//!         let mut c = TcpStream::connect(addr).await.unwrap();
//!         c.write_all(b"hello").await.unwrap();
//!     });
//!     let (stream, _) = listener.accept().await.unwrap();
//!     let _active = stream.into_active(&cx, Active::Once);
//!     cx.pid().send(Msg::Note("socket data and messages share the mailbox"));
//!     // Selective receive across both.
//!     match cx.recv_match(|m| matches!(m, Msg::Tcp(_))).await {
//!         Msg::Tcp(Tcp::Data(_, bytes)) => bytes,
//!         other => panic!("{other:?}"),
//!     }
//! });
//! assert_eq!(r.unwrap(), b"hello");
//! ```
//!
//! ## Distribution: an otter node in an Erlang cluster
//!
//! With the feature `dist`, a runtime becomes a node of an Erlang cluster over Erlang's
//! own distribution protocol ([`dist`]): a [`dist::Node`] registers in `epmd`, connects
//! with the cookie, and from then on a `Pid<M>` may name a process on another node,
//! Erlang or otter. Messages are serde types mapped to Erlang terms ([`dist::etf`]);
//! links, monitors and exit signals cross nodes with Erlang's rules, a lost connection
//! fires them with `Noconnection`; Erlang calls otter servers with `gen_server:call`
//! ([`dist::RemoteServer`]) and otter calls Erlang's ([`dist::Node::call`]). A local send
//! pays nothing for it: a remote pid is never found in the process table, and only the
//! send path's "no such process" branch looks further.
//!
//! `examples/dist_node.rs` is a node to talk to from a shell:
//!
//! ```text
//! $ cargo run --release --example dist_node -- --name otter@localhost --cookie secret
//! {"node":"otter@localhost","ready":true}
//!
//! $ erl -sname shell -setcookie secret
//! 1> net_adm:ping('otter@localhost').
//! pong
//! 2> {echo, 'otter@localhost'} ! {self(), hello}, flush().
//! Shell got {echo,hello}
//! 3> gen_server:call({kv, 'otter@localhost'}, {put, {user, 1}, <<"ada">>}).
//! ok
//! 4> gen_server:call({kv, 'otter@localhost'}, {get, {user, 1}}).
//! {ok,<<"ada">>}
//! ```
//!
//! Erlang distribution is not encrypted and the cookie is its only authentication: run
//! it on a trusted network or through a tunnel (see [`dist`], "Security").
//!
//! ## Scheduler
//!
//! One worker thread per core (see [`Builder::threads`]), each with a local run queue and
//! a LIFO slot for the process just woken by a message; a global injector for work from
//! outside; idle workers steal half of a busy worker's queue, and when there is nothing
//! they spin while another worker runs (no longer than they were busy before, and
//! offering their core to the OS every few µs, so that a program beside them, an Erlang
//! node say, is not held up), then park, in the OS's poll when sockets are in use: an
//! idle runtime uses no CPU, and a server at partial load about what tokio's does
//! ([`Builder::busy_wait`] spins longer, as the BEAM's schedulers busy-wait). A runnable process never waits for a timer tick while a worker
//! is idle. Each turn of a process has a budget (128 units) for receives, sends, spawns
//! and socket operations, one unit each, as the BEAM charges reductions for them; a
//! process whose budget is spent yields at its next receive, socket operation,
//! [`Context::send`] or [`Context::consume_budget`], if anything else waits for its
//! worker (else the turn is renewed in place). [`Pid::send`] and [`Context::spawn`] take
//! their unit but never yield: they are not `async`. So a loop that sends or spawns
//! without awaiting anything else awaits [`Context::send`] (or [`Context::consume_budget`]
//! after each spawn), and its receivers and children run in between, as on the BEAM;
//! with plain sends it holds its worker until it ends and queues every message first.
//! Processes are
//! not preempted in the middle of a computation, as on the BEAM: a process that
//! computes for long (or blocks its thread in a system call) holds its worker, but the
//! processes queued behind it are handed to the other workers, and once it has held
//! its worker for a watchdog period (5 ms) or more, a spare thread takes that worker's
//! place until its poll ends, so the other processes keep as many workers as before
//! and the OS shares the cores among the threads (Go's runtime does the same for a
//! thread blocked in a system call).
//!
//! ## OS signals and stopping in order
//!
//! [`os_signal::notify`] delivers the OS signals a process subscribes to (`SIGTERM`,
//! `SIGINT`, `SIGHUP`, ...) as [`OsSignal`] messages, as Erlang's `os:set_signal/2`
//! does; a signal nobody is subscribed to takes its default action.
//! [`os_signal::stop_on_signal`] is `init:stop/0` for one tree: on `SIGTERM` (or the
//! signals given) it stops the top supervisor in order, children in reverse start
//! order, each by its shutdown, within a deadline, and returns to the caller. An
//! acceptor pool stops gracefully ([`net::AcceptorPool::graceful_stop`],
//! [`net::AcceptorPool::child_spec_with_drain`]): it stops accepting at once and lets
//! its connections finish until a deadline, as axum's `with_graceful_shutdown` does.
//!
//! ## Operating a node
//!
//! What an Erlang operator reads with `observer`, `recon` and `sys`, otter gives from
//! Rust, always on and without stopping the node:
//!
//! * **A process**: [`Handle::process_info`] (`process_info/1`): its name, kind
//!   (process, server, statem, supervisor, acceptor, connection), status, queue
//!   length, messages received, polls (its reductions), memory, links, monitors held,
//!   monitored-by, `trap_exit`, parent, supervisor, spawn time and restarts. `None` for
//!   a pid that names no live process, never a panic.
//! * **Every process**: [`Handle::processes`] walks the process table in windows while
//!   the workers run (a million idle processes in well under a second): sort it for a
//!   `recon:proc_count`-style top list, as below.
//! * **The runtime and its workers**: [`Handle::runtime_info`]: processes, spawns, exits
//!   by reason kind, sends to dead pids; per worker its polls, busy time, steals and
//!   parks.
//! * **A server, state machine or supervisor from inside**: [`sys`] (`get_state`,
//!   `replace_state`, `get_status`, `statistics`, `suspend`/`resume`, `trace`, `stop`),
//!   through system messages as OTP's; a supervisor's children with
//!   [`SupervisorRef::which_children`](supervisor::SupervisorRef::which_children).
//!   Erlang's shell reaches them on an otter node too (`sys:get_state({Name, Node})`,
//!   `gen_server:stop/1`, `supervisor:which_children({Name, Node})`; see [`dist`]).
//! * **Metrics** (feature `metrics`): `otter::metrics::Publisher` sets the runtime's
//!   counters in the `metrics` facade on a timer, for Prometheus or any other exporter
//!   (`examples/metrics_prometheus.rs`).
//! * **A live page** (feature `dashboard`): [`dashboard::Dashboard`](crate::dashboard)
//!   serves the supervision tree, the top processes, a process's detail, stuck
//!   processes, deadlocks and the workers' load to a browser, from the node's own
//!   processes.
//! * **Stuck and deadlocked**: [`Handle::stuck`] names a process inside one long poll
//!   (seen within 5 ms of the threshold), [`Handle::deadlocks`] the servers that call
//!   each other in a cycle.
//! * **Reports**: crashes, supervisor reports and progress reports as `tracing` events
//!   with SASL's content ([`report`]); install `tracing_subscriber::fmt` and the log
//!   reads as OTP's, one line per crash.
//!
//! Reading costs the node nothing while nobody reads: every counter has one writer and
//! no message pays an atomic read-modify-write or a clock read for it
//! ([`introspect`], "Always on, and cheap").
//!
//! ```
//! use otter::{Context, Runtime};
//!
//! let rt = Runtime::new();
//! let h = rt.handle();
//! let top = rt
//!     .block_on(move |mut cx: Context<()>| async move {
//!         // Three processes that do not read their mail, each sent a different amount.
//!         for n in 1..=3u32 {
//!             let pid = cx.spawn(|mut c: Context<u32>| async move {
//!                 c.sleep(std::time::Duration::from_secs(60)).await;
//!             });
//!             for i in 0..n * 10 {
//!                 pid.send(i);
//!             }
//!         }
//!         // The two longest queues, as `recon:proc_count(message_queue_len, 2)`.
//!         let mut all: Vec<_> = h.processes().collect();
//!         all.sort_by_key(|p| std::cmp::Reverse(p.message_queue_len));
//!         let top: Vec<usize> = all.iter().take(2).map(|p| p.message_queue_len).collect();
//!         top
//!     })
//!     .unwrap();
//! assert_eq!(top, [30, 20]);
//! ```
//!
//! ## Memory and the allocator
//!
//! Each process is one allocation (its control block, mailbox head and future); a
//! mailbox allocates a block of 31 message slots when it first fills one and then
//! recycles its blocks, so steady message traffic allocates nothing. A process is often
//! spawned on one worker and freed on another: with glibc's `malloc` that serialises the
//! two threads on an arena lock. otter leaves the global allocator to the application;
//! its benchmark harness runs on `mimalloc`, and a spawn-heavy service should use it or
//! `jemalloc` too (the BEAM brings its own allocators for the same reason).
//!
//! ## Simulation: every ordering, replayed from a seed
//!
//! [`sim::Simulation`] runs a program (its processes, servers, supervisors, timers,
//! sockets and distribution nodes, unchanged) on one thread under a scheduler that
//! picks the next process from a seed, on a simulated clock that jumps to the next
//! timer, over a simulated network with latency, partitions, resets and node crashes.
//! [`sim::sweep`] runs a test over many seeds and names the seed of a failure, which
//! replays it exactly. The module's docs go from a failing seed to the bug.
//!
//! ```
//! use otter::Context;
//! otter::sim::sweep(0..50, |sim| {
//!     let n = sim
//!         .block_on(|mut cx: Context<u32>| async move {
//!             let me = cx.pid();
//!             for i in 0..3 {
//!                 cx.spawn(move |_: Context<()>| async move { me.send(i) });
//!             }
//!             cx.recv().await + cx.recv().await + cx.recv().await
//!         })
//!         .unwrap();
//!     assert_eq!(n, 3); // Whatever the order.
//! });
//! ```
//!
//! ## Differences from Erlang
//!
//! * Mailboxes are typed: a [`Pid<M>`] takes only `M`. Define an enum for a protocol.
//! * A process that spawns two children in one turn has the second run newest first, so
//!   a fork-join tree is walked depth-first; the BEAM queues every spawn at the back of
//!   its run queue and walks such a tree breadth-first (`forkjoin`: about 650 MB on the
//!   BEAM, a few MB on otter).
//! * Pids print as `<0.Index.Generation>`; the generation makes a stale pid never reach
//!   a newer process in the same table slot (for 2^32 reuses of the slot).
//! * No preemption inside a poll: a process yields at `.await` points (a receive whose
//!   budget is spent yields by itself). A poll that holds its worker for 5 ms gets a
//!   spare thread in the worker's place, started by the runtime's watchdog thread (at
//!   most one per worker, so a runtime of `n` workers has at most `2n` threads running
//!   processes), unless it is a long send loop (its receivers are handed on by its
//!   spills); once the spares are held too, the rest waits, as it would on a BEAM
//!   whose schedulers all ran NIFs that never return.
//! * A plain [`Pid::send`] or [`Context::spawn`] takes a unit of the turn's budget but
//!   cannot yield (it is not `async`); the BEAM yields inside `!` and `spawn`. A loop of
//!   them awaits [`Context::send`] or [`Context::consume_budget`] to yield as the BEAM's.
//! * [`Pid::message_queue_len`] is an estimate that may count messages taken while it
//!   reads, and counts the queue only, not what a selective receive left aside;
//!   Erlang's `process_info(Pid, message_queue_len)` is exact. A process's own
//!   [`Context::message_queue_len`] is exact, as Erlang's.
//! * [`introspect`]'s `process_info` has no `current_function`; its reductions are
//!   polls; its `monitors` leave out a call's monitor of its server; the spawn time is
//!   coarse, to about 5 ms.
//! * A [`Context`] may be moved out of its process (it is `Send`), but receives there are
//!   not woken by new messages: polled again, they take what has arrived.
//! * A [`Context`] is `Send` but not `Sync`: an `async fn` helper that holds it across
//!   an `.await` takes `&mut Context<M>` (or the `Context` itself), not `&Context<M>`,
//!   whose future would not be `Send` (the compiler then speaks of a `NonNull<Header>`
//!   that "cannot be shared between threads safely").
//! * [`Context::recv_key`] has no Erlang counterpart (the BEAM's closest is the
//!   receive-marker optimisation for fresh references).
//! * Names are per runtime (Erlang: per node) and typed: [`Context::whereis`] finds a
//!   name only under the message type it was registered with.
//! * A `Down` is an ordinary message of the watcher's type (`M: From<Down>`), not a
//!   separate kind of signal.
//! * A trapped exit is an ordinary message of the process's type (`M: From<Exit>`).
//! * An exit signal ends its target at the target's next suspension point (an `.await`
//!   that waits, or a receive that spends its budget), not in the middle of a
//!   computation; sent to oneself likewise.
//! * `link` to a process that does not exist sends the caller the exit signal `noproc`
//!   (trapped: an `Exit` message; otherwise it exits), where Erlang's `link/1` raises.
//! * Servers: typed requests, each with its own reply type (the `ReplyTo` it carries),
//!   `async` handlers, `ReplyTo` consumed by the reply, typed names (`Name<S>`), init's
//!   `Err` follows OTP 26's `{error, Reason}` (the server exits `normal`);
//!   no `code_change`, hibernation or handler timeouts (use [`Context::send_after`]).
//!   See the [`server`] module.
//! * Supervisors: simple_one_for_one children are started from a full child spec (the
//!   arguments captured in its closure); no `ignore`, no significant children, no
//!   logging. See the [`supervisor`] module.
//! * A [`Context::send_after`] timer aimed at a remote process runs to its deadline
//!   whatever happens to that process (a local destination's exit cancels it, as in
//!   Erlang); a [`Context::send_interval`] to a remote process ends at the first tick
//!   after its connection is gone.
//! * A monitor set by a process that exits stays on the watched process until that
//!   process's watchers next double (then every watcher whose owner has exited is
//!   dropped) or it exits; Erlang removes it at once. No `Down` reaches anyone either
//!   way; the memory of a server monitored by many short-lived clients stays within
//!   about twice its live monitors.
//! * Idle workers do not busy-wait by default (the BEAM's schedulers do, `+sbwt
//!   medium`): a worker spins only while another one runs, no longer than it was busy;
//!   [`Builder::busy_wait`] is the `+sbwt` setting.
#![cfg_attr(loom, allow(dead_code, unused_imports))]
// docs.rs builds with `--cfg docsrs` on nightly: feature-gated items get their badge.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's Rust example, run as a doctest (only when doctests are collected: the
/// published package's build never reads the file).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

#[cfg(target_pointer_width = "32")]
compile_error!("otter packs a pid into a waker's data pointer and needs 64-bit pointers");

pub(crate) mod loom;

#[cfg(not(loom))]
pub mod blocking;
#[cfg(all(feature = "tokio", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod compat;
mod coop;
#[cfg(all(feature = "dashboard", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
#[cfg(all(feature = "dist", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "dist")))]
pub mod dist;
#[cfg(not(loom))]
mod error;
#[cfg(not(loom))]
mod exit;
#[cfg(not(loom))]
pub mod introspect;
#[cfg(not(loom))]
mod io;
#[cfg(not(loom))]
pub mod mailbox;
#[cfg(loom)]
pub mod mailbox {
    //! Only the lock-free queue and the bound word are built for the loom models.
    pub(crate) mod queue;
    pub(crate) mod bound {
        pub(crate) mod word;
    }
}
#[cfg(all(feature = "metrics", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
#[cfg(not(loom))]
mod monitor;
#[cfg(not(loom))]
mod pid;
#[cfg(not(loom))]
mod process;
#[cfg(loom)]
mod process {
    pub(crate) mod gate;
    pub(crate) mod state;
    pub(crate) mod table;
}
#[cfg(not(loom))]
pub mod net;
#[cfg(all(unix, not(loom)))]
pub mod os_signal;
#[cfg(not(loom))]
mod registry;
#[cfg(not(loom))]
mod remote;
#[cfg(not(loom))]
mod runtime;
#[cfg(not(loom))]
mod scheduler;
#[cfg(not(loom))]
pub mod server;
#[cfg(loom)]
mod server {
    //! Only the reply slot's outcome cell is built for the loom models.
    pub(crate) mod reply {
        pub(crate) mod outcome;
    }
}
#[cfg(not(loom))]
pub mod report;
#[cfg(not(loom))]
mod signal;
#[cfg(not(loom))]
pub mod statem;
#[cfg(not(loom))]
pub mod supervisor;
#[cfg(loom)]
mod scheduler {
    pub(crate) mod doze;
    pub(crate) mod park;
    pub(crate) mod queue;
}
#[cfg(not(loom))]
mod rng;
#[cfg(not(loom))]
pub mod sim;
#[cfg(not(loom))]
pub mod sys;
#[cfg(not(loom))]
pub mod time;
#[cfg(not(loom))]
mod timer;
#[cfg(loom)]
mod timer {
    pub(crate) mod alarm;
    pub(crate) mod shard;
    pub(crate) mod wheel;
}
mod tuning;
mod unwind;

#[cfg(not(loom))]
pub use error::{BuildError, SendError, TrySendError};
#[cfg(not(loom))]
pub use exit::{ErrorReason, ExitReason, IntoExitReason};
#[cfg(not(loom))]
pub use mailbox::Keyed;
#[cfg(not(loom))]
pub use monitor::{Down, DownMessage, MonitorRef};
#[cfg(all(unix, not(loom)))]
pub use os_signal::OsSignal;
#[cfg(not(loom))]
pub use otter_macros::{Message, main, test};
#[cfg(not(loom))]
pub use pid::{Pid, ProcessId};
#[cfg(not(loom))]
pub use process::receive::{Recv, RecvKey};
#[cfg(not(loom))]
pub use process::{ConsumeBudget, Context, Sending, SpawnOptions, TimerRef, YieldNow};
#[cfg(not(loom))]
pub use registry::RegisterError;
#[cfg(not(loom))]
pub use runtime::{Builder, Handle, Runtime};
#[cfg(not(loom))]
pub use signal::Exit;
#[cfg(not(loom))]
pub use timer::interval::IntervalRef;
#[cfg(not(loom))]
pub use timer::{Elapsed, Sleep, timeout};

/// Entry points for the loom models in `tests/loom_*.rs` (built only under `cfg(loom)`).
#[cfg(loom)]
#[doc(hidden)]
pub mod __loom {
    pub use crate::mailbox::bound::word::{closed, drained, flag_waiting, is_full};
    pub use crate::mailbox::queue::{Queue, TryPopError};
    pub use crate::process::gate::{Closed, Gate};
    pub use crate::process::state::{State, TransitionToIdle, TransitionToScheduled};
    pub use crate::process::table::{SlotWord, TransitionToReleased};
    pub use crate::scheduler::doze::Doze;
    pub use crate::scheduler::park::Idle;
    pub use crate::scheduler::queue::{Item, LifoSlot, Local};
    pub use crate::server::reply::outcome::{Answer, OutcomeCell};
    pub use crate::timer::alarm::Alarm;
    pub use crate::timer::shard::{NEVER, Shard};
}
