//! Every section of REPORT.md after the summary, in report order: a heading, what the
//! workload is (its prose), its tables as data (`table.rs`), and its chart (`plot.rs`).
//!
//! The metrics are the constants below; a table names the ones it shows. A new field of a
//! workload's JSON line is one `Metric` line here and one column (`fig`, `trio`) or row
//! (`row`) in its workload's table.

use super::format::{nanos, secs, si};
use super::plot::{Axis, BarChart, Guide, LineChart, Marker, Series};
use super::table::{Better, Col, Field, Metric, Results, Row, Spread, Table, Vs};
use super::table::{compare, factor, fig, row, table, trio, vs};
use super::{Ctx, ERLANG, OTTER, OTTER_MATCH};
use crate::suite::{self, FAN_OUT_RECEIVERS, Impl, LATENCY_B, LATENCY_W, Sizes};

use Better::{Higher, Lower, Neither};
use Impl::{Erlang, Otter};

pub(super) const TIME: Metric = Metric::key("seconds", secs, Lower);
pub(super) const RATE: Metric = Metric::new(Field::Rate, rate, Higher);
pub(super) const NS: Metric = Metric::new(Field::NsPerOp, nanos, Lower);
const BPP: Metric = Metric::key("bytes_per_process", bytes, Lower).words("smaller", "larger");
const BEAM_BPP: Metric = Metric::key("beam_bytes_per_process", bytes, Neither).only(Erlang);
const PEAK_RSS: Metric = Metric::key("peak_rss_bytes", mib, Lower).words("smaller", "larger");
const P50: Metric = Metric::key("p50_us", micros, Lower);
pub(super) const P99: Metric = Metric::key("p99_us", micros, Lower);
pub(super) const P999: Metric = Metric::key("p999_us", micros, Lower);
pub(super) const MAX: Metric = Metric::key("max_us", micros, Lower);
const BACKGROUND: Metric = Metric::key("background_msgs_per_s", rate, Neither);
const HOG_YIELDS: Metric = Metric::key("hog_yields", count, Neither);
/// Round trips or requests per second, as the load generators count them.
pub(super) const OPS_PER_S: Metric = Metric::key("ops_per_s", rate, Higher);
const SERVER_CPU: Metric = Metric::key("server_cpu_s_per_million", |x| format!("{x:.2}"), Lower);
pub(super) const VMHWM: Metric =
    Metric::key("server_vmhwm_kb", kib, Lower).words("lower", "higher");

/// A rate: "1.5M/s".
pub(super) fn rate(x: f64) -> String {
    format!("{}/s", si(x))
}
fn count(x: f64) -> String {
    format!("{x:.0}")
}
/// Bytes: "312 B", "1.50 KiB".
fn bytes(x: f64) -> String {
    if x.abs() >= 1024.0 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{x:.0} B")
    }
}
fn mib(x: f64) -> String {
    format!("{:.1} MiB", x / f64::from(1u32 << 20))
}
/// kB of `/proc/PID/status` as "13.1 MiB".
pub(super) fn kib(kb: f64) -> String {
    if kb >= 1024.0 {
        format!("{:.1} MiB", kb / 1024.0)
    } else {
        bytes(kb * 1024.0)
    }
}
/// µs for people: "0.42 µs", "12.1 ms".
pub(super) fn micros(us: f64) -> String {
    secs(us * 1e-6)
}
/// "64 B", "4 KiB".
fn size_name(size: u64) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}
fn si_u(x: u64) -> String {
    si(x as f64)
}

/// The three columns of a table of one measure a row: otter, `other`, and the comparison.
fn measures(other: &str) -> Vec<Col> {
    let cmp = vs(format!("otter vs {other}"), 0, 1, None, Vs::Bold);
    vec![fig("otter", 0, None), fig(other, 1, None), cmp]
}

/// A row of literal cells.
fn text_row(cells: Vec<String>) -> Row {
    Row {
        keys: cells,
        slots: Vec::new(),
        metric: None,
    }
}

/// A bar chart of otter and erlang, `bars` giving an implementation's bar in each group.
fn bar_chart(
    title: &str,
    sub: String,
    y: Axis,
    groups: Vec<String>,
    bars: impl Fn(Impl) -> Vec<Option<f64>>,
) -> BarChart {
    let series = vec![
        ("otter".into(), OTTER, bars(Otter)),
        ("erlang".into(), ERLANG, bars(Erlang)),
    ];
    BarChart {
        title: title.into(),
        subtitle: sub,
        y,
        groups,
        series,
    }
}

