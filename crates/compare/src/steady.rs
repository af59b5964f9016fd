//! The steady seconds of a scenario, ready to resample: the first 10% of the scenario (at
//! least 1 s; at least 5 s when it ran 30 s or more) are warm-up and the last partial second is cut short, so both are left out. Each
//! kept second is its latency histogram as sparse counts over one shared, sorted list of
//! distinct values, plus its request and success counts.

use results::ScenarioResult;
use std::collections::BTreeMap;

/// One kept second.
#[derive(Clone, Debug, Default)]
pub struct Second {
    pub requests: u64,
    pub ok: u64,
    /// (value in µs, count), unsorted; values are histogram bucket values.
    pub latency: Vec<(u64, u64)>,
}

/// Seconds left out at the start: 10% of the scenario, at least 1 s, and at least 5 s for a
/// run of 30 s or more (a 10 s before/after keeps 9 seconds a side).
pub fn warmup_s(duration_s: f64) -> u64 {
    let least = if duration_s >= 30.0 { 5.0 } else { 1.0 };
    (duration_s * 0.1).ceil().max(least) as u64
}

/// The steady seconds of `s`, in order.
pub fn seconds(s: &ScenarioResult) -> Vec<Second> {
    let skip = warmup_s(s.summary.duration_s);
    s.timeseries
        .iter()
        // Whole seconds only: a row whose second ends after the scenario is partial.
        .filter(|r| r.t >= skip && (r.t + 1) as f64 <= s.summary.duration_s + 1e-9)
        .map(|r| Second {
            requests: r.requests,
            ok: r.ok,
            latency: stats::decode(&r.latency_hdr)
                .map(|h| {
                    h.iter_recorded()
                        .map(|v| (v.value_iterated_to(), v.count_at_value()))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Seconds of both sides with their values mapped to indices of one sorted value list, so a
/// resample adds counts into a flat array.
pub struct Indexed {
    /// Distinct latency values (µs), ascending.
    pub values: Vec<u64>,
    /// Per second: (index into `values`, count).
    pub latency: Vec<Vec<(u32, u64)>>,
    pub requests: Vec<u64>,
    pub ok: Vec<u64>,
}

/// Indexes `sides` (each a list of seconds) over one value list; returns one [`Indexed`] per
/// side.
pub fn index(sides: &[&[Second]]) -> Vec<Indexed> {
    let mut all: BTreeMap<u64, u32> = BTreeMap::new();
    for side in sides {
        for s in side.iter() {
            for (v, _) in &s.latency {
                all.insert(*v, 0);
            }
        }
    }
    for (i, slot) in all.values_mut().enumerate() {
        *slot = i as u32;
    }
    let values: Vec<u64> = all.keys().copied().collect();
    sides
        .iter()
        .map(|side| Indexed {
            values: values.clone(),
            latency: side
                .iter()
                .map(|s| s.latency.iter().map(|(v, c)| (all[v], *c)).collect())
                .collect(),
            requests: side.iter().map(|s| s.requests).collect(),
            ok: side.iter().map(|s| s.ok).collect(),
        })
        .collect()
}

/// The figures compared, from a set of seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub mean: f64,
    pub max: f64,
    /// Successful responses per second.
    pub ok_rps: f64,
    /// Failed attempts per attempt (0..1).
    pub error_rate: f64,
    pub requests: u64,
}

/// Percentile `q` (0..1) of `counts` over `values` in ms: the smallest value with at least
/// `ceil(q * total)` values at or below it.
fn quantile(values: &[u64], counts: &[u64], total: u64, q: f64) -> f64 {
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (v, c) in values.iter().zip(counts) {
        seen += c;
        if seen >= rank {
            return *v as f64 / 1000.0;
        }
    }
    values.last().map_or(0.0, |v| *v as f64 / 1000.0)
}

/// Adds up the seconds `picks` (indices, repeats allowed) of `x` into figures; `counts` is
/// scratch space as long as `x.values`.
pub fn figures(x: &Indexed, picks: &[usize], counts: &mut [u64]) -> Figures {
    counts.iter_mut().for_each(|c| *c = 0);
    let (mut requests, mut ok, mut total, mut sum) = (0u64, 0u64, 0u64, 0f64);
    for &i in picks {
        requests += x.requests[i];
        ok += x.ok[i];
        for &(at, c) in &x.latency[i] {
            counts[at as usize] += c;
            total += c;
            sum += x.values[at as usize] as f64 * c as f64;
        }
    }
    let q = |p| quantile(&x.values, counts, total, p);
    let seconds = picks.len().max(1) as f64;
    Figures {
        p50: q(0.50),
        p90: q(0.90),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        mean: if total > 0 {
            sum / total as f64 / 1000.0
        } else {
            0.0
        },
        max: q(1.0),
        ok_rps: ok as f64 / seconds,
        error_rate: if requests > 0 {
            (requests - ok.min(requests)) as f64 / requests as f64
        } else {
            0.0
        },
        requests,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(requests: u64, ok: u64, latency: &[(u64, u64)]) -> Second {
        Second {
            requests,
            ok,
            latency: latency.to_vec(),
        }
    }

    #[test]
    fn warm_up_is_a_tenth_at_least_one_second_or_five_from_thirty() {
        assert_eq!(warmup_s(30.0), 5);
        assert_eq!(warmup_s(60.0), 6);
        assert_eq!(warmup_s(61.0), 7);
        assert_eq!(warmup_s(10.0), 1);
        assert_eq!(warmup_s(20.0), 2);
        assert_eq!(warmup_s(3.0), 1);
    }

    #[test]
    fn figures_add_up_the_picked_seconds() {
        let a = [
            second(10, 10, &[(1000, 5), (2000, 5)]),
            second(10, 8, &[(3000, 8)]),
        ];
        let idx = index(&[&a]);
        let x = &idx[0];
        assert_eq!(x.values, [1000, 2000, 3000]);
        let mut scratch = vec![0; x.values.len()];
        let f = figures(x, &[0, 1], &mut scratch);
        assert_eq!(f.requests, 20);
        assert_eq!(f.ok_rps, 9.0);
        assert!((f.error_rate - 0.1).abs() < 1e-12);
        // 18 values: 5 at 1ms, 5 at 2ms, 8 at 3ms; median rank 9 -> 2ms.
        assert_eq!(f.p50, 2.0);
        assert_eq!(f.p99, 3.0);
        assert_eq!(f.max, 3.0);
        assert!((f.mean - (5.0 + 10.0 + 24.0) / 18.0).abs() < 1e-12);
        // Picking the first second twice is a different sample.
        let f = figures(x, &[0, 0], &mut scratch);
        assert_eq!((f.p99, f.error_rate), (2.0, 0.0));
    }
}
