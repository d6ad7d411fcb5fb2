//! Why a connection to another node could not be made or was lost: [`ConnectError`],
//! what [`Node::connect`](crate::dist::Node::connect) returns. The protocol's own
//! errors (`otter_dist`'s [`EpmdError`] and [`HandshakeError`], the socket's
//! `io::Error`) are kept whole, as the error's [`source`](std::error::Error::source),
//! so a caller can match on them; they are shared (`Arc`), as one failure answers every
//! caller waiting on the connection.

use std::fmt;
use std::io;
use std::sync::Arc;

pub use otter_dist::epmd::EpmdError;
pub use otter_dist::handshake::HandshakeError;

/// Why a connection to another node could not be made or was lost.
///
/// ```
/// use otter::dist::{Closed, ConnectError};
/// let lost = ConnectError::Closed(Closed::TickTimeout);
/// assert_eq!(lost.to_string(), "connection closed: the peer stopped ticking (net_ticktime)");
/// // The protocol's own error, when there is one, is the source.
/// assert!(std::error::Error::source(&lost).is_none());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ConnectError {
    /// Not a node name (`alive@host`), or this node's own: a node does not connect to
    /// itself.
    BadName(String),
    /// The peer's host has no epmd that knows the node, or epmd could not be asked.
    NotFound(Arc<EpmdError>),
    /// The TCP connection to the port epmd gave could not be opened.
    Io(Arc<io::Error>),
    /// TLS's handshake failed (feature `tls`): how, with rustls's or the socket's
    /// error as its source.
    Tls(Arc<TlsHandshakeError>),
    /// The distribution handshake failed: a wrong cookie on either side, a name the
    /// peer refused, a peer that lacks a capability otter requires...
    Handshake(Arc<HandshakeError>),
    /// The handshakes (TLS's, then the distribution's) took longer than OTP's
    /// `net_setuptime` (7 s); `tls` if TLS's had not finished (a plain node waits for
    /// a handshake message that never comes).
    Timeout {
        /// Whether TLS's handshake was the one under way.
        tls: bool,
    },
    /// The peer was connecting to this node at the same time and its attempt won, but
    /// its connection did not come up within the handshake's time.
    Simultaneous,
    /// The connection was closed or lost, after it came up or before.
    Closed(Closed),
}

/// Why a connection was closed or lost ([`ConnectError::Closed`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Closed {
    /// The peer closed it.
    ByPeer,
    /// Reading from the socket failed.
    Io(Arc<io::Error>),
    /// The peer stopped ticking: nothing came from it for `net_ticktime`.
    TickTimeout,
    /// The peer stopped reading: more than `dist_buf_hard_limit` bytes waited for it
    /// (`dist/connection.rs`, "Limits").
    HardLimit,
    /// The peer sent what the protocol does not allow (a frame past the size limit,
    /// a control message that does not decode...): what.
    BadInput(String),
    /// A new connection from the peer replaced it.
    Replaced,
    /// This node disconnected it ([`Node::disconnect`](crate::dist::Node::disconnect)).
    Disconnected,
    /// This node stopped.
    NodeStopped,
    /// Its reader ended without a reason (a panic in code it ran).
    ReaderFailed,
}

impl ConnectError {
    /// Whether the connection was lost rather than closed by either side.
    pub(crate) fn is_lost(&self) -> bool {
        match self {
            ConnectError::Closed(c) => c.is_lost(),
            _ => true,
        }
    }

    /// What a report of the connection's end says: the closing's reason alone for a
    /// close (the report says the connection ended), else the whole error.
    pub(crate) fn reason_text(&self) -> String {
        match self {
            ConnectError::Closed(c) => c.to_string(),
            e => e.to_string(),
        }
    }
}

