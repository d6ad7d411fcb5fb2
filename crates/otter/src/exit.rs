//! Exit reasons: why a process ended.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Why a process exited: Erlang's exit reason, as a typed enum.
///
/// `Normal`, `Shutdown` and `ShutdownWith` are "not an error" (`is_normal` /
/// [`ExitReason::is_shutdown`]), as `normal`, `shutdown` and `{shutdown, _}` are for
/// OTP's logger and supervisors. Cloning is cheap: payloads are shared.
///
/// ```
/// use otter::ExitReason;
/// let rt = otter::Runtime::new();
/// let r = rt.block_on(|_cx: otter::Context<()>| async { panic!("boom") });
/// assert_eq!(r.unwrap_err(), ExitReason::Panic("boom".into()));
/// assert!(!ExitReason::Panic("boom".into()).is_normal());
/// assert!(ExitReason::Normal.is_normal());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// The process's function returned (Erlang `normal`).
    Normal,
    /// Ordered shutdown, e.g. by a supervisor (Erlang `shutdown`).
    Shutdown,
    /// Ordered shutdown with a detail (Erlang `{shutdown, Term}`).
    ShutdownWith(Arc<str>),
    /// The untrappable exit signal (Erlang `kill`); a process it reaches exits `Killed`.
    Kill,
    /// The reason of a process ended by `Kill` (Erlang `killed`).
    Killed,
    /// The process did not exist (Erlang `noproc`).
    Noproc,
    /// The connection to the process's node was lost (Erlang `noconnection`).
    Noconnection,
    /// The process panicked; the panic message.
    Panic(Arc<str>),
    /// An error the process exited with (`Err(e)` returned from its function).
    Error(ErrorReason),
}

impl ExitReason {
    /// Whether the reason is `Normal`.
    ///
    /// ```
    /// assert!(otter::ExitReason::Normal.is_normal());
    /// ```
    pub fn is_normal(&self) -> bool {
        matches!(self, ExitReason::Normal)
    }

    /// Whether the reason is `Normal`, `Shutdown` or `ShutdownWith`: the reasons a
    /// transient child is not restarted for and that are not logged as crashes.
    ///
    /// ```
    /// assert!(otter::ExitReason::ShutdownWith("bye".into()).is_shutdown());
    /// ```
    pub fn is_shutdown(&self) -> bool {
        matches!(
            self,
            ExitReason::Normal | ExitReason::Shutdown | ExitReason::ShutdownWith(_)
        )
    }

    /// An `Error` reason from any error value.
    ///
    /// ```
    /// let r = otter::ExitReason::error(std::fmt::Error);
    /// assert_eq!(r.to_string(), "error: an error occurred when formatting an argument");
    /// ```
    pub fn error<E: std::error::Error + Send + Sync + 'static>(e: E) -> ExitReason {
        ExitReason::Error(ErrorReason(Arc::new(e)))
    }

    /// The error inside [`ExitReason::Error`], if it is an `E`.
    ///
    /// ```
    /// use otter::ExitReason;
    /// let r = ExitReason::error(std::fmt::Error);
    /// assert_eq!(r.downcast_ref::<std::fmt::Error>(), Some(&std::fmt::Error));
    /// assert!(ExitReason::Normal.downcast_ref::<std::fmt::Error>().is_none());
    /// ```
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            ExitReason::Error(e) => e.0.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// The reason of a process whose poll panicked with `payload`.
    pub(crate) fn from_panic(payload: &(dyn Any + Send)) -> ExitReason {
        let msg: Arc<str> = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).into()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.as_str().into()
        } else {
            "<non-string panic payload>".into()
        };
        // tokio's "no reactor running" names tokio's fix, not otter's: add it.
        if msg.contains("no reactor running") || msg.contains("context of a Tokio") {
            return ExitReason::Panic(format!("{msg} {TOKIO_HINT}").into());
        }
        ExitReason::Panic(msg)
    }
}

/// What a process that panicked in tokio code without tokio's context is told to do.
const TOKIO_HINT: &str = "(otter: tokio's IO, timers and spawn need a tokio runtime's context: \
     wrap the code in `otter::compat::tokio(..)`, or build the runtime with \
     `Builder::tokio_context(true)`; both need otter's feature `tokio`)";

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Shutdown => f.write_str("shutdown"),
            ExitReason::ShutdownWith(d) => write!(f, "{{shutdown, {d}}}"),
            ExitReason::Kill => f.write_str("kill"),
            ExitReason::Killed => f.write_str("killed"),
            ExitReason::Noproc => f.write_str("noproc"),
            ExitReason::Noconnection => f.write_str("noconnection"),
            ExitReason::Panic(m) => write!(f, "panic: {m}"),
            ExitReason::Error(e) => write!(f, "error: {}", e.0),
        }
    }
}

