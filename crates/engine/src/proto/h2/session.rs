//! HTTP/2 (gRPC included) as a [`Session`] of the tokio worker: the step's request built for
//! hyper (gRPC's headers added unless the step sets them), its streamed messages paced, and a
//! request the server never processed sent again on a fresh connection.

use super::{H2Conn, Unprocessed};
use crate::net::conn::{Connector, Stream};
use crate::proto::body::{messages, CallBody};
use crate::proto::reply::{Idle, Outcome, Reply};
use crate::proto::session::{Conn, Exchange, Session, Tally};
use bytes::Bytes;
use model::Protocol;
use stats::ErrorKind;
use std::task::Context;
use std::time::Duration;
use workload::Vu;

/// How many fresh connections an unprocessed HTTP/2 request is tried on before it counts as
/// `closed`.
const RESENDS: usize = 3;

/// `timeout` as a `grpc-timeout` value: whole milliseconds, at most eight digits.
fn grpc_timeout(timeout: Duration) -> String {
    format!("{}m", timeout.as_millis().clamp(1, 99_999_999))
}

/// An HTTP/2 session over `stream` (h2c with prior knowledge, or TLS that agreed on `h2`).
pub async fn session(stream: Stream) -> Result<Conn, ErrorKind> {
    Ok(Box::new(H2Conn::handshake(stream).await?))
}

impl Session for H2Conn {
    fn share(&self) -> Option<Conn> {
        Some(Box::new(self.clone()))
    }

    fn idle(&mut self, _: &mut Context<'_>, _: Duration) -> Idle {
        // A closing connection shows on the next request, which is then sent again.
        Idle::Open
    }

    fn send<'a>(
        &'a mut self,
        connector: &'a Connector,
        vu: &'a mut Vu,
        tally: Tally<'a>,
    ) -> Exchange<'a> {
        Box::pin(self.exchange(connector, vu, tally))
    }

    fn events(&mut self) -> Option<Box<crate::proto::events::Events>> {
        self.events.take()
    }

    fn at_deadline(&self, connector: &Connector, mut outcome: Outcome, passed: bool) -> Outcome {
        match connector.protocol {
            Protocol::Grpc => past_deadline(&mut outcome, passed),
            Protocol::Http1 | Protocol::Http2 | Protocol::Ws | Protocol::Http3 => {}
        }
        outcome
    }
}

impl H2Conn {
    async fn exchange(
        &mut self,
        connector: &Connector,
        vu: &mut Vu,
        tally: Tally<'_>,
    ) -> (Outcome, u64) {
        let step = &connector.workload.requests[vu.current];
        let capture = connector.capture_for(step);
        let (path, values, body) = match vu.render_parts(&connector.workload) {
            Ok(parts) => parts,
            Err(r) => {
                vu.refused = Some(r);
                return (Err(ErrorKind::InvalidRequest), 0);
            }
        };
        let len = body.len() as u64;
        let uri = format!("{}://{}{}", connector.scheme, connector.authority, path);
        let body = Bytes::from(body);
        let paced = step
            .message
            .as_ref()
            .and_then(|m| m.stream)
            .filter(|s| s.client && !s.interval.is_zero())
            .map(|s| s.interval);
        // gRPC calls say their deadline, and that they are gRPC, unless the step says so.
        let deadline = match connector.protocol {
            Protocol::Grpc => Some(grpc_timeout(connector.timeout)),
            Protocol::Http1 | Protocol::Http2 | Protocol::Ws | Protocol::Http3 => None,
        };
        // A held stream resumes where the last one confirmed.
        let last_id = connector.resumes(vu).then(|| vu.resume.last_id()).flatten();
        let build = || {
            let mut req = http::Request::builder()
                .method(step.method.as_str())
                .uri(uri.as_str());
            for ((name, _), value) in step.headers.iter().zip(&values) {
                req = req.header(name.as_str(), value.as_slice());
            }
            if let Some(id) = last_id {
                req = req.header("last-event-id", id);
            }
            if let Some(deadline) = &deadline {
                for (name, value) in [
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    ("grpc-timeout", deadline.as_str()),
                ] {
                    if !step
                        .headers
                        .iter()
                        .any(|(n, _)| n.eq_ignore_ascii_case(name))
                    {
                        req = req.header(name, value);
                    }
                }
            }
            req.body(match paced {
                Some(interval) => CallBody::paced(messages(&body), interval),
                None => CallBody::full(body.clone()),
            })
        };
        // A request the server never processed (it was rotating the connection: GOAWAY,
        // REFUSED_STREAM) is sent again, once per fresh connection, and counted once.
        for _ in 0..RESENDS {
            let Ok(req) = build() else {
                return (Err(ErrorKind::Protocol), 0);
            };
            let (max, events) = (connector.max_message, connector.events);
            match self
                .roundtrip(req, capture, max, events, Some((tally, vu.current)))
                .await
            {
                Ok(outcome) => return (outcome, len),
                Err(Unprocessed) => match self.reopen(connector).await {
                    Ok(()) => {}
                    Err(kind) => return (Err(kind), 0),
                },
            }
        }
        (Err(ErrorKind::Closed), 0)
    }

    /// Replaces this handle's connection with a fresh one; a server that now answers TLS's
    /// ALPN with HTTP/1.1 ends the request as `closed`.
    async fn reopen(&mut self, connector: &Connector) -> Result<(), ErrorKind> {
        // Boxed: rare, and large (a TLS handshake).
        let (stream, _) = Box::pin(connector.open()).await.map_err(|u| u.kind)?;
        if stream.alpn_h2() == Some(false) {
            return Err(ErrorKind::Closed);
        }
        *self = Box::pin(H2Conn::handshake(stream)).await?;
        Ok(())
    }
}

/// A gRPC call whose deadline passed is DEADLINE_EXCEEDED, whoever noticed first: brink (its
/// stream is cancelled, the connection and its other calls carry on) or the server (a
/// CANCEL reset after the deadline, as grpc-go reads it). Trailers saying so count as they are.
fn past_deadline(result: &mut Outcome, passed: bool) {
    let ended = match result {
        Err(ErrorKind::Timeout) => true,
        Ok((reply, _)) => {
            passed
                && reply
                    .call
                    .is_some_and(|g| g.code == model::grpc::CANCELLED && reply.bytes_in == 0)
        }
        Err(_) => false,
    };
    if ended {
        *result = Ok((Reply::call_ended(model::grpc::DEADLINE_EXCEEDED), None));
    }
}
