//! OS signals as messages to processes (Erlang's `os:set_signal/2`), and the ordered
//! stop of a tree on SIGTERM (Erlang's `init:stop/0`). Unix only.
//!
//! Not to be confused with the crate's exit signals between processes (links,
//! [`Exit`](crate::Exit)): these are the operating system's `SIGTERM`, `SIGINT`, ...
//!
//! # Subscribing
//!
//! [`notify`] subscribes a process to some [`Signal`]s: each one the program receives
//! from then on arrives in that process's mailbox as an [`OsSignal`] message (its
//! message type implements `From<OsSignal>`), as Erlang's
//! `os:set_signal(sigterm, handle)` has `{notify, sigterm}` delivered to the
//! `erl_signal_server`. The rules:
//!
//! * **Several subscribers**: every process subscribed to a signal gets its own message,
//!   whatever runtime it runs on (signals are the whole program's).
//! * **Unsubscribing**: the subscription ends when the subscriber exits, however it
//!   exits, or when its [`SignalRef`] is cancelled; nothing of it is left (a small
//!   watcher process that monitors the subscriber removes it, and it goes with the
//!   runtime if the runtime is dropped first).
//! * **No subscriber**: a signal that nobody is subscribed to when it comes takes its
//!   default action, as if otter had never handled it: `SIGTERM`, `SIGINT`, `SIGHUP`,
//!   `SIGUSR1`, `SIGUSR2` end the program, `SIGQUIT` ends it too (the OS's core dump
//!   aside), `SIGWINCH` and `SIGCHLD` are ignored. The OS handler otter installed stays
//!   (a handler cannot be taken back safely while another thread may be in it); it
//!   emulates the default action (`signal_hook::low_level::emulate_default_handler`).
//! * **Only the signals asked for** are handled: otter installs a handler for a signal
//!   at its first subscription, never before, and never touches the others.
//! * **Coalescing**: the OS merges a signal raised again before it was handled with
//!   the pending one, and so does the delivery thread: two `SIGTERM`s in quick
//!   succession may arrive as one message.
//!
//! Signals reach processes through one thread per program ("otter-signals", started at
//! the first subscription), which waits on `signal-hook`'s self-pipe and sends the
//! messages: the handler itself only writes a byte, as a signal handler must.
//!
//! # Stopping a tree on SIGTERM
//!
//! [`stop_on_signal`] is `init:stop/0` for one tree: it waits until one of the given
//! signals comes, then stops the top supervisor as [`SupervisorRef::stop`] does (its
//! children in reverse start order, each by its [`Shutdown`](crate::supervisor::Shutdown):
//! a worker gets the `Shutdown` exit signal and `kill` when its timeout expires, a
//! subtree stops its own children first, an acceptor pool drains if it was told to,
//! see [`AcceptorPool`](crate::net::AcceptorPool)), and returns to its caller, which
//! goes on (the supervisor exits `Normal`). A `deadline` bounds the whole stop, as
//! `erl -shutdown_time` does: past it, or if a second signal comes meanwhile, it
//! returns [`Stopped::Unfinished`] while the stop goes on; returning from the root
//! process then drops the runtime, which ends whatever is left.
//!
//! ```no_run
//! use otter::os_signal::{self, Signal, Stopped};
//! use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
//! use otter::{Context, Runtime};
//! use std::time::Duration;
//! let rt = Runtime::new();
//! let r = rt.block_on(|cx: Context<()>| async move {
//!     let spec = SupervisorSpec::new(Strategy::OneForOne)
//!         .child(ChildSpec::process("worker", || |mut c: Context<()>| async move { c.recv().await }));
//!     let top = supervisor::start_link(&cx, spec).await.unwrap();
//!     // Runs until SIGTERM or SIGINT (Ctrl-C), then stops the tree in order.
//!     os_signal::stop_on_signal(&cx, top, &[Signal::Term, Signal::Int], Some(Duration::from_secs(30)))
//!         .await
//!         .unwrap()
//! });
//! assert!(matches!(r.unwrap(), Stopped::InOrder(_)));
//! ```
//!
//! # Differences from Erlang
//!
//! * A signal goes to the processes that subscribed, as typed messages; Erlang sends
//!   `{notify, Sig}` to the one `erl_signal_server` event manager, whose handlers the
//!   application adds.
//! * No `ignore` setting: a subscriber that ignores the message ignores the signal.
//!   `default` is what a signal with no subscriber gets.
//! * `SIGTERM` has no default stop of the runtime: a runtime does not know which tree
//!   is the application's. [`stop_on_signal`] is asked for explicitly, for one tree,
//!   and returns to its caller instead of ending the program.
//! * The signals offered are the ones a program can handle and Erlang lists, less
//!   `SIGALRM`, `SIGABRT`, `SIGSTOP` and `SIGTSTP` (which the standard library and the
//!   terminal need as they are), plus `SIGWINCH`.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use signal_hook::consts::signal as nr;

