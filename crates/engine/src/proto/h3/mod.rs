//! HTTP/3 over QUIC (RFC 9114), through quinn and the h3 crates: `--http3` on an `https://`
//! URL. Each worker thread has one QUIC endpoint (one UDP socket) that all its connections
//! share; each connection slot keeps one request in flight as a stream, on a connection of its
//! own or one it shares (`--connections`), as HTTP/2 does.

mod session;

pub use session::open;

use crate::proto::events::{EventRule, Events};
use crate::proto::reply::Reply;
use crate::proto::session::Tally;
use bytes::{Buf, Bytes};
use stats::ErrorKind;
use std::sync::Arc;
use workload::capture::{Budget, Captured};

/// One HTTP/3 connection; its driver runs as a task on the worker's runtime. Clones are
/// handles on the same connection (each request is a stream of its own).
pub struct H3Conn {
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    /// This handle's last answer, when it was read as events.
    events: Option<Box<Events>>,
}

impl Clone for H3Conn {
    fn clone(&self) -> H3Conn {
        H3Conn {
            send: self.send.clone(),
            events: None,
        }
    }
}

impl H3Conn {
    /// Sends one request (its body, if any, then the end of its stream) and reads the whole
    /// answer, keeping it when `capture` is set and reading it as events when `rule` says.
    async fn roundtrip(
        &mut self,
        req: http::Request<()>,
        body: Bytes,
        capture: Option<&Arc<Budget>>,
        rule: EventRule,
        tally: (Tally<'_>, usize),
    ) -> Result<Result<(Reply, Option<Captured>), ErrorKind>, Unprocessed> {
        let sent = async {
            let mut stream = self.send.send_request(req).await?;
            if !body.is_empty() {
                stream.send_data(body).await?;
            }
            stream.finish().await?;
            let resp = stream.recv_response().await?;
            Ok::<_, h3::error::StreamError>((stream, resp))
        };
        let (mut stream, resp) = match sent.await {
            Ok(pair) => pair,
            Err(e) if unprocessed(&e) => return Err(Unprocessed),
            Err(e) => return Ok(Err(stream_kind(&e))),
        };
        Ok(self.read(&mut stream, resp, capture, rule, tally).await)
    }

    /// Reads an answer's body: counted, kept when `capture` is set, read as events when
    /// `rule` says.
    async fn read(
        &mut self,
        stream: &mut h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
        resp: http::Response<()>,
        capture: Option<&Arc<Budget>>,
        rule: EventRule,
        tally: (Tally<'_>, usize),
    ) -> Result<(Reply, Option<Captured>), ErrorKind> {
        let media = resp.headers().get(http::header::CONTENT_TYPE);
        let said = media.is_some_and(|m| crate::proto::events::is_event_stream(m.as_bytes()));
        self.events = rule.events_for(said, std::time::Instant::now());
        let mut kept = capture.map(|budget| {
            let mut c = Captured::new(budget.clone());
            c.headers = model::header_pairs(resp.headers());
            c
        });
        let idle = rule.idle.filter(|_| self.events.is_some());
        let mut bytes_in = 0u64;
        loop {
            let next = match idle {
                Some(d) => tokio::time::timeout(d, stream.recv_data())
                    .await
                    .map_err(|_| ErrorKind::Timeout)?,
                None => stream.recv_data().await,
            };
            let Some(mut chunk) = next.map_err(|e| stream_kind(&e))? else {
                break;
            };
            while chunk.has_remaining() {
                let d = chunk.chunk();
                let n = d.len();
                bytes_in += n as u64;
                if let Some(e) = self.events.as_mut() {
                    let fed = e.feed(d, std::time::Instant::now());
                    tally.0.drain(tally.1, e);
                    fed.map_err(|_| ErrorKind::Protocol)?;
                }
                if let Some(k) = kept.as_mut() {
                    k.keep(d);
                }
                chunk.advance(n);
            }
        }
        let reply = Reply {
            status: resp.status().as_u16(),
            bytes_in,
            keep_alive: true,
            stray: false,
            call: None,
            fault: None,
        };
        Ok((reply, kept))
    }
}

/// The server never processed the request; sending it again is safe (RFC 9114 §4.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unprocessed;

/// Whether `e` says the request never reached the server's processing: it rejected the
/// stream (`H3_REQUEST_REJECTED`), or its GOAWAY had closed the connection to new requests.
fn unprocessed(e: &h3::error::StreamError) -> bool {
    use h3::error::{Code, StreamError};
    match e {
        StreamError::RemoteTerminate { code, .. } => *code == Code::H3_REQUEST_REJECTED,
        StreamError::RemoteClosing { .. } => true,
        _ => false,
    }
}

/// What a failed request stream counts as: the connection's end (closed by the peer, timed
/// out, reset) or a broken exchange.
fn stream_kind(e: &h3::error::StreamError) -> ErrorKind {
    use h3::error::StreamError;
    match e {
        StreamError::ConnectionError { 0: c, .. } => connection_kind(c),
        StreamError::RemoteTerminate { .. } => ErrorKind::Reset,
        _ => ErrorKind::Protocol,
    }
}

/// What a connection's end counts as: its idle timeout a `timeout`, anything else (the
/// peer's CONNECTION_CLOSE, a stateless reset, brink's own close) `closed`.
fn connection_kind(e: &h3::error::ConnectionError) -> ErrorKind {
    use h3::error::ConnectionError;
    use h3::quic::ConnectionErrorIncoming;
    match e {
        ConnectionError::Timeout { .. }
        | ConnectionError::Remote {
            0: ConnectionErrorIncoming::Timeout,
            ..
        } => ErrorKind::Timeout,
        _ => ErrorKind::Closed,
    }
}
