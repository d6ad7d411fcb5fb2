//! An epmd client: register a node name, look up another node's port.
//!
//! epmd (the Erlang Port Mapper Daemon, one per host, on port 4369 or
//! `ERL_EPMD_PORT`) maps node names (the `alive` part of `alive@host`) to the
//! ports their nodes accept distribution connections on. Every request is a 2-byte
//! big-endian length, then the request:
//!
//! - `ALIVE2_REQ` (120): port, node type (77 normal, 72 hidden), protocol (0: TCP),
//!   highest and lowest version (6 and 6), name, extra (empty). epmd answers
//!   `ALIVE2_X_RESP` (118: result, 32-bit creation) or the older `ALIVE2_RESP` (121:
//!   result, 16-bit creation); result 0 is success. The name stays registered as long
//!   as this connection is open: a [`Registration`] holds it, dropping it unregisters.
//! - `PORT_PLEASE2_REQ` (122): name. epmd answers `PORT2_RESP` (119: result, then if 0
//!   the port, node type, protocol, versions, name, extra) and closes.
//!
//! Blocking `std::net`: called at start or from the blocking pool. Every connection
//! has a 5 s timeout on connect, reads and writes; replies are read field by field,
//! and what otter does not use (the name and extra of `PORT2_RESP`) is not read at
//! all: a hostile epmd cannot make this allocate.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// epmd's port when `ERL_EPMD_PORT` is not set.
pub const DEFAULT_PORT: u16 = 4369;

/// The distribution protocol version otter speaks (OTP 23 and later).
pub const VERSION: u16 = 6;

/// The bound on connecting to, writing to and reading from epmd.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The longest node name epmd accepts (`MAXSYMLEN`).
const MAX_NAME: usize = 255;

const ALIVE2_REQ: u8 = 120;
const ALIVE2_X_RESP: u8 = 118;
const ALIVE2_RESP: u8 = 121;
const PORT_PLEASE2_REQ: u8 = 122;
const PORT2_RESP: u8 = 119;
const NODE_NORMAL: u8 = 77;
const NODE_HIDDEN: u8 = 72;

/// epmd's port here: `ERL_EPMD_PORT` if set to a port number, else 4369 (as `erl`).
pub fn port() -> u16 {
    std::env::var("ERL_EPMD_PORT")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(DEFAULT_PORT)
}

/// Makes sure an epmd answers on `127.0.0.1:port`: if none does, starts one with
/// `epmd -daemon` (as `erl` does; `epmd` from `PATH`) and waits, at most 5 s, until it
/// answers.
pub fn ensure_running(port: u16) -> io::Result<()> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let answers = || TcpStream::connect_timeout(&addr, TIMEOUT).is_ok();
    if answers() {
        return Ok(());
    }
    let status = Command::new("epmd")
        .arg("-daemon")
        .arg("-port")
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start `epmd -daemon`: {e}")))?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "`epmd -daemon -port {port}` failed: {status}"
        )));
    }
    let t0 = Instant::now();
    loop {
        if answers() {
            return Ok(());
        }
        if t0.elapsed() > TIMEOUT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("epmd started but does not answer on {addr}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What went wrong talking to epmd.
#[derive(Debug)]
pub enum EpmdError {
    /// Connecting, reading or writing failed (a closed connection mid-reply is
    /// `UnexpectedEof`).
    Io(io::Error),
    /// The name is empty, longer than 255 bytes or contains `@`.
    BadName(String),
    /// epmd refused to register the name: in practice, it is already registered.
    Refused {
        /// The name.
        name: String,
        /// epmd's result code (non-zero).
        result: u8,
    },
    /// No node of this name is registered with that epmd.
    NotRegistered {
        /// The name looked up.
        name: String,
        /// The host asked.
        host: String,
    },
    /// epmd answered something else than the reply to our request.
    UnexpectedReply(u8),
}

impl fmt::Display for EpmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EpmdError::Io(e) => write!(f, "epmd: {e}"),
            EpmdError::BadName(n) => write!(
                f,
                "epmd: bad node name {n:?} (1 to {MAX_NAME} bytes, without '@')"
            ),
            EpmdError::Refused { name, result } => write!(
                f,
                "epmd refused to register {name:?} (result {result}): the name is already registered"
            ),
            EpmdError::NotRegistered { name, host } => {
                write!(f, "epmd: no node {name:?} is registered on {host}")
            }
            EpmdError::UnexpectedReply(tag) => write!(f, "epmd: unexpected reply tag {tag}"),
        }
    }
}

impl std::error::Error for EpmdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EpmdError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for EpmdError {
    fn from(e: io::Error) -> EpmdError {
        EpmdError::Io(e)
    }
}

/// A name registered with the local epmd, for as long as this lives: it holds the
/// connection epmd watches, and dropping it closes the connection, which unregisters.
#[derive(Debug)]
pub struct Registration {
    /// Never read: held open, as epmd watches it.
    _conn: TcpStream,
    name: String,
    creation: u32,
}

impl Registration {
    /// The creation epmd gave this incarnation of the node (never 0 from a current
    /// epmd): it goes in every pid, port and reference the node makes.
    pub fn creation(&self) -> u32 {
        self.creation
    }

