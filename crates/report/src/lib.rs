//! Everything a user reads: the versioned result file (`brink.result/v1`), the terminal
//! summary and the live progress line. A result is built once from a run and every output is
//! rendered from it, so the terminal and the JSON can never disagree.

pub mod find;
mod progress;
mod result;
mod sla;
mod terminal;
mod time;

pub use progress::Progress;
pub use result::{
    ErrorsByKind, HistBin, LoadInfo, RequestResult, RunResult, ScenarioResult, ScheduleInfo,
    SecondRow, SloResult, SummaryJson, TargetInfo, SCHEMA,
};
pub use sla::suite_table;
pub use terminal::{fmt_count, fmt_ms, fmt_rate, render};
pub use time::rfc3339_utc;
