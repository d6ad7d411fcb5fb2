//! The watchdog thread: one per runtime, it looks for workers held by one poll.
//!
//! otter cannot preempt a process: one that computes without awaiting, or blocks its
//! thread in a system call, holds its worker for as long as it runs. Every
//! [`WATCHDOG`], while some worker is awake, this thread looks at each worker's tick.
//! A worker whose tick has not moved for `WATCHDOG` is inside one long poll, or parked;
//! if busy, it is held (`held.rs`). The look
//!
//! 1. starts or wakes a spare thread in place of a held worker that does not stream
//!    (`stand_in.rs`, rules 1 and 2);
//! 2. hands its LIFO process and its local queue to the injector and wakes a worker,
//!    so that nothing queued behind the long poll waits for it to end; its spawn stack
//!    stays for the woken worker to steal (`spawn_stack.rs`, rule 4);
//! 3. wakes, once per poll, the calls whose deadlines it deferred (`timer/deferred.rs`);
//! 4. records, for introspection, that the worker is held and since when (at most a
//!    look late), so that [`Handle::stuck`](crate::Handle::stuck) names the process.
//!
//! Go's runtime has the same thread (`sysmon`). Why a thread and not the workers' own
//! looks, which missed a one-worker runtime and one whose workers are all held:
//! docs/design/0027.
//!
//! # Rules
//!
//! 1. **Idle costs nothing.** After [`WATCHDOG_QUIET`] looks in a row that found every
//!    worker parked and no tick moved since the look before, the thread dozes until a
//!    worker leaves its park (`doze.rs`). A runtime that runs a process at least once
//!    per `WATCHDOG_QUIET` looks never pays for that wake-up.
//! 2. **It never runs a process.** It moves tasks between queues, claims spare slots
//!    and starts threads; what it hands on goes through the injector.
//! 3. **Shutdown.** The runtime's shutdown sets its flag, then stops the thread and
//!    joins it ([`Watchdog::stop`]; how a dozing thread sees the flag: `doze.rs`).
//!
//! [`WATCHDOG`]: crate::tuning::WATCHDOG
//! [`WATCHDOG_QUIET`]: crate::tuning::WATCHDOG_QUIET

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::process::harness::Task;
use crate::scheduler::doze::Doze;
use crate::scheduler::held::Held;
use crate::scheduler::queue::Local;
use crate::scheduler::{STREAMING, Shared, stand_in};
use crate::tuning::{WATCHDOG, WATCHDOG_QUIET};

/// The watchdog thread's state in [`Shared`].
#[derive(Debug, Default)]
pub(crate) struct Watchdog {
    pub(crate) doze: Doze,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Watchdog {
    /// Starts the thread (at the runtime's start).
    pub(crate) fn start(shared: &Arc<Shared>, name: String) -> std::io::Result<()> {
        let s = Arc::clone(shared);
        let h = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(&s))?;
        let thread = &shared.watchdog.thread;
        *thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(h);
        Ok(())
    }

    /// Rule 3: stops the thread and joins it. The shutdown flag is set.
    pub(crate) fn stop(&self) {
        self.doze.stop();
        let mut thread = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = thread.take() {
            let _ = h.join();
        }
    }
}

fn run(shared: &Arc<Shared>) {
    let doze = &shared.watchdog.doze;
    let mut watch = Watch {
        seen: Held::new(shared.workers.len(), Instant::now()),
        woke_deferred: vec![u64::MAX; shared.workers.len()],
        last: Instant::now(),
        taken: Local::new(),
    };
    let mut quiet = 0u32;
    while !shared.is_shutdown() {
        if quiet >= WATCHDOG_QUIET {
            doze.doze_unless(|| shared.is_shutdown() || shared.idle.someone_busy());
            quiet = 0;
        } else {
            doze.nap(WATCHDOG, || shared.is_shutdown());
        }
        if shared.is_shutdown() {
            return;
        }
        let busy = shared.idle.someone_busy();
        let now = Instant::now();
        shared.services.stats.tick_clock(now);
        // Rule 1: a tick that moved since the last look (work done in between, even if
        // every worker is parked again now) counts as busy too.
        if watch.look(shared, busy, now) || busy {
            quiet = 0;
        } else {
            quiet += 1;
        }
    }
}

/// What the thread remembers between looks.
struct Watch {
    /// Each worker slot's tick as last seen, and since when (`held.rs`).
    seen: Held,
    /// Each worker slot's tick when its deferred callers were last woken (item 3).
    woke_deferred: Vec<u64>,
    /// When the last look was.
    last: Instant,
    /// Where a look steals a held worker's queue into: a thief's queue must be empty
    /// (`steal_into`), and each look leaves it empty.
    taken: Local<Task>,
}

impl Watch {
    /// One look at every worker slot, spares included: notes each one's tick, and, if
    /// `act`, deals with every worker inside one poll for at least [`WATCHDOG`]. Acts
    /// only on what it has watched without a gap: after a doze (or a nap the OS made
    /// long), a tick unchanged since the previous look says nothing of the time between,
    /// so that look only notes the ticks. Whether any tick moved since the last look.
    fn look(&mut self, shared: &Arc<Shared>, act: bool, now: Instant) -> bool {
        let act = act && now.duration_since(self.last) < 2 * WATCHDOG;
        self.last = now;
        let mut moved = false;
        let mut handed = false;
        for (v, w) in shared.workers.iter().enumerate() {
            let ticks = w.ticks.load(Ordering::Relaxed);
            let Some(since) = self.seen.since(v, ticks, now) else {
                w.stats.not_held();
                moved = true;
                continue;
            };
            if !act {
                self.seen.restart(v, ticks, now);
                continue;
            }
            if now.duration_since(since) < WATCHDOG {
                continue;
            }
            // Item 4: what introspection reports as a stuck process.
            if w.busy.load(Ordering::Relaxed) {
                w.stats
                    .held(&shared.services.stats, ticks & !STREAMING, since);
            } else {
                w.stats.not_held();
            }
            if stand_in::wants_spare(shared, v, ticks)
                && let Some(s) = stand_in::stand_in_for(shared, v)
            {
                // Its tick has not moved since it was dormant: it is held from now on
                // at the earliest (its first poll may not even have begun).
                let ticks = shared.workers[s].ticks.load(Ordering::Relaxed);
                self.seen.restart(s, ticks, now);
            }
            if self.woke_deferred[v] != ticks {
                self.woke_deferred[v] = ticks;
                // From this thread, each goes to the injector.
                shared
                    .services
                    .timer
                    .deferred(v)
                    .callers(|pid| crate::process::waker::waker(pid).wake());
            }
            // Everything queued behind the poll, oldest first: the LIFO process was
            // woken last but would have run next.
            if let Some(t) = w.lifo.take() {
                shared.injector.push(t);
                handed = true;
            }
            while let Some(t) = w.local.steal_into(&self.taken) {
                shared.injector.push(t);
                while let Some(t) = self.taken.pop() {
                    shared.injector.push(t);
                }
                handed = true;
            }
            // Item 2: the spawn stack stays, for the worker woken to steal it.
            handed |= !w.spawned.is_empty();
        }
        if handed {
            shared.wake_one();
        }
        moved
    }
}
