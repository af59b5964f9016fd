//! Async completion against a real pipeline on loopback: bookings answered 202 at once and
//! sold later at a known pace. The probe's completion time matches the pipeline's own
//! sellout within one poll interval plus 5%; an objective judges it; work that is not done in
//! time is reported incomplete with its last value.

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;

fn run(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, r.stdout)
}

#[test]
fn the_probe_finds_the_sellout_the_pipeline_knows() {
    // A poll every 100 ms is checked to within 0.2 s: worker processes of the tests beside it
    // on two cores delayed it past that. Beside light tests only, which leave a CPU free.
    let _cpu = crate::support::cpu_light();
    // 1,000 bookings sold at 500 per second: sold out 2 s after the first booking.
    let (handler, pipeline) = testkit::handlers::pipeline(500.0);
    let srv = testkit::serve(handler).unwrap();
    let (code, r, out) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "1000",
        "-c",
        "20",
        "--complete-when",
        "/sold until $.sold >= 1000",
        "--complete-every",
        "100ms",
        "--slo",
        "complete < 10s",
        "--slo",
        "p99 < 5s",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(pipeline.booked(), 1000);
    let c = &r["scenarios"][0]["completion"];
    let sellout = pipeline.sold_out_at(1000).unwrap() - pipeline.first_booking().unwrap();
    let expected = sellout.as_secs_f64();
    let complete = c["complete_s"].as_f64().unwrap();
    let tolerance = 0.1 + 0.05 * expected;
    assert!(
        complete >= expected - 0.02 && complete <= expected + tolerance,
        "probe {complete:.3}s vs sellout {expected:.3}s: {c}"
    );
    let done = c["responses_done_s"].as_f64().unwrap();
    assert!(done < complete, "{c}");
    assert!((c["drain_s"].as_f64().unwrap() - (complete - done)).abs() < 1e-9);
    assert_eq!(c["last_value"], "1000");
    let timeline = c["timeline"].as_array().unwrap();
    assert!(
        timeline.len() >= 15,
        "a poll every 100 ms: {}",
        timeline.len()
    );
    let values: Vec<f64> = timeline.iter().map(|p| p[1].as_f64().unwrap()).collect();
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "progress only grows: {values:?}"
    );
    let slo = &r["scenarios"][0]["slo"][0];
    assert_eq!(
        (slo["metric"].as_str(), slo["pass"].as_bool()),
        (Some("complete"), Some(true))
    );
    assert!(out.contains("completion    complete at"), "{out}");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn work_not_done_in_time_is_incomplete_and_fails_its_objective() {
    // 300 bookings at 100 per second need 3 s; the probe may wait 1 s.
    let (handler, _) = testkit::handlers::pipeline(100.0);
    let srv = testkit::serve(handler).unwrap();
    let (code, r, out) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "300",
        "--complete-when",
        &format!("{} until $.sold >= 300", srv.url("/sold")),
        "--complete-within",
        "1s",
        "--slo",
        "complete < 30s",
    ]);
    assert_eq!(code, Some(1), "{out}");
    let c = &r["scenarios"][0]["completion"];
    assert_eq!(c["complete"], false);
    assert!(c["complete_s"].is_null());
    let last: u64 = c["last_value"].as_str().unwrap().parse().unwrap();
    assert!((50..300).contains(&last), "{c}");
    let slo = &r["scenarios"][0]["slo"][0];
    assert_eq!(slo["pass"], false);
    assert!(
        slo["result"]
            .as_str()
            .unwrap()
            .starts_with("incomplete (last value"),
        "{slo}"
    );
    assert!(out.contains("INCOMPLETE"), "{out}");
}

