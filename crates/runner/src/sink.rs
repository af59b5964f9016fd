//! Outputs are sinks: each takes the events of a command (a scenario starts, a second ends, a
//! scenario or search step is done, the whole result is ready) and shows or keeps what it
//! wants. The live progress line, the terminal summary and the `--json` file are three sinks
//! (in the binary); an HTML report, a CSV, the run history and a live web view are more, added
//! without touching the runners.

use crate::Error;
use merge::SecondView;
use results::find::{By, StepRow};
use results::{RunResult, ScenarioResult};
use std::time::Duration;

/// What happens during a command, in order.
pub enum Event<'a> {
    /// Scenario `index` (from 0) of `count` starts.
    Scenario {
        name: &'a str,
        index: usize,
        count: usize,
    },
    /// A capacity search starts: its one-line description and the table's observed columns.
    Search {
        header: &'a str,
        by: By,
        columns: &'a [String],
        /// Its levels are held event streams (`--hold`): the table shows their events.
        held: bool,
        /// The most steps it can take, and what one takes (step and cool-down): the live
        /// line's estimate of what is left.
        most: u32,
        per_step: Duration,
    },
    /// A run (a scenario, or a step of a search) starts; it lasts `total` when known.
    RunStarted { total: Option<Duration> },
    /// A second of the current run is complete.
    Second(&'a SecondView<'a>),
    /// The current run ended.
    RunEnded,
    /// The load is over; the command waits for something else (the completion probe).
    Waiting { what: &'a str },
    /// A scenario's result.
    ScenarioDone(&'a ScenarioResult),
    /// A scenario could not run; the command stops after it.
    ScenarioFailed { name: &'a str, why: &'a str },
    /// A search step's row.
    StepDone(&'a StepRow),
    /// The whole result, once, at the end.
    Finished(&'a RunResult),
    /// The command's exit code, once known (after `Finished`).
    Exit(i32),
}

/// Something that consumes a command's events.
pub trait Sink {
    /// Takes one event; an output that cannot be written is an error.
    fn event(&mut self, e: &Event) -> Result<(), Error>;
}

/// The sinks of one command, fed in the order they were added.
#[derive(Default)]
pub struct Sinks(Vec<Box<dyn Sink>>);

impl Sinks {
    /// Adds `sink` after the others.
    pub fn push(&mut self, sink: Box<dyn Sink>) {
        self.0.push(sink);
    }

    /// Hands `e` to every sink; the first error is returned after all have seen it.
    pub fn emit(&mut self, e: &Event) -> Result<(), Error> {
        let mut first = Ok(());
        for s in &mut self.0 {
            if let Err(f) = s.event(e) {
                if first.is_ok() {
                    first = Err(f);
                }
            }
        }
        first
    }

    /// As [`Sinks::emit`] for events whose sinks cannot fail (they only print).
    pub fn show(&mut self, e: &Event) {
        let _ = self.emit(e);
    }
}
