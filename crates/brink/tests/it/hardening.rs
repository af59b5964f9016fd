//! What a careful user found by trying hostile and odd servers on 127.0.0.1: request injection
//! through templated values, answers that arrive while the request is still being written,
//! result files, flag values, framing edge cases and connection setup. Each test runs against a
//! real server and fails on the behaviour before its fix.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use testkit::{Handler, Reply, Req};

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

/// Runs brink with `args` to the end (at most 30 s) and returns what it printed.
fn output(args: &[&str]) -> std::process::Output {
    brink()
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .expect("brink runs")
}

fn plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).expect("write plan");
    path
}

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("result written")).expect("valid JSON")
}

/// Every request a server saw: method, path, headers.
type Seen = Arc<Mutex<Vec<(String, String, Vec<(String, String)>)>>>;

/// A login service whose token smuggles a header and a second request, and an API that
/// accepts any bearer token. Returns the handler and what it saw.
fn hostile_login() -> (Handler, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let handler: Handler = Arc::new(move |r: &Req| {
        s.lock().unwrap_or_else(PoisonError::into_inner).push((
            r.method.to_string(),
            r.path.to_string(),
            r.headers.to_vec(),
        ));
        if r.path.starts_with("/login") {
            let token = r#"{"token":"abc\r\nX-Injected: yes\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"}"#;
            Reply::ok(token, Duration::ZERO)
        } else {
            Reply::ok("{}", Duration::ZERO)
        }
    });
    (handler, seen)
}

const FLOW: &str = r#"scenarios:
  - name: smuggle
    load: { connections: 2, requests: 40 }
    flow:
      - { name: login, method: POST, path: /login, body: '{}', extract: { token: "$.token" } }
      - { name: api, path: /api, headers: { Authorization: "Bearer {{token}}" } }
"#;

/// A token from a response that would add a header and smuggle a request is refused on every
/// protocol path: never sent, counted once per attempt as `invalid_request`, and the summary
/// names the request, the header and the escaped value.
#[test]
fn a_hostile_token_never_adds_a_header_or_a_request() {
    let cases: [(&str, bool, &[&str]); 3] = [
        ("http/1.1", false, &[]),
        ("tls", true, &["--insecure"]),
        ("h2c", false, &["--http2"]),
    ];
    for (name, tls, flags) in cases {
        let (handler, seen) = hostile_login();
        let opts = testkit::Options {
            tls,
            ..testkit::Options::default()
        };
        let srv = if name == "h2c" {
            testkit::serve_hyper(opts, handler)
        } else {
            testkit::serve_with(opts, handler)
        }
        .expect("server starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let p = plan(dir.path(), &format!("target: {}\n{FLOW}", srv.url("")));
        let out = dir.path().join("r.json");
        let run = brink()
            .args(["run", p.to_str().unwrap(), "--json", out.to_str().unwrap()])
            .args(flags)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("brink runs");
        let stdout = String::from_utf8_lossy(&run.stdout);
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert!(
            seen.iter().all(|(_, path, _)| path == "/login"),
            "{name}: only logins may reach the server: {:?}",
            seen.iter().map(|s| &s.1).collect::<Vec<_>>()
        );
        assert!(
            seen.iter()
                .all(|(_, _, h)| h.iter().all(|(n, _)| !n.eq_ignore_ascii_case("x-injected"))),
            "{name}: injected header arrived"
        );
        // 40 attempts alternate login and api on each of 2 connections; the last ticket may
        // go to a login whose api step gets none.
        let logins = seen.len() as u64;
        assert!((20..=21).contains(&logins), "{name}: {logins} logins");
        let refused_n = 40 - logins;
        let r = json_of(&out);
        let s = &r["summary"];
        assert_eq!(s["requests"], 40, "{name}");
        assert_eq!(s["errors_by_kind"]["invalid_request"], refused_n, "{name}");
        assert_eq!(s["ok"], logins, "{name}");
        let refused = &r["scenarios"][0]["refused"][0];
        assert_eq!(refused["request"], "api", "{name}");
        assert_eq!(refused["part"], "header Authorization", "{name}");
        assert_eq!(refused["count"], refused_n, "{name}");
        let value = refused["value"].as_str().unwrap_or("");
        assert!(
            value.starts_with("Bearer abc\\r\\nX-Injected: yes\\r\\n"),
            "{name}: {value}"
        );
        assert!(
            stdout.contains(&format!("invalid_request {refused_n}"))
                && stdout.contains(&format!(
                    "{refused_n} attempt(s) of 'api' never sent: header Authorization"
                )),
            "{name}: {stdout}"
        );
    }
}

/// A CSV cell that would split the request line is refused; the good rows are sent.
#[test]
fn a_data_cell_cannot_break_the_request_line() {
    let (handler, seen) = hostile_login();
    let srv = testkit::serve(handler).expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("ids.csv"),
        "id\n7\n\"8 HTTP/1.1\r\nX-Injected: yes\r\n\r\nGET /smuggled\"\n",
    )
    .expect("write csv");
    let text = format!(
        "target: {}\ndata:\n  ids: {{ csv: ids.csv }}\nscenarios:\n  - name: items\n    load: {{ connections: 1, requests: 10 }}\n    requests:\n      - {{ name: item, path: \"/items/{{{{data.ids.id}}}}\" }}\n",
        srv.url("")
    );
    let p = plan(dir.path(), &text);
    let (code, r) = run_json(p.to_str().unwrap(), &[]);
    assert_eq!(code, Some(0));
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(seen.len(), 5, "every other row is good");
    assert!(seen.iter().all(|(_, p, _)| p == "/items/7"), "{seen:?}");
    assert_eq!(r["summary"]["errors_by_kind"]["invalid_request"], 5);
    assert_eq!(r["scenarios"][0]["refused"][0]["part"], "path");
}

