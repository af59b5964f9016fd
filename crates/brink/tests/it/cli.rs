//! The command line: bad input is one clear line and exit 2; an unreachable target is exit 3;
//! an interrupt stops within a second, prints, writes the result with `interrupted: true`, exits
//! 130; the demo runs.

use assert_cmd::Command;
use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};
use testkit::handlers;

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let srv = testkit::serve(handlers::fixed(Duration::ZERO)).unwrap();
    let url = srv.url("/");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "http//nope"], "expected scheme://host"),
        (vec!["run", "ftp://127.0.0.1/"], "unsupported scheme 'ftp'"),
        (vec!["run", "http://127.0.0.1:99999/"], "out of range"),
        (
            vec!["run", &url, "-c", "0"],
            "-c/--concurrency must be at least 1",
        ),
        (vec!["run", &url, "-d", "-5s"], "must not be negative"),
        (vec!["run", &url, "-d", "soon"], "invalid duration 'soon'"),
        (vec!["run", &url, "--rate", "fast"], "invalid rate 'fast'"),
        (
            vec!["run", &url, "--rate", "0"],
            "--rate must be above zero",
        ),
        (
            vec!["run", &url, "--stages", "10s:5,10s:100/s"],
            "mix rates",
        ),
        (
            vec!["run", &url, "--stages", "10s:5", "-d", "3s"],
            "-d/--duration cannot be combined with --stages",
        ),
        (
            vec!["run", &url, "-H", "NoColon"],
            "invalid header 'NoColon'",
        ),
        (
            vec!["run", &url, "--json", "/nonexistent-dir/x.json"],
            "--json /nonexistent-dir/x.json",
        ),
        (
            vec!["run", &url, "--body-file", "/nonexistent-file"],
            "--body-file /nonexistent-file",
        ),
        (
            vec!["run", &url, "--cacert", "/nonexistent.pem"],
            "--cacert /nonexistent.pem: no such file",
        ),
        (
            vec!["run", &url, "--ok-status", "200-999"],
            "invalid status '999'",
        ),
        (
            vec!["run", &url, "-n", "many"],
            "-n/--requests expects a whole number",
        ),
        (
            vec!["find", &url, "--hook-timeout", "0s", "--dry-run"],
            "--hook-timeout 0s would stop every hook as it starts",
        ),
        (
            vec!["history", "--limit", "0"],
            "--limit 0: list at least 1 run",
        ),
        (
            vec!["compare", "a.json"],
            "give two results (BEFORE AFTER), not 1",
        ),
        (
            vec!["compare", "a.json", "b.json", "--tolerance", "p99=5%%"],
            "'5%%' is not a percentage",
        ),
    ];
    for (args, want) in cases {
        let out = brink()
            .args(&args)
            .timeout(Duration::from_secs(10))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want '{want}' in: {err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one line, got: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert_eq!(
        srv.counters.requests(),
        0,
        "no load is sent when input is bad"
    );
}

#[test]
fn unreachable_target_exits_3() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let out = brink()
        .args([
            "run",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-d",
            "1s",
        ])
        .timeout(Duration::from_secs(15))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("no request succeeded") && err.contains("connect"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn backing_off_from_a_dead_port_does_not_spin() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bin = crate::support::held(assert_cmd::cargo::cargo_bin("brink"));
    for load in ["--rate 1000 -c 4 -d 2s", "-c 4 -d 2s"] {
        // bash's `time` reports the CPU of this brink process alone.
        let script = format!(
            "TIMEFORMAT='cpu %U %S'; time {} run http://127.0.0.1:{port}/ {load} -q",
            bin.display()
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no request succeeded"), "{load}: {err}");
        let cpu: f64 = err
            .lines()
            .find_map(|l| l.strip_prefix("cpu "))
            .unwrap()
            .split(' ')
            .map(|v| v.parse::<f64>().unwrap())
            .sum();
        // Backing off, a 2 s run needs a few milliseconds of CPU; a spinning loop needs ~2 s.
        assert!(
            cpu < 0.5,
            "{load}: {cpu} CPU seconds in a 2 s run against a dead port"
        );
    }
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let srv = testkit::serve(handlers::fixed(Duration::ZERO)).unwrap();
    let bin = crate::support::held(assert_cmd::cargo::cargo_bin("brink"));
    let script = format!(
        "{} run {} -c 2 -n 50 | head -c 1 >/dev/null; echo \"exit=${{PIPESTATUS[0]}}\"",
        bin.display(),
        srv.url("/")
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("exit=0"), "{stdout} {stderr}");
}

#[test]
fn json_result_has_the_contract_keys() {
    let srv = testkit::serve(handlers::faults()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let out = brink()
        .args([
            "run",
            &srv.url("/status/503"),
            "-c",
            "2",
            "-n",
            "40",
            "--ok-status",
            "200-299,503",
            "--json",
        ])
        .arg(&path)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["schema"], "brink.result/v1");
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["summary"]["requests"], 40);
    assert_eq!(v["summary"]["status"]["503"], 40);
    assert_eq!(v["summary"]["errors_by_kind"]["timeout"], 0);
    // The rate is the 40 requests over the run's own length.
    let (rps, secs) = (
        v["summary"]["rps"].as_f64().unwrap(),
        v["summary"]["duration_s"].as_f64().unwrap(),
    );
    assert!((rps * secs - 40.0).abs() < 1e-6, "{rps}/s over {secs} s");
    let lat = &v["summary"]["latency_ms"];
    let (min, p50, max) = (
        lat["min"].as_f64().unwrap(),
        lat["p50"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= p50 && p50 <= max, "{lat}");
    assert!(!v["timeseries"].as_array().unwrap().is_empty());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("requests") && stdout.contains("p99"),
        "{stdout}"
    );
}

#[test]
fn interrupt_stops_within_a_second_and_keeps_the_result() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    for (signal, name) in [(2, "SIGINT"), (15, "SIGTERM")] {
        let srv = testkit::serve(handlers::fixed(Duration::from_millis(2))).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let mut child =
            std::process::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
                .args(["run", &srv.url("/"), "-c", "4", "-d", "30s", "--json"])
                .arg(&path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc_kill(child.id() as i32, signal) };
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(3),
                "{name}: did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            sent.elapsed() < Duration::from_millis(1500),
            "{name}: stopped in {:?}",
            sent.elapsed()
        );
        assert_eq!(status.code(), Some(130), "{name}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["interrupted"], true, "{name}");
        let counted = v["summary"]["requests"].as_u64().unwrap();
        let unfinished = v["summary"]["unfinished"].as_u64().unwrap();
        assert!(counted > 100, "{name}: {counted}");
        // Nothing measured is lost: every request the server received was either counted or is
        // reported as unfinished.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(srv.counters.requests(), counted + unfinished, "{name}");
        let out = child.wait_with_output().unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("interrupted"),
            "{name}"
        );
    }
}

