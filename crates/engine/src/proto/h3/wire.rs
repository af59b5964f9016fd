//! HTTP/3's wire pieces brink writes and names (RFC 9114, RFC 9204): QUIC variable-length
//! integers, frame and stream types, the error codes a server may end a stream or connection
//! with, the client's control stream, and a request's HEADERS frame. brink writes no Huffman
//! and no dynamic table: every field line is a static-table reference or a literal, so a
//! request costs one pass over its bytes and the server needs no decoder state.

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const SETTINGS: u64 = 0x4;
pub const GOAWAY: u64 = 0x7;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const CONTROL_STREAM: u64 = 0x0;
pub const ENCODER_STREAM: u64 = 0x2;
pub const DECODER_STREAM: u64 = 0x3;

pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;

/// The largest field section (head or trailers) brink reads, and says it reads
/// (SETTINGS_MAX_FIELD_SECTION_SIZE): a larger one ends the request as a protocol error.
pub const MAX_FIELD_SECTION: u64 = 64 * 1024;

/// An HTTP/3 or QPACK error code's name (RFC 9114 §8.1, RFC 9204 §6), or `None` for a code
/// neither defines.
pub fn code_name(code: u64) -> Option<&'static str> {
    const H3: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    const QPACK: [&str; 3] = [
        "QPACK_DECOMPRESSION_FAILED",
        "QPACK_ENCODER_STREAM_ERROR",
        "QPACK_DECODER_STREAM_ERROR",
    ];
    let at = |base: u64, names: &'static [&'static str]| {
        code.checked_sub(base)
            .and_then(|i| names.get(usize::try_from(i).ok()?))
            .copied()
    };
    at(0x100, &H3).or_else(|| at(0x200, &QPACK))
}

/// A code as a result names it: its HTTP/3 or QPACK name, else in hex.
pub fn app_code(code: u64) -> String {
    code_name(code).map_or_else(|| format!("0x{code:x}"), str::to_string)
}

/// A QUIC transport error code's name (RFC 9000 §20.1); a TLS alert as `CRYPTO_ERROR(n)`.
pub fn transport_code(code: u64) -> String {
    const NAMES: [&str; 17] = [
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
    ];
    match usize::try_from(code).ok().and_then(|i| NAMES.get(i)) {
        Some(name) => name.to_string(),
        None if (0x100..0x200).contains(&code) => format!("CRYPTO_ERROR({})", code - 0x100),
        None => format!("0x{code:x}"),
    }
}

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16); `v` below 2^62.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// Reads a variable-length integer from the start of `b`: its value and length, or `None`
/// when `b` holds only part of it.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &x| (v << 8) | u64::from(x));
    Some((v, len))
}

/// Appends a frame of `kind` holding `payload`.
pub fn put_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    put_varint(out, kind);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// The client's control stream as it opens: its type, and SETTINGS saying brink keeps no
/// QPACK dynamic table (the defaults) and reads field sections up to [`MAX_FIELD_SECTION`].
pub fn control_stream() -> Vec<u8> {
    let mut settings = Vec::new();
    put_varint(&mut settings, 0x6); // SETTINGS_MAX_FIELD_SECTION_SIZE
    put_varint(&mut settings, MAX_FIELD_SECTION);
    let mut out = Vec::new();
    put_varint(&mut out, CONTROL_STREAM);
    put_frame(&mut out, SETTINGS, &settings);
    out
}

/// Appends a QPACK prefixed integer (RFC 7541 §5.1): `v` in the low `bits` bits of a first
/// byte that starts with `flags`, then 7-bit continuation bytes.
fn put_prefixed(out: &mut Vec<u8>, flags: u8, bits: u32, v: usize) {
    let max = (1usize << bits) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A static table entry's index (RFC 9204 Appendix A) for the request fields brink names by
/// reference.
const AUTHORITY: usize = 0;
const PATH_SLASH: usize = 1;
const PATH: usize = 1;
const SCHEME_HTTPS: usize = 23;

/// The methods the static table holds whole, by index.
const METHODS: [(&str, usize); 7] = [
    ("CONNECT", 15),
    ("DELETE", 16),
    ("GET", 17),
    ("HEAD", 18),
    ("OPTIONS", 19),
    ("POST", 20),
    ("PUT", 21),
];
/// `:method`'s name, for a method the table does not hold.
const METHOD_NAME: usize = 15;

/// A request's field section: the pseudo-headers, then `headers` as literals (names
/// lowercased: HTTP/3 carries no upper case in names; connection-specific ones left out).
pub struct Head<'a> {
    pub method: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a [u8])],
}

