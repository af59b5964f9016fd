//! WebSocket framing (RFC 6455 §5), sans-I/O and strict as a client must be: what brink
//! sends is masked; what a server sends is read against every rule a hostile or broken
//! server may break (a masked frame, reserved bits, an unknown opcode, a control frame over
//! 125 bytes or fragmented, a length over the message limit or with its top bit set, a
//! continuation out of place, text that is not UTF-8, a close code nobody may send). A
//! message is never held beyond `--max-message-size`: the length is judged from the frame
//! header, before any payload is read.

/// Opcodes (RFC 6455 §5.2).
pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// The largest payload of a control frame.
const MAX_CONTROL: usize = 125;

/// What a server's bytes said, one event at a time.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// A whole data message (its fragments joined): text (checked UTF-8) or binary.
    Message { text: bool, data: Vec<u8> },
    /// A ping, to be answered with a pong carrying its payload.
    Ping(Vec<u8>),
    /// A pong, with the payload of the ping it answers (unsolicited ones are allowed).
    Pong(Vec<u8>),
    /// The server closes: its code (`None`: it gave none) and reason.
    Close { code: Option<u16>, reason: String },
}

/// A rule the server broke; each closes the connection (1002, 1007 or 1009 as RFC 6455 says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    Masked,
    Reserved,
    Opcode(u8),
    ControlTooLong,
    ControlFragmented,
    /// The top bit of a 64-bit length was set.
    LengthTopBit,
    /// A message longer than the limit (the frame announced it, or its fragments add to it).
    TooBig,
    /// A continuation with no message begun, or a new message before the last one ended.
    Fragments,
    NotUtf8,
    BadClose,
}

impl Violation {
    /// The rule a server's frame broke, in words (RFC 6455 §5).
    pub fn rule(self) -> &'static str {
        match self {
            Violation::Masked => "the server masked a frame (only clients mask)",
            Violation::Reserved => "a frame set a reserved bit no extension agreed",
            Violation::Opcode(_) => "a frame has an opcode RFC 6455 does not define",
            Violation::ControlTooLong => "a control frame is longer than 125 bytes",
            Violation::ControlFragmented => "a control frame is fragmented",
            Violation::LengthTopBit => "a frame's 64-bit length has its top bit set",
            Violation::TooBig => "a message is longer than --max-message-size",
            Violation::Fragments => {
                "a continuation frame came with no message begun, or a message began before the last ended"
            }
            Violation::NotUtf8 => "a text message is not UTF-8",
            Violation::BadClose => "a close frame's code or reason is invalid",
        }
    }

    /// The close code brink answers this violation with.
    pub fn close_code(self) -> u16 {
        match self {
            Violation::TooBig => 1009,
            Violation::NotUtf8 => 1007,
            Violation::Masked
            | Violation::Reserved
            | Violation::Opcode(_)
            | Violation::ControlTooLong
            | Violation::ControlFragmented
            | Violation::LengthTopBit
            | Violation::Fragments
            | Violation::BadClose => 1002,
        }
    }
}

/// Appends a client frame (FIN set, masked with `key`) of `payload` to `out`.
pub fn encode(opcode: u8, payload: &[u8], key: [u8; 4], out: &mut Vec<u8>) {
    out.push(0x80 | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&key);
    let start = out.len();
    out.extend_from_slice(payload);
    mask(&mut out[start..], key);
}

/// A close frame's payload: `code`, then nothing (brink gives no reason).
pub fn close_payload(code: u16) -> [u8; 2] {
    code.to_be_bytes()
}

/// XORs `data` with the repeating `key` (masking and unmasking are the same).
pub fn mask(data: &mut [u8], key: [u8; 4]) {
    let word = u32::from_ne_bytes(key);
    let mut chunks = data.chunks_exact_mut(4);
    for c in &mut chunks {
        let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]) ^ word;
        c.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= key[i];
    }
}

/// Reads a server's frames into [`Event`]s, keeping at most one message of `max` bytes.
#[derive(Debug)]
pub struct Decoder {
    max: usize,
    /// The message being reassembled: its opcode and the bytes so far.
    partial: Option<(u8, Vec<u8>)>,
    /// A message's buffer handed back ([`Decoder::recycle`]) for the next message: one
    /// allocation per connection, not per message.
    spare: Vec<u8>,
}

/// The largest message buffer kept for reuse.
const RECYCLE_MAX: usize = 64 * 1024;

/// One frame's header, read before its payload.
struct Header {
    fin: bool,
    opcode: u8,
    len: usize,
    at: usize,
}

