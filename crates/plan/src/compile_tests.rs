//! Plan checks: what a valid plan compiles to, and one test per kind of error, each pointing
//! at the right line and column.

use super::*;

const PLAN: &str = r#"target: http://127.0.0.1:8080/api
defaults: { timeout: 30s, headers: { Content-Type: application/json } }
data:
  users: { csv: users.csv }
scenarios:
  - name: register
    load: { connections: 50, requests: 300 }
    requests:
      - name: register
        method: post
        path: /user/auth/register
        body: '{"email":"user{{seq}}-{{uuid}}@example.test","password":"{{rand_str 16}}"}'
    slo: [ "errors < 1%", "p95 < 20s" ]
    pause: 1s
  - name: browse-and-buy
    load: { rate: 200/s, duration: 2m }
    flow:
      - { name: login, method: POST, path: /login, body: '{"user":"{{data.users.email}}"}',
          extract: { token: "$.access_token" } }
      - { name: list, path: "/items?page={{rand_int 1 50}}", headers: { Authorization: "Bearer {{token}}" }, weight: 3 }
    slo: [ "p99 < 200ms", "list.p95 < 100ms", "rps >= 190", "errors < 0.1% over 10s abort" ]
"#;

fn dir() -> tempdir::Dir {
    tempdir::Dir::with(
        "users.csv",
        "email,password\nann@x.test,pw1\nbob@x.test,pw2\n",
    )
}

/// A scratch directory removed on drop (no extra dependency for two files).
mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn with(name: &str, content: &str) -> Dir {
            use std::sync::atomic::{AtomicU64, Ordering};
            static N: AtomicU64 = AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "brink-plan-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join(name), content).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn check(source: &str) -> Result<Plan, PlanError> {
    let d = dir();
    parse("p.yaml", source, &d.0, 1, &|k| match k {
        "TOKEN" => Some("t0k".to_string()),
        "EVIL" => Some("x\nX-Injected: yes".to_string()),
        _ => None,
    })
}

#[test]
fn the_issue_example_compiles() {
    let plan = check(PLAN).unwrap();
    assert_eq!(plan.scenarios.len(), 2);
    let reg = &plan.scenarios[0];
    assert_eq!(reg.name, "register");
    assert_eq!(reg.load.connections.as_deref(), Some("50"));
    assert_eq!(reg.load.requests.as_deref(), Some("300"));
    assert_eq!(reg.pause, Duration::from_secs(1));
    assert_eq!(reg.settings.timeout, Some(Duration::from_secs(30)));
    assert_eq!(reg.slos.len(), 2);
    let step = &reg.workload.requests[0];
    assert_eq!(
        (step.method.as_str(), step.name.as_str()),
        ("POST", "register")
    );
    assert!(!step.is_static());
    let flow = &plan.scenarios[1];
    assert!(flow.workload.flow);
    assert_eq!(flow.workload.vars, vec!["token".to_string()]);
    assert_eq!(flow.workload.requests[1].weight, 3);
    assert_eq!(flow.slos[1].request.as_deref(), Some("list"));
    assert_eq!(flow.slos[3].window, Some(10));
    assert!(flow.slos[3].abort);
    // The target's path prefixes every request path.
    let mut vu = workload::Vu::new(&reg.workload, 0);
    vu.next(&reg.workload);
    vu.render_h1(&reg.workload, "h", true).unwrap();
    let text = String::from_utf8(vu.buf.clone()).unwrap();
    assert!(
        text.starts_with("POST /api/user/auth/register HTTP/1.1\r\n"),
        "{text}"
    );
    assert!(
        text.contains("Content-Type: application/json\r\n"),
        "{text}"
    );
    assert!(text.contains("\"email\":\"user0-"), "{text}");
}

/// (plan text, expected "line:column", expected message fragment)
fn expect_error(source: &str, at: &str, want: &str) {
    let e = check(source).unwrap_err();
    let pos = e
        .pos
        .map(|p| format!("{}:{}", p.line, p.column))
        .unwrap_or_default();
    let shown = e.to_string();
    assert!(shown.contains(want), "wanted '{want}' in:\n{shown}");
    assert_eq!(pos, at, "{shown}");
    assert!(shown.starts_with(&format!("p.yaml:{at}: ")), "{shown}");
}

const HEAD: &str = "target: http://127.0.0.1:8080\nscenarios:\n  - name: a\n";

#[test]
fn syntax_errors() {
    expect_error("target: [unclosed\n", "1:9", "");
}

#[test]
fn unknown_keys_suggest_the_right_one() {
    expect_error(
        &format!("{HEAD}    load: {{ durration: 1m }}\n"),
        "4:13",
        "unknown key 'durration' (did you mean 'duration'?)",
    );
    expect_error(
        &format!("{HEAD}    slos: []\n"),
        "4:5",
        "did you mean 'slo'?",
    );
}

