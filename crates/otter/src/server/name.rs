//! A server's registered name, typed by the server: calls and casts by name, each
//! looking the name up again (`gen_server:call(Name, Request)`).

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::process::Context;
use crate::server::{CallError, DEFAULT_CALL_TIMEOUT, ReplyTo, Server, ServerRef, whereis};

/// A server's registered name, typed by the server (the `Name` of
/// `gen_server:call(Name, Request)`): start a server under it
/// ([`Server::start_link_named`], [`ChildSpec::named_server`](crate::supervisor::ChildSpec::named_server)),
/// then call it by name. Each call looks the name up again, as Erlang does: a server
/// restarted under the name is reached by the next call, and a call when no server of
/// this type has the name fails with [`CallError::Noproc`].
///
/// ```
/// # use otter::server::{CallError, Flow, Name, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// const ECHO: Name<Echo> = Name::new("echo");
///
/// let rt = Runtime::new();
/// let r = rt.block_on(|cx: Context<()>| async move {
///     let before = ECHO.call(&cx, |f| (1, f)).await;
///     Echo::start_link_named(&cx, ECHO, ()).await.unwrap();
///     let again = Echo::start_link_named(&cx, ECHO, ()).await; // the name is taken
///     (before, ECHO.call(&cx, |f| (3, f)).await, again.is_err())
/// });
/// assert_eq!(r.unwrap(), (Err(CallError::Noproc), Ok(3), true));
/// ```
pub struct Name<S> {
    name: Cow<'static, str>,
    server: PhantomData<fn() -> S>,
}

impl<S> Clone for Name<S> {
    fn clone(&self) -> Self {
        Name {
            name: self.name.clone(),
            server: PhantomData,
        }
    }
}

impl<S> PartialEq for Name<S> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl<S> Eq for Name<S> {}

impl<S> std::fmt::Debug for Name<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Name({:?})", self.name)
    }
}

impl<S> From<&'static str> for Name<S> {
    fn from(name: &'static str) -> Self {
        Name::new(name)
    }
}

impl<S> From<String> for Name<S> {
    fn from(name: String) -> Self {
        Name {
            name: Cow::Owned(name),
            server: PhantomData,
        }
    }
}

impl<S> From<&Name<S>> for Name<S> {
    fn from(name: &Name<S>) -> Self {
        name.clone()
    }
}

impl<S> Name<S> {
    /// A name for servers of type `S`; usable in a `const`.
    ///
    /// See [`Name`] for an example.
    pub const fn new(name: &'static str) -> Name<S> {
        Name {
            name: Cow::Borrowed(name),
            server: PhantomData,
        }
    }

    /// The name.
    ///
    /// See [`Name`] for an example.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    pub(crate) fn into_arc(self) -> Arc<str> {
        match self.name {
            Cow::Borrowed(s) => s.into(),
            Cow::Owned(s) => s.into(),
        }
    }
}

impl<S: Server> Name<S> {
    /// The server registered under this name on the caller's runtime, if any.
    ///
    /// See [`Name`] for an example.
    pub fn whereis<M: Send + 'static>(&self, cx: &Context<M>) -> Option<ServerRef<S>> {
        whereis(cx, &self.name)
    }

    /// Calls the server registered under this name (`gen_server:call(Name, Request)`),
    /// looked up now: [`CallError::Noproc`] if there is none, otherwise as
    /// [`ServerRef::call`]. The future does not borrow `cx` or the name.
    ///
    /// See [`Name`] for an example.
    pub fn call<M: Send + 'static, R: Send + 'static, F>(
        &self,
        cx: &Context<M>,
        request: F,
    ) -> impl Future<Output = Result<R, CallError>> + Send + use<S, M, R, F>
    where
        F: FnOnce(ReplyTo<R>) -> S::Call + Send,
    {
        self.call_timeout(cx, request, Some(DEFAULT_CALL_TIMEOUT))
    }

    /// [`Name::call`] with a timeout (`None`: forever), as [`ServerRef::call_timeout`].
    ///
    /// See [`Name`] for an example of a call by name.
    pub fn call_timeout<M: Send + 'static, R: Send + 'static, F>(
        &self,
        cx: &Context<M>,
        request: F,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<R, CallError>> + Send + use<S, M, R, F>
    where
        F: FnOnce(ReplyTo<R>) -> S::Call + Send,
    {
        let server = self.whereis(cx);
        async move {
            match server {
                Some(server) => server.call_timeout(request, timeout).await,
                None => Err(CallError::Noproc),
            }
        }
    }

    /// Casts to the server registered under this name (`gen_server:cast(Name, Msg)`):
    /// no error if there is none.
    ///
    /// See [`Name`] for an example of a call by name.
    pub fn cast<M: Send + 'static>(&self, cx: &Context<M>, message: S::Cast) {
        if let Some(server) = self.whereis(cx) {
            server.cast(message);
        }
    }
}
