//! Micro-benchmarks of otter's hot paths, with criterion.
//!
//! **For regression tracking only**: they time one operation in a tight loop on a warm runtime,
//! which flatters every runtime. The comparisons with Erlang that this project is judged by
//! are the seed workloads (`otter-bench BENCH ...` and `otter-bench suite`), not these.
//!
//! * `spawn_exit`: one chain of processes, each spawning the next and exiting (the per-process
//!   cost of the `spawn` workload), timed per process;
//! * `send_recv/one_worker`: a stream of messages from the root process to a consumer on a
//!   one-thread runtime, timed per message (send + wake + receive);
//! * `send_recv/two_workers`: the same on two worker threads, where the consumer is usually
//!   on the other worker;
//! * `pingpong`: one round trip between two processes on a two-thread runtime;
//! * `call/no_timeout`: the same round trip as one `ServerRef::call_timeout(_, None)` to an
//!   `otter::server` (what `pingpong style=server` does, Erlang's `infinity`): the call's
//!   reply slot and server watcher, the `ServerMsg` wrapping and the server loop on top of
//!   `pingpong`;
//! * `call/default_timeout`: the same with `ServerRef::call` (5 s timeout), whose deadline
//!   is deferred on the caller's worker (armed in the timer wheel only if the call still
//!   waits two flushes later);
//! * `recv_timeout`: two ping-pong pairs at once on a two-thread runtime, every receive
//!   of both sides with a 5 s timeout (armed in the timer of the receiver's worker, then
//!   cancelled), timed per round trip of one pair while the other runs: what timers cost
//!   when two workers arm and cancel them at once;
//! * `wake_from_outside`: a thread outside the runtime sends to an idle process and waits
//!   for its reply (injector push, unpark of a parked worker, poll, reply), per round trip;
//! * `steal`: one process spawns a batch of 256 short processes on its worker while the
//!   other worker is idle; timed per process until all have reported (local queue push,
//!   wake-up of the idle worker, steal-half, run).
//!
//! Run: `cargo bench -p otter-bench --bench hot_paths`.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_main};
use otter::server::{DEFAULT_CALL_TIMEOUT, Flow, ReplyTo, Server, ServerContext};
use otter::{Context, ExitReason, Pid, Runtime};

fn runtime(threads: usize) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .build()
        .expect("start the runtime")
}

/// A process of a spawn chain: spawns the next one (or tells `done`) and exits.
struct Link {
    cx: Context<()>,
    done: Pid<()>,
    left: u64,
}

impl Future for Link {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        let (done, left) = (self.done, self.left);
        if left == 0 {
            done.send(());
        } else {
            self.cx.spawn(move |cx: Context<()>| Link {
                cx,
                done,
                left: left - 1,
            });
        }
        Poll::Ready(())
    }
}

fn spawn_exit(c: &mut Criterion) {
    let rt = runtime(std::thread::available_parallelism().map_or(1, |n| n.get()));
    c.bench_function("spawn_exit", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move |mut cx: Context<()>| async move {
                let done = cx.pid();
                let t0 = Instant::now();
                cx.spawn(move |cx: Context<()>| Link {
                    cx,
                    done,
                    left: iters.saturating_sub(1),
                });
                cx.recv().await;
                t0.elapsed()
            })
            .expect("root process")
        })
    });
}

/// Streams `iters` messages to a consumer and waits for its count.
fn stream(rt: &Runtime, iters: u64) -> Duration {
    rt.block_on(move |mut cx: Context<u64>| async move {
        let me = cx.pid();
        let consumer = cx.spawn(move |mut cx: Context<Option<u64>>| async move {
            let mut n = 0u64;
            while let Some(x) = cx.recv().await {
                n = n.wrapping_add(x | 1);
            }
            me.send(n);
        });
        let t0 = Instant::now();
        for i in 0..iters {
            consumer.send(Some(i));
        }
        consumer.send(None);
        let n = cx.recv().await;
        let elapsed = t0.elapsed();
        std::hint::black_box(n);
        elapsed
    })
    .expect("root process")
}

fn send_recv(c: &mut Criterion) {
    let mut g = c.benchmark_group("send_recv");
    let one = runtime(1);
    g.bench_function("one_worker", |b| b.iter_custom(|iters| stream(&one, iters)));
    drop(one);
    let two = runtime(2);
    g.bench_function("two_workers", |b| {
        b.iter_custom(|iters| stream(&two, iters))
    });
    g.finish();
}

fn pingpong(c: &mut Criterion) {
    #[derive(Debug)]
    enum ToB {
        Ping(Pid<()>),
        Stop,
    }
    let rt = runtime(2);
    c.bench_function("pingpong", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move |mut cx: Context<()>| async move {
                let me = cx.pid();
                let b = cx.spawn(|mut cx: Context<ToB>| async move {
                    while let ToB::Ping(from) = cx.recv().await {
                        from.send(());
                    }
                });
                let t0 = Instant::now();
                for _ in 0..iters {
                    b.send(ToB::Ping(me));
                    cx.recv().await;
                }
                let elapsed = t0.elapsed();
                b.send(ToB::Stop);
                elapsed
            })
            .expect("root process")
        })
    });
}

