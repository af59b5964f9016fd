//! Plans end to end, through the binary against a real stateful server (`testkit::shop`):
//! unique data per request, flows that extract a token and use it, extraction failures counted
//! as their own kind, SLO verdicts and exit codes, sliding-window abort, suites with `--only`,
//! reproducible random values, and plan errors at file:line:column.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::shop::shop;

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

/// Writes `text` as a plan in a fresh directory; returns (dir guard, plan path).
fn plan(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, text).expect("write plan");
    (dir, path)
}

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("result written")).expect("valid JSON")
}

#[test]
fn every_registration_carries_a_distinct_email() {
    let (handler, state) = shop(Duration::ZERO);
    let srv = testkit::serve(handler).unwrap();
    let (dir, p) = plan(&format!(
        r#"target: {}
defaults: {{ timeout: 10s, headers: {{ Content-Type: application/json }} }}
scenarios:
  - name: register
    load: {{ connections: 50, requests: 10000 }}
    requests:
      - name: register
        method: POST
        path: /user/auth/register
        body: '{{"email":"user{{{{seq}}}}-{{{{uuid}}}}@example.test","password":"{{{{rand_str 16}}}}"}}'
    slo: [ "errors < 1%" ]
"#,
        srv.url("")
    ));
    let out = dir.path().join("r.json");
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    assert_eq!(
        state.duplicates.load(Ordering::Relaxed),
        0,
        "no email sent twice"
    );
    assert_eq!(state.registered.load(Ordering::Relaxed), 10_000);
    assert_eq!(state.distinct_emails(), 10_000);
    let r = json_of(&out);
    assert_eq!(r["summary"]["requests"], 10_000);
    assert_eq!(r["summary"]["status"]["201"], 10_000);
    assert_eq!(r["slo_passed"], true);
    assert_eq!(r["scenarios"][0]["name"], "register");
}

const FLOW: &str = r#"scenarios:
  - name: browse
    load: { connections: 4, requests: 400 }
    flow:
      - { name: login, method: POST, path: /login, body: '{"user":"u{{vu}}"}', extract: { token: "$.access_token" } }
      - { name: list, path: "/items?page={{rand_int 1 50}}", headers: { Authorization: "Bearer {{token}}" }, weight: 3 }
    slo: [ "list.p99 < 5s", "errors < 1%" ]
"#;

#[test]
fn a_flow_extracts_the_token_and_every_read_uses_it() {
    let (handler, state) = shop(Duration::ZERO);
    let srv = testkit::serve(handler).unwrap();
    let (dir, p) = plan(&format!("target: {}\n{FLOW}", srv.url("")));
    let out = dir.path().join("r.json");
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let (logins, reads) = (
        state.logins.load(Ordering::Relaxed),
        state.authorized_reads.load(Ordering::Relaxed),
    );
    assert_eq!(state.unauthorized_reads.load(Ordering::Relaxed), 0);
    assert_eq!(logins + reads, 400, "exactly -n requests");
    // Each iteration is one login and three reads; -n may cut the last iterations short.
    assert!(
        reads >= 3 * logins - 3 * 4 && reads <= 3 * logins,
        "{logins} logins, {reads} reads"
    );
    let r = json_of(&out);
    let reqs = r["scenarios"][0]["requests"].as_array().unwrap();
    let names: Vec<&str> = reqs.iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["login", "list"]);
    assert_eq!(reqs[0]["summary"]["requests"], logins);
    assert_eq!(reqs[1]["summary"]["requests"], reads);
    assert_eq!(r["scenarios"][0]["slo"][0]["metric"], "list.p99");
}

#[test]
fn a_failed_extraction_is_an_extract_error_and_restarts_the_flow() {
    let (handler, state) = shop(Duration::ZERO);
    let srv = testkit::serve(handler).unwrap();
    let text = format!("target: {}\n{FLOW}", srv.url("")).replace("$.access_token", "$.missing");
    let (dir, p) = plan(&text);
    let out = dir.path().join("r.json");
    // Every attempt fails: exit 3 (nothing succeeded), not a panic or a hang.
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(3);
    let r = json_of(&out);
    assert_eq!(r["summary"]["errors_by_kind"]["extract"], 400);
    assert_eq!(state.logins.load(Ordering::Relaxed), 400);
    let reads = state.authorized_reads.load(Ordering::Relaxed)
        + state.unauthorized_reads.load(Ordering::Relaxed);
    assert_eq!(reads, 0, "no step runs after a failed extraction");
}

