//! The load engine: per-core workers (`worker`), the protocols (`proto`: HTTP/1.1 with its
//! fast path, HTTP/2, and where gRPC will go), connection set-up and TLS (`net`), and the
//! run/aggregation loop. Callers build a [`RunSpec`] and call [`run()`] with a per-second
//! [`OnSecond`]; nothing here prints. What a run *is* (targets, load curves, the wire rules,
//! units) lives in the `model` crate, so configuration can be read and checked without this
//! one. Public beyond that small API: [`workload`] and [`template`] (plans compile into them),
//! [`capture`] (its budget), [`h1`] (benchmarked on its own).

pub mod capture;
mod net;
mod proto;
mod rng;
mod run;
mod target;
pub mod template;
mod worker;
pub mod workload;

/// The HTTP/1.1 reader and framing, public for the benchmarks.
pub use proto::h1;

pub use model::{guard, Curve, Load, StatusSet, Target, TargetError};
pub use run::{check, run, OnSecond, RunError, RunOutput, RunSpec, Second, SecondView};
pub use target::RequestSpec;
pub use workload::{Request, Workload};
