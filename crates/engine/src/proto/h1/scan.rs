//! A single-pass scanner for the response heads servers actually send: `HTTP/1.x NNN reason`,
//! then `Name: value` lines ending in CRLF. It accepts exactly the bytes `httparse` accepts and
//! gives up (`None`) on anything else (a partial head, bare LF line ends, obs-fold, an invalid
//! byte, too many headers), so `httparse` stays the authority on every edge case and error and
//! this path only has to be fast: no header array to initialise, values checked eight bytes at
//! a time. Parsing the head is most of the user-space work per request.

use super::fields::{Fields, MAX_HEADERS};

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// A head scanned in full: its status, its length in bytes, and its framing fields.
pub struct Scanned {
    pub status: u16,
    pub len: usize,
    pub fields: Fields,
}

/// Scans a complete, plainly formatted head; `None` means "ask httparse".
pub fn scan(buf: &[u8]) -> Option<Scanned> {
    let line = buf.get(..13)?;
    if &line[..7] != b"HTTP/1." || line[8] != b' ' || line[12] != b' ' {
        return None;
    }
    let http10 = match line[7] {
        b'0' => true,
        b'1' => false,
        _ => return None,
    };
    let mut status = 0u16;
    for &d in &line[9..12] {
        let v = d.wrapping_sub(b'0');
        if v > 9 {
            return None;
        }
        status = status * 10 + u16::from(v);
    }
    let mut fields = Fields::new(http10);
    let mut i = text_end(buf, 13)? + 2;
    for _ in 0..=MAX_HEADERS {
        if buf.get(i..i + 2)? == b"\r\n" {
            return Some(Scanned {
                status,
                len: i + 2,
                fields,
            });
        }
        let start = i;
        while is_tchar(*buf.get(i)?) {
            i += 1;
        }
        if i == start || buf[i] != b':' {
            return None;
        }
        let value_end = text_end(buf, i + 1)?;
        fields.header(&buf[start..i], &buf[i + 1..value_end]).ok()?;
        i = value_end + 2;
    }
    None // more headers than httparse is given room for
}

/// Index of the CR that ends the text (reason phrase or header value) starting at `from`,
/// checking that every byte before it is HTAB, SP, VCHAR or obs-text and that LF follows.
fn text_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    // Whole words with no byte below 0x20 and no DEL are plain text.
    while let Some(word) = buf.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let below_space = x.wrapping_sub(0x20 * LO) & !x & HI;
        let del = (x ^ (0x7f * LO)).wrapping_sub(LO) & !(x ^ (0x7f * LO)) & HI;
        if below_space | del != 0 {
            break;
        }
        i += 8;
    }
    loop {
        match *buf.get(i)? {
            b'\r' => return (*buf.get(i + 1)? == b'\n').then_some(i),
            b'\t' | 0x20..=0x7e | 0x80..=0xff => i += 1,
            _ => return None,
        }
    }
}

/// RFC 9110 `tchar`: the bytes of a header name.
fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

static TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric()
            || matches!(b, b'!' | b'#'..=b'\'' | b'*' | b'+' | b'-' | b'.' | b'^'..=b'`' | b'|' | b'~');
        i += 1;
    }
    t
};
