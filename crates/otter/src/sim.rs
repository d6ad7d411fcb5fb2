//! Deterministic simulation: an otter system run on one thread, its processes chosen by a
//! seeded random number generator and its clock simulated, so that any run can be
//! replayed exactly from its seed.
//!
//! The bugs that hurt actor systems are orderings: a `Down` before a reply, a restart
//! racing a call, a timeout firing just as the answer comes. On the normal runtime such
//! an ordering shows once in a thousand runs and never under a debugger. A
//! [`Simulation`] runs the same program (the same `Context`, servers, supervisors,
//! timers) under a scheduler that, whenever several processes can run, picks the next
//! one from its seed; a sweep over many seeds explores many orderings, and the seed of a
//! failing run replays it step by step.
//!
//! ```
//! use std::time::Duration;
//! use otter::Context;
//! use otter::sim::Simulation;
//!
//! let mut sim = Simulation::new(7);
//! let r = sim.block_on(|mut cx: Context<u32>| async move {
//!     let me = cx.pid();
//!     cx.spawn(move |_: Context<()>| async move { me.send(1) });
//!     cx.send_after(me, 2, Duration::from_secs(3600));
//!     cx.recv().await + cx.recv().await
//! });
//! assert_eq!(r, Ok(3));
//! // An hour went by on the simulated clock, in microseconds of real time.
//! assert!(sim.elapsed() >= Duration::from_secs(3600));
//! ```
//!
//! # What a simulation controls
//!
//! * **Which process runs next.** The simulation's runtime has one worker, the thread
//!   that calls the simulation's methods. Before each turn it gathers every runnable
//!   process (woken, spawned, yielded, or woken by a timer) and picks one with its
//!   random number generator. A turn is one poll, as on the normal runtime: a process
//!   runs until it waits or its budget is spent, and a spent budget always yields (the
//!   normal runtime renews a lone process's turn in place). The LIFO slot, the spawn
//!   stack and batching shape only what is runnable, never the choice.
//! * **Time.** [`otter::time::now`](crate::time::now), every receive timeout, `sleep`,
//!   `send_after`, interval, call timeout and supervisor intensity window read the
//!   simulated clock, which starts at [`Simulation::start`] and moves only when no
//!   process can run: then it jumps to the earliest timer and fires it. A simulated
//!   hour of a system that mostly sleeps costs as many steps as it has timers.
//! * **Blocking jobs** (`spawn_blocking`) run at once, inside the poll that submits
//!   them.
//! * **The network.** A simulation has one node (a runtime, with its own registry and
//!   its own address and host name) or several ([`Simulation::add_node`]). Their
//!   [`TcpListener`](crate::net::TcpListener)s, [`TcpStream`](crate::net::TcpStream)s
//!   and [`UdpSocket`](crate::net::UdpSocket)s, the acceptor pools and active sockets
//!   over them, and the distribution between nodes (`otter::dist`, its handshake,
//!   ticks and `epmd` included), run over an in-memory network with latency
//!   ([`Simulation::set_latency`]), datagram loss ([`Simulation::set_loss`]), partitions
//!   ([`Simulation::partition`], [`Simulation::heal`]), resets ([`Simulation::reset`])
//!   and node crashes and restarts ([`Simulation::crash`], [`Simulation::restart`]);
//!   its model is in `io/network.rs`'s docs.
//!
//! What it promises is what the runtime promises: messages from one process to another
//! arrive in the order sent, and so do the signals of a pair; everything else is the
//! seed's choice.
//!
//! # What it does not control
//!
//! Code that reads `Instant::now()` or `SystemTime::now()` itself, starts OS threads or
//! blocks the thread escapes the simulation, and a run that does is no longer a
//! function of its seed (below, "Keeping a program inside the simulation"). IPv6
//! addresses are refused (`ErrorKind::Unsupported`): the network's are IPv4.
//!
//! # From a failing seed to the bug
//!
//! A sweep runs a test for each seed of a range; the first that panics stops the sweep
//! with a panic that names its seed and lists its last turns. Take the planted bug of
//! `tests/sim_finds_bugs.rs`: a teller asks account `a` for a withdrawal, starts a
//! worker for the deposit into `b`, and when the worker is down takes a missing
//! confirmation from `a` as a failed withdrawal, and refunds it. On the normal runtime
//! `a` always runs before the worker ends, and the test passes every time. The sweep:
//!
//! ```text
//! otter::sim::sweep(0..1000, bank);
//!
//! otter::sim: seed 1 failed after 23 steps, at 1ms of simulated time: money was created
//! replay it alone with OTTER_SIM_SEED=1; its last turns:
//!   step 9 at 0ns: process #4 <0.35.0> on node 0
//!   step 10 at 0ns: process #0 <0.32.0> on node 0
//!   ...
//! ```
//!
//! 1. **Replay it alone.** `OTTER_SIM_SEED=1 cargo test bank -- --nocapture` runs only
//!    seed 1 in every sweep, and fails the same way every time: same turns, same
//!    [`trace_hash`](Simulation::trace_hash). (A value that is not a seed is one line on
//!    standard error and exit status 2.)
//! 2. **Read the turns.** Processes are named by spawn order (`#0` is the first
//!    spawned, the root of `block_on`), the same in every run of the seed, so `#4`
//!    means the same process each time; pids are printed too.
//! 3. **Step through it.** In a test of its own, build `Simulation::new(1)` and run the
//!    program with [`step`](Simulation::step) instead of `block_on`, printing
//!    [`history`](Simulation::history) as it goes and looking at processes with
//!    [`process_info`](Simulation::process_info) (status, mailbox length, links,
//!    monitors) and [`processes`](Simulation::processes). Nothing moves between two
//!    steps: not the clock, not the network.
//! 4. **Read the ordering.** Here the worker's `Down` reaches the teller before `a`
//!    has run at all: two messages from two processes, which nothing orders (Erlang's
//!    guarantee is per pair). The fix waits for the confirmation itself.
//! 5. **Keep the seed.** The failing seed becomes a regression test of its own
//!    (`Config::new().build(1)`), and the sweep goes on over the whole range.
//!
//! For bugs that need several specific orderings at once, sweep with
//! [`Scheduling::Pct`] (probabilistic concurrency testing), which finds a bug of depth
//! `d` with a known probability per run. Faults come from the seed too: the test draws
//! them with [`Simulation::random`] (which process to kill, when to partition, for how
//! long), and [`buggify`] sites in the program's own code take their rare path in some
//! runs. `tests/sim_election.rs` sweeps a leader election over the distribution with a
//! partition drawn from the seed; `tests/sim_kv.rs` the `kv` example under store
//! crashes and partitions, over TCP.
//!
//! ```
//! use otter::Context;
//! use otter::sim::{Config, Scheduling, Simulation};
//!
//! // A program with a race: two senders, and a receiver that assumes an order.
//! fn racy(sim: &mut Simulation) -> Vec<&'static str> {
//!     sim.block_on(|mut cx: Context<&'static str>| async move {
//!         let me = cx.pid();
//!         cx.spawn(move |_: Context<()>| async move { me.send("first") });
//!         cx.spawn(move |_: Context<()>| async move { me.send("second") });
//!         vec![cx.recv().await, cx.recv().await]
//!     })
//!     .unwrap()
//! }
//! // Some seed shows the other order; its run replays exactly.
//! let seed = (0..100)
//!     .find(|&s| racy(&mut Simulation::new(s))[0] == "second")
//!     .unwrap();
//! let mut a = Simulation::new(seed);
//! let mut b = Simulation::new(seed);
//! assert_eq!(racy(&mut a), racy(&mut b));
//! assert_eq!(a.trace_hash(), b.trace_hash());
//! // PCT's choices replay the same way.
//! let pct = Config::new().scheduling(Scheduling::Pct { depth: 2, steps: 20 });
//! pct.check(seed, |sim| drop(racy(sim)));
//! ```
//!
//! # Several nodes
//!
//! ```
//! use std::time::Duration;
//! use otter::Context;
//! use otter::net::{TcpListener, TcpStream};
//! use otter::sim::Simulation;
//!
//! let mut sim = Simulation::new(5);
//! let server = sim.add_node("server");
//! sim.spawn_on(server, |_: Context<()>| async move {
//!     let l = TcpListener::bind("0.0.0.0:80".parse().unwrap()).unwrap();
//!     let (mut s, _) = l.accept().await.unwrap();
//!     s.write_all(b"hi").await.unwrap();
//! });
//! sim.run_until_idle(); // The server listens.
//! let got = sim.block_on(|_: Context<()>| async move {
//!     let mut s = TcpStream::connect_host("server:80").await.unwrap();
//!     let mut buf = [0u8; 2];
//!     s.read_exact(&mut buf).await.unwrap();
//!     buf
//! });
//! assert_eq!(&got.unwrap(), b"hi");
//! ```
//!
//! A distribution node started on a simulated node's [`Handle`]
//! (`Node::builder("app@server").start(&sim.handle_on(server))`) registers with that
//! host's simulated port mapper and connects over the simulated network: its peers
//! are the other nodes' (`tests/sim_dist.rs`). A crash
//! ([`Simulation::crash`]) ends every process of the node and closes its sockets, so
//! the others' links and monitors to it hear `Noconnection` and their `monitor_node`
//! a `nodedown`; a partition that outlasts the tick time does the same through the
//! ticks.
//!
//! # Keeping a program inside the simulation
//!
//! What a simulation cannot see, it cannot replay: the OS clock read directly, a
//! thread of the program's own, a blocking call. [`check`] runs a seed twice and
//! compares the traces; in a debug build (a test's), a wake-up or a spawn from another
//! thread fails the run with the thread's name; a turn that holds the thread for
//! seconds of real time is named on standard error. To forbid the clock and the thread's sleep in a crate, `clippy.toml`:
//!
//! ```toml
//! disallowed-methods = [
//!     { path = "std::time::Instant::now", reason = "otter::time::now() is simulated" },
//!     { path = "std::thread::sleep", reason = "cx.sleep() is simulated" },
//! ]
//! ```
//!
//! # Rules
//!
//! * A simulation's processes run only inside its methods, on the calling thread, which
//!   is the runtime's worker 0 for that call's length: the thread's clock is the
//!   simulated one then, and only then (`time.rs`).
//! * The trace is the sequence of turns, each named by its process's spawn order in
//!   this simulation (pids themselves come from the table every runtime of the OS
//!   process shares, and are not reproducible), and of the clock's jumps. Two runs
//!   with the same seed and the same program have the same trace.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Context;
use crate::exit::{ExitReason, IntoExitReason};
use crate::io::network::Network;
use crate::pid::{Pid, ProcessId, RawPid};
use crate::runtime::Handle;

