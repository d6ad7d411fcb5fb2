//! Loom model of parking (`src/scheduler/park.rs`): a worker that finds no work searches
//! for a while, then stops searching, registers as sleeping, looks once more and parks; a
//! pusher makes work visible and, unless a worker is searching (which will find it), wakes
//! a registered sleeper. A wake-up lost between the two is a worker parked for good: loom
//! reports it as a deadlock. This is the rule "a runnable process never waits for a timer
//! tick while a worker is idle" for the local queues and the injector (`items` stands for
//! them); the models park without a timeout, so no watchdog can hide a lost wake-up. The
//! driver models (below) add the OS poll that the worker holding the IO driver parks in;
//! the spare models, a spare thread (`scheduler/stand_in.rs`) that takes a wake-up and
//! steps back, and one that held the driver and steps back.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p otter --release --test loom_park`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use otter::__loom::{Idle, LifoSlot};

/// The worker loop's idle path, as `scheduler/worker.rs` runs it: take work if there is
/// some, else search (here: two looks, the spin's clock replaced by a yield), then
/// register, look again, park.
fn worker(idle: &Idle, me: usize, items: &AtomicUsize, want: usize) {
    let mut got = 0;
    while got < want {
        if take(items) {
            got += 1;
            continue;
        }
        // Step (0): the search may end either way.
        idle.begin_spin();
        let found = take(items) || {
            thread::yield_now();
            take(items)
        };
        idle.end_spin();
        if found {
            got += 1;
            continue;
        }
        idle.register(me);
        if items.load(Ordering::Acquire) > 0 {
            idle.unregister(me);
            continue;
        }
        thread::park();
        idle.unregister(me);
    }
}

fn take(items: &AtomicUsize) -> bool {
    items
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

#[test]
fn a_push_wakes_a_worker_that_is_about_to_park() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let items = Arc::new(AtomicUsize::new(0));
        let w = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 0, &items, 1))
        };
        // The pusher: make the work visible, then wake the spinner, or a sleeper if one
        // is registered.
        items.fetch_add(1, Ordering::Release);
        if idle.pop_sleeper() == Some(0) {
            w.thread().unpark();
        }
        w.join().unwrap();
    });
}

#[test]
fn two_pushes_in_a_row_are_both_taken() {
    // The worker parks between the two items in some interleavings: the second push must
    // find it registered again (or the worker must see the item on its last look).
    loom::model(|| {
        let idle = Arc::new(Idle::new(1));
        let items = Arc::new(AtomicUsize::new(0));
        let w = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 0, &items, 2))
        };
        for _ in 0..2 {
            items.fetch_add(1, Ordering::Release);
            if idle.pop_sleeper() == Some(0) {
                w.thread().unpark();
            }
        }
        w.join().unwrap();
    });
}

#[test]
fn a_process_queued_behind_a_long_poll_is_taken_by_an_idle_worker() {
    // Two workers: worker 0 queues a process and then computes for ever (it never takes
    // the item: the model's thread just ends); worker 1 is idle, somewhere between its
    // search and its park. It must get the item without a watchdog.
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        let items = Arc::new(AtomicUsize::new(0));
        let idle_worker = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || worker(&idle, 1, &items, 1))
        };
        items.fetch_add(1, Ordering::Release);
        if idle.pop_sleeper() == Some(1) {
            idle_worker.thread().unpark();
        }
        idle_worker.join().unwrap();
    });
}

// ===== the worker that holds the driver: parking in the OS poll =====
//
// A worker that holds the IO driver parks in the OS poll (`scheduler/worker.rs`, `park`;
// `io.rs`). The poll's events wake their processes into that worker's own LIFO slot.
// While another worker's LIFO slot holds a process, the parking worker sleeps only
// briefly (`LIFO_RECHECK`) and looks again; that short sleep polls the OS too. The rule
// these models check: a process woken by the short sleep's poll is run, not left in the
// slot while its worker goes back to a poll that nothing will end (docs/design/0025, the
// lost wake-up of `1520fd5`).

/// A process in a LIFO slot.
struct P(Box<usize>);

impl otter::__loom::Item for P {
    fn into_raw(self) -> *mut () {
        Box::into_raw(self.0).cast()
    }
    #[allow(unsafe_code)]
    unsafe fn from_raw(ptr: *mut ()) -> Self {
        // SAFETY: `ptr` came from `into_raw` above (the trait's contract).
        P(unsafe { Box::from_raw(ptr.cast()) })
    }
}