#[test]
fn bad_completion_input_is_one_line() {
    for (args, says) in [
        (
            vec!["--complete-when", "/sold $.sold >= 1"],
            "expected 'URL until CONDITION'",
        ),
        (
            vec!["--complete-when", "/sold until $.sold >= lots"],
            "is not a JSON value",
        ),
        (
            vec!["--complete-when", "grpc://127.0.0.1:1/x until $.a == 1"],
            "http:// or https://",
        ),
        (vec!["--complete-every", "1s"], "go with --complete-when"),
        (vec!["--slo", "complete < 10s"], "needs a completion probe"),
        (
            vec![
                "--slo",
                "complete < 10s over 5s",
                "--complete-when",
                "/s until $.a == 1",
            ],
            "no 'over'",
        ),
    ] {
        let out = crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .args(["run", "http://127.0.0.1:1/", "-n", "1"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn a_plan_scenario_names_its_completion() {
    let (handler, _) = testkit::handlers::pipeline(1000.0);
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("sale.yaml");
    let text = format!(
        "target: {}\nscenarios:\n  - name: sale\n    load: {{ connections: 10, requests: 200 }}\n    requests: [ {{ method: POST, path: /book }} ]\n    slo: [ \"complete < 10s\" ]\n    complete_when: {{ get: /sold, until: \"$.sold >= 200\", progress: \"$.sold\", every: 50ms, within: 20s }}\n",
        srv.url("")
    );
    std::fs::write(&plan, &text).unwrap();
    let (code, r, out) = run(&[plan.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let c = &r["scenarios"][0]["completion"];
    assert_eq!(c["complete"], true, "{c}");
    assert!(c["complete_s"].as_f64().unwrap() >= 0.19, "{c}");

    std::fs::write(
        &plan,
        text.replace("    complete_when: {", "    other: {")
            .replace("other: {", "# {"),
    )
    .unwrap();
    let out = crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(["run", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sale.yaml:6:") && err.contains("needs the scenario's complete_when"),
        "{err}"
    );
}

/// Raw HTTP/1.1 answer bytes.
fn raw(status: &str, headers: &str, body: &str) -> testkit::Reply {
    testkit::Reply::Raw {
        bytes: format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
        close: false,
    }
}

#[test]
fn each_booking_is_followed_until_its_job_is_done() {
    // A verdict on time (p50 of 300 to 450 ms) with a light load: beside light tests only.
    let _cpu = crate::support::cpu_light();
    // POST /book answers 202 with the job's URL; a job is CONFIRMED 300 ms after its booking.
    // Job 5 of every 20 asks to be polled again after 1 s (Retry-After); job 9 fails (500).
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let booked: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (b, p) = (booked.clone(), polls.clone());
    let handler: testkit::Handler = Arc::new(move |r: &testkit::Req| {
        if r.method == "POST" {
            let mut b = b.lock().unwrap();
            let n = b.len() as u64;
            b.insert(n, Instant::now());
            return raw("202 Accepted", &format!("Location: /job/{n}\r\n"), "");
        }
        p.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let n: u64 = r
            .path
            .trim_start_matches("/job/")
            .parse()
            .unwrap_or(u64::MAX);
        let Some(at) = b.lock().unwrap().get(&n).copied() else {
            return raw("404 Not Found", "", "");
        };
        if n % 20 == 9 {
            return raw("500 Internal Server Error", "", "");
        }
        if at.elapsed() >= Duration::from_millis(300) {
            return raw("200 OK", "", r#"{"state":"CONFIRMED"}"#);
        }
        let retry = if n % 20 == 5 {
            "Retry-After: 1\r\n"
        } else {
            ""
        };
        raw("200 OK", retry, r#"{"state":"PENDING"}"#)
    });
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("book.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: book\n    load: {{ connections: 2, requests: 20 }}\n    slo: [ \"async.p50 < 800ms\", \"async.max < 200ms\" ]\n    flow:\n      - name: book\n        method: POST\n        path: /book\n        extract: {{ job: \"header:Location\" }}\n        complete: {{ get: \"{{{{job}}}}\", until: '$.state == \"CONFIRMED\"', every: 50ms, within: 5s }}\n",
            srv.url("")
        ),
    )
    .unwrap();
    let (code, r, out) = run(&[plan.to_str().unwrap()]);
    assert_eq!(code, Some(1), "async.max < 200ms cannot hold: {out}");
    let s = &r["scenarios"][0];
    let a = &s["async"];
    assert_eq!(
        (
            a["completed"].as_u64(),
            a["failed"].as_u64(),
            a["timed_out"].as_u64()
        ),
        (Some(19), Some(1), Some(0)),
        "{a}"
    );
    let p50 = a["latency_ms"]["p50"].as_f64().unwrap();
    assert!(
        (300.0..=300.0 + 50.0 + 100.0).contains(&p50),
        "a job takes 300 ms, polled every 50 ms: {a}"
    );
    assert!(
        a["latency_ms"]["max"].as_f64().unwrap() >= 1000.0,
        "Retry-After: 1 was honoured: {a}"
    );
    // The polls are apart from the load: the request latency is the 202's, and they are not
    // counted as requests.
    assert_eq!(s["summary"]["requests"], 20);
    assert!(
        s["summary"]["latency_ms"]["p99"].as_f64().unwrap() < 100.0,
        "{}",
        s["summary"]
    );
    assert!(polls.load(std::sync::atomic::Ordering::Relaxed) >= 19 * 5);
    let slo: Vec<(&str, bool)> = s["slo"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["metric"].as_str().unwrap(), x["pass"].as_bool().unwrap()))
        .collect();
    assert_eq!(slo, [("async.p50", true), ("async.max", false)]);
    assert!(
        out.contains("async         19 completed, 1 failed, 0 timed out"),
        "{out}"
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");

    // Over two workers, each follows its own bookings' jobs; the result counts them all.
    let (code, r, out) = run(&[plan.to_str().unwrap(), "--workers", "2"]);
    assert_eq!(code, Some(1), "{out}");
    let a = &r["scenarios"][0]["async"];
    let counts = ["completed", "failed", "timed_out"].map(|k| a[k].as_u64());
    assert_eq!(counts, [Some(19), Some(1), Some(0)], "{a}");
    assert!(a["latency_ms"]["max"].as_f64().unwrap() >= 1000.0, "{a}");
}

#[test]
fn a_queue_lag_series_says_when_the_work_drained() {
    // The lag is 0 before the load too: only a poll after the last response may end the wait.
    let (handler, pipeline) = testkit::handlers::pipeline(400.0);
    let srv = testkit::serve(handler).unwrap();
    let (code, r, out) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "400",
        "-c",
        "20",
        "--complete-when",
        "/metrics until prometheus: sum(queue_lag) == 0",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let c = &r["scenarios"][0]["completion"];
    let expected =
        (pipeline.sold_out_at(400).unwrap() - pipeline.first_booking().unwrap()).as_secs_f64();
    let complete = c["complete_s"].as_f64().unwrap();
    assert!(
        complete >= expected - 0.02 && complete <= expected + 0.1 + 0.05 * expected,
        "{complete} vs {expected}: {c}"
    );
    assert!(complete >= c["responses_done_s"].as_f64().unwrap());
    assert_eq!(c["last_value"], "0.0");
}

#[test]
fn probes_poll_over_tls_with_the_runs_options() {
    // The pipeline behind TLS (a certificate only --cacert makes trusted): the scenario's
    // probe and a step's completion both poll https:// as the load does.
    let (handler, _) = testkit::handlers::pipeline(1000.0);
    let srv = testkit::serve_with(
        testkit::Options {
            tls: true,
            ..testkit::Options::default()
        },
        handler,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, srv.cert_pem.as_deref().unwrap()).unwrap();
    let (code, r, out) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "100",
        "--cacert",
        ca.to_str().unwrap(),
        "--complete-when",
        "/sold until $.sold >= 100",
    ]);
    assert_eq!(code, Some(0), "{out}");
    let c = &r["scenarios"][0]["completion"];
    assert_eq!(
        (c["complete"].as_bool(), c["failed_polls"].as_u64()),
        (Some(true), Some(0)),
        "{c}"
    );
    // --insecure reaches the probe as it reaches the load.
    let (_, r, _) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "5",
        "--insecure",
        "--complete-when",
        &format!("{} until $.sold >= 5", srv.url("/sold")),
        "--complete-within",
        "1s",
    ]);
    assert_eq!(
        r["scenarios"][0]["completion"]["complete"], true,
        "--insecure reaches the probe too"
    );
}

#[test]
fn the_completion_chart_and_the_trace_table_draw_in_a_browser() {
    let (handler, _) = testkit::handlers::pipeline(500.0);
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let (code, _, out) = run(&[
        &srv.url("/book"),
        "-m",
        "POST",
        "-n",
        "300",
        "--complete-when",
        "/sold until $.sold >= 300",
        "--trace",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<p>Completion: complete at") && page.contains("($.sold &gt;= 300)"),
        "the completion line"
    );
    assert!(
        page.contains("Slowest requests (trace ids)"),
        "the trace table"
    );
    if let Some(seen) = crate::reports::open_in_browser(&html) {
        crate::reports::assert_page_sound(&html, &seen, 4);
    }
}
