//! What a finished search found, from its steps: the maximum sustainable level (the highest
//! whole step that held its objectives, with how close the first failure above it was), the
//! knee of the throughput curve, the Universal Scalability Law fitted to the points, and the
//! diagnosis. Interrupted steps are listed but never judged.

use crate::diagnose::{diagnose, StepFacts};
use results::find::{By, FindResult, KneeInfo, Pace, Stop, Sustained, UslInfo};
use stats::capacity::{knee, Point, Usl};

/// The `find` section of a result, from every step in the order they ran. `pace`: how the
/// connections send (paced or held ones set their throughput themselves).
pub fn summarise(
    by: By,
    slos: &[String],
    all_steps: &[StepFacts],
    stop: Stop,
    recovery_s: f64,
    pace: Pace,
) -> FindResult {
    // Only whole steps count; an interrupted one is listed but never judged.
    let whole: Vec<StepFacts> = all_steps
        .iter()
        .filter(|x| !x.interrupted)
        .copied()
        .collect();
    let steps = &whole[..];
    let best = steps
        .iter()
        .filter(|x| x.row.pass)
        .max_by(|a, b| a.row.level.total_cmp(&b.row.level));
    let first_fail_above = |lvl: f64| {
        steps
            .iter()
            .filter(|x| !x.row.pass && x.row.level > lvl)
            .map(|x| x.row.level)
            .min_by(f64::total_cmp)
    };
    let max_sustainable = best.map(|b| Sustained {
        level: b.row.level,
        rps: b.row.ok_rps,
        slo: slos.to_vec(),
        resolution: first_fail_above(b.row.level).map(|f| f / b.row.level - 1.0),
    });
    // By rate, a level past the first one that failed above the capacity could not be kept:
    // its latency is the length of a queue that grew for the step's length, not the
    // service's answer to that load, so no knee is read off it (one was placed at such a
    // level, above the real break).
    let past_saturation = match (by, &max_sustainable) {
        (By::Rate, Some(m)) => first_fail_above(m.level),
        _ => None,
    };
    let points: Vec<Point> = steps
        .iter()
        .filter(|x| past_saturation.is_none_or(|f| x.row.level <= f))
        .map(|x| Point {
            level: x.row.level,
            throughput: x.row.ok_rps,
            p90_ms: x.row.p90,
        })
        .collect();
    // Paced connections' throughput grows with them by design and stops when the service
    // refuses more, not where work queues (held streams' is their reconnects): no knee is
    // read off it.
    let free = pace == Pace::Free;
    let knee = knee(&points).filter(|_| free).map(|k| KneeInfo {
        level: k.level,
        reason: k.reason,
    });
    // The USL's N is concurrency: by rate it has no level to be read in, so it is left out;
    // paced connections' throughput is N / pace by design, which says nothing of the service.
    let usl_points: Vec<(f64, f64)> = match (by, free) {
        (By::Connections, true) => steps.iter().filter_map(|x| x.row.usl_point(by)).collect(),
        (By::Connections, false) | (By::Rate, _) => Vec::new(),
    };
    let usl = Usl::fit(&usl_points).map(|u| {
        let plateau = u.peak_n.is_some_and(|n| flat_past(&usl_points, n));
        UslInfo {
            lambda: u.lambda,
            sigma: u.sigma,
            kappa: u.kappa,
            peak_concurrency: u.peak_n.filter(|_| !plateau),
            peak_rps: u.peak_x.filter(|_| !plateau),
            r2: u.r2,
            // Below 0.95 the curve misses measured points by enough to move the peak a lot.
            poor_fit: u.r2 < 0.95,
            plateau,
        }
    });
    let mut find = FindResult {
        by,
        steps: all_steps.iter().map(|x| x.row.clone()).collect(),
        max_sustainable,
        knee,
        usl,
        diagnosis: Vec::new(),
        findings: Vec::new(),
        stopped: stop.describe(by, recovery_s),
        stop: Some(stop),
        hooks: Vec::new(),
        captures: Vec::new(),
        reruns: Vec::new(),
        every_ms: match pace {
            Pace::Every(e) => Some(e.as_secs_f64() * 1000.0),
            Pace::Free | Pace::Held => None,
        },
        held_streams: pace == Pace::Held,
    };
    find.findings = diagnose(find.knee.as_ref(), steps);
    find.diagnosis = find.findings.iter().map(|x| x.describe(by)).collect();
    find
}