    /// The registered name (the `alive` part).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Registers `alive_name` with the epmd on `127.0.0.1` (port: [`port()`]) as a node
/// accepting connections on `listen_port`, hidden (type 72) or normal (77).
pub fn register(
    alive_name: &str,
    listen_port: u16,
    hidden: bool,
) -> Result<Registration, EpmdError> {
    check_name(alive_name)?;
    let mut conn = connect(&SocketAddr::from(([127, 0, 0, 1], port())))?;
    let creation = alive(&mut conn, alive_name, listen_port, hidden)?;
    // The connection now only watches for our end: no timeout on it any more.
    let _ = conn.set_read_timeout(None);
    Ok(Registration {
        _conn: conn,
        name: alive_name.to_owned(),
        creation,
    })
}

/// `ALIVE2_REQ` on a connection to an epmd, and its reply: the creation.
fn alive(
    conn: &mut TcpStream,
    alive_name: &str,
    listen_port: u16,
    hidden: bool,
) -> Result<u32, EpmdError> {
    let name = alive_name.as_bytes();
    let mut req = Vec::with_capacity(15 + name.len());
    req.extend_from_slice(&(13 + name.len() as u16).to_be_bytes());
    req.push(ALIVE2_REQ);
    req.extend_from_slice(&listen_port.to_be_bytes());
    req.push(if hidden { NODE_HIDDEN } else { NODE_NORMAL });
    req.push(0); // TCP/IPv4
    req.extend_from_slice(&VERSION.to_be_bytes()); // highest
    req.extend_from_slice(&VERSION.to_be_bytes()); // lowest
    req.extend_from_slice(&(name.len() as u16).to_be_bytes());
    req.extend_from_slice(name);
    req.extend_from_slice(&0u16.to_be_bytes()); // no extra
    conn.write_all(&req)?;

    let [tag, result] = read_array(conn)?;
    let creation = match tag {
        ALIVE2_X_RESP => u32::from_be_bytes(read_array(conn)?),
        ALIVE2_RESP => u32::from(u16::from_be_bytes(read_array(conn)?)),
        other => return Err(EpmdError::UnexpectedReply(other)),
    };
    if result != 0 {
        return Err(EpmdError::Refused {
            name: alive_name.to_owned(),
            result,
        });
    }
    Ok(creation)
}

/// Where a node listens, from its host's epmd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeAddress {
    /// The port the node accepts distribution connections on.
    pub port: u16,
    /// The highest distribution protocol version it speaks.
    pub highest_version: u16,
    /// The lowest.
    pub lowest_version: u16,
    /// Whether it registered as a hidden node (type 72).
    pub hidden: bool,
}

/// Asks the epmd on `host` (port: [`port()`]) where the node `alive_name` listens.
/// `host` is resolved by `std` only (`(host, port).to_socket_addrs()`); the first
/// address that accepts the connection is asked.
pub fn port_please(host: &str, alive_name: &str) -> Result<NodeAddress, EpmdError> {
    check_name(alive_name)?;
    let mut last = None;
    let mut conn = None;
    for addr in (host, port()).to_socket_addrs()? {
        match connect(&addr) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(mut conn) = conn else {
        return Err(last.unwrap_or_else(|| {
            EpmdError::Io(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} resolves to no address"),
            ))
        }));
    };
    ask_port(&mut conn, host, alive_name)
}

/// `PORT_PLEASE2_REQ` on a connection to an epmd, and its reply.
fn ask_port(conn: &mut TcpStream, host: &str, alive_name: &str) -> Result<NodeAddress, EpmdError> {
    let name = alive_name.as_bytes();
    let mut req = Vec::with_capacity(3 + name.len());
    req.extend_from_slice(&(1 + name.len() as u16).to_be_bytes());
    req.push(PORT_PLEASE2_REQ);
    req.extend_from_slice(name);
    conn.write_all(&req)?;

    let [tag, result] = read_array(conn)?;
    if tag != PORT2_RESP {
        return Err(EpmdError::UnexpectedReply(tag));
    }
    if result != 0 {
        return Err(EpmdError::NotRegistered {
            name: alive_name.to_owned(),
            host: host.to_owned(),
        });
    }
    // Port, node type, protocol, highest, lowest: the name and extra that follow are
    // left unread.
    let [p0, p1, node_type, _protocol, h0, h1, l0, l1] = read_array(conn)?;
    Ok(NodeAddress {
        port: u16::from_be_bytes([p0, p1]),
        highest_version: u16::from_be_bytes([h0, h1]),
        lowest_version: u16::from_be_bytes([l0, l1]),
        hidden: node_type == NODE_HIDDEN,
    })
}

fn check_name(name: &str) -> Result<(), EpmdError> {
    if name.is_empty() || name.len() > MAX_NAME || name.contains('@') {
        return Err(EpmdError::BadName(name.to_owned()));
    }
    Ok(())
}

fn connect(addr: &SocketAddr) -> Result<TcpStream, EpmdError> {
    let conn = TcpStream::connect_timeout(addr, TIMEOUT)?;
    conn.set_read_timeout(Some(TIMEOUT))?;
    conn.set_write_timeout(Some(TIMEOUT))?;
    let _ = conn.set_nodelay(true);
    Ok(conn)
}