impl Decoder {
    pub fn new(max: usize) -> Decoder {
        Decoder {
            max,
            partial: None,
            spare: Vec::new(),
        }
    }

    /// Takes back a message's buffer once its data is read, for the next message.
    pub fn recycle(&mut self, data: Vec<u8>) {
        if data.capacity() <= RECYCLE_MAX && data.capacity() > self.spare.capacity() {
            self.spare = data;
        }
    }

    /// The next event in `buf`, and how many bytes it took; `Ok(None)` when `buf` holds no
    /// whole frame yet (the bytes it needs are bounded: a frame over the limit is refused
    /// from its header). Bytes taken by a fragment that ends no message give `Ok(Some((n,
    /// None)))`.
    pub fn next(&mut self, buf: &[u8]) -> Result<Option<(usize, Option<Event>)>, Violation> {
        let Some(h) = self.header(buf)? else {
            return Ok(None);
        };
        let end = h.at + h.len;
        if buf.len() < end {
            return Ok(None);
        }
        let payload = &buf[h.at..end];
        let event = match h.opcode {
            CLOSE => Some(close(payload)?),
            PING => Some(Event::Ping(payload.to_vec())),
            PONG => Some(Event::Pong(payload.to_vec())),
            _ => self.data(h.fin, h.opcode, payload)?,
        };
        Ok(Some((end, event)))
    }

    /// A frame's header, checked; `None` until all of it is in `buf`.
    fn header(&self, buf: &[u8]) -> Result<Option<Header>, Violation> {
        let [b0, b1, ..] = *buf else {
            return Ok(None);
        };
        let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
        if b0 & 0x70 != 0 {
            return Err(Violation::Reserved);
        }
        if b1 & 0x80 != 0 {
            return Err(Violation::Masked);
        }
        let control = opcode & 0x8 != 0;
        match opcode {
            CONTINUATION | TEXT | BINARY | CLOSE | PING | PONG => {}
            other => return Err(Violation::Opcode(other)),
        }
        let (len, at) = match b1 & 0x7F {
            126 => match buf.get(2..4) {
                Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
                None => return Ok(None),
            },
            127 => match buf.get(2..10) {
                Some(b) => {
                    let n = u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                    if n >> 63 != 0 {
                        return Err(Violation::LengthTopBit);
                    }
                    (n, 10)
                }
                None => return Ok(None),
            },
            n => (u64::from(n), 2),
        };
        if control && !fin {
            return Err(Violation::ControlFragmented);
        }
        if control && len > MAX_CONTROL as u64 {
            return Err(Violation::ControlTooLong);
        }
        let so_far = self.partial.as_ref().map_or(0, |(_, d)| d.len()) as u64;
        if !control && so_far.saturating_add(len) > self.max as u64 {
            return Err(Violation::TooBig);
        }
        Ok(Some(Header {
            fin,
            opcode,
            len: len as usize,
            at,
        }))
    }

    /// A data frame: a whole message, a first fragment, or a continuation.
    fn data(&mut self, fin: bool, opcode: u8, payload: &[u8]) -> Result<Option<Event>, Violation> {
        let (kind, data) = match (opcode, self.partial.take()) {
            (CONTINUATION, Some((kind, mut data))) => {
                data.extend_from_slice(payload);
                (kind, data)
            }
            (CONTINUATION, None) | (_, Some(_)) => return Err(Violation::Fragments),
            (kind, None) => {
                let mut data = std::mem::take(&mut self.spare);
                data.clear();
                data.extend_from_slice(payload);
                (kind, data)
            }
        };
        if !fin {
            self.partial = Some((kind, data));
            return Ok(None);
        }
        let text = kind == TEXT;
        if text && std::str::from_utf8(&data).is_err() {
            return Err(Violation::NotUtf8);
        }
        Ok(Some(Event::Message { text, data }))
    }
}

