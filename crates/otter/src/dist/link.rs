//! The byte stream under a connection: TCP, or TLS over TCP (`tls.rs`).
//!
//! A [`Link`] is made once the TCP connection is open (and, for TLS, its TLS
//! handshake done), before the distribution handshake, which runs over it through
//! `futures-io`'s traits. Then the connection's reader and writer share it
//! (`connection.rs`): the reader reads, the writer writes, and nobody else does
//! either; [`Link::shutdown`] may come from anywhere (the ticker, `disconnect`, the
//! node's stop) and makes the reader's next read end.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::net::SharedStream;

/// A connection's byte stream (module docs). Cloning shares it.
#[derive(Clone, Debug)]
pub(crate) enum Link {
    Tcp(Arc<SharedStream>),
    #[cfg(feature = "tls")]
    Tls(Arc<crate::dist::tls::TlsLink>),
}

impl Link {
    /// Reads what has arrived into `buf`: `Ok(0)` when the peer has closed.
    pub(crate) fn poll_read_buf(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self {
            Link::Tcp(s) => s.poll_read_buf(cx, buf),
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.poll_read(cx, buf),
        }
    }

    /// Writes all of `buf` (for TLS: encrypted, and every record flushed to the
    /// socket). The writer's only way out (module docs).
    pub(crate) async fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        match self {
            Link::Tcp(s) => s.write_all(buf).await,
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.write_all(buf).await,
        }
    }

    /// Whether the reader's last read left bytes for the peer that only the writer may
    /// send (a TLS key update's answer): the reader then asks the writer to flush.
    pub(crate) fn wants_flush(&self) -> bool {
        match self {
            Link::Tcp(_) => false,
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.wants_write(),
        }
    }

    /// Closes both directions of the TCP connection underneath.
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Link::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.shutdown(),
        };
    }

    fn poll_write(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            Link::Tcp(s) => s.poll_write_buf(cx, buf),
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.poll_write(cx, buf),
        }
    }

    #[cfg_attr(not(feature = "tls"), allow(unused_variables))]
    fn poll_flush(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            // Nothing is buffered: a write is in the kernel when it returns.
            Link::Tcp(_) => Poll::Ready(Ok(())),
            #[cfg(feature = "tls")]
            Link::Tls(t) => t.poll_flush(cx),
        }
    }
}

/// The distribution handshake reads and writes through these.
impl futures_io::AsyncRead for Link {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_buf(cx, buf)
    }
}

impl futures_io::AsyncWrite for Link {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Link::poll_write(&self, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Link::poll_flush(&self, cx)
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shutdown();
        Poll::Ready(Ok(()))
    }
}
