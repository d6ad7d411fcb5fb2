//! State machines: Erlang's `gen_statem`, typed per request.
//!
//! A state machine is a server whose replies depend on a *state* as well as on its
//! data, with the machinery protocols need: events postponed until the state changes,
//! events it inserts itself, and timeouts tied to a state, to the next event, or to a
//! name. Implement [`StateMachine`] (`init`, `handle_event`, optionally `state_enter` and
//! `terminate`), start it with [`StateMachine::start_link`] (or `start`,
//! `start_link_named`), and talk to it through its [`StatemRef`], which is the
//! [`ServerRef`] of a [`Machine`]: calls typed per request, casts, calls by
//! [`Name`], `stop`, supervisor children ([`ChildSpec::server`] with `Machine<S>`) all
//! work as for servers (see [`server`]).
//!
//! ```
//! use std::time::Duration;
//! use otter::server::ReplyTo;
//! use otter::statem::{Event, StateMachine, StatemContext, Transition};
//! use otter::{Context, ExitReason, Runtime};
//!
//! /// A door with a code lock: the right code opens it for a while.
//! struct Lock { code: u32 }
//!
//! #[derive(Debug, PartialEq)]
//! enum Door { Locked, Open }
//!
//! enum Req { Button(u32, ReplyTo<bool>), IsOpen(ReplyTo<bool>) }
//!
//! impl StateMachine for Lock {
//!     type Args = u32;
//!     type State = Door;
//!     type Call = Req;
//!     type Cast = ();
//!     type Info = ();
//!     type Internal = ();
//!
//!     async fn init(code: u32, _: &mut StatemContext<Self>) -> Result<(Self, Transition<Self>), ExitReason> {
//!         Ok((Lock { code }, Transition::next(Door::Locked)))
//!     }
//!
//!     async fn handle_event(&mut self, state: &Door, event: Event<Self>, _: &mut StatemContext<Self>) -> Transition<Self> {
//!         match (state, event) {
//!             (Door::Locked, Event::Call(Req::Button(code, from))) if code == self.code => {
//!                 Transition::next(Door::Open)
//!                     .reply(from, true)
//!                     .state_timeout(Duration::from_millis(10), ())
//!             }
//!             (_, Event::Call(Req::Button(_, from))) => Transition::keep().reply(from, false),
//!             (_, Event::Call(Req::IsOpen(from))) => Transition::keep().reply(from, *state == Door::Open),
//!             (Door::Open, Event::StateTimeout(())) => Transition::next(Door::Locked),
//!             _ => Transition::keep(),
//!         }
//!     }
//! }
//!
//! let rt = Runtime::new();
//! let r = rt.block_on(|cx: Context<()>| async move {
//!     let door = Lock::start_link(&cx, 1234).await.unwrap();
//!     let wrong = door.call(|r| Req::Button(1, r)).await.unwrap();
//!     let right = door.call(|r| Req::Button(1234, r)).await.unwrap();
//!     let open = door.call(Req::IsOpen).await.unwrap();
//!     cx.sleep(Duration::from_millis(50)).await;
//!     (wrong, right, open, door.call(Req::IsOpen).await.unwrap())
//! });
//! assert_eq!(r.unwrap(), (false, true, true, false));
//! ```
//!
//! # Events and transitions
//!
//! Every event goes to [`StateMachine::handle_event`] with the current state (OTP's
//! `handle_event_function` callback mode, over a state of any type). Per-state
//! handlers, OTP's `state_functions` mode, are a `match` on the state that hands each
//! state to a method of its own; the door lock example in `examples/` is written so.
//! The handler returns a [`Transition`]: the next state ([`Transition::next`], OTP's
//! `next_state`), the same one ([`Transition::keep`], `keep_state`), the same one
//! entered again ([`Transition::repeat`], `repeat_state`), or a stop
//! ([`Transition::stop`], `stop`), with actions added by its builder methods.
//!
//! # Rules mirrored from OTP (`gen_statem`)
//!
//! * **Order of events.** After a transition, the events still to handle are, in
//!   order: the events its actions inserted ([`Transition::next_event`], in the order
//!   given), then — if the state changed — the postponed events, oldest first, then the
//!   events queued before, then the events of timeouts set to zero, then the mailbox.
//!   A state *changes* when the next state is not `==` to the current one.
//! * **Postpone.** [`Transition::postpone`] keeps the event (handed back by value) and
//!   retries it after the next change of state, not before.
//! * **State enter calls.** When the state changes, and on [`Transition::repeat`],
//!   [`StateMachine::state_enter`] runs with the state left and the state entered
//!   (at the start, both are the first state) before any other event. It may keep
//!   the state, repeat it, or stop, and set timeouts and reply; it may not change the
//!   state, postpone or insert events (the machine exits with a [`StatemError`], as
//!   OTP's does with `bad_state_enter_return_from_state_function`).
//! * **Timeouts.** The *event timeout* ([`Transition::event_timeout`], OTP's
//!   `timeout`) is cancelled by any event, and by any transition that does not set
//!   it again. The *state timeout* ([`Transition::state_timeout`]) is cancelled by a
//!   change of state. *Generic timeouts* ([`Transition::timeout`], OTP's
//!   `{timeout, Name}`) run until they fire or are cancelled. Setting a running one
//!   restarts it; each can be updated (its content changed; with none running, its
//!   event comes at once, OTP's `update`) or cancelled; the last action of each kind
//!   in a transition wins. A zero time makes a timeout due at once: it still runs (a
//!   cancel, an update, a restart or, for the state timeout, a change of state acts on
//!   it) and fires after the queued events and before the mailbox (OTP's `t0q`); a
//!   zero event timeout so fires only if no event was queued. A cancelled timeout never
//!   fires, even one whose message had already been sent (its late message is
//!   dropped).
//! * **Fairness.** Each event handled from the machine's own queue draws on its turn's
//!   budget, as a receive does: a machine that keeps inserting events yields its
//!   worker, and an exit signal reaches it.
//! * **Replies.** A call's [`ReplyTo`] is answered now
//!   ([`Transition::reply`], or `from.reply(v)` in the handler) or kept and answered
//!   from a later state (a deferred reply, `gen_statem:reply/2`).
//! * **Start, stop, crash, parent exit** are the server's (see [`server`]): the start
//!   returns once `init` has finished, *before* the first state's enter call and the
//!   initial actions run (they run before any message); `init` returning `Err` or
//!   [`Transition::stop`] fails the start; `terminate` runs with the state on a stop,
//!   a crash of a handler and the parent's exit. A postpone among the initial actions
//!   is dropped (there is no event yet), as OTP's.
//!
//! # Differences from OTP
//!
//! * Typed: calls, casts and plain messages have a type each; [`Event`] is their sum
//!   with the timeouts' and the internal events. Timeouts and inserted internal events
//!   carry the machine's [`StateMachine::Internal`] type; generic timeouts are named by
//!   strings ([`TimeoutName`]).
//! * A postponed event is handed back to [`Transition::postpone`] by value: the handler
//!   owns the event (and a call's reply handle) until it gives it back.
//! * The enter call is a callback of its own ([`StateMachine::state_enter`]) rather
//!   than an `enter` event; by default it does nothing, which is OTP without
//!   `state_enter` in the callback mode.
//! * No `hibernate`, no `code_change`, no absolute-time timeouts (`{abs, true}`).
//!   [`sys`](crate::sys) works on a state machine as on a server: `get_state` gives
//!   `(state, data)`, trace events name the mailbox's messages (not OTP's state
//!   changes). A call can be inserted again
//!   (`next_event(Event::Call(request))`, handing back one the machine received), but
//!   not made up: a reply handle comes only from a caller.
//! * The handlers are `async`, as a server's are; the enter call is not (it decides
//!   what to set up; waiting work goes in an event).
//! * A failed start exits `Normal` whatever the reason `init` gave (as a server's:
//!   OTP 26's `{error, Reason}`), where OTP's `{stop, Reason}` from `init` exits with
//!   `Reason`; the start returns the reason either way.
//! * A panic in an enter call runs `terminate` with the state entered, where OTP's
//!   `terminate` gets the state left; a transition with two postpones keeps the last
//!   (OTP has one postpone flag), dropping the other event (a call's caller then waits
//!   out its timeout).
//!
//! [`ServerRef`]: crate::server::ServerRef
//! [`ChildSpec::server`]: crate::supervisor::ChildSpec::server
//! [`server`]: crate::server

