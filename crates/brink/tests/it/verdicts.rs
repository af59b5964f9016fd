//! What brink says about its numbers reads right to a user coming from wrk, k6, oha or ghz:
//! objectives in k6's spellings and with bare numbers mean what k6 means, and every objective
//! is echoed normalised, with its unit.

use crate::support::brink_json;
use std::time::Duration;

/// `--slo 'p99<200'` is 200 ms (it was read as 200 s and passed a p99 it should judge), k6's
/// `p(95)` and `http_req_failed` read as brink's objectives, `errors < 1 %` is accepted, and
/// the terminal, the result and `validate` show each objective normalised with its unit.
#[test]
fn bare_numbers_are_milliseconds_and_k6_forms_read_right() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(20))).expect("server");
    let ran = brink_json(&[
        "run",
        &srv.url("/"),
        "-n",
        "40",
        "-c",
        "2",
        "--slo",
        "p99<200",
        "--slo",
        "p(95)<5",
        "--slo",
        "errors < 1 %",
        "--slo",
        "http_req_failed < 0.01",
    ]);
    let slo = &ran.result["scenarios"][0]["slo"];
    let shown: Vec<(&str, bool)> = slo
        .as_array()
        .expect("objectives")
        .iter()
        .map(|o| {
            (
                o["slo"].as_str().unwrap_or(""),
                o["pass"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("p99 < 200ms", true),
            ("p95 < 5ms", false),
            ("errors < 1%", true),
            ("errors < 1%", true)
        ],
        "{slo}"
    );
    assert_eq!(
        ran.code,
        Some(1),
        "a 20 ms service fails p(95)<5: {}",
        ran.stdout
    );
    assert!(ran.stdout.contains("< 200ms"), "{}", ran.stdout);

    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\nscenarios:\n  - name: a\n    load: { requests: 10 }\n    slo: [\"p99 < 200\", \"avg<50\"]\n",
    )
    .expect("write");
    let out = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin("brink"))
        .args(["validate", plan.to_str().unwrap()])
        .output()
        .expect("brink runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 SLO(s): p99 < 200ms, mean < 50ms"),
        "{text}"
    );
}
