//! The load engine: pure schedules ([`schedule`]), per-core workers ([`worker`]), the HTTP/1.1
//! fast path ([`h1`]), HTTP/2 ([`h2`]), TLS ([`tls`]) and the run/aggregation loop ([`run`]).
//! Callers build a [`RunSpec`] and call [`run()`]; nothing here prints.

pub mod capture;
pub mod conn;
pub mod guard;
pub mod h1;
pub mod h2;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod target;
pub mod template;
pub mod tls;
pub mod worker;
pub mod workload;

pub use run::{check, run, Load, Observer, RunError, RunOutput, RunSpec, Second, SecondView};
pub use schedule::Curve;
pub use target::{RequestSpec, StatusSet, Target, TargetError};
pub use workload::{Step, Workload};
