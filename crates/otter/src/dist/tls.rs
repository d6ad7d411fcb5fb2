//! Distribution over TLS, as `erl -proto_dist inet_tls` (feature `tls`).
//!
//! A node built with [`NodeBuilder::tls`](crate::dist::NodeBuilder::tls) speaks TLS on
//! every connection, both ways: the TLS handshake comes first, right after the TCP
//! connect or accept, and the distribution handshake (its cookie check included) then
//! runs inside TLS, as OTP's `inet_tls_dist` does. epmd is unchanged: it gives the
//! port of the node's TLS listener.
//!
//! # Verification
//!
//! [`TlsConfig::from_pem_files`] is OTP's usual `-ssl_dist_optfile` with the same
//! `certfile`, `keyfile` and `cacertfile` for the `server` and `client` sides,
//! `{verify, verify_peer}` on both and `{fail_if_no_peer_cert, true}`:
//!
//! * as a server (a peer connects), the peer must show a certificate chain to one of
//!   the CA certificates;
//! * as a client (this node connects), so must the peer, and its certificate must
//!   name the host part of the peer's node name (`alive@host`) as a DNS name or an IP
//!   address, as OTP's client checks (`server_name_indication` is that host). Make
//!   each node's certificate name its host: `-sname` nodes use the short host name.
//!
//! A node set up for TLS refuses plain peers: a plain distribution handshake sent to
//! its listener fails the TLS handshake (the reason names it), and its own attempts
//! to connect to a plain node time out within the handshake's time (the plain peer
//! waits for a handshake message as long as the TLS hello's first bytes say); the
//! error says the peer may not be set up for TLS.
//!
//! # Invariants of [`TlsLink`]
//!
//! The TLS state (`rustls::Connection`) is one for both directions, under a mutex held
//! only for steps that do not wait. Once the connection is up:
//!
//! * only the reader reads from the socket ([`TlsLink::poll_read`]); it never writes:
//!   records the reader's processing leaves for the peer (a key update's answer) wait
//!   in the TLS state until the writer flushes them ([`Link::wants_flush`]);
//! * only the writer writes to the socket ([`TlsLink::write_all`]), and so it alone
//!   waits for the socket to be writable: one waker per direction, each the one
//!   process that waits on it.
//!
//! Before it is up, the TLS handshake and the distribution handshake run in one
//! process, which does both.
//!
//! [`Link::wants_flush`]: crate::dist::link::Link::wants_flush

use std::fmt;
use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::dist::connect_error::TlsHandshakeError;
use crate::net::SharedStream;

