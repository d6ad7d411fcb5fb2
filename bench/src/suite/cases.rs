//! What the suite runs: the cases of each seed, at the sizes of `--quick`, the default, or
//! `--full`, each on otter, Erlang or both.

use super::Options;
use crate::sysinfo;

/// Which implementation a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Impl {
    Otter,
    Erlang,
    /// Plain tokio, in this binary: the http workload's reference (`impl=tokio`).
    Tokio,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Otter => "otter",
            Impl::Erlang => "erlang",
            Impl::Tokio => "tokio",
        }
    }
}

/// One experiment: a workload with parameters, run on one or both implementations.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) bench: &'static str,
    /// `bench key=value ...`: the name in results and report.
    pub(crate) id: String,
    /// Arguments for both implementations.
    pub(crate) args: Vec<(&'static str, String)>,
    /// Arguments only otter gets (e.g. `style=key` for mailbox).
    pub(crate) otter_extra: Vec<(&'static str, String)>,
    pub(crate) impls: Vec<Impl>,
    /// Erlang runs over 60 s stop the later cases of the same group.
    pub(crate) cutoff_group: Option<String>,
}

/// The case id for `bench` with `args`: `"bench k=v k=v"`.
pub(crate) fn case_id(bench: &str, args: &[(&str, String)]) -> String {
    let mut s = bench.to_string();
    for (k, v) in args {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

fn case(
    bench: &'static str,
    args: &[(&'static str, u64)],
    choices: &[(&'static str, &str)],
) -> Case {
    let mut a: Vec<(&'static str, String)> =
        args.iter().map(|(k, v)| (*k, v.to_string())).collect();
    a.extend(choices.iter().map(|(k, v)| (*k, (*v).to_string())));
    Case {
        bench,
        id: case_id(bench, &a),
        args: a,
        otter_extra: Vec::new(),
        impls: vec![Impl::Otter, Impl::Erlang],
        cutoff_group: None,
    }
}

/// The sizes of one suite mode (serialized: the report's variables, `report/spec.rs`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Sizes {
    pub(crate) ring: Vec<u64>,
    pub(crate) ring_max_sends: u64,
    pub(crate) spawn_n: u64,
    pub(crate) spawn_c: Vec<u64>,
    pub(crate) counting_msgs: u64,
    pub(crate) senders: Vec<u64>,
    pub(crate) mailbox_k: Vec<u64>,
    pub(crate) mailbox_match_max_k: u64,
    pub(crate) closure_n: u64,
    pub(crate) memory_p: u64,
    pub(crate) pingpong_r: u64,
    /// forkjoin: the tree's n (2·fib(n)−1 processes).
    pub(crate) forkjoin_n: u64,
    /// latency: timed round trips (b = 1000, w = 5 µs, hog 0 and 1).
    pub(crate) latency_r: u64,
    /// echo: connections, bytes per round trip, measured seconds.
    pub(crate) echo: EchoSizes,
    /// dist: (binary size, round trips) of each case.
    pub(crate) dist: Vec<(u64, u64)>,

    /// http: measured seconds of a run.
    pub(crate) http_seconds: u64,
    /// overload: measured seconds of a run.
    pub(crate) overload_seconds: u64,
}

/// dist: whose echo node a case's client meets (`echo=`).
pub(crate) const DIST_ECHOES: [Impl; 2] = [Impl::Otter, Impl::Erlang];

/// The echo cases' sizes: every conns × size, both modes.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct EchoSizes {
    pub(crate) conns: Vec<u64>,
    pub(crate) sizes: Vec<u64>,
    pub(crate) seconds: u64,
}

impl EchoSizes {
    fn for_options(o: &Options) -> EchoSizes {
        if o.quick {
            EchoSizes {
                conns: vec![1, 100],
                sizes: vec![64],
                seconds: 1,
            }
        } else {
            // WORKLOADS.md's 10,000 connections only with --full (the run itself is
            // skipped if `ulimit -n` is too low: suite/echo.rs).
            let mut conns = vec![1, 100, 1000];
            if o.full {
                conns.push(10_000);
            }
            EchoSizes {
                conns,
                sizes: vec![64, 4096],
                seconds: 3,
            }
        }
    }
}

/// latency's background: processes in the ring (b) and µs of computing per message (w),
/// WORKLOADS.md's defaults.
pub(crate) const LATENCY_B: u64 = 1000;
pub(crate) const LATENCY_W: u64 = 5;

/// counting's fan-out case: one sender round-robin to this many counters (issue 24: a
/// sender spread over 60 processes on the other worker).
pub(crate) const FAN_OUT_RECEIVERS: u64 = 60;

impl Sizes {
    pub(crate) fn for_options(o: &Options) -> Sizes {
        let cores = sysinfo::cores() as u64;
        let mut senders = vec![1];
        if cores > 1 {
            senders.push(cores);
        }
        if o.quick {
            Sizes {
                ring: vec![100, 1000],
                ring_max_sends: u64::MAX,
                spawn_n: 100_000,
                spawn_c: vec![1, 10, 100],
                counting_msgs: 300_000,
                senders,
                mailbox_k: vec![1000, 3000, 10_000],
                mailbox_match_max_k: 10_000,
                closure_n: 1_000_000,
                memory_p: 10_000,
                pingpong_r: 100_000,
                forkjoin_n: 22,
                latency_r: 500,
                echo: EchoSizes::for_options(o),
                dist: vec![(64, 2000)],

                http_seconds: 2,
                overload_seconds: 1,
            }
        } else {
            Sizes {
                ring: vec![100, 1000, 10_000],
                ring_max_sends: if o.full { u64::MAX } else { 100_000_000 - 1 },
                spawn_n: 1_000_000,
                spawn_c: vec![1, 10, 100],
                counting_msgs: 3_000_000,
                senders,
                mailbox_k: vec![1000, 3000, 10_000, 30_000, 100_000],
                mailbox_match_max_k: 10_000,
                closure_n: 10_000_000,
                memory_p: 100_000,
                pingpong_r: 1_000_000,
                // WORKLOADS.md's default, issue 39's tree: 392,835 processes.
                forkjoin_n: 27,
                // WORKLOADS.md's and issue 24's: a p99.9 of 100,000 round trips is the
                // 100th longest, not the 3rd of 3,000. With spare threads (0026) otter's
                // take about 0.3 s with or without the hog; the BEAM's 5-17 s.
                latency_r: 100_000,
                echo: EchoSizes::for_options(o),
                // Up to about a second a run on the 2-core test machine (20-55 µs a round
                // trip at 64 bytes, 25-80 µs at 4 KiB); 4 KiB only with --full. 1 MiB:
                // issue 42's large-message case, 100 round trips (1-5 ms each) after
                // the workload's 1,000 untimed ones.
                dist: if o.full {
                    vec![(64, 20_000), (4096, 20_000), (1 << 20, 100)]
                } else {
                    vec![(64, 20_000), (1 << 20, 100)]
                },

                // WORKLOADS.md "http": 10 s.
                http_seconds: 10,
                // WORKLOADS.md "overload": 5 s.
                overload_seconds: 5,
            }
        }
    }
}

/// Every case of the suite, in running order.
pub(crate) fn cases(s: &Sizes) -> Vec<Case> {
    let mut v = Vec::new();
    for &n in &s.ring {
        for &m in &s.ring {
            if n * m <= s.ring_max_sends {
                v.push(case("ring", &[("n", n), ("m", m)], &[]));
            }
        }
    }
    for &c in &s.spawn_c {
        v.push(case("spawn", &[("n", s.spawn_n), ("c", c)], &[]));
    }
    for style in ["raw", "server"] {
        for &senders in &s.senders {
            v.push(case(
                "counting",
                &[("msgs", s.counting_msgs), ("senders", senders)],
                &[("style", style)],
            ));
        }
    }
    // Fan-out: each send goes to another process than the one before.
    v.push(case(
        "counting",
        &[
            ("msgs", s.counting_msgs),
            ("senders", 1),
            ("receivers", FAN_OUT_RECEIVERS),
        ],
        &[("style", "raw")],
    ));
    // The machine's floor for one queue between two cores (`counting style=channel`).
    let mut floor = case(
        "counting",
        &[("msgs", s.counting_msgs), ("senders", 1)],
        &[("style", "channel")],
    );
    floor.impls = vec![Impl::Otter];
    v.push(floor);
    for order in ["spawn", "reverse"] {
        for &k in &s.mailbox_k {
            let mut c = case("mailbox", &[("k", k)], &[("order", order)]);
            c.otter_extra.push(("style", "key".into()));
            c.cutoff_group = Some(format!("mailbox order={order}"));
            v.push(c);
        }
        for &k in s.mailbox_k.iter().filter(|k| **k <= s.mailbox_match_max_k) {
            let mut c = case(
                "mailbox",
                &[("k", k)],
                &[("order", order), ("style", "match")],
            );
            c.impls = vec![Impl::Otter];
            v.push(c);
        }
    }
    for style in ["message", "closure"] {
        v.push(case("closure", &[("n", s.closure_n)], &[("style", style)]));
    }
    v.push(case("memory", &[("p", s.memory_p)], &[]));
    for style in ["raw", "server"] {
        v.push(case(
            "pingpong",
            &[("r", s.pingpong_r)],
            &[("style", style)],
        ));
    }
    v.push(case("forkjoin", &[("n", s.forkjoin_n)], &[]));
    for hog in [0, 1] {
        v.push(case(
            "latency",
            &[
                ("r", s.latency_r),
                ("b", LATENCY_B),
                ("w", LATENCY_W),
                ("hog", hog),
            ],
            &[],
        ));
    }
    for mode in ["passive", "active"] {
        for &size in &s.echo.sizes {
            for &conns in &s.echo.conns {
                v.push(echo_case(s, conns, size, mode));
            }
        }
    }
    for &(size, r) in &s.dist {
        for echo in DIST_ECHOES {
            v.push(dist_case(size, r, echo));
        }
    }

    // overload: unbounded on both (Erlang has no bound), then bounded on otter.
    v.push(case(
        "overload",
        &[("seconds", s.overload_seconds), ("bound", 0)],
        &[],
    ));
    let mut bounded = case(
        "overload",
        &[("seconds", s.overload_seconds), ("bound", OVERLOAD_BOUND)],
        &[],
    );
    bounded.impls = vec![Impl::Otter];
    v.push(bounded);
    // The producers await their sends: an unbounded mailbox mutes them (otter only:
    // Erlang's `!` is the one send, its row is the first case's).
    let mut muted = case(
        "overload",
        &[("seconds", s.overload_seconds), ("bound", 0)],
        &[("send", "await")],
    );
    muted.impls = vec![Impl::Otter];
    v.push(muted);

    v.push(http_case(s));
    v
}

/// overload's bounded case: the consumer's mailbox holds this many messages, 10 ms of
/// its work at WORKLOADS.md's w = 10 µs, longer than the producers' longest back-off.
pub(crate) const OVERLOAD_BOUND: u64 = 1000;

/// The dist case: clients (otter, Erlang) of an `echo` node, r round trips of size bytes.
fn dist_case(size: u64, r: u64, echo: Impl) -> Case {
    case(
        "dist",
        &[("r", r), ("size", size)],
        &[("echo", echo.name())],
    )
}

/// The id of the dist case of `size` bytes against `echo`'s node.
#[cfg(test)]
pub(crate) fn dist_id(s: &Sizes, size: u64, echo: Impl) -> Option<String> {
    let &(_, r) = s.dist.iter().find(|(sz, _)| *sz == size)?;
    Some(dist_case(size, r, echo).id)
}

/// The id of counting's fan-out case.
#[cfg(test)]
pub(crate) fn fan_out_id(s: &Sizes) -> String {
    case_id(
        "counting",
        &[
            ("msgs", s.counting_msgs.to_string()),
            ("senders", "1".to_string()),
            ("receivers", FAN_OUT_RECEIVERS.to_string()),
            ("style", "raw".to_string()),
        ],
    )
}

/// The workloads the suite has cases of (`--only` takes these).
pub(crate) fn benches() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for o in [true, false] {
        let opts = Options {
            quick: o,
            full: !o,
            reps: 1,
            out: Default::default(),
            timeout: Default::default(),
            no_erlang: true,
            only: Vec::new(),
        };
        for c in cases(&Sizes::for_options(&opts)) {
            if !v.contains(&c.bench) {
                v.push(c.bench);
            }
        }
    }
    v
}

/// The echo case: a server in `mode` (otter or Erlang) under echo-load's `conns` x `size`.
fn echo_case(s: &Sizes, conns: u64, size: u64, mode: &str) -> Case {
    case(
        "echo",
        &[
            ("conns", conns),
            ("size", size),
            ("seconds", s.echo.seconds),
        ],
        &[("mode", mode)],
    )
}

/// The http case (WORKLOADS.md "http"): otter's server and plain tokio's, alternated,
/// under http-load's 200 connections.
fn http_case(s: &Sizes) -> Case {
    let mut c = case(
        "http",
        &[
            ("conns", HTTP_CONNS),
            ("seconds", s.http_seconds),
            ("work_us", HTTP_WORK_US),
        ],
        &[],
    );
    c.impls = vec![Impl::Otter, Impl::Tokio];
    c
}

/// http: connections and µs of work per job, WORKLOADS.md's.
pub(crate) const HTTP_CONNS: u64 = 200;
pub(crate) const HTTP_WORK_US: u64 = 200;

/// The id of the echo case.
#[cfg(test)]
pub(crate) fn echo_id(s: &Sizes, conns: u64, size: u64, mode: &str) -> String {
    echo_case(s, conns, size, mode).id
}

/// The id of the latency case with `hog` (0 or 1).
#[cfg(test)]
pub(crate) fn latency_id(s: &Sizes, hog: u64) -> String {
    case_id(
        "latency",
        &[
            ("r", s.latency_r.to_string()),
            ("b", LATENCY_B.to_string()),
            ("w", LATENCY_W.to_string()),
            ("hog", hog.to_string()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::parse_options;

    fn opts(args: &[&str]) -> Result<Options, String> {
        parse_options(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_100m_ring_cell_needs_full() {
        let has_big = |o: &Options| {
            cases(&Sizes::for_options(o))
                .iter()
                .any(|c| c.id == "ring n=10000 m=10000")
        };
        assert!(!has_big(&opts(&[]).unwrap()));
        assert!(has_big(&opts(&["--full"]).unwrap()));
    }

    #[test]
    fn mailbox_cases() {
        let cs = cases(&Sizes::for_options(&opts(&[]).unwrap()));
        let mb: Vec<&Case> = cs.iter().filter(|c| c.bench == "mailbox").collect();
        // 5 k x 2 orders (both impls) + 3 k x 2 orders (otter match).
        assert_eq!(mb.len(), 16);
        assert!(mb.iter().any(|c| c.id == "mailbox k=100000 order=reverse"));
        assert!(mb.iter().any(
            |c| c.id == "mailbox k=10000 order=reverse style=match" && c.impls == [Impl::Otter]
        ));
    }

    #[test]
    fn fan_out_case() {
        for o in [opts(&[]).unwrap(), opts(&["--quick"]).unwrap()] {
            let s = Sizes::for_options(&o);
            let c = cases(&s)
                .into_iter()
                .find(|c| c.id == fan_out_id(&s))
                .expect("the fan-out case");
            assert_eq!(c.impls, [Impl::Otter, Impl::Erlang]);
        }
    }

    #[test]
    fn echo_cases() {
        for (args, n) in [(&[][..], 12), (&["--quick"][..], 4), (&["--full"][..], 16)] {
            let s = Sizes::for_options(&opts(args).unwrap());
            let cs = cases(&s);
            let echo: Vec<&Case> = cs.iter().filter(|c| c.bench == "echo").collect();
            assert_eq!(echo.len(), n, "{args:?}");
            assert!(echo.iter().all(|c| c.impls == [Impl::Otter, Impl::Erlang]));
            assert!(cs.iter().any(|c| c.id == echo_id(&s, 1, 64, "passive")));
        }
    }

    #[test]
    fn dist_cases() {
        for (args, n) in [(&[][..], 4), (&["--quick"][..], 2), (&["--full"][..], 6)] {
            let s = Sizes::for_options(&opts(args).unwrap());
            let cs = cases(&s);
            let dist: Vec<&Case> = cs.iter().filter(|c| c.bench == "dist").collect();
            assert_eq!(dist.len(), n, "{args:?}");
            assert!(dist.iter().all(|c| c.impls == [Impl::Otter, Impl::Erlang]));
            for echo in DIST_ECHOES {
                let id = dist_id(&s, 64, echo).expect("a 64-byte case");
                assert!(cs.iter().any(|c| c.id == id), "{id}");
            }
        }
        let s = Sizes::for_options(&opts(&[]).unwrap());
        assert_eq!(
            dist_id(&s, 64, Impl::Erlang).as_deref(),
            Some("dist r=20000 size=64 echo=erlang")
        );
    }

    #[test]
    fn forkjoin_case() {
        for (args, n) in [(&[][..], 27), (&["--quick"][..], 22)] {
            let cs = cases(&Sizes::for_options(&opts(args).unwrap()));
            let c = cs
                .iter()
                .find(|c| c.bench == "forkjoin")
                .expect("a forkjoin case");
            assert_eq!(c.id, format!("forkjoin n={n}"));
            assert_eq!(c.impls, [Impl::Otter, Impl::Erlang]);
        }
    }

    #[test]
    fn latency_cases() {
        for o in [opts(&[]).unwrap(), opts(&["--quick"]).unwrap()] {
            let s = Sizes::for_options(&o);
            let cs = cases(&s);
            for hog in [0, 1] {
                let c = cs
                    .iter()
                    .find(|c| c.id == latency_id(&s, hog))
                    .expect("a latency case");
                assert_eq!(c.impls, [Impl::Otter, Impl::Erlang]);
            }
        }
    }
}
