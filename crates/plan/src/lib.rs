//! From what the user typed to what the engine runs: the units grammar shared by flags and plans
//! (durations, rates, stages), the load rules ([`load`]), and plan files: YAML with realistic
//! data, request mixes and flows, and SLOs ([`file`] as written, [`compile`] checked and
//! runnable, errors at `file:line:column`), whose steps may be gRPC calls ([`grpc_step`]) or
//! token streams of a model server ([`llm_step`]) and check what they are answered
//! ([`check_step`]).

mod check_step;
pub mod compile;
mod csv;
pub mod error;
pub mod file;
mod grpc_step;
mod http_step;
mod indent;
mod jsonl;
mod llm_step;
pub mod load;
mod unknown;
mod watch;
mod ws_step;

pub use compile::{
    load_file, load_file_with, parse, parse_with, HookSpec, Hooks, Plan, Reflect, Scenario,
    Settings,
};
pub use error::PlanError;
pub use load::{LoadInput, DEFAULT_CONNECTIONS, DEFAULT_DURATION};
pub use model::units::{parse_duration, parse_rate, parse_size, parse_stages, Stages, UnitError};
pub use watch::{DEFAULT_EVERY, DEFAULT_WITHIN};
