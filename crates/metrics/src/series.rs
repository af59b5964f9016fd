//! The series a run exposes, kept as the seconds are merged: per scenario and request,
//! counters (attempts, responses by status, errors by kind, gRPC codes, late starts), latency
//! from the intended start as a classic histogram with fixed buckets, and the last second's
//! exact percentiles from its HDR histogram, and the same latency as a native (exponential)
//! histogram for stores that take them over remote write; per scenario, when it started and
//! ended (for annotations). Cardinality is bounded by the plan: its scenario and request
//! names, the statuses and gRPC codes seen, ten error kinds, nineteen buckets.

use merge::SecondView;
use stats::ErrorKind;
use std::collections::BTreeMap;
use std::time::SystemTime;

/// The histogram's upper bounds in seconds (`le`), besides `+Inf`: from 50 µs, so a service
/// answering in a tenth of a millisecond is told from one answering in a millisecond.
pub const BOUNDS: [f64; 18] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0,
];
/// The native histogram's resolution: schema 3, eight buckets per doubling (each about 9%
/// wide), as Prometheus's client libraries default to.
pub const NATIVE_SCHEMA: i32 = 3;

/// The native bucket holding `seconds` (> 0) at [`NATIVE_SCHEMA`]: bucket `i` holds values in
/// `(2^((i-1)/8), 2^(i/8)]`.
pub fn native_index(seconds: f64) -> i32 {
    let scaled = seconds.log2() * f64::from(1 << NATIVE_SCHEMA);
    // A value on a bound belongs to the bucket it closes, whatever the rounding of log2.
    let near = scaled.round();
    if (scaled - near).abs() < 1e-9 {
        near as i32
    } else {
        scaled.ceil() as i32
    }
}

/// The last second's quantiles exposed.
pub const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

#[derive(Default)]
pub struct Request {
    pub name: String,
    pub requests: u64,
    pub status: BTreeMap<u16, u64>,
    pub grpc: BTreeMap<u16, u64>,
    pub errors: [u64; ErrorKind::COUNT],
    pub late: u64,
    /// Observations at or below each bound (cumulative), their count and sum in seconds.
    pub buckets: [u64; BOUNDS.len()],
    pub count: u64,
    pub sum: f64,
    /// The last second's quantiles, in seconds, once a second had responses.
    pub last: Option<[f64; QUANTILES.len()]>,
    /// The native histogram: observations per bucket index (see [`native_index`]).
    pub native: BTreeMap<i32, u64>,
    /// WebSocket: what its connections carried (upgrades, refusals by status, messages each
    /// way, closes by code); `None` for other protocols.
    pub ws: Option<Ws>,
}

/// A WebSocket request's connection counters, summed over the seconds merged.
#[derive(Clone, Debug, Default)]
pub struct Ws {
    pub upgrades: u64,
    pub refused: BTreeMap<u16, u64>,
    pub sent: u64,
    pub received: u64,
    pub closes: BTreeMap<u16, u64>,
    pub unexpected: u64,
}

impl Ws {
    /// Adds one second's bucket, if its connections upgraded or carried anything.
    fn add(ws: &mut Option<Ws>, b: &stats::Bucket) {
        let upgrades = b.setup.upgrade.as_ref().map_or(0, |h| h.len());
        if upgrades == 0 && b.ws.is_none() {
            return;
        }
        let w = ws.get_or_insert_with(Ws::default);
        w.upgrades += upgrades;
        if let Some(c) = &b.ws {
            for (s, n) in c.refused.sorted() {
                *w.refused.entry(s).or_default() += n;
            }
            for (code, n) in c.closes.sorted() {
                *w.closes.entry(code).or_default() += n;
            }
            w.sent += c.sent;
            w.received += c.received;
            w.unexpected += c.unexpected;
        }
    }
}