#[test]
fn slo_verdicts_set_the_exit_code_and_print_an_sla_table() {
    let srv = testkit::serve(testkit::handlers::faults()).unwrap();
    let url = srv.url("/delay/20");
    let failing = brink()
        .args([
            "run",
            &url,
            "-c",
            "2",
            "-n",
            "40",
            "--slo",
            "p99<1ms",
            "--slo",
            "errors<1%",
        ])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(failing.status.code(), Some(1));
    let text = String::from_utf8_lossy(&failing.stdout);
    assert!(text.contains("p99") && text.contains("FAIL"), "{text}");
    assert!(text.contains("SLA: FAIL (1/2 met)"), "{text}");
    brink()
        .args(["run", &url, "-c", "2", "-n", "40", "--slo", "p99<5s", "-q"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    brink()
        .args(["run", &url, "--slo", "p99<<1s"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--slo: invalid SLO 'p99<<1s'"));
}

#[test]
fn an_abort_slo_stops_the_run_within_one_window_of_the_breach() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    // Healthy for 3 s, then every answer is a 503.
    let start = Instant::now();
    let srv = testkit::serve(Arc::new(move |_: &testkit::Req| {
        if start.elapsed() < Duration::from_secs(3) {
            testkit::Reply::ok("ok", Duration::from_millis(1))
        } else {
            testkit::Reply::status(503)
        }
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let t0 = Instant::now();
    brink()
        .args(["run", &srv.url("/"), "-c", "4", "-d", "30s", "-q"])
        .args([
            "--slo",
            "errors < 5% over 2s abort",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(40))
        .assert()
        .code(1);
    let took = t0.elapsed();
    let r = json_of(&out);
    let sc = &r["scenarios"][0];
    assert_eq!(sc["aborted_by"], "errors < 5% over 2s abort");
    assert_eq!(sc["slo"][0]["pass"], false);
    // The breach starts at ~3 s; the first failing 2 s window ends by second 4, so the run
    // must stop by ~5 s (one window plus the second being aggregated), far from 30 s.
    let ran = sc["summary"]["duration_s"].as_f64().unwrap();
    assert!((3.0..6.0).contains(&ran), "ran {ran} s");
    assert!(took < Duration::from_secs(12), "{took:?}");
}

#[test]
fn a_suite_runs_in_order_and_only_selects() {
    let (handler, _state) = shop(Duration::ZERO);
    let srv = testkit::serve(handler).unwrap();
    let (dir, p) = plan(&format!(
        r#"target: {}
scenarios:
  - {{ name: baseline, load: {{ connections: 2, requests: 30 }}, requests: [ {{ path: /health }} ], slo: [ "p99 < 5s" ], pause: 200ms }}
  - {{ name: missing, load: {{ connections: 2, requests: 20 }}, requests: [ {{ path: /nope }} ], slo: [ "errors < 1%" ] }}
  - {{ name: spike, load: {{ connections: 8, requests: 50 }}, requests: [ {{ path: /health }} ] }}
"#,
        srv.url("")
    ));
    let out = dir.path().join("r.json");
    let run = brink()
        .args(["run", p.to_str().unwrap(), "--json", out.to_str().unwrap()])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "scenario 'missing' gets 404s");
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("== scenario spike (3/3) =="), "{text}");
    assert!(text.contains("overall: FAIL"), "{text}");
    let r = json_of(&out);
    let names: Vec<&str> = r["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["baseline", "missing", "spike"]);
    assert_eq!(
        r["summary"]["requests"], 100,
        "the top-level summary adds the scenarios up"
    );
    assert_eq!(r["slo_passed"], false);
    let only = dir.path().join("only.json");
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "--only",
            "spike",
            "-q",
            "--json",
            only.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let r = json_of(&only);
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1);
    assert_eq!(r["summary"]["requests"], 50);
    assert_eq!(r["slo_passed"], serde_json::Value::Null);
    brink()
        .args(["run", p.to_str().unwrap(), "--only", "spkie"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no such scenario (scenarios: baseline, missing, spike)",
        ));
}

#[test]
fn the_same_seed_renders_the_same_values() {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let b2 = bodies.clone();
    let srv = testkit::serve(Arc::new(move |r: &testkit::Req| {
        b2.lock()
            .unwrap()
            .push(String::from_utf8_lossy(r.body).to_string());
        testkit::Reply::status(200)
    }))
    .unwrap();
    let (_dir, p) = plan(&format!(
        "target: {}\nscenarios:\n  - name: r\n    load: {{ connections: 1, requests: 20 }}\n    requests: [ {{ method: POST, path: /, body: '{{{{uuid}}}} {{{{rand_str 8}}}} {{{{rand_int 1 1000000}}}}' }} ]\n",
        srv.url("")
    ));
    let mut runs = Vec::new();
    for seed in ["7", "7", "8"] {
        bodies.lock().unwrap().clear();
        brink()
            .args(["run", p.to_str().unwrap(), "-q", "--seed", seed])
            .timeout(Duration::from_secs(30))
            .assert()
            .code(0);
        runs.push(bodies.lock().unwrap().clone());
    }
    assert_eq!(runs[0].len(), 20);
    assert_eq!(runs[0], runs[1]);
    assert_ne!(runs[0], runs[2]);
    let distinct: std::collections::HashSet<_> = runs[0].iter().collect();
    assert_eq!(distinct.len(), 20);

    // Without --seed, the seed the result records is the one the run used: giving it back
    // renders the same values.
    let out = p.with_extension("json");
    bodies.lock().unwrap().clear();
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let first = bodies.lock().unwrap().clone();
    let seed = json_of(&out)["seed"]
        .as_u64()
        .expect("the result records a seed");
    bodies.lock().unwrap().clear();
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--seed",
            &seed.to_string(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    assert_eq!(*bodies.lock().unwrap(), first, "seed {seed}");
}

#[test]
fn plan_errors_name_file_line_and_column_and_exit_2() {
    let (_dir, p) =
        plan("target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { durration: 1m }\n");
    let out = brink()
        .args(["validate", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "{}:4:13: unknown key 'durration' (did you mean 'duration'?)",
        p.display()
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains("load: { durration: 1m }") && err.contains('^'),
        "{err}"
    );
    // `run` checks the same way before sending anything.
    brink().args(["run", p.to_str().unwrap()]).assert().code(2);
    brink()
        .args(["validate", "no/such/plan.yaml"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no/such/plan.yaml: cannot read plan",
        ));
}

#[test]
fn flows_work_over_http2_and_in_the_open_model() {
    let (handler, state) = shop(Duration::ZERO);
    let srv = testkit::serve_hyper(testkit::Options::default(), handler).unwrap();
    // Open model: 40 iterations/s for 1 s over h2c; each iteration is a login and three reads.
    let text = format!("target: {}\n{FLOW}", srv.url("")).replace(
        "{ connections: 4, requests: 400 }",
        "{ rate: 40/s, duration: 1s, connections: 8 }",
    );
    let (dir, p) = plan(&text);
    let out = dir.path().join("r.json");
    brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "--http2",
            "-q",
            "--json",
            out.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let logins = state.logins.load(Ordering::Relaxed);
    let reads = state.authorized_reads.load(Ordering::Relaxed);
    assert_eq!(state.unauthorized_reads.load(Ordering::Relaxed), 0);
    assert!((38..=41).contains(&logins), "{logins} iterations started");
    assert!(
        reads + 8 >= 3 * logins && reads <= 3 * logins,
        "{logins} logins, {reads} reads"
    );
    let r = json_of(&out);
    assert_eq!(r["target"]["protocol"], "h2");
}

#[test]
fn flows_extract_over_tls_too() {
    let (handler, state) = shop(Duration::ZERO);
    let opts = testkit::Options {
        tls: true,
        ..testkit::Options::default()
    };
    let srv = testkit::serve_with(opts, handler).unwrap();
    let (_dir, p) = plan(&format!("target: {}\n{FLOW}", srv.url("")));
    brink()
        .args(["run", p.to_str().unwrap(), "--insecure", "-q"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let (logins, reads) = (
        state.logins.load(Ordering::Relaxed),
        state.authorized_reads.load(Ordering::Relaxed),
    );
    assert_eq!(state.unauthorized_reads.load(Ordering::Relaxed), 0);
    assert_eq!(logins + reads, 400);
    assert!(srv.url("").starts_with("https://"));
}

#[test]
fn a_single_request_s_path_is_in_the_result_as_written() {
    // The result and the summary name the endpoint the requests went to, with placeholders
    // as written: an `{{env}}` value in the path reaches the server, never the result.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let srv = testkit::serve(Arc::new(move |r: &testkit::Req| {
        log.lock().unwrap().push(r.path.to_string());
        testkit::Reply::ok("ok\n", Duration::ZERO)
    }))
    .unwrap();
    let (dir, p) = plan(&format!(
        "target: {}/api\nscenarios:\n  - name: items\n    load: {{ connections: 1, requests: 3 }}\n    requests:\n      - method: GET\n        path: /items/{{{{env BRINK_TEST_SEGMENT}}}}/{{{{seq}}}}\n",
        srv.url("")
    ));
    let out = dir.path().join("r.json");
    let run = brink()
        .args(["run", p.to_str().unwrap(), "--json", out.to_str().unwrap()])
        .env("BRINK_TEST_SEGMENT", "s3cret")
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    let written = "/api/items/{{env BRINK_TEST_SEGMENT}}/{{seq}}";
    let r = json_of(&out);
    assert_eq!(
        r["scenarios"][0]["target"]["path"], written,
        "{}",
        r["scenarios"][0]["target"]
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(&format!("GET {}{written}  (http/1.1", srv.url(""))),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("s3cret") && !stdout.contains("s3cret"));
    // Successes per second and per minute (registrations are counted per minute).
    let ok_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("ok "))
        .unwrap();
    let rates = ok_line.split_once('(').unwrap().1.trim_end_matches(')');
    let num = |w: &str| {
        w.split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse::<f64>()
            .unwrap()
    };
    let (per_s, per_min) = rates.split_once(", ").unwrap();
    assert!(
        per_s.ends_with(" ok/s") && per_min.ends_with(" ok/min"),
        "{ok_line}"
    );
    assert!((num(per_min) / num(per_s) - 60.0).abs() < 0.5, "{ok_line}");
    let paths = seen.lock().unwrap().clone();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert!(
        paths.iter().all(|p| p.starts_with("/api/items/s3cret/")),
        "{paths:?}"
    );
}
