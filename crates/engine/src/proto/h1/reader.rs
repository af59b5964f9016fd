//! Reading one HTTP/1.1 response, sans I/O: the caller appends bytes to a buffer and calls
//! [`Reader::advance`]; the reader parses the head in place, skips the body while counting it,
//! and says when the response is complete. The async client and the epoll loop both drive it,
//! so framing rules live in one place.

use super::parse::{parse_head, Chunked, Framing};
use crate::proto::events::{EventRule, Events};
use crate::proto::reply::Reply;
use crate::why;
use stats::ErrorKind;
use std::sync::Arc;
use workload::capture::{Budget, Captured};

/// Initial read buffer: large enough for common heads; grows up to [`MAX_HEAD`].
pub const INITIAL_BUF: usize = 8 * 1024;
/// Longest response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;
/// Buffer size used once a connection has seen a large body, to read it in fewer calls.
pub const BULK_BUF: usize = 64 * 1024;
/// Most interim (1xx) answers before the final one: a server that sends `100 Continue`
/// without end is a protocol error, not a response brink waits for.
pub const MAX_INTERIM: u32 = 16;

#[derive(Clone, Debug)]
enum Phase {
    Head,
    Length(u64),
    Chunked(Chunked),
    UntilClose,
}

/// The state of one response being read.
#[derive(Debug)]
pub struct Reader {
    head_request: bool,
    phase: Phase,
    status: u16,
    keep_alive: bool,
    bytes_in: u64,
    /// Interim answers seen so far.
    interim: u32,
    /// Kept head and body, only when a flow step extracts from this response.
    capture: Option<Box<Captured>>,
    /// Which answers are read as events, and their bound.
    rule: EventRule,
    /// The answer's events, once its head said it streams them (or streaming was asked).
    events: Option<Box<Events>>,
}

/// A per-connection read buffer: `data[..filled]` holds unconsumed bytes.
#[derive(Debug)]
pub struct ReadBuf {
    pub data: Vec<u8>,
    pub filled: usize,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf {
            data: vec![0; INITIAL_BUF],
            filled: 0,
        }
    }
}

impl ReadBuf {
    /// A buffer holding no memory; it must get some ([`ReadBuf::default`]) before a read.
    pub const fn empty() -> ReadBuf {
        ReadBuf {
            data: Vec::new(),
            filled: 0,
        }
    }

    /// The free tail to read into.
    pub fn spare(&mut self) -> &mut [u8] {
        &mut self.data[self.filled..]
    }
}

impl Reader {
    /// A reader for the response to the request just sent.
    pub fn new(head_request: bool) -> Reader {
        Reader {
            head_request,
            phase: Phase::Head,
            status: 0,
            keep_alive: false,
            bytes_in: 0,
            interim: 0,
            capture: None,
            rule: EventRule::default(),
            events: None,
        }
    }

    /// A reader that times the body as Server-Sent Events whatever its type says, each event
    /// at most `max_event` bytes.
    pub fn streaming(head_request: bool, max_event: usize) -> Reader {
        Reader::new(head_request).with_events(EventRule {
            force: true,
            max: max_event,
            ..EventRule::default()
        })
    }

    /// This reader, reading answers as events by `rule`.
    pub fn with_events(mut self, rule: EventRule) -> Reader {
        self.rule = rule;
        self
    }

    /// The answer's events so far, when it streams them.
    pub fn events(&mut self) -> Option<&mut Events> {
        self.events.as_deref_mut()
    }

    /// The answer's events so far, to look at.
    pub fn events_ref(&self) -> Option<&Events> {
        self.events.as_deref()
    }

    /// The answer's events, taken.
    pub fn take_events(&mut self) -> Option<Box<Events>> {
        self.events.take()
    }

    /// A reader that also keeps the response's headers and body (for extraction), within
    /// the run's capture `budget`.
    pub fn capturing(head_request: bool, budget: Arc<Budget>) -> Reader {
        Reader {
            capture: Some(Box::new(Captured::new(budget))),
            ..Reader::new(head_request)
        }
    }

