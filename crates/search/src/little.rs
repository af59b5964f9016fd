//! Little's law as a check on every closed-model step. N connections, each always waiting for
//! an answer, completing X attempts a second means an attempt takes N/X on average; the mean
//! latency measured must agree. When it does not, connections spent time that no latency
//! figure shows (requests never answered, failed attempts and the pause after them, brink
//! itself), and the step says which, so a headline is never read off a step that contradicts
//! its own throughput.

use results::find::{LittleCause, LittleGap};

/// How far (as a share of N/X) the mean may stray before the step says why: wider than the
/// boundary effects of a warm-up and a grace on a step of a few seconds.
pub const TOLERANCE: f64 = 0.10;

/// What the check reads of one closed-model step's steady part.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepFigures {
    /// Connections.
    pub level: f64,
    /// Attempts completed per second of the schedule (answered or failed).
    pub rps: f64,
    /// Mean latency of the answered requests, ms.
    pub mean_ms: f64,
    /// Attempts in the steady part, and those that failed without an answer.
    pub attempts: u64,
    pub failed: u64,
    /// Requests still waiting for an answer when the judged window ended (answered in the
    /// grace after it, or never), and how long they had waited by then, seconds (at most).
    pub in_flight: u64,
    pub in_flight_wait_s: f64,
    /// brink's workers' busy share (0..1).
    pub generator_busy: f64,
    /// The slowest answer, ms, and the seconds judged.
    pub longest_ms: f64,
    pub window_s: f64,
}

/// The step's disagreement with Little's law and its likeliest cause; `None` when the mean is
/// within [`TOLERANCE`] of N/X (or there is nothing to compare).
pub fn check(f: &StepFigures) -> Option<LittleGap> {
    if f.rps <= 0.0 || f.level <= 0.0 || f.mean_ms <= 0.0 {
        return None;
    }
    let expected_ms = f.level / f.rps * 1000.0;
    if (f.mean_ms / expected_ms - 1.0).abs() <= TOLERANCE {
        return None;
    }
    Some(LittleGap {
        expected_ms,
        mean_ms: f.mean_ms,
        cause: cause(f, f.mean_ms < expected_ms),
    })
}

fn cause(f: &StepFigures, short: bool) -> LittleCause {
    // Connection-seconds of the window that no answered request's latency accounts for.
    let missing_s = f.level * f.window_s - f.attempts as f64 * f.mean_ms / 1000.0;
    if short && f.in_flight > 0 && f.in_flight_wait_s >= missing_s / 2.0 {
        return LittleCause::InFlight {
            requests: f.in_flight,
            waited_s: f.in_flight_wait_s,
        };
    }
    if short && f.failed as f64 >= f.attempts as f64 * 0.005 && f.failed > 0 {
        return LittleCause::Failed { attempts: f.failed };
    }
    if short && crate::generator_limited(f.generator_busy, None) {
        return LittleCause::Generator {
            busy_percent: f.generator_busy * 100.0,
        };
    }
    // Requests in flight across the window's two edges are counted whole or not at all: each
    // edge can move the mean by up to the longest wait over the window.
    let gap = (f.mean_ms * f.rps / 1000.0 / f.level - 1.0).abs();
    if f.window_s > 0.0 && f.longest_ms / 1000.0 / f.window_s >= gap {
        return LittleCause::Edges {
            longest_ms: f.longest_ms,
            window_s: f.window_s,
        };
    }
    LittleCause::Unexplained
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(level: f64, rps: f64, mean_ms: f64) -> StepFigures {
        StepFigures {
            level,
            rps,
            mean_ms,
            attempts: (rps * 8.0) as u64,
            ..StepFigures::default()
        }
    }

    #[test]
    fn a_step_that_agrees_says_nothing() {
        // 64 connections at 1,000 req/s: 64 ms a request.
        assert_eq!(check(&step(64.0, 1000.0, 64.0)), None);
        assert_eq!(check(&step(64.0, 1000.0, 58.0)), None);
        assert_eq!(check(&step(64.0, 1000.0, 70.0)), None);
    }

    #[test]
    fn a_step_that_disagrees_says_why() {
        // The first-found case: 400 connections at 1,737 req/s with a 52.8 ms mean, 317
        // requests never answered.
        let mut f = step(400.0, 1737.0, 52.8);
        (f.window_s, f.in_flight, f.in_flight_wait_s) = (8.0, 317, 317.0 * 5.0);
        let gap = check(&f).expect("a gap");
        assert!((gap.expected_ms - 230.3).abs() < 0.1, "{gap:?}");
        assert_eq!(
            gap.cause,
            LittleCause::InFlight {
                requests: 317,
                waited_s: 1585.0
            }
        );
        // A handful in flight that had waited little explain nothing.
        f.in_flight_wait_s = 10.0;
        assert_ne!(check(&f).map(|g| g.cause), Some(gap.cause));

        let mut f = step(100.0, 1000.0, 50.0);
        f.failed = f.attempts / 10;
        assert!(matches!(
            check(&f).map(|g| g.cause),
            Some(LittleCause::Failed { .. })
        ));

        let mut f = step(100.0, 1000.0, 50.0);
        f.generator_busy = 0.95;
        assert!(matches!(
            check(&f).map(|g| g.cause),
            Some(LittleCause::Generator { .. })
        ));

        assert_eq!(
            check(&step(100.0, 1000.0, 150.0)).map(|g| g.cause),
            Some(LittleCause::Unexplained)
        );
        // A 13% gap on 4 s judged, with answers up to 1 s: the edges can move it that much.
        let mut f = step(29.0, 1905.0, 13.2);
        (f.longest_ms, f.window_s) = (1010.0, 4.0);
        assert!(matches!(
            check(&f).map(|g| g.cause),
            Some(LittleCause::Edges { .. })
        ));
        // The same gap with answers of at most 20 ms cannot come from the edges.
        f.longest_ms = 20.0;
        assert_eq!(check(&f).map(|g| g.cause), Some(LittleCause::Unexplained));
    }

    #[test]
    fn nothing_to_compare_is_no_gap() {
        assert_eq!(check(&step(10.0, 0.0, 5.0)), None);
        assert_eq!(check(&step(10.0, 100.0, 0.0)), None);
    }
}