#[test]
fn every_unknown_key_is_named_at_once() {
    // Four mistakes a k6 or wrk user makes in a first plan, in one round, each at its place;
    // and the rest of the plan is still checked (the bad rate).
    let plan = "target: http://127.0.0.1:8080\nscenarios:\n  - name: a\n    load: { duraton: 10s, conections: 5, rate: fast }\n    request:\n      - { path: / }\n    thresholds: [ \"p99 < 1s\" ]\n";
    let e = check(plan).expect_err("four unknown keys");
    let all: Vec<(u64, u64, String)> = std::iter::once(&e)
        .chain(&e.others)
        .map(|x| {
            let p = x.pos.expect("a position");
            (p.line, p.column, x.message.clone())
        })
        .collect();
    let find = |key: &str| {
        all.iter()
            .find(|(_, _, m)| m.starts_with(&format!("unknown key '{key}'")))
            .unwrap_or_else(|| panic!("no error for '{key}' in {all:?}"))
    };
    assert_eq!((find("duraton").0, find("duraton").1), (4, 13));
    assert!(find("duraton").2.contains("did you mean 'duration'?"));
    assert_eq!((find("conections").0, find("conections").1), (4, 27));
    assert!(find("conections").2.contains("did you mean 'connections'?"));
    assert_eq!(find("request").0, 5);
    assert!(find("request").2.contains("did you mean 'requests'?"));
    assert_eq!(find("thresholds").0, 7);
    assert!(
        find("thresholds").2.contains("brink calls it 'slo'"),
        "{all:?}"
    );
    assert!(
        all.iter().any(|(l, _, m)| *l == 4 && m.contains("rate")),
        "the rest is checked too: {all:?}"
    );
}

#[test]
fn bad_values_point_at_the_value() {
    expect_error(
        &format!("{HEAD}    load: {{ duration: 10 parsecs }}\n"),
        "4:23",
        "duration",
    );
    expect_error(
        &format!("{HEAD}    load: {{ rate: fast }}\n"),
        "4:19",
        "rate",
    );
    expect_error(
        &format!("{HEAD}    load: {{ connections: 0 }}\n"),
        "4:26",
        "connections must be at least 1",
    );
    expect_error(
        &format!("{HEAD}    load: {{ rate: 5/s, stages: \"1s:5/s\" }}\n"),
        "4:11",
        "rate and stages cannot be combined",
    );
    expect_error(&format!("{HEAD}    pause: soon\n"), "4:12", "pause");
}

#[test]
fn bad_templates_point_into_the_string() {
    // Column of the '{{' inside the quoted value.
    expect_error(
        &format!("{HEAD}    requests:\n      - path: \"/u/{{{{sqe}}}}\"\n"),
        "5:19",
        "unknown template name 'sqe' (did you mean 'seq'?)",
    );
    expect_error(
        &format!("{HEAD}    requests:\n      - body: x{{{{rand_int 9 1}}}}\n"),
        "5:16",
        "MIN 9 is greater than MAX 1",
    );
    expect_error(
        &format!("{HEAD}    requests:\n      - headers: {{ A: \"{{{{env NOPE}}}}\" }}\n"),
        "5:24",
        "'NOPE' is not set",
    );
    let data = "target: http://127.0.0.1:8080\ndata:\n  users: { csv: users.csv }\nscenarios:\n  - name: a\n";
    expect_error(
        &format!("{data}    requests:\n      - body: \"{{{{data.usr.email}}}}\"\n"),
        "7:16",
        "did you mean 'users'?",
    );
    expect_error(
        &format!("{data}    requests:\n      - body: \"{{{{data.users.mail}}}}\"\n"),
        "7:16",
        "no column 'mail' (columns: email, password)",
    );
}

#[test]
fn bad_extractions_and_slos() {
    expect_error(
        &format!("{HEAD}    flow:\n      - extract: {{ t: \"$.[\" }}\n"),
        "5:23",
        "invalid JSONPath",
    );
    expect_error(
        &format!("{HEAD}    flow:\n      - extract: {{ t: \"regex:(\" }}\n"),
        "5:23",
        "invalid regex",
    );
    expect_error(
        &format!("{HEAD}    slo: [ \"p95 < soon\" ]\n"),
        "4:12",
        "'soon' is not a duration",
    );
    expect_error(
        &format!("{HEAD}    slo: [ \"p142 < 1s\" ]\n"),
        "4:12",
        "unknown metric 'p142'",
    );
    expect_error(
        &format!("{HEAD}    requests: [ {{ name: list }} ]\n    slo: [ \"lst.p95 < 1s\" ]\n"),
        "5:12",
        "does not have (did you mean 'list'?)",
    );
}

