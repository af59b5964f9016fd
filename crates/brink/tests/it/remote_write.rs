//! `--out prometheus=URL`: a run writes its metrics into a real Prometheus (Debian's, with its
//! remote-write receiver on) and PromQL then gives exactly the result's counts; a store that
//! answers 500 or is down for a while loses nothing once it is back; one that never takes
//! them costs a warning, never the run or its exit code; a bad `--out` is one line, exit 2.

use crate::prom::{bucket, free_port, Prom};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `brink run URL ARGS --json r.json -q --no-history`: the output and the result.
fn run(url: &str, args: &[&str], dir: &std::path::Path) -> (Output, serde_json::Value) {
    let json = dir.join("r.json");
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["run", url, "-q", "--no-history"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("brink runs");
    let r = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, r)
}

#[test]
fn a_real_prometheus_holds_exactly_what_the_run_measured() {
    if !crate::prom::available() {
        return;
    }
    let _cpu = crate::support::cpu_light();
    let prom = Prom::start(free_port(), None, true);
    let srv = testkit::serve(testkit::handlers::faults()).expect("server");
    let dir = tempfile::tempdir().unwrap();
    let write = format!("prometheus=http://127.0.0.1:{}/api/v1/write", prom.web);
    let (out, r) = run(
        &srv.url("/mix"),
        &[
            "--rate",
            "100",
            "-d",
            "3s",
            "--timeout",
            "300ms",
            "--out",
            &write,
            "--tag",
            "team=checkout",
        ],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("remote write"), "{err}");
    assert!(
        err.contains("does not take native histograms") && err.contains("classic histogram only"),
        "a Prometheus without the feature refuses them, and brink says what it sent: {err}"
    );
    let s = &r["summary"];
    let last = |series: &str| prom.query(&format!("max_over_time({series}[5m])"));
    let team = "team=\"checkout\"";
    assert_eq!(
        last(&format!("brink_requests_total{{{team}}}")),
        s["requests"].as_f64().unwrap()
    );
    for (code, n) in s["status"].as_object().unwrap() {
        let got = last(&format!("brink_responses_total{{status=\"{code}\"}}"));
        assert_eq!(got, n.as_f64().unwrap(), "status {code}");
    }
    let mut failed = 0.0;
    for (kind, n) in s["errors_by_kind"].as_object().unwrap() {
        let got = last(&format!("brink_errors_total{{kind=\"{kind}\"}}"));
        assert_eq!(got, n.as_f64().unwrap(), "errors {kind}");
        failed += got;
    }
    assert!(failed > 0.0, "the mix has transport errors");
    let answered = answered(s);
    assert_eq!(failed + answered, s["requests"].as_f64().unwrap());
    let estimate = prom.query(
        "histogram_quantile(0.99, sum by (le) (max_over_time(brink_request_duration_seconds_bucket[5m])))",
    );
    let p99 = s["latency_ms"]["p99"].as_f64().unwrap() / 1000.0;
    assert!(
        bucket(estimate).abs_diff(bucket(p99)) <= 1,
        "PromQL p99 {estimate} s, the result's {p99} s"
    );
    // Without native histograms the dashboard's p99 falls back to the classic buckets.
    let shown = prom.query(&dashboard_p99(&prom));
    assert!(
        bucket(shown).abs_diff(bucket(p99)) <= 1,
        "dashboard p99 {shown} s, the result's {p99} s"
    );
    every_second_arrived(&prom, &r);
    assert!(prom.query("max_over_time(brink_scenario_end_timestamp_seconds[5m])") > 1.7e9);
    assert!(prom.query("max_over_time(brink_cpu_seconds_total[5m])") > 0.0);
    assert_eq!(last("brink_load_target"), 100.0);
}

