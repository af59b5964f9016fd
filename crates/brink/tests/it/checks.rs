//! Response checks (`check:` in a plan) end to end: a server that answers 200 with the wrong
//! body one time in ten, over HTTP/1.1 and HTTP/2; each check's own pass rate in the result,
//! the terminal and the HTML report; a failed check counted as an error of kind `check` unless
//! it only counts; `checks` and `check.NAME` objectives; and a stock Python `http.server`
//! whose files are checked by header, size and JSON.

use crate::support::brink_json;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Every tenth answer (by arrival) is a 200 whose state is a hostile error text, without items.
fn one_in_ten_wrong() -> testkit::Handler {
    Arc::new(|r: &testkit::Req| {
        let body = if r.seq % 10 == 9 {
            r#"{"state":"</td><script>alert(1)</script>"}"#
        } else {
            r#"{"state":"ok","items":[1,2]}"#
        };
        testkit::Reply::ok(body, Duration::ZERO)
    })
}

fn plan(dir: &std::path::Path, url: &str, http2: bool) -> std::path::PathBuf {
    let path = dir.join("checked.yaml");
    std::fs::write(
        &path,
        format!(
            r#"target: {url}
defaults: {{ http2: {http2} }}
scenarios:
  - name: listing
    load: {{ connections: 4, requests: 1000 }}
    requests:
      - name: list
        path: /items
        check:
          - {{ status: 200 }}
          - {{ name: state ok, json: $.state, equals: ok }}
          - {{ name: has items, body_contains: items, count_only: true }}
          - {{ header: content-length }}
    slo: [ "check.status 200 > 99.9%", "check.state ok > 95%", "checks > 90%" ]
"#
        ),
    )
    .unwrap();
    path
}

fn check<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["scenarios"][0]["checks"]
        .as_array()
        .expect("checks in the result")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {}", r["scenarios"][0]["checks"]))
}

