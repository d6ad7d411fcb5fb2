//! `#[otter::test(workers = N)]` builds a runtime of exactly `N` workers. Alone in its
//! test binary, so that no other test's runtime has threads at the same time.

/// The names of this process's threads (Linux keeps 15 bytes).
#[cfg(target_os = "linux")]
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|c| c.trim_end().to_string())
        .collect()
}

/// Threads of this process named `otter-worker-K` (workers; not spares, the timer or
/// the watchdog, whose names go on after the number's place).
#[cfg(target_os = "linux")]
fn workers() -> usize {
    thread_names()
        .into_iter()
        .filter(|c| {
            c.strip_prefix("otter-worker-")
                .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        })
        .count()
}

#[cfg(target_os = "linux")]
#[otter::test(workers = 3)]
async fn a_test_runs_on_the_workers_it_asks_for() {
    // A thread takes its name once it runs; until then it has its parent's, that of
    // the thread in `block_on` (the test's, or the main thread's). Wait (bounded) until
    // no name other than the runtime's is held twice: every runtime thread has started.
    let t0 = std::time::Instant::now();
    loop {
        let names = thread_names();
        let others: Vec<&String> = names.iter().filter(|n| !n.starts_with("otter-")).collect();
        if others
            .iter()
            .all(|n| others.iter().filter(|m| *m == n).count() == 1)
        {
            break;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{names:?}"
        );
        std::thread::yield_now();
    }
    assert_eq!(workers(), 3);
}