/// A shared error value inside [`ExitReason::Error`]. Two are equal when they are the
/// same error value (pointer equality), since `dyn Error` has no equality of its own.
///
/// ```
/// use otter::ExitReason;
/// let r = ExitReason::error(std::fmt::Error);
/// assert_eq!(r.clone(), r);
/// assert_ne!(r, ExitReason::error(std::fmt::Error));
/// if let ExitReason::Error(e) = r { assert!(e.0.to_string().contains("error")); }
/// ```
#[derive(Clone, Debug)]
pub struct ErrorReason(pub Arc<dyn std::error::Error + Send + Sync>);

impl PartialEq for ErrorReason {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ErrorReason {}

/// What a process's function may return: `()` (exit `Normal`), an [`ExitReason`], a
/// `Result<(), E>` whose error becomes the reason, or nothing at all: a process that
/// loops for ever, whose `async` block has the never type `!` (Rust 2024 infers it for
/// a block ending in `loop { .. }`).
///
/// The error of a `Result` converts with `Into<ExitReason>`: an `ExitReason`, a
/// [`CallError`](crate::server::CallError) (the reason a call failed with), a
/// `std::io::Error` or a [`RegisterError`](crate::RegisterError) (kept in
/// [`ExitReason::Error`]), so `?` works on sockets' and calls' results. Wrap other
/// errors with [`ExitReason::error`]: `.map_err(ExitReason::error)?`.
///
/// ```
/// let rt = otter::Runtime::new();
/// let h = rt.handle();
/// h.spawn(|_cx: otter::Context<()>| async { otter::ExitReason::Shutdown });
/// h.spawn(|_cx: otter::Context<()>| async { Ok::<(), otter::ExitReason>(()) });
/// // An IO error ends the process with that error as its reason.
/// h.spawn(|_cx: otter::Context<()>| async {
///     let text = std::fs::read_to_string("/no/such/file")?;
///     println!("{text}");
///     Ok::<(), std::io::Error>(())
/// });
/// // Erlang's `loop() -> receive M -> handle(M), loop() end.`
/// h.spawn(|mut cx: otter::Context<u8>| async move {
///     loop {
///         let _m = cx.recv().await;
///     }
/// });
/// ```
pub trait IntoExitReason {
    /// The reason the process exits with.
    fn into_exit_reason(self) -> ExitReason;
}

impl IntoExitReason for () {
    fn into_exit_reason(self) -> ExitReason {
        ExitReason::Normal
    }
}

impl IntoExitReason for ExitReason {
    fn into_exit_reason(self) -> ExitReason {
        self
    }
}

/// The never type, `!`, named on stable Rust through a function pointer's return type
/// (the `never-say-never` crate's device): so that a process whose function never
/// returns (`async move { loop { .. } }`, whose output Rust 2024 infers as `!`) spawns.
/// Public (in this private module) only because the public impl below names it.
#[allow(unreachable_pub)]
pub type Never = <fn() -> ! as FnReturn>::Output;

/// A function pointer's return type; only used to name [`Never`].
#[allow(unreachable_pub)]
pub trait FnReturn {
    /// The return type.
    type Output;
}

impl<R> FnReturn for fn() -> R {
    type Output = R;
}

impl IntoExitReason for Never {
    fn into_exit_reason(self) -> ExitReason {
        self
    }
}

impl From<std::io::Error> for ExitReason {
    fn from(e: std::io::Error) -> ExitReason {
        ExitReason::error(e)
    }
}

impl From<crate::RegisterError> for ExitReason {
    fn from(e: crate::RegisterError) -> ExitReason {
        ExitReason::error(e)
    }
}

impl<E: Into<ExitReason>> IntoExitReason for Result<(), E> {
    fn into_exit_reason(self) -> ExitReason {
        match self {
            Ok(()) => ExitReason::Normal,
            Err(e) => e.into(),
        }
    }
}

/// How an exit signal was sent (`signal.rs`, where it is named `Kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SignalKind {
    /// Through a link, by the exit of `from`: ignored unless the link still exists.
    Link,
    /// By `exit(pid, reason)`: `Kill` is untrappable.
    Exit,
}
