//! What a run may ask of the machine: the bounds every workload's parameters are checked
//! against before anything is allocated (see `workloads::check`).
//!
//! Four bounds, each a usage error (exit 2) when a run would pass it:
//! * operations (the JSON `ops`, e.g. ring's n·m) ≤ [`MAX_OPS`];
//! * processes alive at once ≤ [`MAX_PROCESSES`];
//! * OS threads a workload starts itself (`counting style=channel`) ≤ [`MAX_OS_THREADS`];
//! * bytes at the run's peak ≤ the memory budget of [`Limits::of_this_machine`]: half of the
//!   least of MemTotal, the cgroup's memory limit and the address-space and data-size
//!   rlimits (`ulimit -v`, `ulimit -d`). Each workload charges its items at the peak cost
//!   measured here (`/usr/bin/time` max RSS over 10^6 items, release and debug builds,
//!   `threads=1` and 2) plus a margin: the constants below.

use std::fmt;

/// The most operations one run may do: 10^12, more than three hours at the fastest rate
/// any workload reaches (about 80M/s), days on the Erlang twin. Time is the only thing
/// these cost (a ring's m, pingpong's r, spawn's n, closure's chain), so the bound only
/// catches typos; it also keeps every count exact in the JSON line (below 2^53) and every
/// product (ring's n·m, counting's 100·msgs) far from overflowing.
pub(crate) const MAX_OPS: u64 = 1_000_000_000_000;

/// Processes a single run may have alive at once: 2^24 (otter's table holds 2^26; this
/// leaves room and keeps a run's own bookkeeping, a pid or a flag a process, small).
pub(crate) const MAX_PROCESSES: u64 = 1 << 24;

/// OS threads a workload may start itself (`counting style=channel`: one per sender plus
/// the counter). Each takes a pid (`kernel.pid_max`, 32768 by default, shared with the
/// whole machine) and four memory mappings (stack, its guard, the signal stack, its
/// guard: `vm.max_map_count`, 65530 by default); past about 16,000 the standard library
/// aborts inside the new thread, which no check afterwards could turn into a clean error.
/// The seed runs one sender a core; 1025 is far from either limit.
pub(crate) const MAX_OS_THREADS: u64 = 1025;

/// The longest computation `latency` gives a background process per message, in µs
/// (its `w`): one second. Only time is at stake; the bound catches typos (a `w` in
/// nanoseconds) that would make a run last for days.
pub(crate) const MAX_WORK_US: u64 = 1_000_000;

/// Bytes charged for one timed sample `latency` keeps (a `u64` of nanoseconds, in a
/// vector allocated before the timed part).
pub(crate) const SAMPLE_BYTES: u64 = 8;

/// Bytes charged for a ring process: measured 1,025 at the peak (its 192-byte cell, table
/// slot, and the 31-slot message block its mailbox keeps once the token has passed).
pub(crate) const RING_PROCESS_BYTES: u64 = 1280;
/// Bytes charged for a process that waits or sends once and exits (memory's idle process:
/// measured 488 with its `Ready` queued at the parent and its pid kept; mailbox's child:
/// 423 with its message and pid; a counting sender: 524 with its pid and report).
pub(crate) const PROCESS_BYTES: u64 = 640;
/// Bytes charged for one chain of `spawn` (about two processes of it alive at once and its
/// `Done`: measured 232).
pub(crate) const CHAIN_BYTES: u64 = 384;
/// Bytes charged for a message that may sit in a mailbox or channel: measured 33 for a
/// counting `Count` queued on one worker (24 for closure's `Go`). A sender does not wait
/// for its receiver, so every message of a run may be queued at once (it happens with
/// `threads=1`, where the receiver gets no core until the senders are done).
pub(crate) const MESSAGE_BYTES: u64 = 48;
/// Bytes charged for an OS thread: the 2 MiB stack a Rust thread reserves, plus 64 KiB
/// for its guard, signal stack, thread-locals and the kernel's task (measured resident:
/// about 20 KiB).
pub(crate) const OS_THREAD_BYTES: u64 = (2 << 20) + (64 << 10);