mod machine;
mod timeouts;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::exit::ExitReason;
use crate::monitor::Down;
use crate::process::Context;
use crate::server::{self, Name, ReplyTo, ServerContext, ServerRef};
use crate::signal::Exit;

#[doc(hidden)]
pub use machine::Machine;
pub use timeouts::TimeoutTag;
use timeouts::{Kind, Setting};

/// The context a state machine's callbacks get (its process's context).
pub type StatemContext<S> = ServerContext<Machine<S>>;

/// A handle to a running state machine: the [`ServerRef`] of its [`Machine`]. Call,
/// cast, stop and monitor it as a server.
pub type StatemRef<S> = ServerRef<Machine<S>>;

/// The name of a generic timeout (OTP's `{timeout, Name}`).
pub type TimeoutName = Cow<'static, str>;

/// A state machine's behaviour (Erlang's `gen_statem` callback module, in the
/// `handle_event_function` callback mode). See the [module docs](self).
pub trait StateMachine: Sized + Send + 'static {
    /// What `init` is started with.
    type Args: Send + 'static;
    /// The state (of any type: an enum of state names, or one with data in it). Two
    /// states that are `==` are the same state: a transition between them is no
    /// change (no enter call, postponed events stay, the state timeout runs on).
    /// `Sync`, because the handlers' futures hold a reference to it across awaits.
    type State: PartialEq + Send + Sync + 'static;
    /// The requests of calls, each carrying the [`ReplyTo`] of its own reply type, as
    /// a server's do.
    type Call: Send + 'static;
    /// The messages of casts.
    type Cast: Send + 'static;
    /// Other messages the machine accepts.
    type Info: Send + 'static;
    /// What the machine tells itself: the content of its timeouts and of the internal
    /// events it inserts. `()` if it needs none.
    type Internal: Send + 'static;

    /// Builds the data and chooses the first state: `Ok((data, Transition::next(first)))`,
    /// with any initial actions (timeouts, inserted events). The start returns when
    /// this finishes; `Err(reason)` or [`Transition::stop`] fails it.
    fn init(
        args: Self::Args,
        cx: &mut StatemContext<Self>,
    ) -> impl Future<Output = Result<(Self, Transition<Self>), ExitReason>> + Send;

    /// Handles an event in `state`.
    fn handle_event(
        &mut self,
        state: &Self::State,
        event: Event<Self>,
        cx: &mut StatemContext<Self>,
    ) -> impl Future<Output = Transition<Self>> + Send;

    /// Runs when `state` is entered from `old` (at the start, `old` is `state`), and
    /// again on [`Transition::repeat`]. May keep or repeat the state, or stop, with
    /// timeouts and replies; see the module docs. Not `async`: work that must wait
    /// belongs in an event, e.g. a zero state timeout set here
    /// (`Transition::keep().state_timeout(Duration::ZERO, ..)`), which comes after the
    /// events already due and before the mailbox, and not at all if the state changes
    /// first. The default does nothing.
    fn state_enter(
        &mut self,
        old: &Self::State,
        state: &Self::State,
        cx: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        let _ = (old, state, cx);
        Transition::keep()
    }

    /// Runs before the machine exits with `reason` (stop, handler panic, parent exit).
    /// The default does nothing.
    fn terminate(
        &mut self,
        reason: &ExitReason,
        state: &Self::State,
        cx: &mut StatemContext<Self>,
    ) -> impl Future<Output = ()> + Send {
        let _ = (reason, state, cx);
        async {}
    }

    /// Writes the state and data for [`sys::get_status`](crate::sys::get_status) (OTP's
    /// `format_status/1`). The default writes their type names; `Debug` ones write
    /// themselves: `write!(f, "{state:?} {self:?}")`.
    ///
    /// See [`Machine::state`] for an example of `sys` on a state machine.
    fn format_status(&self, state: &Self::State, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = state;
        write!(
            f,
            "state: {}, data: {}",
            std::any::type_name::<Self::State>(),
            std::any::type_name::<Self>()
        )
    }

    /// Starts this machine, not linked (`gen_statem:start/3`). Not meant to be
    /// overridden.
    fn start<M: Send + 'static>(
        cx: &Context<M>,
        args: Self::Args,
    ) -> impl Future<Output = Result<StatemRef<Self>, ExitReason>> + Send + use<Self, M> {
        server::start::<Machine<Self>, M>(cx, args)
    }

    /// Starts this machine linked to the caller (`gen_statem:start_link/3`). Not meant
    /// to be overridden.
    ///
    /// See the [module docs](self) for an example.
    fn start_link<M: Send + 'static>(
        cx: &Context<M>,
        args: Self::Args,
    ) -> impl Future<Output = Result<StatemRef<Self>, ExitReason>> + Send + use<Self, M> {
        server::start_link::<Machine<Self>, M>(cx, args)
    }

    /// Starts this machine with `options` (`gen_statem:start/4` with
    /// `{spawn_opt, ...}`): linked if [`SpawnOptions::link`](crate::SpawnOptions::link),
    /// with a bounded mailbox if
    /// [`SpawnOptions::bounded_mailbox`](crate::SpawnOptions::bounded_mailbox) (a call
    /// to a full machine fails with [`CallError::Full`](crate::server::CallError::Full)).
    /// See [`server::start_opt`]. Not meant to be overridden.
    fn start_opt<M: Send + 'static>(
        cx: &Context<M>,
        args: Self::Args,
        options: crate::SpawnOptions,
    ) -> impl Future<Output = Result<StatemRef<Self>, ExitReason>> + Send + use<Self, M> {
        server::start_opt::<Machine<Self>, M>(cx, args, options)
    }

    /// Starts this machine linked to the caller and registered as `name`
    /// (`gen_statem:start_link({local, Name}, ...)`); call it by name with
    /// [`Name::call`]. Not meant to be overridden.
    fn start_link_named<M: Send + 'static, N: Into<Name<Machine<Self>>>>(
        cx: &Context<M>,
        name: N,
        args: Self::Args,
    ) -> impl Future<Output = Result<StatemRef<Self>, ExitReason>> + Send + use<Self, M, N> {
        server::start_link_named::<Machine<Self>, M, N>(cx, name, args)
    }
}

