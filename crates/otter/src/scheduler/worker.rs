//! The worker: one OS thread running processes.
//!
//! # Which process runs next
//!
//! 1. Every [`GLOBAL_INTERVAL`] polls (`Worker::tick`), the injector first, so spawns
//!    and wake-ups from outside cannot starve behind a busy local queue; before it, at
//!    some of these turns, the spawn stack's oldest (`stack_turn`: rule 3 of
//!    `spawn_stack.rs`).
//! 2. The LIFO slot: the process most recently woken by a message from the process that
//!    just ran (or spawned by it). Running it next keeps the message hot in cache and
//!    makes a request/reply pair cost two polls and no queue operation. Only while the
//!    local queue is empty: otherwise it goes to the back of the local queue, as a
//!    woken process does on the BEAM, so that a process queued behind a chatty pair
//!    waits once for each process ahead of it, not for each one's chain. With the local
//!    queue empty it is never pushed: a push would offer a ring's next process to a
//!    searching worker's steal, which moves the chain to a cold core
//!    (docs/design/0023).
//! 3. The local queue (FIFO).
//! 4. The spawn stack, newest first (and its aging: `spawn_stack.rs`, rule 3).
//! 5. The injector, taking a batch into the local queue.
//! 6. Stealing half of another worker's local queue, from a random victim onwards, or
//!    else the oldest half of its spawn stack.
//! 7. Searching for a while (the steps above on the other workers, and their LIFO slots
//!    if they stand too long), then parking (see `park.rs`).
//!
//! At step 1 a busy worker takes a batch from the injector, not one process: what
//! overflows a local queue goes there (`Shared::push_local`), and under saturation the
//! injector must drain as fast as it fills or what overflowed waits for ever.
//!
//! Each turn of a process has a budget of [`BUDGET`] messages; a receive that finds the
//! budget spent yields: the process goes to the back of the local queue. If this
//! worker has nothing else to run, the yield would only pop the process right back; the
//! receive then starts a new turn in place instead ([`renew_turn`]). So a turn is one
//! poll, or one stretch of a poll between two budgets.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use crate::process::harness::{RunOutcome, Task};
use crate::runtime::context;
use crate::scheduler::held::Held;
use crate::scheduler::stand_in::DORMANT;
use crate::scheduler::{Remote, STREAMING, Shared};
use crate::tuning::{
    BUDGET, GLOBAL_INTERVAL, INJECTOR_BATCH, IO_EVENTS, IO_POLLS_SKIPPED, LIFO_RECHECK, LIFO_WATCH,
    LOCAL_CAP, MAX_LIFO_POLLS, SPAWN_AGE, SPAWN_WAIT_TICKS, SPIN_BEFORE_PARK, SPIN_HINTS,
    STEAL_LIFO_AFTER, YIELD_EVERY_ROUNDS,
};

/// Wakes the calls whose deadlines this worker deferred and that have lived through a
/// flush (`all`: every one): each arms its own timer at its next poll
/// (`timer/deferred.rs`). What it wakes lands in this worker's queues.
#[cold]
#[inline(never)]
pub(crate) fn flush_deferred(all: bool) -> bool {
    crate::timer::flush_deferred(all, |pid| crate::process::waker::waker(pid).wake())
}

/// A new turn in place for the running process, whose budget is spent, if this worker
/// has nothing else to run (the module docs' last paragraph; docs/design/0011; the
/// caller checks for exit signals): what the worker does between two polls is done here
/// too. False, and nothing done, if the caller must yield, as on a thread that is none
/// of `shared`'s workers.
pub(crate) fn renew_turn(shared: &Shared) -> bool {
    let Some(i) = context::current_index(shared) else {
        return false;
    };
    let me = &shared.workers[i];
    if shared.is_shutdown()
        || !me.lifo.is_empty()
        || me.local.len() != 0
        || !me.spawned.is_empty()
        || !shared.injector.is_empty()
        // Calls waiting with deferred deadlines need the flushes of `next_task`.
        || !shared.services.timer.deferred(i).is_empty()
        // A simulation chooses among every runnable process at each turn (`sim.rs`).
        || shared.services.simulated.is_some()
    {
        return false;
    }
    // The asking receive takes the first unit of the new budget.
    begin_turn(me, BUDGET - 1);
    crate::process::send::end_stream();
    true
}

