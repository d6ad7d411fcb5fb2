//! The distribution handshake, version 6 (OTP 23 and later), both sides.
//!
//! Every handshake message is a 2-byte big-endian length, then the message; after
//! the handshake the connection switches to 4-byte lengths. Over TLS the lengths are
//! 4 bytes from the start (OTP's `inet_tls_dist` runs its handshake with
//! `{packet, 4}`): [`LocalNode::header`]. The initiator `A`
//! ([`connect`]) and the acceptor `B` ([`accept`]) exchange:
//!
//! ```text
//! A -> B  'N' flags:u64 creation:u32 nlen:u16 name     send_name
//! B -> A  's' status                                   send_status ("ok", "ok_simultaneous",
//!                                                      "nok", "not_allowed", "alive")
//! (A -> B 's' "true" | "false"                         only after "alive")
//! B -> A  'N' flags:u64 chB:u32 creation:u32 nlen:u16 name   send_challenge
//! A -> B  'r' chA:u32 digest(chB):16                   send_challenge_reply
//! B -> A  'a' digest(chA):16                           send_challenge_ack
//! ```
//!
//! `digest(ch) = md5(cookie ++ decimal(ch))`. Each side checks the other's digest
//! against its own cookie: `B` closes without an ack on a wrong one
//! ([`HandshakeError::BadCookie`]; the initiator sees
//! [`HandshakeError::CookieRejected`]), and `A` fails on a wrong ack. Extra bytes after
//! the name in `'N'` messages are ignored, as the protocol asks.
//!
//! An OTP 23 or 24 initiator that did not ask epmd first sends the older
//! `'n' version:u16=5 flags:u32 name` with `HANDSHAKE_23` set; [`accept`] takes it and
//! reads the complement `'c' flags_high:u32 creation:u32` after its challenge, as
//! the protocol describes. Without `HANDSHAKE_23` (a node older than OTP 23) it is
//! refused ([`HandshakeError::OldHandshake`]). Dynamic names (`NAME_ME`) are not
//! supported.
//!
//! Invariants: a message is at most 65535 bytes and nothing larger is ever allocated;
//! a peer lacking [`DistFlags::REQUIRED`] is refused
//! ([`HandshakeError::MissingFlags`]); bad input is an error, never a panic. There is
//! no timeout here: the caller bounds the handshake (Erlang's `net_setuptime`, 7 s).
//!
//! Challenges come from `/dev/urandom`, or, where it cannot be read, from std's
//! randomly keyed `RandomState` hasher over a counter and the time.

use std::fmt;
use std::future::poll_fn;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read};
use std::pin::Pin;

use futures_io::{AsyncRead, AsyncWrite};
use md5::{Digest, Md5};

use crate::flags::DistFlags;

#[cfg(test)]
mod tests;

/// This node, as the handshake presents it.
#[derive(Clone)]
pub struct LocalNode {
    /// The full node name, `alive@host`.
    pub name: String,
    /// This incarnation's creation (from epmd's registration).
    pub creation: u32,
    /// The flags announced.
    pub flags: DistFlags,
    /// The cookie, expected from peers and used towards them.
    pub cookie: String,
    /// The bytes of a handshake message's length: 2 over TCP, 4 over TLS (module
    /// docs).
    pub header: usize,
}

impl LocalNode {
    /// A node announcing [`DistFlags::ours`]: hidden (the default) or normal.
    pub fn new(name: &str, creation: u32, hidden: bool, cookie: &str) -> LocalNode {
        LocalNode {
            name: name.to_owned(),
            creation,
            flags: DistFlags::ours(hidden),
            cookie: cookie.to_owned(),
            header: 2,
        }
    }

    /// The same node, with the handshake's framing over TLS (4-byte lengths).
    pub fn over_tls(mut self) -> LocalNode {
        self.header = 4;
        self
    }
}

/// The cookie is not shown.
impl fmt::Debug for LocalNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalNode")
            .field("name", &self.name)
            .field("creation", &self.creation)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

