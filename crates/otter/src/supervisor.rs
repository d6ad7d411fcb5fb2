//! Supervisors: OTP's `supervisor` behaviour.
//!
//! A supervisor starts its children, watches them through links (it traps exits),
//! restarts them by its [`Strategy`] and each child's [`Restart`] type, stops them by
//! their [`Shutdown`], and gives up when they fail too often.
//!
//! # Rules mirrored from OTP (`supervisor` reference manual, design principles)
//!
//! * Children are started **in order** of the spec list, and stopped in **reverse**
//!   order. If a child fails to start, the ones already started are stopped and the
//!   supervisor's start fails with `ShutdownWith("failed_to_start_child ...")`.
//! * **one_for_one**: only the child that exited is restarted. **one_for_all**: every
//!   other child is stopped (reverse order), then all are restarted (in order).
//!   **rest_for_one**: the children after it are stopped (reverse order), then it and
//!   they are restarted (in order). **simple_one_for_one**: no static children; children
//!   are added with [`SupervisorRef::start_child`], each restarted alone, and all are
//!   stopped together at shutdown.
//! * **Restart types**: permanent always, transient only after an abnormal exit (not
//!   `Normal`, `Shutdown`, `ShutdownWith`), temporary never (the child is forgotten).
//!   A temporary child stopped by a one_for_all / rest_for_one restart is not restarted.
//! * **Restart intensity**: more than `intensity` restarts within `period` (OTP's
//!   defaults: 1 in 5 s) make the supervisor stop all its children and exit with
//!   `Shutdown`, so its own supervisor decides what comes next. The restart is counted
//!   before siblings are stopped. A child that fails to restart counts as one more
//!   restart and is tried again through a message the supervisor sends itself, so the
//!   requests and exit signals that came meanwhile are handled first
//!   (`try_again_restart`). The children a one_for_all / rest_for_one restart started
//!   before the failure stay up, those after it stay stopped, and the retry restarts
//!   from the failed child by the strategy: rest_for_one keeps the ones before it,
//!   one_for_all stops and starts them all again. A zero period or a duplicate child id
//!   is refused at start.
//! * **Requests**: a child terminated while its restart is being retried stays stopped
//!   (the retry leaves it alone) until `restart_child`; `restart_child` and
//!   `delete_child` answer [`ChildError::Restarting`] meanwhile. Requests by id to a
//!   simple_one_for_one supervisor answer [`ChildError::SimpleOneForOne`]; its children
//!   are terminated by pid ([`SupervisorRef::terminate_pid`], OTP's `terminate_child`
//!   with a pid: `Ok` for a pid that has exited, `NotFound` for a live process that is
//!   not a child, and on the other strategies).
//! * **Shutdown**: the supervisor monitors the child, then `brutal_kill` sends
//!   `exit(child, kill)`; a timeout sends `exit(child, shutdown)` and, if the child has
//!   not exited when it expires, `kill`; `infinity` sends `shutdown` and waits; after the
//!   `Down` it unlinks and drops the child's `Exit`. A temporary child stopped by
//!   `terminate_child` is forgotten. A panic in a start function is a failed start.
//! * A supervisor started with `start_link` by its parent stops its children and exits
//!   when the parent sends it an exit signal (it is a server that traps exits).
//! * A restarted child registers its name again ([`ChildSpec::named_server`],
//!   [`ChildSpec::named_supervisor`]): the name is released at the old child's exit
//!   before the supervisor hears of it. A name another process holds fails the start.
//! * **Child kinds** ([`ChildKind`], OTP's `type`): [`ChildSpec::supervisor`] and
//!   [`ChildSpec::named_supervisor`] make a supervisor child, the others a worker, and
//!   [`ChildSpec::kind`] sets it for a start function of one's own. The kind is what
//!   [`SupervisorRef::which_children`] and [`SupervisorRef::count_children`] report, and
//!   it chooses the default shutdown when the spec sets none: 5 s for a worker,
//!   `infinity` for a supervisor.
//! * An acceptor pool runs under an application's supervisor as a supervisor child
//!   ([`net::AcceptorPool::child_spec`](crate::net::AcceptorPool::child_spec), ranch's
//!   `child_spec/5`); a restarted pool listens again on the same address.
//!
//! # Stopping a tree before the runtime goes
//!
//! Dropping a [`Runtime`](crate::Runtime) ends every process by dropping its future:
//! no `terminate`, no `shutdown` exit signal for children that trap exits to clean up
//! (tokio's runtime drop cancels its tasks the same way). OTP's `init:stop` stops the
//! applications' trees in order first; do the same by stopping the top supervisor
//! before the root returns: [`SupervisorRef::stop`] (OTP's `supervisor:stop/1`) stops
//! its children in reverse start order, each by its shutdown spec, exits `Normal`, and
//! returns to its caller. `Normal` matters: the process that started the tree with
//! [`start_link`] is linked to it, and the exit signal of any other reason (stopping
//! it as a server with `Shutdown`, say) would end that process, unless it traps exits,
//! before the code after the stop runs, as in OTP.
//!
//! ```
//! use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
//! use otter::{Context, Runtime};
//! let rt = Runtime::new();
//! let r = rt.block_on(|cx: Context<()>| async move {
//!     let spec = SupervisorSpec::new(Strategy::OneForOne)
//!         .child(ChildSpec::process("worker", || |mut c: Context<()>| async move { c.recv().await }));
//!     let top = supervisor::start_link(&cx, spec).await.unwrap();
//!     // ... the application runs ...
//!     top.stop().await.unwrap();
//!     "after the stop"
//! });
//! assert_eq!(r.unwrap(), "after the stop");
//! ```
//!
//! # Differences from OTP
//!
//! * simple_one_for_one children are started from a full [`ChildSpec`] (the arguments
//!   captured in its closure) rather than a template plus extra arguments: typed, and
//!   the same as Elixir's `DynamicSupervisor`.
//! * No `ignore` from a start function, no `significant` children / `auto_shutdown`.
//! * The intensity window is exact (`Instant`s), where OTP counts in whole seconds: with
//!   intensity 1 in 5 s, crashes 5.9 s apart exceed OTP's limit but not otter's.
//! * Errors are logged nowhere: the supervisor's decisions are observable through
//!   [`SupervisorRef::which_children`] and the exit reasons.
//! * `which_children` gives a child whose restart is being retried as not running
//!   (`pid: None`), where OTP gives `restarting`; `restart_child` and `delete_child`
//!   tell the two apart. It also gives a running [`ChildSpec::supervisor`] child as a
//!   [`SupervisorRef`] ([`ChildInfo::supervisor`]), where OTP's pid serves for both.
//! * A simple_one_for_one supervisor starts in batches (`supervisor/batch.rs`): the
//!   start requests next in its mailbox are begun as they come and their `init`s
//!   overlap, where OTP waits for each child's `init` before it reads the next request;
//!   any other message still waits for the starts before it, as in OTP.
//! * Requests and their answers are typed per request (each [`Request`] carries the
//!   reply handle of its own answer). [`SupervisorRef::child`] gives a running server
//!   child as a typed `ServerRef` (checked against its spec), where OTP's
//!   `which_children` gives a pid; [`SupervisorRef::start_server_child`] likewise gives
//!   the server it started, where `start_child` gives a pid. Both check the type the
//!   spec's own constructor recorded ([`ChildSpec::server`]), at run time: one
//!   [`ChildSpec`] type serves static lists, dynamic children and every kind of child.

