//! Every section of REPORT.md after the summary, in report order: a heading, what the
//! workload is (its prose), its tables as data (`table.rs`), and its chart (`plot.rs`).
//!
//! The metrics are the constants below; a table names the ones it shows. A new field of a
//! workload's JSON line is a new `Metric` (one line) and a column (`fig`, `trio`) or a row
//! naming it.

use super::format::{nanos, secs, si};
use super::plot::{Axis, BarChart, Guide, LineChart, Marker, Series};
use super::table::{
    Better, Col, Field, Metric, Results, Row, Spread, Table, Vs, compare, factor, fig, row, trio,
    vs,
};
use super::{Ctx, ERLANG, OTTER, OTTER_MATCH, id};
use crate::suite::{self, FAN_OUT_RECEIVERS, Impl, LATENCY_B, LATENCY_W};

use Better::{Higher, Lower, Neither};

pub(super) const TIME: Metric = Metric::new(Field::Key("seconds"), secs, Lower);
pub(super) const RATE: Metric = Metric::new(Field::Rate, rate, Higher);
pub(super) const NS: Metric = Metric::new(Field::NsPerOp, nanos, Lower);
pub(super) const BPP: Metric =
    Metric::new(Field::Key("bytes_per_process"), bytes, Lower).words("smaller", "larger");
const BEAM_BPP: Metric =
    Metric::new(Field::Key("beam_bytes_per_process"), bytes, Neither).only(Impl::Erlang);
pub(super) const PEAK_RSS: Metric =
    Metric::new(Field::Key("peak_rss_bytes"), mebibytes, Lower).words("smaller", "larger");
pub(super) const P50: Metric = Metric::new(Field::Key("p50_us"), micros, Lower);
pub(super) const P99: Metric = Metric::new(Field::Key("p99_us"), micros, Lower);
pub(super) const P999: Metric = Metric::new(Field::Key("p999_us"), micros, Lower);
pub(super) const MAX: Metric = Metric::new(Field::Key("max_us"), micros, Lower);
/// Round trips or requests per second, as the load generators count them.
pub(super) const OPS_PER_S: Metric = Metric::new(Field::Key("ops_per_s"), rate, Higher);
const SERVER_CPU: Metric = Metric::new(
    Field::Key("server_cpu_s_per_million"),
    |x| format!("{x:.2}"),
    Lower,
);
pub(super) const VMHWM: Metric =
    Metric::new(Field::Key("server_vmhwm_kb"), kib, Lower).words("lower", "higher");