/// Whether throughput was measured past `peak_n` connections and did not fall there (every
/// such point within 5% of the highest measured): the fit's peak describes no peak the service
/// showed, only a plateau.
fn flat_past(points: &[(f64, f64)], peak_n: f64) -> bool {
    let top = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut past = points.iter().filter(|p| p.0 > peak_n * 1.5).peekable();
    past.peek().is_some() && past.all(|p| p.1 >= top * 0.95)
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::find::StepRow;
    use stats::Bucket;

    fn row(level: f64, pass: bool, ok_rps: f64) -> StepRow {
        StepRow {
            level,
            pass,
            ok_rps,
            mean: 10.0,
            p90: 20.0,
            ..StepRow::default()
        }
    }

    fn facts<'a>(rows: &'a [StepRow], steady: &'a Bucket, cut: f64) -> Vec<StepFacts<'a>> {
        rows.iter()
            .map(|row| StepFacts {
                row,
                stuck: false,
                interrupted: row.level == cut,
                steady,
            })
            .collect()
    }

    #[test]
    fn the_best_whole_passing_step_is_the_maximum_and_the_stop_is_kept_typed_and_in_words() {
        let rows = [
            row(1.0, true, 100.0),
            row(2.0, true, 190.0),
            row(4.0, false, 200.0),
            row(3.0, true, 200.0),
            // Interrupted: listed, never judged, even though it "passed" higher up.
            row(8.0, true, 400.0),
        ];
        let steady = Bucket::new(0);
        let stop = Stop::Bisected {
            pass: 3.0,
            fail: 4.0,
        };
        let f = summarise(
            By::Connections,
            &["p99<100ms".to_string()],
            &facts(&rows, &steady, 8.0),
            stop.clone(),
            5.0,
            Pace::Free,
        );
        assert_eq!(f.steps.len(), 5, "every step is listed");
        let best = f.max_sustainable.expect("a step passed");
        assert_eq!(best.level, 3.0);
        assert_eq!(best.rps, 200.0);
        assert_eq!(best.slo, ["p99<100ms"]);
        let r = best.resolution.expect("a failure above");
        assert!((r - 1.0 / 3.0).abs() < 1e-12, "{r}");
        assert_eq!(f.stop, Some(stop));
        assert_eq!(
            f.stopped,
            "bisected between 3 connections (pass) and 4 connections (fail)"
        );
    }

    #[test]
    fn paced_connections_get_no_scalability_fit_and_say_their_pace() {
        // One ping per connection a second: throughput is the connections, by design.
        let rows: Vec<StepRow> = [100.0, 200.0, 400.0, 800.0]
            .iter()
            .map(|&n| row(n, true, n))
            .collect();
        let steady = Bucket::new(0);
        let stop = Stop::AllPassed { to: 800.0 };
        let sum = |every| {
            summarise(
                By::Connections,
                &[],
                &facts(&rows, &steady, -1.0),
                stop.clone(),
                5.0,
                every,
            )
        };
        let paced = sum(Pace::Every(std::time::Duration::from_secs(1)));
        assert!(paced.usl.is_none());
        assert!(paced.knee.is_none());
        assert_eq!(paced.every_ms, Some(1000.0));
        // The same figures unpaced are a perfectly linear service, and get their fit.
        let held = sum(Pace::Held);
        assert!(held.usl.is_none() && held.knee.is_none() && held.held_streams);
        let free = sum(Pace::Free);
        assert!(free.usl.is_some());
        assert_eq!((free.every_ms, free.held_streams), (None, false));
    }

    /// A rate search on a server saturating near 750/s (as one was seen): 750/s passed, 775/s
    /// and 800/s failed with a queue growing. 800/s's p90 is 8.8x 775/s's, but 800/s was past
    /// saturation: the knee is never put there, above the real break.
    #[test]
    fn a_rate_search_reads_no_knee_past_its_first_failure_above_the_capacity() {
        let at = |level: f64, pass: bool, ok_rps: f64, p90: f64| StepRow {
            p90,
            ..row(level, pass, ok_rps)
        };
        let rows = [
            at(400.0, true, 400.0, 11.0),
            at(800.0, false, 748.0, 375.0),
            at(600.0, true, 600.0, 12.5),
            at(700.0, true, 700.0, 13.8),
            at(750.0, true, 749.0, 14.7),
            at(775.0, false, 770.0, 42.8),
        ];
        let steady = Bucket::new(0);
        let f = summarise(
            By::Rate,
            &[],
            &facts(&rows, &steady, -1.0),
            Stop::Bisected {
                pass: 750.0,
                fail: 775.0,
            },
            5.0,
            Pace::Free,
        );
        assert_eq!(f.max_sustainable.as_ref().map(|m| m.level), Some(750.0));
        assert!(
            f.knee.as_ref().is_none_or(|k| k.level <= 775.0),
            "{:?}",
            f.knee
        );
    }

    #[test]
    fn nothing_passed_means_no_maximum() {
        let rows = [row(1.0, false, 0.0)];
        let steady = Bucket::new(0);
        let f = summarise(
            By::Rate,
            &[],
            &facts(&rows, &steady, -1.0),
            Stop::FirstFailed { from: 1.0 },
            5.0,
            Pace::Free,
        );
        assert!(f.max_sustainable.is_none());
        assert_eq!(f.stopped, "the first level (1.0/s) already failed");
    }

    #[test]
    fn every_stop_reads_as_a_sentence() {
        let by = By::Connections;
        let cases = [
            (Stop::Interrupted, "interrupted"),
            (
                Stop::Stuck { level: 8.0 },
                "service stopped responding at 8 connections and did not recover within 3s",
            ),
            (
                Stop::GeneratorBound {
                    level: 64.0,
                    busy_percent: 95.0,
                    waiting_percent: Some(2.0),
                    passed: false,
                },
                "the generator, not the service, was the limit at 64 connections (brink's workers were 95% busy)",
            ),
            (
                Stop::GeneratorBound {
                    level: 64.0,
                    busy_percent: 55.0,
                    waiting_percent: Some(40.0),
                    passed: true,
                },
                "the generator reached its own limit at 64 connections (brink's workers were 55% busy and 40% waiting for a CPU other processes held): higher levels would measure brink, not the service",
            ),
            (
                Stop::AllPassed { to: 100.0 },
                "every level up to --to 100 connections passed",
            ),
            (
                Stop::StepFailed { why: "boom".into() },
                "boom",
            ),
        ];
        for (stop, want) in cases {
            assert_eq!(stop.describe(by, 3.0), want);
        }
    }

    #[test]
    fn a_peak_the_throughput_never_fell_past_is_a_plateau() {
        let flat = [
            (1.0, 100.0),
            (2.0, 190.0),
            (4.0, 380.0),
            (8.0, 400.0),
            (16.0, 401.0),
            (64.0, 398.0),
        ];
        assert!(flat_past(&flat, 8.0), "held within 5% past 12 connections");
        let falling = [(1.0, 100.0), (8.0, 400.0), (16.0, 380.0), (64.0, 300.0)];
        assert!(!flat_past(&falling, 8.0), "fell 25%");
        assert!(
            !flat_past(&flat, 64.0),
            "nothing measured past 96: the peak is a prediction"
        );
    }
}