/// What every turn starts with, a poll's or one renewed in place: the turn is counted
/// in `ticks` (the watchdog's sign of progress; only this worker writes its counter, so
/// a plain store, no read-modify-write), and the budget and the send count start over.
#[inline]
pub(crate) fn begin_turn(me: &Remote, budget: u32) {
    me.ticks.store(
        (me.ticks.load(Ordering::Relaxed) & !STREAMING).wrapping_add(1),
        Ordering::Relaxed,
    );
    crate::coop::start_turn(budget);
}

/// The worker loop. Returns when the runtime shuts down.
pub(crate) fn run(shared: Arc<Shared>, index: usize) {
    context::enter_worker(&shared, index, shared.services.timer.clone());
    // Entered once for the thread's life: no cost per poll (`Builder::tokio_context`).
    #[cfg(feature = "tokio")]
    let _tokio = shared
        .services
        .tokio_context
        .then(|| crate::compat::handle().enter());
    let now = Instant::now();
    let standing_in = match shared.workers[index].standing_in.load(Ordering::Acquire) {
        DORMANT => None,
        v => Some((v, shared.workers[v].ticks.load(Ordering::Relaxed))),
    };
    shared.workers[index].busy.store(true, Ordering::Relaxed);
    let mut w = Worker {
        standing_in,
        busy: true,
        seen: Held::new(shared.workers.len(), now),
        lifo_seen: None,
        shared,
        index,
        tick: 0,
        lifo_polls: 0,
        io_skipped: 0,
        busy_since: now,
        oldest_taken: now,
        spin_credit: Duration::ZERO,
        rng: 0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
    };
    crate::unwind::abort_on_unwind("a worker's loop", || w.run());
    crate::introspect::flush(&w.shared.workers[index].stats);
    context::leave_worker();
}

struct Worker {
    shared: Arc<Shared>,
    index: usize,
    /// A spare's: the worker it stands in for, and that worker's tick when it began
    /// (`stand_in.rs`); `None` for the runtime's own workers.
    standing_in: Option<(usize, u64)>,
    /// What this worker last stored in its `Remote::busy`.
    busy: bool,
    /// Polls started, moved on to the next injector turn after a spent turn
    /// (`run_task`): what step 1 counts. Not `Remote::ticks`, the turns others read.
    tick: u32,
    lifo_polls: u32,
    /// Busy polls of the OS skipped in a row because the local queue had no room for a
    /// poll's worth of woken processes (at most `IO_POLLS_SKIPPED`).
    io_skipped: u32,
    /// How long, at least, each other worker has been inside one poll (its LIFO process
    /// standing: `look_at_lifos`).
    seen: Held,
    /// When this worker last saw another's LIFO slot occupied at a park's look, took a
    /// LIFO process or was woken by a placement: it sleeps short for `LIFO_WATCH` after
    /// that while another runs (`park`).
    lifo_seen: Option<Instant>,
    /// When this worker last came back from a search or a park: the time since is busy
    /// time, which earns spin credit (`search`).
    busy_since: Instant,
    /// When this worker last took its spawn stack's oldest at an injector turn
    /// (`stack_turn`).
    oldest_taken: Instant,
    /// How long the next search may spin while another worker runs: busy time earns it,
    /// spinning spends it, and it never exceeds `SPIN_BEFORE_PARK`.
    spin_credit: Duration,
    rng: u64,
}