/// A rate: "1.5M/s".
pub(super) fn rate(x: f64) -> String {
    format!("{}/s", si(x))
}
/// Bytes: "312 B", "1.50 KiB".
fn bytes(x: f64) -> String {
    if x.abs() >= 1024.0 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{x:.0} B")
    }
}
/// Bytes as MiB.
fn mebibytes(x: f64) -> String {
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
/// A metric that is shown, never compared.
const fn shown(field: Field, fmt: fn(f64) -> String) -> Metric {
    Metric::new(field, fmt, Neither)
}

/// The standard three columns of a row-per-measure table: otter, `other`, and the comparison.
fn measures(other: &str) -> Vec<Col> {
    vec![
        fig("otter", 0, None),
        fig(other, 1, None),
        vs(format!("otter vs {other}"), 0, 1, None, Vs::Bold),
    ]
}

/// A row of literal cells.
pub(super) fn text_row(cells: Vec<String>) -> Row {
    Row {
        keys: cells,
        slots: Vec::new(),
        metric: None,
    }
}

/// message / closure of seed #1 per implementation, and the gap's comparison.
pub(super) fn closure_gap(res: &Results<'_>, n: u64) -> Vec<String> {
    let cid = |style: &str| id("closure", &[("n", n.to_string()), ("style", style.into())]);
    let mc = |imp| {
        res.median(&cid("message"), imp, &NS)
            .zip(res.median(&cid("closure"), imp, &NS))
    };
    let (o, e) = (
        mc(Impl::Otter).map(|(m, c)| m / c),
        mc(Impl::Erlang).map(|(m, c)| m / c),
    );
    let x = |r: Option<f64>| r.map_or("—".into(), |x| format!("{}×", factor(x)));
    let gap = match (o, e) {
        (Some(a), Some(b)) if a <= b => format!("**{}× smaller gap**", factor(b / a)),
        (Some(a), Some(b)) => format!("{}× larger gap", factor(a / b)),
        _ => "—".into(),
    };
    vec![x(o), x(e), gap]
}

/// Seed #4, the ring: the N × M grid, the table of every cell, and `ring.svg`.
fn ring(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += "\n## Seed #4 — the ring (Armstrong's ring, N processes × M rounds)\n\n\
        \"Erlang vs. Stackless vs. multitask: the Ring Benchmark Showdown\" (2007): N and M \
        each in 100, 1,000, 10,000; Erlang took 20.5 s for 10,000 × 10,000 (≈ 4.9 M sends/s). \
        Timed: building the ring, M rounds, and one `stop` round. Sends per second \
        (N·M / time); the cell gives otter, erlang, and otter vs erlang.\n\n";
    let cid = |n: u64, m: u64| id("ring", &[("n", n.to_string()), ("m", m.to_string())]);
    let run = |n, m| {
        [Impl::Otter, Impl::Erlang]
            .iter()
            .any(|&i| !matches!(res.cell(&cid(n, m), i), super::table::Cell::NotRun))
    };
    let mut grid = Table {
        keys: vec!["N \\ M"],
        cols: Vec::new(),
        rows: Vec::new(),
    };
    let mut list = Table {
        keys: vec!["N", "M", "sends"],
        cols: vec![
            fig("otter time", 0, Some(TIME)),
            fig("erlang time", 1, Some(TIME)),
        ],
        rows: Vec::new(),
    };
    list.cols.extend(trio(RATE, "sends/s"));
    for &m in &s.ring {
        grid.cols
            .push(fig(format!("M = {}", si(m as f64)), 0, None));
    }
    for &n in &s.ring {
        let cells = s.ring.iter().map(|&m| {
            if !run(n, m) {
                return format!("not run ({} sends: `--full`)", si((n * m) as f64));
            }
            let (o, e) = (
                res.cell(&cid(n, m), Impl::Otter),
                res.cell(&cid(n, m), Impl::Erlang),
            );
            let (o_s, e_s) = (o.show(&RATE, Spread::None), e.show(&RATE, Spread::None));
            format!(
                "otter {o_s}<br>erlang {e_s}<br>{}",
                compare(o.median(&RATE), e.median(&RATE), &RATE, Vs::Bold)
            )
        });
        grid.rows.push(text_row(
            std::iter::once(format!("**N = {}**", si(n as f64)))
                .chain(cells)
                .collect(),
        ));
        for &m in s.ring.iter().filter(|&&m| run(n, m)) {
            list.rows
                .push(row(&[&n, &m, &si((n * m) as f64)], &cid(n, m), None));
        }
    }
    c.md += &grid.markdown(res);
    c.md += "\n";
    c.md += &list.markdown(res);
    let mut series = Vec::new();
    for (imp, color) in [(Impl::Otter, OTTER), (Impl::Erlang, ERLANG)] {
        for (i, &n) in s.ring.iter().enumerate() {
            let points = s.ring.iter().filter_map(|&m| {
                res.median(&cid(n, m), imp, &RATE)
                    .map(|y| ((n * m) as f64, y))
            });
            let marker = [
                Marker::Circle,
                Marker::Square,
                Marker::Triangle,
                Marker::Diamond,
            ][i % 4];
            let name = format!("{} N={}", imp.name(), si(n as f64));
            series.push(Series {
                name,
                color,
                dashed: imp == Impl::Erlang,
                marker,
                points: points.collect(),
            });
        }
    }
    let chart = LineChart {
        title: "Ring: sends per second over N·M".into(),
        subtitle: "seed #4; median of repetitions; higher is better".into(),
        x: Axis {
            label: "N·M sends (log)",
            log: true,
            fmt: si,
        },
        y: Axis {
            label: "sends per second (log)",
            log: true,
            fmt: si,
        },
        series,
        guides: Vec::new(),
    };
    c.svg("ring.svg", &[chart], "ring: sends/s over N·M")
}

/// Seed #3, serial spawn: time and rate by number of chains, and `spawn.svg`.
fn spawn(c: &mut Ctx<'_>) -> Result<(), String> {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Seed #3 — serial spawn (n processes in c chains)\n\n\"How fast can Erlang create \
         processes?\" (2006): 1,000,000 processes in c chains, each spawning the next and \
         exiting; ≈ 350,000 spawn+exit/s then, slower with more chains. Here n = {}.\n\n",
        si(s.spawn_n as f64)
    );
    let cid = |ch: u64| {
        id(
            "spawn",
            &[("n", s.spawn_n.to_string()), ("c", ch.to_string())],
        )
    };
    let mut cols = vec![
        fig("otter time", 0, Some(TIME)),
        fig("erlang time", 1, Some(TIME)),
    ];
    cols.extend(trio(RATE, "spawn+exit/s"));
    let rows = s
        .spawn_c
        .iter()
        .map(|&ch| row(&[&ch], &cid(ch), None))
        .collect();
    c.md += &Table {
        keys: vec!["chains c"],
        cols,
        rows,
    }
    .markdown(res);
    let bars = |imp| {
        s.spawn_c
            .iter()
            .map(|&ch| res.median(&cid(ch), imp, &RATE))
            .collect()
    };
    let chart = BarChart {
        title: "Serial spawn: spawn+exit per second by number of chains".into(),
        subtitle: format!("seed #3; n = {}; higher is better", si(s.spawn_n as f64)),
        y: Axis {
            label: "spawn+exit per second",
            log: false,
            fmt: si,
        },
        groups: s.spawn_c.iter().map(|ch| format!("c = {ch}")).collect(),
        series: vec![
            ("otter".into(), OTTER, bars(Impl::Otter)),
            ("erlang".into(), ERLANG, bars(Impl::Erlang)),
        ],
    };
    c.bars("spawn.svg", &chart, "spawn rate by chains")
}

