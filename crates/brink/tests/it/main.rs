//! One integration-test binary, organised by topic. Every test runs real servers from `testkit`
//! on 127.0.0.1 port 0; load is bounded by requests and time.

mod accuracy;
mod bounds;
mod cli;
mod compare;
mod engine_runs;
mod examples;
mod find;
mod hardening;
mod plans;
mod protocols;
mod reports;
mod results;
mod schema;
mod support;
