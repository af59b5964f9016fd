//! The HTTP/1.1 path: the request is written from bytes serialised once, the response is read
//! into one reusable per-connection buffer and handed to the sans-I/O [`reader::Reader`], which
//! parses the head in place and skips the body while counting bytes. Nothing is allocated per
//! request. This async client serves TLS connections ([`session`]); plain TCP uses the epoll loop
//! (`worker::epoll`), which drives the same reader.

mod fields;
pub mod parse;
pub mod reader;
#[cfg(test)]
mod reader_cuts;
mod scan;
mod session;

pub use session::session;

use crate::proto::reply::{io_kind, Idle, Reply};
use crate::proto::session::Tally;
use reader::{ReadBuf, Reader};
use stats::ErrorKind;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use workload::capture::{Budget, Captured};

/// One HTTP/1.1 connection over any async transport.
pub struct H1Conn<S> {
    io: S,
    buf: ReadBuf,
    /// The last answer's events, when it was read as events.
    events: Option<Box<crate::proto::events::Events>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> H1Conn<S> {
    pub fn new(io: S) -> Self {
        H1Conn {
            io,
            buf: ReadBuf::default(),
            events: None,
        }
    }

    /// Whether this kept-alive connection can take a request: polls the read side once,
    /// without waiting. Bytes there were sent with no request outstanding.
    pub fn poll_idle(&mut self, cx: &mut Context<'_>) -> Idle {
        let mut scratch = [0u8; 64];
        let mut rb = tokio::io::ReadBuf::new(&mut scratch);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Pending => Idle::Open,
            Poll::Ready(Ok(())) if !reader::is_stray(rb.filled()) => Idle::Closed,
            Poll::Ready(Ok(())) => Idle::Stray,
            Poll::Ready(Err(_)) => Idle::Closed,
        }
    }

    /// Writes `req` and reads one full response, keeping it when `capture` is set. Reading
    /// goes on while the request is written, so an answer that comes before the request is all
    /// out (401/413 during an upload) completes the attempt at once; the rest is then never
    /// sent and the connection is not reused. Events read are recorded in `tally` (for
    /// request `.1`) as they come.
    pub async fn roundtrip(
        &mut self,
        req: &[u8],
        head_request: bool,
        capture: Option<&Arc<Budget>>,
        rule: crate::proto::events::EventRule,
        tally: Option<(Tally<'_>, usize)>,
    ) -> Result<(Reply, Option<Captured>), ErrorKind> {
        let mut reader = match capture {
            Some(budget) => Reader::capturing(head_request, budget.clone()),
            None => Reader::new(head_request),
        }
        .with_events(rule);
        self.buf.filled = 0;
        let (io, buf, events) = (&mut self.io, &mut self.buf, &mut self.events);
        let mut written = 0;
        let mut flushed = false;
        let mut idle = rule.idle.map(|d| (d, Box::pin(tokio::time::sleep(d))));
        // A held stream's silence counts from the send until its head comes.
        let since = rule.hold.then(std::time::Instant::now);
        poll_fn(|cx| {
            let read = poll_response(io, cx, buf, &mut reader);
            if let (Some((t, request)), Some(e)) = (&tally, reader.events()) {
                t.drain(*request, e);
            }
            if let Poll::Ready(r) = read {
                *events = reader.take_events();
                return Poll::Ready(r.map(|mut reply| {
                    reply.keep_alive &= written == req.len();
                    (reply, reader.take_capture())
                }));
            }
            let quiet_since = reader.events_ref().map(|e| e.last_read).or(since);
            if let (Some((d, sleep)), Some(last)) = (idle.as_mut(), quiet_since) {
                // A streamed answer that went quiet: its timer counts from its last bytes.
                let due = tokio::time::Instant::from_std(last + *d);
                if sleep.deadline() != due {
                    sleep.as_mut().reset(due);
                }
                if std::future::Future::poll(sleep.as_mut(), cx).is_ready() {
                    *events = reader.take_events();
                    return Poll::Ready(Err(ErrorKind::Timeout));
                }
            }
            while written < req.len() {
                match Pin::new(&mut *io).poll_write(cx, &req[written..]) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(ErrorKind::Closed)),
                    Poll::Ready(Ok(n)) => written += n,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(io_kind(&e))),
                    Poll::Pending => return Poll::Pending,
                }
            }
            if !flushed {
                match Pin::new(&mut *io).poll_flush(cx) {
                    Poll::Ready(Ok(())) => flushed = true,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(io_kind(&e))),
                    Poll::Pending => return Poll::Pending,
                }
            }
            // Everything is out and the read side registered the waker.
            Poll::Pending
        })
        .await
    }
}

/// Reads whatever is available into `buf` and feeds `reader`: `Ready` once the response is
/// complete or the connection failed; `Pending` (waker registered) when nothing more is there.
fn poll_response<S: AsyncRead + Unpin>(
    io: &mut S,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf,
    reader: &mut Reader,
) -> Poll<Result<Reply, ErrorKind>> {
    loop {
        let mut rb = tokio::io::ReadBuf::new(buf.spare());
        match Pin::new(&mut *io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                let done = if n == 0 {
                    Some(reader.eof())
                } else {
                    reader.advance(buf, n).transpose()
                };
                if let Some(r) = done {
                    return Poll::Ready(r);
                }
            }
            Poll::Ready(Err(e)) => return Poll::Ready(Err(io_kind(&e))),
            Poll::Pending => return Poll::Pending,
        }
    }
}