/// The memory a run may use, and why.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Bytes a run may need at its peak.
    pub(crate) memory_budget: u64,
    /// Where the budget comes from, e.g. `half of MemTotal (23.5 GiB)`.
    pub(crate) basis: String,
}

impl Limits {
    /// This machine's: half of the least of MemTotal (`/proc/meminfo`), the memory limit of
    /// this process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), and the soft
    /// address-space and data-size rlimits (`/proc/self/limits`). Half leaves room for the
    /// runtime, the allocator's slack, the kernel and whatever else runs. If none can be
    /// read, 2 GiB is assumed.
    pub(crate) fn of_this_machine() -> Limits {
        let mut least: Option<(u64, &str)> = None;
        let mut consider = |bytes: Option<u64>, what: &'static str| {
            if let Some(b) = bytes
                && least.is_none_or(|(l, _)| b < l)
            {
                least = Some((b, what));
            }
        };
        consider(mem_total(), "MemTotal");
        consider(cgroup_limit(), "the cgroup's memory limit");
        consider(rlimit("Max address space"), "ulimit -v");
        consider(rlimit("Max data size"), "ulimit -d");
        let (bytes, what) = least.unwrap_or((2 << 30, "an assumed 2 GiB (MemTotal unreadable)"));
        Limits {
            memory_budget: bytes / 2,
            basis: format!("half of {what} ({})", Bytes::of(bytes)),
        }
    }

    /// Limits with a given budget (tests).
    #[cfg(test)]
    pub(crate) fn with_budget(memory_budget: u64) -> Limits {
        Limits {
            memory_budget,
            basis: "a test budget".to_string(),
        }
    }
}

/// MemTotal of `/proc/meminfo`, in bytes.
fn mem_total() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = s
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    kb.checked_mul(1024)
}

/// The least memory limit set on this process's cgroup or its mount's root (a container
/// sees its own cgroup as the root), v2 or v1; `None` if unlimited or unreadable.
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut files = vec![
        "/sys/fs/cgroup/memory.max".to_string(),
        "/sys/fs/cgroup/memory/memory.limit_in_bytes".to_string(),
    ];
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next(), parts.next());
        let (Some(controllers), Some(path)) = (controllers, path) else {
            continue;
        };
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            files.push(format!("/sys/fs/cgroup{path}/memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            files.push(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"));
        }
    }
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        // "max" (v2) and v1's 2^63-ish "unlimited" both mean no limit.
        .filter_map(|s| s.trim().parse::<u64>().ok())
        .filter(|&b| b < 1 << 60)
        .min()
}

/// The soft limit named `name` in `/proc/self/limits`, in bytes; `None` if unlimited.
fn rlimit(name: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/limits").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(name))?
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()
}

/// A byte count for people: exact below 10 KiB (`1280 B`), else `2.1 MiB`, `11.8 GiB`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes(pub(crate) u128);

impl Bytes {
    /// From a `u64`.
    pub(crate) fn of(b: u64) -> Bytes {
        Bytes(u128::from(b))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 7] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"];
        if self.0 < 10 << 10 {
            return write!(f, "{} B", self.0);
        }
        let mut v = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_for_people() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(1280).to_string(), "1280 B");
        assert_eq!(Bytes(15 << 9).to_string(), "7680 B");
        assert_eq!(Bytes(15 << 10).to_string(), "15.0 KiB");
        assert_eq!(Bytes(12_634_000_000).to_string(), "11.8 GiB");
        assert_eq!(Bytes(u128::MAX).to_string().split(' ').nth(1), Some("ZiB"));
    }

    #[test]
    fn this_machine_has_a_budget() {
        let l = Limits::of_this_machine();
        assert!(l.memory_budget > 0, "{l:?}");
        assert!(l.basis.starts_with("half of "), "{l:?}");
    }
}