mod batch;
mod child;
mod client;

use std::any::TypeId;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::exit::ExitReason;
use crate::pid::{Pid, ProcessId};
use crate::report;
use crate::server::{self, Flow, Info, Server, ServerContext, ServerMsg, ServerRef};
use crate::signal::Exit;

pub use child::{ChildKind, ChildSpec, Restart, Shutdown, StartFuture};
pub use client::{
    ChildCounts, ChildError, ChildInfo, Request, SupervisorRef, start_link, start_link_named,
    whereis,
};

/// The context child start functions get: the supervisor's.
pub type SupervisorContext = ServerContext<Supervisor>;

/// How a supervisor restarts its children.
///
/// ```
/// use otter::supervisor::{Strategy, SupervisorSpec};
/// let spec = SupervisorSpec::new(Strategy::RestForOne);
/// assert_eq!(spec.strategy, Strategy::RestForOne);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Restart the child that exited.
    OneForOne,
    /// Stop the others, restart all.
    OneForAll,
    /// Stop the ones started after it, restart it and them.
    RestForOne,
    /// Dynamic children of one kind, added with `start_child`; restart the one that
    /// exited.
    SimpleOneForOne,
}

/// A supervisor's flags and children (OTP's `{SupFlags, ChildSpecs}` from `init/1`).
///
/// ```
/// use std::time::Duration;
/// use otter::supervisor::{Strategy, SupervisorSpec};
/// let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(3, Duration::from_secs(10));
/// assert_eq!((spec.intensity, spec.period), (3, Duration::from_secs(10)));
/// ```
#[derive(Clone, Debug)]
pub struct SupervisorSpec {
    /// The restart strategy.
    pub strategy: Strategy,
    /// The most restarts allowed within `period` (OTP default 1).
    pub intensity: u32,
    /// The window of `intensity` (OTP default 5 s).
    pub period: Duration,
    /// The static children, in start order (none for `SimpleOneForOne`).
    pub children: Vec<ChildSpec>,
}

