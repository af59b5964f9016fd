//! From what the user typed to what the engine runs. For now this is the units grammar shared by
//! the command line and (later) plan files: durations (`500ms`, `30s`, `1m30s`), rates (`5000`,
//! `5000/s`, `300/m`) and stages (`1m:100/s,30s:1000/s` or `30s:50,1m:50`).

mod units;

pub use units::{parse_duration, parse_rate, parse_stages, Stages, UnitError};
