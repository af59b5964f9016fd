//! What a run is, with no runtime: where it sends (a [`Target`]), what counts as success
//! ([`StatusSet`]), what may go on the wire ([`guard`]), how load varies over time ([`Curve`],
//! [`Load`]) and the units people write (`30s`, `200/s`, `1m:100/s,30s:0/s`, `64MiB`). The
//! engine, the plan reader, the observers and the reports all share these, and none of them
//! needs the engine to read or check a configuration.

pub mod alt_svc;
pub mod env;
pub mod grpc;
pub mod guard;
pub mod input;
pub mod metrics;
mod part;
pub mod private;
pub mod remote;
pub mod schedule;
pub mod secret;
mod status;
mod target;
pub mod units;

pub use part::{Counter, Part};
pub use remote::{WorkerReport, WorkerStatus};
pub use schedule::{Curve, Load, LoadModel};
pub use status::{RunCommand, RunStatus};
pub use target::{header_pairs, parse_header, Protocol, StatusSet, Target, TargetError, Wire};
pub use units::{
    parse_bytes, parse_duration, parse_rate, parse_size, parse_stages, Stages, UnitError,
};
