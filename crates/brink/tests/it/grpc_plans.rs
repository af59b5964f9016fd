//! gRPC calls in plans: steps of mixes and flows, messages from data sets and earlier
//! responses (extracted by JSONPath from the decoded reply), data files, per-scenario success
//! codes, definitions from `.proto` files or the server's reflection, and plan errors at
//! `file:line:column`.

use crate::grpc::{greeter, greeter_server, name_of, reflecting_server};
use serde_json::Value;
use std::time::Duration;

/// Writes `plan` (with `{PROTO}` and `{URL}` filled in) and `users.csv` into a fresh
/// directory and runs it; returns the exit code, the result and stderr.
fn run_plan(plan: &str, url: &str) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), "name\nada\ngrace\n").unwrap();
    std::fs::write(
        dir.path().join("msgs.ndjson"),
        "{\"name\":\"m1\"}\n{\"name\":\"m2\"}\n",
    )
    .unwrap();
    let text = plan
        .replace("{PROTO}", greeter().to_str().unwrap())
        .replace("{URL}", url);
    let file = dir.path().join("plan.yaml");
    std::fs::write(&file, text).unwrap();
    let r = crate::support::brink_json(&["run", file.to_str().unwrap(), "-q"]);
    (r.code, r.result, r.stderr)
}

#[test]
fn a_flow_of_calls_feeds_replies_into_the_next_message() {
    let (srv, seen) = greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    let plan = r#"
target: {URL}
data:
  users: { csv: users.csv }
scenarios:
  - name: greet
    load: { connections: 1, requests: 8 }
    ok_codes: OK,NOT_FOUND,UNAVAILABLE
    flow:
      - name: hello
        grpc:
          call: helloworld.Greeter/SayHello
          proto: {PROTO}
          data: { name: "{{data.users.name}}", times: 2 }
          metadata: { x-user: "{{data.users.name}}" }
        extract: { reply: "$.message" }
      - name: again
        grpc:
          call: helloworld.Greeter/SayHello
          proto: [{PROTO}]
          data: '{"name": "{{reply}}-again"}'
"#;
    let (code, r, err) = run_plan(plan, &url);
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    assert_eq!(s["requests"], 8, "{s}");
    assert_eq!(s["ok"], 8, "ok_codes from the plan: {s}");
    let names: Vec<&str> = r["scenarios"][0]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hello", "again"]);
    let seen = seen.lock().unwrap();
    let sent: Vec<String> = seen.iter().map(|c| name_of(&c.1)).collect();
    // Each iteration: the next user from the CSV, then the reply ("hi") extracted from the
    // decoded response. Calls 3 and 7 (UNAVAILABLE, NOT_FOUND) fall on "again" steps and
    // succeed by the plan's ok_codes.
    assert_eq!(
        sent,
        ["ada", "hi-again", "grace", "hi-again", "ada", "hi-again", "grace", "hi-again"]
    );
    let first = &seen[0];
    assert_eq!(first.1, [0x0a, 3, b'a', b'd', b'a', 0x10, 2]);
    assert!(
        first.2.contains(&("x-user".into(), "ada".into())),
        "{:?}",
        first.2
    );
    assert!(
        first.2.contains(&("grpc-timeout".into(), "30000m".into())),
        "the engine adds the deadline: {:?}",
        first.2
    );
}

#[test]
fn a_mix_of_calls_with_a_data_file_and_reflection() {
    let (srv, paths) = reflecting_server(Some(testkit::reflection::Versions::Both));
    let url = format!("grpc://{}", srv.addr);
    let plan = r#"
target: {URL}
scenarios:
  - name: mixed
    load: { connections: 1, requests: 4 }
    requests:
      - name: from-file
        grpc: { call: helloworld.Greeter/SayHello, data_file: msgs.ndjson }
"#;
    let (code, r, err) = run_plan(plan, &url);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["grpc_status"], serde_json::json!({"OK": 4}));
    let calls = paths.lock().unwrap();
    assert_eq!(calls.iter().filter(|p| p.ends_with("/SayHello")).count(), 4);
}

#[test]
fn grpc_plan_errors_point_at_the_value() {
    let (srv, seen) = greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    let step = |grpc: &str| {
        format!("target: {{URL}}\nscenarios:\n  - name: s\n    requests:\n      - grpc: {grpc}\n")
    };
    for (plan, says) in [
        (
            step("{ call: helloworld.Greeter/SayHi, proto: {PROTO} }"),
            "plan.yaml:5:23: helloworld.Greeter/SayHi: helloworld.Greeter has no method SayHi",
        ),
        (
            step("{ call: helloworld.Greeter/SayHello, proto: nope.proto }"),
            "plan.yaml:5:59: proto ",
        ),
        (
            step("{ call: helloworld.Greeter/SayHello, proto: {PROTO}, data: { times: many } }"),
            "the data does not match helloworld.HelloRequest",
        ),
        (
            step("{ call: helloworld.Greeter/SayHello, proto: {PROTO}, data: { name: \"{{nope}}\" } }"),
            "nope",
        ),
        (
            "target: {URL}\nscenarios:\n  - name: s\n    requests:\n      - { path: /x }\n".to_string(),
            "plan.yaml:5:9: a step of a grpc:// scenario is a grpc: call",
        ),
        (
            "target: {URL}\nscenarios:\n  - name: s\n    ok_codes: OK,FINE\n    requests:\n      - grpc: { call: helloworld.Greeter/SayHello, proto: {PROTO} }\n".to_string(),
            "ok_codes: 'FINE' is not a gRPC status code",
        ),
    ] {
        let (code, _, err) = run_plan(&plan, &url);
        assert_eq!(code, Some(2), "{plan}: {err}");
        assert!(err.contains(says), "{plan}\n{err}");
    }
    // A grpc: step against an HTTP target.
    let (code, _, err) = run_plan(
        &step("{ call: helloworld.Greeter/SayHello, proto: {PROTO} }"),
        "http://127.0.0.1:1",
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("needs a grpc:// or grpcs:// target"), "{err}");
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
}

#[test]
fn a_failed_call_in_a_flow_counts_its_code_not_an_extraction() {
    // Calls 3 and 7 answer UNAVAILABLE and NOT_FOUND without a message: they count by their
    // codes, and the step's extraction is not attempted.
    let (srv, _) = greeter_server(false, Duration::ZERO);
    let plan = r#"
target: {URL}
scenarios:
  - name: s
    load: { connections: 1, requests: 10 }
    flow:
      - grpc: { call: helloworld.Greeter/SayHello, proto: {PROTO} }
        extract: { reply: "$.message" }
"#;
    let (code, r, err) = run_plan(plan, &format!("grpc://{}", srv.addr));
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    assert_eq!(
        s["grpc_status"],
        serde_json::json!({"OK": 8, "UNAVAILABLE": 1, "NOT_FOUND": 1}),
        "{s}"
    );
    assert_eq!(s["errors_by_kind"]["extract"], 0, "{s}");
    assert_eq!(s["ok"], 8);
}
