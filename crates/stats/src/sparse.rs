//! A histogram as it travels, read without building one. A coordinator merges every worker's
//! second: building each arriving histogram whole (188 KiB of counts at the project's bounds)
//! and adding it counter by counter cost more than everything else it does. An HdrHistogram V2
//! encoding already lists only the counts that are not zero, so [`Sparse::read`] takes those
//! (bucket index, count) pairs, checks the whole encoding first (nothing half-merged from a
//! broken one), and [`Sparse::add_to_counts`] adds them where they belong: work in proportion
//! to what was measured, not to the histogram's range. Encodings of other bounds are read
//! through the library, as before.

use crate::hist::{
    cookie, decode, plain_v2, u64_at, DecodeError, Histogram, HEADER, HIST_DIGITS, HIST_MAX_US,
};
use base64::Engine;

/// One histogram's counts, checked: for an encoding of the project's bounds its (bucket
/// index, count) pairs, for one of other bounds its (lowest value of a bucket, count) pairs.
#[derive(Debug, PartialEq)]
pub struct Sparse {
    form: Form,
}

#[derive(Debug, PartialEq)]
enum Form {
    Ours {
        /// Counts that fit a counter, by bucket index.
        pairs: Vec<(u32, u32)>,
        /// Counts that do not (4 billion in one bucket, never an honest worker's).
        big: Vec<(u32, u64)>,
    },
    Other(Vec<(u64, u64)>),
}

impl Sparse {
    /// The counts of a base64 V2 encoding (compressed or not), checked whole.
    pub fn read(text: &str) -> Result<Sparse, DecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| DecodeError::NotBase64(e.to_string()))?;
        let plain = plain_v2(bytes)?;
        if ours(&plain)? {
            return ours_read(&plain[HEADER..]);
        }
        // Other bounds: the library reads it into the project's, then its buckets.
        let h = decode(text)?;
        Ok(Sparse {
            form: Form::Other(
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect(),
            ),
        })
    }

    /// How many values it holds.
    pub fn total(&self) -> u64 {
        match &self.form {
            Form::Ours { pairs, big } => {
                let small: u64 = pairs.iter().map(|&(_, n)| u64::from(n)).sum();
                big.iter().fold(small, |t, &(_, n)| t.saturating_add(n))
            }
            Form::Other(pairs) => pairs.iter().fold(0, |t, &(_, n)| t.saturating_add(n)),
        }
    }

    /// Adds these counts to `h` (one of the project's bounds).
    pub fn add_to(&self, h: &mut Histogram) {
        match &self.form {
            Form::Ours { pairs, big } => {
                let pairs = pairs.iter().map(|&(i, n)| (i, u64::from(n)));
                for (index, count) in pairs.chain(big.iter().copied()) {
                    h.saturating_record_n(Shape::OURS.value(index.into()), count);
                }
            }
            Form::Other(pairs) => {
                for &(value, count) in pairs {
                    h.saturating_record_n(value, count);
                }
            }
        }
    }

    /// Adds these counts to `counts`, one counter per bucket of the project's bounds (many
    /// seconds added there cost an addition each, and [`flush`] records the sum once);
    /// `false` for an encoding of other bounds, which must go through [`Sparse::add_to`].
    /// A counter holds 32 bits, half the memory a merge walks through: a count or a sum that
    /// does not fit is recorded into `h` instead, exact either way.
    pub fn add_to_counts(&self, counts: &mut Vec<u32>, h: &mut Histogram) -> bool {
        let Form::Ours { pairs, big } = &self.form else {
            return false;
        };
        if counts.is_empty() {
            counts.resize(Shape::OURS.limit as usize, 0);
        }
        // Checked by `read`: every index is below the last bucket.
        for &(index, count) in pairs {
            if let Some(c) = counts.get_mut(index as usize) {
                match c.checked_add(count) {
                    Some(sum) => *c = sum,
                    None => h.saturating_record_n(Shape::OURS.value(index.into()), count.into()),
                }
            }
        }
        for &(index, count) in big {
            h.saturating_record_n(Shape::OURS.value(index.into()), count);
        }
        true
    }
}

