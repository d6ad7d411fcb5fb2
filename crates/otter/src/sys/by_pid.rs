//! `sys` by pid alone: for code that holds a [`ProcessId`] and not the server's type
//! (an operator's tool, the dashboard). The request goes through the runtime's table of
//! servers (`server/untyped.rs`), which wraps it as the server's own system message.

use super::{DEFAULT_TIMEOUT, LogEvent, Status, SysError, Untyped};
use crate::pid::ProcessId;
use crate::server::{Pending, ReplyTo, requester};

/// The status of the server, state machine or supervisor `pid` of `handle`'s runtime,
/// asked by its pid alone, as `sys:get_status(Pid)` is (what [`get_status`](super::get_status) gives for
/// its handle): for code that holds a [`ProcessId`] and not the server's type, such as
/// an operator's tool or the dashboard. [`SysError::Noproc`] when `pid` is not a
/// running server of that runtime (a plain process, or one that has exited).
///
/// ```
/// use otter::server::{Flow, ReplyTo, Server, ServerContext};
/// use otter::{Context, ExitReason, Runtime, sys};
///
/// struct Echo;
/// impl Server for Echo {
///     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
///     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
///     async fn handle_call(&mut self, (n, from): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow {
///         from.reply(n);
///         Flow::Continue
///     }
/// }
///
/// let rt = Runtime::new();
/// let h = rt.handle();
/// let r = rt.block_on(move |cx: Context<()>| async move {
///     let pid = Echo::start_link(&cx, ()).await.unwrap().id(); // only its pid from here
///     let status = sys::get_status_of(&h, pid).await.unwrap();
///     let other = cx.spawn(|mut c: Context<()>| async move { c.recv().await });
///     let plain = sys::get_status_of(&h, other.id()).await;
///     (status.behaviour.ends_with("Echo"), plain)
/// });
/// assert_eq!(r.unwrap(), (true, Err(sys::SysError::Noproc)));
/// ```
pub async fn get_status_of(handle: &crate::Handle, pid: ProcessId) -> Result<Status, SysError> {
    request_untyped(handle, pid, Untyped::Status).await
}

/// [`get_log`](super::get_log), by pid alone (see [`get_status_of`]).
pub async fn get_log_of(handle: &crate::Handle, pid: ProcessId) -> Result<Vec<LogEvent>, SysError> {
    request_untyped(handle, pid, Untyped::GetLog).await
}

/// [`request`] to the server `pid` of `handle`'s runtime, without its type
/// (`server/untyped.rs`): [`SysError::Noproc`] when no server has that pid.
async fn request_untyped<R: Send + 'static>(
    handle: &crate::Handle,
    pid: ProcessId,
    make: impl FnOnce(ReplyTo<R>) -> Untyped,
) -> Result<R, SysError> {
    let target = pid.0;
    let waker = requester(target).await?;
    let (pending, reply_to) = Pending::call(target, waker);
    if !handle
        .shared()
        .services
        .servers
        .send(target, make(reply_to))
    {
        return Err(SysError::Noproc);
    }
    Ok(pending.wait(Some(DEFAULT_TIMEOUT)).await?)
}
