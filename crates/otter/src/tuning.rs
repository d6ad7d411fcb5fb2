//! Every tuning constant of the runtime, in one place.
//!
//! Each says what it trades and how to measure it again. None was tuned to one run of
//! one machine: each figure is the one that held across paired rounds (the harness's
//! `otter-bench`, otter against itself or against Erlang, interleaved in one run), and
//! each one whose history was measured names its design note under `docs/design/`.
//!
//! # How they depend on each other
//!
//! * [`SPILL_AFTER_SENDS`] equals [`BUDGET`]: a poll that sends as much as it may
//!   receive is a producer, not a ping-pong. [`SPILL_INTERVAL`] is a power of two above
//!   it, so that the send path's test is one `and` and one compare (checked below).
//! * [`SPIN_BEFORE_PARK`] covers one [`SPILL_INTERVAL`] of a stream (about 0.2 ms of
//!   sends): a receiver handed on by a spill finds a worker still awake.
//! * [`WATCHDOG`] bounds what a process computing without yielding costs the processes
//!   queued behind it when no worker is idle to take them (`park.rs`'s rule).
//! * [`STREAM_AFTER`] is below [`SPILL_AFTER_SENDS`], so the first sends of a poll (a
//!   ring's hop, a request, a reply) neither look at the stream cache nor spill.
//! * [`MAX_LIFO_POLLS`] bounds how long a chain keeps a worker from its loop (a queued
//!   process waits for no chain); [`GLOBAL_INTERVAL`] how long the local queue holds the
//!   worker against the injector.
//! * [`STEAL_LIFO_AFTER`] is far below [`WATCHDOG`], and [`LIFO_RECHECK`] between them.
//!
//! To re-measure one: change it, build `otter-bench` in release, and run the workload
//! its doc names against the binary before the change, alternating the two binaries
//! for at least 7 rounds each, and compare the medians of the per-round ratios.

use std::time::Duration;

/// A turn's budget: `coop.rs`'s (a leaf), named here with the scheduler's constants.
pub(crate) use crate::coop::BUDGET;

/// Polls of one LIFO chain (`Worker::run_chain`) before the worker looks at its other
/// work (the shutdown flag, the injector's turn). A queued process does not wait for the
/// chain (it ends as soon as the local queue holds one), so this only bounds how long
/// the worker's loop goes unvisited; with nothing queued the same process starts the
/// next chain. Measure with `ring` and `pingpong`.
pub(crate) const MAX_LIFO_POLLS: u32 = 8;

/// Sends in one poll after which the process it woke into this worker's LIFO slot is
/// handed to the local queue and a parked worker woken to take it, so that a sender in
/// a long send loop and its receiver run in parallel. Measure with `counting`.
/// Tuning history: docs/design/0012-spill-interval.md.
pub(crate) const SPILL_AFTER_SENDS: u32 = BUDGET;

/// Sends between the spills of a poll after its first: a receiver that empties its
/// mailbox in a long send loop and is woken again back into the sender's LIFO slot waits
/// there at most this many sends. Spilling at every wake-up made the receiver chase the
/// sender; 16,384 sends are about 0.2 ms of a stream. Measure with `counting`.
/// Tuning history: docs/design/0012-spill-interval.md.
pub(crate) const SPILL_INTERVAL: u32 = 16_384;

const _: () = assert!(
    SPILL_INTERVAL.is_power_of_two() && SPILL_INTERVAL > SPILL_AFTER_SENDS,
    "the spill test in `send` needs a power of two above the first spill"
);

/// Ticks between forced looks at the injector. 61, as in Go's scheduler and
/// async-executor's 64: rare enough to cost nothing, often enough to bound the wait of
/// a spawn or wake-up from outside the workers. Measure with `spawn` from outside.
pub(crate) const GLOBAL_INTERVAL: u32 = 61;