/// message / closure of seed #1 on otter and on erlang, and the gap's comparison.
fn closure_gap(res: &Results<'_>, n: u64) -> Vec<String> {
    let ns = |style, imp| res.median(&format!("closure n={n} style={style}"), imp, &NS);
    let mc = |imp| {
        ns("message", imp)
            .zip(ns("closure", imp))
            .map(|(m, c)| m / c)
    };
    let x = |r: Option<f64>| r.map_or("—".into(), |x| format!("{}×", factor(x)));
    let gap = match (mc(Otter), mc(Erlang)) {
        (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
        (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
        _ => "—".into(),
    };
    vec![x(mc(Otter)), x(mc(Erlang)), gap]
}

/// Seed #4, the ring: the N × M grid, the table of every cell, and `ring.svg`.
fn ring(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += "\n## Seed #4 — the ring (Armstrong's ring, N processes × M rounds)\n\n\
        \"Erlang vs. Stackless vs. multitask: the Ring Benchmark Showdown\" (2007): N and M \
        each in 100, 1,000, 10,000; Erlang took 20.5 s for 10,000 × 10,000 (≈ 4.9 M sends/s). \
        Timed: building the ring, M rounds, and one `stop` round. Sends per second \
        (N·M / time); the cell gives otter, erlang, and otter vs erlang.\n\n";
    let cid = |n: u64, m: u64| format!("ring n={n} m={m}");
    let ran = |n, m| [Otter, Erlang].iter().any(|&i| res.runs(&cid(n, m), i));
    let mut grid = table(&["N \\ M"], Vec::new(), Vec::new());
    let mut list = table(
        &["N", "M", "sends"],
        vec![fig("otter time", 0, TIME), fig("erlang time", 1, TIME)],
        Vec::new(),
    );
    list.cols.extend(trio(RATE, "sends/s"));
    grid.cols = s
        .ring
        .iter()
        .map(|&m| fig(format!("M = {}", si_u(m)), 0, None))
        .collect();
    for &n in &s.ring {
        let mut cells = vec![format!("**N = {}**", si_u(n))];
        for &m in &s.ring {
            if !ran(n, m) {
                cells.push(format!("not run ({} sends: `--full`)", si_u(n * m)));
                continue;
            }
            let (o, e) = (res.cell(&cid(n, m), Otter), res.cell(&cid(n, m), Erlang));
            let (o_s, e_s) = (o.show(&RATE, Spread::None), e.show(&RATE, Spread::None));
            let cmp = compare(o.median(&RATE), e.median(&RATE), &RATE, Vs::Bold);
            cells.push(format!("otter {o_s}<br>erlang {e_s}<br>{cmp}"));
            list.rows
                .push(row(&[&n, &m, &si_u(n * m)], &cid(n, m), None));
        }
        grid.rows.push(text_row(cells));
    }
    c.md += &format!("{}\n{}", grid.markdown(res), list.markdown(res));
    let mut series = Vec::new();
    for (imp, color) in [(Otter, OTTER), (Erlang, ERLANG)] {
        for (i, &n) in s.ring.iter().enumerate() {
            let at = |&m: &u64| {
                res.median(&cid(n, m), imp, &RATE)
                    .map(|y| ((n * m) as f64, y))
            };
            let marker = [
                Marker::Circle,
                Marker::Square,
                Marker::Triangle,
                Marker::Diamond,
            ][i % 4];
            let name = format!("{} N={}", imp.name(), si_u(n));
            series.push(Series::new(
                name,
                color,
                imp == Erlang,
                marker,
                s.ring.iter().filter_map(at).collect(),
            ));
        }
    }
    let (x, y) = (
        Axis::log("N·M sends (log)", si),
        Axis::log("sends per second (log)", si),
    );
    let chart = LineChart::new(
        "Ring: sends per second over N·M",
        "seed #4; median of repetitions; higher is better",
        x,
        y,
        series,
    );
    c.svg("ring.svg", &[chart], "ring: sends/s over N·M")
}

/// Seed #3, serial spawn: time and rate by number of chains, and `spawn.svg`.
fn spawn(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Seed #3 — serial spawn (n processes in c chains)\n\n\"How fast can Erlang create \
         processes?\" (2006): 1,000,000 processes in c chains, each spawning the next and \
         exiting; ≈ 350,000 spawn+exit/s then, slower with more chains. Here n = {}.\n\n",
        si_u(s.spawn_n)
    );
    let cid = |ch: u64| format!("spawn n={} c={ch}", s.spawn_n);
    let mut cols = vec![fig("otter time", 0, TIME), fig("erlang time", 1, TIME)];
    cols.extend(trio(RATE, "spawn+exit/s"));
    let rows = s.spawn_c.iter().map(|&ch| row(&[&ch], &cid(ch), None));
    c.md += &table(&["chains c"], cols, rows.collect()).markdown(res);
    let sub = format!("seed #3; n = {}; higher is better", si_u(s.spawn_n));
    let groups = s.spawn_c.iter().map(|ch| format!("c = {ch}")).collect();
    let bars = |imp| {
        s.spawn_c
            .iter()
            .map(|&ch| res.median(&cid(ch), imp, &RATE))
            .collect()
    };
    let y = Axis::linear("spawn+exit per second", si);
    let chart = bar_chart(
        "Serial spawn: spawn+exit per second by number of chains",
        sub,
        y,
        groups,
        bars,
    );
    c.bars("spawn.svg", &chart, "spawn rate by chains")
}

/// A raw/server table (counting, pingpong): otter, erlang, and each server row against the
/// raw row of the same keys (slots 2 and 3). `rows`: (keys, case, its raw case).
fn raw_server(
    m: Metric,
    head: &str,
    keys: &[&'static str],
    rows: Vec<(Vec<String>, String, String)>,
) -> Table {
    let mut cols = trio(m, head);
    cols.push(vs("server vs raw, otter", 0, 2, m, Vs::Plain));
    cols.push(vs("server vs raw, erlang", 1, 3, m, Vs::Plain));
    let rows = rows.into_iter().map(|(keys, id, raw)| {
        let mut r = row(&[], &id, None);
        r.keys = keys;
        if id != raw {
            r.slots
                .extend([Some((raw.clone(), Otter)), Some((raw, Erlang))]);
        }
        r
    });
    table(keys, cols, rows.collect())
}

/// Seed #5, the CountingActor: messages per second by style and senders.
fn counting(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Seed #5 — the CountingActor (raw receive loop vs server layer)\n\n\
         \"Scala Actor v Erlang gen_server Performance\" (2011, 4 cores): 3,000,000 `Count(100)` \
         then a synchronous GetAndReset; Erlang bare receive 2.8 M msg/s, gen_server 1.8 M msg/s. \
         Here msgs = {}. Messages per second.\n\n\
         `style=server` is `otter::server` (Count a cast, GetAndReset a call) against Erlang's \
         `gen_server`; \"server vs raw\" is each runtime's server layer against its own raw \
         receive loop, same senders.\n\n",
        si_u(s.counting_msgs)
    );
    let cid = |n: u64, style: &str| {
        format!(
            "counting msgs={} senders={n} style={style}",
            s.counting_msgs
        )
    };
    let mut rows = Vec::new();
    for st in ["raw", "server"] {
        rows.extend(
            s.senders
                .iter()
                .map(|&n| (vec![st.into(), n.to_string()], cid(n, st), cid(n, "raw"))),
        );
    }
    c.md += &raw_server(RATE, "msgs/s", &["style", "senders"], rows).markdown(res);
    let (fan, one) = (suite::fan_out_id(s), cid(1, "raw"));
    let vs_one = |imp| {
        compare(
            res.median(&fan, imp, &RATE),
            res.median(&one, imp, &RATE),
            &RATE,
            Vs::Plain,
        )
    };
    let (fo, fe) = (res.cell(&fan, Otter), res.cell(&fan, Erlang));
    c.md += &format!(
        "\nFan-out: 1 sender, raw, round-robin to {FAN_OUT_RECEIVERS} counters (each send \
         to another process than the one before): otter {}, erlang {} ({}); against 1 \
         counter, otter {}, erlang {}.\n",
        fo.show(&RATE, Spread::None),
        fe.show(&RATE, Spread::None),
        compare(fo.median(&RATE), fe.median(&RATE), &RATE, Vs::Bold),
        vs_one(Otter),
        vs_one(Erlang),
    );
    let floor = res.cell(&cid(1, "channel"), Otter);
    if let Some(f) = floor.median(&RATE) {
        let share = res
            .median(&one, Otter, &RATE)
            .map_or("—".into(), |r| format!("{:.0}%", 100.0 * r / f));
        c.md += &format!(
            "\nThe floor: the same messages between two OS threads over `std::sync::mpsc` \
             (crossbeam's unbounded channel, no otter; `counting style=channel`): {}. \
             otter's raw loop, 1 sender, runs at {share} of it. A message that crosses cores costs \
             cache-line transfers, and the channel pays them too. A stream's send in otter has \
             one locked instruction, the mailbox tail's CAS (the pid table's count is kept \
             across a poll); what the rest of its time is goes in ARCHITECTURE.md \"Where \
             the time goes\".\n",
            floor.show(&RATE, Spread::None),
        );
    }
}

/// Seed #2, the mailbox: time over k in both orders, the growth exponent, and `mailbox.svg`.
fn mailbox(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Seed #2 — mailbox: selective receive in spawn vs reverse order\n\n\
         \"Erlang process mailbox performance\" (2010): 10,000 children send `{{self(), ok}}`; \
         the parent takes them by pid. Reverse spawn order took 1.37 s, spawn order 83 ms: the \
         BEAM rescans skipped messages, O(k²). otter **key** = `recv_key` by the child's pid \
         (O(1) keyed receive, the default); otter **match** = `recv_match` with a predicate on \
         the pid (Erlang's selective receive, for reference, k ≤ {}). Time from the first spawn \
         to the last message taken; lower is better.\n\n",
        si_u(s.mailbox_match_max_k)
    );
    // The slots: (order, implementation, style), with the column's head and the chart's series.
    let slots = [
        ("spawn", Otter, "", "otter key, spawn", OTTER),
        ("reverse", Otter, "", "otter key, reverse", OTTER),
        (
            "spawn",
            Otter,
            " style=match",
            "otter match, spawn",
            OTTER_MATCH,
        ),
        (
            "reverse",
            Otter,
            " style=match",
            "otter match, reverse",
            OTTER_MATCH,
        ),
        ("spawn", Erlang, "", "erlang spawn", ERLANG),
        ("reverse", Erlang, "", "erlang reverse", ERLANG),
    ];
    let mid = |k: u64, (order, imp, style, ..): (&str, Impl, &str, &str, _)| {
        Some((format!("mailbox k={k} order={order}{style}"), imp))
    };
    let mut cols: Vec<Col> = slots
        .iter()
        .enumerate()
        .map(|(i, sl)| fig(sl.3, i, TIME))
        .collect();
    cols.push(vs("otter(key) vs erlang, spawn", 0, 4, TIME, Vs::Bold));
    cols.push(vs("otter(key) vs erlang, reverse", 1, 5, TIME, Vs::Bold));
    let row_of = |k: u64| Row {
        keys: vec![si_u(k)],
        slots: slots.iter().map(|&sl| mid(k, sl)).collect(),
        metric: None,
    };
    let mut rows: Vec<Row> = s.mailbox_k.iter().map(|&k| row_of(k)).collect();
    // Growth exponent: the log-log slope of time over k between the smallest and largest k.
    let mut growth = vec!["**growth exponent**".to_string()];
    let mut series = Vec::new();
    for sl @ (order, imp, _, head, color) in slots {
        let at = |&k: &u64| {
            mid(k, sl)
                .and_then(|(id, imp)| res.median(&id, imp, &TIME))
                .map(|t| (k as f64, t))
        };
        let pts: Vec<(f64, f64)> = s.mailbox_k.iter().filter_map(at).collect();
        growth.push(match (pts.first(), pts.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln())
            }
            _ => "—".into(),
        });
        let name = if imp == Erlang {
            format!("erlang, {order} order")
        } else {
            format!("{head} order")
        };
        let rev = order == "reverse";
        let marker = if rev { Marker::Square } else { Marker::Circle };
        series.push(Series::new(name, color, rev, marker, pts));
    }
    growth.extend([String::new(), String::new()]);
    rows.push(text_row(growth));
    c.md += &table(&["k"], cols, rows).markdown(res);
    c.md += "\nThe growth exponent is the log-log slope of time over k between the smallest and \
             largest k measured: about 1 is linear, about 2 quadratic.\n";
    let (x, y) = (
        Axis::log("k children (log)", si),
        Axis::log("time (log)", secs),
    );
    let sub = "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better";
    let mut chart = LineChart::new(
        "Mailbox: time to take k messages by sender pid",
        sub,
        x,
        y,
        series,
    );
    // Reference slopes, anchored at the fastest series' smallest k.
    let all: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let (kmin, kmax) = all
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if kmax > kmin {
        let t0 = all
            .iter()
            .filter(|p| p.0 == kmin)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        let r = kmax / kmin;
        for (label, to) in [("∝ k", t0 * r), ("∝ k²", t0 * r * r)] {
            chart.guides.push(Guide {
                label: label.into(),
                from: (kmin, t0),
                to: (kmax, to),
            });
        }
    }
    c.svg(
        "mailbox.svg",
        &[chart],
        "mailbox time over k, both orders, log-log",
    )
}

