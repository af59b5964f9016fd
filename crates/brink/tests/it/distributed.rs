//! Distributed runs with real worker processes on loopback: `--workers N` (started by brink)
//! and `--worker HOST:PORT` (started here as `brink worker`). The load is split exactly, the
//! seconds merge exactly (percentiles equal one process's, not an average of the workers'),
//! trust is checked before any load, and a worker that dies is named with the run reported
//! short.

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::{Reply, Req};

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

/// Runs `brink run ARGS --json F`: exit code, result, all output.
fn run(args: &[&str], dir: &Path) -> (Option<i32>, Value, String) {
    let out = dir.join("r.json");
    let o = brink()
        .current_dir(dir)
        .arg("run")
        .args(args)
        .args(["--no-history", "--json", out.to_str().unwrap()])
        .timeout(Duration::from_secs(90))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    let json = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (o.status.code(), json, text)
}

/// A `brink worker` on loopback with `token`, started in `dir`; killed when dropped.
struct Worker {
    child: Child,
    addr: String,
}

impl Worker {
    fn start(token: &str, dir: &Path) -> Worker {
        Worker::start_with(token, dir, &[])
    }

    /// A worker started with `extra` flags (TLS).
    fn start_with(token: &str, dir: &Path, extra: &[&Path]) -> Worker {
        let flags = ["--tls-cert", "--tls-key", "--client-ca"];
        let mut cmd = crate::support::held(std::process::Command::cargo_bin("brink")).unwrap();
        cmd.current_dir(dir)
            .args(["worker", "--listen", "127.0.0.1:0"]);
        for (flag, file) in flags.iter().zip(extra) {
            cmd.arg(flag).arg(file);
        }
        let mut child = cmd
            .env("BRINK_WORKER_TOKEN", token)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("worker starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("brink worker listening on ")
            .expect("the worker says where")
            .to_string();
        Worker { child, addr }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn workers(r: &Value) -> &Vec<Value> {
    r["scenarios"][0]["workers"].as_array().expect("workers[]")
}

#[test]
fn three_workers_send_exactly_n_and_one_merged_result() {
    // Worker processes generating load take CPU from the tests beside them.
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (code, r, text) = run(
        &[&srv.url("/"), "-n", "1001", "-c", "6", "--workers", "3"],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r).is_empty());
    assert_eq!(r["summary"]["requests"], 1001, "{text}");
    assert_eq!(srv.counters.requests.load(Ordering::Relaxed), 1001);
    let per: Vec<u64> = workers(&r)
        .iter()
        .map(|w| w["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(per, vec![334, 334, 333], "{text}");
    for w in workers(&r) {
        assert_eq!(w["status"], "done", "{w}");
        let skew = w["start_skew_ms"].as_f64().unwrap();
        assert!(skew.abs() < 50.0, "start skew {skew} ms: {w}");
    }
    assert!(text.contains("workers       3 merged"), "{text}");
    assert!(
        text.contains("warning: --workers 3 starts 3 worker processes on this machine's"),
        "they share its cores: {text}"
    );
    // Fewer connections than workers: a worker without one could never send its share of
    // -n and the run would never end. Refused before any load instead.
    let started = std::time::Instant::now();
    let (code, _, text) = run(
        &[&srv.url("/"), "-n", "7", "-c", "1", "--workers", "2"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("-n 7 over 2 workers needs at least 2 connections"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{text}");
    assert_eq!(srv.counters.requests.load(Ordering::Relaxed), 1001);
}

#[test]
fn merged_percentiles_are_the_whole_runs_not_an_average_of_the_workers() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    // Request {{seq}} waits 2, 10 or 30 ms by seq % 3. Three workers stripe the arrivals, so
    // worker i sees only one of the three delays: averaging their percentiles would put the
    // median near 14 ms; the exact merge puts it at 10 ms, as one process measures.
    let srv = testkit::serve(Arc::new(|r: &Req| {
        let seq: u64 = r.path.trim_start_matches("/d/").parse().unwrap_or(0);
        let ms = [2, 10, 30][(seq % 3) as usize];
        Reply::ok("ok\n", Duration::from_millis(ms))
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "target: {}\nscenarios:\n  - name: s\n    load: {{ rate: 150/s, duration: 4s, connections: 60 }}\n    requests: [ {{ path: \"/d/{{{{seq}}}}\" }} ]\n",
        srv.url("")
    );
    std::fs::write(dir.path().join("plan.yaml"), plan).unwrap();
    let (code, one, text) = run(&["plan.yaml"], dir.path());
    assert_eq!(code, Some(0), "{text}");
    let (code, many, text) = run(&["plan.yaml", "--workers", "3"], dir.path());
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(many["summary"]["requests"], 600);
    let pct = |r: &Value, p: &str| r["summary"]["latency_ms"][p].as_f64().unwrap();
    for p in ["p25", "p50", "p90"] {
        let (a, b) = (pct(&one, p), pct(&many, p));
        assert!(
            (a - b).abs() <= 0.15 * a + 1.0,
            "{p}: one process {a} ms, three workers {b} ms"
        );
    }
    assert!(
        (8.0..14.0).contains(&pct(&many, "p50")),
        "{}",
        pct(&many, "p50")
    );
}

#[test]
fn workers_that_do_not_agree_are_refused_before_any_load() {
    // Worker processes generating load take CPU from the tests beside them.
    let _cpu = crate::support::cpu_exclusive();
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    let srv = testkit::serve(Arc::new(move |_: &Req| {
        c.fetch_add(1, Ordering::Relaxed);
        Reply::ok("ok\n", Duration::ZERO)
    }))
    .unwrap();
    let here = tempfile::tempdir().unwrap();
    let there = tempfile::tempdir().unwrap();
    let plan = |dir: &Path, path: &str| {
        let text = format!(
            "target: {}\nscenarios:\n  - name: s\n    load: {{ connections: 2, duration: 1s }}\n    requests: [ {{ path: {path} }} ]\n",
            srv.url("")
        );
        std::fs::write(dir.join("plan.yaml"), text).unwrap();
    };
    plan(here.path(), "/a");
    plan(there.path(), "/b");
    std::fs::write(here.path().join("token"), "right\n").unwrap();
    std::fs::write(here.path().join("wrong"), "wrong\n").unwrap();
    let same = Worker::start("right", here.path());
    let other = Worker::start("right", there.path());

    // A wrong token: refused, one line, exit 2.
    let (code, _, text) = run(
        &["plan.yaml", "--worker", &same.addr, "--token-file", "wrong"],
        here.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("refused the token"), "{text}");
    // A worker whose plan.yaml says something else: refused, naming the inputs.
    let (code, _, text) = run(
        &[
            "plan.yaml",
            "--worker",
            &same.addr,
            "--worker",
            &other.addr,
            "--token-file",
            "token",
        ],
        here.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("compiled other inputs"), "{text}");
    // --worker without a token file, and nobody listening.
    let (code, _, text) = run(&["plan.yaml", "--worker", &same.addr], here.path());
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("--token-file"), "{text}");
    let (code, _, text) = run(
        &[
            "plan.yaml",
            "--worker",
            "127.0.0.1:1",
            "--token-file",
            "token",
        ],
        here.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("cannot connect"), "{text}");
    // A worker started by hand reads files only below its working directory: a token holder
    // cannot have it read (and quote in an error) a file elsewhere.
    let outside = here.path().join("plan.yaml");
    let (code, _, text) = run(
        &[
            outside.to_str().unwrap(),
            "--worker",
            &same.addr,
            "--token-file",
            "token",
        ],
        here.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("reads only files below its working directory"),
        "{text}"
    );
    assert_eq!(
        count.load(Ordering::Relaxed),
        0,
        "no load before every worker agreed"
    );
    // The same workers agreeing do run it.
    let (code, r, text) = run(
        &["plan.yaml", "--worker", &same.addr, "--token-file", "token"],
        here.path(),
    );
    assert_eq!(code, Some(0), "{text}");
    // Every request the server saw is in the result, and nothing else.
    let requests = r["summary"]["requests"].as_u64().unwrap();
    assert_eq!(requests, count.load(Ordering::Relaxed), "{text}");
    assert_eq!(r["summary"]["ok"].as_u64().unwrap(), requests, "{text}");
}

#[test]
fn a_worker_that_dies_is_named_and_the_run_reported_short() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "t0k3n\n").unwrap();
    let a = Worker::start("t0k3n", dir.path());
    let b = Worker::start("t0k3n", dir.path());
    let (a_addr, b_addr) = (a.addr.clone(), b.addr.clone());
    // Killed 2.5 s into a 5 s run (the start is about half a second after the command).
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(3000));
        drop(b);
    });
    let t0 = Instant::now();
    let args = [
        srv.url("/"),
        "--rate".into(),
        "200".into(),
        "-d".into(),
        "5s".into(),
        "--worker".into(),
        a_addr,
        "--worker".into(),
        b_addr.clone(),
        "--token-file".into(),
        "token".into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, r, text) = run(&args, dir.path());
    killer.join().unwrap();
    // Less was delivered than was asked, and no one asked it to stop: a tool error (not 130,
    // which says the user interrupted), the result kept.
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("  short: worker ") && text.contains("error: the run is short: worker "),
        "{text}"
    );
    assert!(!text.contains("interrupted:"), "{text}");
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    let ws = workers(&r);
    let dead = ws
        .iter()
        .find(|w| w["name"] == b_addr.as_str())
        .expect("named");
    assert_eq!(dead["status"], "lost", "{dead}");
    assert!(
        dead["requests"].as_u64().unwrap() > 50,
        "it sent what it had: {dead}"
    );
    let alive = ws.iter().find(|w| w["name"] != b_addr.as_str()).unwrap();
    assert_eq!(alive["status"], "done", "{alive}");
    assert_eq!(alive["requests"], 500, "its whole share: {alive}");
    let total = r["summary"]["requests"].as_u64().unwrap();
    assert!(total < 1000 && total > 550, "{total}");
    assert!(r["scenarios"][0]["interrupted"].as_bool().unwrap(), "{r}");
    assert!(
        text.contains("lost") && text.contains("its share was not re-run"),
        "{text}"
    );
}

#[test]
fn an_abort_judged_on_the_merged_seconds_stops_every_worker() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    // Every other request fails.
    let srv = testkit::serve(Arc::new(|r: &Req| match r.seq % 2 {
        0 => Reply::status(503),
        _ => Reply::ok("ok\n", Duration::ZERO),
    }))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        "target: {}\nscenarios:\n  - name: s\n    load: {{ rate: 100/s, duration: 30s }}\n    requests: [ {{ path: / }} ]\n    slo: [ \"errors < 1% over 1s abort\" ]\n",
        srv.url("")
    );
    std::fs::write(dir.path().join("plan.yaml"), plan).unwrap();
    let t0 = Instant::now();
    let (code, r, text) = run(&["plan.yaml", "--workers", "2"], dir.path());
    assert_eq!(code, Some(1), "{text}");
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "{:?}: {text}",
        t0.elapsed()
    );
    let sc = &r["scenarios"][0];
    assert_eq!(sc["aborted_by"], "errors < 1% over 1s abort", "{sc}");
    for w in workers(&r) {
        assert_eq!(w["status"], "done", "{w}");
        assert!(w["requests"].as_u64().unwrap() < 500, "it stopped: {w}");
    }
}