/// An event for [`StateMachine::handle_event`] (OTP's event type and content).
pub enum Event<S: StateMachine> {
    /// A call (`{call, From}`); the request carries its reply handle.
    Call(S::Call),
    /// A cast (`cast`).
    Cast(S::Cast),
    /// A plain message (`info`).
    Info(S::Info),
    /// A trapped exit signal, from a process other than the parent (`info`). Boxed,
    /// as in [`ServerMsg`](crate::server::ServerMsg): rare, and it would double the
    /// size of every event.
    Exit(Box<Exit>),
    /// A monitor set by the machine fired (`info`). Boxed, as `Exit`.
    Down(Box<Down>),
    /// An event the machine inserted ([`Transition::next_event`]; `internal`).
    Internal(S::Internal),
    /// The state timeout fired (`state_timeout`).
    StateTimeout(S::Internal),
    /// The event timeout fired: no event came in time (`timeout`).
    EventTimeout(S::Internal),
    /// The generic timeout of this name fired (`{timeout, Name}`).
    Timeout(TimeoutName, S::Internal),
}

impl<S: StateMachine> fmt::Debug for Event<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Call(_) => f.write_str("Call(..)"),
            Event::Cast(_) => f.write_str("Cast(..)"),
            Event::Info(_) => f.write_str("Info(..)"),
            Event::Exit(e) => f.debug_tuple("Exit").field(e).finish(),
            Event::Down(d) => f.debug_tuple("Down").field(d).finish(),
            Event::Internal(_) => f.write_str("Internal(..)"),
            Event::StateTimeout(_) => f.write_str("StateTimeout(..)"),
            Event::EventTimeout(_) => f.write_str("EventTimeout(..)"),
            Event::Timeout(name, _) => write!(f, "Timeout({name:?}, ..)"),
        }
    }
}