/// The TLS settings of a node ([`NodeBuilder::tls`](crate::dist::NodeBuilder::tls)):
/// what it shows its peers and what it requires of them (module docs of
/// `otter::dist`, "TLS").
///
/// ```no_run
/// use otter::dist::{Node, TlsConfig};
/// let tls = TlsConfig::from_pem_files("node.pem", "node.key", "ca.pem")?;
/// let rt = otter::Runtime::new();
/// let node = Node::builder("otter@localhost").cookie("secret").tls(tls).start(&rt.handle())?;
/// # let _ = node;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// The node's certificate chain (`certfile`, its own certificate first), its
    /// private key (`keyfile`: PKCS#8, PKCS#1 or SEC1) and the CA certificates its
    /// peers' chains must lead to (`cacertfile`), all PEM: OTP's
    /// `-ssl_dist_optfile` with these three files on both sides and verification on
    /// both ways (module docs).
    pub fn from_pem_files(
        certfile: impl AsRef<Path>,
        keyfile: impl AsRef<Path>,
        cacertfile: impl AsRef<Path>,
    ) -> Result<TlsConfig, TlsError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|error| TlsError::Read {
                path: p.to_path_buf(),
                error,
            })
        };
        TlsConfig::from_pem(
            &read(certfile.as_ref())?,
            &read(keyfile.as_ref())?,
            &read(cacertfile.as_ref())?,
        )
    }

    /// [`TlsConfig::from_pem_files`], from the files' contents.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8], ca_pem: &[u8]) -> Result<TlsConfig, TlsError> {
        let pem = |what: &'static str| {
            move |e: rustls::pki_types::pem::Error| TlsError::Pem {
                what,
                detail: e.to_string(),
            }
        };
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pem("certificate"))?;
        if chain.is_empty() {
            return Err(TlsError::Pem {
                what: "certificate",
                detail: "no CERTIFICATE block".into(),
            });
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(pem("private key"))?;
        let mut roots = RootCertStore::empty();
        for ca in CertificateDer::pem_slice_iter(ca_pem) {
            roots
                .add(ca.map_err(pem("CA certificate"))?)
                .map_err(TlsError::Config)?;
        }
        if roots.is_empty() {
            return Err(TlsError::Pem {
                what: "CA certificate",
                detail: "no CERTIFICATE block".into(),
            });
        }
        let roots = Arc::new(roots);
        // ring, not aws-lc-rs: a C compiler only. Deprecated by rustls 0.23.48 for
        // lacking post-quantum key exchange, which OTP's `ssl` does not offer either;
        // a program that wants it builds its configurations with aws-lc-rs and
        // passes them to `from_rustls`.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots.clone(),
            provider.clone(),
        )
        .build()
        .map_err(|e| TlsError::Config(rustls::Error::General(e.to_string())))?;
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(TlsError::Config)?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(TlsError::Config)?;
        Ok(TlsConfig::from_rustls(Arc::new(server), Arc::new(client)))
    }

    /// The node's TLS as rustls configurations: `server` for the connections peers
    /// open, `client` for the ones this node opens (whose server name is the host part
    /// of the peer's node name). For what [`TlsConfig::from_pem_files`] does not
    /// cover: other verifiers, key logging, protocol versions.
    pub fn from_rustls(server: Arc<ServerConfig>, client: Arc<ClientConfig>) -> TlsConfig {
        TlsConfig { server, client }
    }
}

/// Why a [`TlsConfig`] could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// What reading it said.
        error: io::Error,
    },
    /// A PEM input held no block of the kind needed, or one that does not parse.
    Pem {
        /// `certificate`, `private key` or `CA certificate`.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// rustls refused the settings (a key that does not match its certificate, a CA
    /// certificate it cannot use...).
    Config(rustls::Error),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Read { path, error } => write!(f, "cannot read {}: {error}", path.display()),
            TlsError::Pem { what, detail } => write!(f, "bad PEM {what}: {detail}"),
            TlsError::Config(e) => write!(f, "TLS settings refused: {e}"),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Read { error, .. } => Some(error),
            TlsError::Config(e) => Some(e),
            TlsError::Pem { .. } => None,
        }
    }
}

/// TLS over a connection's socket (module docs, "Invariants").
pub(crate) struct TlsLink {
    sock: Arc<SharedStream>,
    tls: Mutex<rustls::Connection>,
}

impl fmt::Debug for TlsLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsLink")
            .field("sock", &self.sock)
            .finish_non_exhaustive()
    }
}

/// Opens TLS as the client on a fresh connection to `host` (the host part of the
/// peer's node name: the name its certificate must have).
pub(crate) async fn connect(
    config: &TlsConfig,
    sock: Arc<SharedStream>,
    host: &str,
) -> Result<TlsLink, TlsHandshakeError> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| TlsHandshakeError::ServerName(host.to_owned()))?;
    let tls = rustls::ClientConnection::new(config.client.clone(), name)
        .map_err(|e| TlsHandshakeError::Failed(tls_error(e)))?;
    let link = TlsLink::new(sock, tls.into());
    link.handshake().await.map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
            TlsHandshakeError::PeerClosed(e)
        }
        _ => TlsHandshakeError::Failed(e),
    })?;
    Ok(link)
}

/// Opens TLS as the server on a connection a peer opened.
pub(crate) async fn accept(
    config: &TlsConfig,
    sock: Arc<SharedStream>,
) -> Result<TlsLink, TlsHandshakeError> {
    let tls = rustls::ServerConnection::new(config.server.clone())
        .map_err(|e| TlsHandshakeError::Failed(tls_error(e)))?;
    let link = TlsLink::new(sock, tls.into());
    link.handshake().await.map_err(|e| {
        let plain = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
            .is_some_and(|e| matches!(e, rustls::Error::InvalidMessage(_)));
        if plain {
            TlsHandshakeError::NotTls(e)
        } else {
            TlsHandshakeError::Failed(e)
        }
    })?;
    Ok(link)
}