#[test]
fn a_search_over_two_workers_finds_the_capacity_one_process_finds() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    // As in find.rs: 4 slots of 20 ms; p99 < 50 ms holds up to 9 connections.
    let srv = testkit::serve_with(
        testkit::Options {
            threads: 2,
            slots: Some(4),
            ..testkit::Options::default()
        },
        Arc::new(|_: &Req| Reply::Full {
            status: 200,
            body: b"ok".to_vec(),
            delay: Duration::from_millis(20),
            slot: true,
            close: false,
        }),
    )
    .unwrap();
    let url = srv.url("/");
    let (code, r, text) = crate::find::find(
        &[
            &url,
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
            "--workers",
            "2",
        ],
        Duration::from_secs(180),
    );
    assert_eq!(code, Some(0), "{text}");
    let level = r["find"]["max_sustainable"]["level"].as_f64().unwrap();
    assert!((8.0..=10.0).contains(&level), "{level}, truth 9:\n{text}");
    let steps = r["scenarios"].as_array().unwrap();
    assert!(steps
        .iter()
        .all(|s| s["workers"].as_array().is_some_and(|w| w.len() == 2)));
}

#[test]
fn a_worker_with_no_time_to_spare_is_named() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let load = "    load: { connections: 16, duration: 2s }\n";
    let plan = crate::generator::heavy_plan(dir.path(), &srv.url(""), load);
    let (code, r, text) = run(&[&plan, "--threads", "1", "--workers", "2"], dir.path());
    assert_eq!(code, Some(0), "{text}");
    let g = &r["scenarios"][0]["generator"];
    assert_eq!(g["limited"], true, "{g}\n{text}");
    let why = g["why"].as_str().unwrap();
    assert!(why.starts_with("worker 127.0.0.1:"), "{why}");
    assert!(
        why.contains("the generator, not the service, limited this run"),
        "{why}"
    );
    for w in workers(&r) {
        let ready =
            w["busy_percent"].as_f64().unwrap() + w["waiting_percent"].as_f64().unwrap_or(0.0);
        assert!(ready > 50.0, "{w}");
    }
    assert!(text.contains("worker 127.0.0.1:"), "{text}");
}

