//! How the report writes figures: counts and rates with SI suffixes, durations, bytes and
//! sizes with units.

/// The format `spec.md` calls `name`.
pub(crate) fn named(name: &str) -> Option<fn(f64) -> String> {
    Some(match name {
        "si" => si,
        "secs" => secs,
        // A rate: "1.5M/s".
        "rate" => |x| format!("{}/s", si(x)),
        // Nanoseconds and microseconds: "18 ns", "1.2 µs", "0.42 µs", "12.1 ms".
        "nanos" => |x| secs(x * 1e-9),
        "micros" => |x| secs(x * 1e-6),
        "bytes" => bytes,
        // Bytes in MiB: "5.4 MiB".
        "mib" => |x| format!("{:.1} MiB", x / f64::from(1u32 << 20)),
        // kB of `/proc/PID/status`: "13.1 MiB".
        "kib" => |kb| match kb >= 1024.0 {
            true => format!("{:.1} MiB", kb / 1024.0),
            false => bytes(kb * 1024.0),
        },
        // A whole count: "12"; a number with one or two decimals.
        "count" => |x| format!("{x:.0}"),
        "f1" => |x| format!("{x:.1}"),
        "f2" => |x| format!("{x:.2}"),
        _ => return None,
    })
}

/// `v` in the first of `units` (a divisor and its suffix) that its magnitude reaches, or in
/// the last, to about three significant digits.
fn scaled(v: f64, units: &[(f64, &'static str)]) -> (String, &'static str) {
    let last = &units[units.len() - 1];
    let (d, u) = units.iter().find(|(d, _)| v.abs() >= *d).unwrap_or(last);
    (three_digits(v / d), u)
}

/// A count or rate with an SI suffix: 1.5k, 20M, 3.2G.
pub(crate) fn si(v: f64) -> String {
    let (x, suffix) = scaled(v, &[(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]);
    x + suffix
}

/// A duration in seconds, with a unit: 12 ns, 3.4 µs, 56 ms, 1.2 s.
pub(crate) fn secs(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let (x, unit) = scaled(v, &[(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]);
    format!("{x} {unit}")
}

/// Bytes: "312 B", "1.50 KiB".
pub(crate) fn bytes(x: f64) -> String {
    match x.abs() >= 1024.0 {
        true => format!("{:.2} KiB", x / 1024.0),
        false => format!("{x:.0} B"),
    }
}

/// A message size: "64 B", "4 KiB".
pub(crate) fn size_name(size: u64) -> String {
    match size >= 1024 && size.is_multiple_of(1024) {
        true => format!("{} KiB", size / 1024),
        false => format!("{size} B"),
    }
}

/// A factor: three significant digits, at least two decimals below 10.
pub(crate) fn factor(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// About three significant digits, trailing zeros dropped: 123, 12.3, 1.23, 5.
fn three_digits(x: f64) -> String {
    let t = factor(x);
    match t.contains('.') {
        true => t.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(si(1000.0), "1k");
        assert_eq!(si(18_637_479.5), "18.6M");
        assert_eq!(si(2.5), "2.5");
        assert_eq!(secs(0.0536), "53.6 ms");
        assert_eq!(secs(1.0), "1 s");
        let nanos = named("nanos").unwrap();
        assert_eq!(nanos(209.0), "209 ns");
        assert_eq!(nanos(1500.0), "1.5 µs");
    }
}