pub struct Scenario {
    pub name: String,
    pub requests: Vec<Request>,
    pub seconds: u64,
    /// The schedule's level in its last second (requests/s or connections; a search step's
    /// level), when it has one.
    pub target: Option<f64>,
    /// Requests in flight when its last second ended.
    pub in_flight: Option<u64>,
    /// A search step's verdict, once judged.
    pub pass: Option<bool>,
    pub started: f64,
    pub ended: Option<f64>,
}

/// brink's own process, read each second.
#[derive(Clone, Copy, Debug, Default)]
pub struct Process {
    pub cpu_s: f64,
    pub rss_bytes: f64,
}

/// Every series of a run; `labels` go on all of them (the run and the user's tags).
#[derive(Default)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub scenarios: Vec<Scenario>,
    pub process: Option<Process>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Series {
    pub fn new(labels: Vec<(String, String)>) -> Series {
        Series {
            labels,
            scenarios: Vec::new(),
            process: None,
        }
    }

    /// A scenario (or a search step) starts with these requests; the one before it ends.
    pub fn start(&mut self, name: &str, requests: &[String]) {
        self.end();
        self.scenarios.push(Scenario {
            name: name.to_string(),
            requests: requests
                .iter()
                .map(|n| Request {
                    name: n.clone(),
                    ..Request::default()
                })
                .collect(),
            seconds: 0,
            target: None,
            in_flight: None,
            pass: None,
            started: unix_now(),
            ended: None,
        });
    }

    /// The current scenario has ended.
    pub fn end(&mut self) {
        if let Some(s) = self.scenarios.last_mut() {
            s.ended.get_or_insert_with(unix_now);
        }
    }

    /// The current search step was judged.
    pub fn verdict(&mut self, pass: bool) {
        if let Some(s) = self.scenarios.last_mut() {
            s.pass = Some(pass);
        }
    }

    /// Adds one merged second to the current scenario.
    pub fn second(&mut self, view: &SecondView) {
        let Some(s) = self.scenarios.last_mut() else {
            return;
        };
        s.seconds += 1;
        s.target = view.second.target.or(s.target);
        s.in_flight = Some(view.all.in_flight);
        for (r, b) in s.requests.iter_mut().zip(view.by_request) {
            r.requests += b.requests;
            r.late += b.late;
            for (code, n) in b.status.sorted() {
                *r.status.entry(code).or_default() += n;
            }
            for (code, n) in b.grpc.sorted() {
                *r.grpc.entry(code).or_default() += n;
            }
            for (total, n) in r.errors.iter_mut().zip(b.errors_by_kind) {
                *total += n;
            }
            Ws::add(&mut r.ws, b);
            let h = &b.corrected;
            if h.is_empty() {
                continue;
            }
            for (count, bound) in r.buckets.iter_mut().zip(BOUNDS) {
                *count += h.count_between(0, (bound * 1e6) as u64);
            }
            for v in h.iter_recorded() {
                let seconds = v.value_iterated_to().max(1) as f64 / 1e6;
                *r.native.entry(native_index(seconds)).or_default() += v.count_at_value();
            }
            r.count += h.len();
            r.sum += h.mean() * h.len() as f64 / 1e6;
            r.last = Some(QUANTILES.map(|q| h.value_at_quantile(q) as f64 / 1e6));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_buckets_close_on_their_bound_and_tell_50us_from_900us() {
        assert_eq!(native_index(1.0), 0);
        assert_eq!(native_index(2.0), 8);
        assert_eq!(native_index(0.5), -8);
        assert_eq!(native_index(1.05), 1, "(1, 1.09]");
        let (fast, slow) = (native_index(50e-6), native_index(900e-6));
        assert!(slow - fast > 30, "{fast} {slow}");
        // Every bucket's upper bound is within 9.1% of its lower one.
        let i = native_index(0.0123);
        let (lo, hi) = (
            2f64.powf(f64::from(i - 1) / 8.0),
            2f64.powf(f64::from(i) / 8.0),
        );
        assert!(lo < 0.0123 && 0.0123 <= hi && hi / lo < 1.091);
    }
}
