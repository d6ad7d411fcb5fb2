//! Every section of REPORT.md after the summary, as data, in report order ([`ALL`]): its
//! heading and prose, then its parts, each a table (`table.rs`), a sentence with figures in
//! it, or a chart (`plot.rs`); and the summary's table, [`headline`].
//!
//! The metrics are the constants below; a table names the ones it shows. A new field of a
//! workload's JSON line is one `Metric` line here and one column (`fig`, `trio`) or row
//! (`row`) in its workload's table.

use plotters::style::RGBColor;

use super::format::{bytes, count, kib, mib, micros, nanos, rate, secs, si, si_u, size_name};
use super::plot::{Axis, Chart, Line, Marker, Plot};
use super::table::{Better, Col, Field, Metric, Results, Row, Spread, Table, Vs};
use super::table::{compare, factor, fig, row, table, trio, vs};
use crate::suite::Sizes;
use crate::suite::{self, FAN_OUT_RECEIVERS, HTTP_CONNS, HTTP_WORK_US, Impl, LATENCY_B, LATENCY_W};

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

const OTTER: RGBColor = RGBColor(0xd9, 0x5f, 0x02);
const ERLANG: RGBColor = RGBColor(0x75, 0x70, 0xb3);
const OTTER_MATCH: RGBColor = RGBColor(0xe7, 0x29, 0x8a);
const GUIDE: RGBColor = RGBColor(0x88, 0x88, 0x88);
const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
];