/// The socket as `std::io`'s `Read`/`Write` for rustls, within one poll: not ready is
/// `WouldBlock`, and the poll's waker is registered for the direction that was not.
struct SockIo<'a, 'b> {
    sock: &'a SharedStream,
    cx: &'a mut Context<'b>,
}

impl Read for SockIo<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.sock.poll_read_buf(self.cx, buf) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl Write for SockIo<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.sock.poll_write_buf(self.cx, buf) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsLink {
    fn new(sock: Arc<SharedStream>, tls: rustls::Connection) -> TlsLink {
        TlsLink {
            sock,
            tls: Mutex::new(tls),
        }
    }

    fn state(&self) -> MutexGuard<'_, rustls::Connection> {
        self.tls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the TLS handshake to its end (one process: module docs).
    async fn handshake(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut tls = self.state();
            loop {
                ready!(self.flush(&mut tls, cx))?;
                if !tls.is_handshaking() {
                    return Poll::Ready(Ok(()));
                }
                match tls.read_tls(&mut SockIo {
                    sock: &self.sock,
                    cx,
                }) {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                    Ok(_) => {
                        if let Err(e) = tls.process_new_packets() {
                            // The alert that says why, if the socket takes it now.
                            let _ = self.flush(&mut tls, cx);
                            return Poll::Ready(Err(tls_error(e)));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
        })
        .await
    }

    /// Writes the records waiting in the TLS state to the socket.
    fn flush(&self, tls: &mut rustls::Connection, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while tls.wants_write() {
            match tls.write_tls(&mut SockIo {
                sock: &self.sock,
                cx,
            }) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// The reader's read: plaintext already decrypted, else more records from the
    /// socket. Never writes (module docs). `Ok(0)`: the peer closed, with or without
    /// TLS's `close_notify` (OTP's nodes close without it).
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut tls = self.state();
        loop {
            match tls.reader().read(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Poll::Ready(Ok(0)),
                Err(e) => return Poll::Ready(Err(e)),
            }
            match tls.read_tls(&mut SockIo {
                sock: &self.sock,
                cx,
            }) {
                Ok(0) => {
                    // The TCP stream ended: the plaintext left, then the end.
                    tls.process_new_packets().map_err(tls_error)?;
                    return match tls.reader().read(buf) {
                        Ok(n) => Poll::Ready(Ok(n)),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Ready(Ok(0)),
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Poll::Ready(Ok(0)),
                        Err(e) => Poll::Ready(Err(e)),
                    };
                }
                Ok(_) => {
                    tls.process_new_packets().map_err(tls_error)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Whether records wait for the writer (module docs).
    pub(crate) fn wants_write(&self) -> bool {
        self.state().wants_write()
    }

    /// The writer's write: `buf` encrypted, and everything flushed.
    pub(crate) async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        let mut rest = buf;
        poll_fn(|cx| {
            let mut tls = self.state();
            loop {
                ready!(self.flush(&mut tls, cx))?;
                if rest.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                // Takes what fits under the TLS state's buffer limit; the flush
                // above then makes room.
                let n = tls.writer().write(rest)?;
                rest = &rest[n..];
            }
        })
        .await
    }

    /// `futures-io`'s write, for the distribution handshake.
    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut tls = self.state();
        ready!(self.flush(&mut tls, cx))?;
        let n = tls.writer().write(buf)?;
        // Out now if the socket takes it; else the next write or flush sends it.
        if let Poll::Ready(Err(e)) = self.flush(&mut tls, cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    /// `futures-io`'s flush, for the distribution handshake.
    pub(crate) fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut tls = self.state();
        self.flush(&mut tls, cx)
    }

    /// Closes the TCP connection underneath (no `close_notify`: the writer may be in
    /// the middle of a record, and OTP's nodes close without one too).
    pub(crate) fn shutdown(&self) -> io::Result<()> {
        self.sock.shutdown(std::net::Shutdown::Both)
    }
}
