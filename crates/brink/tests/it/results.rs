//! Results are exact, mergeable data: each second of the timeseries carries its latency and
//! service-time histograms in the HdrHistogram interval-log form, and merging every second's
//! gives exactly the whole run's histogram and the summary's percentiles.

use std::time::Duration;

#[test]
fn merging_every_second_gives_the_summary_exactly() {
    let srv = testkit::serve(testkit::handlers::pausing(
        Duration::from_millis(400),
        Duration::from_millis(30),
    ))
    .expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.json");
    crate::support::held(assert_cmd::Command::cargo_bin("brink"))
        .expect("binary")
        .args(["run", &srv.url("/"), "-c", "4", "-d", "3s", "-q", "--json"])
        .arg(&out)
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("result")).expect("JSON");
    let s = &r["summary"];
    for (key, summary) in [
        ("latency_hdr", "latency_ms"),
        ("service_hdr", "service_time_ms"),
    ] {
        let whole = stats::decode(s[key].as_str().unwrap_or("")).expect("summary histogram");
        let mut merged = stats::new_histogram();
        let rows = r["timeseries"].as_array().expect("timeseries");
        assert!(rows.len() >= 3, "{} seconds", rows.len());
        for row in rows {
            let h = stats::decode(row[key].as_str().unwrap_or("")).expect("second histogram");
            merged.add(&h).expect("same bounds");
        }
        assert_eq!(merged, whole, "{key}: the seconds add up to the run");
        assert_eq!(merged.len(), s["requests"].as_u64().unwrap_or(0), "{key}");
        for p in ["p50", "p90", "p99", "p999", "max"] {
            let q = match p {
                "p50" => 0.5,
                "p90" => 0.9,
                "p99" => 0.99,
                "p999" => 0.999,
                _ => 1.0,
            };
            let ms = merged.value_at_quantile(q) as f64 / 1000.0;
            let reported = s[summary][p].as_f64().unwrap_or(f64::NAN);
            assert!(
                (ms - reported).abs() < 1e-9,
                "{key} {p}: {ms} vs {reported}"
            );
        }
    }
}
