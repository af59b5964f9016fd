//! `brink find` against services whose limits are known: K service slots of fixed time S (at
//! most K/S req/s, latency N/K x S past K connections), a service that deadlocks past a
//! concurrency limit. (A generator made to be the bottleneck is in `generator.rs`.)

use assert_cmd::Command;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::{Options, Reply, Req};

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

pub(crate) fn find(args: &[&str], limit: Duration) -> (Option<i32>, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("find.json");
    let run = brink()
        .arg("find")
        .args(args)
        .args(["--json", out.to_str().unwrap()])
        .timeout(limit)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&run.stdout).to_string() + &String::from_utf8_lossy(&run.stderr);
    let json = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (run.status.code(), json, text)
}

/// The exit code a search's own result calls for: 2 when a step could not run, 1 when the
/// service got stuck or no level held its objectives, else 0.
pub(crate) fn search_exit(r: &serde_json::Value) -> i32 {
    let f = &r["find"];
    assert!(f.is_object(), "no search in the result: {r}");
    if f["stop"]["reason"] == "step_failed" {
        return 2;
    }
    let stuck = f["findings"]
        .as_array()
        .is_some_and(|x| x.iter().any(|x| x["rule"] == "stuck"));
    if stuck || f["max_sustainable"].is_null() {
        1
    } else {
        0
    }
}

#[test]
fn finds_a_known_capacity() {
    // A stall of 15 ms at 8 connections (another test starting Prometheus or a control plane
    // beside it on two cores, when that ran beside everything) lifts that step's p99 past 50 ms:
    // beside light tests only, which leave a CPU free.
    let _cpu = crate::support::cpu_light();
    // 4 slots of 20 ms: at most 200 req/s; with N > 4 connections latency is about N/4 x 20 ms,
    // so p99 < 50 ms holds up to 9 connections (45 ms) and breaks at 10 (50 ms).
    let srv = testkit::serve_with(
        Options {
            threads: 2,
            slots: Some(4),
            ..Options::default()
        },
        testkit::handlers::slotted(Duration::from_millis(20)),
    )
    .unwrap();
    let t0 = Instant::now();
    let (code, r, text) = find(
        &[
            &srv.url("/"),
            "--slo",
            "p99<50ms",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "64",
        ],
        Duration::from_secs(180),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(t0.elapsed() < Duration::from_secs(180));
    let f = &r["find"];
    let max = &f["max_sustainable"];
    let level = max["level"].as_f64().unwrap();
    assert!(
        (8.0..=10.0).contains(&level),
        "max sustainable {level} connections, truth 9:\n{text}"
    );
    let best_rps = f["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ok_rps"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        (best_rps - 200.0).abs() / 200.0 < 0.10,
        "max throughput {best_rps}, truth 200:\n{text}"
    );
    // Throughput stops growing past 4 slots: the knee is 4, where it saturates (it used to be
    // placed at 8 or 16, the first level above the plateau's start).
    let knee = f["knee"]["level"].as_f64().unwrap();
    assert_eq!(knee, 4.0, "knee at {knee}:\n{text}");
    // The answer leads with one capacity (the throughput at the maximum sustainable level),
    // then where throughput saturates and that it held, then what more load only bought; a
    // plateau is explained.
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with(" Capacity:"))
        .collect();
    assert!(
        summary[0].starts_with(" Capacity: ") && summary[0].contains("(maximum sustainable: "),
        "{text}"
    );
    assert!(
        summary[1].starts_with(" Throughput: saturates at ")
            && summary[1].contains(" at 4 connections (the knee")
            && summary[1].contains("stays within 10% of its peak"),
        "{text}"
    );
    assert!(
        summary[2].starts_with(" More load only queues: at "),
        "{text}"
    );
    assert!(text.contains("\nreading it: past ~4 connections"), "{text}");
    // Every step agrees with Little's law: N connections / X req/s = mean latency.
    crate::ordinary::assert_littles_law(f, true, &text);
    // A fixed limit reads one of two ways, by the noise in the fitted curve: a predicted peak
    // (never below the 4 slots throughput grew to), or, when the curve puts its peak where
    // the measured throughput then stayed flat, no peak and a plateau. (It asked for the
    // first alone, and failed once when a slow machine gave the second.) The words say what
    // the result holds.
    let usl = &f["usl"];
    assert!(usl["r2"].as_f64().is_some(), "{f}");
    match usl["peak_concurrency"].as_f64() {
        Some(n) => assert!(
            n >= 4.0 && text.contains(&format!("predicted peak N* = {n:.1} connections at ")),
            "{usl}\n{text}"
        ),
        None => assert!(
            usl["plateau"] == true && text.contains("no peak: throughput held flat past"),
            "{usl}\n{text}"
        ),
    }
    assert!(
        f["diagnosis"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().starts_with("queueing")),
        "{f}"
    );
}