/// A server that answers every call at once.
struct Echo;

impl Server for Echo {
    type Args = ();
    type Call = (u64, ReplyTo<u64>);
    type Cast = ();
    type Info = ();

    async fn init(_: (), _: &mut ServerContext<Self>) -> Result<Self, ExitReason> {
        Ok(Echo)
    }

    async fn handle_call(
        &mut self,
        (n, from): (u64, ReplyTo<u64>),
        _: &mut ServerContext<Self>,
    ) -> Flow {
        from.reply(n);
        Flow::Continue
    }
}

/// `iters` calls to a fresh [`Echo`], each with `timeout`.
fn calls(rt: &Runtime, iters: u64, timeout: Option<Duration>) -> Duration {
    rt.block_on(move |cx: Context<()>| async move {
        let echo = Echo::start(&cx, ()).await.expect("start");
        let t0 = Instant::now();
        for i in 0..iters {
            let r = echo.call_timeout(|f| (i, f), timeout).await.expect("reply");
            std::hint::black_box(r);
        }
        let elapsed = t0.elapsed();
        echo.stop(ExitReason::Normal, None).await.expect("stop");
        elapsed
    })
    .expect("root process")
}

fn call(c: &mut Criterion) {
    let rt = runtime(2);
    let mut g = c.benchmark_group("call");
    g.bench_function("no_timeout", |b| {
        b.iter_custom(|iters| calls(&rt, iters, None))
    });
    g.bench_function("default_timeout", |b| {
        b.iter_custom(|iters| calls(&rt, iters, Some(DEFAULT_CALL_TIMEOUT)))
    });
    g.finish();
}

fn recv_timeout(c: &mut Criterion) {
    const T: Duration = Duration::from_secs(5);
    #[derive(Debug)]
    enum ToB {
        Ping(Pid<()>),
        Stop,
    }
    /// `iters` round trips to a fresh partner, every receive under `T`.
    async fn pair(mut cx: Context<()>, iters: u64) {
        let me = cx.pid();
        let b = cx.spawn(|mut cx: Context<ToB>| async move {
            while let Some(ToB::Ping(from)) = cx.recv_timeout(T).await {
                from.send(());
            }
        });
        for _ in 0..iters {
            b.send(ToB::Ping(me));
            cx.recv_timeout(T).await.expect("pong");
        }
        b.send(ToB::Stop);
    }
    let rt = runtime(2);
    c.bench_function("recv_timeout", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move |mut cx: Context<()>| async move {
                let me = cx.pid();
                let t0 = Instant::now();
                for _ in 0..2 {
                    cx.spawn(move |cx: Context<()>| async move {
                        pair(cx, iters).await;
                        me.send(());
                    });
                }
                cx.recv().await;
                cx.recv().await;
                t0.elapsed()
            })
            .expect("root process")
        })
    });
}

fn wake_from_outside(c: &mut Criterion) {
    let rt = runtime(2);
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let echo = rt.handle().spawn(move |mut cx: Context<u64>| async move {
        loop {
            let n = cx.recv().await;
            if n == u64::MAX {
                break;
            }
            tx.send(n).expect("bench thread waits");
        }
    });
    c.bench_function("wake_from_outside", |b| {
        b.iter(|| {
            echo.send(1);
            rx.recv().expect("echo replies")
        })
    });
    echo.send(u64::MAX);
}

fn steal(c: &mut Criterion) {
    const BATCH: u64 = 256;
    let rt = runtime(2);
    c.bench_function("steal", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move |mut cx: Context<u64>| async move {
                let me = cx.pid();
                let t0 = Instant::now();
                let mut left = iters;
                while left > 0 {
                    let n = left.min(BATCH);
                    for i in 0..n {
                        cx.spawn(move |_: Context<()>| async move {
                            // A little work, so that running on the second worker pays.
                            let mut x = i;
                            for _ in 0..200 {
                                x = std::hint::black_box(x.wrapping_mul(6364136223846793005) + 1);
                            }
                            me.send(x);
                        });
                    }
                    for _ in 0..n {
                        std::hint::black_box(cx.recv().await);
                    }
                    left -= n;
                }
                t0.elapsed()
            })
            .expect("root process")
        })
    });
}

mod groups {
    //! The benchmark group (in a private module: the macro's function has no doc comment).
    use super::{call, pingpong, recv_timeout, send_recv, spawn_exit, steal, wake_from_outside};
    criterion::criterion_group!(
        hot_paths,
        spawn_exit,
        send_recv,
        pingpong,
        call,
        recv_timeout,
        wake_from_outside,
        steal
    );
}

criterion_main!(groups::hot_paths);
