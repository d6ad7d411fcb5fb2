//! The bonds of a process: its links, the monitors watching it and those it holds, the
//! timers aimed at it, its trap flag, and the reason of an exit signal that will end
//! it. Safe code: it reaches a process only through a counted [`ProcessRef`] and the
//! header's `bonds` mutex, `gate` and `signalled` flag (`process/cell.rs`), and a
//! trapped exit through the process's own [`TrapFn`]. The rules it implements are
//! `signal.rs`'s (links, exit signals, `trap_exit`) and `monitor.rs`'s (monitors,
//! `Down`); the gate's protocol with the exit (`process/gate.rs`) makes a bond attached
//! during an exit either seen by it or refused.
//!
//! # Locks
//!
//! One mutex per process guards its bonds. No thread holds two: a link is recorded on
//! one side, then on the other; an exit takes its links out under its own lock and
//! signals them after releasing it. Watchers are notified under the lock (so that a
//! `demonitor` after the exit finds every `Down` delivered), and the wakers they hand
//! back are woken after it. Under a bonds lock, the look for timers that have fired
//! or stopped takes a timer wheel's lock (`timer.rs`) and tries an interval's state
//! lock without waiting for it (`timer/interval.rs`: a tick holds it while it clones
//! the user's message); nothing takes a bonds lock under the wheel's (a timer's action
//! runs after it is released), and an exit cancels its timers after releasing its own.
//!
//! # A bond refused by an exit keeps the order of the exit's signals
//!
//! A monitor or link attached to a process whose exit has begun is refused, and the
//! answer is `Noproc` (a `Down` or an exit signal). Erlang's answer comes from the
//! exiting process itself, so it arrives after the signals that process sent first:
//! a process linked to `P` and monitoring it after `P`'s exit began sees `P`'s exit
//! signal, then the `Down`. Here the exit sends its link signals outside the lock, so
//! a refusal that answered at once could overtake them. While the exit still has
//! signals to send (its `closing` phase, or links and watchers not yet taken), a refused
//! bond is left in `late`, and the exit answers it after its own `Down`s; once the exit
//! is done, a refusal is answered at once.

mod keyed;

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use crate::exit::ExitReason;
use crate::monitor::{Down, Watcher};
use crate::pid::RawPid;
use crate::process::cell::{Header, ProcessRef, TrapFn};
use crate::process::owner::Owner;
use crate::signal::{Effect, Exit, Kind, effect};
use crate::timer::Tied;
use crate::unwind::catch_panic;
use keyed::{Key, Keyed};

/// What a process has to do with others: the processes monitoring it, the processes
/// linked to it, whether it traps exits, and the reason of an exit signal that will end
/// it (`signal.rs`).
#[derive(Debug, Default)]
pub(crate) struct Bonds {
    watchers: Keyed<Watcher>,
    links: Keyed<RawPid>,
    trap: Option<TrapFn>,
    pending: Option<ExitReason>,
    /// The exit has taken the links and not yet the watchers (`notify_exit`).
    closing: bool,
    /// Bonds refused during the exit, answered `Noproc` at its end (module docs).
    late: Vec<Late>,
    /// How many watchers the last look for exited owners kept ([`Bonds::add_watcher`]).
    watchers_kept: usize,
    /// The `send_after` timers and intervals aimed at this process, cancelled at its
    /// exit; some may have fired or stopped since ([`Bonds::add_timer`]).
    timers: Vec<Tied>,
    /// How many timers the last look for fired ones kept.
    timers_kept: usize,
    /// The monitors this process set (Erlang's `monitors`), for introspection only;
    /// some may have fired or been stopped by their target's exit since
    /// ([`hold`]).
    held: Keyed<Held>,
    /// How many held monitors the last look for fired ones kept.
    held_kept: usize,
}

/// A monitor a process holds: its id and its target.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    id: u64,
    target: RawPid,
}

impl Key for Held {
    type K = u64;
    fn key(&self) -> u64 {
        self.id
    }
}

/// The fewest watchers at which a process looks for watchers whose owner has exited.
const PRUNE_WATCHERS_FROM: usize = 64;

/// The fewest timers at which a process looks for timers that have fired.
const PRUNE_TIMERS_FROM: usize = 64;

