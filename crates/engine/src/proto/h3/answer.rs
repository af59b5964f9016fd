//! Reading an answer from a request stream (RFC 9114 §4.1), wherever QUIC cuts it: frame
//! headers, the head (after any interim 1xx heads), DATA handed on as it arrives without being
//! kept, trailers, and frames of unknown types skipped. Memory is bounded by
//! [`MAX_FIELD_SECTION`] whatever the server sends; anything the RFC calls malformed (DATA
//! before the head, a frame that does not belong on a request stream, a body longer or shorter
//! than its `content-length`, a stream that ends inside a frame or before its head) is
//! [`Fault::Malformed`].

use super::qpack;
use super::wire::{self, varint, MAX_FIELD_SECTION};

/// The answer's head, as far as brink uses it.
#[derive(Debug, Default)]
pub struct Head {
    pub status: u16,
    pub content_length: Option<u64>,
    /// `content-type: text/event-stream`.
    pub event_stream: bool,
    /// A `content-encoding` other than identity.
    pub encoded: bool,
    /// Every field, when the request's answers are kept (extraction, checks).
    pub fields: Option<Vec<(String, String)>>,
    /// A regular field has been read (pseudo-headers must come first).
    regular: bool,
    /// The section's size as SETTINGS_MAX_FIELD_SECTION_SIZE counts it (RFC 9114 §4.2.2).
    size: u64,
}

enum State {
    /// Reading a frame's type and length: the bytes so far.
    FrameHeader {
        have: [u8; 16],
        len: usize,
    },
    /// A field section (head or trailers), `left` bytes still to come.
    Section {
        block: Vec<u8>,
        left: usize,
    },
    Data {
        left: u64,
    },
    Skip {
        left: u64,
    },
}

impl State {
    const FRAME_HEADER: State = State::FrameHeader {
        have: [0; 16],
        len: 0,
    };
}

/// One answer being read.
pub struct Answer {
    state: State,
    head: Option<Head>,
    trailers: bool,
    keep_fields: bool,
    body: u64,
    scratch: (Vec<u8>, Vec<u8>),
}

impl Answer {
    /// `keep_fields`: keep every field of the head.
    pub fn new(keep_fields: bool) -> Answer {
        Answer {
            state: State::FRAME_HEADER,
            head: None,
            trailers: false,
            keep_fields,
            body: 0,
            scratch: Default::default(),
        }
    }

