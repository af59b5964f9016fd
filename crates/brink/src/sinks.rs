//! The sinks the binary brings: the live progress line and the terminal summary (unless
//! `-q`), and the `--json` result file, written whole at the end.

use crate::console::emit;
use crate::output::Output;
use crate::progress::Progress;
use report::find::By;
use runner::{Event, Sink, Sinks};

/// The sinks for `quiet` (nothing on the terminal) and `json` (the result file).
pub fn standard(quiet: bool, json: Option<Output>) -> Sinks {
    let mut s = Sinks::default();
    if !quiet {
        s.push(Box::new(Progress::new(None)));
        s.push(Box::new(Terminal::default()));
    }
    if let Some(out) = json {
        s.push(Box::new(JsonFile(Some(out))));
    }
    s
}

/// The terminal summary: scenario summaries and the suite's verdict, or the search's table
/// and its conclusions.
#[derive(Default)]
struct Terminal {
    /// The search's step and observed columns, once one has started.
    search: Option<(By, Vec<String>)>,
}

impl Sink for Terminal {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
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
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match e {
            Event::Finished(r) => {
                crate::output::write_json(self.0.take(), r).map_err(|f| runner::Error(f.message))
            }
            _ => Ok(()),
        }
    }
}

/// The live progress line: drawn each second of a run, cleared when it ends.
impl Sink for Progress {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match e {
            Event::RunStarted { total } => self.start(*total),
            Event::Second(view) => self.draw(view),
            Event::RunEnded => self.finish(),
            _ => {}
        }
        Ok(())
    }
}
