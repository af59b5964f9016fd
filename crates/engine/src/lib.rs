//! The load engine: per-core workers (`worker`), the protocols (`proto`: HTTP/1.1 with its
//! fast path, HTTP/2 and gRPC, WebSocket, Server-Sent Events), connection set-up and TLS (`net`), and the
//! run/aggregation loop. Callers build a [`RunSpec`] and call [`run()`] with a per-second
//! [`OnSecond`]; nothing here prints. What a run *is* (targets, load curves, the wire rules,
//! units) lives in the `model` crate, so configuration can be read and checked without this
//! one, and what a run sends (requests, templates, extraction) in the `workload` crate, so a plan
//! compiles without this one. Public beyond that small API: [`h1`] and [`sse`] (benchmarked on
//! their own).

mod net;
mod once;
mod proto;
mod run;
mod target;
mod why;
mod worker;

/// The HTTP/1.1 reader and framing, public for the benchmarks.
pub use proto::h1;
/// The Server-Sent Events reader, public for the benchmarks.
pub use proto::sse;

pub use model::{guard, Curve, Load, Protocol, StatusSet, Target, TargetError};
pub use net::tls::{EarlyData, TlsOptions};
/// TLS set-up shared with what is not load: a distributed run's coordinator and workers.
pub mod tls {
    pub use crate::net::tls::{ca_only, client_config, client_identity, server_name, TlsError};
}
pub use net::conn::DEFAULT_GRPC_MAX_MESSAGE;
pub use once::{
    answers_http1_to_h2, completion_fetch, discover_h3, grpc_call, h3_answers, Answer, Asked,
};
pub use proto::events::{EventRule, PerRequest, MAX_EVENT};
pub use proto::sent_at::SentAt;
pub use run::{check, run, RunError, RunSpec};
pub use target::RequestSpec;
/// What a run sends (requests, templates, extraction), re-exported for callers of [`run()`].
pub use workload;
pub use workload::{Request, Workload};
