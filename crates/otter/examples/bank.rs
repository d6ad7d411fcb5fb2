//! A bank account server under a supervisor: the classic `gen_server` example from
//! *Programming Erlang* and the OTP design principles, in otter.
//!
//! ```text
//! cargo run --example bank
//! ```
//!
//! The tree: `bank_sup` (one_for_one) supervises the `bank` server (registered as
//! "bank") and an `auditor` that monitors it. Clients call the bank by its name, as
//! `gen_server:call(bank, Request)` does: the name is looked up at each call. When the
//! bank crashes, the supervisor restarts it under the same name; its accounts are gone
//! (state lives in the process, as in Erlang: persist what must survive), and callers
//! that were waiting get the crash as an error instead of hanging.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

use otter::server::{CallError, Flow, Info, Name, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorRef, SupervisorSpec};
use otter::{Context, ExitReason, Runtime};

/// The bank's registered name: `gen_server:start_link({local, bank}, ...)`.
const BANK: Name<Bank> = Name::new("bank");
const AUDITOR: Name<Auditor> = Name::new("auditor");

/// The bank's state: balances by account name.
struct Bank {
    accounts: HashMap<String, u64>,
}

/// Why a request on an account failed.
#[derive(Debug, PartialEq)]
enum Refused {
    AlreadyExists,
    NoSuchAccount,
    Insufficient { balance: u64 },
}

/// Requests that need an answer (`gen_server:call`); each carries the handle its answer
/// goes through, typed by what that request returns.
#[derive(Debug)]
enum Request {
    Open(String, ReplyTo<Result<(), Refused>>),
    Deposit(String, u64, ReplyTo<Result<u64, Refused>>),
    Withdraw(String, u64, ReplyTo<Result<u64, Refused>>),
    Balance(String, ReplyTo<Option<u64>>),
    /// A bug: integer overflow panics the server (and only the server).
    Overflow(String, ReplyTo<u64>),
}

/// Fire-and-forget messages (`gen_server:cast`).
#[derive(Debug)]
enum Notice {
    InterestPercent(u64),
}

impl Server for Bank {
    type Args = ();
    type Call = Request;
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

    async fn handle_call(&mut self, request: Request, _: &mut ServerContext<Self>) -> Flow {
        match request {
            Request::Open(who, from) => from.reply(match self.accounts.entry(who) {
                Entry::Occupied(_) => Err(Refused::AlreadyExists),
                Entry::Vacant(v) => {
                    v.insert(0);
                    Ok(())
                }
            }),
            Request::Deposit(who, amount, from) => from.reply(match self.accounts.get_mut(&who) {
                Some(b) => {
                    *b += amount;
                    Ok(*b)
                }
                None => Err(Refused::NoSuchAccount),
            }),
            Request::Withdraw(who, amount, from) => from.reply(match self.accounts.get_mut(&who) {
                Some(b) if *b >= amount => {
                    *b -= amount;
                    Ok(*b)
                }
                Some(b) => Err(Refused::Insufficient { balance: *b }),
                None => Err(Refused::NoSuchAccount),
            }),
            Request::Balance(who, from) => from.reply(self.accounts.get(&who).copied()),
            Request::Overflow(who, from) => {
                let b = self.accounts.get(&who).copied().unwrap_or(u64::MAX);
                from.reply(b.checked_add(u64::MAX).expect("balance overflow"))
            }
        }
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

/// An auditor: monitors the bank and reports each of its exits.
struct Auditor {
    downs: u32,
}

/// The auditor's one request: how many bank exits it saw.
struct Downs(ReplyTo<u32>);

impl Server for Auditor {
    type Args = ();
    type Call = Downs;
    type Cast = ();
    type Info = ();

    async fn init(_: (), cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        // Started after the bank (a supervisor starts its children in order).
        if let Some(bank) = BANK.whereis(cx) {
            cx.monitor(bank);
        }
        Ok(Auditor { downs: 0 })
    }

    async fn handle_call(&mut self, Downs(from): Downs, _: &mut ServerContext<Self>) -> Flow {
        from.reply(self.downs);
        Flow::Continue
    }

    async fn handle_info(&mut self, info: Info<()>, cx: &mut ServerContext<Self>) -> Flow {
        if let Info::Down(down) = info {
            self.downs += 1;
            println!("  auditor: bank {} went down: {}", down.pid, down.reason);
            // Watch the restarted bank. The supervisor got the bank's exit signal before
            // this `Down` was sent, so it answers after restarting it.
            let sup = supervisor::whereis(cx, "bank_sup").expect("our supervisor runs");
            if let Ok(Some(bank)) = sup.child::<Bank>("bank").await {
                cx.monitor(bank);
            }
        }
        Flow::Continue
    }
}

fn main() {
    let rt = Runtime::new();
    rt.block_on(|cx: Context<()>| async move {
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(3, Duration::from_secs(5))
            .child(ChildSpec::named_server("bank", BANK, || ()))
            .child(ChildSpec::named_server("auditor", AUDITOR, || ()));
        let sup: SupervisorRef = supervisor::start_link_named(&cx, "bank_sup", spec)
            .await
            .expect("the tree starts");
        println!("tree up: {:?}", sup.which_children().await.unwrap());

        let alice = || "alice".to_string();
        let open = BANK.call(&cx, |r| Request::Open(alice(), r)).await;
        println!("open alice -> {open:?}");
        let deposit = BANK.call(&cx, |r| Request::Deposit(alice(), 100, r)).await;
        println!("deposit 100 -> {deposit:?}");
        BANK.cast(&cx, Notice::InterestPercent(5));
        let withdraw = BANK.call(&cx, |r| Request::Withdraw(alice(), 30, r)).await;
        println!("withdraw 30 -> {withdraw:?}");
        let withdraw = BANK.call(&cx, |r| Request::Withdraw(alice(), 500, r)).await;
        println!("withdraw 500 -> {withdraw:?}");
        let balance = BANK.call(&cx, |r| Request::Balance("bob".into(), r)).await;
        println!("balance bob -> {balance:?}");

        println!("a request that hits a bug:");
        let crashed = BANK.call(&cx, |r| Request::Overflow(alice(), r)).await;
        assert!(matches!(
            crashed,
            Err(CallError::Exit(ExitReason::Panic(_)))
        ));
        println!("  caller got {crashed:?}");

        // The supervisor restarts the bank under its name. It heard of the crash before
        // this request, so it answers with the new bank (typed by the child's spec).
        let again = sup.child::<Bank>("bank").await.unwrap().expect("restarted");
        println!("restarted as {:?}", again.pid());
        let balance = BANK.call(&cx, |r| Request::Balance(alice(), r)).await;
        println!("balance alice -> {balance:?} (state was in the crashed process)");
        let open = again.call(|r| Request::Open(alice(), r)).await;
        println!("open alice -> {open:?}");

        let downs = AUDITOR.call(&cx, Downs).await;
        println!("auditor saw {downs:?} bank exit(s)");

        sup.server().stop(ExitReason::Normal, None).await.unwrap();
        println!(
            "tree stopped; bank registered: {}",
            BANK.whereis(&cx).is_some()
        );
    })
    .expect("the example runs to the end");
}
