//! `otter-bench suite --ab BIN_A,BIN_B[,..]`: paired rounds of two or more builds.
//!
//! Each round runs every case once on every binary, the binaries in rotated order (round r
//! starts with binary r mod n), so that the machine's mood falls on all of them alike; the
//! rounds are `--reps` (default 5). The cases are the suite's otter cases (`--only`, `--quick`,
//! `--full` choose them as for the suite), or the `--case "bench k=v .."` given: one that
//! is a suite case's id runs as the suite runs it (echo, dist and http only so), any other
//! as `BIN bench k=v ..` (any binary that speaks WORKLOADS.md's contract, the Erlang twin too).
//! An echo case's server, a dist case's client and otter echo node, an http case's server
//! and load are the binary under test; an echo case's load generator is this binary.
//!
//! Per case and field (`--fields f,..`; default: the workload's figures of merit), each
//! binary's median [min–max] over the rounds, and for every binary after the first, the
//! median [min–max] of its per-round ratio to the first. Fields are the JSON line's numbers,
//! plus `ns_per_op` (from `seconds` and `ops` where the line has none) and `ms`. Every run's
//! line, with `binary` and `round`, goes to `ab.jsonl` in `--out`; the tables to `AB.md`
//! and stdout, with the steal time of the whole set.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Case, Impl, Options, Outcome, Sizes, cases, measure};
use crate::report::format::{factor, si};
use crate::report::table::median;
use crate::sysinfo;

/// The fields compared by default: the workload's figures of merit. Latency's include
/// its mean round trip (`ns_per_op`): the percentiles alone hide how many round trips wait
/// in the tail, which moves a run's length by ×10 or more while p99 stays put.
fn default_fields(bench: &str) -> &'static [&'static str] {
    match bench {
        "latency" => &["p50_us", "p99_us", "p999_us", "max_us", "ns_per_op"],
        "echo" | "http" => &["ops_per_s", "p99_us"],
        "memory" => &["bytes_per_process"],
        "forkjoin" => &["ms", "peak_rss_bytes"],
        _ => &["ns_per_op"],
    }
}

/// A field of a run's line.
fn field(v: &Value, f: &str) -> Option<f64> {
    match f {
        "ms" => Some(v["seconds"].as_f64()? * 1e3),
        "ns_per_op" if v[f].is_null() => Some(v["seconds"].as_f64()? * 1e9 / v["ops"].as_f64()?),
        _ => v[f].as_f64(),
    }
}

/// "median [min–max]" of `v` with `fmt`.
fn spread(v: &mut [f64], fmt: impl Fn(f64) -> String) -> String {
    v.sort_by(f64::total_cmp);
    match (median(v), v.first(), v.last()) {
        (Some(m), Some(&lo), Some(&hi)) => format!("{} [{}–{}]", fmt(m), fmt(lo), fmt(hi)),
        _ => "—".into(),
    }
}

/// Rounds without `--reps`.
pub(super) const ROUNDS: usize = 5;

/// The A/B options, taken out of the suite's command line.
#[derive(Debug, Default)]
pub(super) struct Ab {
    /// `--ab A,B,..`: the binaries, two or more.
    bins: Vec<PathBuf>,
    /// `--case "bench k=v .."` (repeatable): the cases instead of the suite's.
    cases: Vec<String>,
    /// `--fields f,..`: the fields instead of each workload's default.
    fields: Vec<String>,
    /// The rounds: `--reps`, else [`ROUNDS`].
    pub(super) rounds: usize,
}

impl Ab {
    /// `args` without the A/B options, and those if `--ab` is there.
    pub(super) fn split(args: &[String]) -> Result<(Option<Ab>, Vec<String>), String> {
        let (mut ab, mut rest, mut it) = (Ab::default(), Vec::new(), args.iter());
        while let Some(a) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{a} needs a value"))
            };
            match a.as_str() {
                "--ab" => ab.bins = binaries(&value()?)?,
                "--case" => ab.cases.push(value()?),
                "--fields" => ab.fields = value()?.split(',').map(String::from).collect(),
                _ => rest.push(a.clone()),
            }
        }
        if ab.bins.is_empty() && !(ab.cases.is_empty() && ab.fields.is_empty()) {
            return Err("--case and --fields go with --ab".into());
        }
        Ok(((!ab.bins.is_empty()).then_some(ab), rest))
    }
}