impl Worker {
    fn run(&mut self) {
        let shared = Arc::clone(&self.shared);
        let me = &shared.workers[self.index];
        while !shared.is_shutdown() {
            if self.standing_in.is_some() && !self.still_needed() && !self.go_dormant() {
                break;
            }
            let task = match self.next_task(&shared, me) {
                Some(task) => task,
                // A spare whose worker has moved on steps back (top of the loop) rather
                // than search or park (`stand_in.rs`, rule 4).
                None if self.standing_in.is_some() && !self.still_needed() => continue,
                None => {
                    self.set_busy(false);
                    let found = match self.search(&shared) {
                        Some(task) => Some(task),
                        None if shared.is_shutdown() => None,
                        // No flush may come for a long time: every call with a deferred
                        // deadline that still waits is woken to arm its timer before
                        // this worker parks (what it woke is in this worker's queues).
                        None if flush_deferred(true) => None,
                        None => {
                            let found = self.park();
                            self.busy_since = Instant::now();
                            shared.services.stats.tick_clock(self.busy_since);
                            found
                        }
                    };
                    let Some(task) = found else { continue };
                    task
                }
            };
            self.set_busy(true);
            self.run_chain(&shared, me, task);
        }
    }

    /// Step (0) of parking (`park.rs`, "How long a worker searches"): the process found,
    /// if any (`None` too once the shutdown began).
    fn search(&mut self, shared: &Shared) -> Option<Task> {
        shared.idle.begin_spin();
        let start = Instant::now();
        let busy = start.saturating_duration_since(self.busy_since);
        shared.workers[self.index].stats.busy(busy);
        crate::introspect::flush(&shared.workers[self.index].stats);
        let credit = (self.spin_credit + busy).min(SPIN_BEFORE_PARK);
        let mut rounds = 0u32;
        let mut now;
        let found = loop {
            // Look first, then pause (`park.rs`, "How long a worker searches"); every
            // `YIELD_EVERY_ROUNDS`-th pause offers the core to the OS instead.
            if rounds > 0 {
                if rounds.is_multiple_of(YIELD_EVERY_ROUNDS) {
                    std::thread::yield_now();
                } else {
                    for _ in 0..SPIN_HINTS {
                        std::hint::spin_loop();
                    }
                }
            }
            rounds += 1;
            now = Instant::now();
            if shared.is_shutdown() {
                break None;
            }
            if let Some(io) = shared.reactor_in_use() {
                io.poll_now(LOCAL_CAP - shared.workers[self.index].local.len());
                let me = &shared.workers[self.index];
                if let Some(t) = me.lifo.take().or_else(|| me.local.pop()) {
                    break Some(t);
                }
            }
            if let Some(t) = self.steal().or_else(|| self.look_at_lifos(now).1) {
                break Some(t);
            }
            let spun = now.duration_since(start);
            if spun >= shared.busy_wait && (spun >= credit || !shared.idle.others_running()) {
                break None;
            }
        };
        shared.idle.end_spin();
        self.spin_credit = credit.saturating_sub(now.duration_since(start));
        self.busy_since = now;
        if found.is_some() && shared.workers[self.index].local.len() > 0 {
            // There is more: another idle worker may take it.
            shared.wake_one();
        }
        found
    }

    /// One look at the other workers' LIFO slots: notes each worker's tick (`held.rs`)
    /// and takes a process that has stood there too long (`park.rs`, "The rule", its
    /// LIFO slot). Whether a slot was seen occupied, and the process taken.
    fn look_at_lifos(&mut self, now: Instant) -> (bool, Option<Task>) {
        let mut occupied = false;
        for (v, w) in self.shared.workers.iter().enumerate() {
            if v == self.index {
                continue;
            }
            let ticks = w.ticks.load(Ordering::Relaxed);
            let since = self.seen.since(v, ticks, now);
            if w.lifo.is_empty() {
                continue;
            }
            occupied = true;
            if ticks & STREAMING == 0
                && since.is_some_and(|t| now.duration_since(t) >= STEAL_LIFO_AFTER)
                && let Some(t) = w.lifo.take()
            {
                self.lifo_seen = Some(now);
                return (true, Some(t));
            }
        }
        (occupied, None)
    }

