//! The simulation's scheduler: what a turn is, where runnable processes are gathered
//! from, how the clock moves, and the thread's state while a method runs.

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::{HISTORY, Simulation, Turn, fault, mix};
use crate::pid::ProcessId;
use crate::process::harness::{RunOutcome, Task};
use crate::runtime::context;
use crate::tuning::BUDGET;

/// A turn that holds the thread this long in real time is reported (once a
/// simulation): it most likely blocks the thread.
const HELD_WARNING: std::time::Duration = std::time::Duration::from_secs(2);

/// A runnable process: its task, its name in the trace, its node.
pub(super) struct Ready {
    task: Task,
    ordinal: u64,
    node: usize,
}

/// The guard of [`Simulation::enter`]: the thread's state back as it was, even when a
/// method unwinds.
pub(super) struct Entered;

impl Drop for Entered {
    fn drop(&mut self) {
        fault::lend(None);
        crate::time::set_simulated(None);
        context::leave_worker();
    }
}

impl Simulation {
    /// Makes this thread the simulation's (its clock, its buggify sites) until the
    /// guard drops; each turn then makes it the worker of the turn's node
    /// ([`Simulation::switch`]).
    pub(super) fn enter(&mut self) -> Entered {
        assert!(
            !context::is_worker_thread(),
            "otter: a Simulation stepped from a thread that is already a worker \
             (from inside a process, of a runtime or of a simulation)"
        );
        self.on = None;
        crate::time::set_simulated(Some(self.now()));
        fault::lend(self.sites.clone());
        Entered
    }

    /// Leaves the node this thread is the worker of, at the end of a method.
    pub(super) fn leave(&mut self) {
        if self.on.take().is_some() {
            context::leave_worker();
        }
    }

    /// Makes this thread node `n`'s worker.
    fn switch(&mut self, n: usize) {
        if self.on == Some(n) {
            return;
        }
        self.leave();
        if let Some(shared) = &self.nodes[n].shared {
            context::enter_worker(shared, 0, shared.services.timer.clone());
            self.on = Some(n);
        }
    }

    pub(super) fn set_clock(&mut self, ms: u64) {
        if ms != self.now_ms {
            self.now_ms = ms;
            self.trace = mix(self.trace, ms ^ (1 << 63));
            self.net.set_now(ms);
            crate::time::set_simulated(Some(self.now()));
        }
    }

    /// When the next timer of any node is due or the next arrival on the network
    /// comes, in milliseconds.
    pub(super) fn next_due(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter_map(|n| n.shared.as_ref()?.services.timer.next_due())
            .chain(self.net.next_due())
            .min()
    }

    /// Runs until idle, then, if a timer or an arrival is due by `limit`
    /// (milliseconds), moves the clock to it and fires everything due then; whether
    /// anything was due.
    pub(super) fn tick_here(&mut self, limit: u64) -> bool {
        self.idle_here();
        match self.next_due() {
            Some(at) if at <= limit => {
                self.set_clock(at.max(self.now_ms));
                let now = self.now_ms;
                for n in 0..self.nodes.len() {
                    if let Some(shared) = self.nodes[n].shared.clone() {
                        self.switch(n);
                        shared.services.timer.fire_due(now);
                    }
                }
                self.net.fire_due(now);
                true
            }
            _ => false,
        }
    }

    /// Runs turns until no process can run; how many.
    pub(super) fn idle_here(&mut self) -> u64 {
        let mut n = 0;
        loop {
            while self.step_here() {
                n += 1;
            }
            // Calls that wait with a deadline their worker deferred arm it now, as a
            // worker does before it parks (`timer/deferred.rs`).
            let mut woke = false;
            for i in 0..self.nodes.len() {
                if self.nodes[i].shared.is_some() {
                    self.switch(i);
                    woke |= crate::scheduler::worker::flush_deferred(true);
                    crate::introspect::flush(
                        &self.nodes[i].shared.as_ref().expect("up").workers[0].stats,
                    );
                }
            }
            if !woke {
                return n;
            }
        }
    }

