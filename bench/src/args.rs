//! The command line of one workload run: `otter-bench BENCH key=value ... [threads=N]`.
//!
//! Validation follows WORKLOADS.md and the Erlang reference's `bench_common.erl`: an unknown
//! or repeated key, a malformed argument (no `=`, empty key) or a bad value (not plain
//! decimal digits, zero, out of range, an unknown choice) is a [`UsageError`]; the caller
//! prints it as one line on stderr and exits 2 with nothing on stdout. The message quotes
//! what was given escaped (`{:?}`), so that a newline in an argument cannot break the line.
//! What the values may cost the machine is checked next, by `workloads::check`.

use std::fmt;

/// The most scheduler threads `threads=N` accepts (otter allows more threads than cores;
/// the bound only catches typos).
pub(crate) const MAX_THREADS: u64 = 256;

/// The kind and default of one parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A positive integer (plain decimal digits), with its default.
    PosInt(u64),
    /// One of a fixed set of words, with its default (which is one of them).
    Choice(&'static [&'static str], &'static str),
    /// An integer in `lo..=hi` (plain decimal digits; `lo` may be 0), with its default:
    /// (lo, hi, default). Printed as a JSON number, like [`Kind::PosInt`].
    IntIn(u64, u64, u64),
    /// A name (an Erlang node or cookie: 1 to [`MAX_NAME`] characters among ASCII letters,
    /// digits and `_ - . @`), with its default (`""`: none, the workload says whether it
    /// must be given). Printed as a JSON string.
    Name(&'static str),
}

/// The longest [`Kind::Name`] (Erlang's atom limit).
pub(crate) const MAX_NAME: usize = 255;

/// One parameter of a workload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamSpec {
    /// The key, as written on the command line and in the JSON `params`.
    pub(crate) name: &'static str,
    /// Its kind and default.
    pub(crate) kind: Kind,
}

impl ParamSpec {
    /// A positive-integer parameter.
    pub(crate) const fn int(name: &'static str, default: u64) -> ParamSpec {
        ParamSpec {
            name,
            kind: Kind::PosInt(default),
        }
    }

    /// An integer parameter in `lo..=hi` (e.g. a 0/1 switch, or a bounded duration).
    pub(crate) const fn int_in(name: &'static str, lo: u64, hi: u64, default: u64) -> ParamSpec {
        ParamSpec {
            name,
            kind: Kind::IntIn(lo, hi, default),
        }
    }

    /// A name parameter ([`Kind::Name`]).
    pub(crate) const fn name(name: &'static str, default: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            kind: Kind::Name(default),
        }
    }

    /// A parameter taking one of `choices`.
    pub(crate) const fn choice(
        name: &'static str,
        choices: &'static [&'static str],
        default: &'static str,
    ) -> ParamSpec {
        ParamSpec {
            name,
            kind: Kind::Choice(choices, default),
        }
    }
}

/// A parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// A positive integer.
    Int(u64),
    /// One of the parameter's choices.
    Choice(&'static str),
    /// A name.
    Name(String),
}

/// Every parameter of a workload with the value used (defaults filled in), in the order of
/// the workload's spec.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    values: Vec<(&'static str, Value)>,
}

impl Params {
    /// The integer parameter `key`.
    ///
    /// # Panics
    ///
    /// If the workload has no such integer parameter (a bug in the workload).
    pub(crate) fn int(&self, key: &str) -> u64 {
        match self.get(key) {
            Some(Value::Int(v)) => *v,
            other => panic!("no integer parameter {key:?} (found {other:?})"),
        }
    }

