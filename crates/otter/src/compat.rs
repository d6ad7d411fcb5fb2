//! The tokio ecosystem inside processes (feature `tokio`): a process awaits the futures
//! of tokio-based libraries (`tokio::net`, hyper, reqwest, sqlx, tonic ...) by wrapping
//! them in [`tokio()`].
//!
//! # Design and cost
//!
//! tokio's IO and timer types need a tokio runtime's context when they are created and
//! polled, or they panic ("there is no reactor running"). [`tokio()`] enters the context
//! of one tokio runtime around every poll of the wrapped future, as the `async-compat`
//! crate does: a runtime built on first use, with one worker thread (`otter-tokio`),
//! whose IO driver and timers serve every wrapped future of the process. `tokio::spawn`
//! inside a wrapped future spawns there too (hyper's connection tasks, for instance).
//!
//! The cost, measured in the test `tokio_compat.rs` only for correctness: one more
//! thread, and each tokio event wakes the process from that thread, through the
//! runtime's injector (a wake-up from outside the workers), instead of from a worker's
//! own poll of the OS as otter's sockets are. otter's own `net` is the fast path; this
//! is the door to libraries written for tokio. The otter process stays the owner: what
//! the wrapped future holds is dropped when the process exits, inside the tokio
//! runtime's context (so a `Drop` that spawns, as hyper-util's pooled connections do
//! when a request is abandoned, works). What it spawns with
//! `tokio::spawn` is not: those tasks run on the shared tokio runtime until they end,
//! whatever becomes of the process (abort them through their `JoinHandle`s, or keep
//! their work inside the wrapped future). That runtime is the program's, not the otter
//! runtime's: its thread stays after an otter `Runtime` is dropped.
//!
//! # tokio code as written: `Builder::tokio_context`
//!
//! A runtime built with [`Builder::tokio_context(true)`](crate::Builder::tokio_context)
//! runs every process inside this runtime's context: `tokio::spawn`,
//! `tokio::time::timeout` and `tokio::net` work in any process without [`tokio()`].
//! Each thread that runs processes enters the context once, when it starts: nothing is
//! added to a poll. Without it, such code panics with tokio's "there is no reactor
//! running", and the process's exit reason ([`ExitReason::Panic`](crate::ExitReason))
//! names both fixes.
//!
//! Build the tokio future inside the wrapped block: `tokio(async { timeout(d,
//! listener.accept()).await })`, not `tokio(timeout(d, listener.accept()))`, whose
//! `tokio::time::timeout` registers its timer when it is called, outside the context,
//! and panics.
//!
//! # otter's own sockets in tokio-based libraries
//!
//! [`net::TcpStream`](crate::net::TcpStream) implements tokio's `AsyncRead` and
//! `AsyncWrite` with this feature, driven by otter's reactor like any otter socket: a
//! connection that otter's listener or acceptor pool accepted is served by hyper with
//! `hyper_util::rt::TokioIo::new(stream)`, and a hyper client talks over a stream otter
//! connected, with no [`tokio()`] around them and no hop through the tokio runtime's
//! thread (the test `tokio_compat.rs` does both). Wrap only what needs tokio's own
//! reactor or timers.
//!
//! ```
//! use otter::{Context, Runtime};
//! let rt = Runtime::new();
//! let r = rt.block_on(|_: Context<()>| async {
//!     otter::compat::tokio(async {
//!         tokio::time::sleep(std::time::Duration::from_millis(1)).await;
//!         let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//!         l.local_addr().unwrap().port() > 0
//!     })
//!     .await
//! });
//! assert!(r.unwrap());
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

/// Runs `future` in the context of otter's tokio runtime (see the module docs).
pub fn tokio<F: Future>(future: F) -> Tokio<F> {
    Tokio {
        inner: Some(Box::pin(future)),
    }
}

/// A future polled inside a tokio runtime's context ([`tokio()`]), and dropped inside it
/// too: a process's exit drops what it awaits, and tokio-based code (hyper-util's
/// connection pool, `async-compat`'s own guard) may spawn or register a timer in its
/// `Drop`, which panics outside a runtime's context.
pub struct Tokio<F> {
    /// `None` only once dropped.
    inner: Option<Pin<Box<F>>>,
}

impl<F> Drop for Tokio<F> {
    fn drop(&mut self) {
        let _context = handle().enter();
        drop(self.inner.take());
    }
}

impl<F> fmt::Debug for Tokio<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokio").finish_non_exhaustive()
    }
}

impl<F: Future> Future for Tokio<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _context = handle().enter();
        match self.inner.as_mut() {
            Some(inner) => inner.as_mut().poll(cx),
            None => unreachable!("a Tokio future is only emptied by its drop"),
        }
    }
}

/// The tokio runtime wrapped futures run in: for `Handle::spawn` and the like.
pub fn handle() -> &'static tokio::runtime::Handle {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("otter-tokio")
                .enable_all()
                .build()
                .expect("otter: the tokio runtime of the `tokio` feature could not start")
        })
        .handle()
}