/// Literal values that could never be sent are refused before any load: on the command line
/// (one line, exit 2) and in a plan (file:line:column, by `validate` and `run`).
#[test]
fn literal_injection_is_refused_before_the_run() {
    let (handler, seen) = hostile_login();
    let srv = testkit::serve(handler).expect("server starts");
    brink()
        .args(["run", &srv.url("/api"), "-n", "1", "-H", "X-A: a\r\nX-B: b"])
        .timeout(Duration::from_secs(10))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "-H X-A: carriage return (CR) in a header value",
        ));
    let dir = tempfile::tempdir().expect("temp dir");
    let p = plan(
        dir.path(),
        &format!(
            "target: {}\nscenarios:\n  - name: a\n    requests:\n      - {{ path: /a, headers: {{ X-A: \"v\\r\\nX-Injected: yes\" }} }}\n",
            srv.url("")
        ),
    );
    for cmd in ["validate", "run"] {
        let out = brink()
            .args([cmd, p.to_str().unwrap()])
            .timeout(Duration::from_secs(10))
            .output()
            .expect("brink runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("plan.yaml:5:37: header X-A: carriage return (CR) in a header value"),
            "{cmd}: {err}"
        );
    }
    assert!(seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_empty());
}

/// A server that answers 413 as soon as it has read the head of a 32 MiB upload and then drains
/// slowly: the answer is timed when it arrives (about a millisecond), not at the end of the
/// upload, and never reported as a timeout; over plain TCP and TLS.
#[test]
fn an_answer_during_the_upload_completes_the_attempt() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("temp dir");
    let body = dir.path().join("big.bin");
    std::fs::write(&body, vec![b'x'; 32 << 20]).expect("write body");
    for tls in [false, true] {
        let opts = testkit::Options {
            tls,
            answer_before_body: true,
            ..testkit::Options::default()
        };
        let srv = testkit::serve_with(opts, Arc::new(|_: &Req| Reply::status(413)))
            .expect("server starts");
        let out = dir.path().join(format!("r-{tls}.json"));
        let started = std::time::Instant::now();
        brink()
            .args(["run", &srv.url("/upload"), "-m", "POST", "--body-file"])
            .arg(&body)
            .args([
                "-n",
                "3",
                "-c",
                "1",
                "--timeout",
                "5s",
                "--ok-status",
                "413",
            ])
            .args(["--insecure", "-q", "--json", out.to_str().unwrap()])
            .timeout(Duration::from_secs(60))
            .assert()
            .code(0);
        let took = started.elapsed();
        let r = json_of(&out);
        let s = &r["summary"];
        assert_eq!(s["ok"], 3, "tls={tls}: {s}");
        assert_eq!(s["errors_by_kind"]["timeout"], 0, "tls={tls}");
        let max = s["latency_ms"]["max"].as_f64().unwrap_or(f64::MAX);
        assert!(
            max < 1000.0,
            "tls={tls}: answered at once, measured {max} ms"
        );
        assert!(
            took < Duration::from_secs(15),
            "tls={tls}: three 5 s timeouts would take 15 s, took {took:?}"
        );
        assert_eq!(
            srv.counters.connections(),
            3,
            "tls={tls}: no reuse after a partial upload"
        );
    }
}

