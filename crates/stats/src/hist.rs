//! One histogram shape for the whole project: microseconds from 1 µs to 1 h at 3 significant
//! digits. Using the same bounds everywhere is what makes every merge exact.

/// Latency histogram in microseconds.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Largest trackable value: one hour in microseconds. Larger values are clamped to it.
pub const HIST_MAX_US: u64 = 3_600_000_000;

/// A fresh, empty histogram with the project's bounds.
pub fn new_histogram() -> Histogram {
    // The bounds are constants that hdrhistogram accepts; failure here is a programming error.
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("static histogram bounds are valid")
}
