//! A leader election over the distribution, under simulation: three otter nodes on
//! three simulated nodes elect a leader by heartbeats. A planted bug (a follower that
//! times out leads at once, without a majority) gives two leaders when the leader is
//! partitioned off during its term; a seed sweep with partitions drawn from the seed
//! finds it, and the seed it names replays it. The fixed election (a claim needs a
//! majority's acks, and a leader whose lease lapses steps down first) passes every seed.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use otter::Context;
use otter::dist::{BadTerm, Node};
use otter::sim::{NodeId, Simulation};
use serde::{Deserialize, Serialize};

/// How often a leader heartbeats, and a follower looks at the time.
const TICK: Duration = Duration::from_millis(100);
/// How long a heartbeat's majority of acks keeps a leader leading (fixed version).
const LEASE: Duration = Duration::from_millis(300);
/// How long a follower waits without a heartbeat before it claims, plus a stagger
/// per node so that two followers rarely claim at once.
const ELECTION_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Debug, Serialize, Deserialize)]
enum Elect {
    Heartbeat {
        from: u8,
        term: u64,
    },
    Claim {
        from: u8,
        term: u64,
    },
    Ack {
        from: u8,
        term: u64,
    },
    #[serde(skip)]
    Bad(#[allow(dead_code)] BadTerm),
}

impl From<BadTerm> for Elect {
    fn from(b: BadTerm) -> Elect {
        Elect::Bad(b)
    }
}

/// The test's view of who leads: the invariant is checked at every change.
#[derive(Default)]
struct Leaders {
    now: BTreeSet<u8>,
    violation: Option<String>,
    /// Leaders elected after the first.
    handovers: u64,
}

impl Leaders {
    fn lead(&mut self, me: u8, term: u64) {
        self.now.insert(me);
        self.handovers += u64::from(term > 1);
        if self.now.len() > 1 && self.violation.is_none() {
            self.violation = Some(format!(
                "two leaders at once: {:?} (n{me} took term {term})",
                self.now
            ));
        }
    }

