//! Recording every run in the history, as a sink: the run is entered when its first scenario
//! (or search) starts, each second is written as it ends, the result when it is ready, the exit
//! code last. A history that cannot be opened or written warns once on stderr and is then left
//! alone: it never changes the run's exit code or its other outputs.

use crate::console::warn;
use history::{History, Meta};
use results::RunResult;
use runner::{Event, Job, Sink};
use std::path::PathBuf;

/// Where and how to record, checked from `--history`, `--no-history`, `--tag`, `--note`.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// `None`: not recorded.
    pub path: Option<PathBuf>,
    pub tags: Vec<(String, String)>,
    pub note: Option<String>,
}

/// What is known of a run before it starts, for its history entry.
pub fn meta(
    command: model::RunCommand,
    jobs: &[Job],
    search: Option<(String, model::LoadModel)>,
    rec: &Recording,
) -> Meta {
    let first = jobs.first();
    let info = first.map(|j| runner::load_info(&j.spec, j.spec.threads));
    let (git_commit, git_branch) = history::git_info();
    Meta {
        started_at: results::rfc3339_utc(std::time::SystemTime::now()),
        command,
        name: jobs
            .iter()
            .map(|j| j.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        target: first.map_or_else(String::new, |j| runner::target_info(&j.spec).shown()),
        method: first
            .and_then(|j| j.spec.workload.requests.first())
            .map_or_else(String::new, |r| r.method.clone()),
        load_model: search
            .as_ref()
            .map(|(_, m)| *m)
            .or(info.as_ref().map(|i| i.model)),
        load_level: search.map(|(how, _)| how).unwrap_or_else(|| {
            info.as_ref()
                .map_or_else(String::new, report::describe_load)
        }),
        git_commit,
        git_branch,
        host: history::hostname(),
        note: rec.note.clone(),
        tags: rec.tags.clone(),
    }
}

/// The history sink.
pub struct Recorder {
    history: Option<History>,
    meta: Meta,
    id: Option<i64>,
    /// The part (scenario or search step) the next seconds belong to, and its name.
    part: usize,
    name: String,
    runs_started: usize,
    search: bool,
    finished: bool,
}

impl Recorder {
    /// A recorder for `meta`, or one that records nothing when `rec` says so or the history
    /// cannot be opened (which warns once).
    pub fn new(rec: &Recording, meta: Meta) -> Recorder {
        let history = rec.path.as_ref().and_then(|p| match History::open(p) {
            Ok(h) => Some(h),
            Err(e) => {
                warn(&format!("run history not kept: {e}"));
                None
            }
        });
        Recorder {
            history,
            meta,
            id: None,
            part: 0,
            name: String::new(),
            runs_started: 0,
            search: false,
            finished: false,
        }
    }

    fn begun(&mut self) -> Result<(i64, &History), history::Error> {
        let Some(h) = &self.history else {
            return Err(history::Error("closed".into()));
        };
        let id = match self.id {
            Some(id) => id,
            None => {
                let id = h.begin(&self.meta)?;
                self.id = Some(id);
                id
            }
        };
        Ok((id, h))
    }

    fn take(&mut self, e: &Event) -> Result<(), history::Error> {
        match e {
            Event::Scenario { name, index, .. } => {
                self.begun()?;
                self.part = *index;
                self.name = name.to_string();
            }
            Event::Search { .. } => {
                self.search = true;
                self.begun()?;
            }
            Event::RunStarted { .. } => {
                if self.search {
                    self.part = self.runs_started;
                    self.name = format!("step {}", self.runs_started + 1);
                }
                self.runs_started += 1;
            }
            Event::Second(view) => {
                let (part, row) = (self.part, runner::second_row(view.second));
                let name = self.name.clone();
                let (id, h) = self.begun()?;
                h.second(id, part, &name, &row)?;
            }
            Event::Finished(r) => self.finish(r)?,
            Event::Exit(code) => {
                let code = *code;
                let (id, h) = self.begun()?;
                h.exit(id, code)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, r: &RunResult) -> Result<(), history::Error> {
        let (id, h) = self.begun()?;
        h.finish(id, r)?;
        self.finished = true;
        Ok(())
    }
}

impl Sink for Recorder {
    fn event(&mut self, e: &Event) -> Result<(), runner::Error> {
        if self.history.is_some() {
            if let Err(err) = self.take(e) {
                warn(&format!("run history not kept: {err}"));
                self.history = None;
            }
        }
        Ok(())
    }
}

impl Drop for Recorder {
    /// A run that ended without a result is kept as failed, with the seconds it measured.
    fn drop(&mut self) {
        if let (Some(h), Some(id), false) = (&self.history, self.id, self.finished) {
            let _ = h.fail(id, crate::exit::INPUT);
        }
    }
}