/// The node at the other end of a completed handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its full node name, `alive@host`.
    pub name: String,
    /// The flags it announced, [normalised](DistFlags::normalised). The connection
    /// uses `ours & these`.
    pub flags: DistFlags,
    /// Its creation.
    pub creation: u32,
}

impl Peer {
    /// Whether the peer is a hidden node (`PUBLISHED` clear).
    pub fn is_hidden(&self) -> bool {
        self.flags.is_hidden()
    }
}

/// The acceptor's answer to an initiator's name, decided by the caller of [`accept`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Go on.
    Ok,
    /// Go on; this node drops its own pending attempt to the peer (simultaneous
    /// connect, the peer's name is greater: see [`simultaneous_winner`]).
    OkSimultaneous,
    /// Stop: this node's own pending attempt to the peer goes on (simultaneous
    /// connect, this node's name is greater).
    Nok,
    /// Stop: the peer is not allowed.
    NotAllowed,
    /// A connection to the peer is already up. The initiator answers `true` (its old
    /// connection is gone: the handshake goes on, and the caller replaces the old
    /// connection) or `false` (the handshake stops).
    Alive,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::OkSimultaneous => "ok_simultaneous",
            Status::Nok => "nok",
            Status::NotAllowed => "not_allowed",
            Status::Alive => "alive",
        }
    }

    fn parse(s: &[u8]) -> Option<Status> {
        Some(match s {
            b"ok" => Status::Ok,
            b"ok_simultaneous" => Status::OkSimultaneous,
            b"nok" => Status::Nok,
            b"not_allowed" => Status::NotAllowed,
            b"alive" => Status::Alive,
            _ => return None,
        })
    }
}

/// The rule for simultaneous connects: when two nodes connect to each other at once,
/// the attempt initiated by the node with the greater name (compared as Erlang
/// compares atoms: by their text) goes on, the other stops. So an acceptor with an
/// attempt of its own pending answers [`Status::Nok`] if this is `true` (its own
/// attempt wins) and [`Status::OkSimultaneous`] otherwise.
pub fn simultaneous_winner(local: &str, peer: &str) -> bool {
    // UTF-8 byte order is code point order.
    local.as_bytes() > peer.as_bytes()
}

/// The handshake message expected when something went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `send_name` (`'N'` or `'n'`).
    Name,
    /// `send_status` (`'s'`), either way.
    Status,
    /// `send_challenge` (`'N'`).
    Challenge,
    /// `send_complement` (`'c'`).
    Complement,
    /// `send_challenge_reply` (`'r'`).
    ChallengeReply,
    /// `send_challenge_ack` (`'a'`).
    ChallengeAck,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Name => "the name ('N')",
            Stage::Status => "the status ('s')",
            Stage::Challenge => "the challenge ('N')",
            Stage::Complement => "the complement ('c')",
            Stage::ChallengeReply => "the challenge reply ('r')",
            Stage::ChallengeAck => "the challenge ack ('a')",
        })
    }
}

