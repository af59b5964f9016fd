//! Request bodies on the HTTP/2 path: the bytes at once (HTTP, unary gRPC, client streaming
//! without a pause), or a streaming call's messages one after another with `--stream-interval`
//! between them, the stream half-closed after the last. Timers are tokio's, so a paced body
//! costs nothing while it waits.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// A request body of one or more chunks.
pub struct CallBody {
    chunks: VecDeque<Bytes>,
    interval: Duration,
    wait: Option<Pin<Box<Sleep>>>,
}

impl CallBody {
    /// `bytes`, all at once.
    pub fn full(bytes: Bytes) -> CallBody {
        CallBody::paced(vec![bytes], Duration::ZERO)
    }

    /// `chunks` in order, `interval` apart.
    pub fn paced(chunks: Vec<Bytes>, interval: Duration) -> CallBody {
        CallBody {
            chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
            interval,
            wait: None,
        }
    }
}

impl Body for CallBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(wait) = this.wait.as_mut() {
            if wait.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.wait = None;
        }
        let Some(chunk) = this.chunks.pop_front() else {
            return Poll::Ready(None);
        };
        if !this.chunks.is_empty() && !this.interval.is_zero() {
            this.wait = Some(Box::pin(tokio::time::sleep(this.interval)));
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.chunks.iter().map(|c| c.len() as u64).sum())
    }
}

/// `body` (framed gRPC messages back to back) cut into one chunk per message.
pub fn messages(body: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 5 <= body.len() {
        let len = u32::from_be_bytes([body[at + 1], body[at + 2], body[at + 3], body[at + 4]]);
        let end = (at + 5 + len as usize).min(body.len());
        out.push(body.slice(at..end));
        at = end;
    }
    if at < body.len() {
        out.push(body.slice(at..));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn messages_are_cut_at_their_frames_and_sent_apart() {
        let body = Bytes::from_static(&[
            0, 0, 0, 0, 2, b'a', b'b', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'c',
        ]);
        let parts = messages(&body);
        assert_eq!(parts.len(), 3);
        assert_eq!(&parts[0][..], &[0, 0, 0, 0, 2, b'a', b'b']);
        assert_eq!(&parts[2][..], &[0, 0, 0, 0, 1, b'c']);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let started = std::time::Instant::now();
        let collected = rt.block_on(async {
            CallBody::paced(parts, Duration::from_millis(30))
                .collect()
                .await
                .map(|c| c.to_bytes())
        });
        assert_eq!(collected.unwrap(), body);
        // Two pauses between three messages.
        assert!(started.elapsed() >= Duration::from_millis(60));
    }
}
