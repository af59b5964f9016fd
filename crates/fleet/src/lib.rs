//! Distributed runs: one brink run spread over worker processes on this machine, other hosts
//! or Kubernetes pods, with one exactly merged result. The messages a coordinator and its
//! workers exchange ([`proto`]) are read one line at a time with a bound on each ([`lines`]);
//! each worker's clock offset is estimated from pings so every worker starts at the same
//! instant ([`clock`]); the two trust each other through a per-run token compared in constant
//! time and a digest of what each compiled ([`trust`]). The worker's server ([`worker`]) and
//! the coordinator ([`coordinator`], a `runner::Executor`, so the suite and the search run on
//! it unchanged) speak them over one HTTP/2 stream per worker. The load is split by
//! `model::Part` and merged by `merge::Merger`; the seconds travel as `stats::WireBucket`.

pub mod clock;
pub mod coordinator;
mod dial;
mod follow;
pub mod journal;
pub mod lines;
pub mod proto;
pub mod tls;
pub mod trust;
pub mod worker;

use bytes::Bytes;

/// A message as one line of JSON.
pub(crate) fn line<T: serde::Serialize>(m: &T) -> Bytes {
    let mut v = serde_json::to_vec(m).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

/// This machine's clock: ns since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The digest of what an order compiled to: brink's version, the order, and the whole spec
/// as compiled (target, load, every request, data rows, settings), before it is split.
pub fn spec_digest(version: &str, order: &str, spec: &engine::RunSpec) -> String {
    let compiled = format!("{spec:?}").into_bytes();
    trust::digest(
        version,
        &[order.to_string()],
        &[("spec".to_string(), compiled)],
    )
}