/// A raw/server table (counting, pingpong): otter, erlang, and each server row against the
/// raw row of the same `keys` (slots 2 and 3).
fn raw_server(
    m: Metric,
    head: &str,
    keys: Vec<&'static str>,
    rows: Vec<(Vec<String>, String, String)>,
) -> Table {
    let mut cols = trio(m, head);
    cols.push(vs("server vs raw, otter", 0, 2, Some(m), Vs::Plain));
    cols.push(vs("server vs raw, erlang", 1, 3, Some(m), Vs::Plain));
    let rows = rows.into_iter().map(|(keys, id, raw)| {
        let mut r = row(&[], &id, None);
        r.keys = keys;
        if id != raw {
            r.slots
                .extend([Some((raw.clone(), Impl::Otter)), Some((raw, Impl::Erlang))]);
        }
        r
    });
    Table {
        keys,
        cols,
        rows: rows.collect(),
    }
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
        si(s.counting_msgs as f64)
    );
    let cid = |senders: u64, style: &str| {
        let msgs = s.counting_msgs.to_string();
        id(
            "counting",
            &[
                ("msgs", msgs),
                ("senders", senders.to_string()),
                ("style", style.into()),
            ],
        )
    };
    let rows = ["raw", "server"].iter().flat_map(|st| {
        s.senders.iter().map(move |&n| {
            (
                vec![st.to_string(), n.to_string()],
                cid(n, st),
                cid(n, "raw"),
            )
        })
    });
    c.md += &raw_server(RATE, "msgs/s", vec!["style", "senders"], rows.collect()).markdown(res);
    let fan = suite::fan_out_id(s);
    let cell = |id: &str, imp| res.cell(id, imp);
    let one = cid(1, "raw");
    let plain = |imp| {
        compare(
            res.median(&fan, imp, &RATE),
            res.median(&one, imp, &RATE),
            &RATE,
            Vs::Plain,
        )
    };
    let (fo, fe) = (cell(&fan, Impl::Otter), cell(&fan, Impl::Erlang));
    c.md += &format!(
        "\nFan-out: 1 sender, raw, round-robin to {FAN_OUT_RECEIVERS} counters (each send \
         to another process than the one before): otter {}, erlang {} ({}); against 1 \
         counter, otter {}, erlang {}.\n",
        fo.show(&RATE, Spread::None),
        fe.show(&RATE, Spread::None),
        compare(fo.median(&RATE), fe.median(&RATE), &RATE, Vs::Bold),
        plain(Impl::Otter),
        plain(Impl::Erlang),
    );
    let floor = cell(&cid(1, "channel"), Impl::Otter);
    if let Some(f) = floor.median(&RATE) {
        c.md += &format!(
            "\nThe floor: the same messages between two OS threads over `std::sync::mpsc` \
             (crossbeam's unbounded channel, no otter; `counting style=channel`): {}. \
             otter's raw loop, 1 sender, runs at {} of it. A message that crosses cores costs \
             cache-line transfers, and the channel pays them too. A stream's send in otter has \
             one locked instruction, the mailbox tail's CAS (the pid table's count is kept \
             across a poll); what the rest of its time is goes in ARCHITECTURE.md \"Where \
             the time goes\".\n",
            floor.show(&RATE, Spread::None),
            res.median(&one, Impl::Otter, &RATE)
                .map_or("—".into(), |r| format!("{:.0}%", 100.0 * r / f)),
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
        si(s.mailbox_match_max_k as f64)
    );
    let slots: [(&str, Impl, Option<&str>); 6] = [
        ("spawn", Impl::Otter, None),
        ("reverse", Impl::Otter, None),
        ("spawn", Impl::Otter, Some("match")),
        ("reverse", Impl::Otter, Some("match")),
        ("spawn", Impl::Erlang, None),
        ("reverse", Impl::Erlang, None),
    ];
    let mid = |k: u64, (order, imp, style): (&str, Impl, Option<&str>)| {
        let mut a = vec![("k", k.to_string()), ("order", order.to_string())];
        a.extend(style.map(|st| ("style", st.to_string())));
        Some((id("mailbox", &a), imp))
    };
    let heads = [
        "otter key, spawn",
        "otter key, reverse",
        "otter match, spawn",
        "otter match, reverse",
        "erlang spawn",
        "erlang reverse",
    ];
    let mut cols: Vec<Col> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| fig(*h, i, Some(TIME)))
        .collect();
    cols.push(vs(
        "otter(key) vs erlang, spawn",
        0,
        4,
        Some(TIME),
        Vs::Bold,
    ));
    cols.push(vs(
        "otter(key) vs erlang, reverse",
        1,
        5,
        Some(TIME),
        Vs::Bold,
    ));
    let mut rows: Vec<Row> = s
        .mailbox_k
        .iter()
        .map(|&k| Row {
            keys: vec![si(k as f64)],
            slots: slots.iter().map(|&sl| mid(k, sl)).collect(),
            metric: None,
        })
        .collect();
    // Growth exponent: the log-log slope of time over k between the smallest and largest k.
    let mut growth = vec!["**growth exponent**".to_string()];
    let mut series = Vec::new();
    for sl @ (order, imp, style) in slots {
        let pts: Vec<(f64, f64)> = s
            .mailbox_k
            .iter()
            .filter_map(|&k| {
                let (id, imp) = mid(k, sl)?;
                res.median(&id, imp, &TIME).map(|t| (k as f64, t))
            })
            .collect();
        growth.push(match (pts.first(), pts.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                format!("{:.2}", (b.1 / a.1).ln() / (b.0 / a.0).ln())
            }
            _ => "—".into(),
        });
        let (name, color) = match (imp, style) {
            (Impl::Otter, None) => (format!("otter key, {order} order"), OTTER),
            (Impl::Otter, Some(_)) => (format!("otter match, {order} order"), OTTER_MATCH),
            (imp, _) => (format!("{}, {order} order", imp.name()), ERLANG),
        };
        let rev = order == "reverse";
        let marker = if rev { Marker::Square } else { Marker::Circle };
        series.push(Series {
            name,
            color,
            dashed: rev,
            marker,
            points: pts,
        });
    }
    growth.extend([String::new(), String::new()]);
    rows.push(text_row(growth));
    c.md += &Table {
        keys: vec!["k"],
        cols,
        rows,
    }
    .markdown(res);
    c.md += "\nThe growth exponent is the log-log slope of time over k between the smallest and \
             largest k measured: about 1 is linear, about 2 quadratic.\n";
    // Reference slopes, anchored at the fastest series' smallest k.
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let kmin = all.iter().map(|p| p.0).reduce(f64::min);
    let kmax = all.iter().map(|p| p.0).reduce(f64::max);
    let mut guides = Vec::new();
    if let (Some(kmin), Some(kmax)) = (kmin, kmax)
        && kmax > kmin
    {
        let t0 = all
            .iter()
            .filter(|p| p.0 == kmin)
            .map(|p| p.1)
            .reduce(f64::min)
            .unwrap_or(1e-3);
        let r = kmax / kmin;
        guides.push(Guide {
            label: "∝ k".into(),
            from: (kmin, t0),
            to: (kmax, t0 * r),
        });
        guides.push(Guide {
            label: "∝ k²".into(),
            from: (kmin, t0),
            to: (kmax, t0 * r * r),
        });
    }
    let chart = LineChart {
        title: "Mailbox: time to take k messages by sender pid".into(),
        subtitle: "seed #2; log-log; solid = spawn order, dashed = reverse order; lower is better"
            .into(),
        x: Axis {
            label: "k children (log)",
            log: true,
            fmt: si,
        },
        y: Axis {
            label: "time (log)",
            log: true,
            fmt: secs,
        },
        series,
        guides,
    };
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
        si(s.closure_n as f64)
    );
    let cid = |style: &str| {
        id(
            "closure",
            &[("n", s.closure_n.to_string()), ("style", style.into())],
        )
    };
    let gap = closure_gap(res, s.closure_n);
    let mut rows = vec![
        row(&[&"message, ns/increment"], &cid("message"), Some(NS)),
        row(&[&"closure, ns/increment"], &cid("closure"), Some(NS)),
    ];
    rows.push(text_row(
        [vec!["**message / closure**".to_string()], gap.clone()].concat(),
    ));
    c.md += &Table {
        keys: vec![""],
        cols: measures("erlang"),
        rows,
    }
    .markdown(res);
    let bars = |imp| {
        vec![
            res.median(&cid("message"), imp, &NS),
            res.median(&cid("closure"), imp, &NS),
        ]
    };
    let chart = BarChart {
        title: "Message vs closure: nanoseconds per increment".into(),
        subtitle: format!(
            "seed #1; n = {}; message/closure: otter {}, erlang {}; lower is better",
            si(s.closure_n as f64),
            gap[0],
            gap[1]
        ),
        y: Axis {
            label: "ns per increment",
            log: false,
            fmt: nanos,
        },
        groups: vec!["message (process)".into(), "closure chain".into()],
        series: vec![
            ("otter".into(), OTTER, bars(Impl::Otter)),
            ("erlang".into(), ERLANG, bars(Impl::Erlang)),
        ],
    };
    c.bars("closure.svg", &chart, "per-message vs per-call cost")
}

