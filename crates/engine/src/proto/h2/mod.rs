//! HTTP/2 through hyper's connection API: h2c with prior knowledge for `http://`, ALPN `h2` for
//! `https://`. Each connection slot keeps one stream in flight, on a connection of its own or
//! one it shares (`--connections`). A gRPC answer is read for its status and its messages
//! (counted as they complete, the first one timed, for streaming calls).

mod messages;
mod session;

pub use session::session;

use crate::proto::body::CallBody;
use crate::proto::events::Events;
use crate::proto::reply::{io_kind, Call, Reply};
use crate::proto::session::Tally;
use http_body_util::BodyExt;
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use messages::Messages;
use stats::ErrorKind;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use workload::capture::{Budget, Captured};

/// One HTTP/2 connection; its driver runs as a task on the worker's runtime. Clones are
/// handles on the same connection (each request is a stream of its own).
pub struct H2Conn {
    send: SendRequest<CallBody>,
    /// This handle's last answer, when it was read as events.
    pub(crate) events: Option<Box<Events>>,
}

/// Another handle on the same connection, with no answer of its own yet.
impl Clone for H2Conn {
    fn clone(&self) -> H2Conn {
        H2Conn {
            send: self.send.clone(),
            events: None,
        }
    }
}

impl H2Conn {
    /// Performs the HTTP/2 handshake over an established transport.
    pub async fn handshake<S>(io: S) -> Result<H2Conn, ErrorKind>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .map_err(|e| hyper_kind(&e))?;
        tokio::spawn(async move {
            // The driver ends when the connection does; errors surface on the next request.
            let _ = conn.await;
        });
        Ok(H2Conn { send, events: None })
    }

    /// Sends one request and reads the whole response body, keeping it when `capture` is set.
    /// `Err(Unprocessed)` when the server never processed the request (the connection was
    /// closing, a GOAWAY named a lower last stream, or REFUSED_STREAM): it may be sent again.
    pub async fn roundtrip(
        &mut self,
        req: http::Request<CallBody>,
        capture: Option<&Arc<Budget>>,
        max_message: usize,
        events: crate::proto::events::EventRule,
        tally: Option<(Tally<'_>, usize)>,
    ) -> Result<Result<(Reply, Option<Captured>), ErrorKind>, Unprocessed> {
        let grpc = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        // A connection that cannot take a request (closing or closed) never saw this one.
        if self.send.ready().await.is_err() {
            return Err(Unprocessed);
        }
        // A held stream's silence counts from the send until its head comes.
        let sent = match events.idle.filter(|_| events.hold) {
            Some(d) => match tokio::time::timeout(d, self.send.send_request(req)).await {
                Ok(sent) => sent,
                Err(_) => return Ok(Err(ErrorKind::Timeout)),
            },
            None => self.send.send_request(req).await,
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) if unprocessed(&e) => return Err(Unprocessed),
            Err(e) => return Ok(reset_call(&e, grpc).ok_or_else(|| hyper_kind(&e))),
        };
        let grpc = grpc.then_some(max_message);
        let (outcome, events) = read_response(resp, capture, grpc, events, tally).await;
        self.events = events;
        Ok(outcome)
    }
}

/// The server never processed the request; sending it again is safe (RFC 9113 §8.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unprocessed;

/// Whether `e` says the request never reached the server's processing: the connection was no
/// longer accepting requests, the server's GOAWAY excluded the stream, or it refused it.
fn unprocessed(e: &hyper::Error) -> bool {
    if e.is_canceled() {
        return true;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(h2e) = s.downcast_ref::<h2::Error>() {
            return (h2e.is_go_away() && h2e.is_remote())
                || h2e.reason() == Some(h2::Reason::REFUSED_STREAM);
        }
        src = s.source();
    }
    false
}