/// Events a worker takes from the OS in one poll (the reactor's buffer, given to
/// `Reactor::new`): half a worker's local queue. A worker takes no more events than its
/// local queue has room for the processes they wake (this, or [`IO_FEW_EVENTS`]), so
/// that those fit in it, in the order the OS reported them, instead of overflowing to
/// the injector (which a busy worker serves [`INJECTOR_BATCH`] at a time every
/// [`GLOBAL_INTERVAL`] ticks, and where they would wait behind the ones woken after
/// them: docs/design/0022).
pub(crate) const IO_EVENTS: usize = LOCAL_CAP / 2;

/// The events of a poll made while the worker's queue has room for fewer than
/// [`IO_EVENTS`] woken processes (a busy worker's look that may not skip the poll).
pub(crate) const IO_FEW_EVENTS: usize = 16;

/// Processes a worker takes from the injector at once (the first to run, and this many
/// more into its local queue).
pub(crate) const INJECTOR_BATCH: usize = 32;

/// Busy looks at the OS (one every [`GLOBAL_INTERVAL`] ticks) a worker skips in a row
/// while its local queue has no room for a full poll's worth of woken processes
/// ([`IO_EVENTS`]); the next look polls for at most [`IO_FEW_EVENTS`]. The bound
/// on how long a queue kept full holds the sockets back (8 × 61 ticks). Trades new work
/// joining a long queue (a longer wait for all of it, and an overflow into the injector
/// once full) against sockets served late. Measure with `echo conns=1000` in both modes
/// (p99).
/// See docs/design/0022-lock-free-reply-and-short-reads.md.
pub(crate) const IO_POLLS_SKIPPED: u32 = 8;

/// Spin hints between two looks of a spinning worker at the wake-up flag and the clock:
/// about 1–3 µs on current x86 cores, short next to the 1–3 ms a parked vCPU takes to
/// wake, long enough that reading the clock costs nothing.
/// See docs/design/0013-spin-before-park.md.
pub(crate) const SPIN_HINTS: u32 = 64;

/// A searching worker offers its core to the OS (`sched_yield`) every this many spin
/// rounds (about every 10–25 µs), instead of pausing: another program's thread that
/// is ready on that core (an Erlang node of the cluster, a load generator) runs within
/// that time rather than after the whole [`SPIN_BEFORE_PARK`]. Every round would cost
/// a busy sibling worker on the same physical core. See
/// docs/design/0021-distribution.md.
pub(crate) const YIELD_EVERY_ROUNDS: u32 = 8;

/// The longest a worker that found no work spins, waiting for a wake-up, before it
/// parks: the cap on its spin credit (busy time earns it, `park.rs`). Trades CPU burnt
/// by an idle worker against the wake-up a parked one pays. 50 µs to 1 ms all helped
/// `counting` about equally; 200 µs is the shortest that covers a [`SPILL_INTERVAL`].
/// Measure with `counting` and an echo server's CPU at partial load (`echo-load rate=`).
/// Tuning history: docs/design/0013-spin-before-park.md, 0025-idle-cpu-at-partial-load.md.
pub(crate) const SPIN_BEFORE_PARK: Duration = Duration::from_micros(200);

/// How often, at least, a worker takes the oldest process of its spawn stack, however
/// many newer spawns it runs first (`spawn_stack.rs`, rule 3): the bound on how long a
/// newest-first order keeps an old spawn waiting, per spawn below it. Each such take
/// starts a fork-join's largest unstarted subtree beside the one being walked, so it
/// must be rare next to a tree's polls, which come every few hundred nanoseconds.
/// Measure with `forkjoin` (time and `peak_rss_bytes`).
/// See docs/design/0034-fork-join-walked-depth-first.md.
pub(crate) const SPAWN_AGE: Duration = Duration::from_millis(5);

/// Turns of other processes on its worker (`Remote::ticks`) after which the newest
/// process of a spawn stack moves to the back of the local queue (`spawn_stack.rs`, rule
/// 3). A fork-join's newest spawn is younger (its walk pushes one every turn or two) and
/// stays; a spawn beside a chain that spawns nothing waits about this many turns, as behind
/// a local queue of that length. Measure with `forkjoin` and `latency threads=1` (its
/// background is spawned beside the pair).
pub(crate) const SPAWN_WAIT_TICKS: u64 = 64;

