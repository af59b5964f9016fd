//! Running what was asked: the scenarios of a suite in order
//! ([`run_jobs`]) and capacity searches whose levels the `search` crate decides
//! ([`search_job`]). Each run is followed second by second by one watch (progress, the judged
//! part after a warm-up, the SLO trackers), and everything that happens goes out as [`Event`]s
//! to [`Sinks`]: the terminal, the result file and, later, HTML, history and a live web view
//! are sinks. No command line and no printing here: the binary turns flags into [`Job`]s and
//! [`Search`] settings, picks the sinks, and maps results to exit codes. A coordinator of
//! worker processes is another [`Executor`] of the same jobs: the suite and the search hand it
//! every run and never know where the load was generated.

mod broke;
mod exec;
mod find;
pub mod hooks;
mod outcome;
mod sink;
mod step;
mod suite;
mod watch;

pub use exec::{step_spec, Executor, Local, Unit};
pub use find::{about, errors_note, search_job, Search};
pub use outcome::{load_info, own_cpu, second_row, target_info};
pub use sink::{Event, Sink, Sinks};
pub use suite::{pause, preflight, run_jobs, start_observing, Job, Observing};

use std::fmt;

/// Why something could not run, or a sink could not keep what it was given: one line.
#[derive(Clone, Debug, PartialEq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