/// Why a handshake failed.
#[derive(Debug)]
pub enum HandshakeError {
    /// Reading or writing failed.
    Io(io::Error),
    /// The peer closed the connection where this message was expected.
    Closed(Stage),
    /// The peer closed the connection in the middle of this message.
    Truncated(Stage),
    /// The peer's digest does not match our cookie (the acceptor sent no ack).
    BadCookie,
    /// The peer closed the connection on our digest: what Erlang does when it does not
    /// share our cookie.
    CookieRejected,
    /// The peer lacks these flags of [`DistFlags::REQUIRED`].
    MissingFlags(DistFlags),
    /// The handshake was stopped with this status: by the peer ([`connect`]) or by
    /// the caller's decision ([`accept`]).
    Refused(Status),
    /// After [`Status::Alive`], the initiator answered `false`.
    Withdrawn,
    /// An unknown status string.
    UnexpectedStatus(String),
    /// A message of another kind than expected (its first byte).
    UnexpectedTag {
        /// The message expected.
        stage: Stage,
        /// Its first byte.
        tag: u8,
    },
    /// A message too short for its fields, or otherwise malformed.
    Malformed(Stage),
    /// A node name that is not `alive@host` in UTF-8 (ours or the peer's).
    BadName(String),
    /// The acceptor is another node than the one we connected to.
    WrongPeer {
        /// The node we meant to reach.
        expected: String,
        /// The node that answered.
        got: String,
    },
    /// An initiator older than OTP 23 (`'n'` without `HANDSHAKE_23`).
    OldHandshake,
    /// The peer's first bytes are a TLS hello: it runs TLS distribution, this node
    /// does not.
    PeerSpeaksTls,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Io(e) => write!(f, "handshake: {e}"),
            HandshakeError::Closed(s) => {
                write!(f, "handshake: the peer closed the connection before {s}")
            }
            HandshakeError::Truncated(s) => {
                write!(f, "handshake: the peer closed the connection within {s}")
            }
            HandshakeError::BadCookie => {
                f.write_str("handshake: the peer's digest does not match our cookie")
            }
            HandshakeError::CookieRejected => f.write_str(
                "handshake: the peer closed the connection on our digest (it does not share our cookie)",
            ),
            HandshakeError::MissingFlags(m) => {
                write!(f, "handshake: the peer lacks required distribution flags: {m}")
            }
            HandshakeError::Refused(s) => {
                write!(f, "handshake: refused with status {:?}", s.as_str())
            }
            HandshakeError::Withdrawn => f.write_str(
                "handshake: the initiator withdrew (answered false to status \"alive\")",
            ),
            HandshakeError::UnexpectedStatus(s) => {
                write!(f, "handshake: unexpected status {s:?}")
            }
            HandshakeError::UnexpectedTag { stage, tag } => write!(
                f,
                "handshake: expected {stage}, got a message starting with {:?}",
                char::from(*tag)
            ),
            HandshakeError::Malformed(s) => write!(f, "handshake: malformed {s}"),
            HandshakeError::BadName(n) => {
                write!(f, "handshake: bad node name {n:?} (expected alive@host)")
            }
            HandshakeError::WrongPeer { expected, got } => {
                write!(f, "handshake: connected to {expected:?} but {got:?} answered")
            }
            HandshakeError::OldHandshake => f.write_str(
                "handshake: the peer speaks only version 5 (older than OTP 23): not supported",
            ),
            HandshakeError::PeerSpeaksTls => f.write_str(
                "handshake: the peer started TLS (erl -proto_dist inet_tls?): this node is not \
                 set up for TLS distribution (NodeBuilder::tls)",
            ),
        }
    }
}

impl std::error::Error for HandshakeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HandshakeError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> HandshakeError {
        HandshakeError::Io(e)
    }
}

/// The initiator's side: completes the handshake with `peer_name` (`alive@host`) over
/// `stream`, a fresh connection to its distribution port.
pub async fn connect<S>(
    stream: &mut S,
    local: &LocalNode,
    peer_name: &str,
) -> Result<Peer, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    connect_unless(stream, local, peer_name, || true).await
}