/// Memory: bytes per idle process.
fn memory(c: &mut Ctx<'_>) {
    let (res, s) = (c.res, c.s);
    c.md += &format!(
        "\n## Memory — an idle process\n\nWORKLOADS.md \"memory\" (the cost-of-a-process \
         question of seed #3): p = {} processes blocked in receive; VmRSS delta / p. Erlang \
         also reports its own accounting (`erlang:memory(processes)`); lower is better.\n\n",
        si(s.memory_p as f64)
    );
    let cid = id("memory", &[("p", s.memory_p.to_string())]);
    let rows = vec![
        row(&[&"RSS bytes per process"], &cid, Some(BPP)),
        row(&[&"runtime's own account"], &cid, Some(BEAM_BPP)),
        row(
            &[&"spawn time for p (until all are blocked)"],
            &cid,
            Some(TIME),
        ),
    ];
    c.md += &Table {
        keys: vec![""],
        cols: measures("erlang"),
        rows,
    }
    .markdown(res);
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
        si(s.pingpong_r as f64)
    );
    let cid = |style: &str| {
        id(
            "pingpong",
            &[("r", s.pingpong_r.to_string()), ("style", style.into())],
        )
    };
    let rows = ["raw", "server"].map(|st| (vec![st.to_string()], cid(st), cid("raw")));
    c.md += &raw_server(NS, "ns/round trip", vec!["style"], rows.into()).markdown(res);
}