    /// The head, once it has been read.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_ref()
    }

    /// The body's length so far (DATA frames' payloads).
    pub fn body_len(&self) -> u64 {
        self.body
    }

    /// Reads `input`, the stream's next bytes, handing body bytes to `body` as they come;
    /// how many bytes it read. It stops right after the head, so that the caller can say how
    /// the body is to be read. `body` may stop the reading with an error of its own (`E`).
    pub fn feed<E>(
        &mut self,
        mut input: &[u8],
        body: &mut impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<usize, Fault<E>> {
        let total = input.len();
        while !input.is_empty() {
            match &mut self.state {
                State::FrameHeader { have, len } => {
                    let take = input.len().min(have.len() - *len);
                    have[*len..*len + take].copy_from_slice(&input[..take]);
                    let Some((kind, a)) = varint(&have[..*len + take]) else {
                        (*len, input) = (*len + take, &input[take..]);
                        continue;
                    };
                    let Some((size, b)) = varint(&have[a..*len + take]) else {
                        (*len, input) = (*len + take, &input[take..]);
                        continue;
                    };
                    // Only part of what was copied belonged to the frame header.
                    input = &input[a + b - *len..];
                    self.state = self.frame(kind, size)?;
                }
                State::Section { block, left } => {
                    let take = input.len().min(*left);
                    block.extend_from_slice(&input[..take]);
                    (*left, input) = (*left - take, &input[take..]);
                    if *left == 0 {
                        let block = std::mem::take(block);
                        let had_head = self.head.is_some();
                        self.section(&block)?;
                        self.state = State::FRAME_HEADER;
                        if !had_head && self.head.is_some() {
                            return Ok(total - input.len());
                        }
                    }
                }
                State::Data { left } => {
                    let take = input
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    *left -= take as u64;
                    if *left == 0 {
                        self.state = State::FRAME_HEADER;
                    }
                    self.body += take as u64;
                    body(&input[..take]).map_err(Fault::Stopped)?;
                    input = &input[take..];
                }
                State::Skip { left } => {
                    let take = input
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    *left -= take as u64;
                    if *left == 0 {
                        self.state = State::FRAME_HEADER;
                    }
                    input = &input[take..];
                }
            }
        }
        Ok(total)
    }

    /// The state a frame of `kind` and `size` bytes starts.
    fn frame<E>(&mut self, kind: u64, size: u64) -> Result<State, Fault<E>> {
        Ok(match kind {
            wire::HEADERS if size > MAX_FIELD_SECTION || self.trailers => {
                return Err(Fault::Malformed)
            }
            wire::HEADERS => State::Section {
                block: Vec::with_capacity(size as usize),
                left: size as usize,
            },
            wire::DATA if self.head.is_none() || self.trailers => return Err(Fault::Malformed),
            wire::DATA if size == 0 => State::FRAME_HEADER,
            wire::DATA => State::Data { left: size },
            // CANCEL_PUSH, SETTINGS, PUSH_PROMISE (no push was allowed), GOAWAY, MAX_PUSH_ID,
            // and HTTP/2's frame types: none belongs on a request stream.
            0x2..=0x9 | 0xd => return Err(Fault::Malformed),
            _ if size == 0 => State::FRAME_HEADER,
            _ => State::Skip { left: size },
        })
    }

    /// A whole field section: an interim head, the head, or the trailers.
    fn section<E>(&mut self, block: &[u8]) -> Result<(), Fault<E>> {
        if self.head.is_some() {
            self.trailers = true;
            return qpack::decode(block, &mut self.scratch, |_, _| {})
                .map_err(|_| Fault::Malformed);
        }
        let mut head = Head {
            fields: self.keep_fields.then(Vec::new),
            ..Head::default()
        };
        let mut bad = false;
        qpack::decode(block, &mut self.scratch, |name, value| {
            bad |= !take_field(&mut head, name, value);
        })
        .map_err(|_| Fault::Malformed)?;
        if bad || head.status == 0 {
            return Err(Fault::Malformed);
        }
        // An interim answer (1xx) is followed by the real head.
        if head.status >= 200 {
            self.head = Some(head);
        }
        Ok(())
    }

    /// At the stream's end: whether the answer was whole.
    pub fn finish<E>(&self) -> Result<(), Fault<E>> {
        let at_boundary = matches!(self.state, State::FrameHeader { len: 0, .. });
        let Some(head) = &self.head else {
            return Err(Fault::Malformed);
        };
        if !at_boundary || head.content_length.is_some_and(|n| n != self.body) {
            return Err(Fault::Malformed);
        }
        Ok(())
    }
}

/// Notes one field of a head; false when it makes the head malformed (a second or
/// unreadable `:status`, another pseudo-header or one after a regular field, a name with
/// upper case, CR, LF or NUL in a value, a `content-length` that is not a number, fields
/// that decode to more than [`MAX_FIELD_SECTION`]).
fn take_field(head: &mut Head, name: &[u8], value: &[u8]) -> bool {
    head.size += (name.len() + value.len() + 32) as u64;
    let forbidden = |b: &u8| matches!(b, b'\r' | b'\n' | b'\0');
    if head.size > MAX_FIELD_SECTION
        || name.iter().any(u8::is_ascii_uppercase)
        || value.iter().any(forbidden)
        || (head.regular && name.starts_with(b":"))
    {
        return false;
    }
    head.regular |= !name.starts_with(b":");
    match name {
        b":status" => {
            let status = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<u16>().ok());
            match status {
                Some(s) if head.status == 0 && value.len() == 3 && (100..=999).contains(&s) => {
                    head.status = s
                }
                _ => return false,
            }
        }
        [b':', ..] => return false,
        b"content-length" => {
            let n = std::str::from_utf8(value)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            match (n, head.content_length) {
                (Some(n), None) => head.content_length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return false,
            }
        }
        b"content-type" => head.event_stream = crate::proto::events::is_event_stream(value),
        b"content-encoding" => head.encoded = crate::proto::events::is_encoded(value),
        _ => {}
    }
    if let Some(fields) = head.fields.as_mut() {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        fields.push((text(name), text(value)));
    }
    true
}

