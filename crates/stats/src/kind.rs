//! The fixed set of ways a request can fail below HTTP. A status code is never an error kind:
//! statuses are counted on their own and the run decides which of them are failures. Two kinds
//! come with an answer ([`ErrorKind::answered`]): an extraction that found nothing, a check
//! that failed, and a token stream that broke its own rules; those answers keep their status
//! and latency.

use serde::Serialize;

/// Why an attempt failed apart from its status: no answer, or (see [`ErrorKind::answered`])
/// an answer that failed its extraction or checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The TCP connection could not be opened (refused, unreachable).
    Connect,
    /// Opening the TCP connection took longer than `--connect-timeout`.
    ConnectTimeout,
    /// The TLS handshake failed (bad certificate, protocol mismatch).
    Tls,
    /// A WebSocket upgrade was refused (a status other than 101) or answered wrongly (no
    /// upgrade, a wrong `Sec-WebSocket-Accept`), or its answer never ended; or a QUIC server
    /// offered only versions brink does not speak (Version Negotiation).
    Handshake,
    /// No complete response within `--timeout`.
    Timeout,
    /// The peer reset the connection (ECONNRESET, EPIPE).
    Reset,
    /// The connection closed before a complete response arrived.
    Closed,
    /// The response could not be parsed.
    Protocol,
    /// A flow step's `extract:` found nothing in the response (or the body was not JSON).
    Extract,
    /// An answer with a successful status failed one of its request's `check:`s.
    Check,
    /// The rendered request was refused before sending: a templated value would have put a
    /// CR, LF or NUL into a header, or a space or control byte into the path.
    InvalidRequest,
    /// An event of a token stream (`--llm`) was not the JSON chunk an OpenAI-compatible
    /// server sends.
    BadDelta,
    /// A token stream carried an error object (or an `error` event) instead of going on.
    StreamError,
    /// A token stream ended without its `[DONE]`.
    Unfinished,
    /// An answer read as events, with a successful status, was no event stream brink can
    /// read: a token stream whose `Content-Type` was not `text/event-stream` and that carried
    /// no event (a body that did not ask for `stream: true`, or a server that ignores it), or
    /// any streamed answer whose body was coded (`Content-Encoding: gzip`, ...).
    NotStream,
}

impl ErrorKind {
    /// Every kind, in the order used for arrays and reports.
    pub const ALL: [ErrorKind; 15] = [
        ErrorKind::Connect,
        ErrorKind::ConnectTimeout,
        ErrorKind::Tls,
        ErrorKind::Handshake,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Protocol,
        ErrorKind::Extract,
        ErrorKind::Check,
        ErrorKind::InvalidRequest,
        ErrorKind::BadDelta,
        ErrorKind::StreamError,
        ErrorKind::Unfinished,
        ErrorKind::NotStream,
    ];
    /// Number of kinds (length of per-kind counter arrays).
    pub const COUNT: usize = Self::ALL.len();

    /// Stable name used in result files (`summary.errors_by_kind.timeout`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Tls => "tls",
            ErrorKind::Handshake => "handshake",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Extract => "extract",
            ErrorKind::Check => "check",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::BadDelta => "bad_delta",
            ErrorKind::StreamError => "stream_error",
            ErrorKind::Unfinished => "unfinished",
            ErrorKind::NotStream => "not_stream",
        }
    }

    /// Whether an attempt that failed so got an answer (its status and latency are recorded):
    /// a failed extraction or check, or a token stream that broke its own rules.
    pub fn answered(self) -> bool {
        matches!(
            self,
            ErrorKind::Extract
                | ErrorKind::Check
                | ErrorKind::BadDelta
                | ErrorKind::StreamError
                | ErrorKind::Unfinished
                | ErrorKind::NotStream
        )
    }

    /// Index into per-kind counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}