    /// The choice parameter `key`.
    ///
    /// # Panics
    ///
    /// If the workload has no such choice parameter (a bug in the workload).
    pub(crate) fn choice(&self, key: &str) -> &'static str {
        match self.get(key) {
            Some(Value::Choice(v)) => v,
            other => panic!("no choice parameter {key:?} (found {other:?})"),
        }
    }

    /// The name parameter `key` (`""` if not given and without default).
    ///
    /// # Panics
    ///
    /// If the workload has no such name parameter (a bug in the workload).
    pub(crate) fn name(&self, key: &str) -> &str {
        match self.get(key) {
            Some(Value::Name(v)) => v,
            other => panic!("no name parameter {key:?} (found {other:?})"),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The JSON `params` object: numbers as numbers, choices as strings.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for (k, v) in &self.values {
            let v = match v {
                Value::Int(i) => serde_json::Value::from(*i),
                Value::Choice(s) => serde_json::Value::from(*s),
                Value::Name(s) => serde_json::Value::from(s.as_str()),
            };
            map.insert((*k).to_string(), v);
        }
        serde_json::Value::Object(map)
    }
}

/// A bad command line: the message for the one line on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsageError(pub(crate) String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses `key=value` arguments against `spec`, plus `threads=N` (default
/// `default_threads`). Returns the parameters (defaults filled in) and the thread count.
pub(crate) fn parse(
    bench: &str,
    spec: &[ParamSpec],
    args: &[String],
    default_threads: usize,
) -> Result<(Params, usize), UsageError> {
    let mut given: Vec<(&str, &str)> = Vec::new();
    for arg in args {
        let Some((key, raw)) = arg.split_once('=') else {
            return Err(malformed(bench, arg));
        };
        if key.is_empty() {
            return Err(malformed(bench, arg));
        }
        if key != "threads" && !spec.iter().any(|p| p.name == key) {
            let known: Vec<&str> = spec
                .iter()
                .map(|p| p.name)
                .chain(std::iter::once("threads"))
                .collect();
            return Err(UsageError(format!(
                "{bench}: unknown key {key:?} (known: {})",
                known.join(", ")
            )));
        }
        if given.iter().any(|(k, _)| *k == key) {
            return Err(UsageError(format!("{bench}: key {key:?} given twice")));
        }
        given.push((key, raw));
    }
    let lookup = |key: &str| given.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);

    let mut values = Vec::with_capacity(spec.len());
    for p in spec {
        let v = match (p.kind, lookup(p.name)) {
            (Kind::PosInt(default), None) => Value::Int(default),
            (Kind::Choice(_, default), None) => Value::Choice(default),
            (Kind::IntIn(_, _, default), None) => Value::Int(default),
            (Kind::Name(default), None) => Value::Name(default.to_string()),
            (Kind::Name(_), Some(raw)) => {
                if !is_name(raw) {
                    return Err(bad_value(
                        bench,
                        p.name,
                        raw,
                        format!("1 to {MAX_NAME} of the characters A-Z a-z 0-9 _ - . @"),
                    ));
                }
                Value::Name(raw.to_string())
            }
            (Kind::IntIn(lo, hi, _), Some(raw)) => {
                Value::Int(parse_int(raw, lo, hi).ok_or_else(|| {
                    bad_value(bench, p.name, raw, format!("an integer in {lo}..{hi}"))
                })?)
            }
            (Kind::PosInt(_), Some(raw)) => {
                Value::Int(parse_int(raw, 1, u64::MAX).ok_or_else(|| {
                    bad_value(bench, p.name, raw, "a positive integer".to_string())
                })?)
            }
            (Kind::Choice(choices, _), Some(raw)) => match choices.iter().find(|c| **c == raw) {
                Some(c) => Value::Choice(c),
                None => {
                    return Err(bad_value(
                        bench,
                        p.name,
                        raw,
                        format!("one of {}", choices.join(", ")),
                    ));
                }
            },
        };
        values.push((p.name, v));
    }
    let threads = match lookup("threads") {
        None => default_threads,
        Some(raw) => parse_int(raw, 1, MAX_THREADS).ok_or_else(|| {
            bad_value(
                bench,
                "threads",
                raw,
                format!("an integer in 1..{MAX_THREADS}"),
            )
        })? as usize,
    };
    Ok((Params { values }, threads))
}

