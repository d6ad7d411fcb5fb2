//! The processes that move a connection's frames once it is up: the writer, the
//! ticker and the reader (`connection.rs`'s module docs).

use std::future::poll_fn;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Connection, MAX_CONTROL, MAX_FRAME, Out};
use crate::dist::connect_error::{Closed, ConnectError};
use crate::dist::control::Control;
use crate::dist::etf::{self, Term};
use crate::dist::link::Link;
use crate::dist::node::NodeShared;
use crate::process::Context;

/// The writer process (module docs).
pub(super) async fn run_writer(mut cx: Context<Out>, conn: Weak<Connection>) {
    // Frames queued during the handshake stay in the mailbox, in order.
    let Out::Socket(socket) = cx
        .recv_match(|m| matches!(m, Out::Socket(_) | Out::Close))
        .await
    else {
        return;
    };
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH);
    let mut wrote_since_tick = false;
    loop {
        match cx.recv().await {
            Out::Frame(f) => {
                let conn = conn.upgrade();
                let (failed, close) =
                    write_frames(&mut cx, &socket, &mut buf, f, conn.as_deref()).await;
                if failed || close {
                    socket.shutdown();
                    return;
                }
                wrote_since_tick = true;
            }
            Out::Tick => {
                if !wrote_since_tick && socket.write_all(&[0, 0, 0, 0]).await.is_err() {
                    socket.shutdown();
                    return;
                }
                wrote_since_tick = false;
            }
            Out::Close => {
                socket.shutdown();
                return;
            }
            Out::Flush => {
                if socket.write_all(&[]).await.is_err() {
                    socket.shutdown();
                    return;
                }
            }
            Out::Socket(_) => {}
        }
    }
}

/// The writer's batching: small frames go out together, copied into `buf` until it
/// holds [`BATCH`] bytes or the mailbox has no more frames; a frame of [`BATCH`] bytes
/// or more is written from its own buffer (after what was batched before it), never
/// copied. After each write, the bytes written come off the connection's queue
/// ([`Connection::written`]: the busy peer's senders wake as it drains). Returns
/// whether a write failed and whether a `Close` was taken on the way.
async fn write_frames(
    cx: &mut Context<Out>,
    socket: &Link,
    buf: &mut Vec<u8>,
    first: Vec<u8>,
    conn: Option<&Connection>,
) -> (bool, bool) {
    let written = |n: usize| {
        if let Some(c) = conn {
            c.written(n);
        }
    };
    let mut close = false;
    let mut next = Some(first);
    let mut frames = 0u64;
    while let Some(f) = next.take() {
        frames += 1;
        if f.len() >= BATCH {
            if !buf.is_empty() {
                let failed = socket.write_all(buf).await.is_err();
                written(buf.len());
                buf.clear();
                if failed {
                    return (true, close);
                }
            }
            let failed = socket.write_all(&f).await.is_err();
            written(f.len());
            if failed {
                return (true, close);
            }
        } else {
            buf.extend_from_slice(&f);
        }
        while next.is_none() && buf.len() < BATCH {
            match cx.try_recv() {
                Some(Out::Frame(f)) => next = Some(f),
                Some(Out::Close) => {
                    close = true;
                    break;
                }
                Some(_) => {}
                None => break,
            }
        }
        if close {
            break;
        }
    }
    let mut failed = false;
    if !buf.is_empty() {
        failed = socket.write_all(buf).await.is_err();
        written(buf.len());
        buf.clear();
    }
    if let Some(c) = conn {
        c.took_frames(frames);
    }
    (failed, close)
}

/// The bytes the writer batches into one write (see [`write_frames`]).
const BATCH: usize = 64 << 10;

/// The ticker process (module docs): every quarter of `net_ticktime`, a tick for the
/// writer to send if it is idle, and the silence check.
pub(super) async fn run_ticker(mut cx: Context<()>, conn: Weak<Connection>, quarter: Duration) {
    let _interval = cx.send_interval(cx.pid(), (), quarter);
    let mut last = u64::MAX;
    let mut silent = 0;
    loop {
        cx.recv().await;
        let Some(c) = conn.upgrade() else { return };
        if c.is_gone() {
            return;
        }
        let r = c.received.load(Ordering::Relaxed);
        if r == last {
            silent += 1;
            if silent >= 4 {
                c.close(Closed::TickTimeout);
                return;
            }
        } else {
            silent = 0;
            last = r;
        }
        c.writer.send(Out::Tick);
    }
}

