//! An acceptor pool's graceful stop (axum's `with_graceful_shutdown`), on real sockets
//! on 127.0.0.1: the listener closes at once (a new connection is refused), the
//! connections already accepted run on until the deadline, and those still running then
//! get the exit signal `Shutdown`; the process that stops the pool goes on.

#[path = "support/rt.rs"]
mod support;

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use otter::net::{AcceptorPool, TcpStream, start_acceptor_pool};
use otter::supervisor::{self, Strategy, SupervisorSpec};
use otter::{Context, Down, ExitReason, Pid, Runtime};

/// What the test process hears.
#[derive(Debug)]
enum Ev {
    /// A connection's process has read its request and waits for [`Go`].
    MidRequest(Pid<Go>),
    Down(Down),
    Stopped(Result<(), otter::server::CallError>),
}

impl From<Down> for Ev {
    fn from(d: Down) -> Ev {
        Ev::Down(d)
    }
}

/// Tells a connection's process to answer its request.
#[derive(Debug)]
struct Go;

/// A connection handler: reads a 4-byte request, tells `test` it is in the middle of
/// it, waits for [`Go`], answers `pong`.
fn handler(
    test: Pid<Ev>,
) -> impl Fn(Context<Go>, TcpStream) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
+ Send
+ Sync
+ 'static {
    move |mut cx: Context<Go>, mut s: TcpStream| {
        Box::pin(async move {
            let mut req = [0u8; 4];
            if s.read_exact(&mut req).await.is_err() {
                return;
            }
            test.send(Ev::MidRequest(cx.pid()));
            let Go = cx.recv().await;
            let _ = s.write_all(b"pong").await;
        })
    }
}

/// Connects, sends a request, and waits until its process is in the middle of it.
async fn mid_request(cx: &mut Context<Ev>, addr: std::net::SocketAddr) -> (TcpStream, Pid<Go>) {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(b"ping").await.unwrap();
    match cx.recv_match(|e| matches!(e, Ev::MidRequest(_))).await {
        Ev::MidRequest(conn) => (c, conn),
        _ => unreachable!(),
    }
}

fn refused(r: std::io::Result<TcpStream>) -> bool {
    matches!(r, Err(e) if e.kind() == ErrorKind::ConnectionRefused)
}

rt_test!(
    a_graceful_stop_lets_a_connection_mid_request_finish_and_refuses_new_ones,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Ev>| async move {
            let pool =
                start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 4, handler(cx.pid()))
                    .await
                    .unwrap();
            let addr = pool.local_addr();
            let (mut c, conn) = mid_request(&mut cx, addr).await;
            let stopping = pool.clone().graceful_stop(Duration::from_secs(30));
            let me = cx.pid();
            cx.spawn(move |_: Context<()>| async move { me.send(Ev::Stopped(stopping.await)) });
            let new_one = refused(TcpStream::connect(addr).await);
            conn.send(Go);
            let mut answer = [0u8; 4];
            c.read_exact(&mut answer).await.unwrap();
            let stopped = match cx.recv_match(|e| matches!(e, Ev::Stopped(_))).await {
                Ev::Stopped(r) => r,
                _ => unreachable!(),
            };
            (new_one, answer, stopped, pool.supervisor().id().is_alive())
        });
        let (new_one_refused, answer, stopped, pool_alive) = r.unwrap();
        assert!(
            new_one_refused,
            "a connection made after the stop began was not refused"
        );
        assert_eq!(&answer, b"pong");
        assert_eq!(stopped, Ok(()));
        assert!(!pool_alive);
    }
);

rt_test!(
    a_connection_that_outlives_the_deadline_is_shut_down,
    |rt: &Runtime| {
        let drain = Duration::from_millis(200);
        let r = rt.block_on(move |mut cx: Context<Ev>| async move {
            let pool =
                start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 2, handler(cx.pid()))
                    .await
                    .unwrap();
            let (mut c, conn) = mid_request(&mut cx, pool.local_addr()).await;
            cx.monitor(conn);
            let t0 = Instant::now();
            // Never told to go on: it is still mid-request at the deadline.
            pool.graceful_stop(drain).await.unwrap();
            let took = t0.elapsed();
            let reason = match cx.recv_match(|e| matches!(e, Ev::Down(_))).await {
                Ev::Down(d) => d.reason,
                _ => unreachable!(),
            };
            let mut buf = [0u8; 4];
            let closed = c.read(&mut buf).await;
            (took, reason, closed.map_err(|e| e.kind()))
        });
        let (took, reason, closed) = r.unwrap();
        assert!(
            took >= drain,
            "the stop did not wait for the drain: {took:?}"
        );
        assert_eq!(reason, ExitReason::Shutdown);
        // Its socket was closed with it: the peer reads the end (or a reset).
        assert!(
            matches!(closed, Ok(0) | Err(ErrorKind::ConnectionReset)),
            "{closed:?}"
        );
    }
);

rt_test!(
    a_graceful_stop_of_an_idle_pool_does_not_wait_for_the_deadline,
    |rt: &Runtime| {
        let r = rt.block_on(|cx: Context<Ev>| async move {
            let pool =
                start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 4, handler(cx.pid()))
                    .await
                    .unwrap();
            let addr = pool.local_addr();
            let t0 = Instant::now();
            pool.graceful_stop(Duration::from_secs(60)).await.unwrap();
            (t0.elapsed(), refused(TcpStream::connect(addr).await))
        });
        let (took, refused) = r.unwrap();
        assert!(took < Duration::from_secs(30), "{took:?}");
        assert!(refused);
    }
);

rt_test!(
    a_draining_pool_under_a_supervisor_drains_when_its_tree_stops,
    |rt: &Runtime| {
        let r = rt.block_on(|mut cx: Context<Ev>| async move {
            let (pool, listening) = AcceptorPool::child_spec_with_drain(
                "web",
                "127.0.0.1:0".parse().unwrap(),
                3,
                Duration::from_secs(30),
                handler(cx.pid()),
            );
            let app =
                supervisor::start_link(&cx, SupervisorSpec::new(Strategy::OneForOne).child(pool))
                    .await
                    .unwrap();
            let addr = listening.get().unwrap();
            let (mut c, conn) = mid_request(&mut cx, addr).await;
            let me = cx.pid();
            cx.spawn(move |_: Context<()>| async move { me.send(Ev::Stopped(app.stop().await)) });
            // The stop reaches the pool and closes its listener; until then connections
            // are still accepted (and then answered, since they are drained too). Nothing
            // tells when that happens but the refusal: a bounded poll, paced by 1 ms.
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match TcpStream::connect(addr).await {
                    Err(e) if e.kind() == ErrorKind::ConnectionRefused => break,
                    _ => assert!(Instant::now() < deadline, "the listener was never closed"),
                }
                cx.sleep(Duration::from_millis(1)).await;
            }
            conn.send(Go);
            let mut answer = [0u8; 4];
            c.read_exact(&mut answer).await.unwrap();
            // Connections accepted while the stop was on its way are drained as well.
            while let Some(e) = cx.try_recv_match(|e| matches!(e, Ev::MidRequest(_))) {
                if let Ev::MidRequest(p) = e {
                    p.send(Go);
                }
            }
            let stopped = loop {
                match cx.recv().await {
                    Ev::Stopped(r) => break r,
                    Ev::MidRequest(p) => p.send(Go),
                    Ev::Down(_) => {}
                }
            };
            (answer, stopped)
        });
        let (answer, stopped) = r.unwrap();
        assert_eq!(&answer, b"pong");
        assert_eq!(stopped, Ok(()));
    }
);
