//! Error types. Each failed operation that was handed a value gives it back.

use std::fmt;

/// [`Pid::try_send`](crate::Pid::try_send) failed: the process has exited. The message
/// is handed back.
///
/// ```
/// let e = otter::SendError(5);
/// assert_eq!(e.into_inner(), 5);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<M>(pub M);

impl<M> SendError<M> {
    /// The message that was not delivered.
    ///
    /// ```
    /// assert_eq!(otter::SendError("hi").into_inner(), "hi");
    /// ```
    pub fn into_inner(self) -> M {
        self.0
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending to a process that has exited")
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why [`Pid::try_send`](crate::Pid::try_send) did not deliver. The message is handed
/// back either way.
///
/// ```
/// use otter::TrySendError;
/// let e = TrySendError::Full(5);
/// assert!(e.is_full());
/// assert_eq!(e.into_inner(), 5);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<M> {
    /// The process's mailbox is bounded and holds its bound
    /// ([`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox)): try
    /// again later, or wait for room with [`Context::send`](crate::Context::send).
    Full(M),
    /// The process has exited (or is of another node: see [`Pid::try_send`](crate::Pid::try_send)).
    Exited(M),
}

impl<M> TrySendError<M> {
    /// The message that was not delivered.
    ///
    /// ```
    /// assert_eq!(otter::TrySendError::Exited("hi").into_inner(), "hi");
    /// ```
    pub fn into_inner(self) -> M {
        match self {
            TrySendError::Full(m) | TrySendError::Exited(m) => m,
        }
    }

    /// Whether the mailbox was full (the process is alive).
    ///
    /// ```
    /// assert!(!otter::TrySendError::Exited(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }
}

impl<M> From<TrySendError<M>> for SendError<M> {
    /// Forgets why: the message handed back.
    fn from(e: TrySendError<M>) -> SendError<M> {
        SendError(e.into_inner())
    }
}

impl<M> fmt::Debug for TrySendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Exited(_) => f.write_str("Exited(..)"),
        }
    }
}

impl<M> fmt::Display for TrySendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending to a full bounded mailbox"),
            TrySendError::Exited(_) => f.write_str("sending to a process that has exited"),
        }
    }
}

impl<M> std::error::Error for TrySendError<M> {}

/// A [`Builder`](crate::Builder) setting was out of range.
///
/// ```
/// assert!(otter::Runtime::builder().threads(0).build().is_err());
/// assert!(otter::Runtime::builder().threads(1 << 20).build().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// `threads` must be at least 1.
    ZeroThreads,
    /// `threads` may be at most this many (the count of idle workers packs into one
    /// word: `scheduler/park.rs`).
    TooManyThreads(usize),
    /// The operating system refused to start a worker thread.
    Spawn(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroThreads => f.write_str("a runtime needs at least one thread"),
            BuildError::TooManyThreads(max) => {
                write!(f, "a runtime has at most {max} worker threads")
            }
            BuildError::Spawn(e) => write!(f, "could not start a worker thread: {e}"),
        }
    }
}

impl std::error::Error for BuildError {}
