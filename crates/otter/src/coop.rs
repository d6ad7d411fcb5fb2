//! The turn's budget (tokio's `coop`): how much a process may do in one poll of its
//! worker before it yields. A leaf: a worker starts each turn ([`start_turn`]) and
//! receives, socket operations, a state machine's internal events, spawns and sends
//! draw on it; nothing here knows who runs the process.
//!
//! # Rules
//!
//! 1. A turn is [`BUDGET`] units. Receives, socket operations and spawns take theirs
//!    from `LEFT`; sends are counted in `SENT` (which the send path counts anyway, for
//!    the stream cache, `process/send.rs`), and the turn is spent once the sends reach
//!    what the other operations left: `SENT >= LEFT`. So a plain send costs nothing
//!    more than its count, and a receive one more load.
//! 2. A plain send and a plain spawn never yield ([`charge_spawn`] takes its unit
//!    without asking); the process's next receive, socket operation or awaitable send
//!    does (`Context::send`, `Context::consume_budget`).
//! 3. Outside a turn (a thread that is not a worker, or has stopped being one: a
//!    `Context` moved to a plain thread, a socket used outside any process) there is
//!    no turn to yield: [`consume_op`] always says go on.
//! 4. Each access is one `const`-initialised thread-local without a destructor: one
//!    load, no lazy initialisation.

use std::cell::Cell;

/// Units of one turn. tokio's cooperative budget (128 operations per task poll); ERTS
/// gives a process 4,000 reductions, about the cost of a few hundred receives. Trades
/// throughput of a stream (a larger budget yields less) against the wait of the
/// processes queued behind it. Measure with `counting` and `latency`.
pub(crate) const BUDGET: u32 = 128;

thread_local! {
    /// What remains of the running process's budget.
    static LEFT: Cell<u32> = const { Cell::new(BUDGET) };
    /// Messages sent by the running process in this poll.
    static SENT: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread runs turns (a worker, between `enter` and `leave`).
    static IN_TURNS: Cell<bool> = const { Cell::new(false) };
}

/// This thread runs turns from now on (a worker's start; rule 3).
pub(crate) fn enter() {
    IN_TURNS.with(|t| t.set(true));
}

/// Whether this thread runs turns (a worker; rule 3).
pub(crate) fn in_turns() -> bool {
    IN_TURNS.with(Cell::get)
}

/// This thread runs no more turns (a worker's end; rule 3).
pub(crate) fn leave() {
    IN_TURNS.with(|t| t.set(false));
}

/// Starts a turn's counters: the budget and the send count.
#[inline]
pub(crate) fn start_turn(budget: u32) {
    LEFT.with(|b| b.set(budget));
    SENT.with(|s| s.set(0));
}

/// Consumes one unit of the running process's budget; false when it is spent (rule 1).
#[inline]
pub(crate) fn consume_budget() -> bool {
    let sent = SENT.with(Cell::get);
    LEFT.with(|b| {
        let left = b.get();
        if left <= sent {
            false
        } else {
            b.set(left - 1);
            true
        }
    })
}

/// Consumes one unit for an operation that yields when the budget is spent (a socket
/// operation, a state machine's internal event); false when it must yield. Rule 3:
/// outside a turn, always true. Unlike a receive, a spent budget is never renewed in
/// place here: the yield is what lets an exit signal that waits for the process (an
/// `exit(pid, kill)`) reach it.
#[inline]
pub(crate) fn consume_op() -> bool {
    consume_budget() || !IN_TURNS.with(Cell::get)
}

/// Takes one unit of the running process's budget for a spawn, without asking whether
/// it is spent (rule 2).
#[inline]
pub(crate) fn charge_spawn() {
    LEFT.with(|b| b.set(b.get().saturating_sub(1)));
}

/// Whether the running process's turn has spent its budget, its sends included (rule
/// 1). The awaitable send asks after its send, `Context::consume_budget` after taking
/// its unit, and the worker after a poll (a turn that spent it is not a `yield_now`).
#[inline]
pub(crate) fn budget_spent() -> bool {
    LEFT.with(Cell::get) <= SENT.with(Cell::get)
}

/// Messages sent by the running process in this poll.
#[inline]
pub(crate) fn sent() -> u32 {
    SENT.with(Cell::get)
}

/// After a turn renewed in place for a send (`Owner::send_budget_spent`): the poll's
/// send count goes on from `sent` (so the spills keep their interval), and the new
/// turn lasts `budget` units from there.
#[inline]
pub(crate) fn resume_sends(sent: u32, budget: u32) {
    SENT.with(|s| s.set(sent));
    LEFT.with(|b| b.set(sent.saturating_add(budget)));
}

/// Counts a message sent by the running process; returns how many it has sent in
/// this poll, this one included (on a thread that is not a worker: ever).
#[inline]
pub(crate) fn count_send() -> u32 {
    SENT.with(|s| {
        let n = s.get().wrapping_add(1);
        s.set(n);
        n
    })
}