/// The reader loop (module docs), from the end of the handshake to the connection's
/// end. However it ends (an error, the socket's close, or a panic in user code it ran),
/// the connection goes down.
pub(super) async fn run_reader(node: Arc<NodeShared>, conn: Arc<Connection>, socket: Link) {
    struct Down(Arc<NodeShared>, Arc<Connection>, Option<Closed>);
    impl Drop for Down {
        fn drop(&mut self) {
            // A close by this node ends the reads too: its reason comes first.
            let why = self.1.closed_here().or_else(|| self.2.take());
            let why = why.unwrap_or(Closed::ReaderFailed);
            self.1.down(&self.0, ConnectError::Closed(why));
        }
    }
    if !conn.set_up(&node, socket.clone()) {
        socket.shutdown();
        // Refused because the node stopped after its close-all pass: this connection,
        // inserted since, goes down too (its waiters would wait for ever).
        if node.stopped.load(Ordering::Acquire) {
            conn.down(&node, ConnectError::Closed(Closed::NodeStopped));
        }
        return;
    }
    let mut guard = Down(node.clone(), conn.clone(), None);
    const CHUNK: usize = 64 << 10;
    let mut buf = vec![0u8; CHUNK];
    let (mut start, mut end) = (0usize, 0usize);
    // Frames no larger than CHUNK read since the buffer last held a larger one.
    let mut small_frames = 0u32;
    let why = 'read: loop {
        // Every whole frame in the buffer.
        while end - start >= 4 {
            let mut len = [0u8; 4];
            len.copy_from_slice(&buf[start..start + 4]);
            let len = u32::from_be_bytes(len) as usize;
            if len > MAX_FRAME {
                break 'read Closed::BadInput(format!("a frame of {len} bytes"));
            }
            if end - start < 4 + len {
                break;
            }
            conn.received.fetch_add(1, Ordering::Relaxed);
            conn.read_frame(4 + len);
            small_frames = if len > CHUNK {
                0
            } else {
                small_frames.saturating_add(1)
            };
            if len > 0
                && let Err(e) = handle_frame(&node, &conn, &buf[start + 4..start + 4 + len])
            {
                break 'read Closed::BadInput(e);
            }
            start += 4 + len;
        }
        if start == end {
            (start, end) = (0, 0);
            if buf.len() > CHUNK && small_frames >= SMALL_FRAMES_TO_SHRINK {
                // Large frames have stopped coming: give their memory back. While
                // they come, the buffer is kept: growing it again for each one would
                // cost a copy of what has arrived and a fill of what has not.
                buf.truncate(CHUNK);
                buf.shrink_to_fit();
            }
        } else if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                (start, end) = (0, end - start);
            } else {
                // A frame longer than the buffer: grow as its bytes arrive, never by
                // what its length field claims.
                buf.resize(buf.len() * 2, 0);
            }
        }
        match poll_fn(|cx| socket.poll_read_buf(cx, &mut buf[end..])).await {
            Ok(0) => break Closed::ByPeer,
            Ok(n) => end += n,
            Err(e) => break Closed::Io(Arc::new(e)),
        }
        if socket.wants_flush() {
            conn.writer.send(Out::Flush);
        }
    };
    socket.shutdown();
    guard.2 = Some(why);
}

/// How many frames of at most a read chunk in a row make the reader give back the
/// memory it took for larger ones (`run_reader`).
const SMALL_FRAMES_TO_SHRINK: u32 = 16;

/// Acts on one frame (`'p'`, control, payload). An error takes the connection down.
fn handle_frame(node: &Arc<NodeShared>, conn: &Arc<Connection>, f: &[u8]) -> Result<(), String> {
    let Some((&b'p', rest)) = f.split_first() else {
        return Err("a frame that is not a pass-through message".into());
    };
    let used = etf::skip_prefix(rest).map_err(|e| format!("control: {e}"))?;
    if used > MAX_CONTROL {
        return Err(format!("a control term of {used} bytes"));
    }
    let control = Term::decode(&rest[..used]).map_err(|e| format!("control: {e}"))?;
    let payload = &rest[used..];
    let op = match &control {
        Term::Tuple(e) => match e.first() {
            Some(Term::Int(op)) => *op,
            _ => return Err("a control message without an op".into()),
        },
        _ => return Err("a control message that is not a tuple".into()),
    };
    if Control::op_has_payload(op) {
        etf::skip_prefix(payload)
            .ok()
            .filter(|&n| n == payload.len())
            .ok_or_else(|| "a payload that is not one term".to_string())?;
    } else if !payload.is_empty() {
        return Err(format!("bytes after control message {op}"));
    }
    // The PAYLOAD_ forms carry their reason as the payload. It is one term (checked
    // above); one nested deeper than a `Term` may be is not worth the connection.
    let payload_term = if matches!(op, 24..=28) {
        Some(Term::decode(payload).unwrap_or_else(|_| Term::atom("$otter_term_too_deep")))
    } else {
        None
    };
    let c = Control::decode(&control, payload_term.as_ref()).map_err(|e| e.0)?;
    crate::dist::receive::control(node, conn, c, payload)
}