/// The OS as the driver sees it: readiness not collected yet. A poll collects all of it
/// (`epoll_wait`); one without a timeout blocks until there is some. Readiness collected
/// by one poll does not end a later one: unlike `thread::park`'s token, a later poll
/// waits for new readiness, so the model parks again after a wake-up that brought none.
struct Os {
    ready: AtomicUsize,
    /// The socket has become readable; the model's OS makes nothing more ready.
    done: AtomicBool,
}

/// A poll without a timeout was entered after the only readiness had been collected:
/// nothing would end it, and the process that readiness woke sits in the worker's own
/// slot. In the runtime it waits for whatever wakes the worker next (a timer, seconds
/// later); the model returns instead of blocking, so that a test can count it.
struct Lost;

impl Os {
    /// A socket becomes readable: the OS wakes the thread blocked in its poll, if any.
    fn make_ready(&self, poller: &thread::Thread) {
        self.ready.fetch_add(1, Ordering::Release);
        self.done.store(true, Ordering::Release);
        poller.unpark();
    }

    /// The driver's poll; with `timeout` it may return at once (a model has no clock).
    /// Events wake their process into the polling worker's own LIFO slot (`dispatch`).
    fn poll(&self, timeout: bool, own: &LifoSlot<P>) -> Result<(), Lost> {
        loop {
            let n = self.ready.swap(0, Ordering::AcqRel);
            if n > 0 {
                assert!(own.replace(P(Box::new(n))).is_none());
                return Ok(());
            }
            if timeout {
                return Ok(());
            }
            if self.done.load(Ordering::Acquire) && self.ready.load(Ordering::Acquire) == 0 {
                return Err(Lost);
            }
            thread::park();
        }
    }
}

/// `worker.rs`'s `park` for the worker that holds the driver, until it has run the
/// process a socket event woke: register, one more look, then a short sleep while
/// `other` (another worker's LIFO slot) holds a process, else the poll without a
/// timeout. `look_at_own_slot` is step (2)'s look at the worker's own LIFO slot, the
/// fix; without it the model must find the lost wake-up.
fn driver_worker(
    idle: &Idle,
    own: &LifoSlot<P>,
    other: &LifoSlot<P>,
    os: &Os,
    look_at_own_slot: bool,
) -> Result<(), Lost> {
    loop {
        if own.take().is_some() {
            return Ok(()); // ran the socket's process
        }
        loop {
            idle.register(0);
            if look_at_own_slot && !own.is_empty() {
                idle.unregister(0);
                break;
            }
            if !other.is_empty() {
                // The short sleep: a yield lets worker 1 go on, as the sleep's time does.
                thread::yield_now();
                let polled = os.poll(true, own);
                idle.unregister(0);
                polled?;
                continue;
            }
            let polled = os.poll(false, own);
            idle.unregister(0);
            polled?;
            break;
        }
    }
}