impl SupervisorSpec {
    /// A spec with OTP's default intensity (1 restart in 5 s) and no children.
    ///
    /// See [`SupervisorSpec`] for an example.
    pub fn new(strategy: Strategy) -> SupervisorSpec {
        SupervisorSpec {
            strategy,
            intensity: 1,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Sets the restart intensity: at most `intensity` restarts within `period`.
    ///
    /// See [`SupervisorSpec`] for an example.
    pub fn intensity(mut self, intensity: u32, period: Duration) -> SupervisorSpec {
        self.intensity = intensity;
        self.period = period;
        self
    }

    /// Appends a child.
    ///
    /// See [`start_link`] for an example.
    pub fn child(mut self, child: ChildSpec) -> SupervisorSpec {
        self.children.push(child);
        self
    }
}

#[derive(Clone)]
struct Child {
    /// Unique in this supervisor (ids are not, for simple_one_for_one).
    key: u64,
    spec: ChildSpec,
    status: Status,
    /// Times this child has been restarted (introspection's `restarts`).
    restarts: u32,
}

/// Where a child is (OTP's `#child.pid`: a pid, `undefined` or `{restarting, Pid}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Running(ProcessId),
    /// Not running: terminated, or not started again yet by a multi-child restart.
    Stopped,
    /// Its restart failed: a [`TryAgain`] with its key is on its way. Holds the pid it
    /// had if its own exit began the restart (how `terminate_pid` still finds a
    /// simple_one_for_one child). Terminating it makes it `Stopped`, and the retry
    /// then leaves it alone.
    Restarting(Option<ProcessId>),
}

impl Child {
    fn pid(&self) -> Option<ProcessId> {
        match self.status {
            Status::Running(pid) => Some(pid),
            Status::Stopped | Status::Restarting(_) => None,
        }
    }