/// Why reading stopped: the answer was malformed (as the RFC says, or unreadable to brink;
/// counted as `protocol`), or the body's reader stopped it.
#[derive(Debug, PartialEq, Eq)]
pub enum Fault<E> {
    Malformed,
    Stopped(E),
}

#[cfg(test)]
mod tests {
    use super::super::wire::{put_frame, put_literal, put_varint, DATA, HEADERS};
    use super::*;

    fn section(status: &str, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = vec![0, 0];
        put_literal(&mut block, ":status", status.as_bytes());
        for (n, v) in fields {
            put_literal(&mut block, n, v.as_bytes());
        }
        block
    }

    /// Reads `bytes` in pieces cut at `cuts`; the head's status and the body, or the fault.
    fn read(bytes: &[u8], cuts: &[usize]) -> Result<(u16, Vec<u8>), Fault<()>> {
        let mut a = Answer::new(true);
        let mut body = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain([&bytes.len()]) {
            let mut piece = &bytes[from..to];
            while !piece.is_empty() {
                let n = a.feed(piece, &mut |d: &[u8]| {
                    body.extend_from_slice(d);
                    Ok::<(), ()>(())
                })?;
                piece = &piece[n..];
            }
            from = to;
        }
        a.finish::<()>()?;
        Ok((a.head().map_or(0, |h| h.status), body))
    }

    fn whole_answer() -> Vec<u8> {
        let mut b = Vec::new();
        put_frame(&mut b, HEADERS, &section("103", &[("link", "</a>")]));
        put_frame(&mut b, 0x21, b"reserved frame type, skipped");
        put_frame(
            &mut b,
            HEADERS,
            &section("200", &[("content-length", "10")]),
        );
        put_frame(&mut b, DATA, b"hello");
        put_frame(&mut b, DATA, b"");
        put_frame(&mut b, 0x1f * 7 + 0x21, &[0u8; 300]);
        put_frame(&mut b, DATA, b", you");
        put_frame(&mut b, HEADERS, &[0, 0]); // trailers, empty
        b
    }

    #[test]
    fn an_answer_reads_the_same_cut_anywhere() {
        let bytes = whole_answer();
        let want = Ok((200, b"hello, you".to_vec()));
        assert_eq!(read(&bytes, &[]), want);
        for i in 0..=bytes.len() {
            assert_eq!(read(&bytes, &[i]), want, "cut at {i}");
        }
        let every: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(read(&bytes, &every), want);
    }

    #[test]
    fn the_head_keeps_its_fields_and_says_event_stream() {
        let mut b = Vec::new();
        let head = section(
            "200",
            &[("Content-Type", "text/event-stream"), ("x-a", "1")],
        );
        put_frame(&mut b, HEADERS, &head);
        let mut a = Answer::new(true);
        let n = a.feed(&b, &mut |_: &[u8]| Ok::<(), ()>(())).unwrap();
        assert_eq!(n, b.len());
        let h = a.head().unwrap();
        assert!(h.event_stream);
        let fields = h.fields.as_ref().unwrap();
        assert_eq!(
            fields[1],
            ("content-type".into(), "text/event-stream".into())
        );
    }