#[test]
fn a_deadlocking_service_is_reported_stuck() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    // Answers in 50 ms, but once more than 5 requests arrive within 45 ms (about 6
    // concurrent), it stops answering anything, for good.
    let dead = Arc::new(AtomicBool::new(false));
    let arrivals = Arc::new(Mutex::new(VecDeque::new()));
    let d = dead.clone();
    let srv = testkit::serve(Arc::new(move |_: &Req| {
        if d.load(Ordering::Relaxed) {
            return Reply::Hang;
        }
        let now = Instant::now();
        let mut a = arrivals.lock().unwrap();
        a.push_back(now);
        while a
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_millis(45))
        {
            a.pop_front();
        }
        if a.len() > 5 {
            d.store(true, Ordering::Relaxed);
            return Reply::Hang;
        }
        Reply::ok("ok", Duration::from_millis(50))
    }))
    .unwrap();
    let t0 = Instant::now();
    let (code, r, text) = find(
        &[
            &srv.url("/"),
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--timeout",
            "1s",
            "--recovery",
            "3s",
        ],
        Duration::from_secs(60),
    );
    let took = t0.elapsed();
    assert_eq!(code, Some(1), "{text}");
    assert!(dead.load(Ordering::Relaxed));
    let f = &r["find"];
    assert_eq!(f["stop"]["reason"], "stuck", "{f}");
    assert_eq!(f["stop"]["level"], 8.0, "{f}");
    let stopped = f["stopped"].as_str().unwrap();
    assert!(
        stopped.starts_with(
            "service stopped responding at 8 connections and did not recover within 3s"
        ),
        "{stopped}"
    );
    assert_eq!(f["max_sustainable"]["level"], 4.0, "{text}");
    assert_eq!(f["findings"][0]["rule"], "stuck", "{f}");
    assert!(
        f["diagnosis"][0]
            .as_str()
            .unwrap_or("")
            .starts_with("stuck:"),
        "{f}"
    );
    // Four steps of 2 s (+ at most the 1 s timeout each) and one recovery wait of 3 s.
    assert!(took < Duration::from_secs(25), "{took:?}");
}

