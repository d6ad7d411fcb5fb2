//! A state machine's timeouts: the event timeout, the state timeout and the named
//! generic ones (`gen_statem`'s `timeout`, `state_timeout` and `{timeout, Name}`).
//!
//! # Invariants
//!
//! * At most one timer runs per kind (per name, for generic ones). Starting one of a
//!   kind that runs cancels the running one first.
//! * Each timer started gets a fresh sequence number, carried by its message
//!   ([`TimeoutTag`]). A message whose number is not that of a running timer is late:
//!   its timer was cancelled or restarted after the message had left the wheel, and it
//!   is dropped without being an event (OTP's late `{timeout, Ref, Msg}`). So a
//!   cancelled timeout never fires, whatever the race with its wheel.
//! * The content of a running timer lives here, not in its message, so that an update
//!   changes what the timeout delivers without touching the wheel.
//! * A timeout of zero time runs too, with no wheel entry: it waits in the zero queue
//!   (OTP's `t0q`), by sequence number, until the machine has no queued event left,
//!   and until then it is cancelled, updated or restarted like any other: an entry of
//!   the zero queue whose number no longer runs is skipped.

use std::collections::VecDeque;
use std::time::Duration;

use crate::process::TimerRef;
use crate::server::ServerMsg;
use crate::statem::{Event, StateMachine, StatemContext, TimeoutName};

/// The message a running timeout sends its machine: which timer it was. Only the
/// machine's own loop reads it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutTag(u64);

/// A timeout's kind, as an action names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Cancelled by any event (`timeout`).
    Event,
    /// Cancelled by a change of state (`state_timeout`).
    State,
    /// Cancelled only when asked (`{timeout, Name}`).
    Generic(TimeoutName),
}

/// What an action does to a timeout of its kind.
#[derive(Debug)]
pub(crate) enum Setting<C> {
    /// (Re)start it; zero makes it due at once (after the events already queued).
    After(Duration, C),
    /// Change what a running one delivers; with none running, it is due at once, as if
    /// it had just expired (OTP's `update`).
    Update(C),
    /// Stop it, if it runs (OTP's `cancel`, or a time of `infinity`).
    Cancel,
}

/// A running timeout, with what it will deliver: on the wheel, or due at once (in the
/// zero queue) when `timer` is `None`.
struct Running<C> {
    seq: u64,
    timer: Option<TimerRef>,
    content: C,
}

impl<C> Running<C> {
    fn stop(self) {
        if let Some(timer) = self.timer {
            timer.cancel();
        }
    }
}

/// The running timeouts of one machine.
pub(crate) struct Timeouts<C> {
    next_seq: u64,
    event: Option<Running<C>>,
    state: Option<Running<C>>,
    /// Few in practice: looked up by a linear search.
    generic: Vec<(TimeoutName, Running<C>)>,
    /// The sequence numbers of the zero-time timeouts, in the order they became due.
    zero: VecDeque<u64>,
}

impl<C> Default for Timeouts<C> {
    fn default() -> Self {
        Timeouts {
            next_seq: 0,
            event: None,
            state: None,
            generic: Vec::new(),
            zero: VecDeque::new(),
        }
    }
}

