//! A small, fast, seedable generator (SplitMix64) for template values, weighted picks and the
//! resampling of `brink compare`.
//! Not cryptographic: it only has to be quick, well spread and reproducible from a seed.

/// SplitMix64 state.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for stream `n` of `seed` (one per virtual user), well apart from the others.
    pub fn stream(seed: u64, n: u64) -> Rng {
        let mut r = Rng(seed ^ n.wrapping_mul(0xA076_1D64_78BD_642F));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift (bias below 2^-64 * n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `a..=b` (`a <= b`).
    pub fn range_i64(&mut self, a: i64, b: i64) -> i64 {
        let span = (b as i128 - a as i128 + 1) as u128;
        if span > u128::from(u64::MAX) {
            return self.next_u64() as i64;
        }
        (a as i128 + self.below(span as u64) as i128) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_inclusive_and_covered() {
        let mut r = Rng::new(3);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = r.range_i64(-2, 2);
            assert!((-2..=2).contains(&v));
            seen[(v + 2) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(
            Rng::new(1).range_i64(i64::MIN, i64::MAX),
            Rng::new(1).next_u64() as i64
        );
    }

    #[test]
    fn streams_differ() {
        assert_ne!(Rng::stream(1, 0).next_u64(), Rng::stream(1, 1).next_u64());
        assert_eq!(Rng::stream(1, 5).next_u64(), Rng::stream(1, 5).next_u64());
    }
}
