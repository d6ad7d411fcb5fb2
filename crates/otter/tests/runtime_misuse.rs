//! Rule: misusing the runtime from inside a process fails clearly instead of
//! deadlocking: `block_on` on a worker thread panics, which ends only that process.

use otter::{Context, ExitReason, Runtime};

#[test]
fn block_on_inside_a_process_ends_that_process_with_a_clear_reason() {
    let outer = Runtime::builder().threads(1).build().unwrap();
    let inner = std::sync::Arc::new(Runtime::builder().threads(1).build().unwrap());
    let i2 = inner.clone();
    let r = outer.block_on(move |_cx: Context<()>| async move {
        i2.block_on(|_cx: Context<()>| async { 1 }).ok();
    });
    match r {
        Err(ExitReason::Panic(msg)) => {
            assert!(msg.contains("block_on called on a worker thread"), "{msg}")
        }
        other => panic!("expected a panic exit, got {other:?}"),
    }
    // Both runtimes still work.
    assert_eq!(outer.block_on(|_cx: Context<()>| async { 2 }), Ok(2));
    assert_eq!(inner.block_on(|_cx: Context<()>| async { 3 }), Ok(3));
}