/// Seed #1, message versus function: ns per increment, the message / closure gap, and
/// `closure.svg`.
fn closure(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Seed #1 — message versus function (a counter held by a process or by closures)\n\n\
         \"My shocking Erlang discovery\" (R14B01): 10,000,000 increments; process 39.7 s, \
         closures 2.4 s, \"sixteen times faster\". Here n = {}. Nanoseconds per increment; the \
         figure of merit is message / closure (how much a message costs over a call).\n\n",
        si_u(s.closure_n)
    );
    let cid = |style: &str| format!("closure n={} style={style}", s.closure_n);
    let gap = closure_gap(res, s.closure_n);
    let mut rows = vec![row(&[&"message, ns/increment"], &cid("message"), NS)];
    rows.push(row(&[&"closure, ns/increment"], &cid("closure"), NS));
    rows.push(text_row(
        [vec!["**message / closure**".into()], gap.clone()].concat(),
    ));
    c.md += &table(&[""], measures("erlang"), rows).markdown(res);
    let (n, o, e) = (si_u(s.closure_n), &gap[0], &gap[1]);
    let sub = format!("seed #1; n = {n}; message/closure: otter {o}, erlang {e}; lower is better");
    let groups = vec!["message (process)".into(), "closure chain".into()];
    let bars = |imp| {
        ["message", "closure"]
            .map(|st| res.median(&cid(st), imp, &NS))
            .into()
    };
    let y = Axis::linear("ns per increment", nanos);
    let chart = bar_chart(
        "Message vs closure: nanoseconds per increment",
        sub,
        y,
        groups,
        bars,
    );
    c.bars("closure.svg", &chart, "per-message vs per-call cost")
}

