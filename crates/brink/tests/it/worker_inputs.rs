//! What a worker reads. Whoever holds a worker's token chooses the command it runs, so the
//! worker must not hand them its host's secrets: `{{env NAME}}` values come from the
//! coordinator, files are read below the worker's folder only (no link out of it), a worker
//! will not start in `/`, and no input that is not a regular file is read at all.

use crate::support::Killed;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn brink() -> Command {
    Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
}

/// `brink validate PLAN` with `extra` flags: (exit code, stderr).
fn validate(plan: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = brink()
        .arg("validate")
        .args(extra)
        .arg(plan)
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `brink worker` started in `dir` with `env`; its address.
fn worker(dir: &Path, env: &[(&str, &str)]) -> (Killed, String) {
    let mut c = brink();
    c.current_dir(dir)
        .args(["worker", "--listen", "127.0.0.1:0"])
        .env("BRINK_WORKER_TOKEN", "worker-inputs-token-01234")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("worker starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a line");
    let addr = line
        .trim()
        .strip_prefix("brink worker listening on ")
        .unwrap_or_else(|| panic!("the worker says where: {line}"))
        .to_string();
    (Killed(child), addr)
}

/// `brink run ARGS --worker ADDR` from `dir` with `env`: (exit code, stderr).
fn coordinate(
    dir: &Path,
    addr: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let token = tempfile::NamedTempFile::new().expect("token file");
    std::fs::write(token.path(), "worker-inputs-token-01234\n").expect("token");
    let mut c = brink();
    c.current_dir(dir)
        .args(["run"])
        .args(args)
        .args(["--worker", addr, "-q", "--no-history", "--token-file"])
        .arg(token.path())
        .env_remove("SECRET_X");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = assert_cmd::Command::from_std(c)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("coordinator runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_worker_sends_the_coordinators_values_never_its_own() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    let srv = testkit::serve(Arc::new(move |r: &testkit::Req| {
        if let Some(v) = r.header("x-secret") {
            s.lock().unwrap().push(v.to_string());
        }
        testkit::Reply::ok("ok", Duration::ZERO)
    }))
    .expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = format!(
        "target: {}\nscenarios:\n  - name: s\n    load: {{ connections: 1, requests: 3 }}\n    requests: [ {{ path: /, headers: {{ X-Secret: \"{{{{env SECRET_X}}}}\" }} }} ]\n",
        srv.url("")
    );
    std::fs::write(dir.path().join("plan.yaml"), plan).expect("plan");
    let (_w, addr) = worker(dir.path(), &[("SECRET_X", "the-workers-own-secret")]);

    let (code, err) = coordinate(dir.path(), &addr, &["plan.yaml"], &[]);
    assert_eq!(code, Some(2), "not set where the user runs brink: {err}");
    assert!(err.contains("SECRET_X"), "{err}");

    let (code, err) = coordinate(
        dir.path(),
        &addr,
        &["plan.yaml"],
        &[("SECRET_X", "the-coordinators-value")],
    );
    assert_eq!(code, Some(0), "{err}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen.iter().all(|v| v == "the-coordinators-value"),
        "the worker's own environment never reaches the wire: {seen:?}"
    );
}

#[test]
fn a_worker_reads_only_regular_files_below_its_folder() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let outer = tempfile::tempdir().expect("temp dir");
    std::fs::write(outer.path().join("secret.txt"), "not the worker's to send").expect("secret");
    let dir = outer.path().join("work");
    std::fs::create_dir(&dir).expect("mkdir");
    let dir = dir.as_path();
    std::os::unix::fs::symlink("/", dir.join("rootlink")).expect("link");
    std::os::unix::fs::symlink("../secret.txt", dir.join("up.txt")).expect("link");
    std::fs::write(dir.join("body.txt"), "fine").expect("body");
    let (_w, addr) = worker(dir, &[]);
    let url = srv.url("/");
    for file in ["rootlink/etc/hostname", "up.txt", "../secret.txt"] {
        let args = [url.as_str(), "-n", "2", "--body-file", file];
        let (code, err) = coordinate(dir, &addr, &args, &[]);
        assert_ne!(code, Some(0), "{file}: {err}");
        let refused = ["outside the worker's working folder", "relative paths"];
        assert!(refused.iter().any(|r| err.contains(r)), "{file}: {err}");
    }
    assert_eq!(srv.counters.requests(), 0, "nothing read outside was sent");
    let args = [url.as_str(), "-n", "2", "--body-file", "body.txt"];
    let (code, err) = coordinate(dir, &addr, &args, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(srv.counters.requests(), 2);

    // A worker whose folder is / could read every file: it does not start.
    let out = brink()
        .current_dir("/")
        .args(["worker", "--listen", "127.0.0.1:0"])
        .env("BRINK_WORKER_TOKEN", "worker-inputs-token-01234")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must not be /"), "{err}");
}

