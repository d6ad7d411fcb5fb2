//! The sampler: a process that reads the workers' counters once a second and keeps
//! the last [`HISTORY`] samples of each worker's utilisation and run queue (the
//! page's plots).
//!
//! A worker's utilisation over a second is the growth of its busy time over the wall
//! time between the two reads, capped at 1 (busy time is counted when a worker starts
//! a search, so a second's growth may hold some of the second before: `introspect`'s
//! rule 6).

use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::HISTORY;
use super::api::Shared;
use super::json;
use crate::introspect::RuntimeInfo;
use crate::process::Context;

/// How often the sampler reads the counters.
pub(super) const PERIOD: Duration = Duration::from_secs(1);

/// One worker at one sample.
#[derive(Debug, Clone, Copy)]
struct Point {
    /// Busy time over wall time since the previous sample, 0 to 1.
    utilisation: f32,
    run_queue: u32,
}

/// One sample: when (from the runtime's start) and each worker slot's point (by index).
#[derive(Debug)]
struct Sample {
    uptime: Duration,
    workers: Vec<Option<Point>>,
}

/// The workers' history.
#[derive(Debug, Default)]
pub(super) struct History {
    samples: VecDeque<Sample>,
    /// The previous read: when, and each worker slot's busy time.
    previous: Option<(Instant, Vec<Duration>)>,
}

impl History {
    /// Adds the sample of `info`, read at `now`.
    pub(super) fn record(&mut self, info: &RuntimeInfo, now: Instant) {
        let slots = info.workers.iter().map(|w| w.index + 1).max().unwrap_or(0);
        let mut busy = vec![Duration::ZERO; slots];
        let mut workers = vec![None; slots];
        for w in &info.workers {
            busy[w.index] = w.busy;
            let utilisation = match &self.previous {
                Some((then, before)) => {
                    let wall = now.saturating_duration_since(*then).as_secs_f64();
                    let grew = w
                        .busy
                        .saturating_sub(before.get(w.index).copied().unwrap_or_default());
                    if wall > 0.0 {
                        (grew.as_secs_f64() / wall).min(1.0) as f32
                    } else {
                        0.0
                    }
                }
                None => 0.0,
            };
            workers[w.index] = Some(Point {
                utilisation,
                run_queue: u32::try_from(w.run_queue).unwrap_or(u32::MAX),
            });
        }
        self.previous = Some((now, busy));
        if self.samples.len() == HISTORY {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample {
            uptime: info.uptime,
            workers,
        });
    }

    /// Appends the history as JSON: `{"period_ms":..,"uptime_ms":[..],"workers":[{"index":..,"utilisation":[..],"run_queue":[..]}]}`,
    /// a worker's value `null` in a sample it was not in.
    pub(super) fn write_json(&self, out: &mut String) {
        out.push('{');
        json::num(out, true, "period_ms", PERIOD.as_millis());
        json::key(out, false, "uptime_ms");
        out.push('[');
        for (i, s) in self.samples.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&s.uptime.as_millis().to_string());
        }
        out.push(']');
        let slots = self.samples.iter().map(|s| s.workers.len()).max();
        json::key(out, false, "workers");
        out.push('[');
        for index in 0..slots.unwrap_or(0) {
            if index > 0 {
                out.push(',');
            }
            out.push('{');
            json::num(out, true, "index", index);
            for (name, pick) in [
                (
                    "utilisation",
                    (|p: &Point| format!("{:.3}", p.utilisation)) as fn(&Point) -> String,
                ),
                ("run_queue", |p: &Point| p.run_queue.to_string()),
            ] {
                json::key(out, false, name);
                out.push('[');
                for (i, s) in self.samples.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    match s.workers.get(index).copied().flatten() {
                        Some(p) => out.push_str(&pick(&p)),
                        None => out.push_str("null"),
                    }
                }
                out.push(']');
            }
            out.push('}');
        }
        out.push_str("]}");
    }
}

/// The sampler's process: a sample now and every [`PERIOD`], until its link to the
/// acceptor ends it.
pub(super) async fn run(cx: Context<()>, shared: Arc<Shared>) {
    loop {
        let info = shared.handle.runtime_info();
        shared
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(&info, Instant::now());
        cx.sleep(PERIOD).await;
    }
}