    /// Runs `task`, then the LIFO slot's process while steps 1 and 2 of the module docs
    /// allow: the ring's and ping-pong's path, kept free of `next_task`'s other steps
    /// (docs/design/0005). At most [`MAX_LIFO_POLLS`] + 1 polls, so the shutdown flag
    /// is read every few polls.
    #[inline]
    fn run_chain(&mut self, shared: &Shared, me: &Remote, mut task: Task) {
        loop {
            self.run_task(shared, me, task);
            if self.lifo_polls >= MAX_LIFO_POLLS
                || self.tick.is_multiple_of(GLOBAL_INTERVAL)
                || me.local.len() != 0
            {
                return;
            }
            match me.lifo.take() {
                Some(t) => {
                    self.lifo_polls += 1;
                    task = t;
                }
                None => return,
            }
        }
    }

    /// Says whether this worker runs processes (`Remote::busy`, for the watchdog).
    #[inline]
    fn set_busy(&mut self, busy: bool) {
        if self.busy != busy {
            self.busy = busy;
            self.shared.workers[self.index]
                .busy
                .store(busy, Ordering::Relaxed);
        }
    }

    /// A spare's look at the worker it stands in for (`stand_in.rs`, rule 4): still
    /// busy inside the poll it was held by.
    fn still_needed(&self) -> bool {
        let Some((v, ticks)) = self.standing_in else {
            return true;
        };
        let w = &self.shared.workers[v];
        w.ticks.load(Ordering::Relaxed) == ticks && w.busy.load(Ordering::Relaxed)
    }

    /// A spare steps back (`stand_in.rs`, rule 4) and waits, dormant, until a watchdog
    /// look claims its slot again (true) or the runtime shuts down (false).
    fn go_dormant(&mut self) -> bool {
        let shared = Arc::clone(&self.shared);
        let me = &shared.workers[self.index];
        crate::introspect::flush(&me.stats);
        // Calls whose deadlines this worker deferred arm their timers (what that wakes
        // lands in this worker's queues, handed on next).
        flush_deferred(true);
        while let Some(t) = me.lifo.take().or_else(|| me.local.pop()) {
            shared.inject(t);
        }
        while let Some(t) = me.spawned.pop_oldest() {
            shared.inject(t);
        }
        self.set_busy(false);
        let held = self.standing_in.take();
        shared.idle.deactivate();
        me.standing_in.store(DORMANT, Ordering::Release);
        // Last, so that no look starts a second spare for the same worker while this
        // one is still leaving (`stand_in.rs`, rule 1).
        if let Some((v, _)) = held {
            shared.workers[v]
                .stood_in_for
                .store(false, Ordering::Release);
        }
        // Rule 4's hand-overs: a wake-up, and the OS poll (`io.rs`'s invariants).
        shared.wake_one();
        shared.hand_on_the_os(self.index);
        let spares = shared.spares.lock().unwrap_or_else(PoisonError::into_inner);
        let dormant =
            |_: &mut _| !shared.is_shutdown() && me.standing_in.load(Ordering::Acquire) == DORMANT;
        drop(shared.dormant.wait_while(spares, dormant));
        if shared.is_shutdown() {
            return false;
        }
        let v = me.standing_in.load(Ordering::Acquire);
        self.standing_in = Some((v, shared.workers[v].ticks.load(Ordering::Relaxed)));
        self.set_busy(true);
        self.busy_since = Instant::now();
        true
    }

    #[inline]
    fn run_task(&mut self, shared: &Shared, me: &Remote, task: Task) {
        self.tick = self.tick.wrapping_add(1);
        begin_turn(me, BUDGET);
        me.polling
            .store(task.header().pid.to_word(), Ordering::Relaxed);
        let outcome = task.run();
        // A table count the poll kept in the stream cache goes back now (rule 2 of the
        // stream cache, `process/send.rs`).
        crate::process::send::end_stream();
        match outcome {
            RunOutcome::Reschedule(task) => {
                shared.push_local(self.index, task);
                if crate::coop::budget_spent() {
                    // A turn that spent its whole budget: the next pick looks at the
                    // injector and the OS first. A timer's or a socket's wake-up then
                    // waits for one such turn of the busy processes here, not for 61
                    // (docs/design/0032).
                    self.tick = self.tick.next_multiple_of(GLOBAL_INTERVAL);
                }
            }
            RunOutcome::Idle | RunOutcome::Exited => {}
        }
    }

