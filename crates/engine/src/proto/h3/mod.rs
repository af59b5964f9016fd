//! HTTP/3 over QUIC (RFC 9114): `--http3` on an `https://` URL. QUIC is quinn's; HTTP/3 on
//! top of it is brink's own (`wire`, `qpack`, `answer`, `control`): a request is one stream
//! carrying a HEADERS frame brink encoded without Huffman or dynamic table, and its answer is
//! read frame by frame as QUIC delivers it, its body handed on without being kept. Each worker
//! thread has one QUIC endpoint (one UDP socket) that all its connections share; each
//! connection slot keeps one request in flight as a stream, on a connection of its own or one
//! it shares (`--connections`), as HTTP/2 does.

mod answer;
mod control;
mod early;
mod qpack;
mod session;
mod wire;

pub use session::{handshake_only, open};

use crate::proto::events::{EventRule, Events};
use crate::proto::reply::Reply;
use crate::proto::session::Tally;
use answer::{Answer, Fault};
use bytes::Bytes;
use stats::ErrorKind;
use std::rc::Rc;
use std::sync::Arc;
use workload::capture::{Budget, Captured};

/// One HTTP/3 connection. Clones are handles on the same connection (each request is a stream
/// of its own); the connection is closed when the last handle goes.
pub struct H3Conn {
    shared: Rc<Shared>,
    /// This handle's last answer, when it was read as events.
    events: Option<Box<Events>>,
    /// The codes its errors came with since the worker last asked (`kind:CODE`).
    codes: Vec<String>,
    /// Handshakes of the connections it opened to resend a request, since the worker last
    /// asked.
    opened: Vec<std::time::Duration>,
    /// What went as early data since the worker last asked.
    zero_rtt: stats::ZeroRtt,
}

impl Clone for H3Conn {
    fn clone(&self) -> H3Conn {
        H3Conn {
            shared: self.shared.clone(),
            events: None,
            codes: Vec::new(),
            opened: Vec::new(),
            zero_rtt: stats::ZeroRtt::default(),
        }
    }
}

struct Shared {
    quic: quinn::Connection,
    /// What the server's control stream said (GOAWAY) or did (broke a rule).
    state: Arc<control::State>,
    /// A connection opened with 0-RTT: where its handshake is.
    early: Option<Arc<early::Early>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let quic = self.quic.clone();
        let close = move || quic.close(quinn::VarInt::from_u32(wire::H3_NO_ERROR as u32), b"");
        // A 0-RTT connection's answers can come before the server's new session ticket (it
        // sends one once the handshake ends): closed at once, the next connection would find
        // no ticket to resume with, and only every other one would go early. It stays open a
        // few round trips in the background first (bounded), as the slot moves on.
        match (&self.early, tokio::runtime::Handle::try_current()) {
            (Some(_), Ok(rt)) => {
                let linger = (self.quic.rtt() * 4).clamp(LINGER_MIN, LINGER_MAX);
                rt.spawn(async move {
                    tokio::time::sleep(linger).await;
                    close();
                });
            }
            _ => close(),
        }
    }
}

/// How long a 0-RTT connection stays open after its last use, waiting for a session ticket.
const LINGER_MIN: std::time::Duration = std::time::Duration::from_millis(2);
const LINGER_MAX: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a request whose stream a GOAWAY named waits for a first byte before it is sent
/// again elsewhere: four round trips, within these bounds.
const GOAWAY_GRACE_MIN: std::time::Duration = std::time::Duration::from_millis(50);
const GOAWAY_GRACE_MAX: std::time::Duration = std::time::Duration::from_millis(250);

/// A request's answer: its reply and what was kept of it, or the error it ended in.
type Answered = Result<(Reply, Option<Captured>), ErrorKind>;

