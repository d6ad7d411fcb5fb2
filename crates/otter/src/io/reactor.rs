//! The reactor of one runtime: the `mio::Poll`, its registry, the slab of registered
//! sources, and the driver that workers take turns to run (`io.rs` has the design).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use mio::{Events, Interest, Token};

use crate::io::readiness::{
    Direction, ERROR, READ_CLOSED, READABLE, Readiness, Seen, WRITABLE, WRITE_CLOSED,
};

/// The token of the reactor's own waker.
const WAKE_TOKEN: Token = Token(usize::MAX);

/// Whether a short read or write of a stream tells that the kernel's buffer is drained
/// or full: with the edge-triggered selectors mio uses on Linux and the BSDs (epoll,
/// kqueue), yes; not with Windows' emulation.
const SHORT_TRANSFER_DRAINS: bool = cfg!(not(windows));

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Reactor {
    driver: Mutex<Driver>,
    registry: mio::Registry,
    waker: mio::Waker,
    sources: Mutex<Slab>,
    /// Sources registered now: with none, no worker polls.
    registered: AtomicUsize,
    /// Readiness events dispatched since the start (introspection); written by the
    /// driver, the one thread holding the driver's lock (a load and a store).
    events: std::sync::atomic::AtomicU64,
}

/// The poll and its event buffers: whoever holds the lock is the driver. The sizes of
/// the buffers are the caller's ([`Reactor::new`]): what is ready beyond a poll's
/// buffer stays in the kernel's ready list, in order, for the next poll.
#[derive(Debug)]
pub(crate) struct Driver {
    poll: mio::Poll,
    /// A full poll's events.
    events: Events,
    /// A short poll's (`poll_now` with little room).
    few: Events,
}

#[derive(Debug, Default)]
struct Slab {
    entries: Vec<Option<Arc<Readiness>>>,
    free: Vec<usize>,
}

