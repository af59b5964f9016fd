//! Outputs are sinks: each takes the events of a command (a scenario starts, a second ends, a
//! scenario or search step is done, the whole result is ready) and shows or keeps what it
//! wants. The live progress line, the terminal summary and the `--json` file are three sinks;
//! an HTML report, a CSV, the run history and a live web view are more, added without touching
//! the runners.

use crate::console::emit;
use crate::exit::Fail;
use crate::output::Output;
use crate::progress::Progress;
use engine::SecondView;
use report::find::{By, StepRow};
use report::{RunResult, ScenarioResult};
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
    },
    /// A run (a scenario, or a step of a search) starts; it lasts `total` when known.
    RunStarted { total: Option<Duration> },
    /// A second of the current run is complete.
    Second(&'a SecondView<'a>),
    /// The current run ended.
    RunEnded,
    /// A scenario's result.
    ScenarioDone(&'a ScenarioResult),
    /// A scenario could not run; the command stops after it.
    ScenarioFailed { name: &'a str, why: &'a str },
    /// A search step's row.
    StepDone(&'a StepRow),
    /// The whole result, once, at the end.
    Finished(&'a RunResult),
}

/// Something that consumes a command's events.
pub trait Sink {
    /// Takes one event; an output that cannot be written is an error (exit 2).
    fn event(&mut self, e: &Event) -> Result<(), Fail>;
}

/// The sinks of one command, fed in the order they were added.
#[derive(Default)]
pub struct Sinks(Vec<Box<dyn Sink>>);

impl Sinks {
    /// The sinks for `quiet` (nothing on the terminal) and `json` (the result file).
    pub fn standard(quiet: bool, json: Option<Output>) -> Sinks {
        let mut s = Sinks::default();
        if !quiet {
            s.0.push(Box::new(Progress::new(None)));
            s.0.push(Box::new(Terminal::default()));
        }
        if let Some(out) = json {
            s.0.push(Box::new(JsonFile(Some(out))));
        }
        s
    }

    /// Hands `e` to every sink; the first error is returned after all have seen it.
    pub fn emit(&mut self, e: &Event) -> Result<(), Fail> {
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

/// The terminal summary: scenario summaries and the suite's verdict, or the search's table
/// and its conclusions.
#[derive(Default)]
struct Terminal {
    /// The search's step and observed columns, once one has started.
    search: Option<(By, Vec<String>)>,
}

impl Sink for Terminal {
    fn event(&mut self, e: &Event) -> Result<(), Fail> {
        match e {
            Event::Scenario { name, index, count } if *count > 1 => {
                emit(&format!(
                    "\n== scenario {name} ({}/{count}) ==\n",
                    index + 1
                ));
            }
            Event::Search {
                header,
                by,
                columns,
            } => {
                emit(header);
                emit(&report::find::step_header(*by, columns));
                self.search = Some((*by, columns.to_vec()));
            }
            Event::ScenarioDone(s) if self.search.is_none() => emit(&report::render(s)),
            Event::ScenarioFailed { name, why } => {
                emit(&format!("scenario {name} failed: {why}\n"));
            }
            Event::StepDone(row) => {
                if let Some((by, columns)) = &self.search {
                    emit(&report::find::step_line(*by, row, columns, None));
                }
            }
            Event::Finished(r) => match (&r.find, &self.search) {
                (Some(f), Some((_, columns))) => {
                    emit(&report::find::by_level(f, columns));
                    emit(&report::find::render_summary(f));
                }
                _ => emit(&report::suite_table(r)),
            },
            _ => {}
        }
        Ok(())
    }
}

/// The `--json` result file, written whole at the end.
struct JsonFile(Option<Output>);

impl Sink for JsonFile {
    fn event(&mut self, e: &Event) -> Result<(), Fail> {
        match e {
            Event::Finished(r) => crate::output::write_json(self.0.take(), r),
            _ => Ok(()),
        }
    }
}

/// The live progress line: drawn each second of a run, cleared when it ends.
impl Sink for Progress {
    fn event(&mut self, e: &Event) -> Result<(), Fail> {
        match e {
            Event::RunStarted { total } => self.start(*total),
            Event::Second(view) => self.draw(view),
            Event::RunEnded => self.finish(),
            _ => {}
        }
        Ok(())
    }
}