/// How often the watchdog thread looks for a worker held by one poll, and how long a
/// worker must have been inside one poll to count as held (`watchdog.rs`). Trades the
/// wait of processes queued behind a process that computes without yielding against
/// the thread's wake-ups while the runtime is busy (200 a second, well under 0.1% of a
/// core). Measure with `latency hog=1`.
pub(crate) const WATCHDOG: Duration = Duration::from_millis(5);

/// Looks in a row that found every worker parked and no tick moved before the watchdog
/// thread waits without a timeout (`watchdog.rs`, rule 1): 100 ms of idle. A runtime
/// that runs a process at least that often (a server at ten requests a second) never
/// wakes the thread, which costs a futex wake-up; one idle for longer costs no CPU.
pub(crate) const WATCHDOG_QUIET: u32 = 20;

/// How long a process may stand in a busy worker's LIFO slot, while that worker's tick
/// does not move (it is inside one poll), before an idle worker takes it (Go steals its
/// `runnext` after 3 µs). Longer than a ring's or a ping-pong's poll, so a chain is
/// never robbed of its next process; short next to the watchdog. Measure with `latency`
/// and `ring`. See docs/design/0019-runnable-never-waits.md.
pub(crate) const STEAL_LIFO_AFTER: Duration = Duration::from_micros(20);

/// How long a worker that found nothing but an occupied LIFO slot of another worker
/// parks before it looks again (`park.rs`): the bound on the wait of a process woken
/// into that slot just before an idle worker parked, if the owner's poll then runs
/// long. Trades the idle worker's wake-ups while another runs a chain against that
/// wait. Measure with `latency` and an idle worker's CPU time during `ring`.
pub(crate) const LIFO_RECHECK: Duration = Duration::from_micros(100);

/// How long after it last saw another worker's LIFO slot occupied an idle worker keeps
/// sleeping short ([`LIFO_RECHECK`]) rather than until woken, while another worker runs:
/// a chain's slot is empty between its hops, and a worker parked until woken costs the
/// next placement a wake-up (a futex call on the chain's worker, `park.rs`). Trades the
/// idle worker's wake-ups after a chain ends (ten) against the chain's wake-up calls.
/// Measure with `pingpong`, `ring` and an idle worker's CPU time during them.
pub(crate) const LIFO_WATCH: Duration = Duration::from_millis(1);

/// Sends in one poll before `send` looks at the stream cache (`process/send.rs`).
/// Small, so that a stream is found early; more than the two or three sends of a
/// request and its reply, which would pay for a cache they never reuse. Measure with
/// `counting` against `pingpong`.
/// See docs/design/0009-stream-cache.md.
pub(crate) const STREAM_AFTER: u32 = 4;

/// Entries of a worker's stream cache (`process/send.rs`): it keeps a table count on up
/// to this many receivers of a poll's streaming sends, one an entry picked by the pid's
/// index modulo this, and a send to a receiver whose entry holds its count takes none.
/// A power of two, at most 64 (a bit an entry in one word says which hold a count, so
/// that the end of a poll that kept none is one load). Trades the counts a fan-out keeps
/// until its poll ends (each may hold the cell of a process that exited) against the
/// receivers it covers: a sender round-robin over more processes than this, or over two
/// whose indices collide, takes a count a send. Measure with `counting receivers=60`
/// against `counting`.
/// See docs/design/0018-fan-out.md. Under Miri, 4, so that the unit test that overflows
/// the entries stays small enough to interpret (as `LOCAL_CAP` under loom).
#[cfg(not(miri))]
pub(crate) const STREAM_ENTRIES: usize = 64;
#[cfg(miri)]
pub(crate) const STREAM_ENTRIES: usize = 4;

const _: () = assert!(
    STREAM_ENTRIES.is_power_of_two() && STREAM_ENTRIES <= 64,
    "the stream cache's held slots are the bits of one u64"
);

