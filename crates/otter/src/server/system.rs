//! The server side of [`sys`](crate::sys): how the server loop answers system
//! messages, and handles its messages while debugging is on.
//!
//! # Protocol
//!
//! 1. **The main loop** (`serve` in `server.rs`) receives a message and hands it to its
//!    callback (`handle`). A [`ServerMsg::System`] is not handled there: `handle`
//!    leaves it in [`Whoami::taken`] and ends the loop (as a panic would, with a
//!    placeholder reason), and `serve` takes it to [`run`], then starts the loop again.
//!    While a debug flag is on ([`Whoami::debug`] is `Some`), the loop leaves every
//!    message there. So the loop's only work for `sys` is one look at `debug` per
//!    message, and it awaits nothing new.
//! 2. [`run`] handles the message with the flags: a system message is answered
//!    ([`answer`]); while suspended, a message other than a system message, a stop or
//!    the parent's exit signal is stashed, in order; any other message is counted,
//!    traced and handed to the callback with the reply hook set (3). At the resume,
//!    the stashed messages are handled, oldest first, before the mailbox; a call that
//!    waited out its timeout meanwhile is still handled (its reply is dropped), as in
//!    OTP. When every flag is off, the flags go; nothing of `sys` is left.
//! 3. **The reply hook.** A reply goes through [`ReplyTo::reply`](crate::server::ReplyTo::reply),
//!    called by the handler, which the loop does not see. While [`run`] polls a
//!    handler, a thread-local hook names the server; `reply` looks at it (a load and a
//!    branch) and, when set, counts and traces the reply here ([`replied`]). It is set
//!    only around the polls of a debugged server's handler and restored after each, so
//!    a reply sent by any other code is not seen.
//!
//! # Cost
//!
//! Each piece of the debug path is a function of its own (`handle::<S, true>`, its
//! `catch_in`, [`Running`]'s poll): a function the main loop shares with it has two
//! callers, and LLVM stopped inlining such functions into the main loop (callgrind,
//! `pingpong style=server`: a few dozen instructions more per round trip). The main
//! loop never receives from the debug path either: [`run`] gets its messages from it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::SystemTime;

use crate::exit::ExitReason;
use crate::pid::{ProcessId, RawPid};
use crate::server::run::handle;
use crate::server::{Flow, Server, ServerContext, ServerMsg};
use crate::sys::{Direction, Kind, LogEvent, Mode, Request, Statistics, Status};

/// A server's debug flags (OTP's debug list and `running`/`suspended` mode), and the
/// messages that came while it was suspended: in [`Whoami`] while one flag is on.
pub(crate) struct Debug<S: Server> {
    suspended: bool,
    trace: bool,
    stats: Option<Counts>,
    /// `sys::log`'s events, the last `keep`, oldest first.
    log: Option<Log>,
    /// Messages received while suspended, oldest first: handled at the resume, before
    /// the mailbox.
    stash: VecDeque<ServerMsg<S>>,
}

impl<S: Server> Default for Debug<S> {
    fn default() -> Self {
        Debug {
            suspended: false,
            trace: false,
            stats: None,
            log: None,
            stash: VecDeque::new(),
        }
    }
}

/// The counts of statistics, from when they were turned on.
struct Counts {
    start: SystemTime,
    messages_in: u64,
    messages_out: u64,
}

/// The last events of a logged server ([`crate::sys::log`]).
struct Log {
    keep: usize,
    events: VecDeque<LogEvent>,
}

impl Log {
    fn push(&mut self, direction: Direction, kind: &'static str, message: &'static str) {
        if self.keep == 0 {
            return;
        }
        if self.events.len() == self.keep {
            self.events.pop_front();
        }
        self.events.push_back(LogEvent {
            at: SystemTime::now(),
            direction,
            kind,
            message,
        });
    }
}

impl<S: Server> Debug<S> {
    fn active(&self) -> bool {
        self.suspended || self.trace || self.stats.is_some() || self.log.is_some()
    }
}

/// Who the server is (for its status and its trace events), and the main loop's
/// hand-over to [`run`] (rule 1).
pub(crate) struct Whoami<'a, S: Server> {
    pub(crate) parent: Option<RawPid>,
    pub(crate) name: Option<&'a Arc<str>>,
    /// The message the main loop left for [`run`].
    pub(crate) taken: Option<ServerMsg<S>>,
    /// The debug flags, while one is on (boxed: `Some` is rare).
    pub(crate) debug: Option<Box<Debug<S>>>,
}

/// The hook of rule 3: the server being polled, while it is debugged.
#[derive(Clone, Copy)]
struct Hook {
    pid: ProcessId,
    trace: bool,
    log: bool,
}

