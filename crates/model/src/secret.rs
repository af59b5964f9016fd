//! The tokens that guard brink's own listeners (`brink serve` beyond loopback, workers), in one
//! place: drawn from the system's random source, written as hex, and compared in time that does
//! not depend on where two tokens differ.

use std::io::Read;

/// A fresh token of `bytes` random bytes, as hex.
pub fn fresh(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `given` is `expected`, without stopping at the first difference; an empty
/// `expected` never matches.
pub fn same(given: &str, expected: &str) -> bool {
    let (g, e) = (given.as_bytes(), expected.as_bytes());
    if e.is_empty() || g.len() != e.len() {
        return false;
    }
    let diff = g.iter().zip(e).fold(0u8, |d, (a, b)| d | (a ^ b));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_and_compare_whole() {
        let (a, b) = (fresh(32).unwrap(), fresh(32).unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(same(&a, &a));
        assert!(!same(&b, &a));
        assert!(!same(&a[..63], &a));
        assert!(!same("", ""), "an empty token never matches");
    }
}
