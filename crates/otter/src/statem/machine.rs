//! [`Machine`]: the server that runs a [`StateMachine`], its queues and its
//! timeouts (the rules are the module docs' of [`statem`](crate::statem)).

use std::collections::VecDeque;
use std::fmt;

use super::timeouts::{Kind, Setting, Timeouts};
use super::{
    Action, Event, StateMachine, StatemContext, StatemError, Target, TimeoutTag, Transition,
};
use crate::exit::ExitReason;
use crate::server::{Flow, Info, Server};

/// The server that runs a [`StateMachine`]: its data, its state, its queues and its
/// timeouts. Name it where a server type is wanted: `Name<Machine<S>>`,
/// `ChildSpec::server::<Machine<S>>`, `SupervisorRef::child::<Machine<S>>`.
pub struct Machine<S: StateMachine> {
    data: S,
    state: S::State,
    /// The first transition's actions, run after the start returned.
    first: Option<Vec<Action<S>>>,
    /// Events to handle before the mailbox: inserted, retried and zero-time ones.
    queue: VecDeque<Event<S>>,
    /// Postponed events, oldest first, retried at the next change of state.
    postponed: VecDeque<Event<S>>,
    timeouts: Timeouts<S::Internal>,
}

impl<S: StateMachine> fmt::Debug for Machine<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Machine")
            .field("queued", &self.queue.len())
            .field("postponed", &self.postponed.len())
            .finish_non_exhaustive()
    }
}

impl<S: StateMachine> Machine<S> {
    /// The current state: what [`sys::get_state_with`](crate::sys::get_state_with)
    /// reads of a state machine whose state or data is not `Clone`
    /// ([`sys::get_state`](crate::sys::get_state) gives `(state, data)` when both are).
    ///
    /// ```
    /// use otter::server::ReplyTo;
    /// use otter::statem::{Event, Machine, StateMachine, StatemContext, Transition};
    /// use otter::{Context, ExitReason, Runtime, sys};
    ///
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Switch { flips: u32 }
    /// #[derive(Clone, Debug, PartialEq)]
    /// enum Pos { Off, On }
    ///
    /// impl StateMachine for Switch {
    ///     type Args = (); type State = Pos; type Call = ReplyTo<()>; type Cast = (); type Info = (); type Internal = ();
    ///     async fn init(_: (), _: &mut StatemContext<Self>) -> Result<(Self, Transition<Self>), ExitReason> {
    ///         Ok((Switch { flips: 0 }, Transition::next(Pos::Off)))
    ///     }
    ///     async fn handle_event(&mut self, state: &Pos, event: Event<Self>, _: &mut StatemContext<Self>) -> Transition<Self> {
    ///         let Event::Call(from) = event else { return Transition::keep() };
    ///         self.flips += 1;
    ///         let next = if *state == Pos::Off { Pos::On } else { Pos::Off };
    ///         Transition::next(next).reply(from, ())
    ///     }
    /// }
    ///
    /// let rt = Runtime::new();
    /// let r = rt.block_on(|cx: Context<()>| async move {
    ///     let s = Switch::start_link(&cx, ()).await.unwrap();
    ///     s.call(|f| f).await.unwrap();
    ///     let both = sys::get_state(s).await.unwrap();
    ///     let flips = sys::get_state_with(s, |m: &Machine<Switch>| m.data().flips).await.unwrap();
    ///     (both, flips)
    /// });
    /// assert_eq!(r.unwrap(), ((Pos::On, Switch { flips: 1 }), 1));
    /// ```
    pub fn state(&self) -> &S::State {
        &self.state
    }

    /// The data (the [`StateMachine`]'s value).
    ///
    /// See [`Machine::state`] for an example.
    pub fn data(&self) -> &S {
        &self.data
    }

    /// Puts in a new state and data (`sys:replace_state/2`): no enter call, the queues
    /// and timeouts as they are, as OTP's `replace_state`.
    pub(crate) fn replace(&mut self, state: S::State, data: S) {
        self.state = state;
        self.data = data;
    }

