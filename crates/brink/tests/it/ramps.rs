//! A ramp that breaks says where: the first window in which a windowed objective failed, the
//! rate asked for then, and whether the server's CPU explains it. A service that spends CPU on
//! every request under one lock breaks near its capacity with its CPU busy (CPU-bound by the search's
//! rule when that CPU is near its peak, which a busy test machine may prevent); the demo
//! service (eight slots that wait, not compute) breaks with its CPU mostly idle.

use crate::support::{brink_json, schema_problems, Killed, RESULT_SCHEMA};
use std::io::BufRead;

/// Ramps `url` to 50 req/s in a second, then to `to` req/s over 8 s, stopping at the first failing 2 s window of
/// p95 < 50 ms, observing `observe`; returns the scenario's `broke`.
fn ramp(url: &str, to: u32, observe: &str) -> (serde_json::Value, String) {
    let stages = format!("1s:50/s,8s:{to}/s");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let ran = brink_json(&[
        "run",
        url,
        "--html",
        html.to_str().unwrap(),
        "--stages",
        &stages,
        "-c",
        "200",
        "--slo",
        "p95<50ms over 2s abort",
        "--observe",
        observe,
    ]);
    let problems = schema_problems(RESULT_SCHEMA, &ran.result);
    assert!(problems.is_empty(), "{problems:?}");
    let sc = &ran.result["scenarios"][0];
    // The page says it too, the objective's '<' escaped.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<p class=\"bad\">Broke: &#39;p95 &lt; 50ms over 2s abort&#39; first failed"),
        "no Broke line in the page"
    );
    let mut broke = sc["broke"].clone();
    broke["peak_cpu"] = sc["observed"]["srv cpu"]["peak"].clone();
    (broke, ran.stdout)
}

/// The rate the ramp of [`ramp`] to `to` asks at `t` seconds.
fn asked(to: f64, t: f64) -> f64 {
    if t <= 1.0 {
        50.0 * t
    } else {
        50.0 + (to - 50.0) * (t - 1.0).min(8.0) / 8.0
    }
}

/// A break of the ramp to `to` against a service that takes `capacity` req/s: its level is
/// the rate asked over the failing window, which ends once the rate asked has passed the
/// capacity and begins before the service had long been past it (a 2 s window of p95 < 50 ms
/// fails within about a second of the queue starting to grow).
fn breaks_at_capacity(b: &serde_json::Value, to: f64, capacity: f64) {
    let (end, len) = (b["at_s"].as_f64().unwrap(), b["window_s"].as_f64().unwrap());
    // Each second of the window asks the rate of its start.
    let seconds = (0..len as u64).map(|i| asked(to, end - len + i as f64));
    let mean = seconds.sum::<f64>() / len;
    let level = b["level"].as_f64().unwrap();
    assert!(
        (level - mean).abs() <= 0.02 * mean,
        "level {level}, asked {mean}: {b}"
    );
    assert!(asked(to, end) >= 0.8 * capacity, "capacity {capacity}: {b}");
    assert!(
        asked(to, end - len) <= 1.25 * capacity,
        "capacity {capacity}: {b}"
    );
}

/// What the search's rule says of a break at `cpu` percent when the run's peak was `peak`.
fn rule(cpu: f64, peak: f64) -> serde_json::Value {
    if cpu >= 80.0 && cpu >= 0.9 * peak {
        true.into()
    } else if cpu < 60.0 {
        false.into()
    } else {
        serde_json::Value::Null
    }
}

#[test]
fn a_cpu_bound_service_breaks_near_its_capacity_and_says_cpu() {
    let _cpu = crate::support::cpu_exclusive();
    // A Python server spending 2 ms of CPU per request under its one lock: a few hundred
    // req/s at most, its CPU full from there on. It runs in a process of its own so that what
    // brink observes is that server alone, not this test process and the tests beside it.
    let srv = crate::support::PyServer::start(std::path::Path::new("python3"), 2);
    let pid = format!("pid={}", srv.child.id());
    // Its capacity on this machine now: as many answers a second as 8 connections get.
    let most = brink_json(&["run", &srv.url, "-c", "8", "-d", "3s", "--no-history"]);
    let capacity = most.result["summary"]["ok_rps"].as_f64().unwrap();
    assert!(capacity > 100.0, "{}", most.stdout);
    let (b, out) = ramp(&srv.url, 1000, &pid);
    assert_eq!(b["slo"], "p95 < 50ms over 2s abort", "{b}\n{out}");
    assert_eq!(
        (b["by"].as_str(), b["window_s"].as_u64()),
        (Some("rate"), Some(2))
    );
    breaks_at_capacity(&b, 1000.0, capacity);
    // What it answered over the window is what it can take.
    let ok = b["ok_rps"].as_f64().unwrap();
    assert!(
        (0.6 * capacity..1.25 * capacity).contains(&ok),
        "capacity {capacity}: {b}"
    );
    // The spinning thread was busy when it broke. Whether that reads as CPU-bound depends on
    // how near its peak it was (a busy machine takes CPU from it); the call follows the rule.
    let (cpu, peak) = (
        b["cpu_percent"].as_f64().unwrap(),
        b["peak_cpu"].as_f64().unwrap(),
    );
    assert!(cpu >= 40.0, "{b}");
    assert_eq!(b["cpu_bound"], rule(cpu, peak), "{b}");
    assert!(out.contains("broke         'p95 < 50ms over 2s abort' first failed in the 2 s up to"));
    // The words follow the call, whichever it was.
    let (said_bound, said_not) = (
        out.contains(": CPU-bound: the service needs more CPU"),
        out.contains(": not CPU-bound: the limit is elsewhere"),
    );
    let want = match b["cpu_bound"].as_bool() {
        Some(true) => (true, false),
        Some(false) => (false, true),
        None => (false, false),
    };
    assert_eq!((said_bound, said_not), want, "{b}\n{out}");
}

#[test]
fn a_service_short_of_workers_breaks_with_its_cpu_idle() {
    // A ramp to 4,000 req/s keeps brink busy: alone, so the service's CPU is its own.
    let _cpu = crate::support::cpu_exclusive();
    // The demo service: eight slots of a few ms, about 1,400 req/s here, waiting rather
    // than computing; brink observes its process.
    let mut demo = Killed(
        std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
            .args(["demo", "--serve", "0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("demo starts"),
    );
    let mut line = String::new();
    let stdout = demo.0.stdout.take().expect("piped");
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("demo prints its address");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("address in the first line")
        .to_string();
    let pid = format!("pid={}", demo.0.id());
    let url = format!("http://{addr}/api/items");
    // Its capacity here: as many answers a second as 32 connections get (its eight slots
    // sleep a log-normal time, and the timer's granularity adds to it).
    let most = brink_json(&["run", &url, "-c", "32", "-d", "3s", "--no-history"]);
    let capacity = most.result["summary"]["ok_rps"].as_f64().unwrap();
    assert!(capacity > 500.0, "{}", most.stdout);
    let (b, out) = ramp(&url, 4000, &pid);
    drop(demo);
    breaks_at_capacity(&b, 4000.0, capacity);
    assert!(b["cpu_percent"].as_f64().unwrap() < 60.0, "{b}");
    assert_eq!(b["cpu_bound"], false, "{b}");
    assert!(
        out.contains("not CPU-bound: the limit is elsewhere"),
        "{out}"
    );
}