/// Memory: bytes per idle process.
fn memory(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Memory — an idle process\n\nWORKLOADS.md \"memory\" (the cost-of-a-process \
         question of seed #3): p = {} processes blocked in receive; VmRSS delta / p. Erlang \
         also reports its own accounting (`erlang:memory(processes)`); lower is better.\n\n",
        si_u(s.memory_p)
    );
    let cid = format!("memory p={}", s.memory_p);
    let rows = vec![
        row(&[&"RSS bytes per process"], &cid, BPP),
        row(&[&"runtime's own account"], &cid, BEAM_BPP),
        row(&[&"spawn time for p (until all are blocked)"], &cid, TIME),
    ];
    c.md += &table(&[""], measures("erlang"), rows).markdown(res);
}

/// Ping-pong: nanoseconds per round trip by style.
fn pingpong(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Ping-pong — round-trip latency\n\nWORKLOADS.md \"pingpong\" (the per-hop cost of \
         seed #4, the call layer of seed #5): r = {} round trips between two processes; \
         nanoseconds per round trip, lower is better.\n\n\
         `style=raw`: plain messages; `style=server`: B is an `otter::server` and each round \
         trip is one `call` (Erlang: a `gen_server` and `gen_server:call`). \"server vs raw\" is \
         each runtime's call against its own raw round trip.\n\n",
        si_u(s.pingpong_r)
    );
    let cid = |style: &str| format!("pingpong r={} style={style}", s.pingpong_r);
    let rows = ["raw", "server"].map(|st| (vec![st.to_string()], cid(st), cid("raw")));
    c.md += &raw_server(NS, "ns/round trip", &["style"], rows.into()).markdown(res);
}