/// Where a transition goes.
enum Target<S: StateMachine> {
    Keep,
    Repeat,
    Next(S::State),
    Stop(ExitReason),
}

/// One action of a transition, in the order given.
enum Action<S: StateMachine> {
    Postpone(Event<S>),
    NextEvent(Event<S>),
    Timeout(Kind, Setting<S::Internal>),
}

/// What a handler returns: where the machine goes, and the actions on the way (OTP's
/// `next_state`/`keep_state`/`repeat_state`/`stop` with their action lists). Built by
/// its constructors and builder methods:
///
/// ```
/// # use std::time::Duration;
/// # use otter::statem::{Event, StateMachine, StatemContext, Transition};
/// # use otter::ExitReason;
/// # struct M;
/// # #[derive(PartialEq)] enum S { A, B }
/// # impl StateMachine for M {
/// #     type Args = (); type State = S; type Call = (); type Cast = (); type Info = (); type Internal = &'static str;
/// #     async fn init(_: (), _: &mut StatemContext<Self>) -> Result<(Self, Transition<Self>), ExitReason> { Ok((M, Transition::next(S::A))) }
/// #     async fn handle_event(&mut self, _: &S, event: Event<Self>, _: &mut StatemContext<Self>) -> Transition<Self> {
/// Transition::next(S::B)
///     .state_timeout(Duration::from_secs(5), "no answer")
///     .timeout("heartbeat", Duration::from_secs(1), "beat")
///     .next_event(Event::Internal("connect"))
/// #     }
/// # }
/// ```
#[must_use = "a transition does nothing until returned from a handler"]
pub struct Transition<S: StateMachine> {
    target: Target<S>,
    actions: Vec<Action<S>>,
}