#[test]
fn workers_over_tls_and_mutual_tls() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = testkit::tls::files(dir.path()).unwrap();
    std::fs::write(dir.path().join("token"), "t\n").unwrap();
    let tls = Worker::start_with("t", dir.path(), &[&f.server_cert, &f.server_key]);
    let mtls = Worker::start_with("t", dir.path(), &[&f.server_cert, &f.server_key, &f.ca]);
    let url = srv.url("/");
    let run_on = |w: &Worker, extra: &[&Path]| {
        let mut args: Vec<String> = [
            url.as_str(),
            "-n",
            "50",
            "-c",
            "2",
            "--token-file",
            "token",
            "--worker",
            &w.addr,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (flag, file) in ["--worker-cacert", "--worker-cert", "--worker-key"]
            .iter()
            .zip(extra)
        {
            args.push(flag.to_string());
            args.push(file.display().to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args, dir.path())
    };
    // TLS, the worker's certificate checked against the CA.
    let (code, r, text) = run_on(&tls, &[&f.ca]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(r["summary"]["requests"], 50);
    // Plain HTTP/2 to a TLS worker, and a CA that did not issue its certificate: refused.
    let one_line = |text: &str| text.trim().lines().count() == 1;
    let (code, _, text) = run_on(&tls, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        one_line(&text) && text.contains("--worker-cacert"),
        "{text}"
    );
    let (code, _, text) = run_on(&tls, &[&f.other_ca]);
    assert_eq!(code, Some(2), "{text}");
    assert!(one_line(&text) && text.contains("TLS"), "{text}");
    // Mutual TLS: without a certificate refused, with the CA's client certificate served.
    let (code, _, text) = run_on(&mtls, &[&f.ca]);
    assert_eq!(code, Some(2), "{text}");
    assert!(one_line(&text) && text.contains("--worker-cert"), "{text}");
    let (code, r, text) = run_on(&mtls, &[&f.ca, &f.client_cert, &f.client_key]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(r["summary"]["requests"], 50);
    assert_eq!(
        srv.counters.requests.load(Ordering::Relaxed),
        100,
        "no load from a refused run"
    );
}

#[test]
fn the_report_shows_the_workers_and_escapes_what_they_said() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (code, mut r, text) = run(&[&srv.url("/"), "-n", "100", "--workers", "2"], dir.path());
    assert_eq!(code, Some(0), "{text}");
    // A worker is another machine: its host name and its reasons are its own words.
    r["scenarios"][0]["workers"][0]["host"] = "<script>alert(1)</script>".into();
    r["scenarios"][0]["workers"][1]["why"] = "<img src=x onerror=alert(2)>".into();
    let file = dir.path().join("hostile.json");
    std::fs::write(&file, r.to_string()).unwrap();
    let page = dir.path().join("page.html");
    let o = brink()
        .args(["report"])
        .arg(&file)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<caption>Workers</caption>"),
        "no workers table"
    );
    assert!(html.contains("<td>1 of 2</td>") && html.contains("<td>2 of 2</td>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<script>alert(1)") && !html.contains("<img src=x"));
}

#[test]
fn ctrl_c_stops_every_worker_and_keeps_what_they_measured() {
    use std::os::unix::process::CommandExt;
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    // As a terminal does: the command leads its own process group, and Ctrl-C is SIGINT to
    // the whole group.
    let mut child = crate::support::held(std::process::Command::cargo_bin("brink"))
        .unwrap()
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "200",
            "-d",
            "30s",
            "--workers",
            "2",
        ])
        .args(["--no-history", "-q", "--json", out.to_str().unwrap()])
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    let t0 = Instant::now();
    // SAFETY: signals the group the child leads.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let r: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    for w in workers(&r) {
        assert_eq!(
            w["status"], "done",
            "the workers were told to stop, not killed: {w}"
        );
    }
    let sum: u64 = workers(&r)
        .iter()
        .map(|w| w["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, r["summary"]["requests"].as_u64().unwrap());
    assert!(sum >= 300, "about 2.5 s at 200/s: {sum}");
    assert_eq!(
        srv.counters.requests.load(Ordering::Relaxed),
        sum,
        "every request sent is counted"
    );
}

#[test]
fn a_worker_lost_mid_search_ends_it_named_and_not_as_a_pass() {
    // Worker processes generating a light load (under a tenth of a CPU, measured): beside
    // other light tests only.
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t0k3n\n").unwrap();
    let a = Worker::start("t0k3n", dir.path());
    let b = Worker::start("t0k3n", dir.path());
    let (a_addr, b_addr) = (a.addr.clone(), b.addr.clone());
    // Steps of 2 s: killed during the second one (the first starts about half a second in).
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(3500));
        drop(b);
    });
    let url = srv.url("/");
    let (code, r, text) = crate::find::find(
        &[
            &url,
            "--by",
            "rate",
            "--from",
            "100",
            "--to",
            "3200",
            "--slo",
            "p99<500ms",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--worker",
            &a_addr,
            "--worker",
            &b_addr,
            "--token-file",
            token.to_str().unwrap(),
        ],
        Duration::from_secs(90),
    );
    killer.join().unwrap();
    // The search did not finish: a tool error, not "capacity found".
    assert_eq!(code, Some(2), "{text}");
    let stopped = r["find"]["stopped"].as_str().unwrap_or_default();
    assert!(
        stopped.contains(&b_addr) && stopped.contains("lost") && stopped.starts_with("step "),
        "{stopped}"
    );
    assert!(text.contains(&b_addr) && text.contains("lost"), "{text}");
    assert!(
        text.contains(" Capacity: at least ") && text.contains("ended before it found the limit"),
        "what passed is a floor: {text}"
    );
    assert!(
        !text.contains(&format!("worker {b_addr}: ")),
        "the worker is named once: {text}"
    );
    let steps = r["scenarios"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "the search ended at the broken step: {r}");
    assert_eq!(steps[1]["interrupted"], true, "{r}");
}