/// fib(n), with fib(1) = fib(2) = 1.
fn fib(n: u64) -> u64 {
    (2..n).fold((1u64, 1u64), |(a, b), _| (b, a + b)).1
}

/// Fork-join: a process tree that sums its leaves, its time and its peak RSS.
fn forkjoin(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Fork-join — a process tree that sums its leaves\n\nWORKLOADS.md \"forkjoin\": \
         fib({}) as processes, each spawning two children and summing their replies ({} \
         processes). Walked depth-first, a few hundred are alive at once; breadth-first, a \
         large part of the tree: the peak RSS (`VmHWM`, the whole OS process) tells which. \
         Lower is better for time and memory.\n\n",
        s.forkjoin_n,
        si_u(2 * fib(s.forkjoin_n) - 1)
    );
    let cid = format!("forkjoin n={}", s.forkjoin_n);
    let rows = vec![
        row(&[&"time"], &cid, TIME),
        row(
            &[&"processes/s"],
            &cid,
            Metric::new(Field::Rate, rate, Neither),
        ),
        row(&[&"peak RSS"], &cid, PEAK_RSS),
    ];
    c.md += &table(&[""], measures("erlang"), rows).markdown(res);
}

/// Latency under load: the percentiles with hog=0 and hog=1, and `latency.svg`.
fn latency(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Latency — round trips while the runtime is loaded\n\n\
         WORKLOADS.md \"latency\" (issue 24): r = {} round trips between two processes, each \
         timed on its own, while a ring of b = {LATENCY_B} processes passes {} tokens, each \
         member computing for w = {LATENCY_W} µs per message (a busy loop on the monotonic \
         clock); with hog=1 one more process computes without yielding for the whole run. \
         Percentiles by nearest rank; the median over the repetitions of each. The figure of \
         merit is the tail; \"otter / erlang\" is bold (1/N) where otter's is shorter.\n\n\
         otter's scheduler is cooperative: the hog holds one worker for the whole run; \
         the runtime's watchdog thread (a look every 5 ms) hands on what was queued on it \
         and starts a spare thread in its place, so the rest keeps as many workers and the \
         OS time-slices the hog's thread with them (docs/design/0026, 0027). The hog yields \
         once when no round trip has completed for 70 ms (50 ms + 4·b·w), so that a run \
         ends even if nothing stood in for its worker; \"hog yields\" counts those in the \
         timed part (the BEAM preempts its hog and never gets there).\n\n",
        si_u(s.latency_r),
        LATENCY_B / 2
    );
    let pct = [(P50, "p50"), (P99, "p99"), (P999, "p99.9"), (MAX, "max")];
    let mut rows = Vec::new();
    for hog in [0u64, 1] {
        let cid = suite::latency_id(s, hog);
        rows.extend(pct.iter().map(|(m, name)| row(&[&hog, name], &cid, *m)));
        rows.push(row(&[&hog, &"background msgs/s"], &cid, BACKGROUND));
        if hog == 1 {
            rows.push(row(
                &[&hog, &"hog yields (stalls of 70 ms)"],
                &cid,
                HOG_YIELDS,
            ));
        }
    }
    let cols = vec![
        fig("otter", 0, None),
        fig("erlang", 1, None),
        vs("otter / erlang", 0, 1, None, Vs::Over),
    ];
    c.md += &table(&["hog", "measure"], cols, rows).markdown(res);
    let sub = format!(
        "r = {}, b = {LATENCY_B}, w = {LATENCY_W} µs; hog=1: one process never yields; \
         log scale, lower is better",
        si_u(s.latency_r)
    );
    let groups = [0, 1]
        .iter()
        .flat_map(|hog| pct.iter().map(move |(_, n)| format!("{n} h{hog}")));
    let of = |imp, hog| pct.map(|(m, _)| res.median(&suite::latency_id(s, hog), imp, &m));
    let bars = |imp| [of(imp, 0), of(imp, 1)].concat();
    let y = Axis::log("round trip", micros);
    let chart = bar_chart(
        "Round-trip latency under load",
        sub,
        y,
        groups.collect(),
        bars,
    );
    c.bars(
        "latency.svg",
        &chart,
        "round-trip percentiles under load, hog=0 (h0) and hog=1 (h1)",
    )
}