    /// The kept response once it is complete (body de-chunked in place).
    pub fn take_capture(&mut self) -> Option<Captured> {
        let mut c = *self.capture.take()?;
        if matches!(self.phase, Phase::Chunked(_)) {
            c.dechunk();
        }
        Some(c)
    }

    /// Takes `n` new bytes at `buf.data[buf.filled..]`; `Some` once the response is complete.
    /// An answer read as events stamps them with the clock read now.
    pub fn advance(&mut self, buf: &mut ReadBuf, n: usize) -> Result<Option<Reply>, ErrorKind> {
        self.advance_at(buf, n, None)
    }

    /// As [`Reader::advance`], the bytes read at `now` (`None`: the clock, read only when the
    /// answer is read as events).
    pub fn advance_at(
        &mut self,
        buf: &mut ReadBuf,
        n: usize,
        now: Option<std::time::Instant>,
    ) -> Result<Option<Reply>, ErrorKind> {
        buf.filled += n;
        self.bytes_in += n as u64;
        let mut from = 0;
        if let Phase::Head = self.phase {
            match self.parse_head(buf, now)? {
                Some(at) => from = at,
                None => return Ok(None),
            }
        }
        // The body is read where it lies: moving it behind the head would copy the answer.
        let body = &buf.data[from..buf.filled];
        let (done, used) = match &mut self.events {
            None => body_of(&mut self.phase, body, |_| Ok(()))?,
            Some(e) => {
                let now = now.unwrap_or_else(std::time::Instant::now);
                let read = |p: &[u8]| {
                    e.feed(p, now)
                        .map_err(|_| why::protocol("an event passed --max-event-size"))
                };
                body_of(&mut self.phase, body, read)?
            }
        };
        if let Some(c) = self.capture.as_mut() {
            c.keep(&body[..used]);
        }
        let stray = body.len() - used;
        // Body bytes are counted, never kept.
        buf.filled = 0;
        Ok(done.then(|| {
            let mut reply = self.reply();
            if stray > 0 {
                // Bytes past the answer's end: the connection is not used again. Blank lines
                // are a known server slip and tolerated; anything else breaks the answer's
                // framing (the worker counts the answer as a `protocol` error).
                reply.bytes_in -= stray as u64;
                reply.stray = is_stray(&body[used..]);
                reply.keep_alive = false;
            }
            reply
        }))
    }

    /// The peer closed the connection: completes a close-delimited body, else an error.
    pub fn eof(&mut self) -> Result<Reply, ErrorKind> {
        let why = match &self.phase {
            Phase::UntilClose => return Ok(self.reply()),
            Phase::Head if self.bytes_in == 0 => return Err(ErrorKind::Closed),
            Phase::Head => "the server closed the connection in the middle of the answer's head",
            Phase::Length(left) => {
                return Err(why::failed(
                    ErrorKind::Closed,
                    format!(
                        "the server closed the connection with {left} bytes of the body still to come (its Content-Length promised them)"
                    ),
                ))
            }
            Phase::Chunked(_) => "the server closed the connection before the chunked body's last chunk",
        };
        Err(why::failed(ErrorKind::Closed, why))
    }

    fn reply(&self) -> Reply {
        Reply {
            status: self.status,
            bytes_in: self.bytes_in,
            keep_alive: self.keep_alive,
            stray: false,
            call: None,
            fault: None,
        }
    }