/// The counts of a V2 payload of the project's bounds (zig-zag LEB128 numbers; a negative one
/// is a run of zeros), checked whole. Each entry is written to a small buffer whether or not
/// it is a count, and kept by moving on past it: no branch asks which it was (a coordinator
/// of a thousand workers reads a few megabytes of these a second, and a mispredicted branch
/// per entry was most of its time).
fn ours_read(payload: &[u8]) -> Result<Sparse, DecodeError> {
    const CHUNK: usize = 64;
    const MAX: u64 = u32::MAX as u64;
    let mut pairs = Vec::with_capacity(payload.len() / 2);
    let mut big = Vec::new();
    let (mut chunk, mut n) = ([(0u32, 0u32); CHUNK], 0usize);
    let (mut at, mut index) = (0usize, 0u64);
    while at < payload.len() {
        // Room for the eight entries a step may keep.
        if n > CHUNK - 8 {
            keep_chunk(&mut pairs, &chunk[..n]);
            n = 0;
        }
        if let Some(eight) = one_byte_entries(payload, at, index) {
            for &(before, count) in &eight.entries {
                chunk[n % CHUNK] = ((index + before) as u32, count);
                n += usize::from(count != 0);
            }
            index += eight.steps;
            at += 8;
            continue;
        }
        // Most counts and runs of zeros take one byte.
        let (raw, used) = match payload[at] {
            b if b < 0x80 => (u64::from(b), 1),
            _ => varint(&payload[at..]).ok_or_else(cut)?,
        };
        at += used;
        // Zig-zag: an odd number is negative, -(half + 1), here that many zeros. In a mask
        // the compiler cannot see through: it turns a choice into a branch, however written.
        let (zeros, half) = (std::hint::black_box((raw & 1).wrapping_neg()), raw >> 1);
        let count = half & !zeros;
        // An index past u32 is past the last bucket, and stays so: refused below.
        chunk[n % CHUNK] = (index.min(MAX) as u32, count as u32);
        // Kept: a count from 1 to u32::MAX (one comparison).
        n += usize::from(count.wrapping_sub(1) < MAX);
        if count > MAX {
            keep_big(&mut big, index, count);
        }
        index = index.saturating_add(1 + (half & zeros));
    }
    pairs.extend_from_slice(&chunk[..n]);
    // Indexes only grow: the last of each list is the highest.
    let last = [pairs.last().map(|p| p.0), big.last().map(|p| p.0)];
    if let Some(past) = last
        .into_iter()
        .flatten()
        .find(|&i| u64::from(i) >= Shape::OURS.limit)
    {
        return Err(DecodeError::OutOfBounds(format!("bucket {past}")));
    }
    Ok(Sparse {
        form: Form::Ours { pairs, big },
    })
}

// Out of the loop above, which then keeps what it needs in registers.
#[cold]
#[inline(never)]
fn cut() -> DecodeError {
    DecodeError::NotHdr("cut count".into())
}

#[cold]
#[inline(never)]
fn keep_big(big: &mut Vec<(u32, u64)>, index: u64, count: u64) {
    big.push((index.min(u64::from(u32::MAX)) as u32, count));
}

#[inline(never)]
fn keep_chunk(pairs: &mut Vec<(u32, u32)>, chunk: &[(u32, u32)]) {
    pairs.extend_from_slice(chunk);
}

/// Eight entries of one byte each, decoded together: each entry's index past the first's and
/// its count (0 for a run of zeros), and the indexes the eight move on by.
struct Eight {
    entries: [(u64, u32); 8],
    steps: u64,
}