/// The paired rounds of `ab` over the suite's otter cases of `o` (or `ab`'s own).
pub(super) fn run(o: &Options, ab: &Ab) -> Result<std::process::ExitCode, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
    let cases: Vec<Case> = if ab.cases.is_empty() {
        let only = |c: &Case| o.only.is_empty() || o.only.iter().any(|b| b == c.bench);
        let ours = |c: &Case| c.impls.contains(&Impl::Otter) && only(c);
        cases(&Sizes::for_options(o))
            .into_iter()
            .filter(ours)
            .collect()
    } else {
        let suite = cases(&Sizes::for_options(o));
        ab.cases
            .iter()
            .map(|s| named(s, &suite))
            .collect::<Result<_, _>>()?
    };
    let rounds = if ab.rounds == 0 { o.reps } else { ab.rounds };
    std::fs::create_dir_all(&o.out).map_err(|e| format!("cannot create {:?}: {e}", o.out))?;
    let path = o.out.join("ab.jsonl");
    let mut jsonl =
        std::fs::File::create(&path).map_err(|e| format!("cannot write {path:?}: {e}"))?;
    let n = ab.bins.len();
    let names: Vec<String> = ab.bins.iter().map(|b| b.display().to_string()).collect();
    // lines[case][binary][round]
    let mut lines: Vec<Vec<Vec<Value>>> = vec![vec![Vec::new(); n]; cases.len()];
    let mut all_ok = true;
    let erlang = super::erlang_bench(o).ok();
    let cpu_start = sysinfo::cpu_times();
    for round in 0..rounds {
        for (ci, c) in cases.iter().enumerate() {
            for k in 0..n {
                let b = (round + k) % n;
                let (outcome, _) = run_one(c, &ab.bins[b], &me, erlang.as_deref(), o);
                let (mut line, verdict) = match outcome {
                    Outcome::Ok(v) => (v, "ok".to_string()),
                    Outcome::CheckFailed(v, why) => (v, format!("CHECK FAILED: {why}")),
                    Outcome::Error(e) => (Value::Null, format!("FAILED: {e}")),
                    Outcome::Skipped(why) => (Value::Null, format!("skipped ({why})")),
                };
                eprintln!(
                    "[round {}/{}] {:<40} {}: {verdict}",
                    round + 1,
                    rounds,
                    c.id,
                    names[b]
                );
                all_ok &= verdict == "ok" || verdict.starts_with("skipped");
                if let Some(m) = line.as_object_mut() {
                    m.insert("binary".into(), names[b].clone().into());
                    m.insert("round".into(), (round + 1).into());
                    m.insert("case".into(), c.id.clone().into());
                    writeln!(jsonl, "{line}").map_err(|e| format!("cannot write {path:?}: {e}"))?;
                }
                lines[ci][b].push(if verdict == "ok" { line } else { Value::Null });
            }
        }
    }
    let steal = sysinfo::steal_share(cpu_start, sysinfo::cpu_times());
    let mut md = format!("# A/B: {} paired round(s)\n\n", rounds);
    for (i, name) in names.iter().enumerate() {
        let _ = writeln!(md, "- {} = `{name}`", (b'A' + i as u8) as char);
    }
    let _ = writeln!(
        md,
        "- steal time: {}",
        steal.map_or("unknown".into(), |s| format!("{:.2}%", s * 100.0))
    );
    for (ci, c) in cases.iter().enumerate() {
        let fields: Vec<String> = if ab.fields.is_empty() {
            default_fields(c.id.split(' ').next().unwrap_or_default())
                .iter()
                .map(|f| f.to_string())
                .collect()
        } else {
            ab.fields.clone()
        };
        let _ = writeln!(
            md,
            "\n## {}\n\n| binary | {} |\n|---|{}",
            c.id,
            fields.join(" | "),
            "---|".repeat(fields.len())
        );
        for b in 0..n {
            let mut row = format!("| {} |", (b'A' + b as u8) as char);
            for f in &fields {
                let of = |b: usize, r: usize| lines[ci][b].get(r).and_then(|v| field(v, f));
                let mut v: Vec<f64> = (0..rounds).filter_map(|r| of(b, r)).collect();
                let mut cell = spread(&mut v, si);
                if b > 0 {
                    let ratio = |r| {
                        of(b, r)
                            .zip(of(0, r))
                            .filter(|(_, a)| *a != 0.0)
                            .map(|(x, a)| x / a)
                    };
                    let mut rs: Vec<f64> = (0..rounds).filter_map(ratio).collect();
                    cell += &format!(" ×{}", spread(&mut rs, factor));
                }
                let _ = write!(row, " {cell} |");
            }
            let _ = writeln!(md, "{row}");
        }
    }
    print!("{md}");
    std::fs::write(o.out.join("AB.md"), &md).map_err(|e| format!("cannot write AB.md: {e}"))?;
    Ok(if all_ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    })
}