/// The echo workload: round trips per second, p99 and the server's CPU per million round
/// trips, by connections, size and mode; and `echo.svg`.
fn echo(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s, e) = (c.res, c.s, &c.s.echo);
    c.md += &format!(
        "\n## Echo — a TCP echo server under a closed-loop load\n\n\
         WORKLOADS.md \"echo\" (issue 25): the server (`echo-server`, one process per \
         connection: otter's on `otter::net`, Erlang's on `gen_tcp`) on core 0 with one \
         scheduler thread, the same load generator for both (`otter-bench echo-load`, one \
         thread on `mio`, not on otter) on core 1. Each connection sends `size` bytes, waits \
         for all of them back and checks them, and repeats; 1 s of warm-up, then {} s \
         measured. **passive**: the connection's process reads the socket itself (`read`; \
         Erlang `{{active,false}}` + `gen_tcp:recv`); **active**: data arrives as messages, \
         one at a time (`Active::Once`; Erlang `{{active,once}}`). Round trips per second, \
         higher is better; p99 of the round trip; the server's CPU seconds (utime + stime) \
         per million round trips, lower is better.\n\n",
        e.seconds
    );
    const MODES: [&str; 2] = ["passive", "active"];
    for mode in MODES {
        let mut cols = trio(OPS_PER_S, "round trips/s");
        cols.extend([fig("otter p99", 0, P99), fig("erlang p99", 1, P99)]);
        cols.extend([
            fig("otter CPU s / M", 0, SERVER_CPU),
            fig("erlang CPU s / M", 1, SERVER_CPU),
        ]);
        let mut rows = Vec::new();
        for &size in &e.sizes {
            let keys = |n: u64| [size_name(size), si_u(n)];
            rows.extend(e.conns.iter().map(|&n| {
                row(
                    &[&keys(n)[0], &keys(n)[1]],
                    &suite::echo_id(s, n, size, mode),
                    None,
                )
            }));
        }
        c.md += &format!(
            "\n### {mode}\n\n{}",
            table(&["size", "conns"], cols, rows).markdown(res)
        );
    }
    // One series per (implementation, size, mode), in two panels.
    let series = |m: Metric| {
        let mut v = Vec::new();
        for (mode, (i, &size)) in MODES
            .iter()
            .flat_map(|m| e.sizes.iter().enumerate().map(move |x| (m, x)))
        {
            for (imp, color) in [(Otter, OTTER), (Erlang, ERLANG)] {
                let at = |&n: &u64| {
                    res.median(&suite::echo_id(s, n, size, mode), imp, &m)
                        .map(|y| (n as f64, y))
                };
                let marker = if i == 0 {
                    Marker::Circle
                } else {
                    Marker::Square
                };
                let name = format!("{} {}, {mode}", imp.name(), size_name(size));
                v.push(Series::new(
                    name,
                    color,
                    *mode == "active",
                    marker,
                    e.conns.iter().filter_map(at).collect(),
                ));
            }
        }
        v
    };
    let conns = Axis::log("connections", si);
    let sub = "server on one core, closed-loop load on the other; log-log; solid = passive, \
               dashed = active; higher is better";
    let top = LineChart::new(
        "TCP echo: round trips per second",
        sub,
        conns,
        Axis::log("round trips/s", si),
        series(OPS_PER_S),
    );
    let sub = "log-log; solid = passive, dashed = active; lower is better";
    let bottom = LineChart::new(
        "TCP echo: p99 round trip",
        sub,
        conns,
        Axis::log("p99", micros),
        series(P99),
    );
    c.svg(
        "echo.svg",
        &[top, bottom],
        "echo: round trips/s and p99 against connections, otter and erlang",
    )
}

