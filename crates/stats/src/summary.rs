//! Whole-run figures: [`Totals`] accumulates merged buckets; [`LatencySummary`] is a
//! histogram's figures in milliseconds. The result schema (in `report`) is built from these
//! directly, so the counters are written once, in [`Bucket`].

use crate::bucket::Bucket;
use crate::hist::Histogram;
use serde::{Deserialize, Serialize};

/// Running totals of a run (or of any set of seconds).
#[derive(Clone, Debug)]
pub struct Totals {
    /// Everything merged so far; `second` is meaningless here.
    pub all: Bucket,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            all: Bucket::new(0),
        }
    }
}

impl Totals {
    /// Adds one (merged) second.
    pub fn add(&mut self, b: &Bucket) {
        self.all.merge(b);
    }
}

/// Latency figures in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub p10: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencySummary {
    /// Figures of a µs histogram, in ms; all zero when it is empty.
    pub fn of(h: &Histogram) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let q = |p: f64| ms(h.value_at_quantile(p));
        LatencySummary {
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            p10: q(0.10),
            p25: q(0.25),
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: ms(h.max()),
        }
    }

    /// `(label, value)` pairs in report order.
    pub fn labelled(&self) -> [(&'static str, f64); 11] {
        [
            ("min", self.min),
            ("p10", self.p10),
            ("p25", self.p25),
            ("p50", self.p50),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
            ("mean", self.mean),
        ]
    }
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_figures_of_known_values() {
        let mut t = Totals::default();
        let mut b = Bucket::new(0);
        for ms_ in 1..=100u64 {
            b.record_response(200, true, ms_ * 1000, ms_ * 500);
        }
        t.add(&b);
        let l = LatencySummary::of(&t.all.corrected);
        assert!((l.p50 - 50.0).abs() < 0.1, "{}", l.p50);
        assert!((l.p99 - 99.0).abs() < 0.1, "{}", l.p99);
        assert!((LatencySummary::of(&t.all.service).p50 - 25.0).abs() < 0.05);
        assert!((l.min - 1.0).abs() < 0.01);
        assert!((l.max - 100.0).abs() < 0.1);
        assert_eq!(
            LatencySummary::of(&Totals::default().all.corrected),
            LatencySummary::default()
        );
    }
}
