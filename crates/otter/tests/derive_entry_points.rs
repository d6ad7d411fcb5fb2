//! `#[otter::test]`: a test body runs as the root process of a runtime built for it,
//! on the workers it asks for, and fails with the reason when its process exits
//! otherwise than by returning. (`#[otter::main]` is checked by its doctest, which
//! rustdoc runs as a program; the macros' compile errors by `otter-macros`' tests.)

use otter::{Context, Down, ExitReason};

#[derive(otter::Message, Debug)]
enum Msg {
    Work(u32),
    Down(Down),
}

/// The index `K` of the worker thread `otter-worker-K` this runs on (`None` on a
/// spare or another thread).
fn worker_index() -> Option<usize> {
    std::thread::current()
        .name()?
        .strip_prefix("otter-worker-")?
        .parse()
        .ok()
}

/// Runs `n` processes and collects the worker indices they ran on.
async fn indices_seen(cx: &mut Context<Msg>, n: u32) -> Vec<usize> {
    let me = cx.pid();
    for _ in 0..n {
        cx.spawn(move |_: Context<()>| async move {
            me.send(Msg::Work(worker_index().map_or(u32::MAX, |k| k as u32)));
        });
    }
    let mut seen = Vec::new();
    for _ in 0..n {
        if let Msg::Work(k) = cx.recv().await
            && k != u32::MAX
        {
            seen.push(k as usize);
        }
    }
    seen
}

#[otter::test]
async fn a_test_body_runs_as_the_root_process_of_a_one_worker_runtime(mut cx: Context<Msg>) {
    assert_eq!(worker_index(), Some(0));
    let seen = indices_seen(&mut cx, 64).await;
    assert!(seen.iter().all(|&k| k == 0), "{seen:?}");
    let child = cx.spawn(|_: Context<()>| async {});
    cx.monitor(child);
    let m = cx.recv().await;
    assert!(matches!(&m, Msg::Down(d) if d.pid == child.id()), "{m:?}");
}

#[otter::test(workers = 3)]
async fn a_test_asks_for_its_workers(mut cx: Context<Msg>) {
    let seen = indices_seen(&mut cx, 256).await;
    assert!(seen.iter().all(|&k| k < 3), "{seen:?}");
}

#[otter::test(workers = [1, 4])]
async fn a_test_runs_once_per_worker_count(mut cx: Context<Msg>) {
    let seen = indices_seen(&mut cx, 64).await;
    assert!(seen.iter().all(|&k| k < 4), "{seen:?}");
}

#[otter::test]
async fn a_test_without_a_context_runs_on_a_worker() {
    assert!(worker_index().is_some());
}

#[otter::test(workers = [1, 2])]
async fn a_test_may_return_a_result() -> Result<(), String> {
    Ok(())
}

#[otter::test]
#[should_panic(expected = "the test's root process exited: Killed")]
async fn a_test_whose_process_is_killed_fails_with_the_reason(mut cx: Context<Msg>) {
    let me = cx.pid();
    cx.spawn(move |cx: Context<()>| async move { cx.exit(me, ExitReason::Kill) });
    loop {
        cx.recv().await;
    }
}

#[otter::test(workers = 2)]
#[should_panic(expected = "boom")]
async fn a_test_that_panics_fails() {
    panic!("boom");
}