/// [`connect`], where `still_ours` answers the peer's `alive` status: true (the
/// peer's connection to us is an old one, replace it) only while this attempt is
/// still the one that should bring the connection up; else `sfalse`, and the
/// attempt ends with [`HandshakeError::Withdrawn`].
pub async fn connect_unless<S>(
    stream: &mut S,
    local: &LocalNode,
    peer_name: &str,
    still_ours: impl FnOnce() -> bool,
) -> Result<Peer, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    check_node_name(local.name.as_bytes())?;
    let mut name = vec![b'N'];
    name.extend_from_slice(&local.flags.bits().to_be_bytes());
    name.extend_from_slice(&local.creation.to_be_bytes());
    put_name(&mut name, &local.name);
    write_frame(stream, local.header, &name).await?;

    let status = read_frame(stream, local.header, Stage::Status).await?;
    match parse_status(&status)? {
        Status::Ok | Status::OkSimultaneous => {}
        // The peer has a connection to us: an old one if this attempt is still ours
        // to make, else one that came up meanwhile (from the peer's side).
        Status::Alive if still_ours() => write_frame(stream, local.header, b"strue").await?,
        Status::Alive => {
            write_frame(stream, local.header, b"sfalse").await?;
            return Err(HandshakeError::Withdrawn);
        }
        refused @ (Status::Nok | Status::NotAllowed) => {
            return Err(HandshakeError::Refused(refused));
        }
    }

    let challenge = read_frame(stream, local.header, Stage::Challenge).await?;
    let mut m = Fields::new(&challenge, Stage::Challenge, b'N')?;
    let flags = DistFlags::from_bits(m.u64()?).normalised();
    let challenge_b = m.u32()?;
    let creation = m.u32()?;
    let nlen = m.u16()?;
    let got = check_node_name(m.bytes(usize::from(nlen))?)?;
    if got != peer_name {
        return Err(HandshakeError::WrongPeer {
            expected: peer_name.to_owned(),
            got,
        });
    }
    check_flags(flags)?;

    let challenge_a = gen_challenge();
    let mut reply = vec![b'r'];
    reply.extend_from_slice(&challenge_a.to_be_bytes());
    reply.extend_from_slice(&digest(&local.cookie, challenge_b));
    write_frame(stream, local.header, &reply).await?;

    let ack = match read_frame(stream, local.header, Stage::ChallengeAck).await {
        Err(HandshakeError::Closed(_)) => return Err(HandshakeError::CookieRejected),
        Err(HandshakeError::Io(e)) if e.kind() == io::ErrorKind::ConnectionReset => {
            return Err(HandshakeError::CookieRejected);
        }
        r => r?,
    };
    let mut m = Fields::new(&ack, Stage::ChallengeAck, b'a')?;
    if !same_digest(m.bytes(16)?, &digest(&local.cookie, challenge_a)) {
        return Err(HandshakeError::BadCookie);
    }
    Ok(Peer {
        name: got,
        flags,
        creation,
    })
}