impl<S: StateMachine> fmt::Debug for Transition<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match &self.target {
            Target::Keep => "keep",
            Target::Repeat => "repeat",
            Target::Next(_) => "next",
            Target::Stop(_) => "stop",
        };
        f.debug_struct("Transition")
            .field("target", &target)
            .field("actions", &self.actions.len())
            .finish()
    }
}

impl<S: StateMachine> Transition<S> {
    fn to(target: Target<S>) -> Self {
        Transition {
            target,
            actions: Vec::new(),
        }
    }

    /// Go to `state` (`next_state`): a change of state unless it is `==` to the
    /// current one.
    pub fn next(state: S::State) -> Self {
        Transition::to(Target::Next(state))
    }

    /// Stay in the current state (`keep_state`).
    pub fn keep() -> Self {
        Transition::to(Target::Keep)
    }

    /// Stay, but enter the current state again: its enter call runs, and nothing else
    /// of a change happens (`repeat_state`).
    pub fn repeat() -> Self {
        Transition::to(Target::Repeat)
    }

    /// Run `terminate(reason)`, then exit with `reason` (`stop`). Replies added with
    /// [`Transition::reply`] are sent first (`stop_and_reply`); other actions are
    /// dropped.
    pub fn stop(reason: ExitReason) -> Self {
        Transition::to(Target::Stop(reason))
    }

