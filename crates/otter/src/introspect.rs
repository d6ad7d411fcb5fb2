//! Introspection: what each process and each worker of a runtime is doing, read while
//! they run (Erlang's `process_info/1`, `processes/0`, `erlang:statistics/1`; the
//! base of a dashboard or of metrics).
//!
//! * [`Handle::process_info`] and [`Context::process_info`]: one process's
//!   [`ProcessInfo`], or `None` if the pid names no live process of the runtime (an
//!   exited, a remote or a foreign pid: never a panic).
//! * [`Handle::processes`]: a snapshot of every process, an iterator that walks the
//!   process table in windows ([`WINDOW`] slots at a time) while the workers run.
//! * [`Handle::runtime_info`]: the runtime's and its workers' counters,
//!   [`RuntimeInfo`].
//! * [`Handle::stuck`]: the processes inside one long poll now ("Stuck processes");
//!   [`Handle::deadlocks`]: processes that call each other in a cycle ("Calls").
//!
//! # Always on, and cheap
//!
//! Nothing here adds a read-modify-write or a clock read to the path of a message, and
//! every counter has one writer:
//!
//! 1. **Messages received** is not counted: it is the mailbox's head position
//!    (`mailbox/queue.rs`), which the receiver stores anyway, converted to messages.
//!    Likewise the queue length (head and tail) and the mailbox blocks.
//! 2. **Polls** (the process's "reductions"): a counter in the process cell
//!    (`Counters`, after the mailbox, on the receiver's line), a load and a store by
//!    the worker that polls it, which is the only writer while it holds `RUNNING`
//!    (`process/state.rs`).
//! 3. **Kind** ([`Kind`]): one byte of the cell's counters, set once by the behaviour
//!    when it starts (a server, a state machine, a supervisor, an acceptor), by the
//!    process itself; a connection's by its acceptor right after the spawn (the
//!    connection's code is the user's handler). Each set is a lookup of the pid, as a
//!    send's, once per process.
//! 4. **Parent** and **spawn time** are written into the cell before it is published;
//!    the spawn time is the runtime's coarse clock (`RuntimeStats`), which the
//!    watchdog advances every look (5 ms while a worker is awake), a worker when it
//!    comes back from a park, and a spawn from outside the workers; so a spawn on a
//!    worker reads no clock, and the time is late by at most about 5 ms.
//! 5. **Restarts**: two more bytes of the counters, stored by the supervisor
//!    that restarts a child (how many times it had started the child's spec before;
//!    saturating at 65,535).
//! 6. **Per worker** (`scheduler.rs`'s `Remote`, `WorkerStats`): polls are its
//!    `ticks`; steals, parks and busy time are written by the worker alone with a load
//!    and a store, where they happen (a steal, a park, the start of a search). Spawns,
//!    exits by reason kind and sends to dead pids happen in a process's code, where
//!    finding the worker's slot would cost a lookup each: they add to thread-locals
//!    (a load and a store), and the worker copies those totals into its slot every
//!    `GLOBAL_INTERVAL` (61) ticks, when it starts a search, when a spare thread goes
//!    dormant, and when it stops (the
//!    flush is tokio's `runtime/metrics` batching). So a reader sees them at most 61
//!    polls late, and at once on a worker gone idle. Run-queue lengths are read from
//!    the queues' own ends when [`Handle::runtime_info`] is called: nothing is kept
//!    for them. Busy time is the time between coming back from a search or a park
//!    and starting the next search, counted when the search starts. Nothing is added
//!    to `run_task` or `run_chain`. Spawns from
//!    outside the workers count in a shared atomic (a read-modify-write, off the
//!    workers' path), and read the clock to move the coarse clock on.
//!
//! 7. **Timers and the reactor**: timers armed are the wheels' lengths and timers fired
//!    counts the timer thread keeps, each under its worker's wheel lock, which every
//!    insert, cancel and firing takes anyway (a reader takes each too, briefly); reactor events
//!    are added by the driver, the one thread holding the driver's lock, once per OS
//!    poll. Per-peer distribution traffic is counted by each connection's reader and
//!    writer ([`Node::peers`](crate::dist::Node::peers)).
//!
//! A reader loads the counters `Relaxed`, racily: each is exact at its load, and
//! fields of one [`ProcessInfo`] may be from slightly different moments.
//!
//! # Reading a process
//!
//! A read takes a count on the process's slot, as a sender does (`process/table.rs`,
//! step 2): the cell stays allocated while it is read, and the process runs on. Links,
//! monitors, monitored-by and `trap_exit` are copied under the process's bonds lock
//! (`process/bonds.rs`), held for the copy only. The registered name comes from the
//! registry's reverse map under its read lock, once per window in a snapshot.
//!
//! # The snapshot
//!
//! [`Processes`] visits the table's indices from 0 to the high-water mark it saw when
//! it started, [`WINDOW`] at a time: each window reads its processes one by one (a
//! slot count each, as above) into a buffer, then the names of those with one; the
//! iterator yields the buffer, then reads the next window. No worker stops and no
//! global lock is held across a window: a process spawned during the walk may or may
//! not be seen (a slot freed and reused behind the walk is not visited again), and one
//! that exits during it may be seen alive. That is Erlang's `processes/0` contract.
//! A walk looks each parent up once (to tell whether it is a supervisor), not once
//! per child: a lookup reads the parent's slot word, which the parent's senders write,
//! and a walk that read it once per process slowed a ping-pong pair whose process had
//! taken the slot of the walked processes' exited parent (p99 90 ns to 350 ns; the
//! example `process_snapshot` measures it). The buffer of a window is reused.
//!
//! # Calls
//!
//! A call's reply slot (`server/reply.rs`) is watched by the server's bonds, and the
//! caller stores its pid in the slot with each call (one store, on a line the call
//! writes anyway). So a server's bonds tell which processes wait on it now: its call
//! watchers whose latest call still waits, read under its bonds lock with the rest
//! ([`ProcessInfo::callers`]). The wait-for graph of a runtime is those edges, each
//! caller waiting on one server at a time; [`Handle::deadlocks`] walks every process
//! and returns its cycles. Calls from outside any process (a `Handle`, a tokio task)
//! have no caller to name, and a call to another node's server waits in the
//! distribution's table of pending calls, not in a local slot: neither is an edge.
//!
//! # Stuck processes
//!
//! A poll that does not return holds its worker (crate docs, "Scheduler"). The worker
//! stores the pid of the process it polls before each poll (one store, beside its tick,
//! on the line the start of a poll writes anyway: a line of its own would be one more
//! line touched per poll), and the watchdog, which already looks at every worker's tick every
//! 5 ms to hand on what queues behind a long poll, records on a busy worker whose tick
//! has not moved for a period which tick it was and since when (the look that first
//! saw it). [`Handle::stuck`] reads them: the pid, the worker, and how long the poll
//! has lasted, at most one look late. Nothing is read on the path of a message.
//!
//! # Monitors a process holds
//!
//! A monitor lives on the watched side (`monitor.rs`); [`ProcessInfo::monitors`] needs
//! the other side too. A process's `monitor` (and `spawn_monitor`) records the
//! reference's id and target in its own bonds, under its own lock (uncontended: a
//! reader takes it briefly), and `demonitor` takes it off; a `Down` does not, so
//! nothing is added to the exit's path or to the delivery of a `Down`. A read keeps the
//! recorded monitors whose target still holds them (a look under each target's lock,
//! or the connection's table for a remote target), so a fired monitor is never shown;
//! the record is pruned the same way whenever it has doubled since its last prune, so
//! it stays within about twice the active monitors. A call's monitor of its server is
//! not listed (it is the caller's [`ProcessInfo::callers`] edge on the server's side),
//! as Erlang's `gen:call` monitor is, briefly.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::Context;
use crate::pid::{ProcessId, RawPid};
use crate::process::cell::{self, Sample};
use crate::process::table;
use crate::runtime::Handle;
use crate::scheduler::Shared;