fn assert_counted(r: &Value, stdout: &str) {
    let s = &r["summary"];
    assert_eq!(s["requests"], 1000, "{s}");
    assert_eq!(s["errors_by_kind"]["check"], 100, "the wrong bodies: {s}");
    assert_eq!(s["ok"], 900, "{s}");
    assert_eq!(
        s["status"]["200"], 1000,
        "an answer that failed a check is still an answer: its status counts"
    );
    let histogram: u64 = s["latency_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(histogram, 1000, "and so does its latency");
    let (status, state, items, length) = (
        check(r, "status 200"),
        check(r, "state ok"),
        check(r, "has items"),
        check(r, "header content-length"),
    );
    assert_eq!(
        (&status["passed"], &status["failed"]),
        (&1000.into(), &0.into())
    );
    assert_eq!(
        (&state["passed"], &state["failed"]),
        (&900.into(), &100.into())
    );
    assert_eq!(state["pass_percent"], 90.0);
    assert_eq!(state["request"], "list");
    let why = state["first_failure"].as_str().unwrap();
    assert_eq!(
        why,
        r#"$.state is "</td><script>alert(1)</script>" (wanted "ok")"#
    );
    assert_eq!(
        (&items["failed"], &items["count_only"]),
        (&100.into(), &true.into())
    );
    assert_eq!(length["passed"], 1000);
    // Objectives on checks: 100% of statuses, 90% of states (fails > 95%), 3,800 of 4,000.
    let slo: Vec<(&str, bool)> = r["scenarios"][0]["slo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["slo"].as_str().unwrap(), v["pass"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        slo,
        [
            ("check.status 200 > 99.9%", true),
            ("check.state ok > 95%", false),
            ("checks > 90%", true),
        ]
    );
    assert!(
        stdout.contains("checks        95.00% passed  (3,800 of 4,000 checks run on answers)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("90.00%  on list; 100 failed; first: $.state is \"</td><script>"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(counted only: those requests still succeeded)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("check 100"),
        "the errors row names the kind: {stdout}"
    );
}

#[test]
fn a_wrong_body_fails_its_check_and_its_request_over_http1() {
    let srv = testkit::serve(one_in_ten_wrong()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &srv.url(""), false);
    let html = dir.path().join("r.html");
    let ran = brink_json(&["run", p.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(ran.code, Some(1), "an objective failed: {}", ran.stderr);
    assert_counted(&ran.result, &ran.stdout);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<caption>Response checks</caption>"),
        "the report lists them"
    );
    assert!(
        page.contains("$.state is &quot;&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"),
        "escaped on the page"
    );
    assert!(
        !page.contains("<script>alert(1)"),
        "nothing the server sent runs"
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &ran.result);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_wrong_body_fails_its_check_and_its_request_over_http2() {
    let srv = testkit::serve_hyper(testkit::Options::default(), one_in_ten_wrong()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &srv.url(""), true);
    let ran = brink_json(&["run", p.to_str().unwrap()]);
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert_eq!(ran.result["scenarios"][0]["target"]["protocol"], "h2");
    assert_counted(&ran.result, &ran.stdout);
}

#[test]
fn a_stock_python_server_s_files_are_checked_by_header_size_and_json() {
    let py = crate::ordinary::stock_python_serving(&[(
        "items.json",
        r#"{"items":[{"id":1},{"id":2}],"next":null}"#,
    )]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.yaml");
    std::fs::write(
        &p,
        format!(
            r#"target: {}
scenarios:
  - name: files
    load: {{ connections: 2, requests: 60 }}
    requests:
      - name: items
        path: /items.json
        check:
          - {{ header: content-type, equals: application/json }}
          - {{ size: "< 1KB" }}
          - {{ json: "$.items[1].id", equals: 2 }}
          - {{ name: no cursor, json: $.next, equals: "abc", count_only: true }}
      - name: missing
        path: /missing.json
        check:
          - {{ name: found, status: 200-299, count_only: true }}
    slo: [ "check.found < 1%", "items.checks >= 75%" ]
"#,
            py.url.trim_end_matches('/')
        ),
    )
    .unwrap();
    let ran = brink_json(&["run", p.to_str().unwrap()]);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let r = &ran.result;
    let by_name = |n: &str| check(r, n).clone();
    let per = |n: &str| {
        r["scenarios"][0]["requests"]
            .as_array()
            .and_then(|a| a.iter().find(|q| q["name"] == n))
            .map(|q| q["summary"]["requests"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("no request {n}"))
    };
    let items = per("items");
    assert_eq!(items + per("missing"), 60, "{r}");
    assert!(items > 0, "the draw sent `items` some of the 60");
    for name in [
        "header content-type == \"application/json\"",
        "size < 1KB",
        "$.items[1].id == 2",
    ] {
        let c = by_name(name);
        assert_eq!(c["failed"], 0, "{c}");
        // Checked on every answer to `items` (a weighted draw sends it about half of the 60).
        assert_eq!(c["passed"], items, "{c}");
    }
    assert_eq!(by_name("no cursor")["pass_percent"], 0.0);
    assert_eq!(by_name("found")["pass_percent"], 0.0);
    assert_eq!(
        r["summary"]["errors_by_kind"]["check"], 0,
        "checks that only count fail no request"
    );
}

/// Header and size checks read no body, so a body over the capture budget still passes them;
/// a body check on an answer brink could not keep is not checked (brink's limit, never the
/// service's failure) and the summary says so.
#[test]
fn answers_too_large_to_keep_are_not_blamed_on_the_service() {
    let body = format!(r#"{{"items":"{}"}}"#, "x".repeat(5000));
    let srv = testkit::serve(Arc::new(move |_: &testkit::Req| {
        testkit::Reply::ok(&body, Duration::ZERO)
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.yaml");
    std::fs::write(
        &p,
        format!(
            r#"target: {}
scenarios:
  - name: big
    load: {{ connections: 2, requests: 40 }}
    requests:
      - name: big
        check:
          - {{ header: content-length, equals: "5012" }}
          - {{ size: "> 4KB" }}
          - {{ name: has items, body_contains: items }}
"#,
            srv.url("")
        ),
    )
    .unwrap();
    let ran = brink_json(&["run", p.to_str().unwrap(), "--capture-limit", "1KiB"]);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let r = &ran.result;
    assert_eq!(r["summary"]["ok"], 40, "{}", r["summary"]);
    assert_eq!(r["summary"]["errors_by_kind"]["check"], 0);
    assert_eq!(check(r, "header content-length == \"5012\"")["passed"], 40);
    assert_eq!(check(r, "size > 4KB")["passed"], 40);
    let body = check(r, "has items");
    assert_eq!(
        (&body["passed"], &body["failed"]),
        (&0.into(), &0.into()),
        "{body}"
    );
    assert_eq!(body["unchecked"], 40, "{body}");
    assert!(
        body["first_unchecked"]
            .as_str()
            .unwrap()
            .contains("(1 KiB across requests in flight"),
        "{body}"
    );
    assert!(
        ran.stdout
            .contains("40 answers not checked, brink kept no body for them"),
        "{}",
        ran.stdout
    );
    // An objective on a request the plan does not have is refused, not judged on all.
    let wrong = brink_json(&["run", p.to_str().unwrap(), "--slo", "zz.p99 < 1s"]);
    assert_eq!(wrong.code, Some(2), "{}", wrong.stderr);
    assert!(
        wrong
            .stderr
            .contains("--slo 'zz.p99 < 1s' names request 'zz', which is not one of big"),
        "{}",
        wrong.stderr
    );
}
