//! [`Handle`]: a runtime seen from any thread: spawn a process there, look a name up,
//! send an exit signal.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::Context;
use crate::exit::{ExitReason, IntoExitReason};
use crate::pid::{Pid, ProcessId, RawPid};
use crate::process::bonds;
use crate::process::cell;
use crate::scheduler::Shared;
use crate::signal::Kind;

/// A handle to a runtime, to spawn processes from any thread. Cheap to clone.
///
/// ```
/// let rt = otter::Runtime::new();
/// let h = rt.handle();
/// let t = std::thread::spawn(move || {
///     h.spawn(|mut cx: otter::Context<u8>| async move { cx.recv().await; })
/// });
/// let pid = t.join().unwrap();
/// pid.send(1);
/// ```
#[derive(Debug, Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Handle {
    /// The runtime's name registry (the distribution's look-ups of exported names).
    #[allow(dead_code)] // Without the `dist` feature, nothing asks.
    pub(crate) fn registry(&self) -> &crate::registry::Registry {
        &self.shared.services.registry
    }

    /// The runtime (introspection reads it).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The handle of the runtime `shared`.
    pub(crate) fn of(shared: Arc<Shared>) -> Handle {
        Handle { shared }
    }

    /// The process of message type `N` registered as `name` on this runtime, if any
    /// (Erlang's `whereis/1`, from code that holds no [`Context`]: a hyper service, a
    /// closure, another thread). [`Context::whereis`] is the same from a process.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let h = rt.handle();
    /// let r = rt.block_on(move |mut cx: otter::Context<u32>| async move {
    ///     cx.register("counter", cx.pid()).unwrap();
    ///     let service = move |n: u32| h.send_named("counter", n).is_ok();
    ///     (service(7), cx.recv().await)
    /// });
    /// assert_eq!(r.unwrap(), (true, 7));
    /// ```
    pub fn whereis<N: 'static>(&self, name: &str) -> Option<Pid<N>> {
        self.shared.services.registry.whereis(name)
    }

    /// Sends `message` to the process of message type `N` registered as `name` (Erlang's
    /// `Name ! Msg`); hands it back if there is none. See [`Handle::whereis`].
    pub fn send_named<N: Send + 'static>(
        &self,
        name: &str,
        message: N,
    ) -> Result<(), crate::SendError<N>> {
        self.shared.services.registry.send_named(name, message)
    }

    /// Sends the exit signal `reason` to `pid` from outside any process: Erlang's
    /// `exit(Pid, Reason)` called by a process that is not linked to `pid`, with the same
    /// rules as [`Context::exit`]. `Kill` ends the process with `Killed` even if it traps
    /// exits; otherwise a process that traps exits gets an [`Exit`](crate::Exit) message,
    /// and one that does not exits with `reason`, except that `Normal` is ignored. The
    /// signal acts at the process's next suspension point; right after this call, its
    /// [`Pid::is_alive`] is already false if the signal will end it.
    ///
    /// The `from` of the [`Exit`](crate::Exit) a trapping process receives is
    /// [`ProcessId::OUTSIDE`](crate::ProcessId::OUTSIDE), which names no process. The
    /// target may run on any runtime of this OS process, or on another node.
    ///
    /// ```
    /// use otter::{Context, Down, ExitReason, Runtime};
    /// struct Msg(Down);
    /// impl From<Down> for Msg { fn from(d: Down) -> Msg { Msg(d) } }
    /// let rt = Runtime::new();
    /// let h = rt.handle();
    /// let r = rt.block_on(move |mut cx: Context<Msg>| async move {
    ///     let (child, _) = cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
    ///     // From another thread, say a signal handler's.
    ///     std::thread::spawn(move || h.exit(child, ExitReason::Kill)).join().unwrap();
    ///     let Msg(down) = cx.recv().await;
    ///     down.reason
    /// });
    /// assert_eq!(r.unwrap(), ExitReason::Killed);
    /// ```
    pub fn exit(&self, pid: impl Into<ProcessId>, reason: ExitReason) {
        bonds::signal(pid.into().0, RawPid::OUTSIDE, reason, Kind::Exit);
    }

    /// Marks the runtime as hosting a distribution node; false if it had one.
    #[allow(dead_code)] // Without the `dist` feature, no node starts.
    pub(crate) fn set_node(&self) -> bool {
        !self.shared.services.has_node.swap(true, Ordering::AcqRel)
    }

    /// Spawns a process running `f`'s future, with its own mailbox of `M`. `f` is called
    /// right away on this thread to build the future; the future runs on a worker.
    ///
    /// ```
    /// let rt = otter::Runtime::new();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let pid = rt.handle().spawn(move |mut cx: otter::Context<u32>| async move {
    ///     tx.send(cx.recv().await + 1).unwrap();
    /// });
    /// pid.send(41);
    /// assert_eq!(rx.recv().unwrap(), 42);
    /// ```
    ///
    /// # Panics
    ///
    /// If the runtime has been shut down (its [`Runtime`](crate::Runtime) dropped).
    pub fn spawn<M, F, Fut>(&self, f: F) -> Pid<M>
    where
        M: Send + 'static,
        F: FnOnce(Context<M>) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: IntoExitReason,
    {
        let s = &self.shared;
        s.outside_spawns.fetch_add(1, Ordering::SeqCst);
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _leave = Leave(&s.outside_spawns);
        assert!(
            !s.is_shutdown(),
            "otter: spawn on a runtime that has shut down"
        );
        // From outside the workers: the coarse clock may stand still (`introspect.rs`).
        s.services.stats.tick_clock(std::time::Instant::now());
        cell::spawn(s, RawPid::OUTSIDE, f)
    }
}