/// The dist workload: round trips between two nodes, for each pair (client, echo node).
fn dist(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += "\n## Dist — round trips between nodes over Erlang distribution\n\n\
        WORKLOADS.md \"dist\": two nodes on this machine, registered in epmd and connected by \
        Erlang's distribution protocol (both hidden, cookie `otterbench`). The client \
        (`dist-pingpong`) sends `{self(), Bin}` to `{echo, Peer}` by name and waits for \
        `{echo, Bin}`, one round trip at a time, r of them after 1,000 untimed; the echo \
        node (`dist-echo`) answers `From ! {echo, Msg}`. The echo node runs on core 0 with one \
        scheduler thread, the client on core 1 with one. A pair is written client-echo: \
        `otter-erlang` is otter's client against an Erlang echo node. Round-trip time: the \
        median of the runs, and in brackets the fastest and the slowest run; lower is better. \
        \"vs erlang-erlang\" compares round trips per second with the BEAM's own pair.\n\n";
    let mut rows = Vec::new();
    for &(size, r) in &s.dist {
        let cid = |echo| suite::dist_id(s, size, echo).unwrap_or_default();
        for (client, echo) in [
            (Otter, Otter),
            (Otter, Erlang),
            (Erlang, Otter),
            (Erlang, Erlang),
        ] {
            let base = ((client, echo) != (Erlang, Erlang)).then(|| (cid(Erlang), Erlang));
            let keys = vec![
                size_name(size),
                si_u(r),
                suite::dist_pair(client, echo.name()),
            ];
            rows.push(Row {
                keys,
                slots: vec![Some((cid(echo), client)), base],
                metric: None,
            });
        }
    }
    let rt = Col::Fig("round trip".into(), 0, Some(NS), Spread::Range);
    let cols = vec![
        rt,
        fig("round trips/s", 0, RATE),
        vs("vs erlang-erlang", 0, 1, RATE, Vs::Bold),
    ];
    c.md += &table(&["size", "r", "pair"], cols, rows).markdown(res);
}