/// A store that takes native histograms gets them beside the classic ones: PromQL's
/// `histogram_quantile` over the native histogram lands within one native bucket (9%) of the
/// result's p99, where the classic buckets can only say "between 0.5 and 1 ms"; its count is
/// the result's responses exactly.
#[test]
fn a_store_that_takes_native_histograms_gets_them() {
    if !crate::prom::available() {
        return;
    }
    let _cpu = crate::support::cpu_light();
    let prom = Prom::start_native(free_port());
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_micros(600))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = format!("prometheus=http://127.0.0.1:{}/api/v1/write", prom.web);
    let (out, r) = run(
        &srv.url("/"),
        &["--rate", "200", "-d", "3s", "--out", &write],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("remote write") && !err.contains("native"),
        "{err}"
    );
    let s = &r["summary"];
    let answered = answered(s);
    assert_eq!(
        prom.query("histogram_count(brink_request_duration_seconds)"),
        answered
    );
    for q in [0.5, 0.99] {
        let native = prom.query(&format!(
            "histogram_quantile({q}, brink_request_duration_seconds)"
        ));
        let key = if q == 0.5 { "p50" } else { "p99" };
        let measured = s["latency_ms"][key].as_f64().unwrap() / 1000.0;
        assert!(
            (native / measured - 1.0).abs() < 0.10,
            "{key}: PromQL on the native histogram {native} s, the result's {measured} s"
        );
    }
    // The classic histogram went too, for dashboards written for it.
    assert!(prom.query("max_over_time(brink_request_duration_seconds_count[5m])") == answered);
    // The shipped dashboard's p99 reads the native histogram here (the classic buckets could
    // only say "between 0.5 and 1 ms"). It is a rate over a 1 m window, which leaves out the
    // first push's observations: it is held to the native histogram's p99 over that same
    // window, not to the whole run's (a stall in the first second once made them 3.0 and
    // 3.9 ms apart).
    let windowed =
        prom.query("histogram_quantile(0.99, sum(rate(brink_request_duration_seconds[1m])))");
    let shown = prom.query(&dashboard_p99(&prom));
    assert!(
        (shown / windowed - 1.0).abs() < 0.10,
        "dashboard p99 {shown} s, the native histogram's over its window {windowed} s"
    );
}

/// The dashboard's p99 query for the one run in `prom`, over the last minute.
fn dashboard_p99(prom: &Prom) -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/grafana/brink.json");
    let text = std::fs::read_to_string(path).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    let expr = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .find(|e| e.starts_with("histogram_quantile(0.99"))
        .expect("a p99 panel");
    let run = prom.results("brink_run_info")[0]["metric"]["run"]
        .as_str()
        .unwrap()
        .to_string();
    expr.replace("$run", &run).replace("$__rate_interval", "1m")
}

/// Responses (of any status) in a result's summary.
fn answered(s: &serde_json::Value) -> f64 {
    s["status"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|n| n.as_f64())
        .sum()
}

/// Every snapshot is in the store, in order: `brink_seconds_total` was written when the
/// scenario started (0), after each merged second (1..N) and when it ended (N).
fn every_second_arrived(prom: &Prom, r: &serde_json::Value) {
    let n = r["timeseries"].as_array().map_or(0, Vec::len) as f64;
    let got: Vec<f64> = prom.results("brink_seconds_total[5m]")[0]["values"]
        .as_array()
        .expect("samples")
        .iter()
        .filter_map(|v| v[1].as_str().and_then(|x| x.parse().ok()))
        .collect();
    let mut want: Vec<f64> = (0..=n as u64).map(|i| i as f64).collect();
    want.push(n);
    assert_eq!(got, want);
}

/// A raw HTTP server on `listener` that reads each request whole and answers `status` (0:
/// never answers, holding the connection), until `stop`; counts the requests.
fn store(listener: TcpListener, status: u16, stop: Arc<AtomicBool>) -> Arc<AtomicU64> {
    let seen = Arc::new(AtomicU64::new(0));
    let counted = seen.clone();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let whole = loop {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break true;
                    }
                }
            };
            if whole && status == 0 {
                // Never answers: holds the connection until the test ends.
                counted.fetch_add(1, Ordering::Relaxed);
                held.push(s);
            } else if whole {
                counted.fetch_add(1, Ordering::Relaxed);
                let _ = s.write_all(
                    format!("HTTP/1.1 {status} Nope\r\nContent-Length: 5\r\nConnection: close\r\n\r\nnope\n")
                        .as_bytes(),
                );
            }
        }
    });
    seen
}