/// The acceptor's side: completes the handshake over `stream`, a connection just
/// accepted on this node's distribution port. `decide` gets the initiator's name
/// and answers it (in Erlang, `net_kernel`'s role: duplicates, simultaneous connects,
/// see [`Status`] and [`simultaneous_winner`]).
pub async fn accept<S>(
    stream: &mut S,
    local: &LocalNode,
    mut decide: impl FnMut(&str) -> Status,
) -> Result<Peer, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    check_node_name(local.name.as_bytes())?;
    let first = read_frame(stream, local.header, Stage::Name).await?;
    let (old, mut flags, mut creation, name) = match first.first().copied().unwrap_or(0) {
        b'N' => {
            let mut m = Fields::new(&first, Stage::Name, b'N')?;
            let flags = DistFlags::from_bits(m.u64()?);
            let creation = m.u32()?;
            let nlen = m.u16()?;
            (false, flags, creation, m.bytes(usize::from(nlen))?)
        }
        b'n' => {
            let mut m = Fields::new(&first, Stage::Name, b'n')?;
            if m.u16()? != 5 {
                return Err(HandshakeError::Malformed(Stage::Name));
            }
            let flags = DistFlags::from_bits(u64::from(m.u32()?));
            if !flags.contains(DistFlags::HANDSHAKE_23) {
                return Err(HandshakeError::OldHandshake);
            }
            (true, flags, 0, m.rest())
        }
        tag => {
            return Err(HandshakeError::UnexpectedTag {
                stage: Stage::Name,
                tag,
            });
        }
    };
    let name = check_node_name(name)?;
    if !old {
        check_flags(flags.normalised())?;
    }

    let status = decide(&name);
    let mut s = vec![b's'];
    s.extend_from_slice(status.as_str().as_bytes());
    write_frame(stream, local.header, &s).await?;
    match status {
        Status::Ok | Status::OkSimultaneous => {}
        Status::Nok | Status::NotAllowed => return Err(HandshakeError::Refused(status)),
        Status::Alive => match &read_frame(stream, local.header, Stage::Status).await?[..] {
            b"strue" => {}
            b"sfalse" => return Err(HandshakeError::Withdrawn),
            [b's', other @ ..] => {
                return Err(HandshakeError::UnexpectedStatus(
                    String::from_utf8_lossy(other).into_owned(),
                ));
            }
            other => {
                return Err(HandshakeError::UnexpectedTag {
                    stage: Stage::Status,
                    tag: other.first().copied().unwrap_or(0),
                });
            }
        },
    }

    let challenge_b = gen_challenge();
    let mut challenge = vec![b'N'];
    challenge.extend_from_slice(&local.flags.bits().to_be_bytes());
    challenge.extend_from_slice(&challenge_b.to_be_bytes());
    challenge.extend_from_slice(&local.creation.to_be_bytes());
    put_name(&mut challenge, &local.name);
    write_frame(stream, local.header, &challenge).await?;

    if old {
        let complement = read_frame(stream, local.header, Stage::Complement).await?;
        let mut m = Fields::new(&complement, Stage::Complement, b'c')?;
        flags = DistFlags::from_bits(flags.bits() | u64::from(m.u32()?) << 32);
        creation = m.u32()?;
        check_flags(flags.normalised())?;
    }

    let reply = read_frame(stream, local.header, Stage::ChallengeReply).await?;
    let mut m = Fields::new(&reply, Stage::ChallengeReply, b'r')?;
    let challenge_a = m.u32()?;
    if !same_digest(m.bytes(16)?, &digest(&local.cookie, challenge_b)) {
        return Err(HandshakeError::BadCookie);
    }
    let mut ack = vec![b'a'];
    ack.extend_from_slice(&digest(&local.cookie, challenge_a));
    write_frame(stream, local.header, &ack).await?;
    Ok(Peer {
        name,
        flags: flags.normalised(),
        creation,
    })
}

/// `md5(cookie ++ decimal(challenge))`.
fn digest(cookie: &str, challenge: u32) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(cookie.as_bytes());
    h.update(challenge.to_string().as_bytes());
    h.finalize().into()
}

/// Compares in time independent of where the digests differ.
fn same_digest(a: &[u8], b: &[u8; 16]) -> bool {
    a.len() == 16 && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A random 32-bit challenge: `/dev/urandom`, else `RandomState` over a counter and
/// the time.
fn gen_challenge() -> u32 {
    let mut b = [0u8; 4];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u32::from_ne_bytes(b);
    }
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    let x = h.finish();
    (x ^ (x >> 32)) as u32
}

/// The flags of a peer, refused if it lacks any of [`DistFlags::REQUIRED`].
fn check_flags(flags: DistFlags) -> Result<(), HandshakeError> {
    let missing = flags.missing(DistFlags::REQUIRED);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(HandshakeError::MissingFlags(missing))
    }
}

/// The longest node name: an atom, at most 255 characters of at most 4 bytes.
const MAX_NAME: usize = 255 * 4;

/// `alive@host`, both parts non-empty, UTF-8, no control characters, an atom's length.
fn check_node_name(name: &[u8]) -> Result<String, HandshakeError> {
    let bad = || HandshakeError::BadName(String::from_utf8_lossy(name).into_owned());
    if name.len() > MAX_NAME {
        return Err(bad());
    }
    let s = std::str::from_utf8(name).map_err(|_| bad())?;
    match s.split_once('@') {
        Some((alive, host))
            if !alive.is_empty() && !host.is_empty() && !s.chars().any(char::is_control) =>
        {
            Ok(s.to_owned())
        }
        _ => Err(bad()),
    }
}

fn put_name(m: &mut Vec<u8>, name: &str) {
    // Names are at most `MAX_NAME` bytes (`check_node_name`).
    m.extend_from_slice(&(name.len() as u16).to_be_bytes());
    m.extend_from_slice(name.as_bytes());
}

