//! HTTP/1.1 response framing, pure and allocation-free: parse a response head (the fast
//! [`scan`](super::scan) path, else `httparse`) and decide how its body ends (RFC 9112 §6.3),
//! and skip chunked bodies with a byte-level state machine that never buffers data (and hands
//! their payload on, for a body read as it streams).

use super::scan::scan;

use super::fields::Fields;
pub use super::fields::{Framing, Head, Malformed, MAX_HEADERS};

/// Parses a response head; `Ok(None)` when more bytes are needed. The common plainly formatted
/// head takes the fast scanner; anything else goes through `httparse`, and both feed the same
/// [`Fields`], so they cannot disagree on framing.
pub fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, Malformed> {
    if let Some(s) = scan(buf) {
        return s.fields.head(s.status, s.len, head_request).map(Some);
    }
    parse_head_slow(buf, head_request)
}

/// The `httparse` path: every head, including the odd and the invalid.
fn parse_head_slow(buf: &[u8], head_request: bool) -> Result<Option<Head>, Malformed> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Malformed(head_fault(e))),
    };
    let status = resp.code.ok_or(Malformed("its status line has no code"))?;
    let mut fields = Fields::new(resp.version == Some(0));
    for h in resp.headers.iter() {
        fields.header(h.name.as_bytes(), h.value)?;
    }
    fields.head(status, len, head_request).map(Some)
}

/// The rule an unparseable head broke, as `httparse` found it.
fn head_fault(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::Status => "its status line is not 'HTTP/1.x NNN reason'",
        httparse::Error::Version => "it does not start with HTTP/1.0 or HTTP/1.1",
        httparse::Error::TooManyHeaders => "its head has more than 64 header lines",
        httparse::Error::HeaderName => "a header name has a character HTTP does not allow",
        httparse::Error::HeaderValue => "a header value has a character HTTP does not allow",
        httparse::Error::NewLine => "a line of its head ends without a proper CRLF",
        httparse::Error::Token => "its head has a character HTTP does not allow",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Size,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    EndLf,
    Done,
}

/// Most bytes of chunk extensions and trailers in one body (hyper allows 16 KiB of
/// extensions; trailers are a head's worth): a server sending an endless extension is a
/// protocol error, not a body brink waits on.
pub const MAX_CHUNK_META: u32 = 64 * 1024;

/// A chunked body that is not sizes, data and CRLFs in their order.
const BAD_CHUNK: Malformed = Malformed("its chunked body is not framed as chunks");

/// Skips a chunked body fed in arbitrary pieces, without keeping any of it.
#[derive(Clone, Debug)]
pub struct Chunked {
    state: State,
    size: u64,
    digits: u8,
    /// Bytes of extensions and trailer lines seen so far.
    meta: u32,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked {
            state: State::Size,
            size: 0,
            digits: 0,
            meta: 0,
        }
    }
}

impl Chunked {
    /// Consumes `data`; `Ok(true)` once the final chunk and trailers are complete.
    pub fn feed(&mut self, data: &[u8]) -> Result<bool, Malformed> {
        self.feed_counted(data).map(|(done, _)| done)
    }

    /// As [`Chunked::feed`], also saying how many bytes of `data` belong to the body (the rest,
    /// after the end, is not part of this response).
    pub fn feed_counted(&mut self, data: &[u8]) -> Result<(bool, usize), Malformed> {
        self.feed_payload(data, |_| {})
    }

