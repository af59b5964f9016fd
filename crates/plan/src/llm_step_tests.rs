//! `llm:` steps and JSON Lines data in plans: what they compile to, and each mistake at its
//! value.

use super::*;

const LLM: &str = "target: http://127.0.0.1:8000/v1\nscenarios:\n  - name: chat\n";

fn rendered(s: &Scenario) -> String {
    let mut vu = workload::Vu::new(&s.workload, 0);
    vu.next(&s.workload);
    vu.render_h1(&s.workload, "h", true).unwrap();
    String::from_utf8(vu.buf.clone()).unwrap()
}

#[test]
fn an_llm_step_asks_for_a_token_stream() {
    let plan = check("target: http://127.0.0.1:8000/v1\ndata:\n  users: { csv: users.csv }\nscenarios:\n  - name: chat\n    requests:\n      - path: /chat/completions\n        llm: { model: tiny, prompt: 'to {{data.users.email}}: \"hi\"', max_tokens: 16 }\n")
    .unwrap();
    let s = &plan.scenarios[0];
    assert!(s.settings.llm, "its answers are read as token streams");
    let text = rendered(s);
    assert!(
        text.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{text}"
    );
    assert!(
        text.contains("content-type: application/json\r\n"),
        "{text}"
    );
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["messages"][0]["content"], "to ann@x.test: \"hi\"");
    assert_eq!(
        (body["model"].as_str(), body["max_tokens"].as_u64()),
        (Some("tiny"), Some(16))
    );
    let plain = check(&format!("{LLM}    requests: [ {{ path: /models }} ]\n")).unwrap();
    assert!(!plain.scenarios[0].settings.llm);
}

#[test]
fn prompts_come_from_json_lines() {
    let d = tempdir::Dir::with(
        "prompts.jsonl",
        "{\"text\": \"line one\\n\\\"quoted\\\"\"}\n{\"text\": \"two\"}\n",
    );
    let source = "target: http://127.0.0.1:8000\ndata:\n  prompts: { jsonl: prompts.jsonl }\nscenarios:\n  - name: c\n    requests:\n      - path: /v1/completions\n        llm: { model: m, prompt: '{{data.prompts.text}}' }\n";
    let plan = parse("p.yaml", source, &d.0, 1, &|_| None).unwrap();
    let text = rendered(&plan.scenarios[0]);
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["prompt"], "line one\n\"quoted\"");
    assert_eq!(body["max_tokens"], 128, "the default");
    assert_eq!(plan.files, ["prompts.jsonl"]);
}

#[test]
fn llm_step_mistakes_point_at_their_value() {
    let step = |rest: &str| format!("{LLM}    requests:\n{rest}");
    expect_error(
        &step("      - { path: /models, llm: { model: m } }\n"),
        "5:31",
        "ends in neither /chat/completions nor /completions",
    );
    expect_error(
        &step("      - { path: /completions, body: x, llm: { model: m } }\n"),
        "5:37",
        "builds its body",
    );
    expect_error(
        &step("      - { path: /completions, llm: { model: m, prompt: a, prompt_tokens: 5 } }\n"),
        "5:74",
        "cannot both be set",
    );
    expect_error(
        &step("      - { path: /completions, llm: { model: m, max_tokens: 0 } }\n"),
        "5:60",
        "at least 1",
    );
    expect_error(
        &step("      - { path: /completions, llm: { model: m, prompt: '{{nope}}' } }\n"),
        "5:57",
        "unknown template name 'nope'",
    );
    expect_error(
        &step("      - { path: /completions, llm: { model: m } }\n      - { path: /health }\n"),
        "6:9",
        "belongs in a scenario of its own",
    );
    expect_error(
        "target: ws://127.0.0.1:8000\nscenarios:\n  - name: a\n    requests:\n      - { llm: { model: m } }\n",
        "5:9",
        "asks an HTTP server",
    );
    expect_error(
        "target: http://127.0.0.1:8000\ndata:\n  p: { per: vu }\nscenarios:\n  - name: a\n",
        "3:6",
        "csv: FILE or jsonl: FILE",
    );
}

#[test]
fn an_idle_timeout_bounds_a_quiet_stream() {
    let plan = check("target: http://127.0.0.1:8000\ndefaults: { idle_timeout: 2s }\nscenarios:\n  - name: a\n  - name: b\n    idle_timeout: 500ms\n").unwrap();
    assert_eq!(
        plan.scenarios[0].settings.idle_timeout,
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        plan.scenarios[1].settings.idle_timeout,
        Some(Duration::from_millis(500))
    );
    expect_error(
        "target: http://127.0.0.1:8000\ndefaults: { idle_timeout: soon }\nscenarios:\n  - name: a\n",
        "2:27",
        "idle_timeout",
    );
}
