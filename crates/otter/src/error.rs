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