    /// As [`Chunked::feed_counted`], handing `on_payload` each run of the body's own bytes
    /// (the chunks' data, without sizes, extensions or trailers), in order.
    pub fn feed_payload(
        &mut self,
        data: &[u8],
        mut on_payload: impl FnMut(&[u8]),
    ) -> Result<(bool, usize), Malformed> {
        let mut i = 0;
        while i < data.len() && self.state != State::Done {
            if self.state == State::Data {
                let take = self.size.min((data.len() - i) as u64);
                on_payload(&data[i..i + take as usize]);
                self.size -= take;
                i += take as usize;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            self.step(data[i])?;
            i += 1;
        }
        Ok((self.state == State::Done, i))
    }

    fn step(&mut self, b: u8) -> Result<(), Malformed> {
        if matches!(self.state, State::Ext | State::TrailerLine) {
            self.meta += 1;
            if self.meta > MAX_CHUNK_META {
                return Err(Malformed("its chunk extensions or trailers pass 64 KiB"));
            }
        }
        self.state = match (self.state, b) {
            (State::Size, b) if b.is_ascii_hexdigit() => {
                let d = (b as char).to_digit(16).ok_or(BAD_CHUNK)? as u64;
                self.digits += 1;
                if self.digits > 15 {
                    return Err(Malformed("a chunk size has more than 15 hex digits"));
                }
                self.size = self.size * 16 + d;
                State::Size
            }
            (State::Size, b';' | b' ' | b'\t') if self.digits > 0 => State::Ext,
            (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
            (State::Size, b'\n') if self.digits > 0 => self.size_line_done(),
            (State::Ext, b'\r') => State::SizeLf,
            (State::Ext, b'\n') | (State::SizeLf, b'\n') => self.size_line_done(),
            (State::Ext, _) => State::Ext,
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataCr | State::DataLf, b'\n') => State::Size,
            (State::TrailerStart, b'\r') => State::EndLf,
            (State::TrailerStart | State::EndLf, b'\n') => State::Done,
            (State::TrailerLine, b'\n') => State::TrailerStart,
            (State::TrailerStart | State::TrailerLine, _) => State::TrailerLine,
            _ => return Err(BAD_CHUNK),
        };
        Ok(())
    }

    fn size_line_done(&mut self) -> State {
        self.digits = 0;
        if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Head {
        parse_head(s.as_bytes(), false).unwrap().unwrap()
    }

    #[test]
    fn framing_rules() {
        let cases = [
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                Framing::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                Framing::Chunked,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
                Framing::Chunked,
                false,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 3\r\n\r\n",
                Framing::Close,
                false,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                Framing::Close,
                false,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", Framing::Close, false),
            ("HTTP/1.1 204 No Content\r\n\r\n", Framing::Empty, true),
            (
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
                Framing::Empty,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                Framing::Length(0),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n",
                Framing::Length(2),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n",
                Framing::Length(2),
                true,
            ),
            ("HTTP/1.1 100 Continue\r\n\r\n", Framing::Empty, true),
        ];
        for (text, framing, keep) in cases {
            let h = head(text);
            assert_eq!((h.framing, h.keep_alive), (framing, keep), "{text:?}");
            assert_eq!(h.len, text.len());
        }
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Empty, "a response to HEAD has no body");
    }

    #[test]
    fn statuses_brink_cannot_count_are_malformed() {
        for line in [
            "101 Switching Protocols",
            "999 Nine",
            "600 X",
            "099 Low",
            "000 Zero",
        ] {
            let text = format!("HTTP/1.1 {line}\r\nContent-Length: 0\r\n\r\n");
            let want = match line.starts_with("101") {
                true => "it switched protocols (101), which brink never asked for",
                false => "its status is outside 100-599",
            };
            assert_eq!(parse_head(text.as_bytes(), false), Err(Malformed(want)));
        }
        assert!(parse_head(b"HTTP/1.1 599 Odd\r\nContent-Length: 0\r\n\r\n", false).is_ok());
    }

    #[test]
    fn partial_and_malformed_heads() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        assert_eq!(
            parse_head(b"garbage\r\n\r\n", false),
            Err(Malformed("it does not start with HTTP/1.0 or HTTP/1.1"))
        );
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Err(Malformed("its Content-Length is not a number"))
        );
        assert_eq!(
            parse_head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false
            ),
            Err(Malformed("it has two different Content-Lengths"))
        );
    }

    /// The fast scanner either gives up or agrees with `httparse`, on plain heads and on
    /// thousands of mutations of them (bytes replaced by the ones that matter, truncations).
    #[test]
    fn fast_scan_agrees_with_httparse() {
        let many: String = (0..MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let exactly_max = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        let over_max = format!("HTTP/1.1 200 OK\r\n{many}X-Last: v\r\n\r\n");
        let corpus: [&[u8]; 8] = [
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 13\r\nConnection: keep-alive\r\n\r\nbody",
            b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 \r\nTransfer-Encoding: gzip, chunked\r\nX-Tab:\ta\tb \r\n\r\n",
            b"HTTP/1.1 204 No Content\r\nConnection: close, Upgrade\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
            b"HTTP/1.1 404 Not Found\nContent-Length: 3\n\n",
            exactly_max.as_bytes(),
            over_max.as_bytes(),
        ];
        let agrees = |buf: &[u8]| -> bool {
            let slow = parse_head_slow(buf, false);
            let Some(s) = scan(buf) else { return false };
            let fast = s.fields.head(s.status, s.len, false).map(Some);
            assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(buf));
            true
        };
        let plain = corpus.iter().filter(|b| agrees(b)).count();
        assert_eq!(plain, 6, "the plainly formatted heads take the fast path");
        assert!(
            scan(over_max.as_bytes()).is_none() && parse_head(over_max.as_bytes(), false).is_err()
        );
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let bytes = b"\r\n\t :,\x7f\x00\x80\xffaZ09/-";
        let mut fast = 0;
        for base in corpus {
            for _ in 0..3000 {
                let mut m = base.to_vec();
                for _ in 0..1 + next() % 2 {
                    let pos = next() as usize % m.len();
                    m[pos] = bytes[next() as usize % bytes.len()];
                }
                if next() % 4 == 0 {
                    m.truncate(next() as usize % (m.len() + 1));
                }
                fast += usize::from(agrees(&m));
            }
        }
        assert!(fast > 1000, "mutations kept on the fast path: {fast}");
    }

    #[test]
    fn chunked_in_every_split() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n";
        for split in 0..body.len() {
            let mut c = Chunked::default();
            let first = c.feed(&body[..split]).unwrap();
            assert!(!first, "done too early at split {split}");
            assert!(c.feed(&body[split..]).unwrap(), "not done at split {split}");
        }
        let mut c = Chunked::default();
        for b in body.iter() {
            let _ = c.feed(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!(c.state, State::Done);
    }

    #[test]
    fn chunked_errors() {
        for bad in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"5\r\nhelloXX",
            b"fffffffffffffffff\r\n",
        ] {
            assert!(
                Chunked::default().feed(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(Chunked::default().feed(b"0\r\n\r\n"), Ok(true));
    }

    #[test]
    fn extensions_and_trailers_are_bounded() {
        let ext = "e".repeat(MAX_CHUNK_META as usize - 10);
        let fine = format!("1;{ext}\r\na\r\n0\r\nX-T: 1\r\n\r\n");
        assert_eq!(Chunked::default().feed(fine.as_bytes()), Ok(true));
        let endless = format!("1;{ext}{ext}");
        let long = Malformed("its chunk extensions or trailers pass 64 KiB");
        assert_eq!(Chunked::default().feed(endless.as_bytes()), Err(long));
        let trailers = format!("0\r\nX-T: {ext}{ext}");
        assert_eq!(Chunked::default().feed(trailers.as_bytes()), Err(long));
    }
}
