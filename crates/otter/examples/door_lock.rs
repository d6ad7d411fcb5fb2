//! The code lock of OTP's `gen_statem` user's guide, as an otter state machine: a door
//! that opens when the buttons spell its code and locks itself again after a while.
//!
//! ```text
//! cargo run --example door_lock
//! ```
//!
//! What it shows:
//! * per-state handlers (OTP's `state_functions` callback mode): `handle_event` matches
//!   on the state and hands each state to a method of its own;
//! * state enter calls: entering `Locked` clears the buttons and locks the door,
//!   entering `Open` unlocks it;
//! * a state timeout (the door locks itself again unless the state changes first) and
//!   an event timeout (half-typed buttons are forgotten when no button comes in time);
//! * a postponed event: a request to lock, made while the door is still opening, is
//!   handled once the door is open;
//! * calls typed per request, and a registered name.

use std::time::Duration;

use otter::server::{Name, ReplyTo};
use otter::statem::{Event, Machine, StateMachine, StatemContext, Transition};
use otter::{Context, ExitReason, Runtime};

/// The lock's registered name: anyone on the runtime can press its buttons.
const LOCK: Name<Machine<CodeLock>> = Name::new("code_lock");

/// How long the door stays open, and how long a half-typed code is kept.
const OPEN_TIME: Duration = Duration::from_millis(50);
const BUTTON_TIME: Duration = Duration::from_millis(30);

/// The data: the code, and the buttons pressed so far (newest last).
struct CodeLock {
    code: Vec<u8>,
    pressed: Vec<u8>,
}

/// The states. `Opening` is the motor's short run between `Locked` and `Open`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    Locked,
    Opening,
    Open,
}

/// The requests, each with the type of its answer.
enum Req {
    /// A button pressed; answers the state the door is in afterwards.
    Button(u8, ReplyTo<Door>),
    /// Lock now, whatever the state; answers once it is locked.
    Lock(ReplyTo<()>),
}

/// What the lock tells itself: its timeouts' and internal events' content.
#[derive(Debug)]
enum Tick {
    /// The door should lock again (the state timeout of `Open`).
    Relock,
    /// Forget the buttons pressed (the event timeout of `Locked`).
    ForgetButtons,
    /// The motor has finished opening the door.
    MotorDone,
}

impl StateMachine for CodeLock {
    type Args = Vec<u8>;
    type State = Door;
    type Call = Req;
    type Cast = ();
    type Info = ();
    type Internal = Tick;

    async fn init(
        code: Vec<u8>,
        _: &mut StatemContext<Self>,
    ) -> Result<(Self, Transition<Self>), ExitReason> {
        let lock = CodeLock {
            code,
            pressed: Vec::new(),
        };
        Ok((lock, Transition::next(Door::Locked)))
    }

    async fn handle_event(
        &mut self,
        state: &Door,
        event: Event<Self>,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        match state {
            Door::Locked => self.locked(event),
            Door::Opening => self.opening(event),
            Door::Open => self.open(event),
        }
    }

    fn state_enter(
        &mut self,
        _old: &Door,
        state: &Door,
        _: &mut StatemContext<Self>,
    ) -> Transition<Self> {
        match state {
            Door::Locked => {
                self.pressed.clear();
                println!("  [door] locked");
                Transition::keep()
            }
            // The motor runs for a moment; its end is an event like any other.
            Door::Opening => {
                Transition::keep().state_timeout(Duration::from_millis(5), Tick::MotorDone)
            }
            Door::Open => {
                println!("  [door] open");
                Transition::keep().state_timeout(OPEN_TIME, Tick::Relock)
            }
        }
    }

    async fn terminate(&mut self, reason: &ExitReason, state: &Door, _: &mut StatemContext<Self>) {
        println!("  [door] stopping in {state:?}: {reason:?}");
    }
}

impl CodeLock {
    fn locked(&mut self, event: Event<Self>) -> Transition<Self> {
        match event {
            Event::Call(Req::Button(b, from)) => {
                self.pressed.push(b);
                if self.pressed.ends_with(&self.code) {
                    Transition::next(Door::Opening).reply(from, Door::Opening)
                } else {
                    // Each button restarts the wait for the next one.
                    Transition::keep()
                        .reply(from, Door::Locked)
                        .event_timeout(BUTTON_TIME, Tick::ForgetButtons)
                }
            }
            Event::EventTimeout(Tick::ForgetButtons) => {
                println!("  [door] buttons forgotten: {:?}", self.pressed);
                self.pressed.clear();
                Transition::keep()
            }
            Event::Call(Req::Lock(from)) => Transition::keep().reply(from, ()),
            _ => Transition::keep(),
        }
    }

    fn opening(&mut self, event: Event<Self>) -> Transition<Self> {
        match event {
            Event::StateTimeout(Tick::MotorDone) => Transition::next(Door::Open),
            // Anything else waits until the door is open.
            other => Transition::keep().postpone(other),
        }
    }

    fn open(&mut self, event: Event<Self>) -> Transition<Self> {
        match event {
            Event::StateTimeout(Tick::Relock) => Transition::next(Door::Locked),
            Event::Call(Req::Lock(from)) => Transition::next(Door::Locked).reply(from, ()),
            Event::Call(Req::Button(_, from)) => Transition::keep().reply(from, Door::Open),
            _ => Transition::keep(),
        }
    }
}

fn main() {
    let rt = Runtime::new();
    let result = rt.block_on(|cx: Context<()>| async move {
        let lock = CodeLock::start_link_named(&cx, LOCK, vec![1, 2, 3]).await?;

        println!("a wrong code, then a pause: the buttons are forgotten");
        for b in [1, 2] {
            let door = LOCK.call(&cx, move |r| Req::Button(b, r)).await?;
            println!("press {b}: {door:?}");
        }
        cx.sleep(BUTTON_TIME * 2).await;

        println!("the right code opens the door, which locks itself again");
        for b in [1, 2, 3] {
            let door = LOCK.call(&cx, move |r| Req::Button(b, r)).await?;
            println!("press {b}: {door:?}");
        }
        cx.sleep(OPEN_TIME * 2).await;

        println!("open it again and lock it at once: the lock waits for the motor");
        for b in [1, 2, 3] {
            LOCK.call(&cx, move |r| Req::Button(b, r)).await?;
        }
        lock.call(Req::Lock).await?;
        println!("locked on request");

        lock.stop(ExitReason::Normal, None).await?;
        Ok::<(), ExitReason>(())
    });
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("door_lock: {e:?}"),
        Err(reason) => eprintln!("door_lock: the root process exited: {reason:?}"),
    }
}