mod config;
mod driver;
mod fault;
pub(crate) mod nodes;
mod pick;
mod sweep;

pub use config::Config;
pub use fault::buggify;
pub use nodes::NodeId;
pub use pick::Scheduling;
pub use sweep::{SEED_VAR, check, sweep};

use crate::rng::{self, Rng};
use crate::runtime::root::{Root, RootSlot};
use pick::Picker;

/// How many of the last turns a simulation keeps ([`Simulation::history`]).
const HISTORY: usize = 64;

/// An otter system under simulation (module docs): its nodes' processes chosen by a
/// seed, time simulated, everything run on the calling thread inside its methods.
/// Made by [`Simulation::new`] or [`Config::build`]; not `Send`: it stays on the thread
/// that steps it.
pub struct Simulation {
    nodes: Vec<nodes::Slot>,
    net: Arc<Network>,
    start: Instant,
    /// The node whose worker this thread is, inside a method (`driver.rs`).
    on: Option<usize>,
    seed: u64,
    /// The scheduling choices' numbers.
    rng: Rng,
    picker: Picker,
    /// The numbers of a test's own scripted faults ([`Simulation::random`]): a stream
    /// apart, so that a script that draws more does not change the scheduling.
    script: Rng,
    /// The buggify sites' state, lent to the thread while it steps (`fault.rs`).
    sites: Option<Rc<RefCell<fault::Sites>>>,
    /// Every runnable process gathered so far, in the order found.
    ready: Vec<driver::Ready>,
    /// The simulated clock, in milliseconds since [`Simulation::start`].
    now_ms: u64,
    steps: u64,
    trace: u64,
    /// Each process's spawn order in this simulation, by pid word (the trace's names).
    ordinals: HashMap<u64, u64>,
    history: VecDeque<Turn>,
    time_limit: Duration,
    /// A turn held the thread long in real time, and it was said (`driver.rs`).
    warned: bool,
    _one_thread: PhantomData<*const ()>,
}