fn parse_status(m: &[u8]) -> Result<Status, HandshakeError> {
    match m {
        [b's', s @ ..] => Status::parse(s).ok_or_else(|| {
            HandshakeError::UnexpectedStatus(String::from_utf8_lossy(s).into_owned())
        }),
        _ => Err(HandshakeError::UnexpectedTag {
            stage: Stage::Status,
            tag: m.first().copied().unwrap_or(0),
        }),
    }
}

/// The fields of one message, read front to back.
struct Fields<'a> {
    rest: &'a [u8],
    stage: Stage,
}

impl<'a> Fields<'a> {
    /// The message after its tag, which must be `tag`.
    fn new(m: &'a [u8], stage: Stage, tag: u8) -> Result<Fields<'a>, HandshakeError> {
        match m {
            [t, rest @ ..] if *t == tag => Ok(Fields { rest, stage }),
            _ => Err(HandshakeError::UnexpectedTag {
                stage,
                tag: m.first().copied().unwrap_or(0),
            }),
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], HandshakeError> {
        if self.rest.len() < n {
            return Err(HandshakeError::Malformed(self.stage));
        }
        let (b, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], HandshakeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    fn u16(&mut self) -> Result<u16, HandshakeError> {
        self.array().map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Result<u32, HandshakeError> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64, HandshakeError> {
        self.array().map(u64::from_be_bytes)
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
}

/// One message: its length in `header` bytes (2 or 4), then at most 65535 bytes
/// (never empty).
async fn read_frame<S>(
    stream: &mut S,
    header: usize,
    stage: Stage,
) -> Result<Vec<u8>, HandshakeError>
where
    S: AsyncRead + Unpin,
{
    let mut len = [0u8; 4];
    let len = &mut len[4 - header..];
    match read_exact(stream, len).await {
        Ok(0) => return Err(HandshakeError::Closed(stage)),
        Ok(n) if n == header => {}
        Ok(_) => return Err(HandshakeError::Truncated(stage)),
        Err(e) => return Err(e.into()),
    }
    if header == 2 && matches!(stage, Stage::Name) && len == [0x16, 0x03] {
        // A TLS record of type handshake, version 3.x: a ClientHello, not a length.
        return Err(HandshakeError::PeerSpeaksTls);
    }
    let len = len.iter().fold(0usize, |n, &b| n << 8 | usize::from(b));
    if len == 0 || len > usize::from(u16::MAX) {
        return Err(HandshakeError::Malformed(stage));
    }
    let mut m = vec![0u8; len];
    match read_exact(stream, &mut m).await {
        Ok(n) if n == len => Ok(m),
        Ok(_) => Err(HandshakeError::Truncated(stage)),
        Err(e) => Err(e.into()),
    }
}

/// Fills `buf`, or stops at end-of-stream: the number of bytes read.
async fn read_exact<S>(stream: &mut S, buf: &mut [u8]) -> io::Result<usize>
where
    S: AsyncRead + Unpin,
{
    let mut done = 0;
    while done < buf.len() {
        match poll_fn(|cx| Pin::new(&mut *stream).poll_read(cx, &mut buf[done..])).await {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// One message with its length in `header` bytes (2 or 4), flushed.
async fn write_frame<S>(stream: &mut S, header: usize, m: &[u8]) -> Result<(), HandshakeError>
where
    S: AsyncWrite + Unpin,
{
    let len = u16::try_from(m.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "handshake message longer than 65535 bytes",
        )
    })?;
    let mut frame = Vec::with_capacity(header + m.len());
    frame.extend_from_slice(&u32::from(len).to_be_bytes()[4 - header..]);
    frame.extend_from_slice(m);
    let mut done = 0;
    while done < frame.len() {
        match poll_fn(|cx| Pin::new(&mut *stream).poll_write(cx, &frame[done..])).await {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    poll_fn(|cx| Pin::new(&mut *stream).poll_flush(cx)).await?;
    Ok(())
}