/// One run of `c` on the binary `bin`: a suite case the way the suite runs it on otter, an
/// ad hoc case as `bin bench k=v ..`.
fn run_one(
    c: &Case,
    bin: &Path,
    me: &Path,
    erlang: Option<&Path>,
    o: &Options,
) -> (Outcome, Option<i32>) {
    if c.impls.is_empty() {
        let argv: Vec<String> = c.args.iter().map(|(_, v)| v.clone()).collect();
        let (bench, rest) = argv
            .split_first()
            .map_or(("", &[][..]), |(b, r)| (b.as_str(), r));
        return super::invoke(bin, bench, rest, o.timeout);
    }
    let echo_load = if c.bench == super::echo::BENCH {
        me
    } else {
        bin
    };
    measure(c, Impl::Otter, bin, echo_load, erlang, o.timeout)
}

/// A `--case "bench k=v .."`: one of the suite's otter cases of this size (`--quick`,
/// `--full`) if it names one, run as the suite runs it; else its words as `args`, run as
/// given (no `impls`: not a suite case). Echo, dist and http take two programs and run
/// only as the suite's own cases.
fn named(s: &str, suite: &[Case]) -> Result<Case, String> {
    let id = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(c) = suite
        .iter()
        .find(|c| c.id == id && c.impls.contains(&Impl::Otter))
    {
        return Ok(c.clone());
    }
    let args: Vec<(&'static str, String)> = s.split_whitespace().map(|w| ("", w.into())).collect();
    let Some((_, bench)) = args.first() else {
        return Err("--case: empty".into());
    };
    let pairs = [super::echo::BENCH, super::dist::BENCH, super::http::BENCH];
    if pairs.contains(&bench.as_str()) {
        let known: Vec<&str> = suite
            .iter()
            .filter(|c| c.bench == bench)
            .map(|c| c.id.as_str())
            .collect();
        return Err(format!(
            "--case {id:?}: {bench} runs only as one of the suite's cases at this size: {}",
            known.join("; ")
        ));
    }
    let (id, otter_extra, impls) = (s.trim().to_string(), Vec::new(), Vec::new());
    Ok(Case {
        bench: "",
        id,
        args,
        otter_extra,
        impls,
        cutoff_group: None,
    })
}

/// `--ab`'s list: every binary must exist.
fn binaries(list: &str) -> Result<Vec<PathBuf>, String> {
    let bins: Vec<PathBuf> = list.split(',').map(PathBuf::from).collect();
    if bins.len() < 2 {
        return Err(format!(
            "--ab: {list:?}: two binaries or more, comma-separated"
        ));
    }
    match bins.iter().find(|b| !b.is_file()) {
        Some(b) => Err(format!(
            "--ab: {} is not a file (build each revision first)",
            b.display()
        )),
        None => Ok(bins),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Vec<Case> {
        cases(&Sizes::for_options(
            &super::super::parse_options(&[]).unwrap(),
        ))
    }

    #[test]
    fn a_case_that_names_a_suite_case_runs_as_the_suite_runs_it() {
        let suite = suite();
        let echo = suite.iter().find(|c| c.bench == super::super::echo::BENCH);
        let echo = echo.expect("the suite has echo cases");
        // Spaces as a shell line may leave them.
        let given = echo.id.replace(' ', "  ");
        let c = named(&given, &suite).unwrap();
        assert_eq!((c.bench, &c.id), (echo.bench, &echo.id));
        assert!(c.impls.contains(&Impl::Otter));
    }

    #[test]
    fn a_pair_workload_that_is_no_suite_case_is_refused_with_the_cases_it_could_be() {
        let suite = suite();
        for bench in ["echo conns=7", "dist r=1", "http"] {
            let e = named(bench, &suite).expect_err(bench);
            assert!(e.contains("runs only as one of the suite's cases"), "{e}");
        }
        let e = named("echo conns=7", &suite).unwrap_err();
        assert!(e.contains("echo conns="), "it lists the echo cases: {e}");
    }

    #[test]
    fn any_other_case_runs_as_given() {
        let c = named("ring n=10 m=5", &suite()).unwrap();
        assert!(c.impls.is_empty());
        let words: Vec<&str> = c.args.iter().map(|(_, w)| w.as_str()).collect();
        assert_eq!(words, ["ring", "n=10", "m=5"]);
        assert!(named("  ", &suite()).is_err());
    }
}
