//! `--metrics-listen`: what a scraper reads during a run adds up to the result exactly, and
//! the endpoint keeps to the rules (a token beyond loopback and when given, label names
//! checked before any load).

use crate::prom::{bucket, free_port, Prom};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `GET /metrics` with an optional bearer token: (status, body), or `None` when nothing
/// answers.
pub(crate) fn scrape(port: u16, token: Option<&str>) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let req =
        format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.get(9..12)?.parse().ok()?;
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// The status of `GET /metrics` sent with `Host: host`.
fn status_for_host(port: u16, host: &str) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let req = format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.get(9..12)?.parse().ok()
}

/// The value of the one sample of `name` whose labels contain every one of `with`.
pub(crate) fn value(body: &str, name: &str, with: &[&str]) -> f64 {
    let lines: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && with.iter().all(|w| l.contains(w)))
        .collect();
    assert_eq!(lines.len(), 1, "{name} {with:?}: {lines:?}");
    lines[0]
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a number")
}

#[test]
fn what_a_scraper_reads_adds_up_to_the_result() {
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(2))).expect("server");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let port = free_port();
    let mut child = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "100",
            "-d",
            "3s",
            "-q",
            "--no-history",
        ])
        .args([
            "--metrics-listen",
            &format!("127.0.0.1:{port}"),
            "--metrics-linger",
            "2s",
        ])
        .args(["--tag", "team=checkout"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("brink starts");
    let start = Instant::now();
    let (mut last, mut scrapes) = (None, 0);
    while child.try_wait().expect("status").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "brink did not end"
        );
        if let Some((200, body)) = scrape(port, None) {
            last = Some(body);
            scrapes += 1;
            if scrapes == 1 {
                // A page on a name rebound to 127.0.0.1 cannot read the run.
                assert_eq!(status_for_host(port, "evil.example"), Some(403));
                assert_eq!(
                    status_for_host(port, &format!("localhost:{port}")),
                    Some(200)
                );
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(scrapes > 10, "scraped {scrapes} times");
    let body = last.expect("a scrape");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &r["summary"];
    let team = "team=\"checkout\"";
    assert_eq!(
        value(&body, "brink_requests_total", &[team]),
        s["requests"].as_f64().unwrap()
    );
    assert_eq!(
        value(&body, "brink_responses_total", &["status=\"200\""]),
        s["status"]["200"].as_f64().unwrap()
    );
    assert_eq!(
        value(&body, "brink_errors_total", &["kind=\"timeout\""]),
        0.0
    );
    let counted: u64 = s["latency_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        value(&body, "brink_request_duration_seconds_count", &[]),
        counted as f64
    );
    assert_eq!(
        value(
            &body,
            "brink_request_duration_seconds_bucket",
            &["le=\"+Inf\""]
        ),
        counted as f64
    );
    // The buckets are cumulative, and a 2 ms service lands above the 1 ms bound.
    let le = |b: &str| {
        value(
            &body,
            "brink_request_duration_seconds_bucket",
            &[&format!("le=\"{b}\"")],
        )
    };
    assert!(le("0.001") <= le("0.0025") && le("0.0025") <= le("0.01") && le("0.01") <= le("+Inf"));
    assert_eq!(le("0.001"), 0.0, "{body}");
    // The gauge is the last second's p99: the result's last second with answers says the
    // same, from the same histogram.
    let p99 = value(&body, "brink_latency_seconds", &["quantile=\"0.99\""]);
    let rows = r["scenarios"][0]["timeseries"].as_array().unwrap();
    let last = rows
        .iter()
        .rev()
        .find(|row| row["requests"].as_u64() > Some(0))
        .unwrap();
    let want = last["p99"].as_f64().unwrap() / 1000.0;
    assert!(
        (p99 - want).abs() < 1e-6,
        "gauge {p99} s, last second {last}"
    );
    assert!(p99 >= 0.002, "a 2 ms service: {p99}");
    assert!(value(&body, "brink_scenario_end_timestamp_seconds", &[]) > 1.7e9);
    assert_eq!(
        value(&body, "brink_load_target", &[]),
        100.0,
        "the rate asked"
    );
    assert_eq!(value(&body, "brink_run_info", &[team]), 1.0);
    assert_eq!(
        value(&body, "brink_seconds_total", &[]),
        r["scenarios"][0]["timeseries"].as_array().unwrap().len() as f64
    );
}

#[test]
fn the_endpoint_keeps_to_its_rules() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let brink = |args: &[&str]| {
        Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args([
                "run",
                "http://127.0.0.1:9/",
                "-n",
                "1",
                "-q",
                "--no-history",
            ])
            .args(args)
            .output()
            .expect("brink runs")
    };
    // Refused before any load, in one line.
    for (args, says) in [
        (
            vec!["--metrics-listen", "0.0.0.0:0"],
            "--metrics-token-file",
        ),
        (
            vec!["--metrics-listen", "127.0.0.1:0", "--tag", "le=1"],
            "a metrics label",
        ),
        (
            vec!["--metrics-listen", "127.0.0.1:0", "--tag", "9x=1"],
            "a metrics label",
        ),
        (vec!["--metrics-listen", "nowhere"], "expected HOST:PORT"),
    ] {
        let o = brink(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.trim().lines().count() == 1 && err.contains(says),
            "{args:?}: {err}"
        );
    }
    // With a token, a scrape without it (or with another) is refused.
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let port = free_port();
    let mut child = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "20",
            "-d",
            "2s",
            "-q",
            "--no-history",
        ])
        .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
        .arg("--metrics-token-file")
        .arg(&token)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("brink starts");
    let start = Instant::now();
    let answered = loop {
        assert!(start.elapsed() < Duration::from_secs(10), "no endpoint");
        if let Some(a) = scrape(port, None) {
            break a;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(answered.0, 401, "{}", answered.1);
    assert_eq!(scrape(port, Some("wrong")).map(|a| a.0), Some(401));
    assert_eq!(scrape(port, Some("s3cret")).map(|a| a.0), Some(200));
    assert_eq!(child.wait().expect("ends").code(), Some(0));
}

/// A real Prometheus (Debian's) scrapes a run's endpoint: what PromQL answers afterwards is
/// the result's count exactly, and its `histogram_quantile` over brink's buckets lands within
/// one bucket of the result's p99.
#[test]
fn a_real_prometheus_scrapes_the_run() {
    if !crate::prom::available() {
        return;
    }
    let _cpu = crate::support::cpu_light();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let prom = Prom::start(free_port(), Some(port), false);
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(3))).expect("server");
    let json = dir.path().join("r.json");
    let status = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "100",
            "-d",
            "3s",
            "-q",
            "--no-history",
        ])
        .args([
            "--metrics-listen",
            &format!("127.0.0.1:{port}"),
            "--metrics-linger",
            "3s",
        ])
        .arg("--json")
        .arg(&json)
        .status()
        .expect("brink runs");
    assert_eq!(status.code(), Some(0));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let requests = prom.query("max_over_time(brink_requests_total[5m])");
    assert_eq!(requests, r["summary"]["requests"].as_f64().unwrap());
    let estimate = prom.query(
        "histogram_quantile(0.99, sum by (le) (max_over_time(brink_request_duration_seconds_bucket[5m])))",
    );
    let p99 = r["summary"]["latency_ms"]["p99"].as_f64().unwrap() / 1000.0;
    assert!(
        bucket(estimate).abs_diff(bucket(p99)) <= 1,
        "PromQL p99 {estimate} s, the result's {p99} s"
    );
}

