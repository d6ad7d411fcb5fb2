//! otter's supervisor rules (OTP `supervisor`) swept over seeds under simulation: for
//! each strategy, a child crashed at a time and in an order drawn from the seed is
//! restarted with exactly the children the strategy names, the others stopped in
//! reverse start order and all restarted in start order; the restart intensity ends
//! the supervisor exactly when more restarts than allowed fall within the period, on
//! simulated time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::server::{Flow, ReplyTo, Server, ServerContext};
use otter::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
use otter::{Context, Down, Exit, ExitReason, ProcessId};

/// Seeds per sweep.
const SEEDS: u64 = 100;

/// What the intensity test's root hears: its supervisor's end, a child's.
#[derive(Debug)]
enum Signal {
    Exit(Exit),
    Down(#[allow(dead_code)] Down),
}

impl From<Exit> for Signal {
    fn from(e: Exit) -> Signal {
        Signal::Exit(e)
    }
}

impl From<Down> for Signal {
    fn from(d: Down) -> Signal {
        Signal::Down(d)
    }
}

type Log = Arc<Mutex<Vec<String>>>;

/// A child that logs its starts and its shutdowns, and crashes on a cast.
struct Child {
    id: &'static str,
    log: Log,
}

impl Server for Child {
    type Args = (&'static str, Log);
    type Call = ReplyTo<()>;
    type Cast = ();
    type Info = ();

    async fn init((id, log): Self::Args, cx: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        cx.trap_exit(true);
        log.lock().unwrap().push(format!("start {id}"));
        Ok(Child { id, log })
    }

    async fn handle_call(&mut self, r: ReplyTo<()>, _: &mut ServerContext<Self>) -> Flow {
        r.reply(());
        Flow::Continue
    }

    async fn handle_cast(&mut self, _: (), _: &mut ServerContext<Self>) -> Flow {
        panic!("planted crash of {}", self.id)
    }

    async fn terminate(&mut self, reason: &ExitReason, _: &mut ServerContext<Self>) {
        if *reason == ExitReason::Shutdown {
            self.log.lock().unwrap().push(format!("stop {}", self.id));
        }
    }
}

const IDS: [&str; 3] = ["a", "b", "c"];

fn tree(strategy: Strategy, log: &Log, intensity: u32, period: Duration) -> SupervisorSpec {
    IDS.iter().fold(
        SupervisorSpec::new(strategy).intensity(intensity, period),
        |spec, &id| {
            let log = log.clone();
            spec.child(ChildSpec::server::<Child>(id, move || (id, log.clone())))
        },
    )
}

async fn pids(sup: supervisor::SupervisorRef) -> Vec<Option<ProcessId>> {
    sup.which_children()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.pid)
        .collect()
}

/// One crash of a child drawn from the seed, at a time drawn from it: which children
/// the strategy restarts, and the order of the stops and starts.
fn strategy_rule(strategy: Strategy) -> impl Fn(&mut otter::sim::Simulation) {
    move |sim| {
        let victim = (sim.random() % 3) as usize;
        let at = Duration::from_millis(sim.random() % 1000);
        let log: Log = Arc::default();
        let l2 = log.clone();
        let (before, after) = sim
            .block_on(move |cx: Context<()>| async move {
                let spec = tree(strategy, &l2, 10, Duration::from_secs(5));
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                let before = pids(sup).await;
                l2.lock().unwrap().clear();
                cx.sleep(at).await;
                let child = sup.child::<Child>(IDS[victim]).await.unwrap().unwrap();
                child.cast(());
                cx.sleep(Duration::from_millis(100)).await;
                (before, pids(sup).await)
            })
            .unwrap();
        // Which the strategy restarts: the victim, and then none, all, or those after.
        let restarted: Vec<usize> = match strategy {
            Strategy::OneForOne => vec![victim],
            Strategy::OneForAll => vec![0, 1, 2],
            Strategy::RestForOne => (victim..3).collect(),
            _ => unreachable!(),
        };
        for i in 0..3 {
            assert!(after[i].is_some(), "{} runs", IDS[i]);
            assert_eq!(
                before[i] != after[i],
                restarted.contains(&i),
                "{:?}: {} restarted or kept",
                strategy,
                IDS[i]
            );
        }
        // The others it restarts stop in reverse start order, then all start in
        // start order.
        let mut expected: Vec<String> = restarted
            .iter()
            .rev()
            .filter(|&&i| i != victim)
            .map(|&i| format!("stop {}", IDS[i]))
            .collect();
        expected.extend(restarted.iter().map(|&i| format!("start {}", IDS[i])));
        assert_eq!(*log.lock().unwrap(), expected, "{strategy:?}");
    }
}

#[test]
fn one_for_one_restarts_the_crashed_child_alone_on_every_seed() {
    otter::sim::sweep(0..SEEDS, strategy_rule(Strategy::OneForOne));
}

#[test]
fn one_for_all_stops_the_others_in_reverse_and_restarts_all_in_order_on_every_seed() {
    otter::sim::sweep(0..SEEDS, strategy_rule(Strategy::OneForAll));
}

#[test]
fn rest_for_one_restarts_the_crashed_child_and_those_after_it_on_every_seed() {
    otter::sim::sweep(0..SEEDS, strategy_rule(Strategy::RestForOne));
}

/// Crashes at gaps drawn from the seed; the supervisor must end (with `Shutdown`)
/// exactly at the first crash that makes more than 2 restarts within a second.
#[test]
fn the_intensity_ends_the_supervisor_exactly_when_exceeded_on_every_seed() {
    otter::sim::sweep(0..SEEDS, |sim| {
        let gaps: Vec<u64> = (0..6).map(|_| 50 + sim.random() % 700).collect();
        // The rule, on the crash times: a restart at `t` counts those in (t - 1 s, t].
        let mut times = Vec::new();
        let mut t = 0;
        let mut fatal = None;
        for (n, g) in gaps.iter().enumerate() {
            t += g;
            times.push(t);
            let within = times.iter().filter(|&&u| t - u <= 1000).count();
            if within > 2 {
                fatal = Some(n);
                break;
            }
        }
        let log: Log = Arc::default();
        let crashes = sim
            .block_on(move |mut cx: Context<Signal>| async move {
                cx.trap_exit(true);
                let spec = tree(Strategy::OneForOne, &log, 2, Duration::from_secs(1));
                let sup = supervisor::start_link(&cx, spec).await.unwrap();
                for (n, g) in gaps.into_iter().enumerate() {
                    cx.sleep(Duration::from_millis(g)).await;
                    let child = sup.child::<Child>("a").await.unwrap().unwrap();
                    cx.monitor(child.pid());
                    child.cast(());
                    cx.recv_match(|m| matches!(m, Signal::Down(_))).await;
                    // The supervisor has the child's exit before this call: it has
                    // restarted it, or ended.
                    if sup.which_children().await.is_err() {
                        let Signal::Exit(e) = cx.recv_match(|m| matches!(m, Signal::Exit(_))).await
                        else {
                            unreachable!()
                        };
                        return (n + 1, e.reason);
                    }
                }
                (6, ExitReason::Normal)
            })
            .unwrap();
        match fatal {
            Some(n) => assert_eq!(crashes, (n + 1, ExitReason::Shutdown), "{times:?}"),
            None => assert_eq!(crashes, (6, ExitReason::Normal), "{times:?}"),
        }
    });
}

/// A process child (`ChildSpec::process`) is not waited for at its start, as a plain
/// `spawn_link` in OTP is not: a shutdown that comes before its first poll finds it
/// not yet trapping exits, and ends it untrapped. CI once met this in
/// `supervisor_child_specs.rs` on two workers; under simulation some seeds show it,
/// others not, and each replays the same way.
#[test]
fn a_process_child_shut_down_before_its_first_poll_is_not_trapping_yet() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Whether the child ran its handler for the shutdown (it trapped it).
    let trapped = |seed: u64| {
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let mut sim = otter::sim::Simulation::new(seed);
        sim.block_on(move |mut cx: Context<Signal>| async move {
            let spec = SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::process(
                "p",
                move || {
                    let f3 = f2.clone();
                    move |mut c: Context<Exit>| async move {
                        c.trap_exit(true);
                        let e = c.recv().await;
                        f3.store(true, Ordering::Relaxed);
                        e.reason
                    }
                },
            ));
            let sup = supervisor::start_link(&cx, spec).await.unwrap();
            let child = pids(sup).await[0].unwrap();
            cx.monitor(child);
            sup.terminate_child("p").await.unwrap();
            cx.recv_match(|m| matches!(m, Signal::Down(_))).await;
        })
        .unwrap();
        (flag.load(Ordering::Relaxed), sim.trace_hash())
    };
    let runs: Vec<(bool, u64)> = (0..50).map(trapped).collect();
    let untrapped = runs
        .iter()
        .position(|r| !r.0)
        .expect("some seed shuts it down early");
    assert!(runs.iter().any(|r| r.0), "and some seed lets it trap first");
    assert_eq!(trapped(untrapped as u64), runs[untrapped]);
}