    fn next_task(&mut self, shared: &Shared, me: &Remote) -> Option<Task> {
        if self.tick.is_multiple_of(GLOBAL_INTERVAL) {
            crate::introspect::flush(&me.stats);
            // Calls that still wait since the flush before are woken to arm their timers.
            flush_deferred(false);
            // Sockets are served while every worker is busy (`io.rs`), into this
            // worker's queues while they have room (`IO_POLLS_SKIPPED`).
            if let Some(io) = shared.reactor_in_use() {
                let room = LOCAL_CAP - me.local.len();
                if room >= IO_EVENTS || self.io_skipped >= IO_POLLS_SKIPPED {
                    self.io_skipped = 0;
                    io.poll_now(room);
                } else {
                    self.io_skipped += 1;
                }
            }
            if self.stack_turn(me)
                && let Some(t) = me.spawned.pop_oldest()
            {
                self.oldest_taken = Instant::now();
                return Some(t);
            }
            if let Some(t) = shared.injector.pop_into(&me.local, INJECTOR_BATCH) {
                return Some(t);
            }
        }
        // A spawn that has waited `SPAWN_WAIT_TICKS` turns joins the back of the local
        // queue (`spawn_stack.rs`, rule 3): a chain that spawns nothing does not keep it
        // waiting.
        if let Some(stamp) = me.spawned.newest_stamp()
            && (me.ticks.load(Ordering::Relaxed) & !STREAMING).wrapping_sub(stamp)
                >= SPAWN_WAIT_TICKS
            && let Some(t) = me.spawned.pop_newest()
        {
            shared.push_local(self.index, t);
        }
        if let Some(t) = me.lifo.take() {
            if me.local.len() == 0 {
                // Nothing waits behind it here (step 2): not pushed; the chain goes on,
                // or a new one starts after `MAX_LIFO_POLLS`.
                self.lifo_polls = self.lifo_polls % MAX_LIFO_POLLS + 1;
                return Some(t);
            }
            shared.push_local(self.index, t);
        }
        self.lifo_polls = 0;
        me.local
            .pop()
            .or_else(|| me.spawned.pop_newest())
            .or_else(|| shared.injector.pop_into(&me.local, INJECTOR_BATCH))
            .or_else(|| self.steal())
    }

    /// Whether this injector turn takes the spawn stack's oldest first (rule 3 of
    /// `spawn_stack.rs`): every other turn while the local queue holds processes (they
    /// would otherwise keep the stack waiting), and once [`SPAWN_AGE`] has passed since
    /// the oldest was last taken (newer spawns would otherwise keep it waiting). A
    /// fork-join's oldest is its largest unstarted subtree: taken often, the walk would
    /// turn breadth-first again.
    fn stack_turn(&mut self, me: &Remote) -> bool {
        if me.spawned.is_empty() {
            return false;
        }
        if me.local.len() != 0 && (self.tick / GLOBAL_INTERVAL).is_multiple_of(2) {
            return true;
        }
        self.oldest_taken.elapsed() >= SPAWN_AGE
    }

    fn next_rand(&mut self) -> usize {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as usize
    }

    /// Half of another worker's local queue, or else half of its spawn stack, or else a
    /// batch of the injector.
    fn steal(&mut self) -> Option<Task> {
        let n = self.shared.workers.len();
        let start = self.next_rand() % n;
        let shared = &*self.shared;
        let me = &shared.workers[self.index];
        for i in 0..n {
            let v = (start + i) % n;
            if v == self.index {
                continue;
            }
            if let Some(t) = shared.workers[v].local.steal_into(&me.local) {
                me.stats.stole();
                return Some(t);
            }
        }
        // The oldest half of another worker's spawn stack (its oldest: a fork-join's
        // largest unstarted subtree).
        for i in 0..n {
            let v = (start + i) % n;
            if v != self.index
                && let Some(t) = shared.workers[v]
                    .spawned
                    .steal_into(&me.spawned, me.ticks.load(Ordering::Relaxed) & !STREAMING)
            {
                me.stats.stole();
                return Some(t);
            }
        }
        shared.injector.pop_into(&me.local, INJECTOR_BATCH)
    }