/// Whether a list that grows between looks is due for a look for the entries that no
/// longer count: from `from` entries on, whenever it has doubled since the last look
/// kept `kept`, so the looks cost an amortised constant per entry and the list stays
/// within about twice its live entries (the watchers, timers and held monitors).
fn due_for_prune(len: usize, kept: usize, from: usize) -> bool {
    len >= from.max(2 * kept)
}

/// The fewest held monitors at which a process looks for those that have fired: the
/// length from which their list would keep an index (`keyed.rs`), so that a process
/// that monitors one short-lived process after another never builds one.
const PRUNE_HELD_FROM: usize = keyed::INDEX_AT;

impl Key for Watcher {
    type K = u64;
    fn key(&self) -> u64 {
        self.id
    }
}

impl Key for RawPid {
    type K = RawPid;
    fn key(&self) -> RawPid {
        *self
    }
}

/// A bond refused while the exit still had signals to send.
#[derive(Debug)]
enum Late {
    /// A monitor: its `Down` says `Noproc`.
    Watcher(Watcher),
    /// A link from this process, whose own side is undone and which gets `Noproc`.
    Link(RawPid),
}

impl Bonds {
    /// Whether the exit that closed the gate still has signals to send: a bond refused
    /// now must be answered after them (module docs). Links and watchers still here
    /// were attached before the gate closed, so the exit saw `has_bonds` and will take
    /// them.
    fn exit_unfinished(&self) -> bool {
        self.closing || !self.links.is_empty() || !self.watchers.is_empty()
    }
}

impl Bonds {
    /// Adds a monitor's watcher. Erlang removes a monitor when the process that set it
    /// exits; here a process that exits leaves its monitors where they are, and the
    /// watched process drops those whose owner has exited (their `Down` could reach
    /// nobody) whenever its watchers have doubled since the last such look (from
    /// [`PRUNE_WATCHERS_FROM`] on): a server that many short-lived clients monitor
    /// keeps at most about twice as many watchers as live clients, at an amortised
    /// constant cost per monitor.
    fn add_watcher(&mut self, watcher: Watcher) {
        self.watchers.push(watcher);
        if due_for_prune(self.watchers.len(), self.watchers_kept, PRUNE_WATCHERS_FROM) {
            // A call's watcher and a remote process's (no owner) are taken off by the
            // call and by the connection; an owner is always a local process.
            self.watchers.retain(|w| {
                w.owner
                    .is_none_or(|o| !crate::pid::ProcessId(o).has_exited())
            });
            self.watchers_kept = self.watchers.len();
        }
    }
}

impl Bonds {
    /// Records a timer aimed at this process (a `send_after`, an interval), to be
    /// cancelled at its exit (Erlang's rule for a timer whose destination is a pid). A
    /// timer that fires or stops stays here; those are dropped whenever the timers have
    /// doubled since the last such look (from [`PRUNE_TIMERS_FROM`] on), so a process
    /// that gets a timer every second for a day keeps a few dozen, at an amortised
    /// constant cost per timer.
    fn add_timer(&mut self, timer: Tied) {
        self.timers.push(timer);
        if due_for_prune(self.timers.len(), self.timers_kept, PRUNE_TIMERS_FROM) {
            self.timers.retain(Tied::is_pending);
            self.timers_kept = self.timers.len();
        }
    }
}

impl Bonds {
    /// The bonds of a child spawned linked to `link` and watched by `watcher`.
    pub(crate) fn new(link: Option<RawPid>, watcher: Option<Watcher>) -> Bonds {
        Bonds {
            links: Keyed::of(link),
            watchers: Keyed::of(watcher),
            ..Bonds::default()
        }
    }
}

/// The reason of an exit signal that will end the process `h`, if one is pending (the
/// worker asks before a poll when `h.signalled` is set).
pub(crate) fn pending_exit(h: &Header) -> Option<ExitReason> {
    h.bonds
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|b| b.pending.clone())
}

/// What introspection reads of a process's bonds (`introspect.rs`).
#[derive(Debug, Default)]
pub(crate) struct Sample {
    pub(crate) links: Vec<RawPid>,
    /// The owners of the monitors on the process that are still alive (a monitor
    /// whose owner has exited stays until the next prune: `Bonds::add_watcher`).
    pub(crate) monitored_by: Vec<RawPid>,
    /// The processes waiting for a reply from this one now (its call watchers whose
    /// latest call waits).
    pub(crate) callers: Vec<RawPid>,
    /// The targets of the monitors this process holds that are still active (their
    /// target still holds them: [`watching`]).
    pub(crate) monitors: Vec<RawPid>,
    pub(crate) trap_exit: bool,
    /// The record's bytes, with its lists.
    pub(crate) bytes: usize,
    /// The held monitors as recorded, before the look at which are active.
    held: Vec<Held>,
}

