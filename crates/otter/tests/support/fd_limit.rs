//! Shared by the tests that run out of file descriptors: the process's open count and
//! its soft `RLIMIT_NOFILE`, lowered and restored with `prlimit` (util-linux). Each such
//! test lives in a file of its own: the limit is the whole test process's.

#![allow(dead_code, unreachable_pub)]

use std::process::Command;

/// Descriptors open now (the listing's own included).
pub fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// Sets this process's soft limit on open descriptors; whether `prlimit` did.
pub fn set_soft_nofile(n: u64) -> bool {
    let pid = std::process::id().to_string();
    Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={n}:")])
        .status()
        .is_ok_and(|s| s.success())
}

/// This process's soft limit on open descriptors.
pub fn soft_nofile() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}
