//! WebSocket steps in plans: what they compile to, and each mistake at its value.

use super::*;
use workload::{Extractor, WsStep};

const WS: &str = "target: ws://127.0.0.1:8080/chat\nscenarios:\n  - name: a\n";

#[test]
fn websocket_steps_compile_to_messages_pings_and_subscriptions() {
    let plan = check(&format!(
        "{WS}    every: 250ms\n    headers: {{ Authorization: Bearer x }}\n    flow:\n      - {{ name: join, message: '{{\"id\":\"{{{{seq}}}}\"}}', match_id: $.id, extract: {{ room: $.room }} }}\n      - {{ name: say, message: 'in {{{{room}}}}', match_id: 'regex:id=(\\d+)', check: [ {{ body_contains: ok }} ] }}\n      - {{ ping: true }}\n"
    ))
    .unwrap();
    let s = &plan.scenarios[0];
    assert_eq!(s.settings.every, Some(Duration::from_millis(250)));
    let steps = &s.workload.requests;
    assert_eq!(steps[0].ws, WsStep::Message);
    assert!(matches!(steps[0].match_id, Some(Extractor::Json(_))));
    assert_eq!(s.workload.vars, vec!["room".to_string()]);
    assert!(matches!(steps[1].match_id, Some(Extractor::Regex(_))));
    assert!(!steps[1].body.is_static(), "the message is templated");
    assert_eq!(steps[1].checks.len(), 1);
    assert_eq!(
        (steps[2].ws, steps[2].name.as_str()),
        (WsStep::Ping, "ping")
    );
    // The upgrade carries the scenario's headers, and goes to the target's path.
    assert_eq!(steps[2].headers[0].0, "Authorization");
    assert_eq!(steps[2].path_text, "/chat");
    let sub = check(&format!(
        "{WS}    requests:\n      - {{ subscribe: true, message: 'sub', sent_at: $.ts }}\n"
    ))
    .unwrap();
    let step = &sub.scenarios[0].workload.requests[0];
    assert_eq!(step.ws, WsStep::Await);
    assert!(step.sent_at.is_some());
}

#[test]
fn websocket_step_mistakes_point_at_the_value() {
    let step = |s: &str| format!("{WS}    requests:\n      - {s}\n");
    expect_error(
        &step("{ message: hi, path: /x }"),
        "5:30",
        "'path' is HTTP's",
    );
    expect_error(
        &step("{ message: hi, headers: { X-A: b } }"),
        "5:40",
        "set them on the scenario",
    );
    expect_error(
        &step("{ name: n }"),
        "5:9",
        "a WebSocket step sends a message",
    );
    expect_error(&step("{ ping: true, message: hi }"), "5:9", "a ping step");
    expect_error(&step("{ ping: true, subscribe: true }"), "5:9", "not both");
    expect_error(
        &step("{ message: hi, sent_at: $.ts }"),
        "5:33",
        "goes with subscribe",
    );
    expect_error(
        &step("{ ping: true, match_id: $.id }"),
        "5:33",
        "goes with message",
    );
    expect_error(
        &step("{ message: hi, match_id: 'header: X' }"),
        "5:34",
        "has no headers",
    );
    expect_error(
        &step("{ message: hi, check: [ { status: 200 } ] }"),
        "5:33",
        "not a status or header",
    );
    expect_error(
        &format!("{WS}    load: {{ requests: 1 }}\n"),
        "3:5",
        "its steps send messages",
    );
    let http = format!("{HEAD}    requests:\n      - {{ path: /x, message: hi }}\n");
    expect_error(
        &http,
        "5:30",
        "'message' goes with a ws:// or wss:// target",
    );
}

#[test]
fn websocket_steps_that_could_never_work_are_refused() {
    let step = |s: &str| format!("{WS}    requests:\n      - {s}\n");
    expect_error(
        &step("{ ping: true, check: [ { body_contains: x } ] }"),
        "5:32",
        "nothing to check",
    );
    expect_error(
        &step("{ message: hi, extract: { t: 'header:X-T' } }"),
        "5:38",
        "no headers to extract from",
    );
    let flow = format!("{WS}    flow:\n      - {{ message: hi }}\n      - {{ subscribe: true }}\n");
    expect_error(&flow, "6:9", "its scenario's only step");
}
