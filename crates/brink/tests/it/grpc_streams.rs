//! Streaming gRPC calls end to end: server streaming counts every message and times the
//! first; client streaming sends the messages asked for, each rendered afresh, paced; bidi
//! streaming does both. Flags that do not fit the method are refused before any load.

use crate::grpc::{greeter, name_of, REPLY};
use assert_cmd::Command;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::grpc::{serve_grpc, Answer, Call};

/// (path, request message names) of every call.
type Calls = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// A Greeter whose SayHelloStream answers five messages 20 ms apart, whose Chat echoes one
/// reply per request message, and whose SayHellos answers once.
fn streaming_server() -> (testkit::Server, Calls) {
    let calls: Calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    let handler = Arc::new(move |call: &Call| {
        let names = call.messages.iter().map(|m| name_of(m)).collect();
        c.lock().unwrap().push((call.path.to_string(), names));
        let mut a = Answer::ok(REPLY.to_vec());
        match call.path {
            "/helloworld.Greeter/SayHelloStream" => {
                a.more = vec![REPLY.to_vec(); 4];
                a.interval = Duration::from_millis(20);
            }
            "/helloworld.Greeter/Chat" => {
                a.more = vec![REPLY.to_vec(); call.messages.len().saturating_sub(1)];
            }
            _ => {}
        }
        a
    });
    let srv = serve_grpc(testkit::Options::default(), handler).expect("server starts");
    (srv, calls)
}

fn run(url: &str, method: &str, extra: &[&str]) -> (Option<i32>, Value, String, String) {
    let (proto, call) = (greeter(), format!("helloworld.Greeter/{method}"));
    let mut all = vec![
        "run",
        url,
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        &call,
    ];
    all.extend_from_slice(extra);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, r.stdout, r.stderr)
}

#[test]
fn server_streams_are_counted_and_their_first_message_timed() {
    let (srv, _) = streaming_server();
    let url = format!("grpc://{}", srv.addr);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let html_arg = html.to_str().unwrap();
    let (code, r, out, err) = run(
        &url,
        "SayHelloStream",
        &["-n", "10", "-c", "2", "--html", html_arg],
    );
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    let st = &s["grpc_stream"];
    assert_eq!(st["calls"], 10, "{s}");
    assert_eq!(st["messages_sent"], 10);
    assert_eq!(st["messages_received"], 50);
    assert_eq!(st["received_per_call"], 5.0);
    // The whole call lasts the four 20 ms pauses; the first message comes at once.
    let first = st["first_message_ms"]["p50"].as_f64().unwrap();
    let whole = s["latency_ms"]["p50"].as_f64().unwrap();
    assert!(whole >= 80.0, "{s}");
    assert!(first < 40.0 && first < whole, "first {first} whole {whole}");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(out.contains("10 sent, 50 received (5.0 per call"), "{out}");
    assert!(out.contains("first message p50"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Streams (time to the first message"),
        "the HTML shows them"
    );
}

#[test]
fn client_streams_send_fresh_messages_paced() {
    let (srv, calls) = streaming_server();
    let url = format!("grpc://{}", srv.addr);
    let (code, r, _, err) = run(
        &url,
        "SayHellos",
        &[
            "--data",
            r#"{"name":"c{{seq}}"}"#,
            "--stream-messages",
            "3",
            "--stream-interval",
            "30ms",
            "-n",
            "4",
            "-c",
            "1",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let st = &r["summary"]["grpc_stream"];
    assert_eq!(
        (st["calls"].as_u64(), st["messages_sent"].as_u64()),
        (Some(4), Some(12))
    );
    assert_eq!(st["messages_received"], 4);
    // Two 30 ms pauses in each call.
    assert!(
        r["summary"]["latency_ms"]["min"].as_f64().unwrap() >= 60.0,
        "{}",
        r["summary"]
    );
    let calls = calls.lock().unwrap();
    let names: Vec<Vec<String>> = calls.iter().map(|c| c.1.clone()).collect();
    let want: Vec<Vec<String>> = (0..4)
        .map(|i| (0..3).map(|j| format!("c{}", i * 3 + j)).collect())
        .collect();
    assert_eq!(
        names, want,
        "each message of a stream has its own {{{{seq}}}}"
    );
}

#[test]
fn bidi_streams_both_ways_from_the_command_line_and_a_plan() {
    let (srv, calls) = streaming_server();
    let url = format!("grpc://{}", srv.addr);
    let (code, r, _, err) = run(&url, "Chat", &["--stream-messages", "4", "-n", "5"]);
    assert_eq!(code, Some(0), "{err}");
    let st = &r["summary"]["grpc_stream"];
    assert_eq!(
        (
            st["messages_sent"].as_u64(),
            st["messages_received"].as_u64()
        ),
        (Some(20), Some(20))
    );

    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("chat.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {url}\nscenarios:\n  - name: chat\n    load: {{ connections: 1, requests: 3 }}\n    requests:\n      - grpc:\n          call: helloworld.Greeter/Chat\n          proto: {}\n          data: {{ name: p }}\n          stream: {{ messages: 2, interval: 5ms }}\n",
            greeter().display()
        ),
    )
    .unwrap();
    calls.lock().unwrap().clear();
    crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(["run", plan.to_str().unwrap(), "-q"])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c.1 == ["p", "p"]), "{calls:?}");
}

#[test]
fn stream_flags_that_do_not_fit_the_method_are_refused() {
    let (srv, calls) = streaming_server();
    let url = format!("grpc://{}", srv.addr);
    for (method, extra, says) in [
        (
            "SayHello",
            vec!["--stream-messages", "2"],
            "does not stream requests",
        ),
        (
            "SayHelloStream",
            vec!["--stream-interval", "1s"],
            "does not stream requests",
        ),
        (
            "Chat",
            vec!["--stream-messages", "0"],
            "at least one message",
        ),
        (
            "Chat",
            vec!["--stream-interval", "soon"],
            "--stream-interval",
        ),
    ] {
        let (code, _, _, err) = run(&url, method, &extra);
        assert_eq!(code, Some(2), "{method} {extra:?}: {err}");
        assert!(err.contains(says), "{method} {extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert!(calls.lock().unwrap().is_empty(), "nothing was sent");
}