/// Table slots a snapshot reads per window (see the module docs).
pub const WINDOW: usize = 1024;

// ===== per process =====

/// What a process is: set once by the behaviour that runs it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A plain process (`spawn`).
    Process = 0,
    /// A [`server`](crate::server) (gen_server).
    Server = 1,
    /// A [`statem`](crate::statem) machine (gen_statem).
    Statem = 2,
    /// A [`supervisor`](crate::supervisor).
    Supervisor = 3,
    /// An acceptor of an acceptor pool ([`net::start_acceptor_pool`](crate::net::start_acceptor_pool)).
    Acceptor = 4,
    /// A connection's process, started by an acceptor.
    Connection = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Kind {
        match b {
            1 => Kind::Server,
            2 => Kind::Statem,
            3 => Kind::Supervisor,
            4 => Kind::Acceptor,
            5 => Kind::Connection,
            _ => Kind::Process,
        }
    }
}

/// Where a process is in its schedule (Erlang's `status`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// A worker is polling it now.
    Running,
    /// It is in a run queue (or will be put back in one when its poll returns).
    Runnable,
    /// It waits for a message, a timer or a socket.
    Waiting,
    /// Its exit has begun, or an exit signal that will end it is pending.
    Exiting,
}

/// The memory a process holds, in bytes.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Memory {
    /// The process cell: header, mailbox ends, counters and the future (with its
    /// `Context` and every local it keeps across an `.await`).
    pub cell: usize,
    /// Mailbox blocks allocated now (each holds 31 messages, inline), including the
    /// recycled spare.
    pub mailbox_blocks: usize,
    /// Those blocks' bytes.
    pub mailbox: usize,
    /// The bonds record (links, monitors, timers), if the process has one.
    pub bonds: usize,
    /// The save area of selective receive: the messages a `recv_match` passed over,
    /// held inline (their slots and the area's record; not the spare capacity the area
    /// keeps once grown, nor the holes left by messages taken out of order).
    pub saved: usize,
}