#[test]
fn observation_follows_the_server_and_a_failed_scrape_is_a_gap() {
    let demo = testkit::demo::spawn(4, Duration::from_millis(2)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let metrics = demo.server.url("/metrics");
    brink()
        .args([
            "run",
            &demo.server.url("/api/items"),
            "-c",
            "4",
            "-d",
            "3s",
            "-q",
        ])
        .args([
            "--observe",
            &format!("prometheus={metrics}"),
            "--metric",
            "fds=process_open_fds",
        ])
        .args(["--observe", &format!("pid={}", std::process::id())])
        .args(["--json", out.to_str().unwrap()])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let obs = &r["scenarios"][0]["observed"];
    for k in ["srv cpu", "srv threads", "srv rss", "srv sockets", "fds"] {
        assert!(obs[k]["peak"].as_f64().is_some(), "{k} missing: {obs}");
    }
    // This test process serves the demo, so its sockets include the 4 load connections.
    assert!(obs["srv sockets"]["peak"].as_f64().unwrap() >= 4.0, "{obs}");
    // A scrape target that is down: the run still succeeds, with no figures.
    brink()
        .args([
            "run",
            &demo.server.url("/api/items"),
            "-c",
            "2",
            "-d",
            "2s",
            "-q",
        ])
        .args(["--observe", "prometheus=http://127.0.0.1:1/metrics"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    brink()
        .args(["run", &demo.server.url("/"), "--observe", "pid=abc"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("'abc' is not a process id"));
}

#[test]
fn a_cpu_bound_service_is_diagnosed_cpu_bound() {
    let _cpu = crate::support::cpu_exclusive();
    // A Python server that spins 1 ms of CPU per request under its interpreter lock:
    // CPU-bound by construction, and a process of its own, so what is observed (the process
    // and its descendants) is the service alone, not this test's other children.
    let srv = crate::support::PyServer::start(std::path::Path::new("python3"), 1);
    let pid = format!("pid={}", srv.child.id());
    let url = srv.url.clone();
    let (code, r, text) = find(
        &[
            &url,
            "--slo",
            "p99<20ms",
            "--to",
            "16",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--observe",
            &pid,
        ],
        Duration::from_secs(120),
    );
    drop(srv);
    // One connection to 1 ms of CPU answers in a few ms, far under 20: a level holds, so the
    // search ends with a capacity and exit 0.
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(search_exit(&r), 0, "{}", r["find"]["stop"]);
    // On a quiet machine its one core is full at the knee: CPU-bound. When other processes
    // take that core (a build beside CI did), it waits for a CPU instead of using one, and
    // the honest reading is CPU-starved, with the share it waited: one of the two, always.
    let starved = r["find"]["findings"].as_array().and_then(|f| {
        f.iter()
            .find(|x| x["rule"] == "cpu_starved")
            .and_then(|x| x["waiting_percent"].as_f64())
    });
    assert!(
        rules(&r["find"]).contains(&"cpu_bound".to_string())
            || starved.is_some_and(|w| w >= results::STARVED_WAIT_PERCENT),
        "{}\n{text}",
        r["find"]["findings"]
    );
}

fn slot_server(slots: usize, service: Duration) -> testkit::Server {
    testkit::serve_with(
        Options {
            threads: 2,
            slots: Some(slots),
            ..Options::default()
        },
        testkit::handlers::slotted(service),
    )
    .unwrap()
}

#[test]
fn a_rate_search_finds_the_throughput_ceiling() {
    // A capacity is the verdict, of a service that sleeps: beside light tests only.
    let _cpu = crate::support::cpu_light();
    // 4 slots of 20 ms: 200 req/s at most. Offered rates above it queue without bound.
    let srv = slot_server(4, Duration::from_millis(20));
    let (code, r, text) = find(
        &[
            &srv.url("/"),
            "--by",
            "rate",
            "--from",
            "50",
            "--to",
            "800",
            "--slo",
            "p99<100ms",
        ]
        .into_iter()
        .chain([
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--grace",
            "1s",
        ])
        .collect::<Vec<_>>(),
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(0), "{text}");
    let f = &r["find"];
    assert_eq!(f["by"], "rate");
    // The most the service delivered at any step is its ceiling: 200/s less its own overhead
    // on each request (a few percent).
    let best = f["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ok_rps"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        (best - 200.0).abs() / 200.0 < 0.10,
        "max throughput {best}:\n{text}"
    );
    // Arrivals at a steady rate under that ceiling never wait long for a slot, and above it
    // they queue without bound: bisected to 5%, the capacity is within 5% under the most the
    // service delivered, never over the nominal 200/s.
    let level = f["max_sustainable"]["level"].as_f64().unwrap();
    assert!(
        level <= 200.0 && level >= 0.95 * best,
        "max sustainable {level}/s, the service delivered {best}/s at most:\n{text}"
    );
    // The USL's N is concurrency: a rate search shows no "N* = 470" in the wrong unit.
    assert!(f["usl"].is_null(), "{}", f["usl"]);
    assert!(!text.contains("USL fit"), "{text}");
    assert!(text.contains(" Capacity: "), "{text}");
}

#[test]
fn throttling_and_overload_are_told_apart() {
    // Past about 4 concurrent requests the service answers 429 to the excess.
    let arrivals = Arc::new(Mutex::new(VecDeque::new()));
    let srv = testkit::serve(Arc::new(move |_: &Req| {
        let now = Instant::now();
        let mut a = arrivals.lock().unwrap();
        a.push_back(now);
        while a
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_millis(20))
        {
            a.pop_front();
        }
        if a.len() > 4 {
            return Reply::status(429);
        }
        Reply::ok("ok", Duration::from_millis(20))
    }))
    .unwrap();
    let (_, r, text) = find(
        &[
            &srv.url("/"),
            "--to",
            "32",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
        ],
        Duration::from_secs(90),
    );
    let found = rules(&r["find"]);
    assert!(
        found.contains(&"rate_limited".to_string()),
        "{found:?}\n{text}"
    );
    assert!(
        !found.contains(&"overload_errors".to_string()),
        "429s are not 5xx: {found:?}"
    );
}

/// The rules of a search's typed findings, in order.
pub(crate) fn rules(find: &serde_json::Value) -> Vec<String> {
    find["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["rule"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_plan_scenario_can_be_searched() {
    // A verdict on time (a search's objectives) with a light load.
    let _cpu = crate::support::cpu_light();
    let (handler, state) = testkit::shop::shop(Duration::from_millis(2));
    let srv = testkit::serve(handler).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        format!(
            r#"target: {}
scenarios:
  - {{ name: health, requests: [ {{ path: /health }} ] }}
  - name: register
    load: {{ connections: 50, requests: 300 }}
    requests: [ {{ method: POST, path: /user/auth/register, body: '{{"email":"u{{{{seq}}}}@x.test"}}' }} ]
    slo: [ "p99 < 2s", "errors < 1%" ]
"#,
            srv.url("")
        ),
    )
    .unwrap();
    let health = srv.url("/health");
    let (code, r, text) = find(
        &[
            plan.to_str().unwrap(),
            "--scenario",
            "register",
            "--health",
            &health,
            "--to",
            "4",
        ]
        .into_iter()
        .chain(["--step", "2s", "--warmup", "1s", "--cooldown", "0s"])
        .collect::<Vec<_>>(),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{text}");
    let f = &r["find"];
    assert_eq!(f["max_sustainable"]["level"], 4.0, "{text}");
    assert_eq!(
        f["max_sustainable"]["slo"],
        serde_json::json!(["p99 < 2s", "errors < 1%"])
    );
    assert!(
        state.registered.load(Ordering::Relaxed) > 100,
        "the scenario's requests were sent"
    );
    assert_eq!(
        state.duplicates.load(Ordering::Relaxed),
        0,
        "{{seq}} stays unique across steps"
    );
    brink()
        .args(["find", plan.to_str().unwrap(), "--scenario", "nope"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no such scenario (scenarios: health, register)",
        ));
}

#[test]
fn bad_search_settings_are_one_line_and_exit_2() {
    let url = "http://127.0.0.1:9/";
    let cases: [(&[&str], &str); 7] = [
        (&["-d", "5s"], "find sets the load itself"),
        (&["-c", "5"], "-c is the connection pool of --by rate"),
        (&["--from", "0"], "--from must be at least 1"),
        (
            &["--from", "10", "--to", "5"],
            "--to (5) is below --from (10)",
        ),
        (
            &["--precision", "lots"],
            "--precision: 'lots' is not a percentage",
        ),
        (&["--step", "1s"], "--step (1s) must be at least 2s"),
        (
            &["--by", "rate", "--from", "fast"],
            "--from: invalid rate 'fast'",
        ),
    ];
    for (args, want) in cases {
        let out = brink().arg("find").arg(url).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn an_overflowing_accept_queue_is_diagnosed() {
    // A verdict on time (a search's objectives) with a light load.
    let _cpu = crate::support::cpu_light();
    // A listen backlog of 1 and an accept every 25 ms: new connections (no keep-alive) soon
    // arrive faster than they are accepted, and the kernel counts the overflows for real.
    let srv = testkit::serve_with(
        Options {
            backlog: 1,
            accept_pause: Duration::from_millis(25),
            ..Options::default()
        },
        testkit::handlers::fixed(Duration::ZERO),
    )
    .unwrap();
    let pid = format!("pid={}", std::process::id());
    let (code, r, text) = find(
        &[
            &srv.url("/"),
            "--no-keepalive",
            "--slo",
            "p99<100ms",
            "--to",
            "32",
            "--step",
            "3s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--observe",
            &pid,
        ],
        Duration::from_secs(120),
    );
    // One connection at a time is accepted within 25 ms, far under 100: a level holds.
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(search_exit(&r), 0, "{}", r["find"]["stop"]);
    assert!(
        rules(&r["find"]).contains(&"accept_queue_overflow".to_string()),
        "{}\n{text}",
        r["find"]["findings"]
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_hook_runs_during_the_capture_step_at_the_peak() {
    // A verdict on time (a search's objectives) with a light load.
    let _cpu = crate::support::cpu_light();
    // Arrival times at the server, to see that load was running while the hook ran.
    let arrivals: Arc<std::sync::Mutex<Vec<f64>>> = Arc::default();
    let a = arrivals.clone();
    let srv = testkit::serve_with(
        Options {
            slots: Some(4),
            ..Options::default()
        },
        Arc::new(move |_: &Req| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            a.lock().unwrap().push(now);
            Reply::Full {
                status: 200,
                body: b"ok".to_vec(),
                delay: Duration::from_millis(5),
                slot: true,
                close: false,
            }
        }),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hooks_dir = dir.path().join("hooks");
    let hook = "date +%s.%N > \"$BRINK_OUT_DIR/at-$BRINK_STEP\"; echo \"$BRINK_LEVEL $BRINK_DURATION_S $BRINK_RUN_ID\"";
    let mut args = vec![
        srv.url("/"),
        "--slo".into(),
        "p99<20ms".into(),
        "--to".into(),
        "16".into(),
        "--step".into(),
        "2s".into(),
        "--warmup".into(),
        "1s".into(),
        "--cooldown".into(),
        "0s".into(),
        "--precision".into(),
        "30%".into(),
        "--at-peak".into(),
        hook.into(),
        "--hooks-dir".into(),
        hooks_dir.to_str().unwrap().into(),
    ];
    // --dry-run says what would run and sends nothing.
    let mut dry: Vec<&str> = args.iter().map(String::as_str).collect();
    dry.push("--dry-run");
    let out = brink().arg("find").args(&dry).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("peak: sh -c") && text.contains("50% into the step"),
        "{text}"
    );
    assert!(text.contains("a step passes while: "), "{text}");
    assert!(
        text.contains("  levels: ") && text.contains("hooks write to "),
        "{text}"
    );
    assert_eq!(srv.counters.requests(), 0, "a dry run sends nothing");

    args.push("-q".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, r, text) = find(&refs, Duration::from_secs(120));
    // The hook succeeds and a level holds: exit 0.
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(search_exit(&r), 0, "{}", r["find"]["stop"]);
    let f = &r["find"];
    let peak = f["max_sustainable"]["level"]
        .as_f64()
        .expect("a sustainable level");
    let hooks = f["hooks"].as_array().unwrap();
    let at_peak = hooks
        .iter()
        .find(|h| h["step"] == "peak")
        .expect("the peak hook ran");
    assert_eq!(at_peak["exit_code"], 0, "{at_peak}");
    let out = std::fs::read_to_string(at_peak["stdout"].as_str().unwrap()).unwrap();
    assert!(
        out.starts_with(&format!("{peak} 2 ")),
        "values come as environment: {out}"
    );
    assert_eq!(
        f["captures"].as_array().map(Vec::len),
        Some(hooks.len()),
        "{f}"
    );
    // The hook ran halfway into a step the server was busy with: requests arrived just
    // before and just after it.
    let t: f64 = std::fs::read_to_string(hooks_dir.join("at-peak"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let arrivals = arrivals.lock().unwrap();
    let around = |from: f64, to: f64| arrivals.iter().filter(|&&x| x >= from && x < to).count();
    assert!(
        around(t - 0.3, t) > 10 && around(t, t + 0.3) > 10,
        "load around the hook at {t}"
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_failing_hook_warns_and_fails_the_command_only_when_required() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = [
        srv.url("/"),
        "--to".into(),
        "1".into(),
        "--step".into(),
        "2s".into(),
        "--warmup".into(),
        "1s".into(),
        "--hook-after".into(),
        "echo broke >&2; exit 7".into(),
        "--hooks-dir".into(),
        dir.path().to_str().unwrap().into(),
        "-q".into(),
    ];
    for (required, want) in [(false, 0), (true, 1)] {
        let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
        if required {
            args.push("--hook-required");
        }
        let out = brink()
            .arg("find")
            .args(&args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(want), "{err}");
        assert!(
            err.contains("hook after (echo broke >&2; exit 7) at search: exited with 7"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("after-search.err")).unwrap(),
        "broke\n"
    );
    // The HTML report lists the hooks, a hostile command escaped.
    let html = dir.path().join("r.html");
    let out = brink()
        .args([
            "find",
            &srv.url("/"),
            "--to",
            "1",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "-q",
        ])
        .args([
            "--hook-after",
            "echo '<script>alert(1)</script>'",
            "--hooks-dir",
        ])
        .arg(dir.path())
        .arg("--html")
        .arg(&html)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<caption>Hooks</caption>"), "the hooks table");
    assert!(
        page.contains("echo &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;")
            || page.contains("echo '&lt;script&gt;alert(1)&lt;/script&gt;'"),
        "escaped"
    );
    assert!(!page.contains("<script>alert(1)"));
}

#[test]
fn a_plans_hooks_reach_the_search() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.yaml");
    let text = "target: http://127.0.0.1:1/\nhooks:\n  peak: { run: './profile.sh', at: 0.25, timeout: 5s, required: true }\n  after: 'echo done'\nscenarios:\n  - name: s\n";
    std::fs::write(&plan, text).unwrap();
    let out = brink()
        .args(["find", plan.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("peak: sh -c \"./profile.sh\"") && stdout.contains("25% into the step"),
        "{stdout}"
    );
    assert!(stdout.contains("stopped after 5s; required"), "{stdout}");
    assert!(
        stdout.contains("after: sh -c \"echo done\" after the search"),
        "{stdout}"
    );
    // A flag replaces the plan's hook of the same name.
    let out = brink()
        .args([
            "find",
            plan.to_str().unwrap(),
            "--dry-run",
            "--at-peak",
            "jstack 1",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("peak: sh -c \"jstack 1\""));
    std::fs::write(&plan, text.replace("at: 0.25", "at: 2")).unwrap();
    let out = brink()
        .args(["find", plan.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("p.yaml:3:") && err.contains("not a share of the step"),
        "{err}"
    );
}

/// A CPU cgroup limited to `quota_us` per 100 ms, when this machine lets the test create
/// one: cgroup v2 (`cpu.max`) where its `cpu` controller is available, else v1's `cpu`
/// controller (`cpu.cfs_quota_us`); removed on drop.
pub(crate) struct CpuLimit(pub(crate) std::path::PathBuf);

impl CpuLimit {
    pub(crate) fn new(quota_us: u32) -> Option<CpuLimit> {
        let name = format!("brink-test-{}", std::process::id());
        let v2 = observe::cgroup::mount().filter(|m| {
            std::fs::read_to_string(m.join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"))
        });
        if let Some(root) = v2 {
            // The root hands the cpu controller to its children (harmless if it already does).
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
            let dir = root.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let limit = CpuLimit(dir);
            std::fs::write(limit.0.join("cpu.max"), format!("{quota_us} 100000")).ok()?;
            return Some(limit);
        }
        let dir = std::path::Path::new("/sys/fs/cgroup/cpu").join(&name);
        std::fs::create_dir(&dir).ok()?;
        let limit = CpuLimit(dir);
        std::fs::write(limit.0.join("cpu.cfs_period_us"), "100000").ok()?;
        std::fs::write(limit.0.join("cpu.cfs_quota_us"), quota_us.to_string()).ok()?;
        Some(limit)
    }

    fn add(&self, pid: u32) -> bool {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).is_ok()
    }
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_cpu_throttled_service_is_diagnosed_throttled() {
    // A Python server that spends 2 ms of CPU per request, in a cgroup allowed 0.1 core: the
    // kernel throttles it for real, while its CPU figure stays low.
    // CI runs as root and requires it (BRINK_REQUIRE_CPU_LIMIT): never skipped there.
    let Some(limit) = CpuLimit::new(10_000) else {
        assert!(
            std::env::var_os("BRINK_REQUIRE_CPU_LIMIT").is_none(),
            "a CPU cgroup is required here but this machine does not let the test create one"
        );
        eprintln!("this machine does not let the test create a CPU cgroup: skipping");
        return;
    };
    let srv = crate::support::PyServer::start(std::path::Path::new("python3"), 2);
    assert!(
        limit.add(srv.child.id()),
        "the server joins the limited cgroup"
    );
    let pid = format!("pid={}", srv.child.id());
    let url = srv.url.clone();
    let (code, r, text) = find(
        &[
            &url,
            "--slo",
            "p99<400ms",
            "--to",
            "64",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--precision",
            "50%",
            "--observe",
            &pid,
        ],
        Duration::from_secs(120),
    );
    drop(srv);
    // Whether the first level held under a tenth of a core is the kernel's to say; the exit
    // code is whatever the search's own result calls for.
    assert_eq!(code, Some(search_exit(&r)), "{text}");
    let f = &r["find"];
    let throttled = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["rule"] == "cpu_throttled")
        .unwrap_or_else(|| panic!("{}\n{text}", f["findings"]));
    assert!(
        throttled["throttled_percent"].as_f64().unwrap() >= 10.0,
        "{throttled}"
    );
    assert!(
        throttled["cpu_cores"].as_f64().unwrap() < 0.3,
        "{throttled}"
    );
}

/// A search whose every level met the objectives found a floor, not the service's limit: the
/// headline says "at least" and how to go further, and the result says why it stopped.
#[test]
fn a_search_that_never_failed_gives_a_floor_not_a_limit() {
    // Its only clock is p99 < 2 s on a 1 ms service, far from the truth: shared.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let (code, r, text) = find(
        &[
            &srv.url("/"),
            "--to",
            "4",
            "--slo",
            "p99<2s",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        r["find"]["stop"],
        serde_json::json!({"reason": "all_passed", "to": 4.0})
    );
    let headline = text
        .lines()
        .find(|l| l.starts_with(" Capacity: "))
        .unwrap_or_default();
    assert!(
        headline.starts_with(" Capacity: at least ")
            && headline.contains("every level up to --to 4 connections met p99 < 2s")
            && headline.contains("raise --to"),
        "{text}"
    );
}
