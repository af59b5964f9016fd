//! Everything a user reads of a result: the terminal summary, the find table, the HTML report
//! and CSV. A result (the `results` crate) is built once from a run and every output is
//! rendered from it, so the terminal and the JSON can never disagree. It depends on no engine:
//! a history or a web page can render results without pulling in the load generator.

pub mod csv;
pub mod find;
pub mod html;
mod sla;
mod terminal;

pub use sla::suite_table;
pub use terminal::{describe_load, failed_answers, render};

// The result types and number formats, under the short paths the renderers use.
pub(crate) use results::fmt;
pub(crate) use results::{
    AsyncJson, CheckJson, CompletionJson, LoadInfo, RunResult, ScenarioResult, SecondRow,
    SloResult, SummaryJson, TraceJson, TracesJson, WebSocketJson,
};