/// Copies the bonds of `h` under their lock, held for the copy only; the liveness of
/// the monitors' owners is read after it is released.
pub(crate) fn sample(h: &Header) -> Sample {
    let mut s = {
        let bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(b) = bonds.as_ref() else {
            return Sample::default();
        };
        Sample {
            links: b.links.iter().copied().collect(),
            monitored_by: b.watchers.iter().filter_map(|w| w.owner).collect(),
            callers: b
                .watchers
                .iter()
                .filter_map(|w| match &w.notify {
                    crate::monitor::Notify::Call(slot) => slot.waiting_caller(),
                    crate::monitor::Notify::Message(_) => None,
                })
                .collect(),
            trap_exit: b.trap.is_some(),
            bytes: std::mem::size_of::<Bonds>()
                + b.links.len() * std::mem::size_of::<RawPid>()
                + b.watchers.len() * std::mem::size_of::<Watcher>()
                + b.timers.len() * std::mem::size_of::<Tied>()
                + b.held.len() * std::mem::size_of::<Held>(),
            held: b.held.iter().copied().collect(),
            ..Sample::default()
        }
    };
    s.monitored_by
        .retain(|&o| !crate::pid::ProcessId(o).has_exited());
    s.monitors = std::mem::take(&mut s.held)
        .into_iter()
        .filter(|m| watching(m.target, m.id))
        .map(|m| m.target)
        .collect();
    s
}

/// Records that the process of `h` holds the monitor `id` of `target` (Erlang's
/// `monitors`: introspection's, `introspect.rs`). Nothing takes it off when the
/// monitor fires: the list is pruned of monitors no longer active whenever it has
/// doubled since the last such look (from [`PRUNE_HELD_FROM`] on), as the watchers and
/// timers are, and a read keeps the active ones. The look takes each target's lock, so
/// it runs after this process's own is released (module docs, Locks).
pub(crate) fn hold(h: &Header, id: u64, target: RawPid) {
    let remote = {
        let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        let b = bonds.get_or_insert_default();
        b.held.push(Held { id, target });
        if !due_for_prune(b.held.len(), b.held_kept, PRUNE_HELD_FROM) {
            return;
        }
        // A live local target still holds the monitor (a `demonitor` took it off here,
        // and only the target's exit fires it), so a look at its slot's word decides,
        // and takes no lock. A remote target's monitor may fire while its node stays
        // connected: the connection is asked, after our lock is released.
        b.held
            .retain(|m| m.target.is_remote() || !crate::pid::ProcessId(m.target).has_exited());
        b.held_kept = b.held.len();
        let remote: Vec<Held> = b
            .held
            .iter()
            .filter(|m| m.target.is_remote())
            .copied()
            .collect();
        remote
    };
    let gone: Vec<u64> = remote
        .iter()
        .filter(|m| !watching(m.target, m.id))
        .map(|m| m.id)
        .collect();
    if gone.is_empty() {
        return;
    }
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    let b = bonds.get_or_insert_default();
    for id in gone {
        b.held.remove(id);
    }
    b.held_kept = b.held.len();
}

/// Takes the held monitor `id` off the record of the process of `h` (its
/// `demonitor`).
pub(crate) fn let_go(h: &Header, id: u64) {
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = bonds.as_mut() {
        b.held.remove(id);
    }
}

/// Whether `target` still holds the monitor `id`: it has not fired nor been stopped.
pub(crate) fn watching(target: RawPid, id: u64) -> bool {
    if let Some(d) = crate::remote::of(target) {
        return d.watching(target, id);
    }
    let Some(lookup) = ProcessRef::new(target) else {
        return false;
    };
    with_bonds(&lookup, |_, bonds| {
        bonds.as_ref().is_some_and(|b| b.watchers.contains(id))
    })
}

/// Runs `f` on the bonds of the process `p`, under their lock.
fn with_bonds<R>(p: &ProcessRef, f: impl FnOnce(&Header, &mut Option<Box<Bonds>>) -> R) -> R {
    let h = p.header();
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    f(h, &mut bonds)
}