/// The shipped Grafana dashboard (contrib/grafana/brink.json) is a well-formed dashboard
/// whose every query reads only what brink writes (and the service's standard `process_*`
/// series in its own row), filtered by the run, with every variable it uses defined.
#[test]
fn the_grafana_dashboard_queries_only_what_brink_writes() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/grafana/brink.json");
    let d: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the dashboard")).expect("JSON");
    for key in ["uid", "title", "schemaVersion", "panels", "templating"] {
        assert!(!d[key].is_null(), "{key}");
    }
    let vars: Vec<&str> = d["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    let mut exprs: Vec<(String, &str)> = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for p in d["panels"].as_array().unwrap() {
        assert!(
            ids.insert(p["id"].as_u64().expect("an id")),
            "ids are unique: {p}"
        );
        let g = &p["gridPos"];
        assert!(["x", "y", "w", "h"].iter().all(|k| g[k].is_u64()), "{p}");
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{p}");
        for t in p["targets"].as_array().expect("targets") {
            assert!(t["refId"].is_string(), "{t}");
            exprs.push((
                t["expr"].as_str().expect("expr").to_string(),
                p["title"].as_str().unwrap(),
            ));
        }
    }
    for a in d["annotations"]["list"].as_array().unwrap() {
        exprs.push((a["expr"].as_str().unwrap().to_string(), "annotation"));
    }
    let written = |name: &str| {
        metrics::FAMILIES.iter().any(|(f, kind)| {
            name == *f
                || (*kind == "histogram"
                    && ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|s| name == format!("{f}{s}")))
        })
    };
    let service = ["process_cpu_seconds_total", "process_resident_memory_bytes"];
    let mut seen = std::collections::BTreeSet::new();
    for (expr, panel) in &exprs {
        let names: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("brink_") || w.starts_with("process_"))
            .collect();
        assert!(!names.is_empty(), "{panel}: {expr}");
        for n in &names {
            seen.insert(n.to_string());
            if n.starts_with("brink_") {
                assert!(written(n), "{panel}: {n} is not a series brink writes");
                assert!(
                    expr.contains("run=\"$run\""),
                    "{panel}: not filtered by run: {expr}"
                );
            } else {
                assert!(service.contains(n), "{panel}: {n}");
            }
        }
        for var in expr.split('$').skip(1) {
            let v: String = var
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                v.starts_with("__") || vars.contains(&v.as_str()),
                "{panel}: ${v} is not defined"
            );
        }
    }
    // The load asked and achieved, the latency, the errors and the run markers are all shown.
    for must in [
        "brink_load_target",
        "brink_requests_total",
        "brink_latency_seconds",
        "brink_request_duration_seconds_bucket",
        "brink_errors_total",
        "brink_scenario_start_timestamp_seconds",
        "process_cpu_seconds_total",
    ] {
        assert!(seen.contains(must), "{must} is on no panel");
    }
}
