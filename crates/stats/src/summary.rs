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
    /// Of `all`, what was counted in the grace after the schedule's end (answers to requests
    /// still in flight): counted as requests, but rates over the schedule leave them out.
    pub in_grace: Grace,
}

/// Attempts counted after the schedule's end, and what they streamed: rates over the
/// schedule leave all of it out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grace {
    pub requests: u64,
    pub ok: u64,
    /// Events read.
    pub events: u64,
    /// Output tokens of token streams that ended.
    pub output_tokens: u64,
    /// Token streams that met every per-request objective.
    pub good: u64,
}

impl Grace {
    fn add(&mut self, g: Grace) {
        self.requests += g.requests;
        self.ok += g.ok;
        self.events += g.events;
        self.output_tokens = self.output_tokens.saturating_add(g.output_tokens);
        self.good += g.good;
    }

    /// What second `b` counts.
    fn of(b: &Bucket) -> Grace {
        let e = b.events.as_deref();
        let l = e.and_then(|e| e.llm.as_deref());
        Grace {
            requests: b.requests,
            ok: b.ok,
            events: e.map_or(0, |e| e.events),
            output_tokens: l.map_or(0, |l| l.output_tokens),
            good: l.map_or(0, |l| l.good),
        }
    }
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            all: Bucket::new(0),
            in_grace: Grace::default(),
        }
    }
}

impl Totals {
    /// Adds one (merged) second of the schedule.
    pub fn add(&mut self, b: &Bucket) {
        self.all.merge(b);
    }

    /// Adds one (merged) second that came after the schedule's end.
    pub fn add_in_grace(&mut self, b: &Bucket) {
        self.all.merge(b);
        self.in_grace.add(Grace::of(b));
    }

    /// Adds another run's totals (scenarios of one suite).
    pub fn add_totals(&mut self, t: &Totals) {
        self.all.merge(&t.all);
        self.in_grace.add(t.in_grace);
    }

    /// Attempts and successes per second over `secs` of schedule: what completed in it, not
    /// what came in the grace after it.
    pub fn rates(&self, secs: f64) -> (f64, f64) {
        if secs <= 0.0 {
            return (0.0, 0.0);
        }
        let requests = self.all.requests.saturating_sub(self.in_grace.requests);
        let ok = self.all.ok.saturating_sub(self.in_grace.ok);
        (requests as f64 / secs, ok as f64 / secs)
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
