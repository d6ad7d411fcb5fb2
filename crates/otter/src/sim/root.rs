//! The root process of [`Simulation::block_on`](super::Simulation::block_on).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use crate::exit::ExitReason;
use crate::process::harness;

/// The root process of `Simulation::block_on`: its value, or its end, goes to the slot
/// (as `runtime.rs`'s root does for `Runtime::block_on`).
pub(super) struct Root<Fut: Future> {
    pub(super) fut: Pin<Box<Fut>>,
    pub(super) slot: RootSlot<Fut::Output>,
}

pub(super) type RootSlot<T> = Arc<Mutex<Option<Result<T, ExitReason>>>>;

fn set<T>(slot: &RootSlot<T>, r: Result<T, ExitReason>) {
    slot.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert(r);
}

impl<Fut: Future> Future for Root<Fut> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let fut = this.fut.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                set(&this.slot, Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                set(&this.slot, Err(ExitReason::from_panic(&*payload)));
                std::panic::resume_unwind(payload)
            }
        }
    }
}

impl<Fut: Future> Drop for Root<Fut> {
    /// Dropped without a value: ended by an exit signal (its reason) or by the
    /// simulation's end (`Killed`).
    fn drop(&mut self) {
        let reason = harness::exit_reason_of_dropping().unwrap_or(ExitReason::Killed);
        set(&self.slot, Err(reason));
    }
}