impl Reactor {
    /// A new reactor (an epoll instance and an eventfd) whose polls take at most
    /// `events` events, or `few` in a short poll ([`Reactor::poll_now`]).
    pub(crate) fn new(events: usize, few: usize) -> io::Result<Reactor> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = mio::Waker::new(poll.registry(), WAKE_TOKEN)?;
        Ok(Reactor {
            driver: Mutex::new(Driver {
                poll,
                events: Events::with_capacity(events),
                few: Events::with_capacity(few),
            }),
            registry,
            waker,
            sources: Mutex::new(Slab::default()),
            registered: AtomicUsize::new(0),
            events: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Whether any source is registered (else nobody needs to poll).
    #[inline]
    pub(crate) fn in_use(&self) -> bool {
        self.registered.load(Ordering::Relaxed) != 0
    }

    /// The driver, unless another worker holds it.
    pub(crate) fn try_driver(&self) -> Option<MutexGuard<'_, Driver>> {
        match self.driver.try_lock() {
            Ok(d) => Some(d),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Interrupts a driver blocked in the OS poll.
    pub(crate) fn wake(&self) {
        // An eventfd write fails only if the counter would overflow, which leaves it
        // readable anyway: the driver wakes either way.
        let _ = self.waker.wake();
    }

    /// Polls without blocking, if no other worker drives, and wakes the processes the
    /// events concern: a full poll's worth if `room` (in the caller's local queue)
    /// takes that many, else a short poll's.
    pub(crate) fn poll_now(&self, room: usize) {
        if let Some(mut d) = self.try_driver() {
            if room >= d.events.capacity() {
                if d.poll(Some(Duration::ZERO)) {
                    dispatch(&d.events, self);
                }
            } else if d.poll_few() {
                dispatch(&d.few, self);
            }
        }
    }

    /// Readiness events dispatched since the start, the reactor's own wake-ups included.
    pub(crate) fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Registers `source` for reading and writing.
    pub(crate) fn register(
        self: &Arc<Self>,
        source: &mut impl mio::event::Source,
    ) -> io::Result<Registration> {
        let state = Arc::new(Readiness::default());
        let token = {
            let mut slab = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
            let i = match slab.free.pop() {
                Some(i) => i,
                None => {
                    slab.entries.push(None);
                    slab.entries.len() - 1
                }
            };
            slab.entries[i] = Some(state.clone());
            i
        };
        if let Err(e) = self.registry.register(
            source,
            Token(token),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.release(token);
            return Err(e);
        }
        self.registered.fetch_add(1, Ordering::Relaxed);
        Ok(Registration {
            reactor: Some(self.clone()),
            token,
            state,
        })
    }

    fn release(&self, token: usize) {
        let mut slab = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
        slab.entries[token] = None;
        slab.free.push(token);
    }
}

impl Driver {
    /// Waits for events up to `timeout` (`None`: until one comes or a wake-up). Whether
    /// there are events to dispatch.
    pub(crate) fn poll(&mut self, timeout: Option<Duration>) -> bool {
        poll_into(&mut self.poll, &mut self.events, timeout)
    }

    /// Polls without blocking for at most a short poll's events.
    fn poll_few(&mut self) -> bool {
        poll_into(&mut self.poll, &mut self.few, Some(Duration::ZERO))
    }

    /// Sets the readiness of every source the last poll reported and wakes its
    /// waiting processes, after releasing the slab's lock.
    pub(crate) fn dispatch(&self, reactor: &Reactor) {
        dispatch(&self.events, reactor);
    }
}

/// Fills `events` from `poll`: whether any came.
fn poll_into(poll: &mut mio::Poll, events: &mut Events, timeout: Option<Duration>) -> bool {
    match poll.poll(events, timeout) {
        Ok(()) => !events.is_empty(),
        // Interrupted by a signal: the caller looks for work and comes back.
        Err(_) => false,
    }
}

/// Sets the readiness of every source `events` reports and wakes its waiting
/// processes, after releasing the slab's lock.
fn dispatch(events: &Events, reactor: &Reactor) {
    let n = events.iter().count() as u64;
    reactor.events.store(
        reactor.events.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
    let mut wake = Vec::new();
    {
        let slab = reactor
            .sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for e in events.iter() {
            if e.token() == WAKE_TOKEN {
                continue;
            }
            let Some(Some(state)) = slab.entries.get(e.token().0) else {
                continue; // deregistered since: nobody waits
            };
            let mut bits = 0;
            if e.is_readable() {
                bits |= READABLE;
            }
            if e.is_writable() {
                bits |= WRITABLE;
            }
            if e.is_read_closed() {
                bits |= READ_CLOSED;
            }
            if e.is_write_closed() {
                bits |= WRITE_CLOSED;
            }
            if e.is_error() {
                bits |= ERROR;
            }
            wake.extend(state.set(bits).into_iter().flatten());
        }
    }
    for w in wake {
        w.wake();
    }
}

/// A source registered with a reactor. Deregister it ([`Registration::deregister`])
/// before closing the source; dropping it frees its token.
#[derive(Debug)]
pub(crate) struct Registration {
    /// `None` for a simulation's socket, which no OS poll knows: its network sets the
    /// readiness (`io/network.rs`).
    reactor: Option<Arc<Reactor>>,
    token: usize,
    state: Arc<Readiness>,
}

impl Registration {
    /// The registration of a simulation's socket, whose readiness is `state`.
    pub(crate) fn simulated(state: Arc<Readiness>) -> Registration {
        Registration {
            reactor: None,
            token: 0,
            state,
        }
    }

    /// Ready for `dir`, or the caller is woken when it may be. Every look takes a unit
    /// of the running process's budget, as a receive does (tokio's cooperative budget
    /// counts IO the same way): a process whose socket is always ready (a writer to a
    /// fast reader, a reader of a flood) yields after a turn's worth of operations
    /// instead of holding its worker, and the timers and processes queued behind it.
    /// It yields by waking itself: `Pending` now, polled again after what is queued.
    pub(crate) fn poll_ready(&self, dir: Direction, cx: &mut Context<'_>) -> Poll<Seen> {
        if !crate::coop::consume_op() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.state.poll_ready(dir, cx)
    }

    /// An operation in `dir` would block (see `io/readiness.rs`).
    pub(crate) fn clear(&self, dir: Direction, seen: Seen) {
        self.state.clear(dir, seen);
    }

    /// Runs `op` when the source is ready for `dir`, until it does not answer
    /// `WouldBlock`.
    pub(crate) fn poll_io<R>(
        &self,
        dir: Direction,
        cx: &mut Context<'_>,
        mut op: impl FnMut() -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        loop {
            let Poll::Ready(seen) = self.poll_ready(dir, cx) else {
                return Poll::Pending;
            };
            match op() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear(dir, seen),
                r => return Poll::Ready(r),
            }
        }
    }

    /// A byte stream's read or write of up to `len` bytes: [`Registration::poll_io`],
    /// and a transfer shorter than asked (not 0) also clears the readiness it saw (see
    /// [`Registration::after_transfer`]).
    pub(crate) fn poll_transfer(
        &self,
        dir: Direction,
        cx: &mut Context<'_>,
        len: usize,
        mut op: impl FnMut() -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            let Poll::Ready(seen) = self.poll_ready(dir, cx) else {
                return Poll::Pending;
            };
            let r = op();
            if self.after_transfer(dir, seen, len, &r) {
                return Poll::Ready(r);
            }
        }
    }

    /// Runs a byte stream's read or write of up to `len` bytes once if the source was
    /// last seen ready for `dir`, without waiting: `WouldBlock` if it was not (no system
    /// call), or if `op` would block; clears as [`Registration::poll_transfer`] does.
    pub(crate) fn try_transfer(
        &self,
        dir: Direction,
        len: usize,
        op: impl FnOnce() -> io::Result<usize>,
    ) -> io::Result<usize> {
        let Some(seen) = self.state.ready(dir) else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        let r = op();
        self.after_transfer(dir, seen, len, &r);
        r
    }

    /// After a stream transfer of `len` bytes asked when `seen` said ready: clears the
    /// readiness on `WouldBlock`, and also on a short transfer (`0 < n < len`), which
    /// tells that the kernel's receive buffer is drained or its send buffer full, as
    /// tokio does over edge-triggered epoll and kqueue. That saves the system call that
    /// would only answer `WouldBlock`. The next arrival of bytes (or of room) is a new
    /// edge and sets it again, and one that came since `seen` moved the tick, so the
    /// clear does not take. Returns whether the transfer is the caller's outcome (not
    /// `WouldBlock`).
    fn after_transfer(
        &self,
        dir: Direction,
        seen: Seen,
        len: usize,
        r: &io::Result<usize>,
    ) -> bool {
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.clear(dir, seen);
                false
            }
            Ok(n) if *n > 0 && *n < len && SHORT_TRANSFER_DRAINS => {
                self.clear(dir, seen);
                true
            }
            _ => true,
        }
    }

    /// Takes `source` out of the OS poll, before it is closed.
    pub(crate) fn deregister(&self, source: &mut impl mio::event::Source) {
        if let Some(r) = &self.reactor {
            let _ = r.registry.deregister(source);
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(r) = &self.reactor {
            r.release(self.token);
            r.registered.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
