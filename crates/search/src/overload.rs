//! Whether a rate step was an overload its objectives did not see. A service asked for more
//! than it can serve queues the rest: it delivers less than asked, and every second each
//! request waits longer. Within a step of a few judged seconds the queue may not yet have
//! pushed p99 past its objective (a second, by default), so the step would pass and the
//! search would call sustainable a rate the service cannot hold, and quote it as capacity.
//! Two signs fail such a step whatever the objectives say: what it delivered fell short of
//! what it asked, or its latency climbed through its judged seconds.

/// The most a rate step may deliver below what it asked: beyond it, the service fell behind.
/// In steady state the answers completed in the judged window equal the rate asked exactly
/// (each is shifted by its latency); 3% leaves room for the window's edges.
pub const SHORT_OF_ASKED: f64 = 0.03;
/// Fewer than this many requests missing from the window is never a shortfall (a low rate's
/// window edges).
const MOST_MISSING_AT_EDGES: f64 = 2.0;
/// Judged seconds a latency trend needs before it says anything.
pub const TREND_SECONDS: usize = 4;
/// How closely the seconds must follow a line (r^2) to be a trend, not noise.
const TREND_FIT: f64 = 0.6;
/// How far the fitted line must rise over the judged seconds: half its starting latency,
/// and at least this many milliseconds (a queue growing by 0.1% of the rate a second is
/// ~10 ms over 10 s).
const TREND_RISE_FLOOR_MS: f64 = 5.0;

/// What one rate step delivered and how its latency went, second by second.
#[derive(Clone, Copy, Debug)]
pub struct RateStep<'a> {
    /// The rate asked, requests per second.
    pub asked: f64,
    /// Answers (successful or not) completed per second over the judged window.
    pub delivered: f64,
    /// The judged window, seconds.
    pub window_s: f64,
    /// The median latency (from the intended start) of each judged second, ms, in order;
    /// seconds with no answer left out.
    pub p50_ms: &'a [f64],
}

/// Why the step is an overload, to be shown as its failing reason; `None` when it held.
pub fn overload(s: &RateStep) -> Option<String> {
    let missing = (s.asked - s.delivered) * s.window_s;
    let short = (s.asked - s.delivered) / s.asked;
    if short > SHORT_OF_ASKED && missing > MOST_MISSING_AT_EDGES {
        return Some(format!(
            "delivered {} of {} req/s asked: the service fell behind",
            rate(s.delivered),
            rate(s.asked)
        ));
    }
    let (first, last) = rising(s.p50_ms)?;
    Some(format!(
        "p50 rose {} -> {} ms through the step: a queue growing, not a rate it holds",
        ms(first),
        ms(last)
    ))
}

/// The fitted start and end of a latency that climbs steadily through the seconds; `None`
/// when it holds (flat, noisy, or too few seconds to tell).
fn rising(ys: &[f64]) -> Option<(f64, f64)> {
    if ys.len() < TREND_SECONDS || ys.iter().any(|y| !y.is_finite()) {
        return None;
    }
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let (dx, dy) = (i as f64 - mean_x, y - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let fit = sxy * sxy / (sxx * syy);
    let start = (mean_y - slope * mean_x).max(0.0);
    let end = start + slope * (n - 1.0);
    let rise = end - start;
    let grew = ys[ys.len() - 1] > ys[0];
    (slope > 0.0 && fit >= TREND_FIT && grew && rise >= (0.5 * start).max(TREND_RISE_FLOOR_MS))
        .then_some((ys[0], ys[ys.len() - 1]))
}

fn rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{:.0}", r)
    } else {
        format!("{:.1}", r)
    }
}