/// Runs `brink run URL args... --json` and returns (exit code, result).
fn run_json(url: &str, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("r.json");
    let run = brink()
        .args(["run", url, "-q", "--json", out.to_str().unwrap()])
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .expect("brink runs");
    (run.status.code(), json_of(&out))
}

/// Transfer-Encoding and Content-Length both: chunked wins.
const TE_CL: &[u8] =
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n5\r\nhello\r\n0\r\n\r\n";

fn raw(bytes: &[u8], close: bool) -> Reply {
    Reply::Raw {
        bytes: bytes.to_vec(),
        close,
    }
}

/// Framing edge cases, each once a miscount: Transfer-Encoding with Content-Length (chunked
/// wins, the connection is closed after it), a final coding other than chunked (read until
/// close), 101 and out-of-range statuses (protocol errors, never success, never a "999" key),
/// and bytes after the end of a response (one protocol error, never the next answer).
#[test]
fn framing_edge_cases_are_counted_right() {
    framing_cases(false);
    framing_cases(true);
}

fn framing_cases(tls: bool) {
    let handler: testkit::Handler = Arc::new(|r: &Req| {
        match r.path {
        "/te-cl" => raw(TE_CL, false),
        "/te-gzip" => raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", true),
        "/101" => raw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false),
        "/999" => raw(b"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n", false),
        "/stray" => raw(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        "/blank-after" => raw(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n", false),
        _ => Reply::Stray {
            body: b"ok".to_vec(),
            after: Duration::from_millis(30),
            stray: b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n".to_vec(),
        },
    }
    });
    let opts = testkit::Options {
        tls,
        ..testkit::Options::default()
    };
    let srv = testkit::serve_with(opts, handler).expect("server starts");
    let closed = ["-n", "6", "-c", "1", "--insecure"];
    let conns = |before: u64| srv.counters.connections() - before;

    let before = srv.counters.connections();
    let (code, r) = run_json(&srv.url("/te-cl"), &closed);
    assert_eq!(
        (code, &r["summary"]["ok"]),
        (Some(0), &6.into()),
        "{}",
        r["summary"]
    );
    // Every byte of the six answers was read, and nothing else.
    assert_eq!(
        r["summary"]["bytes_in"],
        6 * TE_CL.len(),
        "{}",
        r["summary"]
    );
    assert_eq!(conns(before), 6, "closed after each ambiguous message");

    let (code, r) = run_json(&srv.url("/te-gzip"), &closed);
    assert_eq!(
        (code, &r["summary"]["ok"]),
        (Some(0), &6.into()),
        "{}",
        r["summary"]
    );

    for path in ["/101", "/999"] {
        let (code, r) = run_json(&srv.url(path), &closed);
        let s = &r["summary"];
        assert_eq!(code, Some(3), "{path}: nothing succeeded");
        assert_eq!(s["errors_by_kind"]["protocol"], 6, "{path}: {s}");
        assert_eq!(s["status"], serde_json::json!({}), "{path}: {s}");
        // Each says which rule its answers broke.
        let want = match path {
            "/101" => "it switched protocols (101), which brink never asked for",
            _ => "its status is outside 100-599",
        };
        let failures = &r["scenarios"][0]["answer_failures"][0];
        assert_eq!(failures["reason"], want, "{path}: {failures}");
        assert_eq!(failures["count"], 6, "{path}: {failures}");
    }

    // Bytes right after an answer break its framing: six requests, six answers counted as
    // `protocol` errors (never a second, unasked answer); blank lines after it are tolerated.
    let before = srv.counters.connections();
    let (code, r) = run_json(&srv.url("/stray"), &closed);
    let s = &r["summary"];
    assert_eq!(code, Some(3), "nothing succeeded: {s}");
    assert_eq!(
        (&s["requests"], &s["ok"], &s["errors_by_kind"]["protocol"]),
        (&6.into(), &0.into(), &6.into()),
        "{s}"
    );
    assert_eq!(
        s["status"],
        serde_json::json!({"200": 6}),
        "the stray 500 is no answer: {s}"
    );
    let why = &r["scenarios"][0]["answer_failures"][0]["reason"];
    assert!(
        why.as_str()
            .unwrap_or("")
            .contains("bytes came past the answer's end"),
        "{why}"
    );
    assert_eq!(conns(before), 6);
    let before = srv.counters.connections();
    let (code, r) = run_json(&srv.url("/blank-after"), &closed);
    let s = &r["summary"];
    assert_eq!(code, Some(0), "{s}");
    assert_eq!((&s["requests"], &s["ok"]), (&6.into(), &6.into()), "{s}");
    assert_eq!(conns(before), 6, "not used again after bytes past the end");

    // Stray bytes on an idle connection (open model, 200 ms between requests): one protocol
    // error each, the connection dropped, the next request answered on a fresh one.
    let before = srv.counters.connections();
    let (code, r) = run_json(
        &srv.url("/late"),
        &["--rate", "5", "-d", "1s", "-c", "1", "--insecure"],
    );
    let s = &r["summary"];
    assert_eq!(code, Some(0));
    assert_eq!(s["ok"], 5, "{s}");
    // The last response's stray bytes may come after the run has ended.
    let stray = s["errors_by_kind"]["protocol"].as_u64().unwrap_or(0);
    assert!((4..=5).contains(&stray), "{s}");
    let why = &r["scenarios"][0]["answer_failures"][0]["reason"];
    assert!(
        why.as_str().unwrap_or("").contains("on an idle connection"),
        "{why}"
    );
    assert_eq!(s["status"], serde_json::json!({"200": 5}), "{s}");
    assert_eq!(conns(before), 5);
}

/// A server that rotates HTTP/2 connections every 100 requests (GOAWAY, as nginx does by
/// default) costs no errors: requests it never processed are sent again on a new connection
/// and counted once. Over h2c and h2 with TLS.
#[test]
fn http2_connection_rotation_costs_no_errors() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    for tls in [false, true] {
        let opts = testkit::Options {
            tls,
            rotate_after: Some(100),
            ..testkit::Options::default()
        };
        let srv = testkit::serve_hyper(opts, testkit::handlers::fixed(Duration::ZERO))
            .expect("server starts");
        let (code, r) = run_json(
            &srv.url("/"),
            &["--http2", "--insecure", "-c", "4", "-n", "3000"],
        );
        let s = &r["summary"];
        assert_eq!(code, Some(0), "tls={tls}: {s}");
        assert_eq!(
            (&s["requests"], &s["ok"]),
            (&3000.into(), &3000.into()),
            "tls={tls}: {s}"
        );
        assert_eq!(
            srv.counters.requests(),
            3000,
            "tls={tls}: each request processed once"
        );
        let conns = srv.counters.connections();
        assert!(
            conns >= 30,
            "tls={tls}: at least 30 rotations, saw {conns} connections"
        );
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Starts brink with `args`, output piped.
pub fn spawn(args: &[&str]) -> std::process::Child {
    std::process::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("brink starts")
}

/// Sends `sig` to `child`.
pub fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc_kill(child.id() as i32, sig) };
}

