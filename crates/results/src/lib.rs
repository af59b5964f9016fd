//! What a run measured, as data: the versioned result file (`brink.result/v1`), a capacity
//! search's steps, findings and stop reason, and where a ramp broke. Deciding (`search`,
//! `runner`), storing (`history`), comparing (`compare`) and serving (`serve`) read and write
//! these types without depending on how they are drawn; `report` only renders them.
//!
//! The words a result stores (`diagnosis`, `stopped`, a finding's sentence) are made here, with
//! the number formats they use, so a result reads the same wherever it is shown.

mod broke;
pub mod events;
pub mod find;
pub mod fmt;
mod run;
mod time;

pub use broke::{BrokeJson, STARVED_WAIT_PERCENT};
pub use run::{
    summary_json, AnswerFailureJson, AsyncJson, CheckJson, CompletionJson, ErrorsByKind,
    ExtractFailureJson, GeneratorJson, HistBin, LoadInfo, RefusedJson, RequestResult, RunResult,
    ScenarioResult, ScheduleInfo, SecondRow, SetupFailureJson, Shortfall, SloResult, Span,
    StageJson, StreamJson, SummaryJson, TargetInfo, TraceJson, TracesJson, WebSocketJson,
    ZeroRttJson, SCHEMA,
};
pub use time::rfc3339_utc;