    /// Gathers what became runnable, then runs one turn of one of them (chosen by the
    /// seed); false if none can run.
    pub(super) fn step_here(&mut self) -> bool {
        self.gather();
        if self.ready.is_empty() {
            return false;
        }
        let ordinals = self.ready.iter().map(|r| r.ordinal);
        let i = self.picker.pick(ordinals, &mut self.rng);
        let Ready {
            task,
            ordinal,
            node,
        } = self.ready.swap_remove(i);
        let pid = task.header().pid;
        self.trace = mix(self.trace, ordinal);
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(Turn {
            step: self.steps,
            at: self.elapsed(),
            node: super::NodeId(node),
            process: ordinal,
            pid: ProcessId(pid),
        });
        self.picker.ran(self.steps, ordinal);
        self.steps += 1;
        self.switch(node);
        let me = &self.nodes[node]
            .shared
            .as_ref()
            .expect("a ready process's node is up")
            .workers[0];
        crate::scheduler::worker::begin_turn(me, BUDGET);
        me.polling.store(pid.to_word(), Ordering::Relaxed);
        let began = std::time::Instant::now();
        let outcome = task.run();
        crate::process::send::end_stream();
        let held = began.elapsed();
        if held >= HELD_WARNING && !std::mem::replace(&mut self.warned, true) {
            eprintln!(
                "otter::sim: process #{ordinal} {} held the simulation's thread for {held:?} \
                 of real time in one turn: does it block the thread (std::thread::sleep, a \
                 lock, blocking IO)? In a simulation, wait with the process's own sleep and \
                 receive, and block with otter::blocking::spawn_blocking",
                ProcessId(pid)
            );
        }
        if let RunOutcome::Reschedule(task) = outcome {
            self.ready.push(Ready {
                task,
                ordinal,
                node,
            });
        }
        true
    }

    /// Moves every runnable process out of each node's queues and injector into
    /// `ready`, in a fixed order (so the seed alone decides), naming each new one by
    /// its spawn order. Fails the run if a wake-up came from another thread (noted in
    /// debug builds: module docs, "Keeping a program inside the simulation").
    pub(super) fn gather(&mut self) {
        for node in 0..self.nodes.len() {
            let Some(shared) = self.nodes[node].shared.clone() else {
                continue;
            };
            if let Some(sim) = &shared.services.simulated {
                let foreign = sim
                    .foreign
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(thread) = foreign {
                    panic!(
                        "otter::sim: {thread} woke or spawned a process of this simulation: \
                         a thread the simulation does not run (std::thread::spawn, another \
                         runtime, a tokio task) makes the run depend on the OS, not on the \
                         seed; do that work in a process, or with otter::blocking::spawn_blocking"
                    );
                }
            }
            let me = &shared.workers[0];
            let mut found: Vec<Task> = Vec::new();
            while let Some(t) = me.local.pop() {
                found.push(t);
            }
            found.extend(me.lifo.take());
            while let Some(t) = me.spawned.pop_oldest() {
                found.push(t);
            }
            while let Some(t) = shared.injector.pop_into(&me.local, 0) {
                found.push(t);
            }
            for task in found {
                let next = self.ordinals.len() as u64;
                let ordinal = *self
                    .ordinals
                    .entry(task.header().pid.to_word())
                    .or_insert(next);
                self.ready.push(Ready {
                    task,
                    ordinal,
                    node,
                });
            }
        }
    }

    /// Forgets the runnable processes of node `n` (it crashes: the table ends them).
    pub(super) fn forget_ready(&mut self, n: usize) {
        self.gather();
        self.ready.retain(|r| r.node != n);
    }
}

impl Drop for Simulation {
    /// Ends every process still alive on every node, as dropping a `Runtime` does,
    /// and drops what is in flight on the network.
    fn drop(&mut self) {
        // The processes are the table's to end (`runtime::shut_down`): a queued task owns
        // nothing.
        self.ready.clear();
        for n in 0..self.nodes.len() {
            self.crash_node(n);
        }
        self.net.clear();
    }
}