impl Memory {
    /// The sum of the parts.
    pub fn total(&self) -> usize {
        self.cell + self.mailbox + self.bonds + self.saved
    }
}

/// One process as read at one moment (module docs: each field exact at its read).
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: ProcessId,
    /// Its registered name, if it has one.
    pub name: Option<Arc<str>>,
    /// What runs it.
    pub kind: Kind,
    /// Where it is in its schedule.
    pub status: Status,
    /// Messages waiting to be received: in its queue, and in its save area (those a
    /// selective receive looked at and left), as Erlang's `message_queue_len` counts.
    pub message_queue_len: usize,
    /// Messages it has taken from its queue since it started: received, or moved to
    /// the save area by a selective receive that looked past them.
    pub messages_received: u64,
    /// Times it has been polled (its reductions, in otter's unit).
    pub polls: u64,
    /// The memory it holds.
    pub memory: Memory,
    /// The processes it is linked to.
    pub links: Vec<ProcessId>,
    /// The processes it monitors (Erlang's `monitors`): the target of each active
    /// monitor it set, once per monitor (module docs, "Monitors a process holds").
    ///
    /// ```
    /// use otter::{Context, Down, Runtime};
    /// enum Msg { Down(Down) }
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg::Down(d) } }
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<Msg>| async move {
    ///     let child = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
    ///     cx.monitor(child);
    ///     let held = cx.process_info(cx.pid()).unwrap().monitors;
    ///     child.send(());
    ///     held == vec![child.id()]
    /// });
    /// assert!(r.unwrap());
    /// ```
    pub monitors: Vec<ProcessId>,
    /// The processes monitoring it (Erlang's `monitored_by`).
    pub monitored_by: Vec<ProcessId>,
    /// The processes waiting now for a reply to a call to it (a server's, a state
    /// machine's or a supervisor's callers, `sys` requests included; module docs,
    /// "Calls").
    pub callers: Vec<ProcessId>,
    /// Whether it traps exits.
    pub trap_exit: bool,
    /// The process that spawned it; `None` if it was spawned from outside any process.
    pub parent: Option<ProcessId>,
    /// Its parent, if that is a live supervisor.
    pub supervisor: Option<ProcessId>,
    /// When it was spawned, from the runtime's start, at the coarse clock's resolution
    /// (module docs: a few milliseconds).
    pub spawned_at: Duration,
    /// How many times its supervisor had started its child spec before it (0 for the
    /// first start, and for a process no supervisor started).
    pub restarts: u32,
}

/// The counters of one process, kept in its cell after the mailbox (`process/cell.rs`).
#[derive(Debug)]
pub(crate) struct Counters {
    /// Polls; written only by the worker polling (a load and a store).
    polls: AtomicU64,
    /// The spawner, or `RawPid::OUTSIDE`; the spawn time in ms of the coarse clock.
    /// Both written before the cell is published.
    parent: RawPid,
    born: u64,
    /// The process's [`Kind`], stored once by the behaviour that runs it (the process
    /// itself).
    kind: AtomicU8,
    /// How many times the supervisor that started it had started its child spec
    /// before, stored once by that supervisor (saturating).
    restarts: AtomicU16,
    /// The messages in the process's save area (selective receive), stored by the
    /// process when it puts one there or takes one out (saturating); in the padding the
    /// fields above leave, so a cell is no larger for it.
    saved: AtomicU32,
}

