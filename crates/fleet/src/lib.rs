//! Distributed runs: one brink run spread over worker processes on this machine, other hosts
//! or Kubernetes pods, with one exactly merged result. This crate holds what does not depend
//! on how the bytes travel: the messages a coordinator and its workers exchange ([`proto`]),
//! read one line at a time with a bound on each ([`lines`]); the clock offset of each worker,
//! estimated from pings so every worker starts at the same instant ([`clock`]); and the trust
//! between them: a per-run token compared in constant time, and a digest of the inputs so a
//! worker that compiled something else is refused ([`trust`]). The load itself is split by
//! `model::Part` and merged by `merge::Merger`; the seconds travel as `stats::WireBucket`.

pub mod clock;
pub mod lines;
pub mod proto;
pub mod trust;