impl fmt::Debug for Simulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulation")
            .field("seed", &self.seed)
            .field("nodes", &self.nodes.len())
            .field("elapsed", &self.elapsed())
            .field("steps", &self.steps)
            .field("runnable", &self.ready.len())
            .finish()
    }
}

/// One turn of a simulation ([`Simulation::history`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// Its number, from 0.
    pub step: u64,
    /// The simulated time it ran at.
    pub at: Duration,
    /// The node it ran on.
    pub node: NodeId,
    /// The process that ran, by spawn order in this simulation (the trace's name for
    /// it: the same in every run of the seed).
    pub process: u64,
    /// Its pid in this run.
    pub pid: ProcessId,
}

impl fmt::Display for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} at {:?}: process #{} {} on node {}",
            self.step, self.at, self.process, self.pid, self.node.0
        )
    }
}

/// Why [`Simulation::block_on`] has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// The root process exited without a value: it panicked or was killed.
    Exited(ExitReason),
    /// No process could run and nothing was pending (a timer, bytes in flight), with
    /// the root still waiting: every process waits for a message nobody will send.
    Stuck {
        /// The simulated time when it stopped.
        elapsed: Duration,
    },
    /// The simulated clock passed its limit ([`Config::time_limit`]) before the root
    /// finished: something keeps timers going (an interval, a retry loop).
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Exited(r) => write!(f, "the root process exited: {r:?}"),
            SimError::Stuck { elapsed } => write!(
                f,
                "stuck at {elapsed:?}: no process can run and nothing is pending"
            ),
            SimError::TimeLimit { limit } => {
                write!(f, "the simulated clock passed its limit of {limit:?}")
            }
        }
    }
}

