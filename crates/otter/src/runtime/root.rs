//! The root process of `block_on` (`Runtime::block_on`, `Simulation::block_on`): the
//! future that runs the caller's, and the slot where its value, or the reason it ended
//! without one, waits for the caller.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::Poll;

use crate::Context;
use crate::exit::ExitReason;
use crate::process::harness;

/// Where a root's outcome waits; the first one set stays.
pub(crate) struct RootSlot<T> {
    value: Mutex<Option<Result<T, ExitReason>>>,
    done: Condvar,
}

impl<T> RootSlot<T> {
    pub(crate) fn new() -> RootSlot<T> {
        RootSlot {
            value: Mutex::new(None),
            done: Condvar::new(),
        }
    }

    fn set(&self, r: Result<T, ExitReason>) {
        let mut g = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        if g.is_none() {
            *g = Some(r);
            self.done.notify_all();
        }
    }

    /// The outcome, if the root has one yet.
    pub(crate) fn take(&self) -> Option<Result<T, ExitReason>> {
        self.value
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Waits, on this thread, for the outcome.
    pub(crate) fn wait(&self) -> Result<T, ExitReason> {
        let mut g = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(r) = g.take() {
                return r;
            }
            g = self.done.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The root process's future: reports its value or its end to its slot.
pub(crate) struct Root<Fut: Future> {
    fut: Pin<Box<Fut>>,
    slot: Arc<RootSlot<Fut::Output>>,
}

impl<Fut: Future> Root<Fut> {
    /// The function a spawn of the root runs: `f`'s future, reporting to `slot`.
    pub(crate) fn new<M, F>(
        f: F,
        slot: Arc<RootSlot<Fut::Output>>,
    ) -> impl FnOnce(Context<M>) -> Root<Fut>
    where
        F: FnOnce(Context<M>) -> Fut,
    {
        move |cx| Root {
            fut: Box::pin(f(cx)),
            slot,
        }
    }
}

impl<Fut: Future> Future for Root<Fut> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let fut = this.fut.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                this.slot.set(Ok(v));
                Poll::Ready(())
            }
            Err(payload) => {
                this.slot.set(Err(ExitReason::from_panic(&*payload)));
                std::panic::resume_unwind(payload)
            }
        }
    }
}

impl<Fut: Future> Drop for Root<Fut> {
    fn drop(&mut self) {
        // Dropped without a value: the process was ended from outside, by an exit
        // signal (its reason) or by the runtime's shutdown (`Killed`).
        let reason = harness::exit_reason_of_dropping().unwrap_or(ExitReason::Killed);
        self.slot.set(Err(reason));
    }
}
