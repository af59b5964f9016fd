//! Whole-run figures: [`Totals`] accumulates merged buckets; [`Summary`] is what reports show.

use crate::bucket::{Bucket, StatusCounts};
use crate::hist::Histogram;
use crate::kind::ErrorKind;
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

    /// The summary of everything added, over `duration_s` seconds of wall time.
    pub fn summary(&self, duration_s: f64) -> Summary {
        let b = &self.all;
        let rate = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        Summary {
            requests: b.requests,
            ok: b.ok,
            errors: b.errors(),
            duration_s,
            rps: rate(b.requests),
            ok_rps: rate(b.ok),
            success_rate: if b.requests > 0 {
                b.ok as f64 / b.requests as f64
            } else {
                0.0
            },
            latency: LatencySummary::of(&b.corrected),
            service: LatencySummary::of(&b.service),
            status: b.status.clone(),
            errors_by_kind: b.errors_by_kind,
            bytes_in: b.bytes_in,
            bytes_out: b.bytes_out,
            late: b.late,
            max_lag_us: b.max_lag_us,
        }
    }
}

/// Whole-run figures, ready to print or serialise.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Attempts that finished (responses + transport errors).
    pub requests: u64,
    /// Responses with a success status.
    pub ok: u64,
    /// `requests - ok`: failed statuses and transport errors.
    pub errors: u64,
    /// Wall time the rates are computed over.
    pub duration_s: f64,
    /// Attempts per second.
    pub rps: f64,
    /// Successful responses per second.
    pub ok_rps: f64,
    /// `ok / requests`, 0 when nothing finished.
    pub success_rate: f64,
    /// Latency from the intended start.
    pub latency: LatencySummary,
    /// Latency from the actual send.
    pub service: LatencySummary,
    /// Responses by status code.
    pub status: StatusCounts,
    /// Transport errors by kind.
    pub errors_by_kind: [u64; ErrorKind::COUNT],
    /// Response bytes read.
    pub bytes_in: u64,
    /// Request bytes written.
    pub bytes_out: u64,
    /// Requests that started late (open model).
    pub late: u64,
    /// Worst schedule lag, µs (open model).
    pub max_lag_us: u64,
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
    fn summary_of_known_values() {
        let mut t = Totals::default();
        let mut b = Bucket::new(0);
        for ms_ in 1..=100u64 {
            b.record_response(200, true, ms_ * 1000, ms_ * 500);
        }
        b.record_error(ErrorKind::Reset);
        t.add(&b);
        let s = t.summary(2.0);
        assert_eq!(s.requests, 101);
        assert_eq!(s.ok, 100);
        assert_eq!(s.errors, 1);
        assert!((s.rps - 50.5).abs() < 1e-9);
        assert!((s.latency.p50 - 50.0).abs() < 0.1, "{}", s.latency.p50);
        assert!((s.latency.p99 - 99.0).abs() < 0.1, "{}", s.latency.p99);
        assert!((s.service.p50 - 25.0).abs() < 0.05);
        assert!((s.latency.min - 1.0).abs() < 0.01);
        assert!((s.latency.max - 100.0).abs() < 0.1);
    }

    #[test]
    fn empty_summary_is_zero_not_nan() {
        let s = Totals::default().summary(0.0);
        assert_eq!(s.rps, 0.0);
        assert_eq!(s.success_rate, 0.0);
        assert_eq!(s.latency, LatencySummary::default());
    }
}