impl<C: Send + 'static> Timeouts<C> {
    /// Stops the event timeout, if it runs (the hot path of every transition).
    #[inline]
    pub(crate) fn cancel_event(&mut self) {
        // Looked at before it is taken: the common case writes nothing.
        if self.event.is_some()
            && let Some(running) = self.event.take()
        {
            running.stop();
        }
    }

    /// Stops the timer of `kind`, if it runs; a message of it already sent is late.
    pub(crate) fn cancel(&mut self, kind: &Kind) {
        if let Some(running) = self.take(kind) {
            running.stop();
        }
    }

    fn take(&mut self, kind: &Kind) -> Option<Running<C>> {
        match kind {
            Kind::Event => self.event.take(),
            Kind::State => self.state.take(),
            Kind::Generic(name) => {
                let i = self.generic.iter().position(|(n, _)| n == name)?;
                Some(self.generic.swap_remove(i).1)
            }
        }
    }

    fn slot(&mut self, kind: &Kind) -> Option<&mut Running<C>> {
        match kind {
            Kind::Event => self.event.as_mut(),
            Kind::State => self.state.as_mut(),
            Kind::Generic(name) => self
                .generic
                .iter_mut()
                .find(|(n, _)| n == name)
                .map(|(_, r)| r),
        }
    }

    /// Applies one transition's timeout actions, in order, the last of each kind
    /// winning (OTP: "the last of each kind wins").
    pub(crate) fn apply<S>(&mut self, mut settings: Vec<(Kind, Setting<C>)>, cx: &StatemContext<S>)
    where
        S: StateMachine<Internal = C>,
    {
        for i in 0..settings.len() {
            // A later action of the same kind overrides this one. Lists are short.
            if settings[i + 1..].iter().any(|(k, _)| *k == settings[i].0) {
                continue;
            }
            // Taken out in place: only later entries are looked at again.
            let kind = std::mem::replace(&mut settings[i].0, Kind::Event);
            let setting = std::mem::replace(&mut settings[i].1, Setting::Cancel);
            match setting {
                Setting::Cancel => self.cancel(&kind),
                Setting::After(after, content) => {
                    self.cancel(&kind);
                    self.start::<S>(kind, after, content, cx);
                }
                Setting::Update(content) => match self.slot(&kind) {
                    Some(running) => running.content = content,
                    None => self.start::<S>(kind, Duration::ZERO, content, cx),
                },
            }
        }
    }

    fn start<S>(&mut self, kind: Kind, after: Duration, content: C, cx: &StatemContext<S>)
    where
        S: StateMachine<Internal = C>,
    {
        self.next_seq += 1;
        let seq = self.next_seq;
        let timer = if after.is_zero() {
            self.zero.push_back(seq);
            None
        } else {
            Some(cx.send_after(cx.pid(), ServerMsg::Timeout(TimeoutTag(seq)), after))
        };
        let running = Running {
            seq,
            timer,
            content,
        };
        match kind {
            Kind::Event => self.event = Some(running),
            Kind::State => self.state = Some(running),
            Kind::Generic(name) => self.generic.push((name, running)),
        }
    }

    /// The event of the timer whose message this is, which stops running; `None` for a
    /// late message.
    pub(crate) fn fire<S>(&mut self, tag: TimeoutTag) -> Option<Event<S>>
    where
        S: StateMachine<Internal = C>,
    {
        self.take_seq(tag.0)
    }

    /// Whether a zero-time timeout may be due (one cancelled since is skipped later).
    #[inline]
    pub(crate) fn any_zero(&self) -> bool {
        !self.zero.is_empty()
    }

    /// The event of the first zero-time timeout still running, which stops running.
    pub(crate) fn next_zero<S>(&mut self) -> Option<Event<S>>
    where
        S: StateMachine<Internal = C>,
    {
        while let Some(seq) = self.zero.pop_front() {
            if let Some(event) = self.take_seq(seq) {
                return Some(event);
            }
        }
        None
    }

    /// The event of the running timeout numbered `seq`, taken out of the table.
    fn take_seq<S>(&mut self, seq: u64) -> Option<Event<S>>
    where
        S: StateMachine<Internal = C>,
    {
        let is = |r: &Option<Running<C>>| r.as_ref().is_some_and(|r| r.seq == seq);
        if is(&self.event) {
            return self.event.take().map(|r| Event::EventTimeout(r.content));
        }
        if is(&self.state) {
            return self.state.take().map(|r| Event::StateTimeout(r.content));
        }
        let i = self.generic.iter().position(|(_, r)| r.seq == seq)?;
        let (name, r) = self.generic.swap_remove(i);
        Some(Event::Timeout(name, r.content))
    }
}