/// A section: its heading and prose (Markdown, each `{name}` filled from [`vars`]), and the
/// parts that follow it.
pub(super) struct Section {
    pub(super) text: &'static str,
    pub(super) parts: fn(&Results<'_>, &Sizes) -> Vec<Part>,
}

/// What follows a section's prose, in order.
pub(super) enum Part {
    Table(Table),
    /// Markdown written here: sentences with figures in them.
    Text(String),
    /// Charts one above the other in the SVG file `.0`, linked with the text `.1`.
    Svg(&'static str, &'static str, Vec<Chart>),
}

/// The values the sections' prose and the summary's rows name, from the sizes of the run:
/// `NAME` as it is, `NAME_si` with an SI suffix.
pub(super) fn vars(s: &Sizes) -> Vec<(&'static str, String)> {
    let fj = s.forkjoin_n;
    let fib = (2..fj).fold((1u64, 1u64), |(a, b), _| (b, a + b)).1;
    let ring = if s.ring.contains(&1000) {
        1000
    } else {
        s.ring[0]
    };
    let k = s.mailbox_k.last().unwrap_or(&1000);
    let k = if s.mailbox_k.contains(&10_000) {
        10_000
    } else {
        *k
    };
    let mut v = vec![
        ("match_max_k_si", si_u(s.mailbox_match_max_k)),
        ("forkjoin_n", fj.to_string()),
        ("forkjoin_procs_si", si_u(2 * fib - 1)),
        ("latency_r_si", si_u(s.latency_r)),
        ("latency_b", LATENCY_B.to_string()),
        ("latency_tokens", (LATENCY_B / 2).to_string()),
        ("latency_w", LATENCY_W.to_string()),
        ("latency_hog0", suite::latency_id(s, 0)),
        ("latency_hog1", suite::latency_id(s, 1)),
        ("echo_seconds", s.echo.seconds.to_string()),
        ("http_conns", HTTP_CONNS.to_string()),
        ("http_work_us", HTTP_WORK_US.to_string()),
        ("http_seconds", s.http_seconds.to_string()),
        ("headline_ring", ring.to_string()),
        ("headline_k", k.to_string()),
    ];
    for (name, si_name, x) in [
        ("spawn_n", "spawn_n_si", s.spawn_n),
        ("counting_msgs", "counting_msgs_si", s.counting_msgs),
        ("closure_n", "closure_n_si", s.closure_n),
        ("memory_p", "memory_p_si", s.memory_p),
        ("pingpong_r", "pingpong_r_si", s.pingpong_r),
    ] {
        v.extend([(name, x.to_string()), (si_name, si_u(x))]);
    }
    v
}

/// `text` with each `{name}` of `vars` replaced by its value.
pub(super) fn fill(text: &str, vars: &[(&str, String)]) -> String {
    let var = |t: String, (k, v): &(&str, String)| t.replace(&format!("{{{k}}}"), v);
    vars.iter().fold(text.to_string(), var)
}

/// Every section, in report order.
pub(super) const ALL: [Section; 12] = [
    Section {
        text: "## Seed #4 — the ring (Armstrong's ring, N processes × M rounds)\n\n\
            \"Erlang vs. Stackless vs. multitask: the Ring Benchmark Showdown\" (2007): N and M \
            each in 100, 1,000, 10,000; Erlang took 20.5 s for 10,000 × 10,000 (≈ 4.9 M \
            sends/s). Timed: building the ring, M rounds, and one `stop` round. Sends per \
            second (N·M / time); the cell gives otter, erlang, and otter vs erlang.",
        parts: ring,
    },
    Section {
        text: "## Seed #3 — serial spawn (n processes in c chains)\n\n\"How fast can Erlang \
            create processes?\" (2006): 1,000,000 processes in c chains, each spawning the \
            next and exiting; ≈ 350,000 spawn+exit/s then, slower with more chains. Here n = \
            {spawn_n_si}.",
        parts: spawn,
    },
    Section {
        text: "## Seed #5 — the CountingActor (raw receive loop vs server layer)\n\n\"Scala \
            Actor v Erlang gen_server Performance\" (2011, 4 cores): 3,000,000 `Count(100)` \
            then a synchronous GetAndReset; Erlang bare receive 2.8 M msg/s, gen_server 1.8 M \
            msg/s. Here msgs = {counting_msgs_si}. Messages per second.\n\n`style=server` is \
            `otter::server` (Count a cast, GetAndReset a call) against Erlang's `gen_server`; \
            \"server vs raw\" is each runtime's server layer against its own raw receive \
            loop, same senders.",
        parts: counting,
    },
    Section {
        text: "## Seed #2 — mailbox: selective receive in spawn vs reverse order\n\n\"Erlang \
            process mailbox performance\" (2010): 10,000 children send `{self(), ok}`; the \
            parent takes them by pid. Reverse spawn order took 1.37 s, spawn order 83 ms: the \
            BEAM rescans skipped messages, O(k²). otter **key** = `recv_key` by the child's \
            pid (O(1) keyed receive, the default); otter **match** = `recv_match` with a \
            predicate on the pid (Erlang's selective receive, for reference, k ≤ \
            {match_max_k_si}). Time from the first spawn to the last message taken; lower is \
            better.",
        parts: mailbox,
    },
    Section {
        text: "## Seed #1 — message versus function (a counter held by a process or by \
            closures)\n\n\"My shocking Erlang discovery\" (R14B01): 10,000,000 increments; \
            process 39.7 s, closures 2.4 s, \"sixteen times faster\". Here n = {closure_n_si}. \
            Nanoseconds per increment; the figure of merit is message / closure (how much a \
            message costs over a call).",
        parts: closure,
    },
    Section {
        text: "## Memory — an idle process\n\nWORKLOADS.md \"memory\" (the cost-of-a-process \
            question of seed #3): p = {memory_p_si} processes blocked in receive; VmRSS delta / \
            p. Erlang also reports its own accounting (`erlang:memory(processes)`); lower is \
            better.",
        parts: memory,
    },
    Section {
        text: "## Ping-pong — round-trip latency\n\nWORKLOADS.md \"pingpong\" (the per-hop \
            cost of seed #4, the call layer of seed #5): r = {pingpong_r_si} round trips between \
            two processes; nanoseconds per round trip, lower is better.\n\n`style=raw`: plain \
            messages; `style=server`: B is an `otter::server` and each round trip is one \
            `call` (Erlang: a `gen_server` and `gen_server:call`). \"server vs raw\" is each \
            runtime's call against its own raw round trip.",
        parts: pingpong,
    },
    Section {
        text: "## Fork-join — a process tree that sums its leaves\n\nWORKLOADS.md \
            \"forkjoin\": fib({forkjoin_n}) as processes, each spawning two children and \
            summing their replies ({forkjoin_procs_si} processes). Walked depth-first, a few \
            hundred are alive at once; breadth-first, a large part of the tree: the peak RSS \
            (`VmHWM`, the whole OS process) tells which. Lower is better for time and memory.",
        parts: forkjoin,
    },
    Section {
        text: "## Latency — round trips while the runtime is loaded\n\nWORKLOADS.md \
            \"latency\" (issue 24): r = {latency_r_si} round trips between two processes, each \
            timed on its own, while a ring of b = {latency_b} processes passes \
            {latency_tokens} tokens, each member computing for w = {latency_w} µs per message \
            (a busy loop on the monotonic clock); with hog=1 one more process computes \
            without yielding for the whole run. Percentiles by nearest rank; the median over \
            the repetitions of each. The figure of merit is the tail; \"otter / erlang\" is \
            bold (1/N) where otter's is shorter.\n\notter's scheduler is cooperative: the hog \
            holds one worker for the whole run; the runtime's watchdog thread (a look every 5 \
            ms) hands on what was queued on it and starts a spare thread in its place, so the \
            rest keeps as many workers and the OS time-slices the hog's thread with them \
            (docs/design/0026, 0027). The hog yields once when no round trip has completed \
            for 70 ms (50 ms + 4·b·w), so that a run ends even if nothing stood in for its \
            worker; \"hog yields\" counts those in the timed part (the BEAM preempts its hog \
            and never gets there).",
        parts: latency,
    },
    Section {
        text: "## Echo — a TCP echo server under a closed-loop load\n\nWORKLOADS.md \"echo\" \
            (issue 25): the server (`echo-server`, one process per connection: otter's on \
            `otter::net`, Erlang's on `gen_tcp`) on core 0 with one scheduler thread, the same \
            load generator for both (`otter-bench echo-load`, one thread on `mio`, not on \
            otter) on core 1. Each connection sends `size` bytes, waits for all of them back \
            and checks them, and repeats; 1 s of warm-up, then {echo_seconds} s measured. \
            **passive**: the connection's process reads the socket itself (`read`; Erlang \
            `{active,false}` + `gen_tcp:recv`); **active**: data arrives as messages, one at \
            a time (`Active::Once`; Erlang `{active,once}`). Round trips per second, higher \
            is better; p99 of the round trip; the server's CPU seconds (utime + stime) per \
            million round trips, lower is better.",
        parts: echo,
    },
    Section {
        text: "## Dist — round trips between nodes over Erlang distribution\n\nWORKLOADS.md \
            \"dist\": two nodes on this machine, registered in epmd and connected by Erlang's \
            distribution protocol (both hidden, cookie `otterbench`). The client \
            (`dist-pingpong`) sends `{self(), Bin}` to `{echo, Peer}` by name and waits for \
            `{echo, Bin}`, one round trip at a time, r of them after 1,000 untimed; the echo \
            node (`dist-echo`) answers `From ! {echo, Msg}`. The echo node runs on core 0 \
            with one scheduler thread, the client on core 1 with one. A pair is written \
            client-echo: `otter-erlang` is otter's client against an Erlang echo node. \
            Round-trip time: the median of the runs, and in brackets the fastest and the \
            slowest run; lower is better. \"vs erlang-erlang\" compares round trips per \
            second with the BEAM's own pair.",
        parts: dist,
    },
    Section {
        text: "## HTTP — a JSON API on otter and on plain tokio\n\nWORKLOADS.md \"http\" \
            (issue 46): the same axum routes (`GET /health`, `POST /jobs`, `GET /jobs/{id}`, \
            `DELETE /jobs/{id}`) served by `otter-bench http-server`, `impl=otter` (hyper \
            over otter's acceptor pool, a process per connection, each job a server under a \
            simple_one_for_one supervisor) and `impl=tokio` (`axum::serve`, a task per job, \
            the jobs in a `Mutex<HashMap>`), each with its runtime's default options and one \
            worker, on core 0; the same load generator (`otter-bench http-load`, one thread \
            on `mio`, neither otter nor tokio) on core 1. {http_conns} keep-alive \
            connections, each looping POST → GET → DELETE, one request in flight; a job \
            computes for about {http_work_us} µs (a fixed number of rounds) on its runtime's \
            blocking pool; `DELETE` stops the job's server on otter (`gen_server:stop`), \
            removes the task and aborts it on tokio. 1 s of warm-up, then {http_seconds} s \
            measured. Medians over the repetitions, the runs' range in parentheses; the \
            implementation that goes first alternates between repetitions.",
        parts: http,
    },
];

/// A row of literal cells.
fn text_row(keys: Vec<String>) -> Row {
    Row {
        keys,
        slots: Vec::new(),
        metric: None,
    }
}

/// The columns of a table of one measure a row: otter, `other`, and the comparison.
fn measures(other: &str) -> Vec<Col> {
    let cmp = vs(format!("otter vs {other}"), 0, 1, None, Vs::Bold);
    vec![fig("otter", 0, None), fig(other, 1, None), cmp]
}

/// A chart of `plot` under `title` and `subtitle`, its y axis `y`.
fn chart(title: &str, subtitle: String, y: Axis, plot: Plot) -> Chart {
    Chart {
        title: title.into(),
        subtitle,
        y,
        plot,
    }
}

/// A line of a log-log chart.
fn line(name: String, color: RGBColor, dashed: bool, marker: Marker, pts: Vec<(f64, f64)>) -> Line {
    Line {
        name,
        color,
        dashed,
        marker: Some(marker),
        points: pts,
    }
}

/// Bars of otter and erlang in each of `groups`, `bars` giving an implementation's values.
fn bars(groups: Vec<String>, bars: impl Fn(Impl) -> Vec<Option<f64>>) -> Plot {
    let series = [(Otter, OTTER), (Erlang, ERLANG)].map(|(i, c)| (i.name().into(), c, bars(i)));
    Plot::Bars(groups, series.into())
}

/// Seed #4: the N × M grid, the table of every cell, and `ring.svg`.
fn ring(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid = |n: u64, m: u64| format!("ring n={n} m={m}");
    let ran = |n, m| [Otter, Erlang].iter().any(|&i| res.runs(&cid(n, m), i));
    let heads = s
        .ring
        .iter()
        .map(|&m| fig(format!("M = {}", si_u(m)), 0, None));
    let mut grid = table(&["N \\ M"], heads.collect(), Vec::new());
    let times = vec![fig("otter time", 0, TIME), fig("erlang time", 1, TIME)];
    let mut list = table(
        &["N", "M", "sends"],
        [times, trio(RATE, "sends/s")].concat(),
        vec![],
    );
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
    let mut lines = Vec::new();
    for (imp, color) in [(Otter, OTTER), (Erlang, ERLANG)] {
        for (&n, marker) in s.ring.iter().zip(MARKERS.iter().cycle()) {
            let at = |&m: &u64| {
                res.median(&cid(n, m), imp, &RATE)
                    .map(|y| ((n * m) as f64, y))
            };
            let pts = s.ring.iter().filter_map(at).collect();
            let name = format!("{} N={}", imp.name(), si_u(n));
            lines.push(line(name, color, imp == Erlang, *marker, pts));
        }
    }
    let sub = "seed #4; median of repetitions; higher is better".into();
    let plot = Plot::Lines(Axis::log("N·M sends (log)", si), lines);
    let y = Axis::log("sends per second (log)", si);
    let svg = vec![chart("Ring: sends per second over N·M", sub, y, plot)];
    vec![
        Part::Table(grid),
        Part::Table(list),
        Part::Svg("ring.svg", "ring: sends/s over N·M", svg),
    ]
}

/// Seed #3: time and rate by number of chains, and `spawn.svg`.
fn spawn(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid = |ch: u64| format!("spawn n={} c={ch}", s.spawn_n);
    let times = vec![fig("otter time", 0, TIME), fig("erlang time", 1, TIME)];
    let rows = s.spawn_c.iter().map(|&ch| row(&[&ch], &cid(ch), None));
    let t = table(
        &["chains c"],
        [times, trio(RATE, "spawn+exit/s")].concat(),
        rows.collect(),
    );
    let groups = s.spawn_c.iter().map(|ch| format!("c = {ch}")).collect();
    let of = |imp| {
        s.spawn_c
            .iter()
            .map(|&ch| res.median(&cid(ch), imp, &RATE))
            .collect()
    };
    let sub = format!("seed #3; n = {}; higher is better", si_u(s.spawn_n));
    let title = "Serial spawn: spawn+exit per second by number of chains";
    let y = Axis::linear("spawn+exit per second", si);
    let svg = vec![chart(title, sub, y, bars(groups, of))];
    vec![
        Part::Table(t),
        Part::Svg("spawn.svg", "spawn rate by chains", svg),
    ]
}

/// A row's keys, its case and the raw case it is compared with.
type Keyed = (Vec<String>, String, String);

/// A raw/server table (counting, pingpong): otter, erlang, and each server row against the
/// raw row of the same keys (slots 2 and 3). `rows`: (keys, case, its raw case).
fn raw_server(m: Metric, head: &str, keys: &[&'static str], rows: Vec<Keyed>) -> Table {
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

/// Seed #5: messages per second by style and senders, the fan-out and the floor.
fn counting(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid =
        |n: u64, st: &str| format!("counting msgs={} senders={n} style={st}", s.counting_msgs);
    let rows = ["raw", "server"].iter().flat_map(|st| {
        s.senders.iter().map(move |&n| {
            (
                vec![st.to_string(), n.to_string()],
                cid(n, st),
                cid(n, "raw"),
            )
        })
    });
    let mut parts = vec![Part::Table(raw_server(
        RATE,
        "msgs/s",
        &["style", "senders"],
        rows.collect(),
    ))];
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
    parts.push(Part::Text(format!(
        "Fan-out: 1 sender, raw, round-robin to {FAN_OUT_RECEIVERS} counters (each send to \
         another process than the one before): otter {}, erlang {} ({}); against 1 counter, \
         otter {}, erlang {}.\n",
        fo.show(&RATE, Spread::None),
        fe.show(&RATE, Spread::None),
        compare(fo.median(&RATE), fe.median(&RATE), &RATE, Vs::Bold),
        vs_one(Otter),
        vs_one(Erlang),
    )));
    let floor = res.cell(&cid(1, "channel"), Otter);
    if let Some(f) = floor.median(&RATE) {
        let raw = res.median(&one, Otter, &RATE);
        let share = raw.map_or("—".into(), |r| format!("{:.0}%", 100.0 * r / f));
        parts.push(Part::Text(format!(
            "The floor: the same messages between two OS threads over `std::sync::mpsc` \
             (crossbeam's unbounded channel, no otter; `counting style=channel`): {}. otter's \
             raw loop, 1 sender, runs at {share} of it. A message that crosses cores costs \
             cache-line transfers, and the channel pays them too. A stream's send in otter has \
             one locked instruction, the mailbox tail's CAS (the pid table's count is kept \
             across a poll); what the rest of its time is goes in ARCHITECTURE.md \"Where the \
             time goes\".\n",
            floor.show(&RATE, Spread::None),
        )));
    }
    parts
}

/// Seed #2: time over k in both orders, the growth exponent, and `mailbox.svg`.
fn mailbox(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    // The slots: (order, implementation, style), each a column and a line of the chart.
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
    let mid = |k: u64, (order, imp, style, ..): (&str, Impl, &str, &str, RGBColor)| {
        Some((format!("mailbox k={k} order={order}{style}"), imp))
    };
    let mut cols: Vec<Col> = slots
        .iter()
        .enumerate()
        .map(|(i, sl)| fig(sl.3, i, TIME))
        .collect();
    cols.push(vs("otter(key) vs erlang, spawn", 0, 4, TIME, Vs::Bold));
    cols.push(vs("otter(key) vs erlang, reverse", 1, 5, TIME, Vs::Bold));
    let row_of = |&k: &u64| Row {
        keys: vec![si_u(k)],
        slots: slots.iter().map(|&sl| mid(k, sl)).collect(),
        metric: None,
    };
    let mut rows: Vec<Row> = s.mailbox_k.iter().map(row_of).collect();
    // Growth exponent: the log-log slope of time over k between the smallest and largest k.
    let mut growth = vec!["**growth exponent**".to_string()];
    let mut lines = Vec::new();
    for sl @ (order, imp, _, head, color) in slots {
        let at = |&k: &u64| {
            mid(k, sl)
                .and_then(|(id, i)| res.median(&id, i, &TIME))
                .map(|t| (k as f64, t))
        };
        let pts: Vec<(f64, f64)> = s.mailbox_k.iter().filter_map(at).collect();
        growth.push(match (pts.first(), pts.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln())
            }
            _ => "—".into(),
        });
        let name = match imp {
            Erlang => format!("erlang, {order} order"),
            _ => format!("{head} order"),
        };
        let rev = order == "reverse";
        lines.push(line(name, color, rev, MARKERS[usize::from(rev)], pts));
    }
    growth.extend([String::new(), String::new()]);
    rows.push(text_row(growth));
    // Reference slopes, anchored at the fastest line's smallest k.
    let all: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|l| l.points.iter().copied())
        .collect();
    let (k0, k1) = all
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if k1 > k0 {
        let t0 = all
            .iter()
            .filter(|p| p.0 == k0)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        for (name, power) in [("∝ k", 1), ("∝ k²", 2)] {
            let points = vec![(k0, t0), (k1, t0 * (k1 / k0).powi(power))];
            lines.push(Line {
                name: name.into(),
                color: GUIDE,
                dashed: true,
                marker: None,
                points,
            });
        }
    }
    let note = "The growth exponent is the log-log slope of time over k between the smallest and \
                largest k measured: about 1 is linear, about 2 quadratic.\n";
    let sub = "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better";
    let plot = Plot::Lines(Axis::log("k children (log)", si), lines);
    let title = "Mailbox: time to take k messages by sender pid";
    let svg = vec![chart(
        title,
        sub.into(),
        Axis::log("time (log)", secs),
        plot,
    )];
    let alt = "mailbox time over k, both orders, log-log";
    vec![
        Part::Table(table(&["k"], cols, rows)),
        Part::Text(note.into()),
        Part::Svg("mailbox.svg", alt, svg),
    ]
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

/// Seed #1: ns per increment, the message / closure gap, and `closure.svg`.
fn closure(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid = |style: &str| format!("closure n={} style={style}", s.closure_n);
    let gap = closure_gap(res, s.closure_n);
    let rows = vec![
        row(&[&"message, ns/increment"], &cid("message"), NS),
        row(&[&"closure, ns/increment"], &cid("closure"), NS),
        text_row([vec!["**message / closure**".into()], gap.clone()].concat()),
    ];
    let (n, o, e) = (si_u(s.closure_n), &gap[0], &gap[1]);
    let sub = format!("seed #1; n = {n}; message/closure: otter {o}, erlang {e}; lower is better");
    let groups = vec!["message (process)".into(), "closure chain".into()];
    let of = |imp| {
        ["message", "closure"]
            .map(|st| res.median(&cid(st), imp, &NS))
            .into()
    };
    let title = "Message vs closure: nanoseconds per increment";
    let svg = vec![chart(
        title,
        sub,
        Axis::linear("ns per increment", nanos),
        bars(groups, of),
    )];
    let t = table(&[""], measures("erlang"), rows);
    vec![
        Part::Table(t),
        Part::Svg("closure.svg", "per-message vs per-call cost", svg),
    ]
}

/// Memory: bytes per idle process.
fn memory(_: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid = format!("memory p={}", s.memory_p);
    let rows = vec![
        row(&[&"RSS bytes per process"], &cid, BPP),
        row(&[&"runtime's own account"], &cid, BEAM_BPP),
        row(&[&"spawn time for p (until all are blocked)"], &cid, TIME),
    ];
    vec![Part::Table(table(&[""], measures("erlang"), rows))]
}

/// Ping-pong: nanoseconds per round trip by style.
fn pingpong(_: &Results<'_>, s: &Sizes) -> Vec<Part> {
    let cid = |style: &str| format!("pingpong r={} style={style}", s.pingpong_r);
    let rows = ["raw", "server"].map(|st| (vec![st.to_string()], cid(st), cid("raw")));
    vec![Part::Table(raw_server(
        NS,
        "ns/round trip",
        &["style"],
        rows.into(),
    ))]
}

/// Fork-join: a process tree that sums its leaves, its time and its peak RSS.
fn forkjoin(_: &Results<'_>, s: &Sizes) -> Vec<Part> {
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
    vec![Part::Table(table(&[""], measures("erlang"), rows))]
}

/// Latency under load: the percentiles with hog=0 and hog=1, and `latency.svg`.
fn latency(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
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
    let over = vs("otter / erlang", 0, 1, None, Vs::Over);
    let t = table(
        &["hog", "measure"],
        vec![fig("otter", 0, None), fig("erlang", 1, None), over],
        rows,
    );
    let sub = format!(
        "r = {}, b = {LATENCY_B}, w = {LATENCY_W} µs; hog=1: one process never yields; log scale, \
         lower is better",
        si_u(s.latency_r)
    );
    let groups = [0, 1]
        .iter()
        .flat_map(|h| pct.iter().map(move |(_, n)| format!("{n} h{h}")));
    let of = |imp, hog| pct.map(|(m, _)| res.median(&suite::latency_id(s, hog), imp, &m));
    let plot = bars(groups.collect(), |imp| [of(imp, 0), of(imp, 1)].concat());
    let svg = vec![chart(
        "Round-trip latency under load",
        sub,
        Axis::log("round trip", micros),
        plot,
    )];
    let alt = "round-trip percentiles under load, hog=0 (h0) and hog=1 (h1)";
    vec![Part::Table(t), Part::Svg("latency.svg", alt, svg)]
}

/// Echo: round trips per second, p99 and the server's CPU per million round trips, by
/// connections, size and mode; and `echo.svg`.
fn echo(res: &Results<'_>, s: &Sizes) -> Vec<Part> {
    const MODES: [&str; 2] = ["passive", "active"];
    let e = &s.echo;
    let mut parts = Vec::new();
    for mode in MODES {
        let mut cols = trio(OPS_PER_S, "round trips/s");
        cols.extend([fig("otter p99", 0, P99), fig("erlang p99", 1, P99)]);
        cols.extend([
            fig("otter CPU s / M", 0, SERVER_CPU),
            fig("erlang CPU s / M", 1, SERVER_CPU),
        ]);
        let rows = e.sizes.iter().flat_map(|&size| {
            let keys = move |n: u64| [size_name(size), si_u(n)];
            e.conns.iter().map(move |&n| {
                row(
                    &[&keys(n)[0], &keys(n)[1]],
                    &suite::echo_id(s, n, size, mode),
                    None,
                )
            })
        });
        parts.push(Part::Text(format!("### {mode}\n")));
        parts.push(Part::Table(table(&["size", "conns"], cols, rows.collect())));
    }
    // One line per (implementation, size, mode), in two panels.
    let lines = |m: Metric| {
        let mut v = Vec::new();
        for mode in MODES {
            for (&size, marker) in e.sizes.iter().zip(MARKERS) {
                for (imp, color) in [(Otter, OTTER), (Erlang, ERLANG)] {
                    let id = |n| suite::echo_id(s, n, size, mode);
                    let at = |&n: &u64| res.median(&id(n), imp, &m).map(|y| (n as f64, y));
                    let name = format!("{} {}, {mode}", imp.name(), size_name(size));
                    let pts = e.conns.iter().filter_map(at).collect();
                    v.push(line(name, color, mode == "active", marker, pts));
                }
            }
        }
        Plot::Lines(Axis::log("connections", si), v)
    };
    let sub = "server on one core, closed-loop load on the other; log-log; solid = passive, \
               dashed = active; higher is better";
    let top = chart(
        "TCP echo: round trips per second",
        sub.into(),
        Axis::log("round trips/s", si),
        lines(OPS_PER_S),
    );
    let sub = "log-log; solid = passive, dashed = active; lower is better";
    let bottom = chart(
        "TCP echo: p99 round trip",
        sub.into(),
        Axis::log("p99", micros),
        lines(P99),
    );
    let alt = "echo: round trips/s and p99 against connections, otter and erlang";
    parts.push(Part::Svg("echo.svg", alt, vec![top, bottom]));
    parts
}

/// Dist: round trips between two nodes, for each pair (client, echo node).
fn dist(_: &Results<'_>, s: &Sizes) -> Vec<Part> {
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
    vec![Part::Table(table(&["size", "r", "pair"], cols, rows))]
}

/// HTTP: the same JSON API on otter and on plain tokio, each measure against the other.
fn http(_: &Results<'_>, s: &Sizes) -> Vec<Part> {
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
    let rows = measures.iter().map(|(name, m)| {
        let mut r = row(&[name], &cid, *m);
        r.slots[1] = Some((cid.clone(), Impl::Tokio));
        r
    });
    let fig = |h: &str, slot| Col::Fig(h.into(), slot, None, Spread::Runs);
    let cols = vec![
        fig("otter", 0),
        fig("tokio", 1),
        vs("otter vs tokio", 0, 1, None, Vs::Bold),
    ];
    vec![Part::Table(table(&["measure"], cols, rows.collect()))]
}

/// The summary table: one headline figure per seed, a line each: seed | measure | case |
/// metric, each `{name}` filled from [`vars`]. The metric `gap` is the closure gap's row:
/// no case, the cells of [`closure_gap`].
const HEADLINE: &str = "\
#4 ring | sends/s, {headline_ring}×{headline_ring} | ring n={headline_ring} m={headline_ring} | rate
#3 spawn | spawn+exit/s, n={spawn_n_si} c=1 | spawn n={spawn_n} c=1 | rate
#5 counting | msgs/s, raw, 1 sender | counting msgs={counting_msgs} senders=1 style=raw | rate
#5 counting | msgs/s, server, 1 sender | counting msgs={counting_msgs} senders=1 style=server | rate
#2 mailbox | time, k={headline_k} spawn order | mailbox k={headline_k} order=spawn | time
#2 mailbox | time, k={headline_k} reverse order | mailbox k={headline_k} order=reverse | time
#1 closure | ns per increment, message | closure n={closure_n} style=message | ns
#1 closure | ns per increment, closure | closure n={closure_n} style=closure | ns
#1 closure | message / closure (lower is better) | | gap
memory | bytes per idle process, p={memory_p_si} | memory p={memory_p} | bpp
pingpong | ns per round trip, raw | pingpong r={pingpong_r} style=raw | ns
pingpong | ns per round trip, server | pingpong r={pingpong_r} style=server | ns
forkjoin | seconds, fib({forkjoin_n}) tree | forkjoin n={forkjoin_n} | time
forkjoin | peak RSS, fib({forkjoin_n}) tree | forkjoin n={forkjoin_n} | peak_rss
latency | p99.9 round trip under load, hog=0 | {latency_hog0} | p999
latency | p99.9 round trip under load, hog=1 | {latency_hog1} | p999";

/// The summary table, [`HEADLINE`] filled in.
pub(super) fn headline(res: &Results<'_>, s: &Sizes) -> Table {
    let lines = fill(HEADLINE, &vars(s));
    let rows = lines.lines().map(|l| {
        let [seed, what, id, metric] = l.split('|').map(str::trim).collect::<Vec<_>>()[..] else {
            unreachable!("a line of HEADLINE has four cells: {l}")
        };
        let m = match metric {
            "rate" => RATE,
            "time" => TIME,
            "ns" => NS,
            "bpp" => BPP,
            "peak_rss" => PEAK_RSS,
            "p999" => P999,
            "gap" => {
                let keys = vec![seed.to_string(), what.to_string()];
                return text_row([keys, closure_gap(res, s.closure_n)].concat());
            }
            _ => unreachable!("HEADLINE names no metric {metric}"),
        };
        row(&[&seed, &what], id, m)
    });
    table(&["seed", "measure"], measures("erlang"), rows.collect())
}
