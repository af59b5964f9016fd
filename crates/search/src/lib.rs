//! The capacity search as a library, without a command line, a terminal or a load engine:
//! given the search's settings and the outcomes of the steps run so far, [`decide`] says which
//! level to try next or why the search is over. Whatever runs the steps (the local engine
//! today, remote workers later) and whatever shows them (terminal, JSON, a web page) sits
//! outside; this crate only decides, so every rule is table-tested here. When the search is
//! over, [`summarise`] turns its steps into the `find` section of the result (maximum
//! sustainable level, knee, USL fit) and [`diagnose`] into typed findings citing their figures.
//!
//! The rules: levels double from `from` (each later level rounded to a whole number, never
//! past `to`) until a step fails or `to` passes; then the gap between the last pass and the
//! first fail is bisected (`round((lo + hi) / 2)`) until `hi / lo - 1 <= precision` or no whole
//! level is left between them. Before that, a step can end the search on its own: it was
//! interrupted, the service got stuck (no answer to its health probe within the recovery
//! time), or brink's own workers were the limit.

mod decide;
mod diagnose;
mod facts;
pub mod little;
pub mod overload;
mod summary;
mod tokens;

pub use decide::{decide, Decision, Outcome, Settings};
pub use diagnose::{cpu_bound, diagnose, StepFacts};
pub use results::find::Stop;
pub use summary::summarise;

/// A step during which brink's own worker threads were at least this busy (0..1) measured
/// brink, not the service: the search stops there and the diagnosis says so.
pub const GENERATOR_BUSY: f64 = 0.9;

/// Whether brink's workers limited a step or run: `busy` (0..1) is their time on a CPU,
/// `waiting` their time ready to run but waiting for a CPU other processes held. Ready to work
/// nearly all the time, on a CPU or waiting for one, they had no time to spare: the load was
/// theirs to give, and on a shared machine they fall behind without using much CPU.
pub fn generator_limited(busy: f64, waiting: Option<f64>) -> bool {
    busy + waiting.unwrap_or(0.0) >= GENERATOR_BUSY
}

/// Runs one step of a search at a level: the local engine today, remote workers later. It
/// returns what the step means for the search, or `Err` with why no step could run
/// ([`Stop::Interrupted`], [`Stop::StepFailed`]); the search ends there.
pub trait StepRunner {
    fn run_step(&mut self, level: f64) -> Result<Outcome, Stop>;
}

/// Runs a whole search: steps while [`decide`] asks for them, through `runner`. Returns the
/// outcomes in the order they ran and why the search ended.
pub fn search(settings: &Settings, runner: &mut dyn StepRunner) -> (Vec<Outcome>, Stop) {
    let mut outcomes = Vec::new();
    loop {
        match decide(settings, &outcomes) {
            Decision::Step(level) => match runner.run_step(level) {
                Ok(o) => outcomes.push(o),
                Err(stop) => return (outcomes, stop),
            },
            Decision::Stop(stop) => return (outcomes, stop),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service that passes up to `capacity`, and fails to run a step at `broken`.
    struct Fake {
        capacity: f64,
        broken: f64,
    }

    impl StepRunner for Fake {
        fn run_step(&mut self, level: f64) -> Result<Outcome, Stop> {
            if level == self.broken {
                return Err(Stop::StepFailed {
                    why: "cannot run".into(),
                });
            }
            Ok(Outcome {
                level,
                pass: level <= self.capacity,
                interrupted: false,
                stuck: false,
                generator_busy: 0.1,
                generator_wait: Some(0.02),
                generator_bound: false,
            })
        }
    }

    #[test]
    fn the_generator_limits_when_busy_or_ready_but_kept_waiting() {
        use super::generator_limited as limited;
        // Busy on a CPU, with or without waiting.
        assert!(limited(0.95, None));
        assert!(limited(0.92, Some(0.01)));
        // Ready nearly all the time, a third of it waiting for a CPU others held.
        assert!(limited(0.60, Some(0.35)));
        assert!(limited(0.85, Some(0.08)));
        // Waiting a lot but mostly idle: the service was the wait, not brink.
        assert!(!limited(0.20, Some(0.30)));
        assert!(!limited(0.5, None));
    }

    #[test]
    fn a_runner_drives_the_whole_search() {
        let s = Settings {
            from: 1.0,
            to: 100.0,
            precision: 0.05,
        };
        let (done, end) = search(
            &s,
            &mut Fake {
                capacity: 6.0,
                broken: -1.0,
            },
        );
        let levels: Vec<f64> = done.iter().map(|o| o.level).collect();
        assert_eq!(levels, [1.0, 2.0, 4.0, 8.0, 6.0, 7.0]);
        assert_eq!(
            end,
            Stop::Bisected {
                pass: 6.0,
                fail: 7.0
            }
        );
        let (done, end) = search(
            &s,
            &mut Fake {
                capacity: 6.0,
                broken: 4.0,
            },
        );
        assert_eq!(done.len(), 2);
        assert_eq!(
            end,
            Stop::StepFailed {
                why: "cannot run".into()
            }
        );
    }
}