/// Adds a watcher to `target`; hands it back if `target` does not exist or has ended
/// (the caller then sends `Noproc`). If `target`'s exit is under way, its own end
/// sends the `Noproc` (module docs).
pub(crate) fn add_watcher(target: RawPid, watcher: Watcher) -> Result<(), Watcher> {
    if let Some(d) = crate::remote::of(target) {
        d.monitor(target, watcher);
        return Ok(());
    }
    let Some(lookup) = ProcessRef::new(target) else {
        return Err(watcher);
    };
    with_bonds(&lookup, |h, bonds| {
        if h.gate.attach_bond() {
            bonds.get_or_insert_default().add_watcher(watcher);
            return Ok(());
        }
        match bonds.as_mut() {
            Some(b) if b.exit_unfinished() => {
                b.late.push(Late::Watcher(watcher));
                Ok(())
            }
            _ => Err(watcher),
        }
    })
}

/// Removes watcher `id` from `target`; false if it is no longer there (its `Down` has
/// been delivered: see `monitor.rs`).
pub(crate) fn remove_watcher(target: RawPid, id: u64) -> bool {
    if let Some(d) = crate::remote::of(target) {
        return d.demonitor(target, id);
    }
    let Some(lookup) = ProcessRef::new(target) else {
        return false;
    };
    with_bonds(&lookup, |_, bonds| {
        let Some(b) = bonds.as_mut() else {
            return false;
        };
        if let Some(w) = b.watchers.remove(id) {
            drop(w);
            return true;
        }
        let late = b
            .late
            .iter()
            .position(|x| matches!(x, Late::Watcher(w) if w.id == id));
        late.map(|i| drop(b.late.remove(i))).is_some()
    })
}

/// Ties `timer` (a `send_after`'s entry, an interval) to its destination `target`,
/// which cancels it when it exits; hands it back if `target` is not a live local
/// process, or is exiting (the caller cancels it: its messages could reach nobody).
/// The gate's fenced announcement even for a timer a process sets for itself: its
/// `Context` may have left it (a thread, another process) and run on during its exit.
/// A remote `target`'s timer is not tied (`Ok`): it runs to its deadline.
pub(crate) fn add_timer(target: RawPid, timer: Tied) -> Result<(), Tied> {
    if target.is_remote() {
        return Ok(());
    }
    let Some(lookup) = ProcessRef::new(target) else {
        return Err(timer);
    };
    with_bonds(&lookup, |h, bonds| {
        if !h.gate.attach_bond() {
            return Err(timer);
        }
        bonds.get_or_insert_default().add_timer(timer);
        Ok(())
    })
}

/// Records the link `me` -> `other` on `me`'s side (idempotent).
fn add_link(lookup: &ProcessRef, other: RawPid) {
    with_bonds(lookup, |h, bonds| {
        h.gate.mark_own_bond();
        bonds.get_or_insert_default().links.insert(other);
    });
}

/// Records a link to the child `other` on the side of the running process `me`, before
/// the child runs (`spawn_link`).
pub(crate) fn link_one_side(me: RawPid, other: RawPid) {
    if let Some(mine) = ProcessRef::new(me) {
        add_link(&mine, other);
    }
}

/// Removes the link to `other` from the bonds; whether it was there.
fn remove_link(bonds: &mut Option<Box<Bonds>>, other: RawPid) -> bool {
    let Some(b) = bonds.as_mut() else {
        return false;
    };
    b.links.remove(other).is_some()
}

/// Links the running process `me` with `other` (`signal.rs` has the rules). Our side
/// first: once `other` records us, its exit signal must find the link here. If `other`
/// is gone or exiting, our side is undone and we get the signal `Noproc` from it.
pub(crate) fn link(me: RawPid, other: RawPid) {
    if me == other {
        return;
    }
    let Some(mine) = ProcessRef::new(me) else {
        return;
    };
    add_link(&mine, other);
    if let Some(d) = crate::remote::of(other) {
        if let Err(reason) = d.link(me, other) {
            drop(mine);
            // The other node cannot be reached (or `other` names no process): the
            // link's signal says so.
            signal(me, other, reason, Kind::Link);
        }
        return;
    }
    if !attach_link(other, me, true) {
        drop(mine);
        refuse_link(me, other);
    }
}

