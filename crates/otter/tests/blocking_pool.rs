//! Rules of the blocking pool (`otter::blocking`, the BEAM's dirty schedulers): a
//! blocking job never holds its worker, a job's panic ends the process that awaits it
//! and nothing else, and host names resolve off the workers.

#[path = "support/rt.rs"]
mod support;

use std::time::Duration;

use otter::blocking::spawn_blocking;
use otter::{Context, ExitReason, Runtime};

/// A guard on the jobs' blocking waits: a failure instead of a hang.
const GUARD: Duration = Duration::from_secs(20);

rt_test!(a_blocking_job_never_holds_its_worker, |rt: &Runtime| {
    // The job blocks until an otter process, which can only run on a worker, answers
    // it: on one worker this deadlocks unless the job runs off the workers.
    let r = rt.block_on(|cx: Context<()>| async move {
        let (tx, rx) = std::sync::mpsc::channel::<u32>();
        let (back_tx, back_rx) = std::sync::mpsc::channel::<u32>();
        let job = spawn_blocking(move || {
            back_tx.send(1).unwrap();
            rx.recv_timeout(GUARD)
        });
        cx.spawn(move |_: Context<()>| async move {
            // Also blocking, but for an instant: the job has already sent.
            let first = spawn_blocking(move || back_rx.recv_timeout(GUARD)).await;
            tx.send(first.unwrap() + 41).unwrap();
        });
        job.await
    });
    assert_eq!(r.unwrap(), Ok(42));
});

fn fail() -> u32 {
    panic!("the job fails")
}

rt_test!(
    a_panicking_job_ends_the_process_that_awaits_it_and_nothing_else,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<otter::Down>| async move {
            let (child, _) = cx.spawn_monitor(|_: Context<()>| async {
                spawn_blocking(fail).await;
            });
            let down = cx.recv().await;
            // The pool still runs jobs.
            let after = spawn_blocking(|| 7).await;
            (down.pid == child.id(), down.reason, after)
        });
        assert_eq!(
            r.unwrap(),
            (true, ExitReason::Panic("the job fails".into()), 7)
        );
    }
);

rt_test!(many_jobs_at_once_all_finish, |rt: &Runtime| {
    // More jobs than the pool has threads: the rest wait in its queue.
    let r = rt.block_on(|mut cx: Context<u64>| async move {
        let root = cx.pid();
        for i in 0..200u64 {
            cx.spawn(move |_: Context<()>| async move {
                let v = spawn_blocking(move || {
                    std::thread::sleep(Duration::from_millis(1));
                    i
                })
                .await;
                root.send(v);
            });
        }
        let mut sum = 0;
        for _ in 0..200 {
            sum += cx.recv().await;
        }
        sum
    });
    assert_eq!(r.unwrap(), (0..200).sum::<u64>());
});

rt_test!(a_host_name_resolves_off_the_workers, |rt: &Runtime| {
    let r = rt.block_on(|cx: Context<()>| async move {
        let listener = otter::net::TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = listener.local_addr().unwrap().port();
        cx.spawn(move |_: Context<()>| async move {
            let _ = listener.accept().await;
        });
        // "localhost" may give ::1 first: refused there, the next address answers.
        let s = otter::net::TcpStream::connect_host(format!("localhost:{port}")).await;
        let bad = otter::net::TcpStream::connect_host("no-such-host.invalid:1").await;
        (
            s.map(|s| s.peer_addr().unwrap().port() == port),
            bad.is_err(),
        )
    });
    let (connected, bad_is_err) = r.unwrap();
    assert_eq!(connected.map_err(|e| e.kind()), Ok(true));
    assert!(bad_is_err);
});