#[test]
fn interrupting_a_search_keeps_the_whole_steps_and_judges_no_partial_one() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(handlers::fixed(Duration::from_millis(2))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.json");
    let child =
        std::process::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args([
                "find",
                &srv.url("/"),
                "--step",
                "2s",
                "--warmup",
                "1s",
                "--cooldown",
                "0s",
                "--json",
            ])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    // Two whole steps (1 and 2 connections: their rows are printed as they end), then the
    // third is interrupted half-way.
    let mut child = child;
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut rows = 0;
    while rows < 2 {
        let line = lines.next().expect("a step row").unwrap();
        rows += usize::from(line.trim_end().ends_with("pass") || line.contains(" FAIL "));
    }
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc_kill(child.id() as i32, 2) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{rest:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    let f = &v["find"];
    assert_eq!(f["stopped"], "interrupted");
    let steps = f["steps"].as_array().unwrap();
    let last = steps.last().unwrap();
    assert_eq!(last["pass"], false);
    assert!(
        last["reason"].as_str().unwrap().starts_with("interrupted"),
        "{last}"
    );
    let judged = steps.len() - 1;
    assert_eq!(judged, 2, "{f}");
    assert_eq!(
        f["max_sustainable"]["level"].as_f64(),
        steps[judged - 1]["level"].as_f64(),
        "{f}"
    );
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn demo_runs_on_loopback() {
    // A verdict on time; the demo's search uses about a fifth of a CPU (measured with the
    // lock log): beside other light tests only.
    let _cpu = crate::support::cpu_light();
    // --history is accepted, as for run and find: the demo's search is recorded there.
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.db");
    let out = brink()
        .args(["demo", "--step", "2s", "--history"])
        .arg(&history)
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    let db = history::History::open(&history).unwrap();
    let runs = db.list(&history::Filter::default()).unwrap();
    assert_eq!(runs.len(), 1, "the demo's search is recorded in --history");
    assert_eq!(runs[0].command, model::RunCommand::Find);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("demo service on 127.0.0.1:"), "{stdout}");
    assert!(stdout.contains(" Capacity: "), "{stdout}");
    assert!(stdout.contains("(maximum sustainable: "), "{stdout}");
    assert!(stdout.contains("reading it: past ~"), "{stdout}");
    assert!(stdout.contains("Diagnosis:"), "{stdout}");
}

/// Flags a wrk, hey, ghz, k6 or curl user types: accepted where the meaning is the same
/// (`--vus`, `--latency`, `--body @file`), hinted where brink calls it otherwise.
#[test]
fn flags_from_other_tools_are_accepted_or_hinted() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let srv = testkit::serve(std::sync::Arc::new(move |r: &testkit::Req| {
        s2.lock()
            .unwrap()
            .push(String::from_utf8_lossy(r.body).to_string());
        testkit::Reply::status(200)
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("payload.json");
    std::fs::write(&payload, r#"{"from":"a file"}"#).unwrap();
    let url = srv.url("/");
    let body = format!("@{}", payload.display());
    let out = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args([
            "run",
            &url,
            "--vus",
            "2",
            "-n",
            "6",
            "--latency",
            "-m",
            "POST",
        ])
        .args(["--body", &body, "--no-history"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    assert!(seen.iter().all(|b| b == r#"{"from":"a file"}"#), "{seen:?}");
    let missing = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args(["run", &url, "-n", "1", "--body", "@/nonexistent/x.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("--body @/nonexistent/x.json"), "{err}");
    for (flag, value, hint) in [
        ("-t", "2", "--threads 2"),
        ("-D", "b.json", "--body-file b.json"),
        ("-T", "text/plain", "-H 'Content-Type: text/plain'"),
    ] {
        let out = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
            .args(["run", &url, flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(hint) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}