    /// Handles `event`, then the queued events and the due zero-time timeouts, until
    /// none is left or a transition stops the machine. (A mailbox event cancels the
    /// event timeout: the transition it leads to does, before any timer could be seen.)
    async fn run(&mut self, mut event: Event<S>, cx: &mut StatemContext<S>) -> Flow {
        loop {
            let t = self.data.handle_event(&self.state, event, cx).await;
            if let Err(reason) = self.transition(t, cx) {
                return Flow::Stop(reason);
            }
            event = match self.next_internal() {
                Some(next) => next,
                None => return Flow::Continue,
            };
            // An internal event draws on the turn's budget as a receive does: a machine
            // that keeps inserting events still yields its worker, and an exit signal
            // (a supervisor's `kill`) still reaches it.
            if !crate::coop::consume_op() {
                cx.yield_now().await;
            }
        }
    }

    /// The next event to handle before the mailbox: a queued one, else a zero-time
    /// timeout that is still running (OTP's `t0q`).
    #[inline]
    fn next_internal(&mut self) -> Option<Event<S>> {
        if let Some(event) = self.queue.pop_front() {
            return Some(event);
        }
        if !self.timeouts.any_zero() {
            return None;
        }
        self.timeouts.next_zero::<S>()
    }

    /// Carries out a transition: its actions, the enter calls, then the queues and the
    /// timeouts, in OTP's order (module docs). `Err` is the reason to stop with.
    fn transition(
        &mut self,
        t: Transition<S>,
        cx: &mut StatemContext<S>,
    ) -> Result<(), ExitReason> {
        // The common case, a call answered in place: nothing to gather or enter.
        if t.actions.is_empty() && matches!(t.target, Target::Keep) {
            self.timeouts.cancel_event();
            return Ok(());
        }
        let mut steps = self.begin(t)?;
        if steps.enter {
            self.enter(&mut steps, cx)?;
        }
        self.finish(steps, cx);
        Ok(())
    }

    /// The first half of a transition: the actions gathered, the event timeout
    /// cancelled (any transition cancels it unless it sets it again), the state moved.
    fn begin(&mut self, t: Transition<S>) -> Result<Steps<S>, ExitReason> {
        self.timeouts.cancel_event();
        // None of these allocates unless the transition has actions of its kind.
        let mut steps = Steps {
            postponed: None,
            inserted: Vec::new(),
            timeouts: Vec::new(),
            old: None,
            enter: false,
        };
        for action in t.actions {
            match action {
                Action::Postpone(e) => steps.postponed = Some(e),
                Action::NextEvent(e) => steps.inserted.push(e),
                Action::Timeout(kind, setting) => steps.timeouts.push((kind, setting)),
            }
        }
        steps.enter = match t.target {
            Target::Stop(reason) => return Err(reason),
            Target::Keep => false,
            Target::Repeat => true,
            Target::Next(state) if state == self.state => false,
            Target::Next(state) => {
                steps.old = Some(std::mem::replace(&mut self.state, state));
                true
            }
        };
        Ok(steps)
    }

    /// The enter calls, until one keeps the state.
    fn enter(&mut self, steps: &mut Steps<S>, cx: &mut StatemContext<S>) -> Result<(), ExitReason> {
        while steps.enter {
            let from = steps.old.as_ref().unwrap_or(&self.state);
            let t = self.data.state_enter(from, &self.state, cx);
            for action in t.actions {
                match action {
                    Action::Timeout(kind, setting) => steps.timeouts.push((kind, setting)),
                    Action::Postpone(_) | Action::NextEvent(_) => {
                        return Err(ExitReason::error(StatemError::EnterActionNotAllowed));
                    }
                }
            }
            steps.enter = match t.target {
                Target::Stop(reason) => return Err(reason),
                Target::Keep => false,
                Target::Repeat => true,
                Target::Next(state) if state == self.state => false,
                Target::Next(_) => return Err(ExitReason::error(StatemError::EnterChangedState)),
            };
        }
        Ok(())
    }

