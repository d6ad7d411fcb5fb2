//! Shared by the integration tests: run one test body on 1 worker and on N workers
//! (tokio's `rt_common.rs` idea), and a failure guard for waits.

#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

/// Workers of the "many" configuration: more than this machine's cores, so that
/// workers really interleave and steal.
pub const MANY: usize = 4;

/// Declares `mod $name { one_worker, many_workers }`, each calling `$body(&Runtime)`.
#[macro_export]
macro_rules! rt_test {
    ($(#[$m:meta])* $name:ident, $body:expr) => {
        $(#[$m])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn one_worker() {
                let rt = otter::Runtime::builder().threads(1).build().unwrap();
                ($body)(&rt);
            }
            #[test]
            fn many_workers() {
                let rt = otter::Runtime::builder()
                    .threads($crate::support::MANY)
                    .build()
                    .unwrap();
                ($body)(&rt);
            }
        }
    };
}

/// Spins until `cond` holds; panics (with the label) after `limit`. A failure guard, not
/// a synchronisation: tests wait on messages, and use this only for "eventually" facts
/// about other threads.
pub fn eventually(label: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < limit, "timed out waiting for: {label}");
        std::thread::yield_now();
    }
}

/// Threads of this process whose name starts with `prefix` (a runtime's threads are
/// named after `Builder::thread_name`; its spare threads add `-spare-` and a number).
#[cfg(target_os = "linux")]
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.starts_with(prefix))
                })
                .count()
        })
        .unwrap_or(0)
}

/// Awaits two futures concurrently in one process (no extra dependency).
pub async fn join<A: std::future::Future, B: std::future::Future>(
    a: A,
    b: B,
) -> (A::Output, B::Output) {
    let mut a = std::pin::pin!(a);
    let mut b = std::pin::pin!(b);
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(move |cx| {
        if ra.is_none()
            && let std::task::Poll::Ready(v) = a.as_mut().poll(cx)
        {
            ra = Some(v);
        }
        if rb.is_none()
            && let std::task::Poll::Ready(v) = b.as_mut().poll(cx)
        {
            rb = Some(v);
        }
        if ra.is_some() && rb.is_some() {
            std::task::Poll::Ready((ra.take().unwrap(), rb.take().unwrap()))
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}
