//! The load engine: per-core workers ([`worker`]), the HTTP/1.1 fast path ([`h1`]), HTTP/2,
//! TLS, and the run/aggregation loop. Callers build a [`RunSpec`] and call [`run()`] with a
//! per-second [`OnSecond`]; nothing here prints. What a run *is* (targets, load curves, the wire
//! rules, units) lives in the `model` crate, so configuration can be read and checked without
//! this one. Public beyond that small API: [`workload`] and [`template`] (plans compile into
//! them), [`capture`] (its budget), [`h1`] (benchmarked on its own).

pub mod capture;
mod conn;
pub mod h1;
mod h2;
mod rng;
mod run;
mod target;
pub mod template;
mod tls;
mod worker;
pub mod workload;

pub use model::{guard, Curve, Load, StatusSet, Target, TargetError};
pub use run::{check, run, OnSecond, RunError, RunOutput, RunSpec, Second, SecondView};
pub use target::RequestSpec;
pub use workload::{Request, Workload};
