//! HTTP/2 frames on the wire (RFC 9113 §4, §6): the 9-byte header, the types and flags the
//! client uses, padding, and the request's header block in HPACK (RFC 7541) written without
//! the dynamic table: every field a literal (names from the static table where it has them),
//! so a block is a pure function of the request and the server's table never matters.

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;

/// The largest frame payload either side may send without asking (and all brink accepts).
pub const MAX_FRAME: usize = 16_384;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

/// A frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

pub fn parse_head(b: &[u8]) -> Head {
    Head {
        len: (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]),
        kind: b[3],
        flags: b[4],
        stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
    }
}

pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A frame whose payload is one 32-bit value (RST_STREAM, WINDOW_UPDATE).
pub fn put_u32(out: &mut Vec<u8>, kind: u8, stream: u32, value: u32) {
    put_head(out, 4, kind, 0, stream);
    out.extend_from_slice(&value.to_be_bytes());
}

/// A HEADERS or DATA payload without its padding and (HEADERS) priority fields; `None` when
/// the padding is longer than the payload.
pub fn unpad(flags: u8, kind: u8, payload: &[u8]) -> Option<&[u8]> {
    let mut p = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = usize::from(*p.first()?);
        p = &p[1..];
    }
    if kind == HEADERS && flags & PRIORITY != 0 {
        p = p.get(5..)?;
    }
    p.get(..p.len().checked_sub(pad)?)
}

/// An HPACK integer with an `n`-bit prefix whose high bits are `mask`.
fn put_int(out: &mut Vec<u8>, mask: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(mask | v as u8);
        return;
    }
    out.push(mask | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128 + 128) as u8);
        v /= 128;
    }
    out.push(v as u8);
}

/// A string literal, not Huffman-coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// A field literal without indexing whose name is static-table entry `index` (0: a new name).
fn put_field(out: &mut Vec<u8>, index: usize, name: &[u8], value: &[u8]) {
    put_int(out, 0, 4, index);
    if index == 0 {
        put_str(out, name);
    }
    put_str(out, value);
}

/// The header block of a request: its pseudo-fields, then `headers` (names lowercased).
pub fn request_block<'a>(
    out: &mut Vec<u8>,
    method: &str,
    https: bool,
    authority: &str,
    path: &[u8],
    headers: impl Iterator<Item = (&'a str, &'a [u8])>,
) {
    match method {
        "GET" => out.push(0x82),
        "POST" => out.push(0x83),
        m => put_field(out, 2, b"", m.as_bytes()),
    }
    out.push(if https { 0x87 } else { 0x86 });
    match path {
        b"/" => out.push(0x84),
        p => put_field(out, 4, b"", p),
    }
    put_field(out, 1, b"", authority.as_bytes());
    let mut lower = Vec::new();
    for (name, value) in headers {
        lower.clear();
        lower.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
        put_field(out, 0, &lower, value);
    }
}

/// Whether `name` is a connection-specific field, which HTTP/2 forbids (RFC 9113 §8.2.2).
pub fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_block_decodes_to_the_request() {
        let mut block = Vec::new();
        let headers = [("X-Trace", &b"abc"[..]), ("accept", b"*/*")];
        request_block(
            &mut block,
            "PATCH",
            false,
            "127.0.0.1:8080",
            b"/items?page=300",
            headers.iter().map(|(n, v)| (*n, *v)),
        );
        let mut text: Vec<(String, String)> = Vec::new();
        super::super::hpack::Decoder::default()
            .decode(&block, |n, v| {
                text.push((
                    String::from_utf8_lossy(n).to_string(),
                    String::from_utf8_lossy(v).to_string(),
                ))
            })
            .expect("valid HPACK");
        let want = [
            (":method", "PATCH"),
            (":scheme", "http"),
            (":path", "/items?page=300"),
            (":authority", "127.0.0.1:8080"),
            ("x-trace", "abc"),
            ("accept", "*/*"),
        ];
        assert_eq!(
            text,
            want.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn long_values_use_continued_integers() {
        let mut block = Vec::new();
        let long = vec![b'a'; 300];
        request_block(&mut block, "GET", true, "h", &long, std::iter::empty());
        let mut fields: Vec<Vec<u8>> = Vec::new();
        super::super::hpack::Decoder::default()
            .decode(&block, |_, v| fields.push(v.to_vec()))
            .expect("valid HPACK");
        assert_eq!(fields[2], long);
        assert_eq!(fields[1], b"https");
    }

    #[test]
    fn padding_longer_than_the_frame_is_refused() {
        assert_eq!(unpad(PADDED, DATA, &[2, b'x', 0, 0]), Some(&b"x"[..]));
        assert_eq!(unpad(PADDED, DATA, &[5, b'x']), None);
        assert_eq!(
            unpad(PRIORITY, HEADERS, &[0, 0, 0, 1, 16, 0x82]),
            Some(&[0x82][..])
        );
        assert_eq!(unpad(PRIORITY, HEADERS, &[0, 0]), None);
    }
}