impl Closed {
    /// Whether neither side closed the connection: it was lost.
    pub(crate) fn is_lost(&self) -> bool {
        !matches!(
            self,
            Closed::ByPeer | Closed::Replaced | Closed::Disconnected | Closed::NodeStopped
        )
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::BadName(name) => write!(f, "{name:?} is not a node to connect to"),
            ConnectError::NotFound(e) => write!(f, "node not found: {e}"),
            ConnectError::Io(e) => write!(f, "connection failed: {e}"),
            ConnectError::Tls(e) => write!(f, "TLS handshake failed: {e}"),
            ConnectError::Handshake(e) => write!(f, "handshake failed: {e}"),
            ConnectError::Timeout { tls: true } => f.write_str(
                "TLS handshake timed out: is the peer set up for TLS distribution \
                 (erl -proto_dist inet_tls)? A plain node waits for a handshake message \
                 that never comes",
            ),
            ConnectError::Timeout { tls: false } => f.write_str("handshake timed out"),
            ConnectError::Simultaneous => f.write_str(
                "the peer's own connection, which won a simultaneous attempt, did not come up",
            ),
            ConnectError::Closed(c) => write!(f, "connection closed: {c}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::NotFound(e) => Some(&**e),
            ConnectError::Io(e) => Some(&**e),
            ConnectError::Tls(e) => Some(&**e),
            ConnectError::Handshake(e) => Some(&**e),
            ConnectError::Closed(Closed::Io(e)) => Some(&**e),
            _ => None,
        }
    }
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Closed::ByPeer => f.write_str("closed by the peer"),
            Closed::Io(e) => write!(f, "reading failed: {e}"),
            Closed::TickTimeout => f.write_str("the peer stopped ticking (net_ticktime)"),
            Closed::HardLimit => f.write_str("the peer does not read (dist_buf_hard_limit)"),
            Closed::BadInput(what) => write!(f, "the peer sent {what}"),
            Closed::Replaced => f.write_str("replaced by a new connection from the peer"),
            Closed::Disconnected => f.write_str("disconnected by this node"),
            Closed::NodeStopped => f.write_str("this node stopped"),
            Closed::ReaderFailed => f.write_str("the reader failed"),
        }
    }
}

/// How TLS's handshake with a peer failed (feature `tls`), and what it most likely
/// means. The error rustls or the socket gave is the [`source`](std::error::Error::source)
/// (a `rustls::Error`, such as a certificate the peer or this node refused, is that
/// `io::Error`'s inner error).
///
/// ```
/// use std::error::Error;
/// use std::sync::Arc;
/// use otter::dist::{ConnectError, TlsHandshakeError};
///
/// let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
/// let e = ConnectError::Tls(Arc::new(TlsHandshakeError::PeerClosed(eof)));
/// assert!(e.to_string().contains("is it set up for TLS distribution"));
/// // The handshake's error is the source; the socket's (or rustls's) is its source.
/// let tls = e.source().unwrap();
/// assert!(tls.downcast_ref::<TlsHandshakeError>().is_some());
/// assert_eq!(
///     tls.source().unwrap().downcast_ref::<std::io::Error>().unwrap().kind(),
///     std::io::ErrorKind::UnexpectedEof
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsHandshakeError {
    /// The host part of the peer's node name is not a name a certificate can hold.
    ServerName(String),
    /// The peer closed the connection during the handshake: it is most likely not set
    /// up for TLS distribution (`erl -proto_dist inet_tls`), or it refused this node's
    /// certificate.
    PeerClosed(io::Error),
    /// What the peer sent was not TLS (a plain distribution handshake): this node takes
    /// TLS distribution only.
    NotTls(io::Error),
    /// rustls or the socket failed otherwise (a certificate this node refused, ...).
    Failed(io::Error),
}

impl fmt::Display for TlsHandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsHandshakeError::ServerName(host) => {
                write!(f, "{host:?} is not a host name a certificate can name")
            }
            TlsHandshakeError::PeerClosed(e) => write!(
                f,
                "the peer closed the connection in the TLS handshake ({e}): is it set up for \
                 TLS distribution (erl -proto_dist inet_tls), and does it take this node's \
                 certificate?"
            ),
            TlsHandshakeError::NotTls(e) => write!(
                f,
                "the peer did not speak TLS ({e}): a plain distribution handshake? This node \
                 takes TLS distribution only"
            ),
            TlsHandshakeError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TlsHandshakeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsHandshakeError::ServerName(_) => None,
            TlsHandshakeError::PeerClosed(e)
            | TlsHandshakeError::NotTls(e)
            | TlsHandshakeError::Failed(e) => Some(e),
        }
    }
}