/// The http workload: the same JSON API on otter and on plain tokio.
fn http(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## HTTP — a JSON API on otter and on plain tokio\n\n\
         WORKLOADS.md \"http\" (issue 46): the same axum routes (`GET /health`, `POST /jobs`, \
         `GET /jobs/{{id}}`, `DELETE /jobs/{{id}}`) served by `otter-bench http-server`, \
         `impl=otter` (hyper over otter's acceptor pool, a process per connection, each job \
         a server under a simple_one_for_one supervisor) and `impl=tokio` (`axum::serve`, a \
         task per job, the jobs in a `Mutex<HashMap>`), each with its runtime's default \
         options and one worker, on core 0; the same load generator (`otter-bench \
         http-load`, one thread on `mio`, neither otter nor tokio) on core 1. {} \
         keep-alive connections, each looping POST → GET → DELETE, one request in flight; \
         a job computes for about {} µs (a fixed number of rounds) on its \
         runtime's blocking pool; `DELETE` stops the job's server on otter \
         (`gen_server:stop`), removes the task and aborts it on tokio. 1 s of \
         warm-up, then {} s measured. Medians over the repetitions, the runs' range in \
         parentheses; the implementation that goes first alternates between repetitions.\n\n",
        suite::HTTP_CONNS,
        suite::HTTP_WORK_US,
        s.http_seconds
    );
    let lower = |key, fmt| Metric::key(key, fmt, Lower).words("lower", "higher");
    let measures: [(&str, Metric); 7] = [
        ("requests/s", OPS_PER_S.words("more", "fewer")),
        ("p50 of a request", lower("p50_us", micros)),
        ("p99 of a request", lower("p99_us", micros)),
        (
            "server CPU s / M requests",
            lower("server_cpu_s_per_million", |x| format!("{x:.1}")),
        ),
        ("server peak RSS (VmHWM)", VMHWM),
        (
            "server RSS at the end (VmRSS)",
            lower("server_vmrss_kb", kib),
        ),
        (
            "server OS threads at the end",
            lower("server_threads", count),
        ),
    ];
    let cid = suite::http_id(s);
    let with_tokio = |mut r: Row| {
        r.slots[1] = Some((cid.clone(), Impl::Tokio));
        r
    };
    let rows = measures
        .iter()
        .map(|(name, m)| with_tokio(row(&[name], &cid, *m)));
    let fig = |h: &str, slot| Col::Fig(h.into(), slot, None, Spread::Runs);
    let cols = vec![
        fig("otter", 0),
        fig("tokio", 1),
        vs("otter vs tokio", 0, 1, None, Vs::Bold),
    ];
    c.md += &table(&["measure"], cols, rows.collect()).markdown(res);
}

/// Every section, in report order.
pub(super) fn all(c: &mut Ctx<'_>) -> Result<(), String> {
    ring(c)?;
    spawn(c)?;
    counting(c);
    mailbox(c)?;
    closure(c)?;
    memory(c);
    pingpong(c);
    forkjoin(c);
    latency(c)?;
    echo(c)?;
    dist(c);
    http(c);
    Ok(())
}

/// The summary table: one headline figure per seed.
pub(super) fn headline(res: &Results<'_>, s: &Sizes) -> super::table::Table {
    let ring_n = if s.ring.contains(&1000) {
        1000
    } else {
        s.ring[0]
    };
    let k = if s.mailbox_k.contains(&10_000) {
        10_000
    } else {
        *s.mailbox_k.last().unwrap_or(&1000)
    };
    let (spawn_n, fj) = (si_u(s.spawn_n), s.forkjoin_n);
    let mut rows = vec![
        row(
            &[&"#4 ring", &format!("sends/s, {ring_n}×{ring_n}")],
            &format!("ring n={ring_n} m={ring_n}"),
            RATE,
        ),
        row(
            &[&"#3 spawn", &format!("spawn+exit/s, n={spawn_n} c=1")],
            &format!("spawn n={} c=1", s.spawn_n),
            RATE,
        ),
    ];
    for st in ["raw", "server"] {
        let cid = format!("counting msgs={} senders=1 style={st}", s.counting_msgs);
        rows.push(row(
            &[&"#5 counting", &format!("msgs/s, {st}, 1 sender")],
            &cid,
            RATE,
        ));
    }
    for order in ["spawn", "reverse"] {
        let cid = format!("mailbox k={k} order={order}");
        rows.push(row(
            &[&"#2 mailbox", &format!("time, k={k} {order} order")],
            &cid,
            TIME,
        ));
    }
    for st in ["message", "closure"] {
        let cid = format!("closure n={} style={st}", s.closure_n);
        rows.push(row(
            &[&"#1 closure", &format!("ns per increment, {st}")],
            &cid,
            NS,
        ));
    }
    let what = vec![
        "#1 closure".into(),
        "message / closure (lower is better)".into(),
    ];
    rows.push(text_row([what, closure_gap(res, s.closure_n)].concat()));
    let p = format!("bytes per idle process, p={}", si_u(s.memory_p));
    rows.push(row(
        &[&"memory", &p],
        &format!("memory p={}", s.memory_p),
        BPP,
    ));
    for st in ["raw", "server"] {
        let cid = format!("pingpong r={} style={st}", s.pingpong_r);
        rows.push(row(
            &[&"pingpong", &format!("ns per round trip, {st}")],
            &cid,
            NS,
        ));
    }
    let cid = format!("forkjoin n={fj}");
    rows.push(row(
        &[&"forkjoin", &format!("seconds, fib({fj}) tree")],
        &cid,
        TIME,
    ));
    rows.push(row(
        &[&"forkjoin", &format!("peak RSS, fib({fj}) tree")],
        &cid,
        PEAK_RSS,
    ));
    for hog in [0, 1] {
        let what = format!("p99.9 round trip under load, hog={hog}");
        rows.push(row(&[&"latency", &what], &suite::latency_id(s, hog), P999));
    }
    table(&["seed", "measure"], measures("erlang"), rows)
}
