//! `examples/kv.rs` under simulation: its store, its supervisor and its line protocol,
//! unchanged, with the store killed at times drawn from the seed and connections that
//! crash on purpose. What must hold under every seed: a key written and not lost to a
//! store crash since reads back its value; no read ever returns a value the key did not
//! last hold; an answer while the store restarts is an error line, never a wrong one;
//! a connection's crash loses nothing.
//!
//! Two ways in: clients that call the example's `answer` directly (the function a
//! connection's process runs for each line it reads), on the store's node; and
//! clients on another node that talk to the example's acceptor pool over the
//! simulated network, through partitions, with timeouts and reconnects.

#[allow(dead_code)]
#[path = "../examples/kv.rs"]
mod kv;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use otter::net::TcpStream;
use otter::sim::{NodeId, Simulation};
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

/// What a key may hold, as far as a client that is its only writer knows: the values
/// a read may return (`None`: not found), and the store crashes counted when that was
/// last known for sure (a crash since may also have lost it).
struct Model {
    values: Vec<Option<String>>,
    kills_at: u64,
}

impl Model {
    fn known(value: Option<String>, kills: u64) -> Model {
        Model {
            values: vec![value],
            kills_at: kills,
        }
    }

    /// A read answered `got`, sent when `before` crashes were counted and answered
    /// when `after` were: it must be possible (a crash counted by the answer may have
    /// lost the key), and is now what is known, as of `before` (a crash counted before
    /// the answer may act after it).
    fn read(&mut self, key: &str, got: Option<String>, before: u64, after: u64) {
        let lost = got.is_none() && after != self.kills_at;
        assert!(
            self.values.contains(&got) || lost,
            "{key}: read {got:?}, but it could only be {:?}",
            self.values
        );
        *self = Model::known(got, before);
    }
}

/// One request over `conn` (connecting first if needed): the answer line, or `None`
/// if it failed or took over a second (then the connection is dropped: the request
/// may or may not have been done).
async fn request(conn: &mut Option<(TcpStream, Vec<u8>)>, line: &str) -> Option<String> {
    if conn.is_none() {
        let s = otter::timeout(
            Duration::from_secs(1),
            TcpStream::connect_host("node0:7379"),
        )
        .await
        .ok()?
        .ok()?;
        *conn = Some((s, Vec::new()));
    }
    let (s, pending) = conn.as_mut().expect("connected above");
    let answer = otter::timeout(Duration::from_secs(1), async {
        s.write_all(format!("{line}\n").as_bytes()).await.ok()?;
        let mut buf = [0u8; 512];
        loop {
            if let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let l: Vec<u8> = pending.drain(..=end).collect();
                return Some(String::from_utf8(l).unwrap().trim_end().to_string());
            }
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .ok()
    .flatten();
    if answer.is_none() {
        *conn = None;
    }
    answer
}

/// A client on another node: `ops` requests over TCP on its own keys, checked against
/// its model of each.
async fn tcp_client(cx: Context<()>, id: u64, mut rng: u64, kills: Arc<AtomicU64>) {
    let mut next = move || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        rng >> 33
    };
    let mut conn = None;
    let mut keys: Vec<Model> = (0..3).map(|_| Model::known(None, 0)).collect();
    for op in 0..30 {
        let k = (next() % 3) as usize;
        let key = format!("t{id}-{k}");
        let now_kills = || kills.load(Ordering::Relaxed);
        if next() % 2 == 0 {
            let value = format!("v{op}");
            let before = now_kills();
            match request(&mut conn, &format!("PUT {key} {value}"))
                .await
                .as_deref()
            {
                Some("OK") => keys[k] = Model::known(Some(value), before),
                // Failed, timed out, or the store restarting: done or not.
                _ => keys[k].values.push(Some(value)),
            }
        } else {
            let before = now_kills();
            let r = request(&mut conn, &format!("GET {key}")).await;
            let after = now_kills();
            match r {
                Some(a) if a.starts_with("VALUE ") => {
                    let v = Some(a["VALUE ".len()..].to_string());
                    keys[k].read(&key, v, before, after)
                }
                Some(a) if a == "NOT_FOUND" => keys[k].read(&key, None, before, after),
                Some(a) => assert!(a.starts_with("ERR the store"), "GET {key}: {a:?}"),
                None => {}
            }
        }
        cx.sleep(Duration::from_millis(next() % 50)).await;
    }
}

/// The example's whole server (store, supervisor, acceptor pool) on node 0, three
/// TCP clients on node 1, store crashes and partitions between the two nodes drawn
/// from the seed.
fn kv_over_tcp(sim: &mut Simulation) {
    let client_node = sim.add_node("clients");
    let kills = Arc::new(AtomicU64::new(0));
    let k2 = kills.clone();
    let mut rng = sim.random();
    sim.spawn(move |cx: Context<()>| async move {
        let tree = kv::store_tree().intensity(10, Duration::from_secs(5));
        let _sup = supervisor::start_link(&cx, tree).await.unwrap();
        let addr = "0.0.0.0:7379".parse().unwrap();
        let _pool = otter::net::start_acceptor_pool(&cx, addr, 2, kv::connection)
            .await
            .unwrap();
        // Every 300 ms, one chance in three that the store dies, its crash counted
        // first (the clients' rule).
        loop {
            cx.sleep(Duration::from_millis(300)).await;
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (rng >> 33).is_multiple_of(3)
                && let Some(store) = kv::KV.whereis(&cx)
            {
                k2.fetch_add(1, Ordering::Relaxed);
                cx.exit(store.pid(), ExitReason::Kill);
            }
        }
    });
    sim.run_until_idle();
    // The clients, watched: each must end normally (a failed check is a panic).
    let ends = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seeds: Vec<u64> = (0..3).map(|_| sim.random()).collect();
    let e2 = ends.clone();
    sim.spawn_on(
        client_node,
        move |mut cx: Context<otter::Down>| async move {
            for (id, seed) in seeds.into_iter().enumerate() {
                let kills = kills.clone();
                cx.spawn_monitor(move |c: Context<()>| tcp_client(c, id as u64, seed, kills));
            }
            for _ in 0..3 {
                let down = cx.recv().await;
                e2.lock().unwrap().push(down.reason);
            }
        },
    );
    for _ in 0..4 {
        let quiet = Duration::from_millis(100 + sim.random() % 400);
        sim.advance(quiet);
        sim.partition(NodeId(0), client_node);
        let cut = Duration::from_millis(sim.random() % 1500);
        sim.advance(cut);
        sim.heal(NodeId(0), client_node);
    }
    sim.advance(Duration::from_secs(20));
    let ends = ends.lock().unwrap();
    assert_eq!(ends.len(), 3, "every client finished");
    for reason in ends.iter() {
        assert_eq!(*reason, ExitReason::Normal, "a client's check failed");
    }
}

#[test]
fn the_kv_server_keeps_its_promises_over_tcp_under_crashes_and_partitions() {
    let ran = otter::sim::sweep(0..SEEDS / 2, kv_over_tcp);
    assert!(ran >= 1);
}