impl H3Conn {
    /// Sends one request (`head`: its HEADERS frame and, with a body, DATA's frame header)
    /// and reads the whole answer, keeping it when `capture` is set and reading it as events
    /// when `rule` says. `tally.2`: whether it may go as 0-RTT early data.
    async fn roundtrip(
        &mut self,
        head: Bytes,
        body: Bytes,
        capture: Option<&Arc<Budget>>,
        rule: EventRule,
        tally: (Tally<'_>, usize, bool),
    ) -> Result<Answered, Unprocessed> {
        let shared = self.shared.clone();
        if shared.state.refuses(None) {
            return Err(Unprocessed::GoingAway);
        }
        let early = match &shared.early {
            Some(e) if e.handshaking() && tally.2 => true,
            Some(e) => {
                e.settled().await;
                false
            }
            None => false,
        };
        let (mut send, recv) = match shared.quic.open_bi().await {
            Ok(pair) => pair,
            Err(e) => return self.lost(&e, None),
        };
        let id = u64::from(send.id());
        if early {
            self.zero_rtt.requests += 1;
        }
        let tally = (tally.0, tally.1);
        let sent = match send.write_all_chunks(&mut [head, body]).await {
            Ok(()) => send.finish().map_err(|_| ErrorKind::Protocol),
            // The server answered without needing the rest of the request (RFC 9114 §4.1).
            Err(quinn::WriteError::Stopped(code)) if code.into_inner() == wire::H3_NO_ERROR => {
                Ok(())
            }
            Err(quinn::WriteError::Stopped(code)) => return self.reset(code.into_inner(), id),
            Err(quinn::WriteError::ConnectionLost(e)) => return self.lost(&e, Some(id)),
            Err(quinn::WriteError::ZeroRttRejected) => return Err(self.refused_early()),
            Err(_) => Err(ErrorKind::Protocol),
        };
        if let Err(kind) = sent {
            return Ok(Err(kind));
        }
        self.read(recv, id, capture, rule, tally).await
    }

    /// Reads an answer: counted, kept when `capture` is set, read as events when `rule` says.
    async fn read(
        &mut self,
        mut recv: quinn::RecvStream,
        id: u64,
        capture: Option<&Arc<Budget>>,
        rule: EventRule,
        tally: (Tally<'_>, usize),
    ) -> Result<Answered, Unprocessed> {
        let mut answer = Answer::new(capture.is_some());
        let mut kept: Option<Captured> = None;
        let mut events: Option<Box<Events>> = None;
        let mut started = false;
        let state = self.shared.state.clone();
        // Until the first byte of its answer, a GOAWAY naming this stream ends the wait: the
        // server did not process it (RFC 9114 §5.2), and it is cancelled and sent again on a
        // fresh connection. Not at the GOAWAY's instant: a server that counts one stream
        // past its GOAWAY as its own (h3 0.0.8 does) answers it within a few round trips, and
        // sending it again then would have it processed twice.
        let grace = (self.shared.quic.rtt() * 4).clamp(GOAWAY_GRACE_MIN, GOAWAY_GRACE_MAX);
        let mut answered = false;
        loop {
            let idle = rule.idle.filter(|_| events.is_some());
            let read = async {
                match idle {
                    Some(d) => tokio::time::timeout(d, recv.read_chunk(usize::MAX, true))
                        .await
                        .ok(),
                    None => Some(recv.read_chunk(usize::MAX, true).await),
                }
            };
            let gone = async {
                state.refused(id).await;
                tokio::time::sleep(grace).await;
            };
            let next = tokio::select! {
                r = read => r,
                () = gone, if !answered => {
                    let _ = recv.stop(quinn::VarInt::from_u32(wire::H3_REQUEST_CANCELLED as u32));
                    return Err(Unprocessed::GoingAway);
                }
            };
            let Some(next) = next else {
                return Ok(Err(ErrorKind::Timeout));
            };
            answered = true;
            let chunk = match next {
                Ok(Some(c)) => c.bytes,
                Ok(None) => break,
                Err(quinn::ReadError::Reset(code)) => return self.reset(code.into_inner(), id),
                Err(quinn::ReadError::ConnectionLost(e)) => return self.lost(&e, Some(id)),
                Err(quinn::ReadError::ZeroRttRejected) => return Err(self.refused_early()),
                Err(_) => return Ok(Err(ErrorKind::Protocol)),
            };
            let mut rest: &[u8] = &chunk;
            while !rest.is_empty() {
                let mut on_body = |d: &[u8]| {
                    if let Some(e) = events.as_mut() {
                        let fed = e.feed(d, std::time::Instant::now());
                        tally.0.drain(tally.1, e);
                        fed.map_err(|_| ErrorKind::Protocol)?;
                    }
                    if let Some(k) = kept.as_mut() {
                        k.keep(d);
                    }
                    Ok(())
                };
                let fed = answer.feed(rest, &mut on_body);
                match self.fault(&mut recv, fed) {
                    Ok(n) => rest = &rest[n..],
                    Err(f) => return Ok(Err(f)),
                }
                // The head decides how the body is read.
                if let (false, Some(head)) = (started, answer.head()) {
                    started = true;
                    events =
                        rule.events_for(head.event_stream, head.encoded, std::time::Instant::now());
                    kept = capture.map(|budget| {
                        let mut c = Captured::new(budget.clone());
                        c.headers = head.fields.clone().unwrap_or_default();
                        c
                    });
                }
            }
        }
        if let Err(f) = self.fault(&mut recv, answer.finish()) {
            return Ok(Err(f));
        }
        self.events = events;
        let status = answer.head().map_or(0, |h| h.status);
        let reply = Reply {
            status,
            bytes_in: answer.body_len(),
            keep_alive: true,
            stray: false,
            call: None,
            fault: None,
        };
        Ok(Ok((reply, kept)))
    }

    /// What a fault while reading counts as; a malformed answer stops the stream.
    fn fault<T>(
        &self,
        recv: &mut quinn::RecvStream,
        fed: Result<T, Fault<ErrorKind>>,
    ) -> Result<T, ErrorKind> {
        match fed {
            Ok(t) => Ok(t),
            Err(Fault::Stopped(kind)) => Err(kind),
            Err(Fault::Malformed) => {
                let _ = recv.stop(quinn::VarInt::from_u32(wire::H3_MESSAGE_ERROR as u32));
                Err(ErrorKind::Protocol)
            }
        }
    }

    /// A request sent as early data that the server did not take: counted, to be sent again.
    fn refused_early(&mut self) -> Unprocessed {
        self.zero_rtt.refused += 1;
        Unprocessed::EarlyRefused
    }

    /// A stream the server reset with `code`: a request it never processed
    /// (`H3_REQUEST_REJECTED`, or one past its GOAWAY) is sent again; any other is `reset`.
    fn reset(&mut self, code: u64, id: u64) -> Result<Answered, Unprocessed> {
        if self.shared.state.refuses(Some(id)) {
            return Err(Unprocessed::GoingAway);
        }
        if code == wire::H3_REQUEST_REJECTED {
            return Err(Unprocessed::Rejected);
        }
        self.codes.push(format!("reset:{}", wire::app_code(code)));
        Ok(Err(ErrorKind::Reset))
    }

    /// The connection ended under a request: unprocessed when the server's GOAWAY said it
    /// would not process stream `id` (or, with no stream yet, any new one); otherwise the
    /// connection's end, with its code.
    fn lost(
        &mut self,
        e: &quinn::ConnectionError,
        id: Option<u64>,
    ) -> Result<Answered, Unprocessed> {
        let state = &self.shared.state;
        if state.refuses(id) {
            return Err(Unprocessed::GoingAway);
        }
        let (kind, code) = match (e, state.broken()) {
            // brink closed it: the server broke its control stream's rules.
            (quinn::ConnectionError::LocallyClosed, Some(c)) => {
                (ErrorKind::Protocol, Some(wire::app_code(c)))
            }
            _ => (connection_kind(e), connection_code(e)),
        };
        if let Some(code) = code {
            self.codes.push(format!("{}:{code}", kind.name()));
        }
        Ok(Err(kind))
    }
}

/// The server never processed the request; sending it again is safe (RFC 9114 §4.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unprocessed {
    /// It rejected the stream (`H3_REQUEST_REJECTED`) on a connection that carries on.
    Rejected,
    /// The connection is going away (GOAWAY, or it closed before the request got in).
    GoingAway,
    /// It went as 0-RTT early data, which the server did not take.
    EarlyRefused,
}

/// The code a connection ended with, as results name it: the peer's HTTP/3 code or QUIC
/// transport error, a stateless reset, the idle timeout; `None` when brink closed it.
fn connection_code(e: &quinn::ConnectionError) -> Option<String> {
    use quinn::ConnectionError as C;
    Some(match e {
        C::ApplicationClosed(c) => wire::app_code(c.error_code.into_inner()),
        C::ConnectionClosed(c) => wire::transport_code(u64::from(c.error_code)),
        C::TransportError(t) => wire::transport_code(u64::from(t.code)),
        C::Reset => "stateless_reset".to_string(),
        C::TimedOut => "idle_timeout".to_string(),
        C::VersionMismatch => "version_negotiation".to_string(),
        C::LocallyClosed | C::CidsExhausted => return None,
    })
}

/// What a connection's end counts as: its idle timeout a `timeout`, a server that broke
/// QUIC's rules `protocol`, anything else (the peer's CONNECTION_CLOSE, a stateless reset,
/// brink's own close) `closed`.
fn connection_kind(e: &quinn::ConnectionError) -> ErrorKind {
    use quinn::ConnectionError as C;
    match e {
        C::TimedOut => ErrorKind::Timeout,
        C::TransportError(_) => ErrorKind::Protocol,
        C::VersionMismatch => ErrorKind::Handshake,
        _ => ErrorKind::Closed,
    }
}