/// Worker 0 holds the driver and is about to park; worker 1's LIFO slot holds a process
/// that worker 1 then runs; a socket becomes readable at any point. Returns in how many
/// of the interleavings the wake-up was lost.
fn driver_model(look_at_own_slot: bool) -> usize {
    let lost = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = lost.clone();
    loom::model(move || {
        let idle = Arc::new(Idle::new(2));
        let own = Arc::new(LifoSlot::<P>::new());
        let other = Arc::new(LifoSlot::<P>::new());
        assert!(other.replace(P(Box::new(0))).is_none());
        let os = Arc::new(Os {
            ready: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        });
        let w0 = {
            let (idle, own, other, os) = (idle.clone(), own.clone(), other.clone(), os.clone());
            thread::spawn(move || driver_worker(&idle, &own, &other, &os, look_at_own_slot))
        };
        let w1 = {
            let other = other.clone();
            thread::spawn(move || drop(other.take()))
        };
        os.make_ready(w0.thread());
        w1.join().unwrap();
        if w0.join().unwrap().is_err() {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    lost.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_process_woken_by_the_short_sleeps_poll_is_run() {
    assert_eq!(driver_model(true), 0);
}

#[test]
fn without_the_look_at_its_own_slot_the_worker_loses_the_wake_up() {
    // The defect `1520fd5` fixed: the short sleep's poll wakes the process into the
    // worker's own slot; the worker looks only at the queues and the other slots, finds
    // worker 1's slot empty by now, and polls with no timeout for readiness already
    // collected. The model has to find that interleaving.
    assert!(driver_model(false) > 0);
}

// ===== a spare thread that steps back (`scheduler/stand_in.rs`) =====

/// A spare whose worker has moved on: registered as sleeping (it searched and parked
/// before it looked), it is woken, and then steps back instead of running anything:
/// it leaves the active count and, as `go_dormant` does, wakes one sleeper, since the
/// wake-up it took may have been meant for work it will not run.
fn stepping_back_spare(
    idle: &Idle,
    me: usize,
    workers: &[thread::Thread],
    woken: &AtomicBool,
    pass_on: bool,
) {
    idle.register(me);
    // Its wait (a park, in the runtime), as a yield loop: loom's `unpark` must not reach
    // a thread blocked on the sleepers' lock, which a real one may be.
    while !woken.load(Ordering::Acquire) {
        thread::yield_now();
    }
    idle.unregister(me);
    idle.deactivate();
    if pass_on && let Some(w) = idle.pop_sleeper() {
        workers[w].unpark();
    }
}

/// Worker 0 and a spare (1) are idle; a push pops whichever registered last. Worker 0
/// must get the item in every interleaving (else loom reports a deadlock: worker 0
/// parked for good with the item queued).
fn spare_model(pass_on: bool) {
    loom::model(move || {
        let idle = Arc::new(Idle::new(1));
        idle.activate(); // the spare, started by a watchdog look
        let items = Arc::new(AtomicUsize::new(0));
        let w0 = {
            let (idle, items) = (idle.clone(), items.clone());
            thread::spawn(move || {
                // Worker 0 as in `worker` above, without the search (it ended).
                while !take(&items) {
                    idle.register(0);
                    if items.load(Ordering::Acquire) > 0 {
                        idle.unregister(0);
                        continue;
                    }
                    thread::park();
                    idle.unregister(0);
                }
            })
        };
        let woken = Arc::new(AtomicBool::new(false));
        let spare = {
            let (idle, woken) = (idle.clone(), woken.clone());
            let ws = [w0.thread().clone()];
            thread::spawn(move || stepping_back_spare(&idle, 1, &ws, &woken, pass_on))
        };
        // The pusher: one item, and a wake-up for a sleeper if one is registered. The
        // spare leaves once woken, by this push or, if it popped worker 0, right after.
        items.fetch_add(1, Ordering::Release);
        if idle.pop_sleeper() == Some(0) {
            w0.thread().unpark();
        }
        woken.store(true, Ordering::Release);
        w0.join().unwrap();
        spare.join().unwrap();
    });
}

#[test]
fn a_spare_that_steps_back_passes_the_wake_up_on() {
    // With `false` (the first version of `go_dormant`), loom finds worker 0 parked for
    // good: the push popped the spare, which left without passing the wake-up on.
    // (A deadlock aborts the test binary, so that run is not a test of its own.)
    spare_model(true);
}

// ===== a spare that steps back while a worker parks without the driver =====
//
// A worker that finds the IO driver taken when it parks parks in `thread::park`,
// counting on the holder to come back to the OS poll (`io.rs`'s invariants). A spare
// that steps back does not come back: it unparks every worker unless one is in the OS
// poll (`Shared::hand_on_the_os`), and a worker so woken tries the driver again. The rule
// this model checks: a socket that becomes readable after that is read. Without the
// spare's unpark loom finds worker 0 parked for good with the driver free and the socket
// ready (a deadlock, which aborts the test binary: not a test of its own); it is the
// lost wake-up a mixed-cluster test met as a killed node's connection that no worker
// saw close.

/// The OS poll as a blocking `epoll_wait`: readiness, and whether a thread waits in it
/// (only worker 0 does, here), which the OS wakes when readiness comes. A lock, as the
/// kernel's: loom models `SeqCst` as acquire and release only, under which two flags
/// would let both sides miss each other.
struct Epoll(loom::sync::Mutex<(bool, bool)>);

impl Epoll {
    fn make_ready(&self, poller: &thread::Thread) {
        let mut s = self.0.lock().unwrap();
        s.0 = true;
        if s.1 {
            poller.unpark();
        }
    }

    /// Blocks until readiness comes, and collects it.
    fn poll(&self) {
        loop {
            {
                let mut s = self.0.lock().unwrap();
                if s.0 {
                    *s = (false, false);
                    return;
                }
                s.1 = true;
            }
            thread::park();
        }
    }
}

fn try_lock(lock: &AtomicBool) -> bool {
    lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

#[test]
fn a_spare_that_steps_back_hands_on_the_os() {
    loom::model(|| {
        // The driver's lock, taken only by `try_lock`: a flag (loom's `Mutex` blocks a
        // `try_lock` that would fail instead of failing it).
        let driver = Arc::new(AtomicBool::new(false));
        let in_driver = Arc::new(AtomicBool::new(false)); // worker 0's
        let os = Arc::new(Epoll(loom::sync::Mutex::new((false, false))));
        // Worker 0 parks until it has read the socket: in the OS poll if it gets the
        // driver, else in `thread::park`, trying the driver again at each wake-up.
        let w0 = {
            let (driver, in_driver, os) = (driver.clone(), in_driver.clone(), os.clone());
            thread::spawn(move || {
                loop {
                    let held = try_lock(&driver);
                    in_driver.store(held, Ordering::SeqCst);
                    if held {
                        os.poll();
                        in_driver.store(false, Ordering::SeqCst);
                        driver.store(false, Ordering::Release);
                        return;
                    }
                    thread::park();
                }
            })
        };
        // The spare holds the driver for a look (a `poll_now`, or a park whose last
        // look found work: here a look at an empty queue), then steps back.
        let queue = Arc::new(AtomicUsize::new(0));
        let spare = {
            let (driver, in_driver) = (driver.clone(), in_driver.clone());
            let w0 = w0.thread().clone();
            thread::spawn(move || {
                if try_lock(&driver) {
                    assert_eq!(queue.load(Ordering::Acquire), 0);
                    driver.store(false, Ordering::Release);
                }
                if !in_driver.load(Ordering::SeqCst) {
                    w0.unpark();
                }
            })
        };
        os.make_ready(w0.thread());
        spare.join().unwrap();
        w0.join().unwrap();
    });
}

// ===== a LIFO placement that wakes a worker parked until woken (`park.rs`, "The rule") =====
//
// A worker that parks until woken counts itself (`Idle::begin_deep`, its flag set) before
// its last look at the other workers' LIFO slots; a worker that puts a process into its
// empty LIFO slot while no idle worker watches the slots claims one such park
// (`Idle::claim_deep`) and wakes that worker. The worker uncounts itself when it wakes
// (`Idle::end_deep`) unless a placement claimed it. The rule this model checks: each park
// is uncounted exactly once, whoever races for it, so the count a placement reads on the
// ring's path returns to zero, and no two placements wake the worker for one park. (The
// placement reads the count without a fence, so a worker parking at that very moment may
// be missed; the watchdog finds the process then. Only the count is modelled here.)

#[test]
fn a_deep_park_is_uncounted_once_by_a_placement_or_by_the_worker() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(3));
        let deep = Arc::new(AtomicBool::new(false));
        let slots = [
            Arc::new(LifoSlot::<P>::new()),
            Arc::new(LifoSlot::<P>::new()),
        ];
        let worker = {
            let (idle, deep, slots) = (idle.clone(), deep.clone(), slots.clone());
            thread::spawn(move || {
                // Worker 2 has found nothing and is registered; it parks until woken.
                idle.register(2);
                idle.begin_deep(&deep);
                let occupied = slots.iter().any(|s| !s.is_empty());
                if !occupied {
                    // The park, woken by a claim or by anything else.
                    thread::yield_now();
                }
                let mine = idle.end_deep(&deep);
                idle.unregister(2);
                usize::from(mine)
            })
        };
        // Workers 0 and 1 each put a process into their own empty LIFO slot.
        let placers: Vec<_> = (0..2)
            .map(|i| {
                let (idle, deep, slot) = (idle.clone(), deep.clone(), slots[i].clone());
                thread::spawn(move || {
                    assert!(slot.replace(P(Box::new(i))).is_none());
                    usize::from(idle.lifo_unwatched() && idle.claim_deep(&deep))
                })
            })
            .collect();
        let claims: usize = placers.into_iter().map(|p| p.join().unwrap()).sum();
        let uncounted = worker.join().unwrap() + claims;
        assert_eq!(uncounted, 1, "a park uncounted {uncounted} times");
        assert!(
            !idle.lifo_unwatched(),
            "the count of deep parks is back to zero"
        );
    });
}

// ===== the idle word (`park.rs`, "The idle word") =====
//
// The counts are one word, so a reader sees one snapshot of them. The rule this model
// checks: a worker that goes from parked to searching is never counted as both, so a
// searching worker that asks whether another runs (`Idle::others_running`, which decides
// whether it searches on) hears yes while one does. With the counts in separate atomics,
// a reader that loaded the sleeping count before the worker unregistered and the
// searching count after it began to search counted it twice, and answered that nobody
// ran.

#[test]
fn a_snapshot_counts_a_worker_once() {
    loom::model(|| {
        // Worker 0 runs processes throughout; worker 1 is parked and wakes to search;
        // worker 2 searches and asks.
        let idle = Arc::new(Idle::new(3));
        idle.register(1);
        idle.begin_spin(); // worker 2
        let waking = {
            let idle = idle.clone();
            thread::spawn(move || {
                idle.unregister(1);
                idle.begin_spin();
                idle.end_spin();
                idle.register(1);
            })
        };
        for _ in 0..2 {
            assert!(idle.others_running(), "worker 0 runs, and is seen to");
            thread::yield_now();
        }
        waking.join().unwrap();
        assert!(idle.others_running());
        assert!(idle.someone_busy());
    });
}