    fn step_down(&mut self, me: u8) {
        self.now.remove(&me);
    }
}

const N: u8 = 3;

/// Elector `i`'s otter node: `e@` and its simulated node's name (the first node of
/// every simulation is `node0`).
fn node_name(i: u8) -> String {
    match i {
        0 => "e@node0".to_string(),
        i => format!("e@n{i}"),
    }
}

/// One node's elector.
async fn elector(
    mut cx: Context<Elect>,
    me: u8,
    node: Node,
    leaders: Arc<Mutex<Leaders>>,
    fixed: bool,
) {
    let send = |cx: &Context<Elect>, to: u8, m: Elect| {
        let _ = node.send_named(cx.pid(), "elector", &node_name(to), &m);
    };
    let others: Vec<u8> = (0..N).filter(|&i| i != me).collect();
    let mut term = 1u64;
    let mut leader = Some(0u8);
    let mut claiming = false;
    let mut acks: HashSet<u8> = HashSet::new();
    let mut round_start = otter::time::now();
    let mut lease_until = round_start + LEASE;
    let mut last_heard = otter::time::now();
    let mut next_tick = otter::time::now() + TICK;
    if me == 0 {
        leaders.lock().unwrap().lead(0, 1);
    }
    let timeout = ELECTION_TIMEOUT + Duration::from_millis(150 * u64::from(me));
    loop {
        let now = otter::time::now();
        let wait = next_tick.saturating_duration_since(now);
        let msg = cx.recv_timeout(wait).await;
        let now = otter::time::now();
        let step_down = |leader: &mut Option<u8>, to: Option<u8>| {
            if *leader == Some(me) {
                leaders.lock().unwrap().step_down(me);
            }
            *leader = to;
        };
        match msg {
            Some(Elect::Heartbeat { from, term: t }) if t >= term => {
                term = t;
                claiming = false;
                step_down(&mut leader, Some(from));
                last_heard = now;
                send(&cx, from, Elect::Ack { from: me, term: t });
            }
            Some(Elect::Claim { from, term: t }) if t > term => {
                term = t;
                claiming = false;
                step_down(&mut leader, None);
                last_heard = now;
                send(&cx, from, Elect::Ack { from: me, term: t });
            }
            Some(Elect::Ack { from, term: t }) if t == term => {
                acks.insert(from);
                // A majority of three: one other node.
                if claiming {
                    claiming = false;
                    leader = Some(me);
                    leaders.lock().unwrap().lead(me, term);
                    lease_until = round_start + LEASE;
                    next_tick = now;
                } else if leader == Some(me) {
                    lease_until = round_start + LEASE;
                }
            }
            Some(_) => {}
            None => {}
        }
        if now < next_tick {
            continue;
        }
        next_tick = now + TICK;
        if leader == Some(me) {
            if fixed && now >= lease_until {
                // No majority has answered for a lease: someone else may lead soon.
                step_down(&mut leader, None);
                last_heard = now;
                continue;
            }
            round_start = now;
            acks.clear();
            for &o in &others {
                send(&cx, o, Elect::Heartbeat { from: me, term });
            }
        } else if now.saturating_duration_since(last_heard) >= timeout {
            term += 1;
            last_heard = now;
            if fixed {
                claiming = true;
                round_start = now;
                acks.clear();
                for &o in &others {
                    send(&cx, o, Elect::Claim { from: me, term });
                }
            } else {
                // The bug: leads at once, with no majority's word that the old leader
                // is gone.
                leader = Some(me);
                leaders.lock().unwrap().lead(me, term);
                next_tick = now;
            }
        }
    }
}

/// Five simulated seconds of the election, with a partition drawn from the seed that
/// cuts the leader of the moment off for a while; how many leaders were elected after
/// the first.
fn election(sim: &mut Simulation, fixed: bool) -> u64 {
    let leaders = Arc::new(Mutex::new(Leaders::default()));
    let mut ids = vec![NodeId(0)];
    for i in 1..N {
        ids.push(sim.add_node(&format!("n{i}")));
    }
    for (i, &id) in ids.iter().enumerate() {
        let node = Node::builder(node_name(i as u8))
            .cookie("secret")
            .tick_time(Duration::from_secs(2))
            .start(&sim.handle_on(id))
            .unwrap();
        let (n2, l2) = (node.clone(), leaders.clone());
        let pid = sim.spawn_on(id, move |cx: Context<Elect>| {
            elector(cx, i as u8, n2, l2, fixed)
        });
        node.register("elector", pid);
    }
    let cut_at = Duration::from_millis(500 + sim.random() % 2500);
    let cut_for = Duration::from_millis(200 + sim.random() % 1500);
    let cuts = sim.random().is_multiple_of(2);
    sim.advance(cut_at);
    let leader = leaders.lock().unwrap().now.iter().next().copied();
    if let (true, Some(l)) = (cuts, leader) {
        sim.isolate(ids[l as usize]);
        sim.advance(cut_for);
        sim.heal_all();
    }
    sim.advance(Duration::from_secs(5).saturating_sub(sim.elapsed()));
    let l = leaders.lock().unwrap();
    if let Some(v) = &l.violation {
        panic!("{v}");
    }
    l.handovers
}

#[test]
fn a_sweep_finds_two_leaders_after_a_partition_and_its_seed_replays_it() {
    let found = std::panic::catch_unwind(|| {
        otter::sim::sweep(0..200, |sim| {
            election(sim, false);
        })
    })
    .expect_err("a partition of the leader makes two leaders under some seed");
    let msg = found.downcast_ref::<String>().unwrap();
    assert!(msg.contains("two leaders at once"), "{msg}");
    let seed: u64 = msg
        .split("seed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    eprintln!("the sweep found two leaders at seed {seed}");
    let replay = || {
        let mut sim = Simulation::new(seed);
        let r =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| election(&mut sim, false)));
        (r.is_err(), sim.trace_hash())
    };
    let first = replay();
    assert!(first.0, "seed {seed} fails again");
    assert_eq!(replay(), first, "and the same way");
}

#[test]
fn the_fixed_election_never_has_two_leaders() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let handovers = AtomicU64::new(0);
    let ran = otter::sim::sweep(0..100, |sim| {
        handovers.fetch_add(election(sim, true), Ordering::Relaxed);
    });
    // Not a sweep of quiet runs: the partitions made new leaders.
    assert!(
        handovers.load(Ordering::Relaxed) >= ran / 4,
        "{} handovers in {ran} runs",
        handovers.load(Ordering::Relaxed)
    );
}
