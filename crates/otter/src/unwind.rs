//! Panics: user code's are caught, the runtime's own abort.
//!
//! User code that may panic, run where a panic must not escape: a process's poll, a
//! message's or a future's `Drop`, a timer's action, a watcher's notification. A panic
//! is caught and becomes an exit reason or nothing, and its payload is dropped here,
//! where a second panic (a payload whose own `Drop` panics) is caught too: nothing
//! unwinds into a worker or the timer thread, and no drop panics while another unwinds
//! (which would abort the OS process).
//!
//! # The panic hook
//!
//! The first runtime built installs a panic hook in front of the one already set
//! (Rust's default, or the program's). On a worker thread, it keeps the panic's place
//! (file, line, column) for the report of whoever catches it (`report.rs`: a crashed
//! process, a terminating server, a panic in a drop or a notification); then, if a
//! `tracing` subscriber takes `otter::crash` events, it prints nothing, since that
//! report is the panic's one line in the log; otherwise it calls the hook before it, so a
//! program with no subscriber sees what Rust prints. Anywhere else it calls the hook
//! before it. A program that sets its own hook after building a runtime replaces this
//! one, and its hook sees every panic. The place kept is the thread's last panic's, with
//! its message: a report names it only for a reason with that message, so a report made
//! on another thread than its panic's (a server whose `terminate` awaited and went on
//! elsewhere) names no place rather than another panic's.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

#[cfg(not(loom))]
use crate::exit::ExitReason;

/// Runs `f` and turns a panic into its exit reason, dropping the panic's payload with
/// [`drop_payload`]. Every place the runtime runs user code under `catch_unwind` goes
/// through here, [`catch_silently`] or [`panic_reason`], so that no payload is dropped
/// where a panic can escape.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn catch_panic<R>(f: impl FnOnce() -> R) -> Result<R, ExitReason> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Ok(r),
        Err(payload) => Err(caught(payload)),
    }
}

/// A panic caught where no process ends with it: its reason, reported.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn caught(payload: Box<dyn Any + Send>) -> ExitReason {
    let reason = panic_reason(payload);
    crate::report::panic_caught(&reason);
    reason
}

thread_local! {
    /// Where the last panic on this worker thread happened, and its message, until a
    /// report takes them.
    static PANIC_SITE: Cell<Option<(Box<str>, Box<str>)>> = const { Cell::new(None) };
}

/// Installs the panic hook (module docs), once per OS process.
#[cfg(not(loom))]
pub(crate) fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if crate::coop::in_turns() {
                let site = info.location().map(|l| {
                    let message = match info.payload() {
                        p if p.is::<&str>() => p.downcast_ref::<&str>().map(|s| (*s).into()),
                        p => p.downcast_ref::<String>().map(|s| s.as_str().into()),
                    };
                    (
                        format!("{}:{}:{}", l.file(), l.line(), l.column()).into(),
                        message.unwrap_or_default(),
                    )
                });
                PANIC_SITE.with(|s| s.set(site));
                if crate::report::panics_reported() {
                    return;
                }
            }
            before(info);
        }));
    });
}

/// Where the panic with `message` happened (`file:line:column`), if it is the last one
/// the panic hook saw on this thread (module docs); taken once.
pub(crate) fn take_panic_site(message: &str) -> Option<Box<str>> {
    match PANIC_SITE.with(Cell::take) {
        Some((site, m)) if message.starts_with(&*m) => Some(site),
        _ => None,
    }
}

/// The exit reason of a caught panic; drops its payload with [`drop_payload`]. Out of
/// line, so that the paths that do not panic inline to no more than `catch_unwind`: the
/// two hottest (a process's poll, a server's handler) match `catch_unwind`'s result
/// themselves and call this for the error.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
pub(crate) fn panic_reason(payload: Box<dyn Any + Send>) -> ExitReason {
    let reason = ExitReason::from_panic(&*payload);
    drop_payload(payload);
    reason
}

/// How many payloads deep [`drop_payload`] follows a drop that panics again.
const PAYLOAD_DROPS: usize = 8;

/// Drops a panic payload whose own `Drop` may panic (`std::panic::panic_any` takes any
/// value): that panic is caught too and its payload dropped the same way, up to
/// [`PAYLOAD_DROPS`] deep; a payload past that is leaked rather than unwound into a
/// worker.
#[cold]
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut next = Some(payload);
    for _ in 0..PAYLOAD_DROPS {
        let Some(p) = next.take() else { return };
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(p))) {
            next = Some(again);
        }
    }
    std::mem::forget(next);
}

/// Runs `f`, the runtime's own code, aborting the OS process if a panic unwinds out of
/// it (async-task's `abort_on_panic`). Every piece of user code that `f` runs is already
/// under [`catch_panic`] or [`catch_silently`], so a panic reaching here is a broken
/// invariant of the runtime, which unwinding would leave half-updated (a count taken and
/// never given back, a process neither running nor exited, a worker thread gone): an
/// abort with the place named is the honest end. Costs nothing unless it fires: the
/// guard is forgotten on the way out.
#[inline(always)]
pub(crate) fn abort_on_unwind<R>(place: &'static str, f: impl FnOnce() -> R) -> R {
    struct Abort(&'static str);
    impl Drop for Abort {
        fn drop(&mut self) {
            eprintln!(
                "otter: a panic in the runtime's own code ({}), not in a process: aborting",
                self.0
            );
            std::process::abort();
        }
    }
    let guard = Abort(place);
    let r = f();
    std::mem::forget(guard);
    r
}

/// Runs `f`; a panic in it is caught, reported (`report.rs`, `panic_caught`) and its
/// payload dropped with [`drop_payload`]. For a drop that has no process to tell.
#[inline]
pub(crate) fn catch_silently(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        #[cfg(not(loom))]
        caught(payload);
        #[cfg(loom)]
        drop_payload(payload);
    }
}
