//! hyper's IO traits over otter's [`TcpStream`], through its `futures_io` traits, so
//! hyper runs without tokio. hyper-util's only adapter (`TokioIo`) wraps tokio's traits,
//! hence this one.
//!
//! A read goes through a stack buffer of [`CHUNK`] bytes, copied into hyper's: filling
//! hyper's uninitialised buffer in place would need `unsafe`, which this crate keeps to
//! its lock-free modules. The copy is a page's requests, not a data path.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_io::{AsyncRead, AsyncWrite};
use hyper::rt::{Read, ReadBufCursor, Write};

use crate::net::TcpStream;

/// The most bytes one read takes.
const CHUNK: usize = 4096;

/// An otter stream as hyper's IO.
#[derive(Debug)]
pub(super) struct Io(pub(super) TcpStream);

impl Read for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let mut chunk = [0u8; CHUNK];
        let want = buf.remaining().min(CHUNK);
        let n = ready!(Pin::new(&mut self.get_mut().0).poll_read(cx, &mut chunk[..want]))?;
        buf.put_slice(&chunk[..n]);
        Poll::Ready(Ok(()))
    }
}

impl Write for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_close(cx)
    }
}