// The save area's count took the padding after `restarts`: a cell is no larger.
const _: () = assert!(std::mem::size_of::<Counters>() <= 32);

impl Counters {
    pub(crate) fn new(parent: RawPid, born: u64) -> Counters {
        Counters {
            polls: AtomicU64::new(0),
            parent,
            born,
            kind: AtomicU8::new(0),
            restarts: AtomicU16::new(0),
            saved: AtomicU32::new(0),
        }
    }

    pub(crate) fn saved(&self) -> usize {
        self.saved.load(Ordering::Relaxed) as usize
    }

    /// Stored by the process itself (a message went into its save area or out).
    pub(crate) fn set_saved(&self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.saved.store(n, Ordering::Relaxed);
    }

    pub(crate) fn kind(&self) -> u8 {
        self.kind.load(Ordering::Relaxed)
    }

    pub(crate) fn set_kind(&self, kind: u8) {
        self.kind.store(kind, Ordering::Relaxed);
    }

    pub(crate) fn restarts(&self) -> u16 {
        self.restarts.load(Ordering::Relaxed)
    }

    pub(crate) fn set_restarts(&self, restarts: u16) {
        self.restarts.store(restarts, Ordering::Relaxed);
    }

    /// Counts a poll: the caller is the worker that set `RUNNING`, the one writer.
    #[inline(always)]
    pub(crate) fn count_poll(&self) {
        self.polls.store(
            self.polls.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn polls(&self) -> u64 {
        self.polls.load(Ordering::Relaxed)
    }

    pub(crate) fn parent(&self) -> RawPid {
        self.parent
    }

    pub(crate) fn born(&self) -> u64 {
        self.born
    }
}

/// Sets the kind of the running process `me` (a behaviour at its start).
pub(crate) fn set_kind(me: RawPid, kind: Kind) {
    cell::set_kind(me, kind as u8);
}

/// Records on `child` that its spec had been started `restarts` times before it
/// (saturating at `u16::MAX`, the header's room).
pub(crate) fn set_restarts(child: RawPid, restarts: u32) {
    cell::set_restarts(child, u16::try_from(restarts).unwrap_or(u16::MAX));
}

/// The info of `pid` if it is a live process of `rt` (its name left for the caller).
fn read(rt: &Shared, pid: RawPid) -> Option<ProcessInfo> {
    let sample = cell::sample(rt, pid)?;
    Some(build(sample, is_supervisor))
}

/// Whether `pid` is a live supervisor.
fn is_supervisor(pid: RawPid) -> bool {
    cell::kind_of(pid) == Some(Kind::Supervisor as u8)
}

fn build(s: Sample, is_supervisor: impl FnOnce(RawPid) -> bool) -> ProcessInfo {
    let parent = (s.parent != RawPid::OUTSIDE).then_some(ProcessId(s.parent));
    let supervisor = parent.filter(|p| is_supervisor(p.0));
    ProcessInfo {
        pid: ProcessId(s.pid),
        name: None,
        kind: Kind::from_u8(s.kind),
        status: s.status,
        message_queue_len: s.queue_len + s.saved,
        messages_received: s.received,
        polls: s.polls,
        memory: Memory {
            cell: s.cell_bytes,
            mailbox_blocks: s.blocks,
            mailbox: s.blocks * s.block_bytes,
            bonds: s.bonds.bytes,
            saved: s.saved_bytes,
        },
        links: s.bonds.links.into_iter().map(ProcessId).collect(),
        monitors: s.bonds.monitors.into_iter().map(ProcessId).collect(),
        monitored_by: s.bonds.monitored_by.into_iter().map(ProcessId).collect(),
        callers: s.bonds.callers.into_iter().map(ProcessId).collect(),
        trap_exit: s.bonds.trap_exit,
        parent,
        supervisor,
        spawned_at: Duration::from_millis(s.born),
        restarts: s.restarts,
    }
}

// ===== the snapshot =====

/// A snapshot of a runtime's processes, read window by window as it is iterated
/// ([`Handle::processes`]; module docs).
#[derive(Debug)]
pub struct Processes {
    rt: Arc<Shared>,
    next: u32,
    end: u32,
    /// The window read last, yielded from the front; reused from window to window, so
    /// a walk allocates it once.
    buffer: std::collections::VecDeque<ProcessInfo>,
    /// Whether each parent met so far is a supervisor.
    parents: std::collections::HashMap<RawPid, bool>,
}

/// The most parents a walk remembers ([`Processes::read_window`]).
const PARENTS_KEPT: usize = 4096;

impl Processes {
    fn new(rt: Arc<Shared>) -> Processes {
        Processes {
            rt,
            next: 0,
            end: table::high_water(),
            buffer: std::collections::VecDeque::new(),
            parents: std::collections::HashMap::new(),
        }
    }

    /// Reads the next window into the buffer; false when the walk is over.
    fn read_window(&mut self) -> bool {
        if self.next >= self.end {
            return false;
        }
        let stop = self.end.min(self.next.saturating_add(WINDOW as u32));
        // Each parent is looked up once a walk (up to `PARENTS_KEPT` of them): siblings
        // share one, and a lookup loads, or takes a count on, the parent's slot word,
        // the line its senders write (a pair's round trips slowed by a few hundred
        // nanoseconds at p99 while every process of the walk looked its parent up).
        if self.parents.len() > PARENTS_KEPT {
            self.parents.clear();
        }
        for index in self.next..stop {
            if let Some(s) = cell::sample_slot(&self.rt, index) {
                let parents = &mut self.parents;
                let info = build(s, |p| *parents.entry(p).or_insert_with(|| is_supervisor(p)));
                self.buffer.push_back(info);
            }
        }
        self.next = stop;
        self.rt
            .services
            .registry
            .fill_names(self.buffer.iter_mut().map(|i| (i.pid.0, &mut i.name)));
        true
    }
}

impl Iterator for Processes {
    type Item = ProcessInfo;

    fn next(&mut self) -> Option<ProcessInfo> {
        loop {
            if let Some(i) = self.buffer.pop_front() {
                return Some(i);
            }
            if !self.read_window() {
                return None;
            }
        }
    }
}

mod counters;
mod waits;

use counters::runtime_info;
pub use counters::{Exits, RuntimeInfo, WorkerInfo};
pub(crate) use counters::{
    RuntimeStats, WorkerStats, count_dead_send, count_exit, count_spawn, flush,
};
pub use waits::Stuck;
#[cfg(feature = "dashboard")]
pub(crate) use waits::cycles;
use waits::{deadlocks, stuck};

// ===== the API =====

impl Handle {
    /// The info of the process `pid`, if it is a live process of this runtime (Erlang's
    /// `process_info/1`); `None` for a pid that has exited, a remote pid, or a process
    /// of another runtime.
    ///
    /// ```
    /// use otter::introspect::{Kind, Status};
    /// let rt = otter::Runtime::new();
    /// let h = rt.handle();
    /// let (me, child) = rt
    ///     .block_on(move |mut cx: otter::Context<u8>| async move {
    ///         let child = cx.spawn(|mut c: otter::Context<u8>| async move { c.recv().await; });
    ///         cx.register("child", child).unwrap();
    ///         let me = h.process_info(cx.pid()).unwrap();
    ///         let child = h.process_info(child).unwrap();
    ///         (me, child)
    ///     })
    ///     .unwrap();
    /// assert_eq!(me.status, Status::Running);
    /// assert_eq!(child.name.as_deref(), Some("child"));
    /// assert_eq!((child.kind, child.parent), (Kind::Process, Some(me.pid)));
    /// ```
    pub fn process_info(&self, pid: impl Into<ProcessId>) -> Option<ProcessInfo> {
        info_with_name(self.shared(), pid.into().0)
    }

    /// A snapshot of this runtime's processes, read window by window while the
    /// runtime runs (module docs, "The snapshot"; Erlang's `processes/0` with
    /// `process_info/1` on each).
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let h = rt.handle();
    /// let n = rt
    ///     .block_on(move |cx: otter::Context<()>| async move {
    ///         for _ in 0..3 {
    ///             cx.spawn(|mut c: otter::Context<()>| async move { c.recv().await });
    ///         }
    ///         h.processes().count()
    ///     })
    ///     .unwrap();
    /// assert!(n >= 4);
    /// ```
    pub fn processes(&self) -> Processes {
        Processes::new(self.shared().clone())
    }

    /// The runtime's and its workers' counters. A worker hands in its spawns, exits and
    /// dead sends every 61 polls, when it starts a search and when it stops (module
    /// docs), so a read may be that late; once the runtime is dropped, it is exact.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let handle = rt.handle();
    /// rt.block_on(|_: otter::Context<()>| async {}).unwrap();
    /// drop(rt); // its workers stop, and hand in what they counted
    /// let info = handle.runtime_info();
    /// assert!(info.spawns >= 1 && info.exits.normal >= 1);
    /// ```
    pub fn runtime_info(&self) -> RuntimeInfo {
        runtime_info(self.shared())
    }

    /// The processes inside one poll for `min` or longer now: each holds its worker
    /// (module docs, "Stuck processes"), so the processes queued behind it wait for
    /// the watchdog to hand them on and it answers nothing. Reported within a watchdog
    /// period (5 ms) of `min`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = otter::Runtime::builder().threads(2).build().unwrap();
    /// let h = rt.handle();
    /// let (hog, stuck) = rt
    ///     .block_on(move |cx: otter::Context<()>| async move {
    ///         let hog = cx.spawn(|_: otter::Context<()>| async {
    ///             std::thread::sleep(Duration::from_millis(300)); // a poll that never yields
    ///         });
    ///         loop {
    ///             let stuck = h.stuck(Duration::from_millis(50));
    ///             if !stuck.is_empty() {
    ///                 return (hog, stuck);
    ///             }
    ///             cx.sleep(Duration::from_millis(5)).await;
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(stuck[0].pid, hog.id());
    /// assert!(stuck[0].polling_for >= Duration::from_millis(50));
    /// ```
    pub fn stuck(&self, min: Duration) -> Vec<Stuck> {
        stuck(self.shared(), min)
    }

    /// Processes that wait on each other's calls in a cycle (A calls B while B calls
    /// A, or longer), each cycle once, from its lowest pid: a deadlock that only a
    /// call's timeout ends (module docs, "Calls"). Walks every process, as
    /// [`Handle::processes`].
    ///
    /// ```
    /// use otter::server::{Flow, ReplyTo, Server, ServerContext, ServerRef};
    /// use otter::{Context, ExitReason, Runtime};
    ///
    /// /// Calls its peer when called: two of them calling each other wait for ever.
    /// struct Peer(Option<ServerRef<Peer>>);
    /// enum Call { SetPeer(ServerRef<Peer>, ReplyTo<()>), Ping(ReplyTo<()>) }
    /// impl Server for Peer {
    ///     type Args = (); type Call = Call; type Cast = (); type Info = ();
    ///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Peer(None)) }
    ///     async fn handle_call(&mut self, call: Call, _: &mut ServerContext<Self>) -> Flow {
    ///         match call {
    ///             Call::SetPeer(p, f) => { self.0 = Some(p); f.reply(()) }
    ///             Call::Ping(f) => {
    ///                 let _ = self.0.unwrap().call_timeout(Call::Ping, None).await;
    ///                 f.reply(());
    ///             }
    ///         }
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// let rt = Runtime::new();
    /// let h = rt.handle();
    /// let (cycles, a, b) = rt
    ///     .block_on(move |cx: Context<()>| async move {
    ///         let a = Peer::start(&cx, ()).await.unwrap();
    ///         let b = Peer::start(&cx, ()).await.unwrap();
    ///         a.call(|f| Call::SetPeer(b, f)).await.unwrap();
    ///         b.call(|f| Call::SetPeer(a, f)).await.unwrap();
    ///         // a calls b, which calls a: neither ever answers.
    ///         cx.spawn(move |_: Context<()>| async move {
    ///             let _ = a.call_timeout(Call::Ping, None).await;
    ///         });
    ///         loop {
    ///             let found = h.deadlocks();
    ///             if !found.is_empty() {
    ///                 return (found, a.pid().id(), b.pid().id());
    ///             }
    ///             cx.yield_now().await;
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(cycles, vec![vec![a.min(b), a.max(b)]]);
    /// ```
    pub fn deadlocks(&self) -> Vec<Vec<ProcessId>> {
        deadlocks(self.processes())
    }
}

fn info_with_name(rt: &Shared, pid: RawPid) -> Option<ProcessInfo> {
    let mut info = read(rt, pid)?;
    info.name = rt.services.registry.name_of(pid);
    Some(info)
}

impl<M: Send + 'static> Context<M> {
    /// The info of the process `pid` of this process's runtime, as
    /// [`Handle::process_info`]; `cx.process_info(cx.pid())` reads this process.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let polls = rt
    ///     .block_on(|cx: otter::Context<()>| async move {
    ///         cx.yield_now().await;
    ///         cx.process_info(cx.pid()).unwrap().polls
    ///     })
    ///     .unwrap();
    /// assert_eq!(polls, 2);
    /// ```
    pub fn process_info(&self, pid: impl Into<ProcessId>) -> Option<ProcessInfo> {
        info_with_name(self.owner.runtime()?, pid.into().0)
    }
}
