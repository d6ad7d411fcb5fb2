//! Rules of the panic hook (`unwind.rs`, "The panic hook"): a panic in a process goes
//! to the hook that was set before the runtime while no `tracing` subscriber takes
//! crash reports, and only to its report once one does; a panic outside the runtime's
//! threads always goes to the hook before.
//!
//! One test, in its own binary: the global subscriber is set once, part-way through.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use otter::{Context, Down, ExitReason, Runtime};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that takes otter's events and keeps nothing.
struct Quiet;

impl Subscriber for Quiet {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target().starts_with("otter::")
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs a process that panics on `rt` and waits for its end.
fn panic_in_a_process(rt: &Runtime) {
    let r = rt.block_on(|mut cx: Context<Down>| async move {
        cx.spawn_monitor(|_: Context<()>| async move { panic!("in a process") });
        cx.recv().await.reason
    });
    assert_eq!(r.unwrap(), ExitReason::Panic("in a process".into()));
}

#[test]
fn a_panic_in_a_process_is_printed_only_while_no_subscriber_takes_its_report() {
    let printed = Arc::new(AtomicUsize::new(0));
    let p = printed.clone();
    // The program's hook, set before any runtime: it counts instead of printing.
    std::panic::set_hook(Box::new(move |_| {
        p.fetch_add(1, Ordering::SeqCst);
    }));
    let rt = Runtime::builder().threads(2).build().unwrap();

    panic_in_a_process(&rt);
    assert_eq!(
        printed.load(Ordering::SeqCst),
        1,
        "no subscriber: the hook before"
    );

    tracing::subscriber::set_global_default(Quiet).unwrap();
    panic_in_a_process(&rt);
    assert_eq!(
        printed.load(Ordering::SeqCst),
        1,
        "a subscriber: its report only"
    );

    // Off the runtime's threads, the hook before still sees every panic.
    let _ = std::panic::catch_unwind(|| panic!("on the test's thread"));
    assert_eq!(printed.load(Ordering::SeqCst), 2);
}
