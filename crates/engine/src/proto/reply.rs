//! What every protocol's exchange ends in, protocol-neutral: a [`Reply`] (status, bytes,
//! whether the connection goes on, a call's own code and messages), what an idle
//! kept-alive connection holds ([`Idle`]), and the error kind an I/O failure counts as. The
//! worker loops and the recording read only these, whichever protocol produced them.

use stats::ErrorKind;
use std::io;
use std::time::Instant;
use workload::Captured;

/// A response and, when the step extracts from it, its kept headers and body; or why the
/// attempt failed.
pub type Outcome = Result<(Reply, Option<Captured>), ErrorKind>;

/// What a completed exchange produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub bytes_in: u64,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
    /// Bytes other than blank lines came right after the end of this response, although no
    /// other request was outstanding: its framing was wrong or the server misbehaves. The
    /// answer counts as answered and as a `protocol` error; the connection is closed.
    pub stray: bool,
    /// A call's own outcome (`None` for plain HTTP): its code decides success, not `status`.
    pub call: Option<Call>,
    /// A token stream (`--llm`) with a successful status that broke its own rules: the
    /// answer counts as this error (status and latency kept), not as a success.
    pub fault: Option<ErrorKind>,
}

impl Reply {
    /// A call that ended with `code` and no answer to count (its stream was reset, or its
    /// deadline passed): the connection carries on.
    pub fn call_ended(code: u16) -> Reply {
        Reply {
            status: 200,
            bytes_in: 0,
            keep_alive: true,
            stray: false,
            call: Some(Call {
                code,
                messages: 0,
                first_message: None,
            }),
            fault: None,
        }
    }
}

/// What a call said of itself, whatever protocol carried it (a gRPC status today): the code
/// that decides its success (`ok_codes`), and the messages it carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    pub code: u16,
    /// Complete messages received.
    pub messages: u64,
    /// When the first complete message arrived.
    pub first_message: Option<Instant>,
}

/// Why a connection did not open: the error it counts as and why, in words (the first of a
/// run is kept for its summary); for a refused WebSocket upgrade, the status the server
/// answered with (counted by status) and the bytes the attempt carried each way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unopened {
    pub kind: ErrorKind,
    pub why: Option<String>,
    pub refused: Option<u16>,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl Unopened {
    /// A failure of `kind`, saying why.
    pub fn because(kind: ErrorKind, why: impl Into<String>) -> Unopened {
        Unopened {
            why: Some(why.into()),
            ..kind.into()
        }
    }
}

impl From<ErrorKind> for Unopened {
    fn from(kind: ErrorKind) -> Unopened {
        Unopened {
            kind,
            why: None,
            refused: None,
            bytes_in: 0,
            bytes_out: 0,
        }
    }
}

/// Maps an I/O error to the error kind it is counted under.
pub fn io_kind(e: &io::Error) -> ErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::UnexpectedEof => ErrorKind::Closed,
        K::TimedOut => ErrorKind::Timeout,
        K::InvalidData => ErrorKind::Protocol,
        _ => ErrorKind::Reset,
    }
}

/// What an idle kept-alive connection holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Nothing: ready for the next request.
    Open,
    /// The server closed it.
    Closed,
    /// Bytes arrived with no request outstanding.
    Stray,
}