use crate::server::CallError;
use crate::supervisor::SupervisorRef;
use crate::{Context, Down, ExitReason, MonitorRef, Pid};

/// An OS signal a process may subscribe to ([`notify`]).
///
/// ```
/// use otter::os_signal::Signal;
/// assert_eq!(Signal::Term.to_string(), "SIGTERM");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    /// `SIGHUP`: the terminal hung up; daemons take it as "reload".
    Hup,
    /// `SIGINT`: Ctrl-C.
    Int,
    /// `SIGQUIT`: Ctrl-\.
    Quit,
    /// `SIGTERM`: the polite request to stop (`kill`, systemd, Kubernetes).
    Term,
    /// `SIGUSR1`: the application's own.
    Usr1,
    /// `SIGUSR2`: the application's own.
    Usr2,
    /// `SIGWINCH`: the terminal's size changed.
    Winch,
    /// `SIGCHLD`: a child process stopped or exited.
    Chld,
}

impl Signal {
    /// The OS's number for it.
    ///
    /// ```
    /// use otter::os_signal::Signal;
    /// assert_eq!(Signal::Term.number(), 15);
    /// ```
    pub fn number(self) -> i32 {
        match self {
            Signal::Hup => nr::SIGHUP,
            Signal::Int => nr::SIGINT,
            Signal::Quit => nr::SIGQUIT,
            Signal::Term => nr::SIGTERM,
            Signal::Usr1 => nr::SIGUSR1,
            Signal::Usr2 => nr::SIGUSR2,
            Signal::Winch => nr::SIGWINCH,
            Signal::Chld => nr::SIGCHLD,
        }
    }

    const ALL: [Signal; 8] = [
        Signal::Hup,
        Signal::Int,
        Signal::Quit,
        Signal::Term,
        Signal::Usr1,
        Signal::Usr2,
        Signal::Winch,
        Signal::Chld,
    ];

    fn from_number(n: i32) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.number() == n)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Hup => "SIGHUP",
            Signal::Int => "SIGINT",
            Signal::Quit => "SIGQUIT",
            Signal::Term => "SIGTERM",
            Signal::Usr1 => "SIGUSR1",
            Signal::Usr2 => "SIGUSR2",
            Signal::Winch => "SIGWINCH",
            Signal::Chld => "SIGCHLD",
        })
    }
}

/// The message a subscriber gets when a signal comes (Erlang's `{notify, Sig}`).
///
/// See [`notify`] for an example.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OsSignal {
    /// The signal that came.
    pub signal: Signal,
}

// ===== the program's subscriptions =====

/// What a subscription delivers to: its process, typed.
type Deliver = Box<dyn Fn(Signal) + Send + Sync>;

struct Subscription {
    signals: Vec<Signal>,
    deliver: Deliver,
}

