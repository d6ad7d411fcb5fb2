//! The runtime's counters through the [`metrics`](https://docs.rs/metrics) facade
//! (feature `metrics`): any recorder the program installs (Prometheus, StatsD,
//! OpenTelemetry ...) sees the process count, spawns, exits by reason, sends to dead
//! pids and each worker's polls, busy time, steals, parks and run queue.
//!
//! ```
//! use std::time::Duration;
//! use otter::metrics::Publisher;
//!
//! let rt = otter::Runtime::new();
//! // Install a recorder first, e.g. `metrics_exporter_prometheus::PrometheusBuilder::new().install()`.
//! let publisher = Publisher::new(&rt.handle()).start(Duration::from_secs(1));
//! // ... the program runs; every second the recorder gets the counters ...
//! # let _ = publisher;
//! ```
//!
//! # Nothing on the hot paths
//!
//! The runtime counts what it always counts ([`introspect`](crate::introspect): one
//! writer per counter, no read-modify-write per message); this module never calls a
//! `metrics` macro where a process runs. A [`Publisher`] reads
//! [`Handle::runtime_info`] and sets every metric from it, either once
//! ([`Publisher::publish`], on the calling thread's recorder) or every interval in a
//! process of its own ([`Publisher::start`], on the global recorder). A read walks the
//! worker slots, a few loads each, and allocates the labels of the per-worker metrics:
//! its cost is per publish, whatever the load. Counters are set with
//! [`Counter::absolute`](::metrics::Counter::absolute) from the runtime's totals, so a
//! missed or late publish loses nothing.
//!
//! # The metrics
//!
//! Names follow Prometheus's conventions (`_total` on counters, the unit in the name).
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `otter_processes` | gauge | | live processes: spawned minus exited (the publisher's own process included) |
//! | `otter_spawns_total` | counter | | processes spawned since the runtime started |
//! | `otter_exits_total` | counter | `reason` | processes exited, by the kind of their reason: `normal`, `shutdown` (`Shutdown`, `ShutdownWith`), `killed` (`Killed`, `Kill`), `panic`, `error`, `other` (`Noproc`, `Noconnection`) |
//! | `otter_dead_sends_total` | counter | | sends to pids that named no process (dropped, as in Erlang) |
//! | `otter_global_run_queue_length` | gauge | | processes waiting in the global queue |
//! | `otter_uptime_seconds` | gauge | | time since the runtime started |
//! | `otter_worker_polls_total` | counter | `worker` | polls the worker started (a process's turn: otter's reductions) |
//! | `otter_worker_busy_microseconds_total` | counter | `worker` | time the worker spent running processes |
//! | `otter_worker_steals_total` | counter | `worker` | steals from other workers (one per batch taken) |
//! | `otter_worker_parks_total` | counter | `worker` | times the worker went to sleep |
//! | `otter_worker_run_queue_length` | gauge | `worker` | processes waiting on the worker: its local queue, LIFO slot and spawn stack |
//! | `otter_timers` | gauge | | timers armed now (`send_after`, intervals, sleeps, receive and call timeouts) |
//! | `otter_timers_fired_total` | counter | | timers fired since the runtime started |
//! | `otter_reactor_events_total` | counter | | readiness events the reactor dispatched (0 without sockets) |
//! | `otter_dist_frames_received_total` | counter | `peer` | frames read from the peer node, ticks included (feature `dist`, with [`Publisher::node`]) |
//! | `otter_dist_bytes_received_total` | counter | `peer` | bytes read from the peer node |
//! | `otter_dist_frames_sent_total` | counter | `peer` | frames written to the peer node |
//! | `otter_dist_bytes_sent_total` | counter | `peer` | bytes written to the peer node |
//! | `otter_dist_queued_bytes` | gauge | `peer` | bytes queued for the peer and not yet written (busy past `dist_buf_busy_limit`) |
//!
//! `worker` is the slot's index: `0` to `threads - 1` for the runtime's workers, and
//! from `threads` on for the spare threads that stood in for a worker held by a long
//! poll (a spare's slot appears once it has run). Labels given to
//! [`Publisher::label`] are added to every metric.
//!
//! Busy time is an integer counter in microseconds, not Prometheus's base unit of
//! seconds, because the facade's counters are integers; a worker's utilisation is
//! `rate(otter_worker_busy_microseconds_total[1m]) / 1e6`.
//!
//! Values are as [`Handle::runtime_info`] reads them: spawns, exits and dead sends
//! reach the runtime's totals at most 61 polls late on a busy worker, and at once on
//! one gone idle; so a publish right after a burst may show part of it, and the next
//! shows the rest.
//!
//! # Left out
//!
//! * **Per-peer series of a node that is not given** ([`Publisher::node`]): a
//!   publisher knows its runtime, not the nodes started on it.
//! * **Per-process metrics**: a process is too short-lived and too numerous for a
//!   label; [`Handle::processes`](crate::Handle::processes) gives them.
//! * Two runtimes publishing to one recorder set the same series unless each
//!   publisher is given a label of its own ([`Publisher::label`]).

use std::time::Duration;

use ::metrics::{Label, SharedString, Unit};

use crate::introspect::RuntimeInfo;
use crate::pid::Pid;
use crate::process::Context;
use crate::runtime::Handle;

/// The names of the metrics (module docs' table).
mod name {
    pub(super) const PROCESSES: &str = "otter_processes";
    pub(super) const SPAWNS: &str = "otter_spawns_total";
    pub(super) const EXITS: &str = "otter_exits_total";
    pub(super) const DEAD_SENDS: &str = "otter_dead_sends_total";
    pub(super) const GLOBAL_QUEUE: &str = "otter_global_run_queue_length";
    pub(super) const UPTIME: &str = "otter_uptime_seconds";
    pub(super) const POLLS: &str = "otter_worker_polls_total";
    pub(super) const BUSY: &str = "otter_worker_busy_microseconds_total";
    pub(super) const STEALS: &str = "otter_worker_steals_total";
    pub(super) const PARKS: &str = "otter_worker_parks_total";
    pub(super) const RUN_QUEUE: &str = "otter_worker_run_queue_length";
    pub(super) const TIMERS: &str = "otter_timers";
    pub(super) const TIMERS_FIRED: &str = "otter_timers_fired_total";
    pub(super) const REACTOR_EVENTS: &str = "otter_reactor_events_total";
    pub(super) const DIST_FRAMES_IN: &str = "otter_dist_frames_received_total";
    pub(super) const DIST_BYTES_IN: &str = "otter_dist_bytes_received_total";
    pub(super) const DIST_FRAMES_OUT: &str = "otter_dist_frames_sent_total";
    pub(super) const DIST_BYTES_OUT: &str = "otter_dist_bytes_sent_total";
    pub(super) const DIST_QUEUED: &str = "otter_dist_queued_bytes";
}

/// Describes every metric (its unit and help text) to the recorder of the calling
/// thread; a Prometheus exporter shows the text as `# HELP`. [`Publisher::start`]'s
/// process calls it before its first publish.
pub fn describe() {
    use ::metrics::{describe_counter, describe_gauge};
    describe_gauge!(name::PROCESSES, Unit::Count, "Live processes.");
    describe_counter!(
        name::SPAWNS,
        Unit::Count,
        "Processes spawned since the runtime started."
    );
    describe_counter!(
        name::EXITS,
        Unit::Count,
        "Processes exited, by the kind of their reason."
    );
    describe_counter!(
        name::DEAD_SENDS,
        Unit::Count,
        "Sends to pids that named no process."
    );
    describe_gauge!(
        name::GLOBAL_QUEUE,
        Unit::Count,
        "Processes waiting in the global run queue."
    );
    describe_gauge!(
        name::UPTIME,
        Unit::Seconds,
        "Time since the runtime started."
    );
    describe_counter!(name::POLLS, Unit::Count, "Polls started by the worker.");
    describe_counter!(
        name::BUSY,
        Unit::Microseconds,
        "Time the worker spent running processes."
    );
    describe_counter!(
        name::STEALS,
        Unit::Count,
        "Steals by the worker from other workers."
    );
    describe_counter!(name::PARKS, Unit::Count, "Times the worker went to sleep.");
    describe_gauge!(
        name::RUN_QUEUE,
        Unit::Count,
        "Processes waiting to run on the worker."
    );
    describe_gauge!(name::TIMERS, Unit::Count, "Timers armed now.");
    describe_counter!(name::TIMERS_FIRED, Unit::Count, "Timers fired.");
    describe_counter!(
        name::REACTOR_EVENTS,
        Unit::Count,
        "Readiness events the reactor dispatched."
    );
    describe_counter!(
        name::DIST_FRAMES_IN,
        Unit::Count,
        "Distribution frames read from the peer, ticks included."
    );
    describe_counter!(
        name::DIST_BYTES_IN,
        Unit::Bytes,
        "Bytes read from the peer."
    );
    describe_counter!(
        name::DIST_FRAMES_OUT,
        Unit::Count,
        "Distribution frames written to the peer."
    );
    describe_counter!(
        name::DIST_BYTES_OUT,
        Unit::Bytes,
        "Bytes written to the peer."
    );
    describe_gauge!(
        name::DIST_QUEUED,
        Unit::Bytes,
        "Bytes queued for the peer and not yet written."
    );
}

/// Publishes a runtime's counters to a `metrics` recorder (module docs).
///
/// ```
/// use std::time::Duration;
/// use otter::metrics::Publisher;
///
/// let rt = otter::Runtime::new();
/// // Once, now, to the recorder of this thread (none here: a no-op).
/// Publisher::new(&rt.handle()).label("node", "a").publish();
/// // Every 10 s, from a process of the runtime, to the global recorder.
/// let pid = Publisher::new(&rt.handle()).start(Duration::from_secs(10));
/// rt.handle().exit(pid, otter::ExitReason::Shutdown); // stops it
/// ```
#[derive(Debug, Clone)]
pub struct Publisher {
    handle: Handle,
    labels: Vec<Label>,
    #[cfg(feature = "dist")]
    node: Option<crate::dist::Node>,
}

impl Publisher {
    /// A publisher of the runtime of `handle`, with no extra label.
    pub fn new(handle: &Handle) -> Publisher {
        Publisher {
            handle: handle.clone(),
            labels: Vec::new(),
            #[cfg(feature = "dist")]
            node: None,
        }
    }

    /// Publishes `node`'s traffic with each peer too (`otter_dist_*`, labelled `peer`).
    #[cfg(feature = "dist")]
    #[cfg_attr(docsrs, doc(cfg(feature = "dist")))]
    pub fn node(mut self, node: &crate::dist::Node) -> Self {
        self.node = Some(node.clone());
        self
    }

    /// Adds the label `key = value` to every metric it publishes (e.g. to tell two
    /// runtimes of one program apart).
    pub fn label(mut self, key: impl Into<SharedString>, value: impl Into<SharedString>) -> Self {
        self.labels.push(Label::new(key, value));
        self
    }

    /// Reads the runtime's counters ([`Handle::runtime_info`]) and sets every metric
    /// from them, now, on the calling thread's recorder (the global one, or one set
    /// with `metrics::with_local_recorder`).
    pub fn publish(&self) {
        self.publish_info(&self.handle.runtime_info());
    }

    /// Starts a process on the runtime that calls [`describe`], then
    /// [`publish`](Publisher::publish) at once and every `interval`, on the global
    /// recorder, until the runtime stops or the process is ended
    /// ([`Handle::exit`]). Returns its pid.
    ///
    /// # Panics
    ///
    /// If `interval` is zero.
    pub fn start(self, interval: Duration) -> Pid<()> {
        assert!(
            !interval.is_zero(),
            "otter::metrics::Publisher::start: a zero interval"
        );
        self.handle
            .clone()
            .spawn(move |cx: Context<()>| async move {
                describe();
                loop {
                    self.publish();
                    cx.sleep(interval).await;
                }
            })
    }

    fn labels_with(&self, key: &'static str, value: String) -> Vec<Label> {
        let mut l = self.labels.clone();
        l.push(Label::new(key, value));
        l
    }

    fn publish_info(&self, info: &RuntimeInfo) {
        use ::metrics::{counter, gauge};
        let base = &self.labels;
        gauge!(name::PROCESSES, base.clone()).set(info.processes as f64);
        counter!(name::SPAWNS, base.clone()).absolute(info.spawns);
        let e = &info.exits;
        for (reason, n) in [
            ("normal", e.normal),
            ("shutdown", e.shutdown),
            ("killed", e.killed),
            ("panic", e.panic),
            ("error", e.error),
            ("other", e.other),
        ] {
            counter!(name::EXITS, self.labels_with("reason", reason.into())).absolute(n);
        }
        counter!(name::DEAD_SENDS, base.clone()).absolute(info.dead_sends);
        gauge!(name::GLOBAL_QUEUE, base.clone()).set(info.global_queue as f64);
        gauge!(name::UPTIME, base.clone()).set(info.uptime.as_secs_f64());
        for w in &info.workers {
            let labels = self.labels_with("worker", w.index.to_string());
            counter!(name::POLLS, labels.clone()).absolute(w.polls);
            let busy = u64::try_from(w.busy.as_micros()).unwrap_or(u64::MAX);
            counter!(name::BUSY, labels.clone()).absolute(busy);
            counter!(name::STEALS, labels.clone()).absolute(w.steals);
            counter!(name::PARKS, labels.clone()).absolute(w.parks);
            gauge!(name::RUN_QUEUE, labels).set(w.run_queue as f64);
        }
        gauge!(name::TIMERS, base.clone()).set(info.timers as f64);
        counter!(name::TIMERS_FIRED, base.clone()).absolute(info.timers_fired);
        counter!(name::REACTOR_EVENTS, base.clone()).absolute(info.reactor_events);
        #[cfg(feature = "dist")]
        if let Some(node) = &self.node {
            for p in node.peers() {
                let labels = self.labels_with("peer", p.node);
                counter!(name::DIST_FRAMES_IN, labels.clone()).absolute(p.frames_in);
                counter!(name::DIST_BYTES_IN, labels.clone()).absolute(p.bytes_in);
                counter!(name::DIST_FRAMES_OUT, labels.clone()).absolute(p.frames_out);
                counter!(name::DIST_BYTES_OUT, labels.clone()).absolute(p.bytes_out);
                gauge!(name::DIST_QUEUED, labels).set(p.queued as f64);
            }
        }
    }
}
