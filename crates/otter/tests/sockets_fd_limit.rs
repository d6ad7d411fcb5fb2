//! Running out of file descriptors (`ulimit -n`) while serving: a connect that cannot
//! get a descriptor is an error value (`EMFILE`), an acceptor that cannot accept waits
//! and goes on, the connections alive lose no byte, and service resumes once
//! descriptors are free again. One test in its own file: it lowers the limit of the
//! whole test process (with `prlimit`, util-linux), which no other test must see.

#[path = "support/fd_limit.rs"]
mod fd_limit;

use fd_limit::{open_fds, set_soft_nofile, soft_nofile};
use otter::net::{TcpStream, start_acceptor_pool};
use otter::{Context, Runtime};

#[test]
fn out_of_descriptors_is_an_error_value_and_service_resumes() {
    let Some(old) = soft_nofile() else {
        panic!("no /proc/self/limits")
    };
    let rt = Runtime::builder().threads(2).build().unwrap();
    let r = rt.block_on(move |cx: Context<()>| async move {
        let echo = |_: Context<()>, mut s: TcpStream| async move {
            let mut buf = [0u8; 16];
            while let Ok(n @ 1..) = s.read(&mut buf).await {
                if s.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        };
        let pool = start_acceptor_pool(&cx, "127.0.0.1:0".parse().unwrap(), 1, echo)
            .await
            .unwrap();
        // Room for about 30 more descriptors: each connection takes two (ours and the
        // accepted one).
        assert!(set_soft_nofile(open_fds() + 30), "prlimit failed");
        let mut clients = Vec::new();
        let refused = loop {
            match TcpStream::connect(pool.local_addr()).await {
                Ok(mut c) => {
                    c.write_all(b"x").await.unwrap();
                    clients.push(c);
                }
                Err(e) => break e,
            }
            assert!(clients.len() < 1000, "the limit never bit");
        };
        let refused_is_emfile = refused.raw_os_error() == Some(24);
        // Free half the descriptors: the acceptor accepts what waited, and every
        // client still open gets its byte back.
        let n = clients.len();
        clients.truncate(n / 2);
        let mut echoed = 0;
        for c in &mut clients {
            let mut b = [0u8; 1];
            c.read_exact(&mut b).await.unwrap();
            echoed += usize::from(&b == b"x");
        }
        let kept = clients.len();
        drop(clients);
        assert!(set_soft_nofile(old), "prlimit failed");
        // And new connections are served as before.
        let mut c = TcpStream::connect(pool.local_addr()).await.unwrap();
        c.write_all(b"y").await.unwrap();
        let mut b = [0u8; 1];
        c.read_exact(&mut b).await.unwrap();
        (
            refused_is_emfile,
            refused.kind(),
            echoed == kept && kept > 0,
            b,
        )
    });
    set_soft_nofile(old);
    let (emfile, kind, all_echoed, last) = r.unwrap();
    assert!(emfile, "the refusal: {kind:?}");
    assert!(all_echoed);
    assert_eq!(&last, b"y");
}