/// Answers `me`'s link to `other`, which has ended: `me`'s side is undone and `me` gets
/// the signal `Noproc`, unless `other`'s exit signal already took the link.
fn refuse_link(me: RawPid, other: RawPid) {
    let Some(mine) = ProcessRef::new(me) else {
        return;
    };
    if with_bonds(&mine, |_, bonds| remove_link(bonds, other)) {
        drop(mine);
        signal(me, other, ExitReason::Noproc, Kind::Exit);
    }
}

/// Removes the link between `me` and `other`, both sides. Afterwards no signal through
/// it reaches `me` (a link signal must find its link: [`signal`]).
pub(crate) fn unlink(me: RawPid, other: RawPid) {
    unlink_one_side(me, other);
    if let Some(d) = crate::remote::of(other) {
        d.unlink(me, other);
        return;
    }
    if let Some(theirs) = ProcessRef::new(other) {
        with_bonds(&theirs, |_, bonds| remove_link(bonds, me));
    }
}

/// Records `from`'s link on the side of the local process `target`, under its bonds
/// lock with the gate's protocol (the exit takes the links under the same lock). If
/// `target` is gone, false. If its exit has begun: with `late`, its exit answers the
/// link after its own signals (module docs: a local link's other side); without, false
/// (a link from another node, whose peer then gets `noproc`).
pub(crate) fn attach_link(target: RawPid, from: RawPid, late: bool) -> bool {
    let Some(theirs) = ProcessRef::new(target) else {
        return false;
    };
    with_bonds(&theirs, |h, bonds| {
        if h.gate.attach_bond() {
            bonds.get_or_insert_default().links.insert(from);
            return true;
        }
        match bonds.as_mut() {
            Some(b) if late && b.exit_unfinished() => {
                b.late.push(Late::Link(from));
                true
            }
            _ => false,
        }
    })
}

/// Removes `me`'s side of a link to `other` (`unlink`'s first half; a process of
/// another node that unlinked, from the distribution).
pub(crate) fn unlink_one_side(me: RawPid, other: RawPid) {
    if let Some(mine) = ProcessRef::new(me) {
        with_bonds(&mine, |_, bonds| remove_link(bonds, other));
    }
}

/// Sets or clears the trap flag of the process owning `owner`; returns the old value.
pub(crate) fn set_trap_exit<M: From<Exit> + Send + 'static>(owner: &Owner<M>, on: bool) -> bool {
    let new = on.then(|| owner.trap_fn());
    let h = owner.header();
    let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
    match bonds.as_mut() {
        Some(b) => std::mem::replace(&mut b.trap, new).is_some(),
        None if on => {
            *bonds = Some(Box::new(Bonds {
                trap: new,
                ..Bonds::default()
            }));
            false
        }
        None => false,
    }
}

/// Sends the exit signal `reason` of `kind` from `from` to `to`, and applies the
/// receipt rule (`signal::effect`) at once, under `to`'s bonds lock: the trap flag read
/// is the one in force when the signal arrives.
pub(crate) fn signal(to: RawPid, from: RawPid, reason: ExitReason, kind: Kind) {
    if let Some(d) = crate::remote::of(to) {
        d.exit_signal(to, from, reason, kind);
        return;
    }
    let Some(lookup) = ProcessRef::new(to) else {
        return;
    };
    let terminate = with_bonds(&lookup, |h, bonds| {
        if kind == Kind::Link && !remove_link(bonds, from) {
            return false; // unlinked: the signal has no effect
        }
        let trap = bonds.as_ref().and_then(|b| b.trap);
        match effect(kind, reason, trap.is_some(), to == from) {
            Effect::Ignore => false,
            Effect::Message(reason) => {
                let trap = trap.expect("trapping");
                let exit = Exit {
                    from: crate::ProcessId(from),
                    reason,
                };
                lookup.deliver_trapped(trap, exit);
                false
            }
            Effect::Terminate(reason) => {
                let b = bonds.get_or_insert_default();
                if b.pending.is_none() {
                    b.pending = Some(reason);
                    h.signalled.store(true, Ordering::Release);
                }
                true
            }
        }
    });
    if terminate {
        lookup.schedule();
    }
}