/// Waits for `child` to end; panics after `limit`. Returns (exit code, how long it took).
pub fn wait_at_most(child: &mut std::process::Child, limit: Duration) -> (Option<i32>, Duration) {
    let t = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("child status") {
            return (s.code(), t.elapsed());
        }
        assert!(t.elapsed() < limit, "did not stop within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A result that cannot be written is an error (one line, exit 2), and a run that fails leaves
/// the previous result file as it was: nothing is truncated before the new result is whole.
#[test]
fn result_files_are_whole_or_untouched() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server starts");
    let out = output(&[
        "run",
        &srv.url("/"),
        "-n",
        "20",
        "-q",
        "--json",
        "/dev/full",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: --json /dev/full: "), "{err}");

    // A TLS scenario after a plain one, with a CA file that is not a certificate: the whole
    // plan is checked before the first scenario sends anything, and the old result survives.
    let tls = testkit::serve_with(
        testkit::Options {
            tls: true,
            ..testkit::Options::default()
        },
        testkit::handlers::fixed(Duration::ZERO),
    )
    .expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let bad_ca = dir.path().join("ca.pem");
    std::fs::write(&bad_ca, "not a certificate").expect("write");
    let p = plan(
        dir.path(),
        &format!(
            "scenarios:\n  - {{ name: plain, target: {}, load: {{ requests: 10 }} }}\n  - {{ name: secure, target: {}, load: {{ requests: 10 }} }}\n",
            srv.url("/"),
            tls.url("/")
        ),
    );
    let result = dir.path().join("r.json");
    std::fs::write(&result, "previous result").expect("write");
    let before = srv.counters.requests();
    let out = brink()
        .args([
            "run",
            p.to_str().unwrap(),
            "-q",
            "--cacert",
            bad_ca.to_str().unwrap(),
        ])
        .args(["--json", result.to_str().unwrap()])
        .timeout(Duration::from_secs(20))
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("scenario 'secure'"), "{err}");
    // A URL on the command line is one scenario: its error needs no name in front.
    let out = brink()
        .args([
            "run",
            &tls.url("/"),
            "-n",
            "1",
            "-q",
            "--no-history",
            "--cacert",
        ])
        .arg(&bad_ca)
        .timeout(Duration::from_secs(20))
        .output()
        .expect("brink runs");
    let one = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{one}");
    assert!(!one.contains("scenario '"), "{one}");
    assert!(one.contains("ca.pem"), "{one}");
    assert_eq!(
        srv.counters.requests(),
        before,
        "nothing sent before the check failed"
    );
    assert_eq!(
        std::fs::read_to_string(&result).unwrap_or_default(),
        "previous result"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(names.len(), 3, "no temporary file left: {names:?}");
}

/// A scenario that fails at run time (its CA file vanished after the check) ends the run with
/// exit 2; the result keeps the finished scenario and records the failure.
#[test]
fn a_scenario_failing_at_run_time_keeps_the_earlier_ones() {
    let tls = testkit::serve_with(
        testkit::Options {
            tls: true,
            ..testkit::Options::default()
        },
        testkit::handlers::fixed(Duration::from_millis(1)),
    )
    .expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, tls.cert_pem.clone().unwrap_or_default()).expect("write");
    let p = plan(
        dir.path(),
        &format!(
            "target: {}\nscenarios:\n  - {{ name: first, load: {{ connections: 2, duration: 2s }} }}\n  - {{ name: second, load: {{ requests: 10 }} }}\n",
            tls.url("/")
        ),
    );
    let result = dir.path().join("r.json");
    let mut child = spawn(&[
        "run",
        p.to_str().unwrap(),
        "-q",
        "--cacert",
        ca.to_str().unwrap(),
        "--json",
        result.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(700));
    std::fs::remove_file(&ca).expect("remove the CA file mid-run");
    let (code, _) = wait_at_most(&mut child, Duration::from_secs(20));
    assert_eq!(code, Some(2));
    let r = json_of(&result);
    let sc = r["scenarios"].as_array().expect("scenarios");
    assert_eq!(sc.len(), 2, "{r}");
    assert!(
        sc[0]["summary"]["ok"].as_u64().unwrap_or(0) > 10,
        "{}",
        sc[0]["summary"]
    );
    assert!(sc[0].get("error").is_none());
    assert!(
        sc[1]["error"].as_str().unwrap_or("").contains("ca.pem"),
        "{}",
        sc[1]
    );
}

/// Two interrupts (as `timeout -s INT` forwards) still leave a complete result marked
/// interrupted; a third exits at once.
#[test]
fn a_second_interrupt_still_writes_the_result() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(2))).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let result = dir.path().join("r.json");
    let url = srv.url("/");
    let mut child = spawn(&[
        "run",
        &url,
        "-c",
        "4",
        "-d",
        "30s",
        "-q",
        "--json",
        result.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1200));
    signal(&child, 2);
    signal(&child, 2);
    let (code, took) = wait_at_most(&mut child, Duration::from_secs(5));
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let r = json_of(&result);
    assert_eq!(r["interrupted"], true);
    assert!(
        r["summary"]["requests"].as_u64().unwrap_or(0) > 50,
        "{}",
        r["summary"]
    );

    // Three at once: out at once with 130 (whatever was not yet written is not written).
    let mut child = spawn(&["run", &url, "-c", "4", "-d", "30s", "-q"]);
    std::thread::sleep(Duration::from_millis(700));
    for _ in 0..3 {
        signal(&child, 2);
    }
    let (code, took) = wait_at_most(&mut child, Duration::from_secs(5));
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_millis(1500), "{took:?}");
}