/// Appends `head` as a HEADERS frame.
pub fn put_headers(out: &mut Vec<u8>, head: &Head<'_>) {
    let mut block = Vec::with_capacity(64 + head.path.len() + head.authority.len());
    block.extend_from_slice(&[0, 0]); // no dynamic table: Required Insert Count 0, Base 0
    let indexed = |b: &mut Vec<u8>, i: usize| put_prefixed(b, 0xc0, 6, i);
    let named = |b: &mut Vec<u8>, i: usize, value: &[u8]| {
        put_prefixed(b, 0x50, 4, i);
        put_prefixed(b, 0x00, 7, value.len());
        b.extend_from_slice(value);
    };
    match METHODS.iter().find(|(m, _)| *m == head.method) {
        Some(&(_, i)) => indexed(&mut block, i),
        None => named(&mut block, METHOD_NAME, head.method.as_bytes()),
    }
    indexed(&mut block, SCHEME_HTTPS);
    named(&mut block, AUTHORITY, head.authority.as_bytes());
    match head.path {
        "/" => indexed(&mut block, PATH_SLASH),
        p => named(&mut block, PATH, p.as_bytes()),
    }
    for (name, value) in head.headers {
        if !connection_specific(name, value) {
            put_literal(&mut block, name, value);
        }
    }
    put_varint(out, HEADERS);
    put_varint(out, block.len() as u64);
    out.extend_from_slice(&block);
}

/// Whether a header belongs to an HTTP/1.1 connection and has no meaning in HTTP/3, where a
/// request carrying it is malformed (RFC 9114 §4.2): it is left out, as HTTP/2 leaves it out.
fn connection_specific(name: &str, value: &[u8]) -> bool {
    const NAMES: [&str; 5] = [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ];
    NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
        || (name.eq_ignore_ascii_case("te") && !value.eq_ignore_ascii_case(b"trailers"))
}

/// Appends a field line with a literal name (lowercased) and value, neither Huffman-coded.
pub fn put_literal(block: &mut Vec<u8>, name: &str, value: &[u8]) {
    put_prefixed(block, 0x20, 3, name.len());
    block.extend(name.bytes().map(|c| c.to_ascii_lowercase()));
    put_prefixed(block, 0x00, 7, value.len());
    block.extend_from_slice(value);
}

/// Appends a DATA frame's header for `len` bytes of body.
pub fn put_data_header(out: &mut Vec<u8>, len: usize) {
    put_varint(out, DATA);
    put_varint(out, len as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for v in [
            0,
            63,
            64,
            16383,
            16384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(varint(&b), Some((v, b.len())), "{v}");
            assert_eq!(varint(&b[..b.len() - 1]), None, "{v} cut");
        }
    }

    #[test]
    fn codes_have_their_rfc_names() {
        assert_eq!(code_name(0x10b), Some("H3_REQUEST_REJECTED"));
        assert_eq!(code_name(0x107), Some("H3_EXCESSIVE_LOAD"));
        assert_eq!(code_name(0x110), Some("H3_VERSION_FALLBACK"));
        assert_eq!(code_name(0x202), Some("QPACK_DECODER_STREAM_ERROR"));
        assert_eq!(code_name(0x111), None);
        assert_eq!(code_name(0xff), None);
        assert_eq!(app_code(0x1234), "0x1234");
        assert_eq!(transport_code(0xa), "PROTOCOL_VIOLATION");
        assert_eq!(transport_code(0x150), "CRYPTO_ERROR(80)");
        assert_eq!(transport_code(0x11), "0x11");
    }

    #[test]
    fn long_values_use_continuation_bytes() {
        let mut b = Vec::new();
        put_prefixed(&mut b, 0x00, 7, 1337);
        assert_eq!(b, [0x7f, 0xba, 0x09]);
    }
}
