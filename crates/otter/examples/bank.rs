//! A bank account server under a supervisor: the classic `gen_server` example from
//! *Programming Erlang* and the OTP design principles, in otter.
//!
//! ```text
//! cargo run --example bank
//! ```
//!
//! The tree: `bank_sup` (one_for_one) supervises the `bank` server (registered as
//! "bank") and an `auditor` that monitors it. Clients find the bank by its name. When the
//! bank crashes, the supervisor restarts it under the same name; its accounts are gone
//! (state lives in the process, as in Erlang: persist what must survive), and callers
//! that were waiting get the crash as an error instead of hanging.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

use otter::server::{self, CallError, Flow, Info, ReplyTo, Server, ServerContext, ServerRef};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, ExitReason, Runtime};

/// The bank's state: balances by account name.
struct Bank {
    accounts: HashMap<String, u64>,
}

/// Requests that need an answer (`gen_server:call`).
#[derive(Debug)]
enum Request {
    Open(String),
    Deposit(String, u64),
    Withdraw(String, u64),
    Balance(String),
    /// A bug: integer overflow panics the server (and only the server).
    Overflow(String),
}

/// Answers.
#[derive(Debug, PartialEq)]
enum Reply {
    Opened,
    AlreadyExists,
    Balance(u64),
    NoSuchAccount,
    Insufficient { balance: u64 },
}

/// Fire-and-forget messages (`gen_server:cast`).
#[derive(Debug)]
enum Notice {
    InterestPercent(u64),
}

impl Server for Bank {
    type Args = ();
    type Call = Request;
    type Reply = Reply;
    type Cast = Notice;
    type Info = ();

    async fn init(_: (), cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        // Trap exits so that the supervisor's shutdown runs `terminate`.
        cx.trap_exit(true);
        println!("  bank: started");
        Ok(Bank {
            accounts: HashMap::new(),
        })
    }

    async fn handle_call(
        &mut self,
        request: Request,
        from: ReplyTo<Reply>,
        _: &mut ServerContext<Self>,
    ) -> Flow {
        let reply = match request {
            Request::Open(who) => match self.accounts.entry(who) {
                Entry::Occupied(_) => Reply::AlreadyExists,
                Entry::Vacant(v) => {
                    v.insert(0);
                    Reply::Opened
                }
            },
            Request::Deposit(who, amount) => match self.accounts.get_mut(&who) {
                Some(b) => {
                    *b += amount;
                    Reply::Balance(*b)
                }
                None => Reply::NoSuchAccount,
            },
            Request::Withdraw(who, amount) => match self.accounts.get_mut(&who) {
                Some(b) if *b >= amount => {
                    *b -= amount;
                    Reply::Balance(*b)
                }
                Some(b) => Reply::Insufficient { balance: *b },
                None => Reply::NoSuchAccount,
            },
            Request::Balance(who) => match self.accounts.get(&who) {
                Some(b) => Reply::Balance(*b),
                None => Reply::NoSuchAccount,
            },
            Request::Overflow(who) => {
                let b = self.accounts.get(&who).copied().unwrap_or(u64::MAX);
                Reply::Balance(b.checked_add(u64::MAX).expect("balance overflow"))
            }
        };
        from.reply(reply);
        Flow::Continue
    }

    async fn handle_cast(&mut self, notice: Notice, _: &mut ServerContext<Self>) -> Flow {
        match notice {
            Notice::InterestPercent(p) => {
                for b in self.accounts.values_mut() {
                    *b += *b * p / 100;
                }
            }
        }
        Flow::Continue
    }

    async fn terminate(&mut self, reason: &ExitReason, _: &mut ServerContext<Self>) {
        println!(
            "  bank: terminating ({reason}), {} accounts lost",
            self.accounts.len()
        );
    }
}

/// An auditor: monitors the bank (found by name) and reports each of its exits.
struct Auditor {
    downs: u32,
}

impl Server for Auditor {
    type Args = ();
    type Call = ();
    type Reply = u32;
    type Cast = ();
    type Info = ();

    async fn init(_: (), cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        if let Some(bank) = server::whereis::<Bank, _>(cx, "bank") {
            cx.monitor(bank);
        }
        Ok(Auditor { downs: 0 })
    }

    async fn handle_call(
        &mut self,
        _: (),
        from: ReplyTo<u32>,
        _: &mut ServerContext<Self>,
    ) -> Flow {
        from.reply(self.downs);
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<()>, cx: &mut ServerContext<Self>) -> Flow {
        if let Info::Down(down) = info {
            self.downs += 1;
            println!("  auditor: bank {} went down: {}", down.pid, down.reason);
            // Watch the restarted bank (the supervisor registers it again).
            for _ in 0..100 {
                if let Some(bank) = server::whereis::<Bank, _>(cx, "bank")
                    && bank.id() != down.pid
                {
                    cx.monitor(bank);
                    break;
                }
                cx.sleep(Duration::from_millis(1)).await;
            }
        }
        Flow::Continue
    }
}

fn bank(cx: &Context<()>) -> ServerRef<Bank> {
    server::whereis::<Bank, _>(cx, "bank").expect("the bank is registered")
}

fn main() {
    let rt = Runtime::new();
    rt.block_on(|cx: Context<()>| async move {
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(3, Duration::from_secs(5))
            .child(ChildSpec::named_server::<Bank>("bank", "bank", || ()))
            .child(ChildSpec::named_server::<Auditor>(
                "auditor",
                "auditor",
                || (),
            ));
        let sup = supervisor::start_link_named(&cx, "bank_sup", spec)
            .await
            .expect("the tree starts");
        println!("tree up: {:?}", sup.which_children().await.unwrap());

        let b = bank(&cx);
        println!(
            "open alice -> {:?}",
            b.call(Request::Open("alice".into())).await
        );
        println!(
            "deposit 100 -> {:?}",
            b.call(Request::Deposit("alice".into(), 100)).await
        );
        b.cast(Notice::InterestPercent(5));
        println!(
            "withdraw 30 -> {:?}",
            b.call(Request::Withdraw("alice".into(), 30)).await
        );
        println!(
            "withdraw 500 -> {:?}",
            b.call(Request::Withdraw("alice".into(), 500)).await
        );
        println!(
            "balance bob -> {:?}",
            b.call(Request::Balance("bob".into())).await
        );

        println!("a request that hits a bug:");
        let crashed = b.call(Request::Overflow("alice".into())).await;
        assert!(matches!(
            crashed,
            Err(CallError::Exit(ExitReason::Panic(_)))
        ));
        println!("  caller got {crashed:?}");

        // The supervisor restarts the bank under its name; wait for the new one.
        let mut again = b;
        while again == b {
            cx.sleep(Duration::from_millis(1)).await;
            if let Some(s) = server::whereis::<Bank, _>(&cx, "bank") {
                again = s;
            }
        }
        println!("restarted as {:?}", again.pid());
        println!(
            "balance alice -> {:?} (state was in the crashed process)",
            again.call(Request::Balance("alice".into())).await
        );
        println!(
            "open alice -> {:?}",
            again.call(Request::Open("alice".into())).await
        );

        let auditor = server::whereis::<Auditor, _>(&cx, "auditor").unwrap();
        println!("auditor saw {:?} bank exit(s)", auditor.call(()).await);

        sup.server().stop(ExitReason::Normal, None).await.unwrap();
        println!(
            "tree stopped; bank registered: {}",
            server::whereis::<Bank, _>(&cx, "bank").is_some()
        );
    })
    .expect("the example runs to the end");
}
