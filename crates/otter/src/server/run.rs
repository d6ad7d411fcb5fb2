//! The server loop: `init`, the acknowledgement, then one message at a time (the
//! rules are the module docs' of [`server`](crate::server)).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use super::{
    AlreadyStarted, Flow, Info, ReplyTo, Server, ServerContext, ServerMsg, ServerRef, catch, system,
};
use crate::exit::ExitReason;
use crate::pid::RawPid;
use crate::registry::RegisterError;

/// The server loop: `init`, acknowledge, then one message at a time.
pub(super) async fn serve<S: Server>(
    mut cx: ServerContext<S>,
    args: S::Args,
    ack: ReplyTo<ServerRef<S>>,
    failure: Arc<Mutex<Option<ExitReason>>>,
    parent: Option<RawPid>,
    name: Option<Arc<str>>,
) -> ExitReason {
    // A failed start: record why, and exit `Normal` (the start learns the reason when
    // our exit fires its watcher).
    let fail = |reason: ExitReason| {
        *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        ExitReason::Normal
    };
    // A machine or a supervisor sets its own kind in its `init`, after this.
    crate::introspect::set_kind(cx.pid().id().0, crate::introspect::Kind::Server);
    if let Some(name) = &name {
        // `gen.erl`'s `register_name`: the holder's pid, read after the refusal. A
        // holder that exited in between freed the name: try again.
        loop {
            match cx.register(name.clone(), cx.pid()) {
                Ok(()) => break,
                Err(RegisterError::NameTaken) => {
                    if let Some(holder) = cx.name_holder(name) {
                        return fail(ExitReason::error(AlreadyStarted(holder)));
                    }
                }
                Err(e) => return fail(ExitReason::error(e)),
            }
        }
    }
    let mut state = match catch(S::init(args, &mut cx)).await {
        Ok(Ok(state)) => state,
        Ok(Err(reason)) => return fail(reason),
        // A crash in `init`: the start sees it through its watcher.
        Err(panic) => return panic,
    };
    // Reachable by pid alone (the dashboard) until the loop ends or the process is
    // killed (`server/untyped.rs`).
    let _filed = super::untyped::file::<S>(cx.handle().shared().clone(), cx.pid().id().0);
    ack.reply(ServerRef::from(cx.pid()));
    let mut handled = catch(state.after_init(&mut cx)).await;
    let mut me = system::Whoami {
        parent,
        name: name.as_ref(),
        taken: None,
        debug: None,
    };
    let reason = loop {
        let reason = 'main: loop {
            match handled {
                Ok(Flow::Continue) => {}
                Ok(Flow::Stop(reason)) => break reason,
                Err(panic) => break panic,
            }
            // The hot loop: calls and casts are matched here and their result looked
            // at at once; everything else goes to `handle`, whose future each message
            // would otherwise build and drop (docs/design/0044).
            loop {
                let message = cx.recv().await;
                if me.debug.is_some() {
                    me.taken = Some(message);
                    break 'main ExitReason::Normal;
                }
                // `catch`, not `catch_in::<false, _>`, which `handle` calls too (its docs).
                let flow = match message {
                    ServerMsg::Call(request) => catch(state.handle_call(request, &mut cx)).await,
                    ServerMsg::Cast(m) => catch(state.handle_cast(m, &mut cx)).await,
                    other => {
                        handled = handle::<S, false>(&mut state, other, &mut me, &mut cx).await;
                        continue 'main;
                    }
                };
                match flow {
                    Ok(Flow::Continue) => continue,
                    Ok(Flow::Stop(reason)) => break 'main reason,
                    Err(panic) => break 'main panic,
                }
            }
        };
        // A system message, or any while debugging: the loop above left it here
        // (`server/system.rs`, rule 1).
        let Some(message) = me.taken.take() else {
            break reason;
        };
        handled = system::run(&mut state, message, &mut me, &mut cx).await;
    };
    // A panic in `terminate` becomes the exit reason (gen_server re-raises it).
    let reason = match catch(state.terminate(&reason, &mut cx)).await {
        Ok(()) => reason,
        Err(panic) => panic,
    };
    crate::report::server_terminating(
        cx.pid().id(),
        name.as_deref(),
        std::any::type_name::<S>(),
        &reason,
    );
    reason
}

/// Hands one message to its callback. A system message is left in `me` for `serve`
/// to take to [`system::run`] (`server/system.rs`, rule 1). `DEBUGGED` is the
/// instance of that debug loop: a function of its own, so that the main loop's has
/// one caller and stays inlined into it, and so do its callees (callgrind, `pingpong
/// style=server`: a callee with two callers was not inlined, and each message cost a
/// few dozen instructions more). For the same reason the main loop wraps its calls and
/// casts in `catch`, not in this function's `catch_in::<false, _>`: shared, it was
/// out of line, 23 instructions a server round trip (docs/design/0048).
pub(super) async fn handle<S: Server, const DEBUGGED: bool>(
    state: &mut S,
    message: ServerMsg<S>,
    me: &mut system::Whoami<'_, S>,
    cx: &mut ServerContext<S>,
) -> Result<Flow, ExitReason> {
    match message {
        ServerMsg::Call(request) => catch_in::<DEBUGGED, _>(state.handle_call(request, cx)).await,
        ServerMsg::Cast(m) => catch_in::<DEBUGGED, _>(state.handle_cast(m, cx)).await,
        ServerMsg::Info(m) => {
            catch_in::<DEBUGGED, _>(state.handle_info(Info::Message(m), cx)).await
        }
        ServerMsg::Down(d) => catch_in::<DEBUGGED, _>(state.handle_info(Info::Down(*d), cx)).await,
        ServerMsg::Exit(e) if Some(e.from.0) == me.parent => Ok(Flow::Stop(e.reason)),
        ServerMsg::Exit(e) => catch_in::<DEBUGGED, _>(state.handle_info(Info::Exit(*e), cx)).await,
        ServerMsg::Stop(reason) => Ok(Flow::Stop(*reason)),
        ServerMsg::Timeout(tag) => catch_in::<DEBUGGED, _>(state.handle_timeout(tag, cx)).await,
        // The debug loop answers system messages itself.
        ServerMsg::System(_) if DEBUGGED => Ok(Flow::Continue),
        ServerMsg::System(request) => {
            // Ends the main loop (with a placeholder reason), without an await.
            me.taken = Some(ServerMsg::System(request));
            Err(ExitReason::Normal)
        }
    }
}

/// [`catch`], one instance per loop (see [`handle`]).
async fn catch_in<const DEBUGGED: bool, F: Future>(fut: F) -> Result<F::Output, ExitReason> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(move |cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(crate::unwind::panic_reason(payload))),
        }
    })
    .await
}