/// A close frame's code and reason (RFC 6455 §5.5.1, §7.4).
fn close(payload: &[u8]) -> Result<Event, Violation> {
    match payload {
        [] => Ok(Event::Close {
            code: None,
            reason: String::new(),
        }),
        [_] => Err(Violation::BadClose),
        [a, b, reason @ ..] => {
            let code = u16::from_be_bytes([*a, *b]);
            let allowed = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            let reason = std::str::from_utf8(reason).map_err(|_| Violation::NotUtf8)?;
            if !allowed {
                return Err(Violation::BadClose);
            }
            Ok(Event::Close {
                code: Some(code),
                reason: reason.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame (never masked) of `payload`.
    fn server(b0: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![b0];
        match payload.len() {
            n if n < 126 => f.push(n as u8),
            n if n <= 0xFFFF => {
                f.push(126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(payload);
        f
    }

    fn events(d: &mut Decoder, mut buf: &[u8]) -> Result<Vec<Event>, Violation> {
        let mut out = Vec::new();
        while let Some((n, e)) = d.next(buf)? {
            out.extend(e);
            buf = &buf[n..];
        }
        assert!(buf.is_empty(), "left {} bytes", buf.len());
        Ok(out)
    }

    #[test]
    fn client_frames_are_masked_and_read_back() {
        for len in [0, 5, 125, 126, 65535, 65536] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut f = Vec::new();
            encode(BINARY, &payload, [1, 2, 3, 4], &mut f);
            assert_eq!(f[0], 0x82);
            assert!(f[1] & 0x80 != 0, "masked");
            let at = f.len() - len;
            let mut body = f[at..].to_vec();
            mask(&mut body, [1, 2, 3, 4]);
            assert_eq!(body, payload, "len {len}");
        }
    }

    #[test]
    fn messages_fragments_and_control_frames() {
        let mut d = Decoder::new(1 << 20);
        let mut buf = server(0x81, b"hello");
        buf.extend(server(0x01, b"he"));
        buf.extend(server(0x89, b"p"));
        buf.extend(server(0x80, b"llo"));
        buf.extend(server(0x8A, b""));
        buf.extend(server(0x88, &[0x03, 0xE8, b'b', b'y', b'e']));
        let got = events(&mut d, &buf).unwrap();
        let hello = Event::Message {
            text: true,
            data: b"hello".to_vec(),
        };
        assert_eq!(
            got,
            vec![
                hello,
                Event::Ping(b"p".to_vec()),
                Event::Message {
                    text: true,
                    data: b"hello".to_vec()
                },
                Event::Pong(Vec::new()),
                Event::Close {
                    code: Some(1000),
                    reason: "bye".into()
                },
            ]
        );
        // Byte by byte, nothing is read until a frame is whole.
        let frame = server(0x82, &[7; 300]);
        let mut d = Decoder::new(1 << 20);
        for cut in 0..frame.len() {
            assert_eq!(d.next(&frame[..cut]), Ok(None), "cut {cut}");
        }
        assert!(matches!(d.next(&frame), Ok(Some((304, Some(_))))));
    }

    #[test]
    fn every_broken_rule_is_named() {
        let cases: Vec<(Vec<u8>, Violation)> = vec![
            (vec![0x81, 0x85, 0, 0, 0, 0, b'h'], Violation::Masked),
            (server(0xC1, b"x"), Violation::Reserved),
            (server(0x83, b"x"), Violation::Opcode(3)),
            (server(0x89, &[0; 126]), Violation::ControlTooLong),
            (server(0x09, b""), Violation::ControlFragmented),
            (server(0x80, b"x"), Violation::Fragments),
            (server(0x81, &[0xFF, 0xFE]), Violation::NotUtf8),
            (server(0x88, &[3]), Violation::BadClose),
            (server(0x88, &[0x03, 0xED]), Violation::BadClose),
            (server(0x82, &[0; 2000]), Violation::TooBig),
        ];
        for (bytes, want) in cases {
            let mut d = Decoder::new(1000);
            assert_eq!(events(&mut d, &bytes), Err(want), "{bytes:02x?}");
        }
        // A new message while one is in fragments.
        let mut d = Decoder::new(1000);
        let mut buf = server(0x01, b"a");
        buf.extend(server(0x81, b"b"));
        assert_eq!(events(&mut d, &buf), Err(Violation::Fragments));
    }

    #[test]
    fn hostile_lengths_are_refused_from_the_header() {
        // 2^63 bytes announced: refused at once, from ten bytes.
        let mut f = vec![0x82, 127];
        f.extend_from_slice(&(1u64 << 63).to_be_bytes());
        assert_eq!(Decoder::new(1 << 20).next(&f), Err(Violation::LengthTopBit));
        // 2^62: over the limit, refused before a byte of it is read.
        let mut f = vec![0x82, 127];
        f.extend_from_slice(&(1u64 << 62).to_be_bytes());
        assert_eq!(Decoder::new(1 << 20).next(&f), Err(Violation::TooBig));
        // An endless fragmented message: refused when its fragments pass the limit.
        let mut d = Decoder::new(10_000);
        let first = server(0x02, &[1; 4000]);
        let more = server(0x00, &[1; 4000]);
        assert!(matches!(d.next(&first), Ok(Some((_, None)))));
        assert!(matches!(d.next(&more), Ok(Some((_, None)))));
        assert_eq!(d.next(&more), Err(Violation::TooBig));
    }
}