    /// The second half: postponing, retrying on a change of state, inserting, and the
    /// timeouts (zero-time ones due after every queued event).
    fn finish(&mut self, steps: Steps<S>, cx: &StatemContext<S>) {
        if let Some(event) = steps.postponed {
            self.postponed.push_back(event);
        }
        if steps.old.is_some() {
            // Postponed events are retried, oldest first, ahead of those queued.
            let mut retried = std::mem::take(&mut self.postponed);
            retried.append(&mut self.queue);
            self.queue = retried;
            self.timeouts.cancel(&Kind::State);
        }
        for event in steps.inserted.into_iter().rev() {
            self.queue.push_front(event);
        }
        if !steps.timeouts.is_empty() {
            self.timeouts.apply::<S>(steps.timeouts, cx);
        }
    }
}

/// A transition between its two halves.
struct Steps<S: StateMachine> {
    postponed: Option<Event<S>>,
    inserted: Vec<Event<S>>,
    timeouts: Vec<(Kind, Setting<S::Internal>)>,
    /// The state left, if the state changed.
    old: Option<S::State>,
    /// Whether an enter call is due.
    enter: bool,
}

impl<S: StateMachine> Server for Machine<S> {
    type Args = S::Args;
    type Call = S::Call;
    type Cast = S::Cast;
    type Info = S::Info;

    async fn init(args: S::Args, cx: &mut StatemContext<S>) -> Result<Self, ExitReason> {
        crate::introspect::set_kind(cx.pid().id().0, crate::introspect::Kind::Statem);
        let (data, first) = S::init(args, cx).await?;
        let state = match first.target {
            Target::Next(state) => state,
            Target::Stop(reason) => return Err(reason),
            Target::Keep | Target::Repeat => {
                return Err(ExitReason::error(StatemError::NoFirstState));
            }
        };
        Ok(Machine {
            data,
            state,
            first: Some(first.actions),
            queue: VecDeque::new(),
            postponed: VecDeque::new(),
            timeouts: Timeouts::default(),
        })
    }

    /// OTP's `enter`: the first state's enter call and the initial actions, then the
    /// events they queued, all before the first message.
    async fn after_init(&mut self, cx: &mut StatemContext<S>) -> Flow {
        let mut actions = self.first.take().unwrap_or_default();
        // There is no event to postpone yet (OTP appends `{postpone, false}`).
        actions.retain(|a| !matches!(a, Action::Postpone(_)));
        let first = Transition {
            target: Target::Repeat,
            actions,
        };
        if let Err(reason) = self.transition(first, cx) {
            return Flow::Stop(reason);
        }
        match self.next_internal() {
            Some(event) => self.run(event, cx).await,
            None => Flow::Continue,
        }
    }

    fn handle_call(
        &mut self,
        request: S::Call,
        cx: &mut StatemContext<S>,
    ) -> impl Future<Output = Flow> + Send {
        self.run(Event::Call(request), cx)
    }

    fn handle_cast(
        &mut self,
        message: S::Cast,
        cx: &mut StatemContext<S>,
    ) -> impl Future<Output = Flow> + Send {
        self.run(Event::Cast(message), cx)
    }

    async fn handle_info(&mut self, info: Info<S::Info>, cx: &mut StatemContext<S>) -> Flow {
        let event = match info {
            Info::Message(m) => Event::Info(m),
            Info::Exit(e) => Event::Exit(Box::new(e)),
            Info::Down(d) => Event::Down(Box::new(d)),
        };
        self.run(event, cx).await
    }

    async fn handle_timeout(&mut self, tag: TimeoutTag, cx: &mut StatemContext<S>) -> Flow {
        match self.timeouts.fire::<S>(tag) {
            Some(event) => self.run(event, cx).await,
            // A late message of a cancelled timer: no event.
            None => Flow::Continue,
        }
    }

    async fn terminate(&mut self, reason: &ExitReason, cx: &mut StatemContext<S>) {
        self.data.terminate(reason, &self.state, cx).await;
    }

    fn format_status(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.data.format_status(&self.state, f)
    }
}