/// The store answers 500 for the first seconds, then nothing listens, then Prometheus starts
/// on the same port: every second arrives in the end, the failure is said once, and the run
/// ends as it would have without `--out`.
#[test]
fn a_store_that_fails_for_a_while_loses_nothing() {
    if !crate::prom::available() {
        return;
    }
    let _cpu = crate::support::cpu_light();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let web = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let failing = store(listener, 500, stop.clone());
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).expect("server");
    let dir = tempfile::tempdir().unwrap();
    let write = format!("prometheus=http://127.0.0.1:{web}/api/v1/write");
    let url = srv.url("/");
    let brink = std::thread::spawn({
        let path = dir.path().to_path_buf();
        move || run(&url, &["--rate", "50", "-d", "6s", "--out", &write], &path)
    });
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(1800));
    stop.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(1200));
    assert!(failing.load(Ordering::Relaxed) >= 1, "the store was asked");
    let prom = Prom::start(web, None, true);
    let (out, r) = brink.join().expect("brink ends");
    assert!(started.elapsed() < Duration::from_secs(25));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("answered 500: nope").count(), 1, "{err}");
    assert!(err.contains("every second delivered"), "{err}");
    assert!(r["timeseries"].as_array().map_or(0, Vec::len) >= 6);
    every_second_arrived(&prom, &r);
    assert_eq!(
        prom.query("max_over_time(brink_requests_total[5m])"),
        r["summary"]["requests"].as_f64().unwrap()
    );
}

/// A store that never takes the metrics (500 forever, 400: refused for good, or one that
/// never answers) costs a warning and a closing line; the run, its result and its exit code are as without it, and
/// the wait for the store at the end is bounded.
#[test]
fn a_store_that_never_takes_them_never_changes_the_run() {
    // Its only clock is a watchdog (20 s over a 10 s flush bound: twice the work), taken
    // before the clock starts: shared.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    for (status, says) in [
        (500, "answered 500"),
        (400, "answered 400"),
        (0, "no answer"),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = store(listener, status, stop.clone());
        let dir = tempfile::tempdir().unwrap();
        let write = format!("prometheus=http://127.0.0.1:{port}/api/v1/write");
        let started = Instant::now();
        let (out, r) = run(
            &srv.url("/"),
            &[
                "-n",
                "200",
                "-c",
                "2",
                "--out",
                &write,
                "--out-header",
                "X-Scope-OrgID: team-a",
            ],
            dir.path(),
        );
        stop.store(true, Ordering::Relaxed);
        assert!(started.elapsed() < Duration::from_secs(20), "{status}");
        assert_eq!(out.status.code(), Some(0), "{status}");
        assert_eq!(r["summary"]["requests"], 200, "{status}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches(says).count(),
            2,
            "said once, then in the closing line: {err}"
        );
        assert!(err.contains("not delivered"), "{err}");
        assert!(seen.load(Ordering::Relaxed) >= 1, "{status}");
    }
}

#[test]
fn a_bad_out_is_one_line_before_any_load() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    for (args, says) in [
        (
            vec!["--out", "influx=http://127.0.0.1:1/"],
            "unknown kind 'influx'",
        ),
        (vec!["--out", "http://127.0.0.1:1/"], "expected KIND=URL"),
        (
            vec!["--out", "prometheus=grpc://127.0.0.1:1/"],
            "http:// or https://",
        ),
        (vec!["--out", "prometheus=ftp://x/"], "unsupported scheme"),
        (vec!["--out-header", "A: b"], "--out-header goes with --out"),
        (
            vec![
                "--out",
                "prometheus=http://127.0.0.1:1/",
                "--out-header",
                "A: b\r\nEvil: 1",
            ],
            "--out-header",
        ),
        (
            vec!["--out", "prometheus=http://127.0.0.1:1/", "--tag", "le=x"],
            "--tag le=...",
        ),
    ] {
        let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args(["run", &srv.url("/"), "-n", "5", "-q", "--no-history"])
            .args(&args)
            .output()
            .expect("brink runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.trim().lines().count() == 1 && err.contains(says),
            "{args:?}: {err}"
        );
        assert_eq!(srv.counters.requests(), 0, "{args:?}: no load");
    }
}

