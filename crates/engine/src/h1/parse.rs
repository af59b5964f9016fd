//! HTTP/1.1 response framing, pure and allocation-free: parse a response head with `httparse`
//! and decide how its body ends (RFC 9112 §6.3), and skip chunked bodies with a byte-level state
//! machine that never buffers data.

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
}

/// Why a response could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Parses a response head; `Ok(None)` when more bytes are needed.
pub fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, Malformed> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Malformed),
    };
    let status = resp.code.ok_or(Malformed)?;
    let http10 = resp.version == Some(0);
    let mut length = None;
    let mut chunked = false;
    let mut close = http10;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value).map_err(|_| Malformed)?.trim();
            let n: u64 = v.parse().map_err(|_| Malformed)?;
            if length.is_some_and(|l| l != n) {
                return Err(Malformed);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let t = token.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
    }
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let keep_alive = !close && framing != Framing::Close;
    Ok(Some(Head {
        status,
        len,
        framing,
        keep_alive,
    }))
}

fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
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

/// Skips a chunked body fed in arbitrary pieces, without keeping any of it.
#[derive(Clone, Debug)]
pub struct Chunked {
    state: State,
    size: u64,
    digits: u8,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked {
            state: State::Size,
            size: 0,
            digits: 0,
        }
    }
}

impl Chunked {
    /// Consumes `data`; `Ok(true)` once the final chunk and trailers are complete.
    pub fn feed(&mut self, data: &[u8]) -> Result<bool, Malformed> {
        let mut i = 0;
        while i < data.len() && self.state != State::Done {
            if self.state == State::Data {
                let take = self.size.min((data.len() - i) as u64);
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
        Ok(self.state == State::Done)
    }

    fn step(&mut self, b: u8) -> Result<(), Malformed> {
        self.state = match (self.state, b) {
            (State::Size, b) if b.is_ascii_hexdigit() => {
                let d = (b as char).to_digit(16).ok_or(Malformed)? as u64;
                self.digits += 1;
                if self.digits > 15 {
                    return Err(Malformed);
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
            _ => return Err(Malformed),
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
                true,
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
    fn partial_and_malformed_heads() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        );
        assert_eq!(parse_head(b"garbage\r\n\r\n", false), Err(Malformed));
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false),
            Err(Malformed)
        );
        assert_eq!(
            parse_head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                false
            ),
            Err(Malformed)
        );
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
            assert_eq!(
                Chunked::default().feed(bad),
                Err(Malformed),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(Chunked::default().feed(b"0\r\n\r\n"), Ok(true));
    }
}
