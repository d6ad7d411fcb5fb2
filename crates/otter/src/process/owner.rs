//! The receiving end of a process's mailbox, and the owner reference of its cell
//! (`process/cell.rs`, lifetime rule 2). The process's [`Context`](crate::Context) holds
//! the one `Owner`; receiving takes `&mut`, which keeps the mailbox single-consumer.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;

use crate::mailbox::queue::{GAP_OFFSET, TryPopError};
use crate::pid::Pid;
use crate::process::cell::{Header, Prefix, TrapFn, release_ref, schedule};
use crate::runtime::context;
use crate::scheduler::Shared;
use crate::signal::Exit;

/// The receiving end of a mailbox and the owner reference of its cell (lifetime rule
/// 2). Held by the process's `Context`; there is exactly one per process.
pub(crate) struct Owner<M> {
    cell: NonNull<Header>,
    _type: PhantomData<M>,
}

// SAFETY: the owner moves with the process's future between workers. It gives access
// to `Queue<M>::pop` (messages of type `M: Send` move to the owner's thread) and to the
// header's atomics; the reference it holds keeps the cell alive on any thread. It is not
// `Sync`: `pop` needs `&mut self`, which keeps the queue single-consumer.
unsafe impl<M: Send> Send for Owner<M> {}

impl<M> std::fmt::Debug for Owner<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner").finish_non_exhaustive()
    }
}

impl<M> Owner<M> {
    /// The owner of the cell `cell`.
    ///
    /// # Safety
    ///
    /// `cell` derives from the allocation of a `Cell<_, M>` (`spawn`), and the caller
    /// hands over the cell's owner reference (lifetime rule 2): once per cell.
    pub(super) unsafe fn new(cell: NonNull<Header>) -> Owner<M> {
        Owner {
            cell,
            _type: PhantomData,
        }
    }

    /// The process's header.
    #[inline]
    pub(crate) fn header(&self) -> &Header {
        self.prefix().header()
    }

    /// The trap function of this process (`process/bonds.rs`: `set_trap_exit`).
    pub(crate) fn trap_fn(&self) -> TrapFn
    where
        M: From<Exit> + Send + 'static,
    {
        // SAFETY: this owner's cell is a `Cell<_, M>` (`Owner::new`'s contract), and
        // its pid names it.
        unsafe { TrapFn::new::<M>(self.header().pid) }
    }

    /// [`cell_of`](super::cell::cell_of) without its null check, which cost a compare
    /// and a branch on every receive. See docs/design/0015-unchecked-pointer-steps.md.
    #[inline(always)]
    fn prefix(&self) -> &Prefix<M> {
        // SAFETY: `spawn` derived `self.cell` from the cell's allocation, `GAP_OFFSET`
        // bytes in, and the owner reference keeps that allocation alive: stepping back
        // stays inside it.
        let prefix = unsafe { self.cell.byte_sub(GAP_OFFSET) };
        // SAFETY: as above, live; `spawn` made it a `Cell<_, M>`, whose prefix is
        // `Prefix<M>`.
        unsafe { prefix.cast::<Prefix<M>>().as_ref() }
    }

    /// Publishes how many messages the process's save area holds (introspection's
    /// `message_queue_len` and `Memory::saved`).
    #[inline]
    pub(crate) fn set_saved(&self, n: usize) {
        self.prefix().counters.set_saved(n);
    }

    /// The pid of this process. The owner of a `Cell<_, M>` is made by `spawn` with its
    /// own `M`, so the pid names a mailbox of `M` (the rule of `Pid::from_raw`).
    #[inline]
    pub(crate) fn pid(&self) -> Pid<M> {
        Pid::from_raw(self.prefix().header().pid)
    }