impl std::error::Error for SimError {}

impl Simulation {
    /// A simulation whose choices all come from `seed`, with the default [`Config`]:
    /// one node, `node0`.
    ///
    /// ```
    /// let sim = otter::sim::Simulation::new(42);
    /// assert_eq!(sim.seed(), 42);
    /// assert_eq!(sim.elapsed(), std::time::Duration::ZERO);
    /// ```
    pub fn new(seed: u64) -> Simulation {
        Config::default().build(seed)
    }

    /// `config`'s simulation from `seed` (`Config::build`).
    fn with(config: &Config, seed: u64) -> Simulation {
        crate::unwind::install_panic_hook();
        // Four streams from one seed: scheduling, the test's script, buggify, the
        // network's delays.
        let mut rng = Rng::new(seed);
        let script = Rng::new(rng.next());
        let sites = fault::Sites::new(Rng::new(rng.next()), config.buggify);
        let net = Network::new(rng.next());
        let trace = rng.next();
        let picker = Picker::new(config.scheduling, &mut rng);
        let mut sim = Simulation {
            nodes: Vec::new(),
            net,
            start: Instant::now(),
            on: None,
            seed,
            rng,
            picker,
            script,
            sites,
            ready: Vec::new(),
            now_ms: 0,
            steps: 0,
            trace,
            ordinals: HashMap::new(),
            history: VecDeque::with_capacity(HISTORY),
            time_limit: config.time_limit,
            warned: false,
            _one_thread: PhantomData,
        };
        sim.add_node("node0");
        sim
    }

    /// The seed it was made from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The instant the simulated clock started at.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// The simulated clock: what `otter::time::now()` reads in its processes.
    pub fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    /// Simulated time since the start.
    pub fn elapsed(&self) -> Duration {
        Duration::from_millis(self.now_ms)
    }

    /// Turns run so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// A hash of the trace so far (module docs, "Rules"): equal for two runs of one
    /// program from one seed.
    pub fn trace_hash(&self) -> u64 {
        self.trace
    }

    /// The last turns run (at most 64), oldest first: where a failure came from.
    pub fn history(&self) -> Vec<Turn> {
        self.history.iter().copied().collect()
    }

    /// How many times a [`buggify`] site fired so far.
    pub fn buggified(&self) -> u64 {
        self.sites.as_ref().map_or(0, |s| s.borrow().fired)
    }

    /// A number drawn from the seed, for a test's scripted faults (which process to
    /// kill, when to): the same in every run of the seed, and drawn from a stream of
    /// its own, so that drawing does not change the scheduling.
    pub fn random(&mut self) -> u64 {
        self.script.next()
    }

    /// The live processes of the simulation, on every node, in spawn order.
    pub fn processes(&mut self) -> Vec<ProcessId> {
        self.gather();
        let mut live: Vec<(u64, u64)> = self
            .ordinals
            .iter()
            .filter(|(w, _)| crate::process::cell::is_alive(RawPid::from_word(**w)))
            .map(|(&w, &o)| (o, w))
            .collect();
        live.sort_unstable();
        live.into_iter()
            .map(|(_, w)| ProcessId(RawPid::from_word(w)))
            .collect()
    }

    /// What `pid` is doing, on whichever node it runs: its status, its mailbox's
    /// length (`message_queue_len`), its links and monitors ([`Handle::process_info`]).
    /// `None` once it has exited.
    ///
    /// ```
    /// use otter::Context;
    /// let mut sim = otter::sim::Simulation::new(3);
    /// let pid = sim.spawn(|mut cx: Context<u8>| async move {
    ///     cx.recv_match(|m| *m == 0).await;
    /// });
    /// pid.send(1);
    /// pid.send(2);
    /// sim.run_until_idle();
    /// assert_eq!(sim.process_info(pid).unwrap().message_queue_len, 2);
    /// ```
    pub fn process_info(
        &self,
        pid: impl Into<ProcessId>,
    ) -> Option<crate::introspect::ProcessInfo> {
        let pid = pid.into();
        self.nodes
            .iter()
            .filter_map(|n| n.shared.as_ref())
            .find_map(|s| Handle::of(s.clone()).process_info(pid))
    }