/// fib(n), with fib(1) = fib(2) = 1.
fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (1u64, 1u64);
    for _ in 2..n {
        (a, b) = (b, a + b);
    }
    if n <= 2 { 1 } else { b }
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
        si((2 * fib(s.forkjoin_n) - 1) as f64)
    );
    let cid = id("forkjoin", &[("n", s.forkjoin_n.to_string())]);
    let rows = vec![
        row(&[&"time"], &cid, Some(TIME)),
        row(&[&"processes/s"], &cid, Some(shown(Field::Rate, rate))),
        row(&[&"peak RSS"], &cid, Some(PEAK_RSS)),
    ];
    c.md += &Table {
        keys: vec![""],
        cols: measures("erlang"),
        rows,
    }
    .markdown(res);
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
        si(s.latency_r as f64),
        LATENCY_B / 2
    );
    let pct = [(P50, "p50"), (P99, "p99"), (P999, "p99.9"), (MAX, "max")];
    let mut rows = Vec::new();
    for hog in [0u64, 1] {
        let cid = suite::latency_id(s, hog);
        rows.extend(
            pct.iter()
                .map(|(m, name)| row(&[&hog, name], &cid, Some(*m))),
        );
        rows.push(row(
            &[&hog, &"background msgs/s"],
            &cid,
            Some(shown(Field::Key("background_msgs_per_s"), rate)),
        ));
        if hog == 1 {
            let yields = shown(Field::Key("hog_yields"), |x| format!("{x:.0}"));
            rows.push(row(
                &[&hog, &"hog yields (stalls of 70 ms)"],
                &cid,
                Some(yields),
            ));
        }
    }
    let cols = vec![
        fig("otter", 0, None),
        fig("erlang", 1, None),
        vs("otter / erlang", 0, 1, None, Vs::Over),
    ];
    c.md += &Table {
        keys: vec!["hog", "measure"],
        cols,
        rows,
    }
    .markdown(res);
    let bars = |imp| {
        [0, 1]
            .iter()
            .flat_map(|&hog| {
                pct.iter()
                    .map(move |(m, _)| res.median(&suite::latency_id(s, hog), imp, m))
            })
            .collect()
    };
    let chart = BarChart {
        title: "Round-trip latency under load".into(),
        subtitle: format!(
            "r = {}, b = {LATENCY_B}, w = {LATENCY_W} µs; hog=1: one process never yields; \
             log scale, lower is better",
            si(s.latency_r as f64)
        ),
        y: Axis {
            label: "round trip",
            log: true,
            fmt: micros,
        },
        groups: [0, 1]
            .iter()
            .flat_map(|hog| pct.iter().map(move |(_, n)| format!("{n} h{hog}")))
            .collect(),
        series: vec![
            ("otter".into(), OTTER, bars(Impl::Otter)),
            ("erlang".into(), ERLANG, bars(Impl::Erlang)),
        ],
    };
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
        cols.extend([
            fig("otter p99", 0, Some(P99)),
            fig("erlang p99", 1, Some(P99)),
        ]);
        cols.extend([
            fig("otter CPU s / M", 0, Some(SERVER_CPU)),
            fig("erlang CPU s / M", 1, Some(SERVER_CPU)),
        ]);
        let rows = e.sizes.iter().flat_map(|&size| {
            e.conns.iter().map(move |&n| {
                row(
                    &[&size_name(size), &si(n as f64)],
                    &suite::echo_id(s, n, size, mode),
                    None,
                )
            })
        });
        c.md += &format!(
            "\n### {mode}\n\n{}",
            Table {
                keys: vec!["size", "conns"],
                cols,
                rows: rows.collect()
            }
            .markdown(res)
        );
    }
    // One series per (implementation, size, mode), in two panels.
    let series = |m: Metric| {
        let mut v = Vec::new();
        for mode in MODES {
            for (i, &size) in e.sizes.iter().enumerate() {
                for (imp, color) in [(Impl::Otter, OTTER), (Impl::Erlang, ERLANG)] {
                    let points = e.conns.iter().filter_map(|&n| {
                        res.median(&suite::echo_id(s, n, size, mode), imp, &m)
                            .map(|y| (n as f64, y))
                    });
                    let marker = if i == 0 {
                        Marker::Circle
                    } else {
                        Marker::Square
                    };
                    let name = format!("{} {}, {mode}", imp.name(), size_name(size));
                    v.push(Series {
                        name,
                        color,
                        dashed: mode == "active",
                        marker,
                        points: points.collect(),
                    });
                }
            }
        }
        v
    };
    let conns = Axis {
        label: "connections",
        log: true,
        fmt: si,
    };
    let top = LineChart {
        title: "TCP echo: round trips per second".into(),
        subtitle: "server on one core, closed-loop load on the other; log-log; solid = passive, \
                   dashed = active; higher is better"
            .into(),
        x: conns,
        y: Axis {
            label: "round trips/s",
            log: true,
            fmt: si,
        },
        series: series(OPS_PER_S),
        guides: Vec::new(),
    };
    let bottom = LineChart {
        title: "TCP echo: p99 round trip".into(),
        subtitle: "log-log; solid = passive, dashed = active; lower is better".into(),
        x: conns,
        y: Axis {
            label: "p99",
            log: true,
            fmt: micros,
        },
        series: series(P99),
        guides: Vec::new(),
    };
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
    let (o, e) = (Impl::Otter, Impl::Erlang);
    let mut rows = Vec::new();
    for &(size, r) in &s.dist {
        let cid = |echo| suite::dist_id(s, size, echo).unwrap_or_default();
        for (client, echo) in [(o, o), (o, e), (e, o), (e, e)] {
            let base = ((client, echo) != (e, e)).then(|| (cid(e), e));
            let keys = vec![
                size_name(size),
                si(r as f64),
                suite::dist_pair(client, echo.name()),
            ];
            rows.push(Row {
                keys,
                slots: vec![Some((cid(echo), client)), base],
                metric: None,
            });
        }
    }
    let cols = vec![
        Col::Fig("round trip".into(), 0, Some(NS), Spread::Range),
        fig("round trips/s", 0, Some(RATE)),
        vs("vs erlang-erlang", 0, 1, Some(RATE), Vs::Bold),
    ];
    c.md += &Table {
        keys: vec!["size", "r", "pair"],
        cols,
        rows,
    }
    .markdown(res);
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
    let lower = |key, fmt| Metric::new(Field::Key(key), fmt, Lower).words("lower", "higher");
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
            lower("server_threads", |x| format!("{x:.0}")),
        ),
    ];
    let cid = suite::http_id(s);
    let rows = measures.iter().map(|(name, m)| {
        let mut r = row(&[name], &cid, Some(*m));
        r.slots[1] = Some((cid.clone(), Impl::Tokio));
        r
    });
    let cols = vec![
        Col::Fig("otter".into(), 0, None, Spread::Runs),
        Col::Fig("tokio".into(), 1, None, Spread::Runs),
        vs("otter vs tokio", 0, 1, None, Vs::Bold),
    ];
    c.md += &Table {
        keys: vec!["measure"],
        cols,
        rows: rows.collect(),
    }
    .markdown(res);
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
pub(super) fn headline(res: &Results<'_>, s: &suite::Sizes) -> Table {
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
    let n = |x: u64| x.to_string();
    let ring = id("ring", &[("n", n(ring_n)), ("m", n(ring_n))]);
    let mut rows = vec![
        row(
            &[&"#4 ring", &format!("sends/s, {ring_n}×{ring_n}")],
            &ring,
            Some(RATE),
        ),
        row(
            &[
                &"#3 spawn",
                &format!("spawn+exit/s, n={} c=1", si(s.spawn_n as f64)),
            ],
            &id("spawn", &[("n", n(s.spawn_n)), ("c", n(1))]),
            Some(RATE),
        ),
    ];
    for style in ["raw", "server"] {
        let cid = id(
            "counting",
            &[
                ("msgs", n(s.counting_msgs)),
                ("senders", n(1)),
                ("style", style.into()),
            ],
        );
        rows.push(row(
            &[&"#5 counting", &format!("msgs/s, {style}, 1 sender")],
            &cid,
            Some(RATE),
        ));
    }
    for order in ["spawn", "reverse"] {
        let cid = id("mailbox", &[("k", n(k)), ("order", order.into())]);
        rows.push(row(
            &[&"#2 mailbox", &format!("time, k={k} {order} order")],
            &cid,
            Some(TIME),
        ));
    }
    for style in ["message", "closure"] {
        let cid = id("closure", &[("n", n(s.closure_n)), ("style", style.into())]);
        rows.push(row(
            &[&"#1 closure", &format!("ns per increment, {style}")],
            &cid,
            Some(NS),
        ));
    }
    let gap = closure_gap(res, s.closure_n);
    rows.push(text_row(
        [
            vec![
                "#1 closure".into(),
                "message / closure (lower is better)".into(),
            ],
            gap,
        ]
        .concat(),
    ));
    let memory = id("memory", &[("p", n(s.memory_p))]);
    rows.push(row(
        &[
            &"memory",
            &format!("bytes per idle process, p={}", si(s.memory_p as f64)),
        ],
        &memory,
        Some(BPP),
    ));
    for style in ["raw", "server"] {
        let cid = id(
            "pingpong",
            &[("r", n(s.pingpong_r)), ("style", style.into())],
        );
        rows.push(row(
            &[&"pingpong", &format!("ns per round trip, {style}")],
            &cid,
            Some(NS),
        ));
    }
    let fj = id("forkjoin", &[("n", n(s.forkjoin_n))]);
    rows.push(row(
        &[&"forkjoin", &format!("seconds, fib({}) tree", s.forkjoin_n)],
        &fj,
        Some(TIME),
    ));
    rows.push(row(
        &[
            &"forkjoin",
            &format!("peak RSS, fib({}) tree", s.forkjoin_n),
        ],
        &fj,
        Some(PEAK_RSS),
    ));
    for hog in [0, 1] {
        let what = format!("p99.9 round trip under load, hog={hog}");
        rows.push(row(
            &[&"latency", &what],
            &suite::latency_id(s, hog),
            Some(P999),
        ));
    }
    Table {
        keys: vec!["seed", "measure"],
        cols: measures("erlang"),
        rows,
    }
}