    /// Steps (1)–(3) of parking (`park.rs`). What to run on waking, if the look found
    /// a stuck LIFO process; `None` to look for work again. However it ends, the worker
    /// has left the sleepers and calls `Doze::worker_woke` (`doze.rs`, "The rule").
    fn park(&mut self) -> Option<Task> {
        let shared = self.shared.clone();
        let me = self.index;
        // With sockets in use, the worker that gets the driver parks in the OS poll
        // (`io.rs`: its design's first point, and its invariants); one that found it
        // taken tries again at each look.
        let io = shared.reactor_in_use();
        let mut driver = None;
        let found = loop {
            // Without sockets `in_driver` stays clear (it is cleared as each park ends).
            if driver.is_none()
                && let Some(io) = io
            {
                driver = io.try_driver();
                shared.workers[me]
                    .in_driver
                    .store(driver.is_some(), Ordering::SeqCst);
            }
            shared.idle.register(me);
            // Step (2) of the parking protocol (`park.rs`; docs/design/0025).
            if shared.is_shutdown() || shared.has_work() || !shared.workers[me].lifo.is_empty() {
                shared.idle.unregister(me);
                break None;
            }
            let now = Instant::now();
            let (occupied, found) = self.look_at_lifos(now);
            if occupied {
                self.lifo_seen = Some(now);
            }
            if let Some(t) = found {
                shared.idle.unregister(me);
                break Some(t);
            }
            let watching = self
                .lifo_seen
                .is_some_and(|t| now.duration_since(t) < LIFO_WATCH)
                && shared.idle.others_running();
            if watching {
                // An owner may be inside a long poll, or go on placing processes in its
                // slot: look again soon, without a search in between while it makes
                // progress (`park.rs`, "The rule").
                shared.idle.begin_short();
                self.sleep(driver.as_deref_mut(), io, Some(LIFO_RECHECK));
                shared.idle.end_short();
                continue;
            }
            // Until woken, by a push, or by a LIFO placement that no other idle worker
            // watches. Said before a last look at the slots: a placement then sees the
            // count or is seen by the look, but for the unfenced race of `park.rs`
            // ("The rule"), which the watchdog covers.
            let deep = &shared.workers[me].deep;
            shared.idle.begin_deep(deep);
            if let (true, found) = self.look_at_lifos(Instant::now()) {
                let _ = shared.idle.end_deep(deep);
                shared.idle.unregister(me);
                self.lifo_seen = Some(now);
                match found {
                    Some(t) => break Some(t),
                    None => continue,
                }
            }
            self.sleep(driver.as_deref_mut(), io, None);
            if !shared.idle.end_deep(deep) {
                // Woken by a placement: watch the slots from now on, even if that
                // process has already run (the next placement would wake us again).
                self.lifo_seen = Some(Instant::now());
            }
            break None;
        };
        shared.workers[me].in_driver.store(false, Ordering::SeqCst);
        shared.watchdog.doze.worker_woke();
        found
    }

    /// Step (3): parks up to `timeout` (`None`: until woken), in the OS poll if this
    /// worker holds the driver, and leaves the sleepers; the events the poll brought
    /// wake their processes into this worker's queues.
    fn sleep(
        &self,
        driver: Option<&mut crate::io::reactor::Driver>,
        io: Option<&crate::io::reactor::Reactor>,
        timeout: Option<std::time::Duration>,
    ) {
        let shared = &*self.shared;
        shared.workers[self.index].stats.parked();
        match (driver, io) {
            (Some(d), Some(io)) => {
                let events = d.poll(timeout);
                shared.idle.unregister(self.index);
                if events {
                    d.dispatch(io);
                }
            }
            _ => {
                match timeout {
                    Some(t) => std::thread::park_timeout(t),
                    None => std::thread::park(),
                }
                shared.idle.unregister(self.index);
            }
        }
    }
}