/// Ctrl-C during a search's cooldown, or while it waits for a hung service to recover, stops
/// within a second (it used to sleep the cooldown out and probe for the whole --recovery).
#[test]
fn a_search_stops_within_a_second_in_cooldown_and_recovery() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let fine = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let hang: testkit::Handler = Arc::new(|r: &Req| {
        if r.seq < 40 {
            Reply::ok("ok", Duration::ZERO)
        } else {
            Reply::Hang
        }
    });
    let hung = testkit::serve(hang).expect("server");
    let step = ["--step", "2s", "--warmup", "1s", "--recovery", "60s", "-q"];
    let cases = [
        // Passes its first step, then waits out a 60 s cooldown.
        (fine.url("/"), vec!["--cooldown", "60s"], 2600),
        // Its first step fails (the service hangs), then it probes for up to 60 s.
        (
            hung.url("/"),
            vec!["--cooldown", "0s", "--timeout", "200ms"],
            3000,
        ),
    ];
    for (i, (url, flags, wait_ms)) in cases.into_iter().enumerate() {
        let mut args = vec!["find", url.as_str()];
        args.extend_from_slice(&step);
        args.extend_from_slice(&flags);
        let mut child = spawn(&args);
        std::thread::sleep(Duration::from_millis(wait_ms));
        signal(&child, 2);
        let (code, took) = wait_at_most(&mut child, Duration::from_secs(10));
        assert_eq!(code, Some(130), "case {i}");
        assert!(
            took < Duration::from_millis(1500),
            "case {i}: stopped in {took:?}"
        );
    }
}

fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Connection setup is measured, not hidden: behind a TLS handshake that takes 300 ms, the
/// requests that had to open a connection carry the wait in their latency in both models
/// (service time leaves it out, the handshake has its own figures too), and without
/// keep-alive the summary also gives connect + request. Connections opened are counted, per
/// second too.
#[test]
fn connection_setup_is_latency_and_has_its_own_figures() {
    let opts = testkit::Options {
        tls: true,
        handshake_delay: Duration::from_millis(300),
        ..testkit::Options::default()
    };
    let srv =
        testkit::serve_with(opts, testkit::handlers::fixed(Duration::ZERO)).expect("server starts");
    let url = srv.url("/");

    let (code, r) = run_json(&url, &["--insecure", "-c", "2", "-n", "40"]);
    let s = &r["summary"];
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["connections_opened"], 2, "{s}");
    // The two requests that opened the connections waited for the 300 ms handshake: that is
    // their latency; service time (from the send) leaves it out, and the others never waited.
    assert!(
        ms(&s["latency_ms"]["max"]) >= 250.0 && ms(&s["latency_ms"]["p50"]) < 200.0,
        "closed: the connect is latency: {s}"
    );
    assert!(
        ms(&s["service_time_ms"]["max"]) < 200.0,
        "service time from the send: {s}"
    );
    assert!(
        ms(&s["tls_ms"]["p50"]) >= 250.0,
        "the handshake's own figure: {s}"
    );
    assert!(
        ms(&s["connect_ms"]["max"]) < 200.0,
        "TCP connect is quick here: {s}"
    );
    assert!(s["with_connect_ms"].is_null(), "keep-alive: {s}");
    let per_second: u64 = r["timeseries"].as_array().map_or(0, |rows| {
        rows.iter().filter_map(|x| x["connects"].as_u64()).sum()
    });
    assert_eq!(per_second, 2, "{}", r["timeseries"]);

    let (code, r) = run_json(&url, &["--insecure", "--rate", "20", "-d", "1s", "-c", "2"]);
    let s = &r["summary"];
    assert_eq!(code, Some(0), "{s}");
    assert!(
        ms(&s["latency_ms"]["max"]) >= 250.0,
        "open: the wait is latency: {s}"
    );

    let (code, r) = run_json(
        &url,
        &["--insecure", "-c", "1", "-n", "4", "--no-keepalive"],
    );
    let s = &r["summary"];
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["connections_opened"], 4, "{s}");
    assert!(
        ms(&s["latency_ms"]["p50"]) >= 250.0,
        "every request waited: {s}"
    );
    assert!(ms(&s["service_time_ms"]["p99"]) < 200.0, "{s}");
    assert!(
        ms(&s["with_connect_ms"]["p50"]) >= 250.0,
        "connect + request: {s}"
    );

    let out = output(&[
        "run",
        &url,
        "--insecure",
        "-c",
        "1",
        "-n",
        "4",
        "--no-keepalive",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("connections   4 opened; connect p50") && text.contains("TLS handshake p50"),
        "{text}"
    );
    assert!(text.contains("connect + request p50"), "{text}");

    // The plain HTTP/1.1 loop counts and times its connects the same way.
    let plain = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let (code, r) = run_json(&plain.url("/"), &["-c", "50", "-n", "500"]);
    let s = &r["summary"];
    assert_eq!(code, Some(0), "{s}");
    assert_eq!(s["connections_opened"], 50, "{s}");
    assert!(
        ms(&s["connect_ms"]["p50"]) > 0.0 && s["tls_ms"].is_null(),
        "{s}"
    );
    let (code, r) = run_json(&plain.url("/"), &["-c", "2", "-n", "20", "--no-keepalive"]);
    assert_eq!(code, Some(0));
    assert_eq!(r["summary"]["connections_opened"], 20, "{}", r["summary"]);
    assert!(
        ms(&r["summary"]["with_connect_ms"]["p50"]) > 0.0,
        "{}",
        r["summary"]
    );
}

