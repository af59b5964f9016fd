//! What decides how an HTTP/1.1 response is framed, gathered one header line at a time:
//! both head parsers (the fast scanner and `httparse`) feed the same [`Fields`], so they
//! cannot disagree on framing.

/// How the body of a response ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, 1xx, 204, 304).
    Empty,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Read until the server closes the connection.
    Close,
}

/// The parts of a response head the client needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes of the head, including the blank line.
    pub len: usize,
    pub framing: Framing,
    /// Whether the connection can be reused afterwards.
    pub keep_alive: bool,
    /// `Content-Type: text/event-stream`: the body is Server-Sent Events.
    pub event_stream: bool,
    /// A `Content-Encoding` other than identity.
    pub encoded: bool,
}

/// Why a response could not be parsed: the rule it broke, in words a user reads beside the
/// `protocol` errors it made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// Most headers a response head may have.
pub const MAX_HEADERS: usize = 64;

/// What the framing decision needs from a head's header lines, gathered one line at a time.
pub struct Fields {
    length: Option<u64>,
    /// A `Transfer-Encoding` header was present.
    coded: bool,
    /// ... and its final coding is `chunked`.
    chunked: bool,
    close: bool,
    event_stream: bool,
    encoded: bool,
}

impl Fields {
    /// Before any header: HTTP/1.0 closes unless told to keep alive.
    pub fn new(http10: bool) -> Fields {
        Fields {
            length: None,
            coded: false,
            chunked: false,
            close: http10,
            event_stream: false,
            encoded: false,
        }
    }

    /// Takes one header line.
    pub fn header(&mut self, name: &[u8], value: &[u8]) -> Result<(), Malformed> {
        if !matches!(name.len(), 10 | 12 | 14 | 16 | 17) {
            return Ok(()); // not one of the five names below
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            const NOT_A_NUMBER: Malformed = Malformed("its Content-Length is not a number");
            let v = std::str::from_utf8(value).map_err(|_| NOT_A_NUMBER)?.trim();
            let n: u64 = v.parse().map_err(|_| NOT_A_NUMBER)?;
            if self.length.is_some_and(|l| l != n) {
                return Err(Malformed("it has two different Content-Lengths"));
            }
            self.length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            self.coded = true;
            self.chunked = last_token(value).eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"content-encoding") {
            self.encoded = crate::proto::events::is_encoded(value);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            self.event_stream = crate::proto::events::is_event_stream(value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',') {
                let t = token.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    self.close = false;
                }
            }
        }
        Ok(())
    }

    /// How the body ends and whether the connection survives (RFC 9112 §6.1, §6.3):
    /// * a status outside 100-599, or `101 Switching Protocols` (brink never asks to switch),
    ///   is not an HTTP/1.1 answer brink can count: malformed;
    /// * `Transfer-Encoding` wins over `Content-Length`; when both are present the message may
    ///   be an attempt at request smuggling, so the connection is closed after it;
    /// * a `Transfer-Encoding` whose final coding is not `chunked` is read until close.
    pub fn head(self, status: u16, len: usize, head_request: bool) -> Result<Head, Malformed> {
        if status == 101 {
            return Err(Malformed(
                "it switched protocols (101), which brink never asked for",
            ));
        }
        if !(100..=599).contains(&status) {
            return Err(Malformed("its status is outside 100-599"));
        }
        let no_body =
            head_request || (100..200).contains(&status) || status == 204 || status == 304;
        let framing = if no_body {
            Framing::Empty
        } else if self.coded {
            if self.chunked {
                Framing::Chunked
            } else {
                Framing::Close
            }
        } else if let Some(n) = self.length {
            Framing::Length(n)
        } else {
            Framing::Close
        };
        let ambiguous = self.coded && self.length.is_some();
        Ok(Head {
            status,
            len,
            framing,
            keep_alive: !self.close && !ambiguous && framing != Framing::Close,
            event_stream: self.event_stream,
            encoded: self.encoded,
        })
    }
}

fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
}