/// The program's subscriptions and the handle of the delivery thread's `Signals`.
struct Registry {
    handle: signal_hook::iterator::Handle,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    subscriptions: HashMap<u64, Subscription>,
    /// The signals whose handler is installed.
    installed: Vec<Signal>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// The registry, with its delivery thread started on first use.
fn registry() -> io::Result<&'static Registry> {
    static STARTING: Mutex<()> = Mutex::new(());
    if let Some(r) = REGISTRY.get() {
        return Ok(r);
    }
    let _one_at_a_time = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = REGISTRY.get() {
        return Ok(r);
    }
    let no_signals: [i32; 0] = [];
    let mut signals = signal_hook::iterator::Signals::new(no_signals)?;
    let handle = signals.handle();
    // No signal is added before the registry is set, so the thread finds it set.
    std::thread::Builder::new()
        .name("otter-signals".into())
        .spawn(move || {
            for n in signals.forever() {
                if let Some(s) = Signal::from_number(n) {
                    deliver(s, n);
                }
            }
        })?;
    Ok(REGISTRY.get_or_init(|| Registry {
        handle,
        state: Mutex::new(State::default()),
    }))
}

/// Sends `s` to every subscriber, or takes the default action if there is none.
fn deliver(s: Signal, n: i32) {
    let Some(r) = REGISTRY.get() else { return };
    let state = r.state.lock().unwrap_or_else(PoisonError::into_inner);
    let mut any = false;
    for sub in state.subscriptions.values() {
        if sub.signals.contains(&s) {
            (sub.deliver)(s);
            any = true;
        }
    }
    drop(state);
    if !any {
        // Known signals only (all of `Signal`'s are): the error case cannot happen.
        let _ = signal_hook::low_level::emulate_default_handler(n);
    }
}

fn subscribe(signals: &[Signal], deliver: Deliver) -> io::Result<u64> {
    let r = registry()?;
    let mut state = r.state.lock().unwrap_or_else(PoisonError::into_inner);
    for &s in signals {
        if !state.installed.contains(&s) {
            r.handle.add_signal(s.number())?;
            state.installed.push(s);
        }
    }
    state.next += 1;
    let id = state.next;
    state.subscriptions.insert(
        id,
        Subscription {
            signals: signals.to_vec(),
            deliver,
        },
    );
    Ok(id)
}

fn unsubscribe(id: u64) {
    if let Some(r) = REGISTRY.get() {
        let gone = r
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .subscriptions
            .remove(&id);
        // Dropped outside the lock: a closure's captures may be anything.
        drop(gone);
    }
}

/// How many subscriptions are live now, in the whole program (for leak tests).
///
/// ```
/// let live = otter::os_signal::subscriptions();
/// # let _ = live;
/// ```
pub fn subscriptions() -> usize {
    REGISTRY.get().map_or(0, |r| {
        r.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .subscriptions
            .len()
    })
}

/// Removes its subscription when dropped: held by the watcher process, whose future
/// is dropped however it ends (its return, or the runtime's drop).
struct Unsubscribe(u64);

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        unsubscribe(self.0);
    }
}

/// What a subscription's watcher hears.
#[derive(Debug)]
enum Watch {
    Down,
    Cancel,
}

impl From<Down> for Watch {
    fn from(_: Down) -> Watch {
        Watch::Down
    }
}

/// A subscription made by [`notify`]. It ends by itself when the subscriber exits;
/// [`SignalRef::cancel`] ends it before.
#[derive(Debug, Clone, Copy)]
pub struct SignalRef {
    id: u64,
    watcher: Pid<Watch>,
}

impl SignalRef {
    /// Ends the subscription: no signal is delivered through it once this returns (one
    /// sent just before may still be in the mailbox). A signal that then has no
    /// subscriber left takes its default action.
    ///
    /// ```
    /// use otter::os_signal::{self, OsSignal, Signal};
    /// use otter::{Context, Runtime};
    /// let rt = Runtime::new();
    /// rt.block_on(|cx: Context<OsSignal>| async move {
    ///     let sub = os_signal::notify(&cx, &[Signal::Usr2], cx.pid()).unwrap();
    ///     sub.cancel();
    /// })
    /// .unwrap();
    /// ```
    pub fn cancel(self) {
        unsubscribe(self.id);
        self.watcher.send(Watch::Cancel);
    }
}