    /// Kills `pid` (the exit signal `Kill`, from outside any process); it takes effect
    /// when the simulation next steps.
    pub fn kill(&self, pid: impl Into<ProcessId>) {
        self.handle().exit(pid, ExitReason::Kill);
    }

    /// A [`Handle`] on the first node's runtime: names, exit signals, spawns. What it
    /// spawns runs when the simulation next steps. Used from another thread, it makes
    /// the simulation fail in a debug build (module docs, "Keeping a program inside
    /// the simulation").
    pub fn handle(&self) -> Handle {
        self.handle_on(NodeId(0))
    }

    /// Spawns a process on the first node, running `f`'s future; it runs when the
    /// simulation next steps.
    pub fn spawn<M, F, Fut>(&self, f: F) -> Pid<M>
    where
        M: Send + 'static,
        F: FnOnce(Context<M>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        self.spawn_on(NodeId(0), f)
    }

    /// Runs one turn of one runnable process, chosen by the seed; false if none can
    /// run (the clock does not move).
    pub fn step(&mut self) -> bool {
        let _on = self.enter();
        let ran = self.step_here();
        self.leave();
        ran
    }

    /// Runs turns until no process can run, without moving the clock; how many.
    pub fn run_until_idle(&mut self) -> u64 {
        let _on = self.enter();
        let n = self.idle_here();
        self.leave();
        n
    }

    /// Moves the clock `by` forward, running every process that can run, and at each
    /// timer's deadline or arrival on the network on the way, what it wakes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use otter::Context;
    /// let mut sim = otter::sim::Simulation::new(1);
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// sim.spawn(move |cx: Context<()>| async move {
    ///     cx.sleep(Duration::from_secs(10)).await;
    ///     tx.send(otter::time::now()).unwrap();
    /// });
    /// sim.advance(Duration::from_secs(9));
    /// assert!(rx.try_recv().is_err());
    /// sim.advance(Duration::from_secs(1));
    /// assert_eq!(rx.try_recv().unwrap(), sim.start() + Duration::from_secs(10));
    /// ```
    pub fn advance(&mut self, by: Duration) {
        let _on = self.enter();
        let target = self.now_ms.saturating_add(ceil_ms(by));
        while self.tick_here(target) {}
        self.set_clock(target);
        self.leave();
    }

    /// Runs `f`'s future as a root process on the first node until it returns, moving
    /// the clock as its timers and the network need; the root's value, or why there is
    /// none ([`SimError`]). Other processes stay as they are when it returns.
    pub fn block_on<M, T, F, Fut>(&mut self, f: F) -> Result<T, SimError>
    where
        M: Send + 'static,
        T: Send + 'static,
        F: FnOnce(Context<M>) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let slot = Arc::new(RootSlot::new());
        self.spawn(Root::new(f, slot.clone()));
        let limit = self.now_ms.saturating_add(ceil_ms(self.time_limit));
        let _on = self.enter();
        let r = loop {
            if let Some(r) = slot.take() {
                break r.map_err(SimError::Exited);
            }
            if self.step_here() || self.tick_here(limit) {
                continue;
            }
            break match slot.take() {
                Some(r) => r.map_err(SimError::Exited),
                None if self.next_due().is_some() => Err(SimError::TimeLimit {
                    limit: self.time_limit,
                }),
                None => Err(SimError::Stuck {
                    elapsed: self.elapsed(),
                }),
            };
        };
        self.leave();
        r
    }
}

/// `d` in whole milliseconds, rounded up (the timer's unit).
fn ceil_ms(d: Duration) -> u64 {
    let ms = d.as_millis().min(u64::MAX as u128) as u64;
    if d > Duration::from_millis(ms) {
        ms + 1
    } else {
        ms
    }
}

/// Folds `v` into the trace hash `h`.
fn mix(h: u64, v: u64) -> u64 {
    rng::splitmix(h ^ v.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// The address of the `n`-th node: `10.0.0.(n+1)`, then on into `10.0.1.0` and up.
fn node_ip(n: usize) -> Ipv4Addr {
    let n = n as u32 + 1;
    Ipv4Addr::from(0x0a00_0000 | n)
}
