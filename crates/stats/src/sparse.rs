//! A histogram as it travels, read without building one. A coordinator merges every worker's
//! second: building each arriving histogram whole (188 KiB of counts at the project's bounds)
//! and adding it counter by counter cost more than everything else it does. An HdrHistogram V2
//! encoding already lists only the counts that are not zero, so [`Sparse::read`] takes those
//! (value, count) pairs, checks the whole encoding first (nothing half-merged from a broken
//! one), and [`Sparse::add_to`] records them: work in proportion to what was measured, not to
//! the histogram's range. Encodings of other bounds are read through the library, as before.

use crate::hist::{decode, DecodeError, Histogram, HIST_DIGITS, HIST_MAX_US};
use base64::Engine;
use std::io::Read;

/// The V2 cookies, plain and DEFLATE-compressed (HdrHistogram's own values).
const V2: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE: u32 = 0x1c84_9304 | 0x10;
/// The V2 header: cookie, payload length, normalizing offset, digits, lowest, highest, ratio.
const HEADER: usize = 40;
/// The most bytes a V2 encoding of the project's bounds takes (every counter at 9 bytes).
const MOST: usize = HEADER + 9 * 30_000;

/// The non-zero buckets of one histogram: (bucket index at the project's bounds, count), or
/// for an encoding of other bounds (lowest value of the bucket, count).
#[derive(Debug, Default, PartialEq)]
pub struct Sparse {
    pairs: Vec<(u64, u64)>,
    by_index: bool,
}

impl Sparse {
    /// The buckets of a base64 V2 encoding (compressed or not), checked whole.
    pub fn read(text: &str) -> Result<Sparse, DecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| DecodeError::NotBase64(e.to_string()))?;
        let plain = match cookie(&bytes, 0) {
            Some(V2_DEFLATE) => inflate(&bytes)?,
            Some(V2) => bytes,
            _ => return Err(DecodeError::NotHdr("no V2 cookie".into())),
        };
        match Shape::of(&plain)? {
            Some(shape) => Ok(Sparse {
                pairs: shape.buckets(&plain[HEADER..])?,
                by_index: true,
            }),
            // Other bounds: the library reads it into the project's, then its buckets.
            None => {
                let h = decode(text)?;
                Ok(Sparse {
                    pairs: h
                        .iter_recorded()
                        .map(|v| (v.value_iterated_to(), v.count_at_value()))
                        .collect(),
                    by_index: false,
                })
            }
        }
    }

    /// Adds these buckets to `h` (one of the project's bounds).
    pub fn add_to(&self, h: &mut Histogram) {
        let shape = Shape::ours();
        for &(at, count) in &self.pairs {
            let value = if self.by_index { shape.value(at) } else { at };
            h.saturating_record_n(value, count);
        }
    }

    /// Adds these buckets to `counts`, one counter per bucket of the project's bounds (many
    /// seconds added there cost an addition each, and [`flush`] records the sum once);
    /// `false` for an encoding of other bounds, which must go through [`Sparse::add_to`].
    pub fn add_to_counts(&self, counts: &mut Vec<u64>) -> bool {
        if !self.by_index {
            return false;
        }
        if counts.is_empty() {
            counts.resize(Shape::ours().value_index_limit() as usize, 0);
        }
        for &(index, count) in &self.pairs {
            if let Some(c) = counts.get_mut(index as usize) {
                *c = c.saturating_add(count);
            }
        }
        true
    }
}

/// Records counters summed by [`Sparse::add_to_counts`] into `h`.
pub fn flush(counts: &[u64], h: &mut Histogram) {
    let shape = Shape::ours();
    for (index, &count) in counts.iter().enumerate() {
        if count > 0 {
            h.saturating_record_n(shape.value(index as u64), count);
        }
    }
}

fn cookie(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The plain V2 encoding inside a compressed one, no longer than the project's bounds allow.
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
        return Err(bad("an encoding larger than any of these bounds".into()));
    }
    Ok(out)
}

/// How indexes map to values for the project's bounds (1 µs to 1 h at 3 digits).
struct Shape {
    half_magnitude: u32,
    half_count: u64,
    payload: usize,
}

impl Shape {
    /// The project's bounds (1 µs to 1 h at 3 digits).
    fn ours() -> Shape {
        // As HdrHistogram sizes sub-buckets: 2 x 10^digits values at unit resolution.
        let single = 2 * 10u64.pow(u32::from(HIST_DIGITS));
        let magnitude = 64 - (single - 1).leading_zeros();
        Shape {
            half_magnitude: magnitude - 1,
            half_count: 1 << (magnitude - 1),
            payload: 0,
        }
    }

    /// The shape of a plain V2 header when it has the project's bounds (`None`: others).
    fn of(b: &[u8]) -> Result<Option<Shape>, DecodeError> {
        let bad = || DecodeError::NotHdr("cut header".into());
        if cookie(b, 0) != Some(V2) {
            return Err(DecodeError::NotHdr("no V2 cookie inside".into()));
        }
        let payload = cookie(b, 4).ok_or_else(bad)? as usize;
        let offset = cookie(b, 8).ok_or_else(bad)?;
        let digits = cookie(b, 12).ok_or_else(bad)?;
        let (low, high) = (
            u64_at(b, 16).ok_or_else(bad)?,
            u64_at(b, 24).ok_or_else(bad)?,
        );
        let ratio = f64::from_bits(u64_at(b, 32).ok_or_else(bad)?);
        if b.len() != HEADER + payload {
            return Err(DecodeError::NotHdr("payload length does not match".into()));
        }
        let ours = offset == 0
            && digits == u32::from(HIST_DIGITS)
            && low == 1
            && high == HIST_MAX_US
            && ratio == 1.0;
        if !ours {
            return Ok(None);
        }
        Ok(Some(Shape {
            payload,
            ..Shape::ours()
        }))
    }

