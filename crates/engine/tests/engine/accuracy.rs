//! Accuracy against servers whose truth is known: a fixed service time (compared with wrk when
//! it is installed), and a server that freezes 1 s in every 5 s, where only a tool that measures
//! from the intended start sees the freeze (coordinated omission).

use crate::common::{closed, open, rel, run, spec};
use std::process::Command;
use std::time::Duration;
use testkit::handlers;

#[test]
fn coordinated_omission_is_corrected() {
    // A verdict on time with a light load (about a tenth of a CPU, measured): beside other
    // light tests only.
    let _cpu = crate::common::cpu_light();
    let srv = testkit::serve(handlers::pausing(
        Duration::from_secs(5),
        Duration::from_secs(1),
    ))
    .unwrap();
    // 10 s at 1000/s: 20% of intended starts fall in a freeze and wait out its rest, uniformly
    // 0..1 s. So p90 is the median of that wait (~500 ms) and p99 its 95th percentile (~950 ms).
    let out = run(&spec(&srv.url("/"), open(1000.0, 10.0, 100)));
    let s = results::summary_json(
        &out.totals,
        results::Span::of(out.duration, out.scheduled),
        0,
        None,
    );
    assert_eq!(s.requests, 10_000);
    assert!(
        (400.0..=600.0).contains(&s.latency_ms.p90),
        "p90 {} ms",
        s.latency_ms.p90
    );
    assert!(
        (880.0..=1010.0).contains(&s.latency_ms.p99),
        "p99 {} ms",
        s.latency_ms.p99
    );
    let all = &out.totals.all;
    assert!(
        all.late > 1000,
        "requests queued behind the freeze are reported late: {}",
        all.late
    );
    assert!(all.max_lag_us > 800_000, "worst lag {} us", all.max_lag_us);
    // Service time (from the actual send) hides the freeze for most requests: the queued ones
    // were sent when the server came back.
    assert!(
        s.service_time_ms.p50 < 50.0,
        "service p50 {}",
        s.service_time_ms.p50
    );
}

fn wrk_available() -> bool {
    Command::new("wrk").arg("--version").output().is_ok()
}

#[test]
fn agrees_with_wrk_on_a_fixed_service_time() {
    // A verdict on time with a light load (about a tenth of a CPU, measured): beside other
    // light tests only.
    let _cpu = crate::common::cpu_light();
    if !wrk_available() {
        assert!(
            std::env::var_os("BRINK_REQUIRE_WRK").is_none(),
            "wrk is required here but not installed"
        );
        eprintln!("wrk not installed: skipping the side-by-side comparison");
        return;
    }
    let srv = testkit::serve(handlers::fixed(Duration::from_millis(10))).unwrap();
    let out = run(&spec(&srv.url("/"), closed(20, Some(3.0))));
    let s = results::summary_json(
        &out.totals,
        results::Span::of(out.duration, out.scheduled),
        0,
        None,
    );
    let wrk = Command::new("wrk")
        .args(["-t2", "-c20", "-d3s", "--latency", &srv.url("/")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&wrk.stdout);
    let rps: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let p50 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("50%"))
        .unwrap()
        .trim()
        .to_string();
    let p50_ms = if let Some(v) = p50.strip_suffix("ms") {
        v.parse::<f64>().unwrap()
    } else {
        p50.trim_end_matches('s').parse::<f64>().unwrap() * 1000.0
    };
    assert!(
        rel(s.rps, rps) < 0.05,
        "brink {:.0} req/s vs wrk {rps:.0}",
        s.rps
    );
    assert!(
        rel(s.latency_ms.p50, p50_ms) < 0.05,
        "brink p50 {:.2} ms vs wrk {p50_ms:.2}",
        s.latency_ms.p50
    );
    // And both agree with the truth: 20 connections / ~10 ms.
    assert!(
        s.latency_ms.p50 >= 10.0 && s.latency_ms.p50 < 12.5,
        "p50 {}",
        s.latency_ms.p50
    );
}