fn read_array<const N: usize>(conn: &mut TcpStream) -> io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    conn.read_exact(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names epmd lists now, by `epmd -names` (the command-line client).
    fn epmd_names() -> String {
        let out = Command::new("epmd")
            .args(["-port", &port().to_string(), "-names"])
            .output()
            .expect("run `epmd -names` (Erlang/OTP on PATH)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn listed(name: &str) -> bool {
        epmd_names()
            .lines()
            .any(|l| l.starts_with(&format!("name {name} at port ")))
    }

    fn unique(prefix: &str) -> String {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        format!(
            "{prefix}_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_registration_is_listed_while_it_lives_and_refused_twice() {
        ensure_running(port()).unwrap();
        let name = unique("otter_epmd");
        let reg = register(&name, 40123, true).unwrap();
        assert_ne!(reg.creation(), 0);
        assert!(listed(&name), "{name} not in:\n{}", epmd_names());

        let again = register(&name, 40124, false).unwrap_err();
        assert!(matches!(again, EpmdError::Refused { .. }), "{again}");
        assert!(again.to_string().contains("already registered"));

        let addr = port_please("127.0.0.1", &name).unwrap();
        assert_eq!(
            addr,
            NodeAddress {
                port: 40123,
                highest_version: 6,
                lowest_version: 6,
                hidden: true
            }
        );

        drop(reg);
        let t0 = Instant::now();
        while listed(&name) {
            assert!(t0.elapsed() < TIMEOUT, "{name} still registered");
            std::thread::sleep(Duration::from_millis(20));
        }
        let gone = port_please("127.0.0.1", &name).unwrap_err();
        assert!(matches!(gone, EpmdError::NotRegistered { .. }), "{gone}");
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_normal_node_registers_as_normal() {
        ensure_running(port()).unwrap();
        let name = unique("otter_normal");
        let _reg = register(&name, 40125, false).unwrap();
        assert!(!port_please("localhost", &name).unwrap().hidden);
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn ensure_running_starts_an_epmd_where_none_answers() {
        // A port that was just free: an epmd of our own there, killed after.
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        ensure_running(free).unwrap();
        assert!(TcpStream::connect(("127.0.0.1", free)).is_ok());
        ensure_running(free).unwrap(); // already running: nothing to do
        let killed = Command::new("epmd")
            .args(["-port", &free.to_string(), "-kill"])
            .output()
            .unwrap();
        assert!(killed.status.success(), "{killed:?}");
    }

    #[test]
    fn bad_names_are_refused_before_any_connection() {
        for bad in ["", "a@b", &"x".repeat(256)] {
            assert!(matches!(register(bad, 1, true), Err(EpmdError::BadName(_))));
            assert!(matches!(
                port_please("127.0.0.1", bad),
                Err(EpmdError::BadName(_))
            ));
        }
    }

    /// A fake epmd that answers one connection with `reply` whatever it is asked.
    fn fake_epmd(reply: &'static [u8]) -> (TcpStream, std::thread::JoinHandle<()>) {
        let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = fake.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = fake.accept().unwrap();
            let mut req = [0u8; 512];
            let _ = c.read(&mut req);
            let _ = c.write_all(reply);
        });
        (connect(&addr).unwrap(), server)
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_hostile_epmd_gets_an_error_not_a_panic() {
        let replies: [&'static [u8]; 6] = [
            b"",
            b"\x77",
            b"\x77\x00\x12",
            b"\x77\x00\x12\x34\x48\x00\x00",
            b"\xff\xff\xff\xff",
            b"\x76\x00\x00",
        ];
        for reply in replies {
            let (mut conn, server) = fake_epmd(reply);
            assert!(ask_port(&mut conn, "h", "n").is_err(), "{reply:?}");
            server.join().unwrap();
            let (mut conn, server) = fake_epmd(reply);
            assert!(alive(&mut conn, "n", 1, true).is_err(), "{reply:?}");
            server.join().unwrap();
        }
        // A name and extra of 64 KiB each are not read.
        let mut huge = b"\x77\x00\x12\x34\x48\x00\x00\x06\x00\x06\xff\xff".to_vec();
        huge.resize(huge.len() + 0xffff, b'x');
        let (mut conn, server) = fake_epmd(huge.leak());
        assert_eq!(ask_port(&mut conn, "h", "n").unwrap().port, 0x1234);
        drop(conn);
        server.join().unwrap();
        // The older ALIVE2_RESP: a 16-bit creation.
        let (mut conn, server) = fake_epmd(b"\x79\x00\x00\x07");
        assert_eq!(alive(&mut conn, "n", 1, true).unwrap(), 7);
        server.join().unwrap();
        // A refusal.
        let (mut conn, server) = fake_epmd(b"\x76\x01\x00\x00\x00\x00");
        assert!(matches!(
            alive(&mut conn, "n", 1, true),
            Err(EpmdError::Refused { result: 1, .. })
        ));
        server.join().unwrap();
    }
}
