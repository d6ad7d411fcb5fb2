//! A server's registered name, typed by the server: calls and casts by name, each
//! looking the name up again (`gen_server:call(Name, Request)`).

use std::borrow::Cow;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::pid::Pid;
use crate::process::Context;
use crate::runtime::Handle;
use crate::server::{CallError, DEFAULT_CALL_TIMEOUT, ReplyTo, Server, ServerMsg, ServerRef};

/// Where a call by name looks the name up: the registry of a runtime, reached through
/// a process's [`Context`] or through a [`Handle`] (code that is no process: a thread, a
/// hyper service). [`Name`]'s methods take `&C` for any such `C`, so a helper holding
/// `cx: &mut Context<M>` passes `cx` as it is.
///
/// ```
/// # use otter::server::{Flow, Name, ReplyTo, Server, ServerContext};
/// # use otter::{Context, ExitReason, Runtime};
/// # struct Echo;
/// # impl Server for Echo {
/// #     type Args = (); type Call = (u8, ReplyTo<u8>); type Cast = (); type Info = ();
/// #     async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> { Ok(Echo) }
/// #     async fn handle_call(&mut self, (r, f): (u8, ReplyTo<u8>), _: &mut ServerContext<Self>) -> Flow { f.reply(r); Flow::Continue }
/// # }
/// const ECHO: Name<Echo> = Name::new("echo");
///
/// // A helper that also receives, so it holds the context by `&mut`.
/// async fn ask_twice(cx: &mut Context<u8>) -> u8 {
///     let a = ECHO.call(cx, |f| (1, f)).await.unwrap();
///     let b = cx.recv().await;
///     a + ECHO.call(cx, |f| (b, f)).await.unwrap()
/// }
///
/// let rt = Runtime::new();
/// let h = rt.handle();
/// let r = rt.block_on(move |mut cx: Context<u8>| async move {
///     Echo::start_link_named(&cx, ECHO, ()).await.unwrap();
///     cx.pid().send(2);
///     let sum = ask_twice(&mut cx).await;
///     // Through a Handle: from any async code, here a plain thread's.
///     let me = cx.pid();
///     let from_handle = std::thread::spawn(move || {
///         let reply = park_on(ECHO.call(&h, |f| (4, f)));
///         me.send(0);
///         reply
///     });
///     cx.recv().await;
///     (sum, from_handle.join().unwrap())
/// });
/// assert_eq!(r.unwrap(), (3, Ok(4)));
/// # fn park_on<F: std::future::Future>(f: F) -> F::Output {
/// #     use std::task::{Context, Poll, Wake, Waker};
/// #     struct T(std::thread::Thread);
/// #     impl Wake for T { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let w = Waker::from(std::sync::Arc::new(T(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&w)) { return v; }
/// #         std::thread::park();
/// #     }
/// # }
/// ```
pub trait Lookup {
    /// The process of message type `N` registered as `name` on this runtime, if any
    /// (the same as [`Context::whereis`] and [`Handle::whereis`]).
    fn lookup<N: 'static>(&self, name: &str) -> Option<Pid<N>>;
}

impl<M: Send + 'static> Lookup for Context<M> {
    fn lookup<N: 'static>(&self, name: &str) -> Option<Pid<N>> {
        self.whereis(name)
    }
}

impl Lookup for Handle {
    fn lookup<N: 'static>(&self, name: &str) -> Option<Pid<N>> {
        self.whereis(name)
    }
}

/// A server's registered name, typed by the server (the `Name` of
/// `gen_server:call(Name, Request)`): start a server under it
/// ([`Server::start_link_named`], [`ChildSpec::named_server`](crate::supervisor::ChildSpec::named_server)),
/// then call it by name. Each call looks the name up again, as Erlang does: a server
/// restarted under the name is reached by the next call, and a call when no server of
/// this type has the name fails with [`CallError::Noproc`]. The name is looked up
/// through a [`Context`] (shared or `&mut`) or a [`Handle`]: see [`Lookup`].
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
    /// The server registered under this name on the runtime of `cx` (a [`Context`] or
    /// a [`Handle`]: [`Lookup`]), if any.
    ///
    /// See [`Name`] for an example.
    pub fn whereis<C: Lookup + ?Sized>(&self, cx: &C) -> Option<ServerRef<S>> {
        cx.lookup::<ServerMsg<S>>(&self.name).map(ServerRef::from)
    }

    /// Calls the server registered under this name (`gen_server:call(Name, Request)`),
    /// looked up now through `cx` (a [`Context`], shared or `&mut`, or a [`Handle`]:
    /// [`Lookup`]): [`CallError::Noproc`] if there is none, otherwise as
    /// [`ServerRef::call`]. The future does not borrow `cx` or the name.
    ///
    /// See [`Name`] for an example, and [`Lookup`] for calls from a helper holding
    /// `&mut Context` and from a [`Handle`].
    pub fn call<C: Lookup + ?Sized, R: Send + 'static, F>(
        &self,
        cx: &C,
        request: F,
    ) -> impl Future<Output = Result<R, CallError>> + Send + use<S, C, R, F>
    where
        F: FnOnce(ReplyTo<R>) -> S::Call + Send,
    {
        self.call_timeout(cx, request, Some(DEFAULT_CALL_TIMEOUT))
    }

    /// [`Name::call`] with a timeout (`None`: forever), as [`ServerRef::call_timeout`].
    ///
    /// See [`Name`] for an example of a call by name.
    pub fn call_timeout<C: Lookup + ?Sized, R: Send + 'static, F>(
        &self,
        cx: &C,
        request: F,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<R, CallError>> + Send + use<S, C, R, F>
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

    /// Casts to the server registered under this name (`gen_server:cast(Name, Msg)`),
    /// looked up through `cx` ([`Lookup`]): no error if there is none.
    ///
    /// See [`Name`] for an example of a call by name.
    pub fn cast<C: Lookup + ?Sized>(&self, cx: &C, message: S::Cast) {
        if let Some(server) = self.whereis(cx) {
            server.cast(message);
        }
    }
}
