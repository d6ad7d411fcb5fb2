//! The http workload (WORKLOADS.md "http", issue 46): the same axum JSON API on otter and on
//! plain tokio under one load generator (`http-load`): requests per second, p50 and p99 of
//! a request, the server's CPU per million requests and its resident set, each as the
//! median over the repetitions with the range of the runs.

use std::fmt::Write as _;

use super::cell::{Cell, Results, bytes, rate, ratio};
use super::latency::{field, micros};
use crate::suite::{HTTP_CONNS, HTTP_WORK_US, Impl, Sizes, http_id};

/// The measures of the table: (name, field, formatting, higher is better).
type Measure = (&'static str, &'static str, fn(f64) -> String, bool);

const MEASURES: [Measure; 7] = [
    ("requests/s", "ops_per_s", rate, true),
    ("p50 of a request", "p50_us", micros, false),
    ("p99 of a request", "p99_us", micros, false),
    (
        "server CPU s / M requests",
        "server_cpu_s_per_million",
        cpu,
        false,
    ),
    ("server peak RSS (VmHWM)", "server_vmhwm_kb", kib, false),
    (
        "server RSS at the end (VmRSS)",
        "server_vmrss_kb",
        kib,
        false,
    ),
    (
        "server OS threads at the end",
        "server_threads",
        count,
        false,
    ),
];

fn count(x: f64) -> String {
    format!("{x:.0}")
}

fn cpu(x: f64) -> String {
    format!("{x:.1}")
}

/// kB of `/proc/PID/status` as "13.1 MiB".
pub(super) fn kib(kb: f64) -> String {
    if kb >= 1024.0 {
        format!("{:.1} MiB", kb / 1024.0)
    } else {
        bytes(kb * 1024.0)
    }
}

/// The median of `key` and the range of the runs: "12.3k/s (11.9k/s – 12.8k/s, 5 runs)".
fn spread(c: &Cell<'_>, key: &'static str, fmt: fn(f64) -> String) -> String {
    let f = field(key);
    let median = c.show(f, fmt);
    let Cell::Ok(runs) = c else { return median };
    let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    if v.len() < 2 {
        return median;
    }
    format!("{median} ({} – {}, {} runs)", fmt(lo), fmt(hi), v.len())
}

/// Appends this section to `md`.
pub(super) fn section(md: &mut String, res: &Results<'_>, s: &Sizes) {
    let _ = writeln!(md, "\n## HTTP — a JSON API on otter and on plain tokio\n");
    let _ = writeln!(
        md,
        "WORKLOADS.md \"http\" (issue 46): the same axum routes (`GET /health`, `POST /jobs`, \
         `GET /jobs/{{id}}`, `DELETE /jobs/{{id}}`) served by `otter-bench http-server`, \
         `impl=otter` (hyper over otter's acceptor pool, a process per connection, each job \
         a server under a simple_one_for_one supervisor) and `impl=tokio` (`axum::serve`, a \
         task per job, the jobs in a `Mutex<HashMap>`), each with its runtime's default \
         options and one worker, on core 0; the same load generator (`otter-bench \
         http-load`, one thread on `mio`, neither otter nor tokio) on core 1. {HTTP_CONNS} \
         keep-alive connections, each looping POST → GET → DELETE, one request in flight; \
         a job computes for about {HTTP_WORK_US} µs (a fixed number of rounds) on its \
         runtime's blocking pool; `DELETE` stops the job's server on otter \
         (`gen_server:stop`), removes the task and aborts it on tokio. 1 s of \
         warm-up, then {} s measured. Medians over the repetitions, the runs' range in \
         parentheses; the implementation that goes first alternates between repetitions.\n",
        s.http_seconds
    );
    let id = http_id(s);
    let (co, ct) = (res.cell(&id, Impl::Otter), res.cell(&id, Impl::Tokio));
    let _ = writeln!(
        md,
        "| measure | otter | tokio | otter vs tokio |\n|---|---|---|---|"
    );
    for (name, key, fmt, higher_better) in MEASURES {
        let (better, worse) = if key == "ops_per_s" {
            ("more", "fewer")
        } else {
            ("lower", "higher")
        };
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} |",
            spread(&co, key, fmt),
            spread(&ct, key, fmt),
            ratio(
                co.median(field(key)),
                ct.median(field(key)),
                higher_better,
                better,
                worse
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_shows_the_median_and_the_range() {
        let runs = [
            serde_json::json!({"ops_per_s": 1000.0}),
            serde_json::json!({"ops_per_s": 3000.0}),
            serde_json::json!({"ops_per_s": 2000.0}),
        ];
        let c = Cell::Ok(runs.iter().collect());
        assert_eq!(
            spread(&c, "ops_per_s", rate),
            format!(
                "{} ({} – {}, 3 runs)",
                rate(2000.0),
                rate(1000.0),
                rate(3000.0)
            )
        );
        let one = [serde_json::json!({"ops_per_s": 5.0})];
        assert_eq!(
            spread(&Cell::Ok(one.iter().collect()), "ops_per_s", rate),
            rate(5.0)
        );
    }
}
