//! One histogram shape for the whole project: microseconds from 1 µs to 1 h at 3 significant
//! digits. Using the same bounds everywhere is what makes every merge exact. Histograms leave
//! the process in the standard HdrHistogram form (V2 encoding, DEFLATE, base64: what
//! HdrHistogram interval logs store), so HdrHistogram libraries in any language decode them and
//! a coordinator can merge the histograms of many runs or workers exactly.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use std::io::Read;

/// Latency histogram in microseconds.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Largest trackable value: one hour in microseconds. Larger values are clamped to it.
pub const HIST_MAX_US: u64 = 3_600_000_000;

/// Significant decimal digits every histogram keeps.
pub const HIST_DIGITS: u8 = 3;

/// A fresh, empty histogram with the project's bounds.
pub fn new_histogram() -> Histogram {
    // The bounds are constants that hdrhistogram accepts; failure here is a programming error.
    Histogram::new_with_bounds(1, HIST_MAX_US, HIST_DIGITS)
        .expect("static histogram bounds are valid")
}

/// `h` as base64 of its V2 + DEFLATE encoding (the HdrHistogram interval-log form).
pub fn encode(h: &Histogram) -> String {
    let mut bytes = Vec::new();
    // Serialising into memory fails only on a histogram the library cannot represent; the
    // project's bounds are not such a histogram, so an empty string is never produced in practice.
    if V2DeflateSerializer::new().serialize(h, &mut bytes).is_err() {
        return String::new();
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `h` as base64 of its plain V2 encoding (no DEFLATE): what workers send their coordinator,
/// which reads it sparse ([`crate::sparse::Sparse`]) without inflating it first. Any
/// HdrHistogram V2 decoder reads it too.
pub fn encode_plain(h: &Histogram) -> String {
    let mut bytes = Vec::new();
    if hdrhistogram::serialization::V2Serializer::new()
        .serialize(h, &mut bytes)
        .is_err()
    {
        return String::new();
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Why a stored histogram could not be read back.
#[derive(Clone, Debug, PartialEq)]
pub enum DecodeError {
    /// The text is not base64.
    NotBase64(String),
    /// The bytes are not an HdrHistogram V2 encoding (compressed or not).
    NotHdr(String),
    /// It holds values beyond the project's bounds (1 us to 1 hour).
    OutOfBounds(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::NotBase64(e) => write!(f, "histogram is not base64: {e}"),
            DecodeError::NotHdr(e) => write!(f, "not an HdrHistogram V2 encoding: {e}"),
            DecodeError::OutOfBounds(e) => write!(f, "histogram values out of bounds: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes what [`encode`] (or any HdrHistogram V2 encoder, compressed or not) produced, into
/// the project's bounds so it merges with any other histogram here.
pub fn decode(text: &str) -> Result<Histogram, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| DecodeError::NotBase64(e.to_string()))?;
    // Checked first: the library would make room for whatever length a header claims.
    let plain = plain_v2(bytes)?;
    let read: Histogram = Deserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(|e| DecodeError::NotHdr(format!("{e:?}")))?;
    let mut h = new_histogram();
    h.add(&read)
        .map_err(|e| DecodeError::OutOfBounds(format!("{e:?}")))?;
    Ok(h)
}

/// The V2 cookies, plain and DEFLATE-compressed (HdrHistogram's own values).
pub(crate) const V2: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE: u32 = 0x1c84_9304 | 0x10;
/// The V2 header: cookie, payload length, normalizing offset, digits, lowest, highest, ratio.
pub(crate) const HEADER: usize = 40;
/// The most bytes a plain V2 encoding may inflate to: every counter of the project's bounds
/// at 9 bytes takes a sixtieth of it; other bounds may take more, no encoding more than this.
const MOST: usize = 16 << 20;

pub(crate) fn cookie(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The plain V2 encoding in `bytes` (inflated when compressed, never past [`MOST`]), its
/// payload as long as its header says. The library takes a header's word for the length and
/// makes room for it: a line of sixty bytes claiming 4 GiB took that much from a coordinator.
pub(crate) fn plain_v2(bytes: Vec<u8>) -> Result<Vec<u8>, DecodeError> {
    let plain = match cookie(&bytes, 0) {
        Some(V2_DEFLATE) => inflate(&bytes)?,
        Some(V2) => bytes,
        _ => return Err(DecodeError::NotHdr("no V2 cookie".into())),
    };
    if cookie(&plain, 0) != Some(V2) {
        return Err(DecodeError::NotHdr("no V2 cookie inside".into()));
    }
    let payload = cookie(&plain, 4).ok_or_else(|| DecodeError::NotHdr("cut header".into()))?;
    if plain.len() < HEADER || plain.len() - HEADER != payload as usize {
        return Err(DecodeError::NotHdr("payload length does not match".into()));
    }
    Ok(plain)
}

/// The plain V2 encoding inside a compressed one, no longer than [`MOST`].
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let bad = |e: String| DecodeError::NotHdr(e);
    let len = cookie(bytes, 4).ok_or_else(|| bad("cut header".into()))? as usize;
    let body = bytes
        .get(8..8 + len)
        .ok_or_else(|| bad("cut compressed payload".into()))?;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .take(MOST as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| bad(e.to_string()))?;
    if out.len() > MOST {
        return Err(bad(format!("inflates past {} MiB", MOST >> 20)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_is_exact() {
        let mut h = new_histogram();
        for v in [1, 7, 250, 999, 1_000, 12_345, 3_000_000, HIST_MAX_US] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
        let empty = decode(&encode(&new_histogram())).unwrap();
        assert!(empty.is_empty());
        assert!(matches!(
            decode("not base64!"),
            Err(DecodeError::NotBase64(_))
        ));
        assert!(matches!(decode("aGVsbG8="), Err(DecodeError::NotHdr(_))));
    }

    /// A header that claims a payload of 4 GiB, plain or inside DEFLATE, is refused as it is,
    /// before anything makes room for it.
    #[test]
    fn a_header_claiming_a_huge_payload_is_refused_at_once() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut h = new_histogram();
        h.saturating_record(1_000);
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        plain[4..8].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        let e = decode(&b64(&plain)).unwrap_err();
        assert!(e.to_string().contains("payload length"), "{e}");
        // The same header, compressed as V2 + DEFLATE.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, &plain).unwrap();
        let body = z.finish().unwrap();
        let mut deflated = (0x1c84_9304u32 | 0x10).to_be_bytes().to_vec();
        deflated.extend((body.len() as u32).to_be_bytes());
        deflated.extend(body);
        let e = decode(&b64(&deflated)).unwrap_err();
        assert!(e.to_string().contains("payload length"), "{e}");
        // Untouched, it still decodes.
        let ok = encode(&h);
        assert_eq!(decode(&ok).unwrap(), h);
    }
}
