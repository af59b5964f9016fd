//! brink against a real tonic server with tonic-reflection: reflection stands in for the
//! `.proto`, every call ends in one code, server streams are counted, deadlines are honoured
//! on both sides. What testkit's own gRPC server shows, checked against the canonical Rust
//! implementation.

use crate::grpc::greeter;
use assert_cmd::Command;
use serde_json::Value;
use std::sync::atomic::Ordering;
use testkit::tonic_srv::serve_tonic;

fn tonic_server() -> testkit::tonic_srv::TonicServer {
    let set = grpc::compile(&[greeter()], &[]).unwrap().encode_to_vec();
    serve_tonic(&set).expect("tonic server starts")
}

/// `brink run` without --proto (reflection), returning exit code, result and stderr.
fn run(url: &str, call: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let call = format!("helloworld.Greeter/{call}");
    let mut all = vec!["run", url, "--call", call.as_str(), "-q"];
    all.extend_from_slice(extra);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, r.stderr)
}

#[test]
fn calls_codes_and_reflection_against_tonic() {
    let srv = tonic_server();
    let url = format!("grpc://{}", srv.addr);
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("rows.ndjson");
    std::fs::write(
        &rows,
        "{\"name\":\"a{{seq}}\"}\n{\"name\":\"unavailable\"}\n",
    )
    .unwrap();
    let (code, r, err) = run(
        &url,
        "SayHello",
        &["--data-file", rows.to_str().unwrap(), "-n", "50", "-c", "5"],
    );
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    assert_eq!(
        s["grpc_status"],
        serde_json::json!({"OK": 25, "UNAVAILABLE": 25}),
        "{s}"
    );
    assert_eq!(s["errors"], 25);
    assert_eq!(
        srv.greeter.calls.load(Ordering::Relaxed),
        50,
        "reflection is not load"
    );

    crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(["run", &url, "--list"])
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "helloworld.Greeter/SayHello  (helloworld.HelloRequest -> helloworld.HelloReply, unary)",
        ));
}

#[test]
fn server_streams_and_deadlines_against_tonic() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let srv = tonic_server();
    let url = format!("grpc://{}", srv.addr);
    let (code, r, err) = run(
        &url,
        "SayHelloStream",
        &["--data", r#"{"name":"s","times":3}"#, "-n", "20"],
    );
    assert_eq!(code, Some(0), "{err}");
    let st = &r["summary"]["grpc_stream"];
    assert_eq!(
        (st["calls"].as_u64(), st["messages_received"].as_u64()),
        (Some(20), Some(60)),
        "{st}"
    );

    // 300 ms of work against a 100 ms deadline: tonic cancels at the deadline brink sent, or
    // brink's own timer ends the call first; none succeeds and each counts once.
    let (_, r, _) = run(
        &url,
        "SayHello",
        &[
            "--data",
            r#"{"name":"slow"}"#,
            "--timeout",
            "100ms",
            "-n",
            "6",
            "-c",
            "3",
        ],
    );
    let s = &r["summary"];
    assert_eq!(s["ok"], 0, "{s}");
    // Whoever noticed the deadline first (tonic or brink), the call is DEADLINE_EXCEEDED.
    assert_eq!(
        s["grpc_status"],
        serde_json::json!({"DEADLINE_EXCEEDED": 6}),
        "{s}"
    );
    assert_eq!(s["errors_by_kind"]["timeout"], 0, "{s}");
    assert!(
        s["latency_ms"]["max"].as_f64().unwrap_or(0.0) < 290.0,
        "the deadline held: {s}"
    );
}