/// Subscribes `pid` to `signals`: from now on, each of them the program receives is sent
/// to `pid` as an [`OsSignal`] (Erlang's `os:set_signal(Sig, handle)`). The rules (several
/// subscribers, the end of a subscription, a signal nobody is subscribed to) are in the
/// [module docs](self). Fails if the OS refuses the handler.
///
/// ```
/// use otter::os_signal::{self, OsSignal, Signal};
/// use otter::{Context, Runtime};
/// let rt = Runtime::new();
/// let got = rt.block_on(|mut cx: Context<OsSignal>| async move {
///     os_signal::notify(&cx, &[Signal::Usr1], cx.pid()).unwrap();
///     // Raised to itself only once a handler is installed; otherwise its default
///     // action would end the program.
///     signal_hook::low_level::raise(Signal::Usr1.number()).unwrap();
///     cx.recv().await
/// });
/// assert_eq!(got.unwrap(), OsSignal { signal: Signal::Usr1 });
/// ```
pub fn notify<M, N>(cx: &Context<M>, signals: &[Signal], pid: Pid<N>) -> io::Result<SignalRef>
where
    M: Send + 'static,
    N: From<OsSignal> + Send + 'static,
{
    let id = subscribe(
        signals,
        Box::new(move |signal| pid.send(N::from(OsSignal { signal }))),
    )?;
    let guard = Unsubscribe(id);
    let watched = pid.id();
    let watcher = cx.spawn(move |mut w: Context<Watch>| async move {
        let _guard = guard;
        w.monitor(watched);
        // A `Down` (the subscriber is gone) or a cancel: either ends it.
        w.recv().await;
    });
    Ok(SignalRef { id, watcher })
}

// ===== stopping a tree =====

/// How [`stop_on_signal`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// This signal came and the tree stopped in order, within the deadline.
    InOrder(Signal),
    /// This signal came, and the deadline passed or a second signal came before the
    /// tree had stopped: the stop goes on, and dropping the runtime ends what is left.
    Unfinished(Signal),
    /// The top supervisor exited by itself, with this reason, before any signal came
    /// (or while the stop was asked for: then by another's request or a crash).
    Exited(ExitReason),
}

/// What the stopper process hears.
#[derive(Debug)]
enum Stopper {
    /// The monitor of the tree, set by the caller (its first message; the caller's own
    /// monitor is set too, and any other `Down` means the caller went away).
    Watching(MonitorRef),
    Signal(Signal),
    Down(Down),
    Stopped(Result<(), CallError>),
    /// The caller dropped the future.
    Cancel,
}

/// Tells the stopper that its caller no longer waits, when the future is dropped.
struct CancelOnDrop(Pid<Stopper>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.send(Stopper::Cancel);
    }
}

impl From<OsSignal> for Stopper {
    fn from(s: OsSignal) -> Stopper {
        Stopper::Signal(s.signal)
    }
}

impl From<Down> for Stopper {
    fn from(d: Down) -> Stopper {
        Stopper::Down(d)
    }
}

/// Waits until one of `signals` comes, then stops `top` in order and returns (see the
/// [module docs](self), "Stopping a tree on SIGTERM"). The signals are subscribed to by
/// a process of its own, started now and linked to nothing: it ends when the stop is
/// over, when `top` exits, when the caller exits, or when the future is dropped (a
/// future dropped before any signal came leaves the tree alone; one dropped during the
/// stop leaves the stop to go on). A `deadline` of `None` waits for the stop however
/// long it takes (`init:stop/0`'s default).
///
/// See the [module docs](self) for an example.
pub fn stop_on_signal<M: Send + 'static>(
    cx: &Context<M>,
    top: SupervisorRef,
    signals: &[Signal],
    deadline: Option<Duration>,
) -> impl Future<Output = io::Result<Stopped>> + Send + use<M> {
    let (tx, rx) = oneshot();
    let caller = cx.pid().id();
    let stopper = cx.spawn(move |mut s: Context<Stopper>| async move {
        if let Some(done) = run_stopper(&mut s, top, deadline).await {
            tx.send(done);
        }
    });
    // The caller sets the stopper's monitors before it goes on (and may stop the tree
    // itself at once): a monitor set in the stopper's first poll would find a tree
    // stopped meanwhile gone, and hear `Noproc` instead of its reason. The references
    // go first, so that they reach the stopper ahead of any `Down`.
    let (top_ref, arm_top) = crate::process::monitor_for(stopper, top.id());
    let (_, arm_caller) = crate::process::monitor_for(stopper, caller);
    stopper.send(Stopper::Watching(top_ref));
    arm_top();
    arm_caller();
    let subscribed = notify(cx, signals, stopper);
    if subscribed.is_err() {
        cx.exit(stopper, ExitReason::Kill);
    }
    // Made here, not in the block: a future dropped before its first poll drops what
    // it captured, but never ran the block's first line.
    let cancel = CancelOnDrop(stopper);
    async move {
        let _cancel = cancel;
        subscribed?;
        rx.await
            .ok_or_else(|| io::Error::other("the signal stopper was killed"))
    }
}