    /// What `which_children` reports of this child.
    fn info(&self) -> ChildInfo {
        let message = self.spec.message;
        ChildInfo {
            id: self.spec.id.clone(),
            pid: self.pid(),
            kind: self.spec.kind,
            // Typed from the spec's start function, which started a supervisor.
            supervisor: self
                .pid()
                .filter(|_| message == Some(TypeId::of::<ServerMsg<Supervisor>>()))
                .map(|pid| SupervisorRef {
                    server: ServerRef::from(Pid::from_raw(pid.0)),
                }),
            message,
        }
    }
}

/// A supervisor process's state. Start one with [`start_link`]. `Clone` for
/// [`sys::get_state`](crate::sys::get_state) (OTP's `#state{}` record); its `Debug`
/// (and its [`sys::get_status`](crate::sys::get_status) text) lists the children.
#[derive(Clone)]
pub struct Supervisor {
    strategy: Strategy,
    intensity: u32,
    period: Duration,
    children: Vec<Child>,
    /// simple_one_for_one only: where a running child is in `children`, by pid. A
    /// hint, checked at each use (a stale one falls back to a scan), so that an exit
    /// or `terminate_child` among 100,000 children does not scan them all.
    by_pid: HashMap<ProcessId, usize>,
    restarts: VecDeque<Instant>,
    next_key: u64,
}

/// The supervisor's own message: try a failed restart again (the child's key). Sent to
/// itself, so that requests and exit signals that came meanwhile are handled in
/// between (OTP's `try_again_restart`); a child no longer restarting by then is left
/// alone.
#[derive(Debug)]
pub struct TryAgain(u64);

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("strategy", &self.strategy)
            .field(
                "children",
                &self
                    .children
                    .iter()
                    .map(|c| (&*c.spec.id, c.status))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Server for Supervisor {
    type Args = SupervisorSpec;
    type Call = Request;
    type Cast = ();
    type Info = TryAgain;

    async fn init(spec: SupervisorSpec, cx: &mut SupervisorContext) -> Result<Self, ExitReason> {
        crate::introspect::set_kind(cx.pid().id().0, crate::introspect::Kind::Supervisor);
        cx.trap_exit(true);
        let mut sup = Supervisor {
            strategy: spec.strategy,
            intensity: spec.intensity,
            period: spec.period,
            children: Vec::new(),
            by_pid: HashMap::new(),
            restarts: VecDeque::new(),
            next_key: 0,
        };
        // OTP's `check_flags` / `check_startspec`: reject before starting anything.
        if spec.period.is_zero() {
            return Err(ExitReason::ShutdownWith(
                "invalid period: must be > 0".into(),
            ));
        }
        for (n, c) in spec.children.iter().enumerate() {
            if spec.children[..n].iter().any(|d| d.id == c.id) {
                return Err(ExitReason::ShutdownWith(
                    format!("duplicate_child_name {}", c.id).into(),
                ));
            }
        }
        if spec.strategy == Strategy::SimpleOneForOne && !spec.children.is_empty() {
            return Err(ExitReason::ShutdownWith(
                "simple_one_for_one has no static children; use start_child".into(),
            ));
        }
        for spec in spec.children {
            match start(&spec, cx).await {
                Ok(pid) => sup.push(spec, pid),
                Err(reason) => {
                    sup.stop_all(cx).await;
                    return Err(ExitReason::ShutdownWith(
                        format!("failed_to_start_child {}: {reason}", spec.id).into(),
                    ));
                }
            }
        }
        Ok(sup)
    }

    async fn handle_call(&mut self, request: Request, cx: &mut SupervisorContext) -> Flow {
        match request {
            Request::WhichChildren(from) => {
                from.reply(self.children.iter().map(Child::info).collect());
            }
            Request::CountChildren(from) => {
                let mut n = ChildCounts {
                    specs: self.children.len(),
                    active: 0,
                    supervisors: 0,
                    workers: 0,
                };
                for c in &self.children {
                    n.active += usize::from(c.pid().is_some());
                    match c.spec.kind {
                        ChildKind::Supervisor => n.supervisors += 1,
                        ChildKind::Worker => n.workers += 1,
                    }
                }
                from.reply(n);
            }
            Request::Child(id, from) => {
                from.reply(self.find(&id).map(|i| self.children[i].info()));
            }
            Request::StartChild(spec, from) if self.strategy == Strategy::SimpleOneForOne => {
                self.start_batch(spec, from, cx).await;
            }
            Request::StartChild(spec, from) => from.reply(self.start_child(spec, cx).await),
            Request::TerminateChild(id, from) => from.reply(match self.find(&id) {
                Err(e) => Err(e),
                Ok(i) => {
                    self.stop_child(i, cx).await;
                    // OTP's `del_child`: a temporary child's spec goes with it.
                    if self.children[i].spec.restart == Restart::Temporary {
                        self.forget(i);
                    }
                    Ok(())
                }
            }),
            Request::TerminatePid(pid, from) => from.reply(self.terminate_pid(pid, cx).await),
            Request::RestartChild(id, from) => from.reply(match self.find_stopped(&id) {
                Err(e) => Err(e),
                Ok(i) => match start(&self.children[i].spec, cx).await {
                    Ok(pid) => {
                        self.children[i].status = Status::Running(pid);
                        Ok(pid)
                    }
                    Err(r) => Err(ChildError::StartFailed(r)),
                },
            }),
            Request::DeleteChild(id, from) => from.reply(match self.find_stopped(&id) {
                Err(e) => Err(e),
                Ok(i) => {
                    self.forget(i);
                    Ok(())
                }
            }),
        }
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<TryAgain>, cx: &mut SupervisorContext) -> Flow {
        let exit = match info {
            Info::Exit(exit) => exit,
            Info::Message(TryAgain(key)) => {
                // OTP's `try_again_restart`: only a child still restarting; one
                // terminated, restarted or deleted meanwhile is left as it is.
                let found = self
                    .children
                    .iter()
                    .enumerate()
                    .find_map(|(i, c)| match c.status {
                        Status::Restarting(was) if c.key == key => Some((i, was)),
                        _ => None,
                    });
                return match found {
                    Some((i, was)) => self.restart(i, was, cx).await,
                    None => Flow::Continue,
                };
            }
            Info::Down(_) => return Flow::Continue,
        };
        let Some(i) = self.running(exit.from) else {
            return Flow::Continue; // not (or no longer) our child: a stale signal
        };
        if self.exited(i, &exit, cx.pid().id()) {
            self.restart(i, Some(exit.from), cx).await
        } else {
            Flow::Continue
        }
    }

    async fn terminate(&mut self, _reason: &ExitReason, cx: &mut SupervisorContext) {
        self.stop_all(cx).await;
    }

    fn format_status(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl Supervisor {
    /// The static child with this id (OTP's `find_child` by id).
    fn find(&self, id: &str) -> Result<usize, ChildError> {
        if self.strategy == Strategy::SimpleOneForOne {
            return Err(ChildError::SimpleOneForOne);
        }
        self.children
            .iter()
            .position(|c| &*c.spec.id == id)
            .ok_or(ChildError::NotFound)
    }

    /// As [`Supervisor::find`], for `restart_child` and `delete_child`: the child must
    /// be stopped.
    fn find_stopped(&self, id: &str) -> Result<usize, ChildError> {
        let i = self.find(id)?;
        match self.children[i].status {
            Status::Stopped => Ok(i),
            Status::Running(_) => Err(ChildError::Running),
            Status::Restarting(_) => Err(ChildError::Restarting),
        }
    }

    /// `terminate_child` with a pid: OTP looks a pid up among simple_one_for_one
    /// children only (by the pid it had, if it is restarting), and a pid that is not
    /// alive has nothing left to terminate.
    async fn terminate_pid(
        &mut self,
        pid: ProcessId,
        cx: &mut SupervisorContext,
    ) -> Result<(), ChildError> {
        if self.strategy != Strategy::SimpleOneForOne {
            return Err(ChildError::NotFound);
        }
        let found = self.running(pid).or_else(|| {
            self.children
                .iter()
                .position(|c| c.status == Status::Restarting(Some(pid)))
        });
        match found {
            Some(i) => {
                self.stop_child(i, cx).await;
                self.forget(i);
                Ok(())
            }
            // Alive and not exiting (`is_process_alive/1`, `is_alive`): a child whose
            // exit has begun is terminated already.
            None if pid.is_alive() => Err(ChildError::NotFound),
            None => Ok(()),
        }
    }

    /// `start_child` on the strategies other than simple_one_for_one (which starts in
    /// batches: `supervisor/batch.rs`).
    async fn start_child(
        &mut self,
        spec: ChildSpec,
        cx: &mut SupervisorContext,
    ) -> Result<ProcessId, ChildError> {
        if let Some(c) = self.children.iter().find(|c| c.spec.id == spec.id) {
            return Err(ChildError::AlreadyPresent(c.pid()));
        }
        let pid = start(&spec, cx).await.map_err(ChildError::StartFailed)?;
        self.push(spec, pid);
        Ok(pid)
    }

    fn push(&mut self, spec: ChildSpec, pid: ProcessId) {
        self.next_key += 1;
        self.children.push(Child {
            key: self.next_key,
            spec,
            status: Status::Running(pid),
            restarts: 0,
        });
        self.note_running(self.children.len() - 1);
    }

    /// The child running as `pid`: by the hint if it is right, else by a scan (which
    /// puts it right).
    fn running(&mut self, pid: ProcessId) -> Option<usize> {
        let (i, hinted) = self.find_running(pid)?;
        if !hinted {
            self.note_running(i);
        }
        Some(i)
    }

    /// As [`Supervisor::running`], leaving the hints as they are; whether the hint found
    /// it.
    fn find_running(&self, pid: ProcessId) -> Option<(usize, bool)> {
        if let Some(&i) = self.by_pid.get(&pid)
            && self
                .children
                .get(i)
                .is_some_and(|c| c.status == Status::Running(pid))
        {
            return Some((i, true));
        }
        let i = self
            .children
            .iter()
            .position(|c| c.status == Status::Running(pid))?;
        Some((i, false))
    }

    /// Child `i` has exited with `exit`: it is stopped and reported, and forgotten if it
    /// is temporary or under simple_one_for_one and is not to be restarted. True if it
    /// is to be restarted (by [`Supervisor::restart`]).
    fn exited(&mut self, i: usize, exit: &Exit, me: ProcessId) -> bool {
        self.by_pid.remove(&exit.from);
        self.children[i].status = Status::Stopped;
        let spec = &self.children[i].spec;
        report::child_terminated(me, &spec.id, exit.from, &exit.reason);
        if spec.restart.restarts_after(&exit.reason) {
            return true;
        }
        if spec.restart == Restart::Temporary || self.strategy == Strategy::SimpleOneForOne {
            self.forget(i);
        }
        false
    }

    /// Records where child `i` is, if it runs under simple_one_for_one.
    fn note_running(&mut self, i: usize) {
        if self.strategy == Strategy::SimpleOneForOne
            && let Status::Running(pid) = self.children[i].status
        {
            self.by_pid.insert(pid, i);
        }
    }

    /// Takes child `i` out: in place of the last one under simple_one_for_one, whose
    /// children have no order (an exit among 100,000 would otherwise move them all),
    /// keeping the others' start order under the other strategies.
    fn forget(&mut self, i: usize) {
        if self.strategy != Strategy::SimpleOneForOne {
            self.children.remove(i);
            return;
        }
        // Taken out after its stop or exit, which dropped its hint.
        self.children.swap_remove(i);
        if i < self.children.len() {
            self.note_running(i);
        }
    }

    /// Records a restart; false if that exceeds the intensity (OTP's
    /// `add_restart`: more than `intensity` restarts within `period`).
    fn add_restart(&mut self) -> bool {
        let now = crate::time::now();
        self.restarts.push_back(now);
        while let Some(&t) = self.restarts.front() {
            if now.duration_since(t) > self.period {
                self.restarts.pop_front();
            } else {
                break;
            }
        }
        self.restarts.len() <= self.intensity as usize
    }

    /// Restarts child `i` (after its exit, or to try its failed restart again) by the
    /// strategy; stops the supervisor with `Shutdown` when the intensity is exceeded.
    /// The restart is counted first, before any sibling is stopped (OTP's order).
    /// `was`: the pid child `i` had, kept if its restart fails.
    async fn restart(
        &mut self,
        i: usize,
        was: Option<ProcessId>,
        cx: &mut SupervisorContext,
    ) -> Flow {
        if !self.add_restart() {
            report::intensity_reached(cx.pid().id(), &self.children[i].spec.id, self.intensity);
            return Flow::Stop(ExitReason::Shutdown);
        }
        // The children to restart, in start order.
        let set: Vec<usize> = match self.strategy {
            Strategy::OneForOne | Strategy::SimpleOneForOne => vec![i],
            Strategy::OneForAll => (0..self.children.len()).collect(),
            Strategy::RestForOne => (i..self.children.len()).collect(),
        };
        for &j in set.iter().rev() {
            self.stop_child(j, cx).await;
        }
        // Temporary children stopped by the strategy are not restarted: forget them.
        let forget: Vec<u64> = set
            .iter()
            .filter(|&&j| j != i && self.children[j].spec.restart == Restart::Temporary)
            .map(|&j| self.children[j].key)
            .collect();
        let keys: Vec<u64> = set
            .iter()
            .map(|&j| self.children[j].key)
            .filter(|k| !forget.contains(k))
            .collect();
        let first = self.children[i].key;
        self.children.retain(|c| !forget.contains(&c.key));
        for (n, key) in keys.into_iter().enumerate() {
            // Nothing forgotten (always so for one child): the set's positions stand.
            let j = if forget.is_empty() {
                set[n]
            } else {
                self.children
                    .iter()
                    .position(|c| c.key == key)
                    .expect("a child of the restart set")
            };
            match start(&self.children[j].spec, cx).await {
                Ok(pid) => {
                    let c = &mut self.children[j];
                    c.restarts = c.restarts.saturating_add(1);
                    crate::introspect::set_restarts(pid.0, c.restarts);
                    c.status = Status::Running(pid);
                    self.note_running(j);
                }
                Err(_) => {
                    // OTP's `restart_multiple_children`: the children started before
                    // it stay up, the ones after it stay stopped; the retry restarts
                    // from this child by the strategy (for one_for_all, all again).
                    let was = if key == first { was } else { None };
                    self.children[j].status = Status::Restarting(was);
                    cx.pid().send(ServerMsg::Info(TryAgain(key)));
                    break;
                }
            }
        }
        Flow::Continue
    }

    /// Stops child `i` by its shutdown spec (see the module docs), if it runs; it is
    /// `Stopped` after (a restarting child too: its retry will leave it alone).
    async fn stop_child(&mut self, i: usize, cx: &mut SupervisorContext) {
        let status = std::mem::replace(&mut self.children[i].status, Status::Stopped);
        if let Status::Running(pid) = status {
            self.by_pid.remove(&pid);
            stop(pid, self.children[i].spec.shutdown_of(), cx).await;
        }
    }

    /// Stops every child: in reverse start order, or all at once for
    /// simple_one_for_one (OTP stops those concurrently).
    async fn stop_all(&mut self, cx: &mut SupervisorContext) {
        if self.strategy == Strategy::SimpleOneForOne {
            let pids: Vec<(ProcessId, Shutdown)> = self
                .children
                .iter_mut()
                .filter_map(|c| {
                    let pid = c.pid().map(|p| (p, c.spec.shutdown_of()));
                    c.status = Status::Stopped;
                    pid
                })
                .collect();
            stop_many(&pids, cx).await;
            return;
        }
        for i in (0..self.children.len()).rev() {
            self.stop_child(i, cx).await;
        }
    }
}

/// Runs a child's start function; a panic in it is a failed start (OTP catches the
/// start function's crash), not a crash of the supervisor.
/// Reports the start (`otter::progress`) or its failure (`otter::supervisor`).
async fn start(spec: &ChildSpec, cx: &mut SupervisorContext) -> Result<ProcessId, ExitReason> {
    let me = cx.pid().id();
    let started = match crate::unwind::catch_panic(|| (spec.start)(cx)) {
        Ok(started) => server::catch(started).await.and_then(|r| r),
        Err(panic) => Err(panic),
    };
    report_start(me, spec, &started);
    started
}

/// Reports a start (`otter::progress`) or its failure (`otter::supervisor`).
fn report_start(me: ProcessId, spec: &ChildSpec, started: &Result<ProcessId, ExitReason>) {
    match started {
        Ok(pid) => report::child_started(me, &spec.id, *pid),
        Err(reason) => report::start_error(me, &spec.id, reason),
    }
}

/// Stops one child; returns once it has exited.
async fn stop(pid: ProcessId, shutdown: Shutdown, cx: &mut SupervisorContext) {
    stop_many(&[(pid, shutdown)], cx).await;
}

/// Stops several children at once, by OTP's procedure: monitor each, send every signal
/// before any wait (`kill` for brutal_kill, else `shutdown`), wait for each `Down` (a
/// timeout escalates to `kill`), then unlink and drop the `Exit` the child's link sent.
/// Each child's timeout runs from the same start. Staying linked until the `Down` means
/// a supervisor killed meanwhile still takes its children with it.
async fn stop_many(children: &[(ProcessId, Shutdown)], cx: &mut SupervisorContext) {
    let t0 = crate::time::now();
    let mut waiting = Vec::with_capacity(children.len());
    for &(pid, shutdown) in children {
        let mref = cx.monitor(pid);
        let reason = match shutdown {
            Shutdown::BrutalKill => ExitReason::Kill,
            _ => ExitReason::Shutdown,
        };
        cx.exit(pid, reason);
        waiting.push((pid, mref, shutdown));
    }
    for (pid, mref, shutdown) in waiting {
        let is_down =
            move |m: &ServerMsg<Supervisor>| matches!(m, ServerMsg::Down(d) if d.reference == mref);
        let mut down = None;
        if let Shutdown::Timeout(t) = shutdown {
            let left = t.saturating_sub(crate::time::now().saturating_duration_since(t0));
            down = cx.recv_match_timeout(is_down, left).await;
            if down.is_none() {
                cx.exit(pid, ExitReason::Kill);
            }
        }
        let down = match down {
            Some(d) => d,
            None => cx.recv_match(is_down).await,
        };
        // OTP's `shutdown_error`: the child ended otherwise than its shutdown asked
        // (killed when its time ran out, or an abnormal reason). Normal and shutdown
        // reasons are no error (OTP's rule for a child that is not permanent; this one
        // does not tell them apart), nor a child already gone.
        if let ServerMsg::Down(d) = down {
            let expected = d.reason.is_normal()
                || d.reason.is_shutdown()
                || d.reason == ExitReason::Noproc
                || (shutdown == Shutdown::BrutalKill && d.reason == ExitReason::Killed);
            if !expected {
                report::shutdown_error(cx.pid().id(), pid, &d.reason);
            }
        }
        // The child's link signal came before its `Down` (exit order): drop it.
        cx.unlink(pid);
        let _ = cx.try_recv_match(|m| matches!(m, ServerMsg::Exit(e) if e.from == pid));
    }
}
