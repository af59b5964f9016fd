//! [`decide`]: the next level, or why the search is over.

use results::find::Stop;

/// What the search steps and between which bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// First level.
    pub from: f64,
    /// Highest level tried.
    pub to: f64,
    /// Bisect until the last pass and the first fail are this close (0.05 = 5%).
    pub precision: f64,
}

/// What one finished step says about the search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub level: f64,
    /// Every objective held (after the warm-up).
    pub pass: bool,
    /// The step was cut short by an interrupt: it is not judged.
    pub interrupted: bool,
    /// After failing, the service did not answer its health probe within the recovery time.
    pub stuck: bool,
    /// brink's own workers were at least this busy (0..1), and waited this share of the
    /// time for a CPU others held (where known) ...
    pub generator_busy: f64,
    pub generator_wait: Option<f64>,
    /// ... and that is at or past the point where the step measured brink, not the service.
    pub generator_bound: bool,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run a step at this level.
    Step(f64),
    Stop(Stop),
}

/// Levels after the first are whole connections, or whole requests per second.
fn round(level: f64) -> f64 {
    level.round().max(1.0)
}

/// The next step given the outcomes so far, in the order they ran.
pub fn decide(s: &Settings, done: &[Outcome]) -> Decision {
    if let Some(stop) = done.last().and_then(ends_search) {
        return Decision::Stop(stop);
    }
    let mut level = s.from;
    let mut last_pass = None;
    let mut grown = 0;
    let mut first_fail = None;
    for o in done {
        grown += 1;
        if !o.pass {
            first_fail = Some(o.level);
            break;
        }
        last_pass = Some(o.level);
        if o.level >= s.to {
            return Decision::Stop(Stop::AllPassed { to: s.to });
        }
        level = round(f64::min(level * 2.0, s.to));
    }
    let Some(mut hi) = first_fail else {
        return Decision::Step(level);
    };
    let Some(mut lo) = last_pass else {
        return Decision::Stop(Stop::FirstFailed { from: s.from });
    };
    for o in &done[grown..] {
        if o.pass {
            lo = o.level;
        } else {
            hi = o.level;
        }
    }
    let mid = round((lo + hi) / 2.0);
    if hi / lo - 1.0 <= s.precision || mid <= lo || mid >= hi {
        return Decision::Stop(Stop::Bisected { pass: lo, fail: hi });
    }
    Decision::Step(mid)
}

/// A step that ends the search whatever the levels say.
fn ends_search(o: &Outcome) -> Option<Stop> {
    if o.interrupted {
        Some(Stop::Interrupted)
    } else if o.stuck {
        Some(Stop::Stuck { level: o.level })
    } else if o.generator_bound {
        Some(Stop::GeneratorBound {
            level: o.level,
            busy_percent: o.generator_busy * 100.0,
            waiting_percent: o.generator_wait.map(|w| w * 100.0),
            passed: o.pass,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(level: f64, pass: bool) -> Outcome {
        Outcome {
            level,
            pass,
            interrupted: false,
            stuck: false,
            generator_busy: 0.3,
            generator_wait: None,
            generator_bound: false,
        }
    }

    /// Runs a whole search against a service that passes below `capacity`: the levels tried
    /// and how it ended.
    fn search(s: &Settings, capacity: f64) -> (Vec<f64>, Stop) {
        let mut done = Vec::new();
        loop {
            match decide(s, &done) {
                Decision::Step(l) => done.push(step(l, l <= capacity)),
                Decision::Stop(why) => return (done.iter().map(|o| o.level).collect(), why),
            }
            assert!(done.len() < 100, "the search must end");
        }
    }

    const S: Settings = Settings {
        from: 1.0,
        to: 1000.0,
        precision: 0.05,
    };

    #[test]
    fn searches_end_to_end() {
        // (settings, capacity, levels tried, how it ends) — one line per rule.
        let cases: [(Settings, f64, &[f64], Stop); 7] = [
            // Doubling to the first fail (16), then halving the gap: 12 passes, 14 fails, 13
            // fails; 13/12 - 1 = 8% > 5% but no whole level is left between 12 and 13.
            (
                S,
                12.0,
                &[1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 14.0, 13.0],
                Stop::Bisected {
                    pass: 12.0,
                    fail: 13.0,
                },
            ),
            // Every level passes: doubling stops at --to (1000, not 1024).
            (
                S,
                1e9,
                &[
                    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1000.0,
                ],
                Stop::AllPassed { to: 1000.0 },
            ),
            // The first level fails: nothing to bisect.
            (S, 0.5, &[1.0], Stop::FirstFailed { from: 1.0 }),
            // Coarser precision stops bisecting early: 300 vs 400 is within 40%.
            (
                Settings {
                    from: 100.0,
                    to: 1e5,
                    precision: 0.4,
                },
                350.0,
                &[100.0, 200.0, 400.0, 300.0],
                Stop::Bisected {
                    pass: 300.0,
                    fail: 400.0,
                },
            ),
            // Exactly as close as asked is close enough: 125 vs 100 is 25% apart, the
            // precision asked, so the search stops there (it would try 113 if "within" meant
            // strictly closer).
            (
                Settings {
                    from: 100.0,
                    to: 1e5,
                    precision: 0.25,
                },
                100.0,
                &[100.0, 200.0, 150.0, 125.0],
                Stop::Bisected {
                    pass: 100.0,
                    fail: 125.0,
                },
            ),
            // A fractional first rate: later levels are whole.
            (
                Settings {
                    from: 2.5,
                    to: 100.0,
                    precision: 0.05,
                },
                7.0,
                &[2.5, 5.0, 10.0, 8.0, 7.0],
                Stop::Bisected {
                    pass: 7.0,
                    fail: 8.0,
                },
            ),
            // --to below the second level: the second step is --to itself.
            (
                Settings {
                    from: 10.0,
                    to: 15.0,
                    precision: 0.05,
                },
                1e9,
                &[10.0, 15.0],
                Stop::AllPassed { to: 15.0 },
            ),
        ];
        for (s, capacity, levels, end) in cases {
            let (tried, why) = search(&s, capacity);
            assert_eq!(tried, levels, "{s:?} capacity {capacity}");
            assert_eq!(why, end, "{s:?} capacity {capacity}");
        }
    }

    #[test]
    fn a_step_can_end_the_search_on_its_own() {
        let mut o = step(8.0, false);
        o.stuck = true;
        assert_eq!(
            decide(&S, &[step(4.0, true), o]),
            Decision::Stop(Stop::Stuck { level: 8.0 })
        );
        let mut o = step(4.0, true);
        o.generator_bound = true;
        o.generator_busy = 0.95;
        assert_eq!(
            decide(&S, &[o]),
            Decision::Stop(Stop::GeneratorBound {
                level: 4.0,
                busy_percent: 95.0,
                waiting_percent: None,
                passed: true
            })
        );
        let mut o = step(2.0, false);
        o.interrupted = true;
        assert_eq!(
            decide(&S, &[step(1.0, true), o]),
            Decision::Stop(Stop::Interrupted)
        );
        assert_eq!(
            decide(&S, &[]),
            Decision::Step(1.0),
            "the first step is --from"
        );
    }
}