#[test]
fn structural_errors() {
    expect_error("scenarios:\n  - name: a\n", "2:5", "has no target");
    expect_error(
        &format!("{HEAD}  - name: a\n"),
        "4:11",
        "duplicate scenario name 'a'",
    );
    expect_error(
        &format!("{HEAD}    requests: [ {{ path: /a }} ]\n    flow: [ {{ path: /b }} ]\n"),
        "5:11",
        "not both",
    );
    expect_error(
        &format!("{HEAD}    requests: [ {{ path: nope }} ]\n"),
        "4:25",
        "must start with '/'",
    );
    expect_error("target: http://127.0.0.1:8080\ndata:\n  u: { csv: missing.csv }\nscenarios:\n  - name: a\n", "3:13", "cannot read");
    expect_error(
        "target: http://127.0.0.1:99999\nscenarios:\n  - name: a\n",
        "1:9",
        "out of range",
    );
}

/// Literal values that would break the request line or add a header are refused at load time,
/// pointing at the value: nothing of such a plan is ever sent.
#[test]
fn literal_injection_is_refused_with_its_place() {
    let req = "    requests:\n      - ";
    expect_error(
        &format!("{HEAD}{req}{{ path: /a, headers: {{ X-A: \"v\\r\\nX-Injected: yes\" }} }}\n"),
        "5:37",
        "header X-A: carriage return (CR) in a header value",
    );
    expect_error(
        &format!("{HEAD}{req}{{ path: \"/a b\" }}\n"),
        "5:17",
        "space in the path",
    );
    expect_error(
        &format!("{HEAD}{req}{{ path: \"/a\\r\\nHost: evil\" }}\n"),
        "5:17",
        "control byte in the path",
    );
    expect_error(
        &format!("{HEAD}{req}{{ path: /a, headers: {{ \"X A\": v }} }}\n"),
        "5:39",
        "invalid header name 'X A'",
    );
    expect_error(
        &format!("{HEAD}{req}{{ path: /a, headers: {{ X-A: \"{{{{env EVIL}}}}\" }} }}\n"),
        "5:37",
        "line feed (LF) in a header value",
    );
}

#[test]
fn a_plan_lists_the_files_it_names() {
    let d = dir();
    std::fs::write(d.0.join("body.json"), r#"{"a": 1}"#).unwrap();
    let source = PLAN.replace(
        r#"body: '{"email":"user{{seq}}-{{uuid}}@example.test","password":"{{rand_str 16}}"}'"#,
        "body_file: body.json",
    );
    let plan = parse("plan.yaml", &source, &d.0, 1, &|_| None).expect("plan");
    assert_eq!(
        plan.files,
        vec!["users.csv".to_string(), "body.json".to_string()]
    );
}

const CHECKED: &str = r#"target: http://127.0.0.1:8080
scenarios:
  - name: shop
    flow:
      - name: login
        path: /login
        check:
          - status: [200, 201]
          - { name: has token, json: $.token }
      - name: list
        path: /items
        check:
          - status: 200
          - { json: $.state, equals: ok }
          - { header: content-type, contains: json, count_only: true }
          - { body_matches: 'error', not: true }
          - { size: "< 64KB" }
    slo: [ "checks > 99%", "check.has token > 99.9% over 5s", "list.checks >= 95%" ]
"#;

#[test]
fn checks_compile_named_and_numbered_across_the_scenario() {
    let plan = check(CHECKED).expect("compiles");
    let w = &plan.scenarios[0].workload;
    let names: Vec<(&str, usize, bool)> = w
        .requests
        .iter()
        .flat_map(|r| r.checks.iter())
        .map(|c| (c.name.as_str(), c.slot, c.count_only))
        .collect();
    assert_eq!(
        names,
        [
            ("status 200,201", 0, false),
            ("has token", 1, false),
            ("status 200", 2, false),
            ("$.state == \"ok\"", 3, false),
            ("header content-type contains \"json\"", 4, true),
            ("not body matches /error/", 5, false),
            ("size < 64KB", 6, false),
        ]
    );
    assert!(
        w.requests[0].keeps_response(),
        "a JSON check keeps the body"
    );
    let slos = &plan.scenarios[0].slos;
    assert_eq!(slos[0].metric, stats::slo::Metric::Check(None));
    assert_eq!(slos[1].metric, stats::slo::Metric::Check(Some(1)));
    assert_eq!(slos[1].text, "check.has token > 99.9% over 5s");
    assert_eq!(slos[2].request.as_deref(), Some("list"));
}

#[test]
fn a_status_only_check_keeps_no_body_and_same_default_names_get_their_request() {
    let src = format!(
        "{HEAD}    flow:\n      - {{ name: a, check: [ {{ status: 200 }} ] }}\n      - {{ name: b, check: [ {{ status: 200 }} ] }}\n"
    );
    let plan = check(&src).expect("compiles");
    let w = &plan.scenarios[0].workload;
    assert!(!w.requests[0].keeps_response());
    assert_eq!(w.requests[0].checks[0].name, "a: status 200");
    assert_eq!(w.requests[1].checks[0].name, "b: status 200");
}

#[test]
fn check_mistakes_point_at_the_value() {
    let step = |check: &str| format!("{HEAD}    requests:\n      - check: [ {check} ]\n");
    expect_error(&step("{ json: '$.[' }"), "5:26", "invalid JSONPath");
    expect_error(
        &step("{ body_matches: '(' }"),
        "5:34",
        "invalid regex: unclosed group",
    );
    expect_error(&step("{ status: 700 }"), "5:28", "invalid status '700'");
    expect_error(&step("{ size: '< lots' }"), "5:26", "size");
    expect_error(
        &step("{ json: $.a, header: x }"),
        "5:18",
        "a check tests exactly one of: status, body_contains",
    );
    expect_error(
        &step("{ status: 200, contains: ok }"),
        "5:43",
        "'contains' goes with 'header' (on the body: 'body_contains')",
    );
    expect_error(
        &step("{ bodycontains: ok }"),
        "5:18",
        "did you mean 'body_contains'",
    );
    let twice = format!(
        "{HEAD}    requests:\n      - check: [ {{ name: x, status: 200 }}, {{ name: x, json: $.a }} ]\n"
    );
    expect_error(&twice, "5:52", "duplicate check name 'x'");
    expect_error(
        &format!("{HEAD}    requests:\n      - check: [ {{ name: x, status: 200 }} ]\n    slo: [ 'check.y > 99%' ]\n"),
        "6:12",
        "no check named 'y' (the checks: x)",
    );
    expect_error(
        &format!("{HEAD}    slo: [ 'checks > 99%' ]\n"),
        "4:12",
        "no response check is written",
    );
}

#[test]
fn every_check_mistake_at_once_and_no_follow_on_errors() {
    let src = format!(
        "{HEAD}    requests:\n      - name: r1\n        check:\n          - {{ body_matches: '(' }}\n          - {{ status: 300-200 }}\n          - {{ body_contains: '' }}\n          - {{ name: fine, status: 200 }}\n    slo: [ 'check.fine > 99%', 'r1.checks > 90%', 'checks > 1%' ]\n"
    );
    let e = check(&src).expect_err("three mistakes");
    let all: Vec<String> = std::iter::once(&e)
        .chain(&e.others)
        .map(|x| x.message.clone())
        .collect();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all[0].contains("invalid regex"), "{all:?}");
    assert!(all[1].contains("invalid status '300-200'"), "{all:?}");
    assert!(all[2].contains("body_contains is empty"), "{all:?}");
}