/// Reads a response's body, counting it and keeping it when `capture` is set. For a gRPC
/// call (`grpc`: the largest message it may carry) the status code comes from `grpc-status`:
/// in the trailers, or in the headers of a trailers-only answer; an answer whose messages are
/// broken fails as a gRPC client fails it, whatever status it claims.
async fn read_response(
    resp: http::Response<hyper::body::Incoming>,
    capture: Option<&Arc<Budget>>,
    grpc: Option<usize>,
    rule: crate::proto::events::EventRule,
    tally: Option<(Tally<'_>, usize)>,
) -> (
    Result<(Reply, Option<Captured>), ErrorKind>,
    Option<Box<Events>>,
) {
    let media = resp.headers().get(http::header::CONTENT_TYPE);
    let said = media.is_some_and(|m| crate::proto::events::is_event_stream(m.as_bytes()));
    let encoded = resp
        .headers()
        .get(http::header::CONTENT_ENCODING)
        .is_some_and(|v| crate::proto::events::is_encoded(v.as_bytes()));
    let mut events = rule.events_for(said, encoded, std::time::Instant::now());
    let outcome = read_body(resp, capture, grpc, &mut events, rule.idle, tally).await;
    (outcome, events)
}

/// The body's next frame; a streamed answer that sends nothing for `idle` is a `timeout`.
async fn next_frame(
    body: &mut hyper::body::Incoming,
    idle: Option<std::time::Duration>,
) -> Result<Option<Result<hyper::body::Frame<bytes::Bytes>, hyper::Error>>, ErrorKind> {
    match idle {
        Some(d) => tokio::time::timeout(d, body.frame())
            .await
            .map_err(|_| ErrorKind::Timeout),
        None => Ok(body.frame().await),
    }
}

async fn read_body(
    resp: http::Response<hyper::body::Incoming>,
    capture: Option<&Arc<Budget>>,
    grpc: Option<usize>,
    events: &mut Option<Box<Events>>,
    idle: Option<std::time::Duration>,
    tally: Option<(Tally<'_>, usize)>,
) -> Result<(Reply, Option<Captured>), ErrorKind> {
    let status = resp.status().as_u16();
    let mut grpc_status: Option<Vec<u8>> = resp
        .headers()
        .get("grpc-status")
        .map(|v| v.as_bytes().to_vec());
    let mut kept = capture.map(|budget| {
        let mut c = Captured::new(budget.clone());
        c.headers = model::header_pairs(resp.headers());
        c
    });
    let encoded = resp
        .headers()
        .get("grpc-encoding")
        .is_some_and(|v| v.as_bytes() != b"identity");
    let mut messages = Messages::new(grpc.unwrap_or(usize::MAX), encoded);
    let mut body = resp.into_body();
    let mut bytes_in = 0u64;
    while let Some(frame) = next_frame(&mut body, idle.filter(|_| events.is_some())).await? {
        let frame = match frame {
            Ok(f) => f,
            Err(e) => return reset_call(&e, grpc.is_some()).ok_or_else(|| hyper_kind(&e)),
        };
        if let Some(d) = frame.data_ref() {
            bytes_in += d.len() as u64;
            if let Some(e) = events.as_mut() {
                let fed = e.feed(d, std::time::Instant::now());
                if let Some((t, request)) = &tally {
                    t.drain(*request, e);
                }
                fed.map_err(|_| ErrorKind::Protocol)?;
            }
            if grpc.is_some() {
                messages.feed(d);
            }
            if let Some(k) = kept.as_mut() {
                k.keep(d);
            }
        } else if let Some(t) = frame.trailers_ref() {
            if let Some(v) = t.get("grpc-status") {
                grpc_status = Some(v.as_bytes().to_vec());
            }
        }
    }
    let reply = Reply {
        status,
        bytes_in,
        keep_alive: true,
        stray: false,
        call: grpc.map(|_| Call {
            code: messages.fault().map_or_else(
                || model::grpc::status_of(status, grpc_status.as_deref()),
                |fault| fault.code(),
            ),
            messages: messages.count,
            first_message: messages.first,
        }),
        fault: None,
    };
    Ok((reply, kept))
}

/// A gRPC call (`grpc`) whose stream the server reset ends with a status, as a gRPC client
/// ends it ([`model::grpc::status_of_reset`]; CANCEL for now, which the worker turns into
/// DEADLINE_EXCEEDED once the deadline has passed), not as a protocol error: the connection
/// and its other calls are fine.
fn reset_call(e: &hyper::Error, grpc: bool) -> Option<(Reply, Option<Captured>)> {
    if !grpc {
        return None;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(h2e) = s.downcast_ref::<h2::Error>() {
            if !h2e.is_reset() || !h2e.is_remote() {
                return None;
            }
            let code = model::grpc::status_of_reset(u32::from(h2e.reason()?), false);
            return Some((Reply::call_ended(code), None));
        }
        src = s.source();
    }
    None
}

fn hyper_kind(e: &hyper::Error) -> ErrorKind {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io_kind(io);
        }
        src = s.source();
    }
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_closed() || e.is_canceled() || e.is_incomplete_message() {
        ErrorKind::Closed
    } else {
        ErrorKind::Protocol
    }
}
