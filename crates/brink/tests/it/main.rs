//! One integration-test binary, organised by topic. Every test runs real servers from `testkit`
//! on 127.0.0.1 port 0; load is bounded by requests and time.

/// Every brink these tests start records its runs in a history file of this test process
/// (under cargo's target directory), never in the user's own history.
#[ctor::ctor]
fn isolate_history() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("history-{}.db", std::process::id()));
    std::env::set_var("BRINK_HISTORY", path);
}

mod bounds;
mod channels;
mod checks;
mod cli;
mod compare;
mod completion;
mod distributed;
mod examples;
mod find;
mod flags;
mod generator;
mod grpc;
mod grpc_plans;
mod grpc_streams;
mod grpc_tonic;
mod hardening;
mod history;
mod hostile;
mod hostile_h2;
mod hostile_ws;
mod http3;
mod http3_auto;
mod http3_early;
mod http3_hostile;
mod idle_sockets;
mod k8s;
mod live_metrics;
mod llm;
mod local_users;
mod ordinary;
mod plans;
mod prom;
mod ramps;
mod remote_write;
mod reports;
mod results;
mod schema;
mod serve;
mod sse_starlette;
mod streams;
mod support;
mod traces;
mod verdicts;
mod websocket;
mod websocket_find;
mod websocket_flows;
mod websocket_loads;
mod worker_inputs;
