//! The reactor: readiness from the OS for the sockets processes own (`net`).
//!
//! # Design
//!
//! One `mio::Poll` (epoll on Linux) per runtime, created with the runtime's first
//! socket: a runtime that never opens one has no reactor and pays one load of an empty
//! `OnceLock` per park and per `GLOBAL_INTERVAL` (`tuning.rs`)
//! ticks. There is no IO thread. The OS is polled by the workers themselves, as tokio's
//! workers and the BEAM's schedulers do:
//!
//! * a worker about to park takes the driver (a `try_lock`: one poller at a time) and
//!   blocks in `epoll_wait` instead of `thread::park`, with the timeout it would have
//!   parked for; a pusher that wakes it writes the reactor's eventfd (`mio::Waker`)
//!   instead of unparking the thread (`Remote::in_driver`, set before the worker
//!   registers as sleeping, so a pusher that pops it always sees it);
//! * a busy worker polls without blocking every `GLOBAL_INTERVAL` ticks, and a searching
//!   one every search round, so sockets are served while every worker has processes to
//!   run;
//! * a poll takes no more events than the polling worker's local queue has room for
//!   the processes they wake (`IO_EVENTS`, half the queue, given to `Reactor::new` by
//!   the scheduler: the reactor knows nothing of queues): a busy worker whose queue is
//!   fuller skips its poll, at most `IO_POLLS_SKIPPED` times in a row, then polls for
//!   `IO_FEW_EVENTS` (both in `tuning.rs`). Woken processes then join the queue in the order
//!   the OS reported them instead of overflowing into the injector, and what is ready
//!   beyond waits, in order, in the kernel's ready list;
//! * an event sets the source's readiness and wakes the processes waiting on it: they
//!   are scheduled like processes woken by a message, onto the polling worker's queues.
//!
//! Readiness per source follows tokio's `ScheduledIo` (`io/readiness.rs`): an operation
//! that returns `WouldBlock` clears the readiness it observed, unless an event came since.
//!
//! # Invariants
//!
//! * A registration (`Registration`) is dropped before the socket it registered is
//!   closed, and deregisters it first (`net`): a token is never in epoll without its
//!   slab entry. A stale event for a token reused since is a spurious readiness, which
//!   an operation answers with `WouldBlock`.
//! * While sockets are in use and every active worker parks, one of them parks in the
//!   OS poll. A worker that finds the driver taken when it parks parks in
//!   `thread::park` and counts on the holder: a worker holding the driver always comes
//!   back to park and takes it again, but a spare that steps back (`stand_in.rs`)
//!   does not, so it unparks every other worker unless one is in the OS poll
//!   (`Shared::hand_on_the_os`). Without that, a socket's readiness could wait for
//!   the next push or timer (the loom model `a_spare_that_steps_back_hands_on_the_os`).
//! * The readiness of a source is only ever set by the driver (or, for a simulation's
//!   sockets, by its network: `io/network.rs`) and cleared by its owner (the process
//!   that owns the socket), under the tick protocol.

pub(crate) mod network;
pub(crate) mod reactor;
pub(crate) mod readiness;