/// A data file that is a device (`/dev/zero`, endless) is refused before a byte is read, and
/// one over `--max-data-size` before it is read.
#[test]
fn an_endless_or_oversized_input_is_refused_before_it_is_read() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\ndata:\n  users: { csv: /dev/zero }\nscenarios:\n  - name: s\n    requests: [ { path: \"/{{data.users.a}}\" } ]\n",
    )
    .expect("plan");
    let t = std::time::Instant::now();
    let (code, err) = validate(&plan, &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a regular file"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

    std::fs::write(dir.path().join("big.csv"), "a\n".repeat(1000)).expect("csv");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\ndata:\n  users: { csv: big.csv }\nscenarios:\n  - name: s\n    requests: [ { path: \"/{{data.users.a}}\" } ]\n",
    )
    .expect("plan");
    let (code, err) = validate(&plan, &["--max-data-size", "1KiB"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--max-data-size"), "{err}");
    let (code, err) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{err}");
}

/// A 100 MiB CSV of short rows (`N,M`, about eleven million) validates in seconds and in
/// under twice its size in memory (it took 9 GB, a String per cell, before).
#[test]
fn a_big_data_set_is_stored_compactly() {
    let _cpu = crate::support::cpu_exclusive();
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("big.csv");
    let mut text = String::with_capacity(101 << 20);
    text.push_str("n,m\n");
    let mut i = 0u64;
    while text.len() < 100 << 20 {
        text.push_str(&format!("{},{}\n", i, i % 97));
        i += 1;
    }
    std::fs::write(&csv, &text).expect("csv");
    let size_mib = text.len() as u64 >> 20;
    drop(text);
    let plan = dir.path().join("p.yaml");
    std::fs::write(
        &plan,
        "target: http://127.0.0.1:9/\ndata:\n  rows: { csv: big.csv }\nscenarios:\n  - name: s\n    requests: [ { path: \"/{{data.rows.n}}/{{data.rows.m}}\" } ]\n",
    )
    .expect("plan");
    let t = std::time::Instant::now();
    let child = brink()
        .args(["validate"])
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let (code, peak_mib) = crate::support::watch_peak(child, Duration::from_secs(60));
    let took = t.elapsed();
    eprintln!(
        "{i} rows, {size_mib} MiB: {:.1} s, peak {peak_mib} MiB",
        took.as_secs_f64()
    );
    assert_eq!(code, Some(0));
    assert!(peak_mib < 2 * size_mib + 16, "peak {peak_mib} MiB");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// A body template whose data cells could make a request larger than --max-data-size is
/// refused when the plan is checked, not when memory runs out.
#[test]
fn a_body_that_could_expand_past_the_limit_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("blobs.csv"),
        format!("b\n{}\nsmall\n", "x".repeat(2000)),
    )
    .expect("csv");
    let plan = dir.path().join("p.yaml");
    let body = "{{data.blobs.b}}".repeat(10);
    std::fs::write(
        &plan,
        format!("target: http://127.0.0.1:9/\ndata:\n  blobs: {{ csv: blobs.csv }}\nscenarios:\n  - name: s\n    requests: [ {{ name: up, method: POST, path: /, body: \"{body}\" }} ]\n"),
    )
    .expect("plan");
    let (code, err) = validate(&plan, &["--max-data-size", "16KiB"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("p.yaml:6:"), "{err}");
    assert!(err.contains("could reach 20000 bytes"), "{err}");
    let (code, err) = validate(&plan, &[]);
    assert_eq!(code, Some(0), "{err}");
}

/// `-H` is one rule on every protocol: a template. Over HTTP, `{{seq}}` numbers each request
/// and `{{env NAME}}` takes a secret from the environment instead of the command line.
#[test]
fn header_flags_are_templates_over_http_too() {
    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let s = seen.clone();
    let srv = testkit::serve(Arc::new(move |r: &testkit::Req| {
        let h = |n| r.header(n).unwrap_or_default().to_string();
        s.lock().unwrap().push((h("x-seq"), h("authorization")));
        testkit::Reply::ok("ok", Duration::ZERO)
    }))
    .expect("server");
    let out = brink()
        .env("API_TOKEN", "from-the-environment")
        .args([
            "run",
            &srv.url("/"),
            "-n",
            "3",
            "-c",
            "1",
            "-q",
            "--no-history",
        ])
        .args([
            "-H",
            "X-Seq: n{{seq}}",
            "-H",
            "Authorization: Bearer {{env API_TOKEN}}",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen.lock().unwrap().clone();
    let seqs: Vec<&str> = seen.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(seqs.len(), 3);
    assert!(
        seqs.iter()
            .all(|s| s.starts_with('n') && s[1..].parse::<u64>().is_ok()),
        "{seqs:?}"
    );
    assert_ne!(seqs[0], seqs[1]);
    assert!(
        seen.iter().all(|(_, a)| a == "Bearer from-the-environment"),
        "{seen:?}"
    );
    let out = brink()
        .args(["run", &srv.url("/"), "-n", "1", "-q", "--no-history"])
        .args(["-H", "X-Bad: {{nope}}"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-H X-Bad"));
}