    /// The lowest value of bucket `index` (HdrHistogram's `value_for`, unit magnitude 0).
    fn value(&self, index: u64) -> u64 {
        let bucket = (index >> self.half_magnitude) as i64 - 1;
        let sub = (index & (self.half_count - 1)) + self.half_count;
        if bucket < 0 {
            sub - self.half_count
        } else {
            sub << bucket
        }
    }

    /// The payload's counts (zig-zag LEB128; a negative number is a run of zeros).
    fn buckets(&self, payload: &[u8]) -> Result<Vec<(u64, u64)>, DecodeError> {
        let bad = |e: &str| DecodeError::NotHdr(e.to_string());
        let last = self.value_index_limit();
        // At most one bucket per byte of payload.
        let mut out = Vec::with_capacity(payload.len());
        let (mut at, mut index) = (0usize, 0u64);
        while at < payload.len() {
            // Most counts and runs of zeros take one byte.
            let (raw, used) = match payload[at] {
                b if b < 0x80 => (u64::from(b), 1),
                _ => varint(&payload[at..]).ok_or_else(|| bad("cut count"))?,
            };
            at += used;
            let n = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
            if n < 0 {
                index = index.saturating_add(n.unsigned_abs());
                continue;
            }
            if index >= last {
                return Err(DecodeError::OutOfBounds(format!("bucket {index}")));
            }
            if n > 0 {
                out.push((index, n as u64));
            }
            index += 1;
        }
        debug_assert!(self.payload == payload.len());
        Ok(out)
    }

    /// One past the last bucket of the project's bounds.
    fn value_index_limit(&self) -> u64 {
        // Buckets until one covers HIST_MAX_US: the smallest b with half_count*2 << b > max.
        let mut buckets = 1u32;
        while (self.half_count * 2) << (buckets - 1) <= HIST_MAX_US {
            buckets += 1;
        }
        u64::from(buckets + 1) * self.half_count
    }
}

/// A LEB128 number of at most 9 bytes (the 9th taken whole), and the bytes it took.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..9 {
        let byte = *b.get(i)?;
        if i == 8 {
            return Some((value | u64::from(byte) << 56, 9));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::{encode, new_histogram};

    /// Read sparse and added, a histogram is the one the library decodes, bucket for bucket.
    #[test]
    fn sparse_reading_adds_what_the_library_decodes() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 7, 2_000, 50_000] {
            let mut h = new_histogram();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // From 1 µs to past the hour (clamped), most of them small.
                let v = (x % 1_000) + 1;
                let v = if x.is_multiple_of(10) {
                    v * (x % 5_000_000)
                } else {
                    v
                };
                h.saturating_record(v.clamp(1, HIST_MAX_US));
            }
            h.saturating_record(HIST_MAX_US);
            let text = encode(&h);
            let mut into = new_histogram();
            into.saturating_record(42);
            Sparse::read(&text).unwrap().add_to(&mut into);
            let mut want = new_histogram();
            want.saturating_record(42);
            want.add(decode(&text).unwrap()).unwrap();
            assert_eq!(into, want, "{n} values");
            assert_eq!(into.max(), want.max());
            // Summed as counters, then recorded once: the same histogram.
            let mut counts = Vec::new();
            assert!(Sparse::read(&text).unwrap().add_to_counts(&mut counts));
            let mut summed = new_histogram();
            summed.saturating_record(42);
            flush(&counts, &mut summed);
            assert_eq!(summed, want, "{n} values, summed");
        }
    }

    #[test]
    fn a_broken_encoding_is_an_error_not_a_partial_merge() {
        let mut h = new_histogram();
        h.saturating_record(1_000);
        let text = encode(&h);
        assert!(Sparse::read("not base64!").is_err());
        assert!(Sparse::read(&text[..text.len() / 2]).is_err());
        // A payload that runs past the last bucket.
        let mut plain = vec![0u8; HEADER];
        plain[..4].copy_from_slice(&V2.to_be_bytes());
        plain[12..16].copy_from_slice(&3u32.to_be_bytes());
        plain[16..24].copy_from_slice(&1u64.to_be_bytes());
        plain[24..32].copy_from_slice(&HIST_MAX_US.to_be_bytes());
        plain[32..40].copy_from_slice(&1.0f64.to_bits().to_be_bytes());
        // Zeros to the millionth bucket (zig-zag of -1,000,000), then a count of 1.
        let zeros = 2 * 1_000_000u64 - 1;
        let mut payload = Vec::new();
        let mut v = zeros;
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                payload.push(b);
                break;
            }
            payload.push(b | 0x80);
        }
        payload.push(2);
        plain[4..8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        plain.extend(payload);
        let text = base64::engine::general_purpose::STANDARD.encode(&plain);
        assert!(matches!(
            Sparse::read(&text),
            Err(DecodeError::OutOfBounds(_))
        ));
    }
}
