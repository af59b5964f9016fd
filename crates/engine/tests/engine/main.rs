//! The engine's behaviour, run in-process against real servers from `testkit` on 127.0.0.1
//! port 0: exact request counts under faults, the open model's rate, stages, protocols (h1,
//! h2c, TLS, h2), a run split into parts, and latency from the intended start (against wrk on
//! the same server). Load is bounded by requests and time.

mod accuracy;
mod common;
mod protocols;
mod runs;
mod split;
