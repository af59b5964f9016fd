//! `--trace`: every request carries a valid, distinct W3C `traceparent` (HTTP/1.1, HTTP/2 and
//! gRPC) and a baggage naming the run; the result's slowest requests are exactly the ones the
//! server delayed and its first failed ones the ones it failed; links reach the terminal and
//! the HTML escaped.

use assert_cmd::Command;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Reply, Req};

/// Request arrival number -> (traceparent, baggage) as the server saw them.
type Seen = Arc<Mutex<HashMap<u64, (String, String)>>>;

/// Delays arrivals 5, 17 and 33 by 150 ms and answers 503 to arrivals 40-44.
fn recording() -> (testkit::Handler, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let handler: testkit::Handler = Arc::new(move |r: &Req| {
        let h = |n: &str| r.header(n).unwrap_or("").to_string();
        s.lock()
            .unwrap()
            .insert(r.seq, (h("traceparent"), h("baggage")));
        match r.seq {
            5 | 17 | 33 => Reply::ok("slow\n", Duration::from_millis(150)),
            40..=44 => Reply::status(503),
            _ => Reply::ok("ok\n", Duration::ZERO),
        }
    });
    (handler, seen)
}

/// The trace id of a valid `traceparent`, or why it is not one.
fn trace_id(tp: &str) -> Result<String, String> {
    let parts: Vec<&str> = tp.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    match parts.as_slice() {
        ["00", id, span, "01" | "00"] if hex(id, 32) && hex(span, 16) && *id != "0".repeat(32) => {
            Ok((*id).to_string())
        }
        _ => Err(format!("invalid traceparent '{tp}'")),
    }
}

fn run(args: &[&str]) -> (Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = crate::support::brink_json(&all);
    (r.result, r.stdout)
}

#[test]
fn the_slowest_and_failed_trace_ids_are_the_ones_the_server_saw() {
    let (handler, seen) = recording();
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let link = "http://jaeger.local:16686/trace/{trace_id}?x=\"><script>alert(1)</script>";
    let (r, out) = run(&[
        &srv.url("/"),
        "-n",
        "100",
        "-c",
        "4",
        "--trace",
        "--trace-link",
        link,
        "--html",
        html.to_str().unwrap(),
    ]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 100);
    let ids: HashMap<u64, String> = seen
        .iter()
        .map(|(seq, (tp, _))| (*seq, trace_id(tp).unwrap()))
        .collect();
    let distinct: BTreeSet<&String> = ids.values().collect();
    assert_eq!(distinct.len(), 100, "every request has its own trace id");
    assert!(
        seen.values().all(|(tp, _)| tp.ends_with("-01")),
        "all sampled by default"
    );
    let (_, baggage) = &seen[&0];
    assert!(
        baggage.starts_with("brink.run=") && baggage.ends_with(",brink.scenario=GET%20%2F"),
        "{baggage}"
    );

    let t = &r["scenarios"][0]["traces"];
    let listed = |key: &str| -> Vec<String> {
        t[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["trace_id"].as_str().unwrap().to_string())
            .collect()
    };
    let slowest = listed("slowest");
    assert_eq!(slowest.len(), 20);
    let delayed: BTreeSet<&String> = [5, 17, 33].iter().map(|s| &ids[s]).collect();
    assert_eq!(slowest[..3].iter().collect::<BTreeSet<_>>(), delayed, "{t}");
    assert!(t["slowest"][0]["latency_ms"].as_f64().unwrap() >= 150.0);
    let failed = listed("failed");
    let failing: BTreeSet<&String> = (40..=44).map(|s| &ids[&s]).collect();
    assert_eq!(failed.iter().collect::<BTreeSet<_>>(), failing, "{t}");
    assert!(t["failed"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["outcome"] == "503"));
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");

    // The terminal lists the slowest with their links; the HTML links them, escaped.
    assert!(
        out.contains(&format!("http://jaeger.local:16686/trace/{}", slowest[0])),
        "{out}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&format!(
        "<a href=\"http://jaeger.local:16686/trace/{}?x=&quot;&gt;&lt;script&gt;",
        slowest[0]
    )));
    assert!(!page.contains("<script>alert(1)"), "the link is escaped");
}

#[test]
fn http2_and_grpc_requests_carry_trace_context_and_a_ratio_samples() {
    let (handler, seen) = recording();
    let srv = testkit::serve_hyper(testkit::Options::default(), handler).unwrap();
    let (r, _) = run(&[
        &srv.url("/"),
        "--http2",
        "-n",
        "200",
        "-c",
        "4",
        "--trace=0.25",
    ]);
    assert_eq!(r["scenarios"][0]["traces"]["ratio"], 0.25);
    let seen = seen.lock().unwrap();
    let ids: BTreeSet<String> = seen.values().map(|(tp, _)| trace_id(tp).unwrap()).collect();
    assert_eq!(ids.len(), 200);
    let sampled = seen.values().filter(|(tp, _)| tp.ends_with("-01")).count();
    assert!(
        (20..=80).contains(&sampled),
        "{sampled} of 200 sampled at 0.25"
    );

    let metadata: Arc<Mutex<Vec<String>>> = Arc::default();
    let m = metadata.clone();
    let grpc = testkit::grpc::serve_grpc(
        testkit::Options::default(),
        Arc::new(move |c: &testkit::grpc::Call| {
            let tp = c.metadata.iter().find(|(n, _)| n == "traceparent");
            m.lock()
                .unwrap()
                .push(tp.map(|(_, v)| v.clone()).unwrap_or_default());
            testkit::grpc::Answer::ok(crate::grpc::REPLY.to_vec())
        }),
    )
    .unwrap();
    let proto = crate::grpc::greeter();
    let (r, _) = run(&[
        &format!("grpc://{}", grpc.addr),
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "30",
        "--trace",
    ]);
    assert_eq!(r["summary"]["ok"], 30);
    let ids: BTreeSet<String> = metadata
        .lock()
        .unwrap()
        .iter()
        .map(|tp| trace_id(tp).unwrap())
        .collect();
    assert_eq!(ids.len(), 30);
    assert_eq!(r["scenarios"][0]["traces"]["slowest"][0]["outcome"], "OK");
}

#[test]
fn bad_trace_flags_are_one_line() {
    for (args, says) in [
        (vec!["--trace=1.5"], "between 0 and 1"),
        (
            vec!["--trace-link", "http://x/{trace_id}"],
            "--trace-link needs --trace",
        ),
        (vec!["--trace", "--trace-link", "http://x/"], "{trace_id}"),
    ] {
        let out = crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .args(["run", "-n", "1"])
            .args(&args)
            .arg("http://127.0.0.1:1/")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_plan_traces_its_scenarios_and_names_them_in_the_baggage() {
    let (handler, seen) = recording();
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\ndefaults: {{ trace: true }}\nscenarios:\n  - name: 'check out, v2'\n    load: {{ connections: 1, requests: 3 }}\n  - name: bad\n    trace: 2\n",
            srv.url("/")
        ),
    )
    .unwrap();
    let out = crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(["run", plan.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "trace: 2 is refused before any load"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("trace: '2' is not a share"));
    assert!(seen.lock().unwrap().is_empty());
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replace("  - name: bad\n    trace: 2\n", "")).unwrap();
    let (r, _) = run(&[plan.to_str().unwrap(), "-q"]);
    assert_eq!(
        r["scenarios"][0]["traces"]["slowest"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.values()
            .all(|(tp, b)| trace_id(tp).is_ok()
                && b.ends_with(",brink.scenario=check%20out%2C%20v2")),
        "{seen:?}"
    );
}