/// `brink find --out`: each step is a scenario in the store (`step N`), with its level and,
/// once judged, its verdict, the same as the result's steps.
#[test]
fn a_search_writes_each_step_and_its_verdict() {
    if !crate::prom::available() {
        return;
    }
    let _cpu = crate::support::cpu_light();
    let prom = Prom::start(free_port(), None, true);
    // Two slots of 40 ms: p99 under 60 ms holds at 1 and 2 connections, not at 4.
    let srv = testkit::serve_with(
        testkit::Options {
            slots: Some(2),
            ..testkit::Options::default()
        },
        Arc::new(|_: &testkit::Req| testkit::Reply::Full {
            status: 200,
            body: b"ok".to_vec(),
            delay: Duration::from_millis(40),
            slot: true,
            close: false,
        }),
    )
    .expect("server");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("f.json");
    let write = format!("prometheus=http://127.0.0.1:{}/api/v1/write", prom.web);
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "find",
            &srv.url("/"),
            "-q",
            "--no-history",
            "--slo",
            "p99<60ms",
        ])
        .args([
            "--step",
            "2s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
            "--to",
            "8",
        ])
        .args(["--out", &write, "--json"])
        .arg(&json)
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("remote write"), "{err}");
    let r: serde_json::Value = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| panic!("no result: {err}"));
    let steps = r["find"]["steps"].as_array().expect("steps");
    assert!(steps.len() >= 2, "{r}");
    // The store holds every step of the search, and no other.
    let stored = prom.query("count(count by (scenario) (last_over_time(brink_step_pass[5m])))");
    assert_eq!(stored, steps.len() as f64, "{r}");
    for (i, step) in steps.iter().enumerate() {
        let name = format!("step {}", i + 1);
        let sel = format!("{{scenario=\"{name}\"}}");
        let pass = prom.query(&format!("last_over_time(brink_step_pass{sel}[5m])"));
        assert_eq!(
            pass == 1.0,
            step["pass"].as_bool().unwrap(),
            "{name}: {step}"
        );
        let level = prom.query(&format!("last_over_time(brink_load_target{sel}[5m])"));
        assert_eq!(level, step["level"].as_f64().unwrap(), "{name}");
    }
    assert!(
        steps.iter().any(|s| s["pass"] == false),
        "the search found the limit: {}",
        r["find"]["stopped"]
    );
}

/// `--out prometheus=https://...`: the store's certificate is checked against the system's
/// CAs (here the test CA, through `SSL_CERT_FILE`), and every request carries the protocol's
/// headers and the user's `--out-header`.
#[test]
fn remote_write_over_tls_sends_the_protocol_and_user_headers() {
    type Seen = Vec<(String, Vec<(String, String)>, usize)>;
    let seen: Arc<std::sync::Mutex<Seen>> = Arc::default();
    let kept = seen.clone();
    let store = testkit::serve_with(
        testkit::Options {
            tls: true,
            ..testkit::Options::default()
        },
        Arc::new(move |r: &testkit::Req| {
            if let Ok(mut s) = kept.lock() {
                s.push((r.path.to_string(), r.headers.to_vec(), r.body.len()));
            }
            testkit::Reply::status(204)
        }),
    )
    .expect("store");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, store.cert_pem.as_ref().expect("a certificate")).unwrap();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let write = format!(
        "prometheus=https://127.0.0.1:{}/api/v1/write",
        store.addr.port()
    );
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "50",
            "-d",
            "2s",
            "-q",
            "--no-history",
        ])
        .args(["--out", &write, "--out-header", "X-Scope-OrgID: team-a"])
        .env("SSL_CERT_FILE", &ca)
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("remote write"), "{err}");
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{} requests", seen.len());
    for (path, headers, len) in seen.iter() {
        let h = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(path, "/api/v1/write");
        assert_eq!(h("content-encoding"), Some("snappy"));
        assert_eq!(h("content-type"), Some("application/x-protobuf"));
        assert_eq!(h("x-prometheus-remote-write-version"), Some("0.1.0"));
        assert_eq!(h("x-scope-orgid"), Some("team-a"));
        assert!(*len > 100, "{len} bytes");
    }
}
