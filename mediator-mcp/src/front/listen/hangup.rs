//! Whether a client hung up while its request waits for an answer. hyper notices a connection's
//! end only when it reads from it, and it reads nothing while a request is answered if bytes
//! wait unread behind it (a pipelined request, the line break some clients send after a body):
//! a request answered as JSON, which writes nothing until its answer, would wait for an answer
//! nobody reads. So each connection is shared between hyper, which reads and writes it, and the
//! request's [`Hangup`], which only looks at it for its end.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// How often a connection with bytes waiting unread is looked at again for its end.
const LOOKING: Duration = Duration::from_millis(200);

/// A client's connection, as hyper reads and writes it.
pub(super) struct Connection(Arc<TcpStream>);

/// Tells when the client of a request has hung up (a request extension).
#[derive(Clone)]
pub(super) struct Hangup(Arc<TcpStream>);

impl Connection {
    /// The connection, and what tells of its end.
    pub(super) fn new(stream: TcpStream) -> (Connection, Hangup) {
        let stream = Arc::new(stream);
        (Connection(stream.clone()), Hangup(stream))
    }
}

impl Hangup {
    /// Returns once the client has closed its side of the connection (or it broke).
    pub(super) async fn gone(&self) {
        loop {
            match self.0.ready(Interest::READABLE).await {
                Ok(ready) if ready.is_read_closed() => return,
                Err(_) => return,
                // Bytes wait that hyper will read after this request: readable, and it stays so
                // until it does, so the end is looked for again after a while rather than at once.
                Ok(_) => tokio::time::sleep(LOOKING).await,
            }
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(read) => {
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                // The readiness was stale, and is cleared: wait for the next.
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(bytes) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                written => return Poll::Ready(written),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        slices: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write_vectored(slices) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                written => return Poll::Ready(written),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.0).shutdown(std::net::Shutdown::Write))
    }
}