fn ms(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(asked: f64, delivered: f64, p50_ms: &[f64]) -> Option<String> {
        overload(&RateStep {
            asked,
            delivered,
            window_s: 8.0,
            p50_ms,
        })
    }

    const FLAT: [f64; 8] = [10.2, 9.8, 10.5, 10.1, 9.9, 10.3, 10.0, 10.4];

    #[test]
    fn a_step_that_delivers_what_it_asked_with_flat_latency_holds() {
        assert_eq!(step(780.0, 779.0, &FLAT), None);
        // 3% short is the edge: at it the step holds, past it not.
        assert_eq!(step(1000.0, 970.0, &FLAT), None);
        let short = step(1000.0, 969.0, &FLAT).expect("short");
        assert_eq!(
            short,
            "delivered 969 of 1000 req/s asked: the service fell behind"
        );
    }

    #[test]
    fn the_servers_that_fooled_the_search_are_overloads() {
        // Go behind a semaphore: 780/s asked, 731 delivered, p50 13 -> 612 ms.
        let go = [13.0, 69.0, 131.0, 205.0, 290.0, 380.0, 497.0, 612.0];
        assert!(step(780.0, 731.0, &go)
            .unwrap()
            .starts_with("delivered 731 of 780"));
        // Node: 480 asked, 471 delivered (1.9% short): the climb says it.
        let node = [4.0, 9.0, 15.0, 22.0, 27.0, 33.0, 40.0, 46.0];
        let why = step(480.0, 471.0, &node).expect("a climbing latency");
        assert_eq!(
            why,
            "p50 rose 4.0 -> 46 ms through the step: a queue growing, not a rate it holds"
        );
    }

    #[test]
    fn few_requests_missing_at_a_low_rate_are_the_windows_edges() {
        // 10/s over 8 s: 80 asked, 78 delivered (2.5%), 2 missing.
        assert_eq!(step(10.0, 9.75, &FLAT), None);
        assert_eq!(step(2.0, 1.8, &FLAT), None, "10% short, but 1.6 requests");
        assert!(step(2.0, 1.6, &FLAT).is_some(), "3.2 requests missing");
    }

    #[test]
    fn noise_and_short_or_falling_series_are_no_trend() {
        // A latency that jumps about, a GC spike, one that falls after a cold start.
        let noisy = [10.0, 25.0, 9.0, 30.0, 11.0, 28.0, 10.0, 31.0];
        assert_eq!(step(100.0, 100.0, &noisy), None);
        let spike = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 90.0];
        assert_eq!(step(100.0, 100.0, &spike), None);
        let cooling = [40.0, 30.0, 20.0, 12.0, 11.0, 10.0, 10.0, 10.0];
        assert_eq!(step(100.0, 100.0, &cooling), None);
        assert_eq!(
            step(100.0, 100.0, &[1.0, 50.0, 100.0]),
            None,
            "three seconds"
        );
        assert_eq!(step(100.0, 100.0, &[]), None);
    }

    #[test]
    fn a_climb_must_be_large_against_the_latency_it_starts_from() {
        // A 1 ms service drifting to 3 ms: below the 5 ms floor.
        let drift = [1.0, 1.3, 1.6, 1.9, 2.2, 2.5, 2.8, 3.0];
        assert_eq!(step(100.0, 100.0, &drift), None);
        // A 500 ms service rising 200 ms (under half its start), then 260 ms (over).
        let slow: Vec<f64> = (0..8).map(|i| 500.0 + 200.0 * i as f64 / 7.0).collect();
        assert_eq!(step(100.0, 100.0, &slow), None);
        let slower: Vec<f64> = (0..8).map(|i| 500.0 + 260.0 * i as f64 / 7.0).collect();
        assert!(step(100.0, 100.0, &slower).is_some());
        // A 5 ms rise from 2 ms counts; a hair under does not.
        let five: Vec<f64> = (0..8).map(|i| 2.0 + 5.001 * i as f64 / 7.0).collect();
        assert!(step(100.0, 100.0, &five).is_some());
        let under: Vec<f64> = (0..8).map(|i| 2.0 + 4.99 * i as f64 / 7.0).collect();
        assert_eq!(step(100.0, 100.0, &under), None);
    }
}