/// The stopper's life: `None` if the caller went away.
async fn run_stopper(
    s: &mut Context<Stopper>,
    top: SupervisorRef,
    deadline: Option<Duration>,
) -> Option<Stopped> {
    let Stopper::Watching(top_ref) = s.recv().await else {
        unreachable!("the caller's first message to its stopper is `Watching`")
    };
    let first = loop {
        match s.recv().await {
            Stopper::Watching(_) => {}
            Stopper::Signal(signal) => break signal,
            Stopper::Down(d) if d.reference == top_ref => return Some(Stopped::Exited(d.reason)),
            Stopper::Down(_) | Stopper::Cancel => return None,
            Stopper::Stopped(_) => {}
        }
    };
    let me = s.pid();
    // The stop runs in a process of its own, so that this one still hears the
    // deadline and a second signal.
    s.spawn(move |_: Context<()>| async move {
        me.send(Stopper::Stopped(top.stop().await));
    });
    let until = deadline.map(|d| Instant::now() + d);
    // The top's `Down`, kept until the stop answers, and whether the stop was refused
    // (the top had ended before the stop's watcher was on it): then the `Down` says
    // why it ended, not the stop's `Noproc`.
    let mut top_down: Option<ExitReason> = None;
    let mut refused = false;
    loop {
        let next = match until {
            Some(t) => {
                s.recv_timeout(t.saturating_duration_since(Instant::now()))
                    .await
            }
            None => Some(s.recv().await),
        };
        match next {
            None | Some(Stopper::Signal(_)) => return Some(Stopped::Unfinished(first)),
            Some(Stopper::Stopped(Ok(()))) => return Some(Stopped::InOrder(first)),
            Some(Stopper::Stopped(Err(CallError::Exit(reason)))) => {
                return Some(Stopped::Exited(reason));
            }
            Some(Stopper::Stopped(Err(_))) => match top_down.take() {
                Some(reason) => return Some(Stopped::Exited(reason)),
                None => refused = true,
            },
            // The top's `Down` comes with the stop; the answer of the stop tells how,
            // unless the stop was refused.
            Some(Stopper::Down(d)) if d.reference == top_ref => {
                if refused {
                    return Some(Stopped::Exited(d.reason));
                }
                top_down = Some(d.reason);
            }
            Some(Stopper::Down(_) | Stopper::Cancel) => return None,
            Some(Stopper::Watching(_)) => {}
        }
    }
}

// ===== a one-shot channel from a process to a future =====

struct Shot<T> {
    value: Option<T>,
    /// The sender is gone (sent, or dropped without sending).
    closed: bool,
    waker: Option<Waker>,
}

struct Sender<T>(Arc<Mutex<Shot<T>>>);
struct Receiver<T>(Arc<Mutex<Shot<T>>>);

fn oneshot<T>() -> (Sender<T>, Receiver<T>) {
    let shot = Arc::new(Mutex::new(Shot {
        value: None,
        closed: false,
        waker: None,
    }));
    (Sender(shot.clone()), Receiver(shot))
}

impl<T> Sender<T> {
    fn send(self, value: T) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).value = Some(value);
        // Drop closes and wakes.
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut shot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        shot.closed = true;
        let waker = shot.waker.take();
        drop(shot);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    /// `None` if the sender was dropped without sending.
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Option<T>> {
        let mut shot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = shot.value.take() {
            return Poll::Ready(Some(v));
        }
        if shot.closed {
            return Poll::Ready(None);
        }
        shot.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