    /// Answers a call (`{reply, From, Reply}`), now: the same as `to.reply(value)`.
    pub fn reply<R: Send + 'static>(self, to: ReplyTo<R>, value: R) -> Self {
        to.reply(value);
        self
    }

    /// Postpones `event` (the one being handled, handed back) until the state changes
    /// (`postpone`). Not allowed in an enter call.
    pub fn postpone(mut self, event: Event<S>) -> Self {
        self.actions.push(Action::Postpone(event));
        self
    }

    /// Inserts `event` to be handled next, before the mailbox (`next_event`); several
    /// are handled in the order given. Not allowed in an enter call.
    pub fn next_event(mut self, event: Event<S>) -> Self {
        self.actions.push(Action::NextEvent(event));
        self
    }

    fn timeout_action(mut self, kind: Kind, setting: Setting<S::Internal>) -> Self {
        self.actions.push(Action::Timeout(kind, setting));
        self
    }

    /// (Re)starts the state timeout: [`Event::StateTimeout`] with `content` after
    /// `after`, unless the state changes first (`{state_timeout, Time, Content}`).
    pub fn state_timeout(self, after: Duration, content: S::Internal) -> Self {
        self.timeout_action(Kind::State, Setting::After(after, content))
    }

    /// Changes what the running state timeout delivers; with none running, its event
    /// comes at once (`{state_timeout, update, Content}`).
    pub fn update_state_timeout(self, content: S::Internal) -> Self {
        self.timeout_action(Kind::State, Setting::Update(content))
    }

    /// Cancels the state timeout (`{state_timeout, cancel}`).
    pub fn cancel_state_timeout(self) -> Self {
        self.timeout_action(Kind::State, Setting::Cancel)
    }

    /// Starts the event timeout: [`Event::EventTimeout`] with `content` after `after`,
    /// unless an event comes first (`{timeout, Time, Content}`).
    pub fn event_timeout(self, after: Duration, content: S::Internal) -> Self {
        self.timeout_action(Kind::Event, Setting::After(after, content))
    }

    /// `{timeout, update, Content}`: the event being handled has already cancelled the
    /// event timeout, so, as in OTP, this makes it due at once with `content`: it fires
    /// after the queued events unless one of them cancels it first.
    pub fn update_event_timeout(self, content: S::Internal) -> Self {
        self.timeout_action(Kind::Event, Setting::Update(content))
    }

    /// Cancels the event timeout (`{timeout, cancel}`): what a transition that does not
    /// set it does anyway, written out.
    pub fn cancel_event_timeout(self) -> Self {
        self.timeout_action(Kind::Event, Setting::Cancel)
    }

    /// (Re)starts the generic timeout `name`: [`Event::Timeout`] with `content` after
    /// `after`, whatever happens meanwhile (`{{timeout, Name}, Time, Content}`).
    pub fn timeout(
        self,
        name: impl Into<TimeoutName>,
        after: Duration,
        content: S::Internal,
    ) -> Self {
        self.timeout_action(Kind::Generic(name.into()), Setting::After(after, content))
    }

    /// Changes what the running generic timeout `name` delivers; with none running,
    /// its event comes at once (`{{timeout, Name}, update, Content}`).
    pub fn update_timeout(self, name: impl Into<TimeoutName>, content: S::Internal) -> Self {
        self.timeout_action(Kind::Generic(name.into()), Setting::Update(content))
    }

    /// Cancels the generic timeout `name` (`{{timeout, Name}, cancel}`).
    pub fn cancel_timeout(self, name: impl Into<TimeoutName>) -> Self {
        self.timeout_action(Kind::Generic(name.into()), Setting::Cancel)
    }
}

/// Why a state machine exited on its own: a callback returned what its place does not
/// allow (OTP's `bad_return_from_init`, `bad_state_enter_return_from_state_function`,
/// `bad_action_from_state_function`). The reason inside [`ExitReason::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatemError {
    /// `init` returned `keep` or `repeat`: there is no state to keep yet.
    NoFirstState,
    /// An enter call returned [`Transition::next`] to another state.
    EnterChangedState,
    /// An enter call postponed an event or inserted one.
    EnterActionNotAllowed,
}

impl fmt::Display for StatemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StatemError::NoFirstState => "init must return Transition::next(first state)",
            StatemError::EnterChangedState => "a state enter call may not change the state",
            StatemError::EnterActionNotAllowed => {
                "a state enter call may not postpone or insert events"
            }
        })
    }
}

impl std::error::Error for StatemError {}
