//! The runtime's counters through the `metrics` facade (`otter::metrics`), read back
//! from a real recorder (`metrics-exporter-prometheus`'s, rendered as Prometheus's text
//! format): spawns, exits by reason, dead sends and the process count published with
//! their labels; one series per worker; a started publisher sets the global recorder on
//! its own, with the metrics' help text.

#[path = "support/rt.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use otter::metrics::Publisher;
use otter::{Context, Down, ExitReason, Runtime};
use support::eventually;

const LIMIT: Duration = Duration::from_secs(10);

/// One sample of a rendered page: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// The samples of a Prometheus text page (comments skipped).
fn samples(page: &str) -> Vec<Sample> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample line");
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => {
                    let body = rest.strip_suffix('}').expect("closed labels");
                    let labels = body
                        .split(',')
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').expect("k=v");
                            (k.to_string(), v.trim_matches('"').to_string())
                        })
                        .collect();
                    (n.to_string(), labels)
                }
                None => (series.to_string(), BTreeMap::new()),
            };
            (name, labels, value.parse().expect("a number"))
        })
        .collect()
}

/// The value of `name` with exactly `labels`, if the page has it.
fn value(page: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    page.iter()
        .find(|(n, l, _)| n == name && *l == want)
        .map(|s| s.2)
}

rt_test!(
    spawns_exits_and_dead_sends_counted_by_the_runtime_are_published_with_their_labels,
    |rt: &Runtime| {
        let h = rt.handle();
        rt.block_on(move |mut cx: Context<Down>| async move {
            for _ in 0..4 {
                cx.spawn_monitor(|_: Context<()>| async {});
            }
            for _ in 0..3 {
                cx.spawn_monitor(|_: Context<()>| async { panic!("on purpose") });
            }
            cx.spawn_monitor(|_: Context<()>| async { ExitReason::Shutdown });
            for _ in 0..2 {
                let (p, _) = cx.spawn_monitor(|mut c: Context<()>| async move { c.recv().await });
                cx.exit(p, ExitReason::Kill);
            }
            let (gone, _) = cx.spawn_monitor(|_: Context<u8>| async {});
            for _ in 0..11 {
                cx.recv().await;
            }
            gone.send(1); // to an exited process: a dead send
        })
        .unwrap();
        // The root and its 11 children, all exited: counted once the workers flush
        // (at the latest when they look for work: `otter::introspect`, rule 6).
        eventually("every exit is counted", LIMIT, || {
            let i = h.runtime_info();
            i.exits.total() == 12 && i.dead_sends == 1
        });
        let recorder = PrometheusBuilder::new().build_recorder();
        let page = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            Publisher::new(&h).label("runtime", "test").publish();
        });
        let page = samples(&page.render());
        let rt_label = ("runtime", "test");
        let get = |name: &str| value(&page, name, &[rt_label]);
        let exits =
            |reason: &str| value(&page, "otter_exits_total", &[rt_label, ("reason", reason)]);
        assert_eq!(get("otter_spawns_total"), Some(12.0));
        assert_eq!(get("otter_processes"), Some(0.0));
        assert_eq!(get("otter_dead_sends_total"), Some(1.0));
        assert_eq!(exits("normal"), Some(6.0)); // 4, the root, and `gone`
        assert_eq!(exits("panic"), Some(3.0));
        assert_eq!(exits("shutdown"), Some(1.0));
        assert_eq!(exits("killed"), Some(2.0));
        assert_eq!(exits("error"), Some(0.0));
        assert_eq!(exits("other"), Some(0.0));
        assert_eq!(get("otter_global_run_queue_length"), Some(0.0));
        // No timer armed or fired, no socket: the series are there, at 0.
        assert_eq!(get("otter_timers"), Some(0.0));
        assert_eq!(get("otter_timers_fired_total"), Some(0.0));
        assert_eq!(get("otter_reactor_events_total"), Some(0.0));
        assert!(get("otter_uptime_seconds").unwrap() > 0.0);
        // One series per worker, labelled with its index; all the polls of the 12
        // processes among them and the spare threads' slots (a spare stands in for a
        // worker held by a long poll, such as a panic's print on a loaded machine).
        let polls: f64 = page
            .iter()
            .filter(|(n, l, _)| n == "otter_worker_polls_total" && l["runtime"] == "test")
            .map(|s| s.2)
            .sum();
        for w in 0..rt.threads() {
            let worker = w.to_string();
            let labels = [rt_label, ("worker", worker.as_str())];
            assert!(value(&page, "otter_worker_polls_total", &labels).is_some());
            for name in [
                "otter_worker_busy_microseconds_total",
                "otter_worker_steals_total",
                "otter_worker_parks_total",
                "otter_worker_run_queue_length",
            ] {
                assert!(
                    value(&page, name, &labels).is_some(),
                    "{name} of worker {w}"
                );
            }
        }
        assert!(polls >= 12.0, "{polls} polls");
    }
);

/// The one test of this binary that installs the global recorder.
#[test]
fn a_started_publisher_publishes_on_its_interval_to_the_global_recorder() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let page = recorder.handle();
    metrics::set_global_recorder(recorder).expect("no other test sets it");
    let rt = Runtime::builder().threads(2).build().unwrap();
    let h = rt.handle();
    let publisher = Publisher::new(&h).start(Duration::from_millis(5));
    rt.block_on(|mut cx: Context<Down>| async move {
        for _ in 0..3 {
            cx.spawn_monitor(|_: Context<()>| async {});
        }
        for _ in 0..3 {
            cx.recv().await;
        }
    })
    .unwrap();
    // The publisher, the root and 3 children; 4 exits; the publisher lives on.
    eventually("a publish after the exits", LIMIT, || {
        let p = samples(&page.render());
        value(&p, "otter_spawns_total", &[]) == Some(5.0)
            && value(&p, "otter_exits_total", &[("reason", "normal")]) == Some(4.0)
    });
    let text = page.render();
    assert_eq!(value(&samples(&text), "otter_processes", &[]), Some(1.0));
    assert!(
        text.contains("# HELP otter_processes Live processes."),
        "{text}"
    );
    assert!(text.contains("# TYPE otter_exits_total counter"), "{text}");
    assert!(text.contains("# TYPE otter_processes gauge"), "{text}");
    // Ending the publisher ends the publishing (its exit is the last thing counted).
    h.exit(publisher, ExitReason::Shutdown);
    eventually("the publisher has exited", LIMIT, || publisher.has_exited());
}