/// The eight entries at `at` when each takes one byte (most of a payload) and the indexes stay
/// well within 32 bits; `None` otherwise, for the entry-by-entry way. The eight are worked out
/// in one 64-bit word, a byte per entry: counts, and steps (1 past a count, n past a run of n
/// zeros) whose running sums give each entry's index.
#[inline(always)]
fn one_byte_entries(payload: &[u8], at: usize, index: u64) -> Option<Eight> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const LANES: u64 = 0x0001_0001_0001_0001;
    if index > u64::from(u32::MAX) - 1024 {
        return None;
    }
    let word = u64::from_le_bytes(payload.get(at..at + 8)?.try_into().ok()?);
    if word & (LOW << 7) != 0 {
        return None;
    }
    // Per byte: 0xff where the entry is a run of zeros (zig-zag: odd), and half its value.
    let zeros = (word & LOW) * 0xff;
    let half = (word >> 1) & (LOW * 0x7f);
    let counts = half & !zeros;
    let steps = LOW + (half & zeros);
    // Four steps to a word in 16-bit lanes; times LANES, each lane holds the sum up to it.
    let (lo, hi) = (lanes(steps as u32), lanes((steps >> 32) as u32));
    let (lo_sum, hi_sum) = (lo.wrapping_mul(LANES), hi.wrapping_mul(LANES));
    let lo_total = lo_sum >> 48;
    // What comes before each entry: the sum up to it, less its own step.
    let before = [lo_sum - lo, hi_sum - hi + lo_total * LANES];
    let mut entries = [(0u64, 0u32); 8];
    for (i, e) in entries.iter_mut().enumerate() {
        let lane = (before[i / 4] >> (16 * (i % 4))) & 0xffff;
        *e = (lane, ((counts >> (8 * i)) & 0xff) as u32);
    }
    Some(Eight {
        entries,
        steps: lo_total + (hi_sum >> 48),
    })
}

/// The four bytes of `x` as four 16-bit lanes.
#[inline(always)]
fn lanes(x: u32) -> u64 {
    let x = u64::from(x);
    (x & 0xff) | ((x & 0xff00) << 8) | ((x & 0xff_0000) << 16) | ((x & 0xff00_0000) << 24)
}

/// Records counters summed by [`Sparse::add_to_counts`] into `h`.
pub fn flush(counts: &[u32], h: &mut Histogram) {
    for (index, &count) in counts.iter().enumerate() {
        if count > 0 {
            h.saturating_record_n(Shape::OURS.value(index as u64), u64::from(count));
        }
    }
}

/// Whether a plain V2 encoding ([`plain_v2`]) has the project's bounds.
fn ours(b: &[u8]) -> Result<bool, DecodeError> {
    let bad = || DecodeError::NotHdr("cut header".into());
    let offset = cookie(b, 8).ok_or_else(bad)?;
    let digits = cookie(b, 12).ok_or_else(bad)?;
    let (low, high) = (
        u64_at(b, 16).ok_or_else(bad)?,
        u64_at(b, 24).ok_or_else(bad)?,
    );
    let ratio = f64::from_bits(u64_at(b, 32).ok_or_else(bad)?);
    Ok(offset == 0
        && digits == u32::from(HIST_DIGITS)
        && low == 1
        && high == HIST_MAX_US
        && ratio == 1.0)
}

/// How indexes map to values for the project's bounds (1 µs to 1 h at 3 digits).
struct Shape {
    half_magnitude: u32,
    half_count: u64,
    /// One past the last bucket.
    limit: u64,
}

impl Shape {
    const OURS: Shape = Shape::of(HIST_DIGITS, HIST_MAX_US);

