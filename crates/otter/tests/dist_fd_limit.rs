//! A distribution node out of file descriptors (`ulimit -n`) while a peer connects:
//! its acceptor waits instead of spinning on an accept that fails at once (the
//! connection stays in the backlog), and accepts the connection once descriptors are
//! free again. One test in its own file: it lowers the limit of the whole test
//! process (with `prlimit`, util-linux), which no other test must see.

#[path = "support/fd_limit.rs"]
mod fd_limit;

#[path = "support/erlang.rs"]
mod erlang;

use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use fd_limit::{open_fds, set_soft_nofile, soft_nofile};
use otter::Runtime;
use otter::dist::Node;

/// CPU time of the whole process so far, in clock ticks (`utime + stime`), read from
/// `/proc/self/stat` opened before the descriptors ran out (read again from its start).
fn cpu_ticks(stat: &mut std::fs::File) -> u64 {
    let mut text = String::new();
    stat.seek(SeekFrom::Start(0)).unwrap();
    stat.read_to_string(&mut text).unwrap();
    let after_name = &text[text.rfind(')').expect("the process name's end") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of proc(5); `after_name` starts at field 3.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The port `alive` listens on, from epmd (`PORT_PLEASE2_REQ`).
fn port_of(alive: &str) -> u16 {
    let mut epmd = TcpStream::connect(("127.0.0.1", erlang::epmd_port())).unwrap();
    let len = u16::try_from(alive.len() + 1).unwrap();
    let mut req = len.to_be_bytes().to_vec();
    req.push(122);
    req.extend_from_slice(alive.as_bytes());
    epmd.write_all(&req).unwrap();
    let mut head = [0u8; 4];
    epmd.read_exact(&mut head).unwrap();
    assert_eq!(&head[..2], &[119, 0], "epmd knows the node");
    u16::from_be_bytes([head[2], head[3]])
}

#[test]
fn an_acceptor_out_of_descriptors_waits_then_accepts() {
    erlang::ensure_epmd();
    let old = soft_nofile().expect("/proc/self/limits");
    let before = open_fds();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let alive = erlang::unique_name("otter");
    let node = Node::builder(format!("{alive}@{}", erlang::short_host()))
        .cookie("secret")
        .start(&rt.handle())
        .expect("the node starts");
    let addr = SocketAddr::from(([127, 0, 0, 1], port_of(&alive)));
    let mut stat = std::fs::File::open("/proc/self/stat").unwrap();
    // Room for one more descriptor, the peer's socket: the limit a few above what is
    // open, those few taken, one given back. The node's accept then finds none for its
    // side and fails at once, with the connection left in the backlog.
    assert!(set_soft_nofile(open_fds() + 8), "prlimit failed");
    let mut filler = Vec::new();
    while let Ok(f) = std::fs::File::open("/dev/null") {
        filler.push(f);
        assert!(filler.len() < 100, "the limit never bit");
    }
    filler.pop();
    let mut peer = TcpStream::connect(addr).expect("the kernel completes the connect");
    // A window in which a spinning acceptor would burn a core: a waiting one, a few
    // wake-ups of 100 ms apart. (A measurement window, not a synchronisation.)
    let t0 = cpu_ticks(&mut stat);
    std::thread::sleep(Duration::from_secs(1));
    let burnt = cpu_ticks(&mut stat) - t0;
    drop(filler);
    assert!(set_soft_nofile(old), "prlimit failed");
    // Descriptors free again: the connection is accepted, and a handshake that is not
    // one is answered by closing it.
    peer.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    peer.write_all(&[0, 3, b'x', 0, 0]).unwrap();
    let mut b = [0u8; 16];
    let closed = loop {
        match peer.read(&mut b) {
            Ok(0) => break true,
            Ok(_) => continue,
            // A reset is a close too; a timeout is not.
            Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    node.stop();
    drop(rt);
    // The node's handle holds the runtime's reactor: the last one closes it.
    drop((node, peer, stat));
    // Every socket of the node (listener, epmd, the accepted connection), the peer's and
    // the runtime's reactor closed.
    assert_eq!(open_fds(), before, "descriptors before the node and after");
    // 100 ticks a second is a whole core; the assertion leaves room for a slow machine.
    assert!(burnt < 30, "the acceptor spun: {burnt} ticks of CPU in 1 s");
    assert!(
        closed,
        "the connection was accepted once descriptors were free"
    );
}
