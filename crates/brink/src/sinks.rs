//! The sinks the binary brings: the live progress line and the terminal summary (unless
//! `-q`), and the result files (`--json`, `--html`, `--csv`), each written whole at the end.

use crate::console::emit;
use crate::exit::Fail;
use crate::output::{Files, Kind, Output};
use crate::progress::Progress;
use results::find::By;
use runner::{Event, Sink, Sinks};

/// Prints a finished result as the terminal summary shows it at the end of a run (`brink
/// show`): every scenario's summary and the suite's table, or the search's table and findings.
pub fn print_result(r: &results::RunResult) {
    match &r.find {
        Some(f) => {
            let columns: Vec<String> = f
                .steps
                .iter()
                .flat_map(|s| s.observed.keys().cloned())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            emit(&report::find::by_level(f, &columns));
            emit(&report::find::render_summary(f));
        }
        None => {
            for s in &r.scenarios {
                emit(&report::render(s));
            }
            emit(&report::suite_table(r));
        }
    }
}

/// The sinks for `quiet` (nothing on the terminal) and `files`, which are prepared now so an
/// unwritable path fails before any load.
pub fn standard(quiet: bool, files: &Files) -> Result<Sinks, Fail> {
    let mut s = Sinks::default();
    if !quiet {
        s.push(Box::new(Progress::new(None)));
        s.push(Box::new(Terminal::default()));
    }
    if let Some(mark) = crate::logmark::get() {
        s.push(Box::new(crate::logmark::Reporter(mark)));
    }
    add_files(&mut s, files)?;
    Ok(s)
}

/// The result files alone (`k8s run` shows what its coordinator printed).
pub fn files_only(files: &Files) -> Result<Sinks, Fail> {
    let mut s = Sinks::default();
    add_files(&mut s, files)?;
    Ok(s)
}

fn add_files(s: &mut Sinks, files: &Files) -> Result<(), Fail> {
    for (kind, out) in files.prepare()? {
        s.push(Box::new(ResultFile {
            kind,
            out: Some(out),
        }));
    }
    Ok(())
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
                held,
                ..
            } => {
                emit(header);
                emit(&report::find::step_header(*by, columns, *held));
                self.search = Some((*by, columns.to_vec()));
            }
            Event::ScenarioDone(s) if self.search.is_none() => emit(&report::render(s)),
            Event::ScenarioFailed { name, why } => {
                emit(&format!("scenario {name} failed: {why}\n"));
            }
            Event::Waiting { what } => emit(&format!("{what}\n")),
            Event::StepDone(row) => {
                if let Some((by, columns)) = &self.search {
                    emit(&report::find::step_line(*by, row, columns, None));
                }
            }
            Event::Finished(r) => match (&r.find, &self.search) {
                (Some(f), Some((_, columns))) => {
                    if report::find::needs_by_level(f) {
                        emit(&report::find::by_level(f, columns));
                    }
                    emit(&report::find::render_summary(f));
                }
                _ => emit(&report::suite_table(r)),
            },
            _ => {}
        }
        Ok(())
    }
}

/// A result file, written whole once the result is ready.
struct ResultFile {
    kind: Kind,
    out: Option<Output>,
}

impl Sink for ResultFile {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match (e, self.out.take()) {
            (Event::Finished(r), Some(out)) => {
                crate::output::write_result(self.kind, out, r).map_err(|f| runner::Error(f.message))
            }
            (_, out) => {
                self.out = out;
                Ok(())
            }
        }
    }
}

/// The live progress line: drawn each second of a run, cleared when it ends.
impl Sink for Progress {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        match e {
            Event::RunStarted { total } => self.start(*total),
            // In a log, a search's step table is its progress: plain lines between its rows
            // would only interleave with them.
            Event::Search { most, per_step, .. } => self.search_starts(*most, *per_step),
            Event::StepDone(_) => self.step_done(),
            Event::Second(view) => self.draw(view),
            Event::RunEnded => self.finish(),
            _ => {}
        }
        Ok(())
    }
}