    /// As HdrHistogram sizes sub-buckets (unit magnitude 0, lowest value 1): 2 x 10^digits
    /// values at unit resolution, then buckets until one covers `max`.
    const fn of(digits: u8, max: u64) -> Shape {
        let single = 2 * 10u64.pow(digits as u32);
        let magnitude = 64 - (single - 1).leading_zeros();
        let half_count = 1u64 << (magnitude - 1);
        // The smallest number of buckets b with half_count * 2 << (b - 1) > max.
        let mut buckets = 1u32;
        while (half_count * 2) << (buckets - 1) <= max {
            buckets += 1;
        }
        Shape {
            half_magnitude: magnitude - 1,
            half_count,
            limit: (buckets as u64 + 1) * half_count,
        }
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
            let mut summed = new_histogram();
            summed.saturating_record(42);
            assert!(Sparse::read(&text)
                .unwrap()
                .add_to_counts(&mut counts, &mut summed));
            flush(&counts, &mut summed);
            assert_eq!(summed, want, "{n} values, summed");
        }
    }

    /// Counts past what a 32-bit counter holds, alone or summed, are recorded exactly.
    #[test]
    fn counts_too_large_for_a_counter_are_recorded_exactly() {
        let mut big = new_histogram();
        big.record_n(1_000, 3_000_000_000).unwrap();
        big.record_n(2_000, 5_000_000_000).unwrap();
        big.record_n(7, 1).unwrap();
        let one = Sparse::read(&encode(&big)).unwrap();
        let (mut counts, mut h) = (Vec::new(), new_histogram());
        for _ in 0..3 {
            assert!(one.add_to_counts(&mut counts, &mut h));
        }
        flush(&counts, &mut h);
        let mut want = new_histogram();
        for _ in 0..3 {
            want.add(&big).unwrap();
        }
        assert_eq!(h, want);
        assert_eq!(h.count_at(1_000), 9_000_000_000);
        assert_eq!(h.count_at(2_000), 15_000_000_000);
        assert_eq!(h.count_at(7), 3);
    }

    /// Counts and runs of zeros of one, two and three bytes, at every alignment: entries
    /// read eight at a time and one at a time give what the library decodes.
    #[test]
    fn entries_of_every_width_read_as_the_library_reads_them() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let mut h = new_histogram();
            let mut index = next(3);
            while index < 20_000 {
                let count = [1, 2, 31, 32, 63, 64, 200, 70_000][next(8) as usize];
                h.record_n(Shape::OURS.value(index).max(1), count).unwrap();
                index += 1 + [0, 0, 0, 1, 31, 32, 63, 64, 65, 1_000][next(10) as usize];
            }
            let mut into = new_histogram();
            let text = encode(&h);
            Sparse::read(&text).unwrap().add_to(&mut into);
            assert_eq!(into, h);
            let (mut counts, mut summed) = (Vec::new(), new_histogram());
            assert!(Sparse::read(&text)
                .unwrap()
                .add_to_counts(&mut counts, &mut summed));
            flush(&counts, &mut summed);
            assert_eq!(summed, h);
        }
    }

    /// The bucket count and the values of indexes, as the library has them.
    #[test]
    fn the_shape_is_the_librarys() {
        let h = new_histogram();
        assert_eq!(Shape::OURS.limit as usize, h.distinct_values());
        for index in [1u64, 1023, 1024, 2047, 2048, 3000, Shape::OURS.limit - 2] {
            let v = Shape::OURS.value(index);
            assert_eq!(h.lowest_equivalent(v), v, "index {index}");
            assert_eq!(h.next_non_equivalent(v), Shape::OURS.value(index + 1));
        }
    }

    #[test]
    fn a_broken_encoding_is_an_error_not_a_partial_merge() {
        let mut h = new_histogram();
        h.saturating_record(1_000);
        let text = encode(&h);
        assert!(Sparse::read("not base64!").is_err());
        assert!(Sparse::read(&text[..text.len() / 2]).is_err());
        // Payloads that run past the last bucket: zeros to the millionth bucket, or to one
        // past what 32 bits hold (an index that must not wrap into range), then a count.
        for run in [1_000_000u64, 1 << 32, 1 << 40] {
            let mut plain = vec![0u8; HEADER];
            plain[..4].copy_from_slice(&crate::hist::V2.to_be_bytes());
            plain[12..16].copy_from_slice(&3u32.to_be_bytes());
            plain[16..24].copy_from_slice(&1u64.to_be_bytes());
            plain[24..32].copy_from_slice(&HIST_MAX_US.to_be_bytes());
            plain[32..40].copy_from_slice(&1.0f64.to_bits().to_be_bytes());
            // Zig-zag of -run.
            let mut payload = Vec::new();
            let mut v = 2 * run - 1;
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
            assert!(
                matches!(Sparse::read(&text), Err(DecodeError::OutOfBounds(_))),
                "a run of {run}"
            );
        }
    }
}