thread_local! {
    static HOOK: Cell<Option<Hook>> = const { Cell::new(None) };
    /// Replies seen under the hook during the current poll.
    static REPLIES: Cell<u64> = const { Cell::new(0) };
    /// Their types, while the server's log is on.
    static REPLY_TYPES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Whether a debugged server is being polled on this thread (rule 3): what
/// `ReplyTo::reply` looks at.
#[inline]
pub(crate) fn hooked() -> bool {
    HOOK.with(|h| h.get().is_some())
}

/// A reply of type `R` sent under the hook: counted, and traced if tracing is on.
#[cold]
#[inline(never)]
pub(crate) fn replied<R>() {
    REPLIES.with(|r| r.set(r.get() + 1));
    let Some(h) = HOOK.with(Cell::get) else {
        return;
    };
    if h.log {
        REPLY_TYPES.with(|t| t.borrow_mut().push(std::any::type_name::<R>()));
    }
    if h.trace {
        let message = std::any::type_name::<R>();
        tracing::info!(
            target: "otter::sys",
            pid = %h.pid,
            event = "out",
            kind = "reply",
            message,
            "*DBG* {} sent reply ({message})",
            h.pid,
        );
    }
}

/// Runs `fut` with the hook set around each of its polls; returns its output, the
/// replies it sent, and their types if the hook logs.
async fn with_hook<F: Future>(hook: Hook, fut: F) -> (F::Output, u64, Vec<&'static str>) {
    let mut fut = std::pin::pin!(fut);
    let mut replies = 0;
    let mut types = Vec::new();
    std::future::poll_fn(move |cx| {
        let old = HOOK.with(|h| h.replace(Some(hook)));
        let before = REPLIES.with(Cell::get);
        // A panic is caught inside (`server::catch`): the restore always runs.
        let polled = fut.as_mut().poll(cx);
        replies += REPLIES.with(Cell::get) - before;
        if hook.log {
            // This poll's replies, taken on the thread that ran it.
            REPLY_TYPES.with(|t| types.append(&mut t.borrow_mut()));
        }
        HOOK.with(|h| h.set(old));
        match polled {
            Poll::Ready(v) => Poll::Ready((v, replies, std::mem::take(&mut types))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// What a suspended server receives: system messages, a stop, its parent's exit.
fn wanted_when_suspended<S: Server>(m: &ServerMsg<S>, parent: Option<RawPid>) -> bool {
    match m {
        ServerMsg::System(_) | ServerMsg::Stop(_) => true,
        ServerMsg::Exit(e) => Some(e.from.0) == parent,
        _ => false,
    }
}

/// The kind of a message, for trace events.
fn kind<S: Server>(m: &ServerMsg<S>) -> (&'static str, &'static str) {
    use std::any::type_name;
    match m {
        ServerMsg::Call(_) => ("call", type_name::<S::Call>()),
        ServerMsg::Cast(_) => ("cast", type_name::<S::Cast>()),
        ServerMsg::Info(_) => ("info", type_name::<S::Info>()),
        ServerMsg::Exit(_) => ("exit", "otter::Exit"),
        ServerMsg::Down(_) => ("down", "otter::Down"),
        ServerMsg::Stop(_) => ("stop", "otter::ExitReason"),
        ServerMsg::Timeout(_) => ("timeout", "otter::statem::TimeoutTag"),
        ServerMsg::System(_) => ("system", "otter::sys::Request"),
    }
}

/// Rule 2: handles `message` with the debug flags (answers it if it is a system
/// message, stashes it if the server is suspended, else hands it to its callback,
/// counted and traced), then, after a resume, the stashed messages; the flow of the
/// last. Boxed: the main loop's future holds a pointer to it, not its state.
pub(crate) fn run<'a, S: Server>(
    state: &'a mut S,
    message: ServerMsg<S>,
    me: &'a mut Whoami<'_, S>,
    cx: &'a mut ServerContext<S>,
) -> Running<'a> {
    Running(Box::pin(debugged(state, message, me, cx)))
}

/// [`run`]'s future, boxed, behind a poll that is not inlined: the main loop's future
/// holds a pointer, and its code grows by a call and a drop only. Allocated only for a
/// system message, or a message while debugging.
pub(crate) struct Running<'a>(Pin<Box<dyn Future<Output = Result<Flow, ExitReason>> + Send + 'a>>);

impl Future for Running<'_> {
    type Output = Result<Flow, ExitReason>;

    #[cold]
    #[inline(never)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

async fn debugged<S: Server>(
    state: &mut S,
    message: ServerMsg<S>,
    me: &mut Whoami<'_, S>,
    cx: &mut ServerContext<S>,
) -> Result<Flow, ExitReason> {
    let mut debug = me.debug.take().unwrap_or_default();
    let mut handled = one(state, message, &mut debug, me, cx).await;
    // After a resume: the messages that waited, in order, before the mailbox.
    while matches!(handled, Ok(Flow::Continue)) && !debug.suspended {
        let Some(message) = debug.stash.pop_front() else {
            break;
        };
        handled = one(state, message, &mut debug, me, cx).await;
    }
    if debug.active() {
        me.debug = Some(debug);
    }
    handled
}

/// Handles one message with the debug flags.
async fn one<S: Server>(
    state: &mut S,
    message: ServerMsg<S>,
    debug: &mut Debug<S>,
    me: &mut Whoami<'_, S>,
    cx: &mut ServerContext<S>,
) -> Result<Flow, ExitReason> {
    if let ServerMsg::System(request) = message {
        answer(state, *request, debug, me, cx);
        return Ok(Flow::Continue);
    }
    if debug.suspended && !wanted_when_suspended(&message, me.parent) {
        debug.stash.push_back(message);
        return Ok(Flow::Continue);
    }
    let pid = cx.pid().id();
    if let Some(log) = &mut debug.log {
        let (kind, message) = kind(&message);
        log.push(Direction::In, kind, message);
    }
    if debug.trace {
        let (kind, message) = kind(&message);
        let name = me.name.map_or("", |n| &**n);
        tracing::info!(
            target: "otter::sys",
            pid = %pid,
            name,
            event = "in",
            kind,
            message,
            "*DBG* {} got {kind} ({message})",
            me.name.map_or_else(|| pid.to_string(), |n| n.to_string()),
        );
    }
    let hook = Hook {
        pid,
        trace: debug.trace,
        log: debug.log.is_some(),
    };
    let (flow, replies, types) = with_hook(hook, handle::<S, true>(state, message, me, cx)).await;
    if let Some(c) = &mut debug.stats {
        c.messages_in += 1;
        c.messages_out += replies;
    }
    if let Some(log) = &mut debug.log {
        for t in types {
            log.push(Direction::Out, "reply", t);
        }
    }
    flow
}

/// Answers one system message.
fn answer<S: Server>(
    state: &mut S,
    request: Request<S>,
    debug: &mut Debug<S>,
    me: &Whoami<'_, S>,
    cx: &ServerContext<S>,
) {
    match request.0 {
        Kind::Inspect(f) => f(state),
        Kind::Replace(f) => f(state),
        Kind::Status(reply) => reply.reply(Status {
            pid: cx.pid().id(),
            name: me.name.cloned(),
            behaviour: std::any::type_name::<S>(),
            mode: if debug.suspended {
                Mode::Suspended
            } else {
                Mode::Running
            },
            parent: me.parent.map(ProcessId),
            trace: debug.trace,
            statistics: debug.stats.is_some(),
            // A panic in the user's `format_status` must not end the server.
            state: std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                FormatStatus(&*state).to_string()
            }))
            .unwrap_or_else(|_| "<format_status panicked>".to_string()),
        }),
        Kind::Suspend(reply) => {
            debug.suspended = true;
            reply.reply(());
        }
        Kind::Resume(reply) => {
            debug.suspended = false;
            reply.reply(());
        }
        Kind::Trace(on, reply) => {
            debug.trace = on;
            reply.reply(());
        }
        Kind::Statistics(on, reply) => {
            debug.stats = on.then(|| Counts {
                start: SystemTime::now(),
                messages_in: 0,
                messages_out: 0,
            });
            reply.reply(());
        }
        Kind::Log(keep, reply) => {
            debug.log = keep.map(|keep| Log {
                keep,
                events: VecDeque::with_capacity(keep.min(64)),
            });
            reply.reply(());
        }
        Kind::GetLog(reply) => reply.reply(
            debug
                .log
                .as_ref()
                .map_or_else(Vec::new, |l| l.events.iter().copied().collect()),
        ),
        Kind::GetStatistics(reply) => reply.reply(debug.stats.as_ref().map(|c| Statistics {
            start_time: c.start,
            current_time: SystemTime::now(),
            messages_in: c.messages_in,
            messages_out: c.messages_out,
        })),
    }
}

/// A server's state as [`Server::format_status`] writes it.
struct FormatStatus<'a, S>(&'a S);

impl<S: Server> std::fmt::Display for FormatStatus<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.format_status(f)
    }
}