    /// Parses the head in the buffer: where its body begins, or `None` when more bytes are
    /// needed (an unfinished head is moved to the buffer's start). Interim answers are skipped
    /// by offset.
    fn parse_head(
        &mut self,
        buf: &mut ReadBuf,
        now: Option<std::time::Instant>,
    ) -> Result<Option<usize>, ErrorKind> {
        let mut off = 0;
        let head = loop {
            let parsed = parse_head(&buf.data[off..buf.filled], self.head_request)
                .map_err(|m| why::protocol(m.0))?;
            match parsed {
                Some(head) if (100..200).contains(&head.status) => {
                    // An interim response: the final one follows.
                    self.interim += 1;
                    if self.interim > MAX_INTERIM {
                        return Err(why::protocol(
                            "it sent more interim (1xx) answers than any server needs",
                        ));
                    }
                    off += head.len;
                }
                Some(head) => break head,
                None => {
                    buf.data.copy_within(off..buf.filled, 0);
                    buf.filled -= off;
                    if buf.filled == buf.data.len() {
                        if buf.data.len() >= MAX_HEAD {
                            return Err(why::protocol(
                                "its head is larger than brink reads (64 KiB)",
                            ));
                        }
                        buf.data.resize(buf.data.len() * 2, 0);
                    }
                    return Ok(None);
                }
            }
        };
        if let Some(c) = self.capture.as_mut() {
            c.headers = header_list(&buf.data[off..off + head.len]);
        }
        self.status = head.status;
        self.keep_alive = head.keep_alive;
        if self.rule.reads(head.event_stream) {
            let now = now.unwrap_or_else(std::time::Instant::now);
            self.events = self.rule.events_for(head.event_stream, head.encoded, now);
        }
        self.phase = match head.framing {
            Framing::Empty | Framing::Length(0) => Phase::Length(0),
            Framing::Length(n) => {
                if n > buf.data.len() as u64 && buf.data.len() < BULK_BUF {
                    buf.data.resize(BULK_BUF, 0);
                }
                Phase::Length(n)
            }
            Framing::Chunked => Phase::Chunked(Chunked::default()),
            Framing::Close => Phase::UntilClose,
        };
        Ok(Some(off + head.len))
    }
}

/// Whether bytes that came after an answer's end (in the same read, or later on the idle
/// connection) break the framing: anything but blank lines, a known server slip that is
/// tolerated (the connection is not used again either way).
pub fn is_stray(after: &[u8]) -> bool {
    !after.iter().all(|b| matches!(b, b'\r' | b'\n'))
}

/// How much of `body` belongs to the response in `phase`, and whether it ends there; its
/// payload (chunk framing removed) goes to `payload` as it is found.
fn body_of(
    phase: &mut Phase,
    body: &[u8],
    mut payload: impl FnMut(&[u8]) -> Result<(), ErrorKind>,
) -> Result<(bool, usize), ErrorKind> {
    match phase {
        Phase::Head => Ok((false, body.len())),
        Phase::Length(left) => {
            let used = (*left).min(body.len() as u64);
            *left -= used;
            payload(&body[..used as usize])?;
            Ok((*left == 0, used as usize))
        }
        Phase::Chunked(c) => {
            let mut fault = Ok(());
            let r = c.feed_payload(body, |p| {
                if fault.is_ok() {
                    fault = payload(p);
                }
            });
            fault?;
            r.map_err(|m| why::protocol(m.0))
        }
        Phase::UntilClose => {
            payload(body)?;
            Ok((false, body.len()))
        }
    }
}

