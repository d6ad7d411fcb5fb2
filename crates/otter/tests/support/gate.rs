//! A gate a process awaits without touching its mailbox, opened by another process or
//! by the test: it holds a process (or a start function, or a handler) at a known
//! point while the test fills its mailbox or sends it requests.
//!
//! Used as `#[path = "support/gate.rs"] mod gate;` from `tests/`.

#![allow(dead_code, unreachable_pub)]

use std::sync::Mutex;
use std::task::{Poll, Waker};

/// Closed until [`Gate::open`]; then every [`Gate::wait`], past and future, returns.
#[derive(Default)]
pub struct Gate(Mutex<(bool, Vec<Waker>)>);

impl Gate {
    /// Returns once the gate is open.
    pub async fn wait(&self) {
        std::future::poll_fn(|cx| {
            let mut g = self.0.lock().unwrap();
            if g.0 {
                Poll::Ready(())
            } else {
                g.1.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// Opens the gate and wakes every waiter.
    pub fn open(&self) {
        let wakers = {
            let mut g = self.0.lock().unwrap();
            g.0 = true;
            std::mem::take(&mut g.1)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}