    #[test]
    fn malformed_answers_are_faults() {
        let frame = |kind, payload: &[u8]| {
            let mut b = Vec::new();
            put_frame(&mut b, kind, payload);
            b
        };
        let head = frame(HEADERS, &section("200", &[]));
        let join = |parts: &[&[u8]]| parts.concat();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("data before the head", frame(DATA, b"x")),
            ("no head at all", vec![]),
            ("only an interim head", frame(HEADERS, &section("100", &[]))),
            (
                "settings on a request stream",
                join(&[&head, &frame(0x4, b"")]),
            ),
            (
                "goaway on a request stream",
                join(&[&head, &frame(0x7, b"\x00")]),
            ),
            ("push promise", join(&[&head, &frame(0x5, b"\x00")])),
            ("http/2's ping type", join(&[&head, &frame(0x6, b"")])),
            (
                "cut inside a frame",
                join(&[&head, &frame(DATA, b"abc")[..3]]),
            ),
            ("cut inside a frame header", join(&[&head, &[0x00]])),
            (
                "data after trailers",
                join(&[&head, &head, &frame(DATA, b"x")]),
            ),
            ("no status", frame(HEADERS, &[0, 0])),
            (
                "status not three digits",
                frame(HEADERS, &section("20", &[])),
            ),
            (
                "two statuses",
                frame(
                    HEADERS,
                    &[&section("200", &[])[..], &section("200", &[])[2..]].concat(),
                ),
            ),
            (
                "a request pseudo-header",
                frame(HEADERS, &section("200", &[(":path", "/")])),
            ),
            (
                "upper case in a name",
                frame(HEADERS, &{
                    let mut s = section("200", &[]);
                    s.extend_from_slice(&[0x23, b'X', b'-', b'A', 0x01, b'1']);
                    s
                }),
            ),
            ("an unreadable section", frame(HEADERS, &[0x01, 0x00, 0xd9])),
            ("body longer than its length", {
                let h = frame(HEADERS, &section("200", &[("content-length", "2")]));
                join(&[&h, &frame(DATA, b"abc")])
            }),
            ("body shorter than its length", {
                let h = frame(HEADERS, &section("200", &[("content-length", "4")]));
                join(&[&h, &frame(DATA, b"abc")])
            }),
            (
                "two different lengths",
                frame(
                    HEADERS,
                    &section("200", &[("content-length", "1"), ("content-length", "2")]),
                ),
            ),
        ];
        for (what, bytes) in cases {
            assert_eq!(read(&bytes, &[]), Err(Fault::Malformed), "{what}");
        }
    }

    #[test]
    fn huge_frames_cost_no_memory() {
        // A head declared larger than brink reads is refused before any of it is held.
        let mut b = Vec::new();
        put_varint(&mut b, HEADERS);
        put_varint(&mut b, MAX_FIELD_SECTION + 1);
        let mut a = Answer::new(false);
        let fed = a.feed(&b, &mut |_: &[u8]| Ok::<(), ()>(()));
        assert_eq!(fed, Err(Fault::Malformed));
        // Unknown frames and DATA of 2^61 bytes pass through without being kept.
        let mut b = Vec::new();
        put_varint(&mut b, 0x21);
        put_varint(&mut b, 1 << 61);
        let mut a = Answer::new(false);
        let chunk = vec![0u8; 64 * 1024];
        a.feed(&b, &mut |_: &[u8]| Ok::<(), ()>(())).unwrap();
        for _ in 0..100 {
            assert_eq!(
                a.feed(&chunk, &mut |_: &[u8]| Ok::<(), ()>(())),
                Ok(chunk.len())
            );
        }
        assert!(matches!(a.state, State::Skip { left } if left == (1 << 61) - 100 * 64 * 1024));
        assert_eq!(a.finish::<()>(), Err(Fault::Malformed));
    }

    #[test]
    fn the_body_reader_can_stop_the_answer() {
        let mut b = Vec::new();
        put_frame(&mut b, HEADERS, &section("200", &[]));
        put_frame(&mut b, DATA, b"abc");
        let mut a = Answer::new(false);
        let n = a.feed(&b, &mut |_: &[u8]| Ok::<(), &str>(())).unwrap();
        let fed = a.feed(&b[n..], &mut |_: &[u8]| Err("enough"));
        assert_eq!(fed, Err(Fault::Stopped("enough")));
    }
}
