//! Batched starts: a simple_one_for_one supervisor starts the children asked of it in a
//! row together, and answers each caller when its own child's `init` has finished.
//!
//! OTP's supervisor serves `start_child` one request at a time and waits for the child's
//! `init` (`proc_lib:start_link`) before it reads the next one, so every start costs the
//! supervisor a spawn, a wait for the child's turn and a wait for its own: under load,
//! with a run queue of a few hundred processes, two passes of the queue per start, and
//! starts asked faster than that pile up in the one supervisor's mailbox
//! (docs/design/0039; Elixir's answer is `PartitionSupervisor`, several supervisors).
//! Here a `StartChild` to a simple_one_for_one supervisor begins a batch: the start is
//! begun (the start function runs, which spawns and links the child), and so is every
//! `StartChild` request that comes next in the mailbox, now or while the batch waits,
//! up to [`BATCH`] in flight; each caller is answered as its own child acknowledges,
//! and the batch ends when none is in flight.
//!
//! # Rules
//!
//! * **Order.** Only the message next in line is ever taken
//!   (`Context::try_recv_next_if`), and only if it is a start request or the exit signal
//!   of a running child that its restart type does not restart (temporary, or transient
//!   ending normally: a service that starts jobs also sees them end), which is handled
//!   at once as `handle_info` would (the child reported and forgotten). Any other
//!   message (an exit signal that asks for a restart, one from a process that is not a
//!   running child, such as the parent's, a `terminate_child`, `which_children`, a
//!   system message, a stop) is left first in line: the batch takes nothing more, and
//!   that message is handled once the starts in flight have ended, as OTP handles it
//!   after the start it was queued behind.
//! * **What differs from OTP:** the `init`s of a batch overlap, and a caller is answered
//!   when its child acknowledges, before earlier callers whose children have not. Two
//!   children of one batch that register the same name race for it, and the one that
//!   fails with `AlreadyStarted` need not be the later request.
//! * A start function that panics, or whose future panics, fails that start alone
//!   (`ChildError::StartFailed`), as in `supervisor.rs`'s `start`.
//! * A supervisor being debugged (`sys::trace`, `sys::log`) starts one child at a time,
//!   so that its log shows every request it handles.
//! * [`BATCH`] bounds the work of a wake-up: each acknowledgement (or new request) wakes
//!   the supervisor, which polls every start in flight.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Poll;

use super::child::{ChildSpec, StartFuture};
use super::{ChildError, Request, Supervisor, SupervisorContext, report_start};
use crate::exit::ExitReason;
use crate::pid::ProcessId;
use crate::server::{ReplyTo, ServerMsg};
use crate::signal::Exit;

/// The most starts one batch takes.
pub(super) const BATCH: usize = 64;

/// A `start_child` caller's reply handle.
type Answer = ReplyTo<Result<ProcessId, ChildError>>;

/// A start of the batch: its spec, its caller, and its future (or the panic of its start
/// function).
type Starting = (ChildSpec, Answer, Result<StartFuture, ExitReason>);

impl Supervisor {
    /// `start_child` on a simple_one_for_one supervisor: this request and those next in
    /// line, as they come, until none is in flight (module docs).
    pub(super) async fn start_batch(
        &mut self,
        spec: ChildSpec,
        from: Answer,
        cx: &mut SupervisorContext,
    ) {
        let me = cx.pid().id();
        // Debugged: this start alone (module docs).
        let taking = !crate::server::reply_hooked();
        let mut starts: Vec<Starting> = vec![begin(spec, from, cx)];
        std::future::poll_fn(|tcx| {
            // What is next in line, while it is a start or a quiet exit.
            while taking && starts.len() < BATCH {
                // The child a quiet exit is from, found by the look that took it.
                let mut quiet = None;
                let next = cx.try_recv_next_if(|m| match m {
                    ServerMsg::Call(Request::StartChild(..)) => true,
                    ServerMsg::Exit(e) => {
                        quiet = self.ends_quietly(e);
                        quiet.is_some()
                    }
                    _ => false,
                });
                match next {
                    Some(ServerMsg::Call(Request::StartChild(spec, from))) => {
                        starts.push(begin(spec, from, cx));
                    }
                    Some(ServerMsg::Exit(e)) => {
                        let i = quiet.expect("taken as a quiet exit");
                        let restart = self.exited(i, &e, me);
                        debug_assert!(!restart, "taken as ending quietly");
                    }
                    _ => break,
                }
            }
            let mut n = 0;
            while n < starts.len() {
                let started = match &mut starts[n].2 {
                    Err(panic) => Err(std::mem::replace(panic, ExitReason::Normal)),
                    Ok(start) => {
                        match catch_unwind(AssertUnwindSafe(|| start.as_mut().poll(tcx))) {
                            Ok(Poll::Pending) => {
                                n += 1;
                                continue;
                            }
                            Ok(Poll::Ready(started)) => started,
                            Err(payload) => Err(crate::unwind::panic_reason(payload)),
                        }
                    }
                };
                // Children have no order under simple_one_for_one.
                let (spec, from, _) = starts.swap_remove(n);
                report_start(me, &spec, &started);
                match started {
                    Ok(pid) => {
                        self.push(spec, pid);
                        from.reply(Ok(pid));
                    }
                    Err(reason) => from.reply(Err(ChildError::StartFailed(reason))),
                }
            }
            if starts.is_empty() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }

    /// The running child exit signal `e` is from, if its exit needs no restart: the
    /// signal is taken into the batch and handled there, in its order (module docs).
    fn ends_quietly(&self, e: &Exit) -> Option<usize> {
        self.find_running(e.from)
            .map(|(i, _)| i)
            .filter(|&i| !self.children[i].spec.restart.restarts_after(&e.reason))
    }
}

/// Begins a start: the start function runs now (it spawns and links the child); a panic
/// in it is the start's failure.
fn begin(spec: ChildSpec, from: Answer, cx: &SupervisorContext) -> Starting {
    let begun = crate::unwind::catch_panic(|| (spec.start)(cx));
    (spec, from, begun)
}