/// The headers of a response head, as text.
fn header_list(head: &[u8]) -> Vec<(String, String)> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    if resp.parse(head).is_err() {
        return Vec::new();
    }
    resp.headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `resp` like a socket would: at most `step` bytes and never more than the buffer's
    /// free tail per read. Returns the reply or the error.
    fn read(resp: &[u8], step: usize, head: bool) -> Result<Option<Reply>, ErrorKind> {
        let mut buf = ReadBuf::default();
        let mut r = Reader::new(head);
        let mut rest = resp;
        while !rest.is_empty() {
            let spare = buf.spare();
            let n = step.min(spare.len()).min(rest.len());
            spare[..n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            if let Some(reply) = r.advance(&mut buf, n)? {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    #[test]
    fn completes_in_any_split() {
        let resp =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello";
        for step in 1..resp.len() {
            let reply = read(resp, step, false).unwrap().expect("complete");
            assert_eq!(
                reply,
                Reply {
                    status: 201,
                    bytes_in: resp.len() as u64,
                    keep_alive: true,
                    stray: false,
                    call: None,
                    fault: None,
                },
                "step {step}"
            );
        }
    }

    #[test]
    fn incomplete_until_the_last_byte() {
        let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert_eq!(read(&resp[..resp.len() - 1], 4, false), Ok(None));
        assert!(read(resp, 4, false).unwrap().is_some());
    }

    #[test]
    fn capture_keeps_headers_and_dechunked_body() {
        let resp = b"HTTP/1.1 200 OK\r\nX-Token: abc\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=1\r\n\":1}\r\n0\r\n\r\n";
        for step in [1, 5, resp.len()] {
            let mut buf = ReadBuf::default();
            let mut r = Reader::capturing(false, Budget::new(1 << 20));
            let mut rest = &resp[..];
            let mut done = false;
            while !rest.is_empty() && !done {
                let n = step.min(rest.len());
                buf.spare()[..n].copy_from_slice(&rest[..n]);
                rest = &rest[n..];
                done = r.advance(&mut buf, n).unwrap().is_some();
            }
            assert!(done);
            let c = r.take_capture().unwrap();
            assert_eq!(c.body, b"{\"a\":1}", "step {step}");
            assert!(c
                .headers
                .contains(&("X-Token".to_string(), "abc".to_string())));
        }
        assert!(Reader::new(false).take_capture().is_none());
    }

    #[test]
    fn bytes_after_the_end_are_stray_not_the_next_answer() {
        let cases: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\njunk",
            b"HTTP/1.1 204 No Content\r\n\r\nxyz",
        ];
        for resp in cases {
            let reply = read(resp, resp.len(), false).unwrap().expect("complete");
            assert!(
                reply.stray && !reply.keep_alive,
                "{:?}",
                String::from_utf8_lossy(resp)
            );
            let exact = read(resp, resp.len(), false).unwrap().unwrap().bytes_in;
            assert!(exact < resp.len() as u64);
        }
        let clean = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert!(!read(clean, 7, false).unwrap().unwrap().stray);
        let blank = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n";
        let reply = read(blank, blank.len(), false).unwrap().unwrap();
        assert!(
            !reply.stray && !reply.keep_alive,
            "a blank line after is tolerated"
        );
    }

    #[test]
    fn close_delimited_needs_eof() {
        let mut buf = ReadBuf::default();
        let mut r = Reader::new(false);
        let resp = b"HTTP/1.1 200 OK\r\n\r\nbody";
        buf.spare()[..resp.len()].copy_from_slice(resp);
        assert_eq!(r.advance(&mut buf, resp.len()), Ok(None));
        let reply = r.eof().unwrap();
        assert_eq!(
            (reply.status, reply.keep_alive, reply.bytes_in),
            (200, false, resp.len() as u64)
        );
        assert_eq!(
            Reader::new(false).eof(),
            Err(ErrorKind::Closed),
            "EOF before a head is an error"
        );
    }

    #[test]
    fn interim_answers_are_bounded() {
        let continues = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM as usize);
        let mut ok = continues.clone();
        ok.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        for step in [7, 100, ok.len()] {
            let reply = read(&ok, step, false).unwrap().expect("complete");
            assert_eq!((reply.status, reply.bytes_in), (200, ok.len() as u64));
        }
        let mut endless = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM as usize + 1);
        endless.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        for step in [7, 100, endless.len()] {
            assert_eq!(read(&endless, step, false), Err(ErrorKind::Protocol));
        }
    }

    #[test]
    fn long_heads_grow_the_buffer_up_to_the_limit() {
        let filler = format!("X-Filler: {}\r\n", "a".repeat(1000)).into_bytes();
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        while head.len() < 20_000 {
            head.extend_from_slice(&filler);
        }
        head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        assert!(read(&head, 1000, false).unwrap().is_some());
        let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
        while huge.len() < 70_000 {
            huge.extend_from_slice(&filler);
        }
        assert_eq!(read(&huge, 1000, false), Err(ErrorKind::Protocol));
    }
}

#[cfg(test)]
#[path = "reader_events.rs"]
mod events_tests;