/// Plain decimal digits only (no sign, exponent or separators), within `lo..=hi`.
fn parse_int(raw: &str, lo: u64, hi: u64) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse::<u64>().ok().filter(|v| (lo..=hi).contains(v))
}

/// Whether `raw` is a [`Kind::Name`].
fn is_name(raw: &str) -> bool {
    (1..=MAX_NAME).contains(&raw.len())
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'@'))
}

fn malformed(bench: &str, arg: &str) -> UsageError {
    UsageError(format!(
        "{bench}: malformed argument {arg:?} (expected key=value)"
    ))
}

fn bad_value(bench: &str, key: &str, raw: &str, expected: String) -> UsageError {
    UsageError(format!(
        "{bench}: bad value for {key}: {raw:?} (expected {expected})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &[ParamSpec] = &[
        ParamSpec::int("n", 1000),
        ParamSpec::choice("style", &["raw", "server"], "raw"),
        ParamSpec::int_in("hog", 0, 1, 0),
        ParamSpec::name("peer", ""),
    ];

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_are_filled_in_spec_order() {
        let (p, t) = parse("x", SPEC, &args(&["style=server"]), 2).unwrap();
        assert_eq!(p.int("n"), 1000);
        assert_eq!(p.choice("style"), "server");
        assert_eq!(t, 2);
        assert_eq!(
            p.to_json().to_string(),
            r#"{"n":1000,"style":"server","hog":0,"peer":""}"#
        );
    }

    #[test]
    fn bounded_integers() {
        let (p, _) = parse("x", SPEC, &args(&["hog=1"]), 2).unwrap();
        assert_eq!(p.int("hog"), 1);
        let (p, _) = parse("x", SPEC, &args(&["hog=0"]), 2).unwrap();
        assert_eq!(p.int("hog"), 0);
        for bad in ["hog=2", "hog=-1", "hog=", "hog=01x"] {
            let e = parse("x", SPEC, &args(&[bad]), 2).expect_err(bad);
            assert!(e.0.contains("an integer in 0..1"), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_arguments_are_rejected() {
        for bad in [
            &["n=abc"][..],
            &["n=0"],
            &["n=-1"],
            &["n=+1"],
            &["n=1e3"],
            &["n="],
            &["n"],
            &["=3"],
            &["m=1"],
            &["n=1", "n=2"],
            &["style=fast"],
            &["threads=0"],
            &["threads=100000"],
            &["n=99999999999999999999999"],
        ] {
            assert!(parse("x", SPEC, &args(bad), 2).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_echo_arguments_escaped_on_one_line() {
        for bad in [
            &["n=1\n2"][..],
            &["x\ny=1"],
            &["n\n"],
            &["=\n"],
            &["style=a\u{2028}b"],
            &["n=1", "n\r=2"],
            &["n=1", "n=\u{1b}[2J"],
        ] {
            let e = parse("x", SPEC, &args(bad), 2).expect_err("a bad argument");
            assert!(
                !e.0.chars().any(char::is_control) && !e.0.contains('\u{2028}'),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn names() {
        let (p, _) = parse("x", SPEC, &args(&["peer=echo_1@my-host.lan"]), 2).unwrap();
        assert_eq!(p.name("peer"), "echo_1@my-host.lan");
        for bad in ["peer=", "peer=a b", "peer='a'", "peer=a\nb", "peer=\u{e9}"] {
            assert!(parse("x", SPEC, &args(&[bad]), 2).is_err(), "{bad}");
        }
        let long = format!("peer={}", "a".repeat(MAX_NAME + 1));
        assert!(parse("x", SPEC, &args(&[&long]), 2).is_err());
    }

    #[test]
    fn threads_is_accepted() {
        let (_, t) = parse("x", SPEC, &args(&["threads=1", "n=5"]), 2).unwrap();
        assert_eq!(t, 1);
    }
}