    /// Takes the oldest message that is ready. Called only by the running process.
    ///
    /// A message whose slot is reserved but not yet written (`TryPopError::InFlight`)
    /// reads as none, and the process schedules itself so that it looks again after
    /// this poll: its sender may have skipped the wake-up (`process/state.rs`).
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<M> {
        // SAFETY: `&mut self` on the one `Owner` of this mailbox makes us its only
        // consumer.
        match unsafe { self.prefix().mailbox.pop() } {
            Ok(m) => {
                // A bounded mailbox may have senders waiting for room
                // (`mailbox/bound.rs`); an unbounded one's word is 0.
                let h = self.prefix().header();
                if h.bound.load(Ordering::Relaxed) != 0 {
                    crate::mailbox::bound::taken(h.pid, &h.bound, || self.queue_len());
                }
                Some(m)
            }
            Err(TryPopError::Empty) => None,
            Err(TryPopError::InFlight) => {
                self.schedule_self();
                None
            }
        }
    }

    /// How many messages this process's queue holds (`Queue::len`): exact, read by the
    /// queue's one consumer, counting those whose senders have reserved their slot and
    /// not written it yet.
    #[inline]
    pub(crate) fn queue_len(&self) -> usize {
        self.prefix().mailbox.len()
    }

    /// The running process's budget is spent: true if it goes on with a new turn in
    /// place (`worker::renew_turn`), false if it yields (it is scheduled again, and the
    /// receive returns `Pending`). Not in place if an exit signal waits for it, which
    /// the worker applies before a poll (`Task::run`).
    ///
    /// The runtime comes from the worker's thread-local, not from the header: the
    /// header's first line holds the mailbox's tail, which a sender streaming to this
    /// process writes on every message. `signalled` sits on the receiver's own line.
    /// Measured: docs/design/0011-turn-renewed-in-place.md.
    #[cold]
    #[inline(never)]
    pub(crate) fn budget_spent(&self) -> bool {
        let h = self.prefix().header();
        let rt = context::current_runtime();
        if rt.is_null() {
            // Not on a worker: the `Context` was moved out of its process to a plain
            // thread. There is no turn to yield, and nothing would poll this receive
            // again: it takes what is there.
            return true;
        }
        if !h.signalled.load(Ordering::Acquire) {
            // A process is polled only by the workers of its own runtime (`block_on`
            // spawns its root and refuses to run on a worker).
            debug_assert!(ptr::eq(rt, h.rt));
            // SAFETY: not null, so this thread is a worker and its `run` holds the
            // runtime (`context::current_runtime`).
            if crate::scheduler::worker::renew_turn(unsafe { &*rt }) {
                return true;
            }
        }
        self.schedule_self();
        false
    }

    /// [`Owner::budget_spent`] for a send (`Context::send`): a turn renewed in place
    /// goes on with the poll's send count and lasts `SENDER_TURN_RENEWED` units
    /// (`coop.rs`).
    #[cold]
    #[inline(never)]
    pub(crate) fn send_budget_spent(&self) -> bool {
        let sent = crate::coop::sent();
        let h = self.prefix().header();
        let rt = context::current_runtime();
        if rt.is_null() {
            return true;
        }
        if !h.signalled.load(Ordering::Acquire) {
            // SAFETY: not null, so this thread is a worker and its `run` holds the
            // runtime (`context::current_runtime`).
            if crate::scheduler::worker::renew_turn(unsafe { &*rt }) {
                crate::coop::resume_sends(sent, crate::tuning::SENDER_TURN_RENEWED);
                return true;
            }
        }
        self.schedule_self();
        false
    }

    /// Schedules this process again: a yield when the budget ran out, or a second look
    /// at a message in flight (`pop`).
    pub(crate) fn schedule_self(&self) {
        schedule(self.cell);
    }

    /// The runtime this process runs on, if it has not been shut down.
    pub(crate) fn runtime(&self) -> Option<&Shared> {
        let h = self.prefix().header();
        if h.state.is_done() {
            return None;
        }
        // SAFETY: not done, so the runtime is alive (module rules). The reference is
        // used only while the process runs, i.e. before shutdown can mark it done.
        Some(unsafe { &*h.rt })
    }
}

impl<M> Drop for Owner<M> {
    fn drop(&mut self) {
        let h = self.prefix().header();
        if h.bound.load(Ordering::Relaxed) != 0 {
            // Nothing will take messages any more: senders waiting for room stop
            // waiting (`mailbox/bound.rs`).
            crate::mailbox::bound::close(h.pid, &h.bound);
        }
        release_ref(self.cell);
    }
}
