//! What the report records about the machine and the software: CPU, cores, memory, rustc,
//! OTP, date, git commit, and the steal time of the run (CPU time the hypervisor gave to
//! other guests). Everything is best effort: what cannot be read is "unknown".

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Logical cores (`std::thread::available_parallelism`), the default thread count.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The aggregate CPU times of the machine (the `cpu` line of `/proc/stat`), in clock ticks:
/// the steal column and the sum of all the columns of CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    pub(crate) steal: u64,
    pub(crate) total: u64,
}

/// Reads [`CpuTimes`] now; `None` where there is no `/proc/stat`.
pub(crate) fn cpu_times() -> Option<CpuTimes> {
    parse_cpu_times(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The `cpu` line: user nice system idle iowait irq softirq steal [guest guest_nice]. Guest
/// time is already counted in user and nice, so the total is the first eight columns.
fn parse_cpu_times(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let cols: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|c| c.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    if cols.len() < 8 {
        return None;
    }
    Some(CpuTimes {
        steal: cols[7],
        total: cols.iter().sum(),
    })
}

/// The steal time between two readings as a share of all CPU time in between (0.05 = 5%);
/// `None` without both readings or if no time passed.
pub(crate) fn steal_share(before: Option<CpuTimes>, after: Option<CpuTimes>) -> Option<f64> {
    let (a, b) = (before?, after?);
    let total = b.total.checked_sub(a.total)?;
    let steal = b.steal.checked_sub(a.steal)?;
    (total > 0).then(|| steal as f64 / total as f64)
}

/// The workspace root: `CARGO_MANIFEST_DIR/..` at compile time if it still exists, else the
/// current directory.
pub(crate) fn workspace_dir() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if built.join("Cargo.toml").is_file() {
        built.canonicalize().unwrap_or(built)
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
    }
}

/// The CPU model (first `model name` of /proc/cpuinfo).
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Total memory, e.g. "23.5 GiB" (MemTotal of /proc/meminfo).
pub(crate) fn memory() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().strip_suffix("kB"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .map_or_else(
            || "unknown".into(),
            |kb| format!("{:.1} GiB", kb as f64 / (1024.0 * 1024.0)),
        )
}

/// `rustc --version`.
pub(crate) fn rustc_version() -> String {
    command_line("rustc", &["--version"]).unwrap_or_else(|| "unknown".into())
}

/// The kernel (`/proc/sys/kernel/osrelease`).
pub(crate) fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "unknown".into())
}

/// The full OTP version of the `erl` on PATH, e.g. "25.2.3", if there is one.
pub(crate) fn otp_version() -> Option<String> {
    let script = "R = erlang:system_info(otp_release), \
        F = filename:join([code:root_dir(), \"releases\", R, \"OTP_VERSION\"]), \
        V = case file:read_file(F) of {ok, B} -> string:trim(B); _ -> R end, \
        io:format(\"~s (ERTS ~s, ~s)\", [V, erlang:system_info(version), \
        erlang:system_info(emu_flavor)]), halt().";
    command_line("erl", &["-noshell", "-eval", script])
}

/// The git commit of the workspace, read from `.git` directly (no git command is run).
/// In a linked worktree `.git` is a file naming the worktree's own git directory
/// (`gitdir: …`), which holds `HEAD`, while the branches live in the common directory it
/// names in `commondir`.
pub(crate) fn git_commit(workspace: &Path) -> Option<String> {
    let mut git = workspace.join(".git");
    if git.is_file() {
        let link = std::fs::read_to_string(&git).ok()?;
        git = workspace.join(link.trim().strip_prefix("gitdir: ")?);
    }
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_string());
    };
    if let Ok(common) = std::fs::read_to_string(git.join("commondir")) {
        git = git.join(common.trim());
    }
    if let Ok(id) = std::fs::read_to_string(git.join(reference)) {
        return Some(format!("{} ({})", id.trim(), reference));
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (id, name) = l.split_once(' ')?;
        (name == reference).then(|| format!("{id} ({reference})"))
    })
}

/// Now, as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Whether `program` is an executable file in a directory of PATH.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let f = dir.join(program);
            std::fs::metadata(&f).is_ok_and(|m| m.is_file() && is_executable(&m))
        })
    })
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

/// The first line of a command's stdout, if it ran and succeeded.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout);
    s.lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::{CpuTimes, civil_from_days, git_commit, parse_cpu_times, steal_share};

    #[test]
    fn steal_from_proc_stat() {
        let a = "cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 50 0 25 400 5 0 2 18 0 0\n";
        let b = "cpu  200 0 100 1500 20 0 10 170 7 0\n";
        let (a, b) = (parse_cpu_times(a), parse_cpu_times(b));
        assert_eq!(
            a,
            Some(CpuTimes {
                steal: 35,
                total: 1000
            })
        );
        // 135 ticks stolen of 1000.
        assert_eq!(steal_share(a, b), Some(0.135));
        assert_eq!(steal_share(b, a), None);
        assert_eq!(steal_share(a, a), None);
        assert_eq!(parse_cpu_times("cpu  1 2 3\n"), None);
        assert!(super::cpu_times().is_some(), "this machine has /proc/stat");
    }

    #[test]
    fn commit_of_a_checkout_and_of_a_linked_worktree() {
        let root = std::env::temp_dir().join(format!("otter-bench-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let write = |path: &str, text: &str| {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        let id = "0123456789abcdef0123456789abcdef01234567";
        write("main/.git/HEAD", "ref: refs/heads/main\n");
        write("main/.git/refs/heads/main", &format!("{id}\n"));
        write(
            "main/.git/packed-refs",
            &format!("{id} refs/heads/packed\n"),
        );
        write("main/.git/worktrees/wt/HEAD", "ref: refs/heads/packed\n");
        write("main/.git/worktrees/wt/commondir", "../..\n");
        write(
            "wt/.git",
            &format!(
                "gitdir: {}\n",
                root.join("main/.git/worktrees/wt").display()
            ),
        );
        assert_eq!(
            git_commit(&root.join("main")),
            Some(format!("{id} (refs/heads/main)"))
        );
        assert_eq!(
            git_commit(&root.join("wt")),
            Some(format!("{id} (refs/heads/packed)"))
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