#[test]
fn a_worker_busy_with_another_run_is_a_one_line_refusal_before_any_load() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "t0k3n\n").unwrap();
    let a = Worker::start("t0k3n", dir.path());
    let first = crate::support::held(std::process::Command::cargo_bin("brink"))
        .unwrap()
        .current_dir(dir.path())
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "50",
            "-d",
            "5s",
            "--no-history",
        ])
        .args(["--worker", &a.addr, "--token-file", "token"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let t0 = Instant::now();
    let (code, _, text) = run(
        &[
            &srv.url("/"),
            "-d",
            "2s",
            "--worker",
            &a.addr,
            "--token-file",
            "token",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("this worker is already running another load"),
        "{text}"
    );
    assert!(!text.contains("success rate"), "no empty report: {text}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let (code, _) = crate::support::watch_peak(first, Duration::from_secs(30));
    assert_eq!(code, Some(0), "the first run was left alone");
}

#[test]
fn a_peer_that_never_answers_is_no_worker_within_seconds() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    // It accepts and says nothing: no HTTP/2 settings, no answer to the request.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let held = std::thread::spawn(move || {
        let (s, _) = silent.accept().unwrap();
        std::thread::sleep(Duration::from_secs(12));
        drop(s);
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "t0k3n\n").unwrap();
    let t0 = Instant::now();
    let (code, _, text) = run(
        &[
            "http://127.0.0.1:9/",
            "-d",
            "2s",
            "--worker",
            &addr,
            "--token-file",
            "token",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("no answer within 5s") && text.contains("is it a brink worker?"),
        "{text}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(text.trim().lines().count(), 1, "one line: {text}");
    held.join().unwrap();
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .flat_map(|t| {
            let path = t.unwrap().path().join("children");
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[test]
fn workers_started_here_end_with_a_coordinator_killed_outright() {
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("ok\n", Duration::ZERO))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut coordinator = crate::support::held(std::process::Command::cargo_bin("brink"))
        .unwrap()
        .current_dir(dir.path())
        .args([
            "run",
            &srv.url("/"),
            "--rate",
            "50",
            "-d",
            "30s",
            "--no-history",
        ])
        .args(["--workers", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Both workers up and loading.
    let t0 = Instant::now();
    let workers = loop {
        let w = children_of(coordinator.id());
        if w.len() == 2 && srv.counters.requests.load(Ordering::Relaxed) > 20 {
            break w;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no workers: {w:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    coordinator.kill().unwrap();
    coordinator.wait().unwrap();
    let gone = |p: &u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    };
    let t1 = Instant::now();
    while !workers.iter().all(gone) {
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "workers {workers:?} outlived their coordinator"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
