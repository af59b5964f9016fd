//! Everything a user reads: the versioned result file (`brink.result/v1`) and the terminal
//! summary. A result is built once from a run and every output is rendered from it, so the
//! terminal and the JSON can never disagree. It depends on no engine: a history or a web page
//! can read and render results without pulling in the load generator.

mod broke;
pub mod csv;
pub mod find;
mod fmt;
pub mod html;
mod result;
mod sla;
mod terminal;
mod time;

pub use broke::{BrokeJson, STARVED_WAIT_PERCENT};
pub use fmt::{fmt_count, fmt_ms, fmt_rate};
pub use result::{
    summary_json, AsyncJson, CheckJson, CompletionJson, ErrorsByKind, ExtractFailureJson,
    GeneratorJson, HistBin, LoadInfo, RefusedJson, RequestResult, RunResult, ScenarioResult,
    ScheduleInfo, SecondRow, Shortfall, SloResult, Span, StageJson, SummaryJson, TargetInfo,
    TraceJson, TracesJson, SCHEMA,
};
pub use sla::suite_table;
pub use terminal::{describe_load, failed_answers, render};
pub use time::rfc3339_utc;