/// The shortest call timeout whose timer is deferred (`server/reply.rs`): a call waiting
/// at least this long puts its deadline in its worker's deferred list, and arms it in
/// the timer wheel only if it still waits at the second flush after (every
/// [`GLOBAL_INTERVAL`] ticks, and before the worker parks), which wakes it for that. A
/// call answered within that (nearly all of them) never touches the wheel, its lock or
/// its thread. Shorter timeouts are armed at once: a deadline deferred on a worker that
/// one poll then holds is armed only when the watchdog's look finds it held
/// ([`WATCHDOG`] to twice that later), a delay that only a long timeout can absorb. Measure with the `call` group of `benches/hot_paths.rs`
/// (`default_timeout` against `no_timeout`).
pub(crate) const DEFER_TIMER_AFTER: Duration = Duration::from_millis(50);

/// Deferred deadlines a worker lists at most (`timer/deferred.rs`); a call beyond
/// them arms its timer at once. Each costs 24 bytes per worker slot, and a flush reads
/// every listed one. Trades the timer wheel's lock for calls that wait on one worker at
/// the same time (a few dozen callers of one server per worker) against memory and the
/// flush's cost. Measure with the `call` group of `benches/hot_paths.rs`.
pub(crate) const DEFERRED_CAP: usize = 64;

/// Units of a turn renewed in place for a process whose sends spent its budget
/// (`Owner::send_budget_spent`, `process/owner.rs`): eight budgets. Nothing waited for
/// the worker when the turn began; a process woken onto it meanwhile (its receiver, into
/// the LIFO slot) waits for at most this many sends, or is taken by an idle worker, which takes a
/// LIFO process only while the worker's tick stands still: every renewal moves it.
/// Trades that wait against the cost of a renewal, which looks at the queues and writes
/// the tick, lines the other workers' search reads: renewed every budget, a send loop
/// on two workers was slower than one that never yields; on one worker this changes
/// nothing (the loop yields to its receiver there). Measure with `counting` on one and
/// two workers.
pub(crate) const SENDER_TURN_RENEWED: u32 = 8 * BUDGET;

/// How many of the most recent deferred deadlines (`timer/deferred.rs`) a call that
/// ends looks at for its own (it is nearly always the last one): a bound on its cost
/// when many calls wait at once. One not found (its call moved to another worker, or many started after it) costs its
/// process one needless wake-up at a flush, nothing else.
pub(crate) const REMOVE_LOOKS: usize = 8;

/// Reply slots a worker keeps for the next call to the same server, each with its
/// watcher still on that server (`server/reply.rs`, `server/reply/kept.rs`). A call that
/// finds one costs no allocation and no lock on the server; the price is at most this
/// many idle watchers per worker on the servers last called from it. Trades calls to a
/// rotating set of servers (more than this many: each call then takes the server's lock
/// twice, as with none kept) against idle watchers. Measure with `pingpong
/// style=server` and the `call` group of `benches/hot_paths.rs`.
pub(crate) const CALL_SLOTS_PER_WORKER: usize = 4;

/// Threads of a runtime's blocking pool (`blocking.rs`) at most: jobs beyond wait in
/// its queue. Enough for DNS lookups and file reads of many processes at once; the
/// BEAM's dirty IO schedulers are 10, tokio's default is 512. Measure with a load of
/// lookups and a count of threads.
pub(crate) const MAX_BLOCKING_THREADS: usize = 64;

/// How long a blocking thread with nothing to do waits before it ends.
pub(crate) const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Tasks a local run queue holds before overflowing to the injector. 256 as in tokio
/// and Go: enough for bursts of spawns, small enough that stealing half is cheap.
/// Under loom, 4, so that the models overflow.
#[cfg(not(loom))]
pub(crate) const LOCAL_CAP: usize = 256;
#[cfg(loom)]
pub(crate) const LOCAL_CAP: usize = 4;

/// How many blocks behind the producers a mailbox's consumer may be for a block it
/// empties to be recycled as the queue's spare rather than freed (the queue's rule 7).
/// Two: a receiver that keeps up (a ring, a ping-pong, a counter) allocates nothing,
/// and one far behind a stream does not hold on to memory the producer would touch
/// cold. Measure with `counting` and `mailbox`.
/// Tuning history: docs/design/0002-mailbox-blocks-and-recycling.md.
pub(crate) const RECYCLE_WITHIN_BLOCKS: usize = 2;