#[test]
fn equals_null_compares_with_null() {
    let src = format!("{HEAD}    requests:\n      - check: [ {{ json: $.b, equals: null }} ]\n");
    let plan = check(&src).expect("compiles");
    let c = &plan.scenarios[0].workload.requests[0].checks[0];
    assert_eq!(c.name, "$.b == null");
    let one = workload::Captured::of(Vec::new(), br#"{"b":1}"#.to_vec());
    assert!(matches!(
        c.run(200, Some(&one)),
        stats::CheckOutcome::Failed(_)
    ));
    let null = workload::Captured::of(Vec::new(), br#"{"b":null}"#.to_vec());
    assert_eq!(c.run(200, Some(&null)), stats::CheckOutcome::Passed);
}

#[path = "ws_step_tests.rs"]
mod ws;

#[path = "llm_step_tests.rs"]
mod llm_step_tests;

#[test]
fn http3_auto_and_0rtt_are_read_and_bad_words_point_at_the_value() {
    let ok = "target: https://127.0.0.1:8443\ndefaults:\n  http3: auto\n  0rtt: all\nscenarios:\n  - name: a\n    requests: [ { path: / } ]\n  - name: b\n    http3: true\n    0rtt: true\n    requests: [ { path: / } ]\n  - name: c\n    http3: false\n    0rtt: false\n    requests: [ { path: / } ]\n";
    let plan = check(ok).unwrap();
    let s: Vec<_> = plan
        .scenarios
        .iter()
        .map(|sc| {
            let x = &sc.settings;
            (x.http3, x.http3_auto, x.zero_rtt)
        })
        .collect();
    assert_eq!(
        s,
        [
            (Some(true), true, Some("all")),
            (Some(true), false, Some("idempotent")),
            (Some(false), false, None),
        ]
    );
    expect_error(
        &format!("{HEAD}    http3: maybe\n"),
        "4:12",
        "http3: 'maybe' is not true, false or auto",
    );
    expect_error(
        &format!("{HEAD}    0rtt: some\n"),
        "4:11",
        "0rtt: 'some' is not true, false or all",
    );
}
