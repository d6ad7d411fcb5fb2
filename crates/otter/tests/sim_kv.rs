//! `examples/kv.rs` under simulation: its store, its supervisor and its line protocol,
//! unchanged, with the store killed at times drawn from the seed and connections that
//! crash on purpose. What must hold under every seed: a key written and not lost to a
//! store crash since reads back its value; no read ever returns a value the key did not
//! last hold; an answer while the store restarts is an error line, never a wrong one;
//! a connection's crash loses nothing.
//!
//! (Sockets are not simulated yet: each client process calls the example's `answer`
//! directly, the function a connection's process runs for each line it reads.)

#[allow(dead_code)]
#[path = "../examples/kv.rs"]
mod kv;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use otter::sim::Simulation;
use otter::supervisor;
use otter::{Context, ExitReason, Pid};

/// Seeds per run of this test (CI runs them all).
const SEEDS: u64 = 200;

/// A client: `ops` operations on its own keys, `k{id}-{0..4}`, checking every answer
/// against what it wrote and how many store crashes happened since (`kills`).
async fn client(mut cx: Context<()>, id: u64, mut rng: u64, kills: Arc<AtomicU64>, done: Pid<u64>) {
    let mut next = move || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        rng >> 33
    };
    // Per key: its last value written, and the store crashes counted when it was.
    let mut written: [Option<(String, u64)>; 5] = Default::default();
    for op in 0..40 {
        let k = (next() % 5) as usize;
        let key = format!("k{id}-{k}");
        match next() % 4 {
            0 | 1 => {
                let value = format!("v{op}");
                // The crashes counted before the request: one counted after it may
                // have taken the store that answered.
                let before = kills.load(Ordering::Relaxed);
                let answer = kv::answer(&mut cx, &format!("PUT {key} {value}")).await;
                match answer.as_deref() {
                    Some("OK\n") => written[k] = Some((value, before)),
                    Some(a) if a.starts_with("ERR the store") => written[k] = None,
                    other => panic!("PUT {key}: {other:?}"),
                }
            }
            2 => {
                let answer = kv::answer(&mut cx, &format!("GET {key}")).await.unwrap();
                let intact = written[k]
                    .as_ref()
                    .filter(|(_, at)| *at == kills.load(Ordering::Relaxed));
                match (answer.strip_prefix("VALUE "), intact) {
                    (Some(v), Some((w, _))) => assert_eq!(v.trim_end(), w, "{key}"),
                    (Some(v), None) => {
                        // Written before a crash: the store may have lost it, but a
                        // value it gives is the last one written.
                        let last = written[k].as_ref().map(|(w, _)| w.as_str());
                        assert_eq!(
                            Some(v.trim_end()),
                            last,
                            "{key}: a value never written last"
                        );
                    }
                    (None, Some((w, _))) if answer.starts_with("NOT_FOUND") => {
                        panic!("{key}: lost {w} with no store crash since")
                    }
                    (None, _) => assert!(
                        answer == "NOT_FOUND\n" || answer.starts_with("ERR the store"),
                        "GET {key}: {answer:?}"
                    ),
                }
            }
            _ => {
                // A connection that crashes mid-request: its process ends, the store
                // and every key stay.
                cx.spawn(|mut c: Context<()>| async move {
                    kv::answer(&mut c, "CRASH").await;
                });
            }
        }
        cx.sleep(Duration::from_millis(next() % 20)).await;
    }
    done.send(id);
}

fn kv_under_crashes(sim: &mut Simulation) {
    let kill_at: Vec<Duration> = (0..3)
        .map(|_| Duration::from_millis(sim.random() % 600))
        .collect();
    let seeds: Vec<u64> = (0..4).map(|_| sim.random()).collect();
    let finished = sim
        .block_on(move |mut cx: Context<u64>| async move {
            // The example's tree, allowed the three restarts a run may need (OTP's
            // default intensity, one in five seconds, would end the tree at the
            // second kill, as it should).
            let tree = kv::store_tree().intensity(3, Duration::from_secs(5));
            let _sup = supervisor::start_link(&cx, tree).await.unwrap();
            let kills = Arc::new(AtomicU64::new(0));
            let k2 = kills.clone();
            cx.spawn(move |cx: Context<()>| async move {
                let mut at = kill_at;
                at.sort();
                let t0 = otter::time::now();
                for t in at {
                    let now = otter::time::now() - t0;
                    cx.sleep(t.saturating_sub(now)).await;
                    if let Some(store) = kv::KV.whereis(&cx) {
                        // Counted before the kill (the client's rule above).
                        k2.fetch_add(1, Ordering::Relaxed);
                        cx.exit(store.pid(), ExitReason::Kill);
                    }
                }
            });
            let me = cx.pid();
            for (id, seed) in seeds.into_iter().enumerate() {
                let kills = kills.clone();
                // Linked: a client's failed check ends the run with its message.
                cx.spawn_link(move |c: Context<()>| client(c, id as u64, seed, kills, me));
            }
            let mut done = 0;
            while done < 4 {
                cx.recv().await;
                done += 1;
            }
            done
        })
        .unwrap();
    assert_eq!(finished, 4);
}

#[test]
fn the_kv_store_keeps_its_promises_under_store_crashes_on_every_seed() {
    let ran = otter::sim::sweep(0..SEEDS, kv_under_crashes);
    assert!(ran >= 1);
}

#[test]
fn a_kv_run_replays_from_its_seed() {
    otter::sim::check(7, kv_under_crashes);
}