/// Step 3 of the exit (`process/harness.rs`; and of a shutdown's discard): the exit signal to every linked
/// process, then a `Down` to every monitor. User code runs here (`From<Down>`,
/// `From<Exit>`): a panic in it loses that one notification, never the exit. Wakers that
/// watchers hand back are woken after our lock is released, so no foreign code runs
/// under it.
pub(crate) fn notify_exit(h: &Header, reason: &ExitReason) {
    let (links, timers) = {
        let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        let b = bonds.get_or_insert_default();
        b.closing = true;
        (b.links.take(), std::mem::take(&mut b.timers))
    };
    // Cancelled outside the lock (module docs, Locks).
    for timer in timers {
        timer.cancel();
    }
    for to in links {
        signal(to, h.pid, reason.clone(), Kind::Link);
    }
    let mut wake = Vec::new();
    let mut late_links = Vec::new();
    {
        // Under the lock, so that a `demonitor` after us finds every `Down` already
        // delivered (`monitor.rs`). From here on a refused bond is answered at once.
        let mut bonds = h.bonds.lock().unwrap_or_else(PoisonError::into_inner);
        let b = bonds.get_or_insert_default();
        b.closing = false;
        let watchers = b.watchers.take();
        let late = std::mem::take(&mut b.late);
        let mut notify = |watcher: Watcher, reason: ExitReason| {
            let down = Down {
                reference: watcher.reference(h.pid),
                pid: crate::ProcessId(h.pid),
                reason,
            };
            if let Ok(Some(waker)) = catch_panic(|| watcher.notify(down)) {
                wake.push(waker);
            }
        };
        for watcher in watchers {
            notify(watcher, reason.clone());
        }
        for bond in late {
            match bond {
                Late::Watcher(watcher) => notify(watcher, ExitReason::Noproc),
                Late::Link(from) => late_links.push(from),
            }
        }
    }
    for waker in wake {
        waker.wake();
    }
    for from in late_links {
        refuse_link(from, h.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, Down, Runtime};

    /// How many watchers `target` holds.
    fn watchers_of(target: RawPid) -> usize {
        let lookup = ProcessRef::new(target).expect("the target is alive");
        with_bonds(&lookup, |_, b| b.as_ref().map_or(0, |b| b.watchers.len()))
    }

    #[derive(Debug)]
    enum Msg {
        Down,
    }
    impl From<Down> for Msg {
        fn from(_: Down) -> Msg {
            Msg::Down
        }
    }

    // Safe code, and 128 processes that Miri would take many minutes over.
    #[cfg_attr(miri, ignore)]
    #[test]
    fn monitors_left_by_exited_processes_do_not_pile_up_on_their_target() {
        let rt = Runtime::builder().threads(2).build().unwrap();
        let left = rt
            .block_on(|cx: Context<()>| async move {
                let target = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
                for _ in 0..2 * PRUNE_WATCHERS_FROM {
                    let child = cx.spawn(move |c: Context<Msg>| async move {
                        let _ = c.monitor(target);
                    });
                    while !child.has_exited() {
                        cx.yield_now().await;
                    }
                }
                let left = watchers_of(target.raw);
                target.send(());
                left
            })
            .unwrap();
        // Each look dropped every watcher then there: all their owners had exited.
        assert!(left < PRUNE_WATCHERS_FROM, "{left} watchers left");
    }

    /// How many timer keys `target` holds.
    fn timers_of(target: RawPid) -> usize {
        let lookup = ProcessRef::new(target).expect("the target is alive");
        with_bonds(&lookup, |_, b| b.as_ref().map_or(0, |b| b.timers.len()))
    }

    // Safe code; 1,000 timers that Miri would take minutes over.
    #[cfg_attr(miri, ignore)]
    #[test]
    fn the_keys_of_fired_timers_do_not_pile_up_on_their_destination() {
        const ROUND: usize = 100;
        let rt = Runtime::builder().threads(2).build().unwrap();
        let most = rt
            .block_on(|mut cx: Context<u8>| async move {
                let mut most = 0;
                for _ in 0..10 {
                    for _ in 0..ROUND {
                        cx.send_after(cx.pid(), 1, std::time::Duration::from_millis(1));
                    }
                    for _ in 0..ROUND {
                        cx.recv().await;
                    }
                    most = most.max(timers_of(cx.pid().raw));
                }
                most
            })
            .unwrap();
        // A look keeps at most the round's timers, so the keys stay below twice those
        // (1,000 without the looks).
        assert!(most <= 2 * ROUND, "{most} timer keys");
    }
}