/// Kept responses share one budget: a 3 MiB login answer is extracted under the default
/// budget, and fails as `extract` with its size in the summary under `--capture-limit 1MiB`
/// (plain and chunked framing, HTTP/1.1 and HTTP/2).
#[test]
fn kept_responses_share_one_budget() {
    let big = format!(r#"{{"pad":"{}","token":"t-1"}}"#, "x".repeat(3 << 20));
    let chunked: Vec<Vec<u8>> = big.as_bytes().chunks(100_000).map(<[u8]>::to_vec).collect();
    let body = big.clone();
    let handler: Handler = Arc::new(move |r: &Req| match r.path {
        "/login" => Reply::ok(&body, Duration::ZERO),
        "/login-chunked" => Reply::Chunked(chunked.clone()),
        _ => Reply::ok("{}", Duration::ZERO),
    });
    let raw = testkit::serve(handler.clone()).expect("server");
    let h2 = testkit::serve_hyper(testkit::Options::default(), handler).expect("server");
    let flow = |login: &str| {
        format!(
            "scenarios:\n  - name: s\n    load: {{ connections: 2, requests: 8 }}\n    flow:\n      - {{ name: login, path: {login}, extract: {{ token: \"$.token\" }} }}\n      - {{ name: api, path: /api, headers: {{ X-Token: \"{{{{token}}}}\" }} }}\n"
        )
    };
    let cases = [
        (raw.url(""), "/login", &[][..]),
        (raw.url(""), "/login-chunked", &[][..]),
        (h2.url(""), "/login", &["--http2"][..]),
    ];
    for (target, login, flags) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let p = plan(dir.path(), &format!("target: {target}\n{}", flow(login)));
        for (limit, ok) in [(None, true), (Some("1MiB"), false)] {
            let out = dir.path().join("r.json");
            let mut cmd = brink();
            cmd.args([
                "run",
                p.to_str().unwrap(),
                "-q",
                "--json",
                out.to_str().unwrap(),
            ])
            .args(flags);
            if let Some(l) = limit {
                cmd.args(["--capture-limit", l]);
            }
            let run = cmd
                .timeout(Duration::from_secs(60))
                .output()
                .expect("brink runs");
            let r = json_of(&out);
            let s = &r["summary"];
            let case = format!("{login} {flags:?} limit {limit:?}");
            if ok {
                assert_eq!(run.status.code(), Some(0), "{case}: {s}");
                assert_eq!(s["errors_by_kind"]["extract"], 0, "{case}: {s}");
                assert_eq!(s["ok"], 8, "{case}: {s}");
            } else {
                assert_eq!(s["errors_by_kind"]["extract"], 8, "{case}: {s}");
                let why = r["scenarios"][0]["extract_failures"][0]["reason"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                assert!(
                    why.starts_with("response too large to keep: ") && why.contains("1 MiB"),
                    "{case}: {why}"
                );
            }
        }
    }
}

/// User-visible text (terminal output and diagnoses come from the sources; README, docs,
/// examples) speaks of situations, never of the project's research notes ("seed 004").
#[test]
fn user_visible_text_never_cites_research_notes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "examples", "crates"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() && !p.ends_with("target") {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| {
                    ["rs", "md", "yaml", "yml", "csv"].contains(&x.to_str().unwrap_or(""))
                }) {
                    files.push(p);
                }
            }
        }
    }
    assert!(files.len() > 50, "found {} files", files.len());
    let this_file = Path::new(file!()).file_name();
    for f in files {
        if f.file_name() == this_file {
            continue;
        }
        let text = std::fs::read_to_string(&f)
            .unwrap_or_default()
            .to_lowercase();
        for (i, line) in text.lines().enumerate() {
            let cites = line.match_indices("seed").any(|(at, _)| {
                let rest = line[at + 4..].trim_start_matches([' ', '_', '-']);
                rest.len() >= 3 && rest.as_bytes()[..3].iter().all(u8::is_ascii_digit)
            }) || line.contains("seeds/");
            assert!(!cites, "{}:{}: {line}", f.display(), i + 1);
        }
    }
}

#[test]
fn a_port_served_by_a_userland_proxy_is_named() {
    // A listener whose process is called docker-proxy (Python, run through a link by that name),
    // answering every request: brink warns that the proxy, not the service, is measured.
    let dir = tempfile::tempdir().unwrap();
    let proxy = dir.path().join("docker-proxy");
    // python3 is required here as for every test against an ordinary server: never skipped.
    // The interpreter itself (not a shim that dispatches on its own name) is linked.
    let exe = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 on the PATH");
    let python = std::path::PathBuf::from(String::from_utf8_lossy(&exe.stdout).trim());
    assert!(
        python.is_file(),
        "python3's interpreter: {}",
        python.display()
    );
    std::os::unix::fs::symlink(python, &proxy).unwrap();
    let srv = crate::support::PyServer::start(&proxy, 0);
    let url = srv.url.clone();
    let out = brink()
        .args(["run", &url, "-n", "5", "-c", "1", "-q"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    drop(srv);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("is served by docker-proxy (pid "), "{err}");
    // The same server under its own name draws no warning.
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let out = brink()
        .args(["run", &srv.url("/"), "-n", "5", "-q"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("served by"));
}
