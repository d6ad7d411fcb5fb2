//! How the report writes figures: counts and rates with SI suffixes, durations, bytes and
//! sizes with units.

/// The format `spec.md` calls `name`.
pub(crate) fn named(name: &str) -> Option<fn(f64) -> String> {
    Some(match name {
        "si" => si,
        "secs" => secs,
        "rate" => rate,
        "nanos" => nanos,
        "micros" => micros,
        "bytes" => bytes,
        "mib" => mib,
        "kib" => kib,
        "count" => count,
        "f1" => |x| format!("{x:.1}"),
        "f2" => |x| format!("{x:.2}"),
        _ => return None,
    })
}

/// A count or rate with an SI suffix: 1.5k, 20M, 3.2G.
pub(crate) fn si(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{}{s}", three_digits(v / d))
}

/// A duration in seconds, with a unit: 12 ns, 3.4 µs, 56 ms, 1.2 s.
pub(crate) fn secs(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    let (d, u) = if a >= 1.0 {
        (1.0, "s")
    } else if a >= 1e-3 {
        (1e-3, "ms")
    } else if a >= 1e-6 {
        (1e-6, "µs")
    } else {
        (1e-9, "ns")
    };
    format!("{} {u}", three_digits(v / d))
}

/// A rate: "1.5M/s".
pub(crate) fn rate(x: f64) -> String {
    format!("{}/s", si(x))
}

/// A whole count: "12".
pub(crate) fn count(x: f64) -> String {
    format!("{x:.0}")
}

/// A count of a size list: "100k".
pub(crate) fn si_u(x: u64) -> String {
    si(x as f64)
}

/// Bytes: "312 B", "1.50 KiB".
pub(crate) fn bytes(x: f64) -> String {
    if x.abs() >= 1024.0 {
        format!("{:.2} KiB", x / 1024.0)
    } else {
        format!("{x:.0} B")
    }
}

/// Bytes in MiB: "5.4 MiB".
pub(crate) fn mib(x: f64) -> String {
    format!("{:.1} MiB", x / f64::from(1u32 << 20))
}

/// kB of `/proc/PID/status`: "13.1 MiB".
pub(crate) fn kib(kb: f64) -> String {
    if kb >= 1024.0 {
        format!("{:.1} MiB", kb / 1024.0)
    } else {
        bytes(kb * 1024.0)
    }
}

/// A message size: "64 B", "4 KiB".
pub(crate) fn size_name(size: u64) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// About three significant digits, trailing zeros dropped: 123, 12.3, 1.23, 5.
fn three_digits(x: f64) -> String {
    let t = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// Nanoseconds: "18 ns", "1.2 µs".
pub(crate) fn nanos(v: f64) -> String {
    secs(v * 1e-9)
}

/// Microseconds: "0.42 µs", "12.1 ms".
pub(crate) fn micros(us: f64) -> String {
    secs(us * 1e-6)
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
        assert_eq!(nanos(209.0), "209 ns");
        assert_eq!(nanos(1500.0), "1.5 µs");
    }
}
