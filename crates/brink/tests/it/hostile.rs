//! Hostile servers, second round: each test reproduces an attack a misbehaving server (or a
//! forged request to `brink serve`) made on brink, with a small raw-socket server in this
//! process, and checks that brink keeps its promises: it stops when told, sends only what the
//! user wrote, counts what it saw and keeps memory bounded.

use crate::support::{brink_json, Killed};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A raw TCP server on 127.0.0.1 port 0: every connection is handed to `serve` on its own
/// thread. The server stops accepting when dropped; `serve` gets a deadline it must keep.
pub struct RawServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    pub connections: Arc<AtomicU64>,
}

impl RawServer {
    pub fn start<F>(serve: F) -> RawServer
    where
        F: Fn(TcpStream, Instant) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicU64::new(0));
        let serve = Arc::new(serve);
        let (s, n) = (stop.clone(), connections.clone());
        std::thread::spawn(move || {
            // Bounded: no server here outlives a minute.
            let until = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let _ = sock.set_nonblocking(false);
                        let _ = sock.set_nodelay(true);
                        n.fetch_add(1, Ordering::Relaxed);
                        let serve = serve.clone();
                        std::thread::spawn(move || serve(sock, until));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        RawServer {
            port,
            stop,
            connections,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request head (up to the blank line); false when the peer closed first.
pub fn read_head(sock: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut b = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        match sock.read(&mut b) {
            Ok(1) => seen.push(b[0]),
            _ => return false,
        }
        if seen.len() > 1 << 20 {
            return false;
        }
    }
    true
}

/// Answers each request with `head` and then writes `filler` endlessly (until the client goes
/// away or the deadline): a stream brink can never finish reading.
fn endless(head: &'static [u8], filler: &'static [u8]) -> RawServer {
    RawServer::start(move |mut sock, until| {
        if !read_head(&mut sock) || sock.write_all(head).is_err() {
            return;
        }
        let block: Vec<u8> = filler.iter().copied().cycle().take(256 * 1024).collect();
        while Instant::now() < until && sock.write_all(&block).is_ok() {}
    })
}

/// Runs `-c 4 --threads 1 -d 2s --timeout 1s --grace 1s` (and `extra`) against a server that
/// never stops streaming: the run must end within 6 s with at least the 4 first attempts
/// counted as `kind`. Returns the summary.
fn bounded_endless_run(name: &str, url: &str, extra: &[&str], kind: &str) -> serde_json::Value {
    let t = Instant::now();
    let mut args = vec![
        "run",
        url,
        "-c",
        "4",
        "--threads",
        "1",
        "-d",
        "2s",
        "--timeout",
        "1s",
        "--grace",
        "1s",
        "-q",
    ];
    args.extend_from_slice(extra);
    let ran = brink_json(&args);
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "{name}: the run took {took:?}\n{}",
        ran.stderr
    );
    let s = ran.result["summary"].clone();
    let errors = s["errors_by_kind"][kind].as_u64().unwrap_or(0);
    assert!(
        errors >= 4,
        "{name}: every attempt counted as {kind}: {}\n{}",
        s["errors_by_kind"],
        ran.stderr
    );
    s
}

/// A server that streams faster than brink reads (an endless chunk extension, endless interim
/// answers, an endless body) cannot hold a run past its end: `-d 2s --timeout 1s` ends within
/// its grace, every attempt is counted, and the result is written. Before the fix the read
/// loop drained the socket until it was empty, which a fast server never lets happen.
#[test]
fn a_server_streaming_without_end_cannot_hold_the_run() {
    let _cpu = crate::support::cpu_exclusive();
    let cases: [(&str, &'static [u8], &'static [u8], &str); 3] = [
        (
            "endless chunk extension",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;",
            b"a",
            "protocol",
        ),
        (
            "endless interim answers",
            b"",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            "protocol",
        ),
        (
            "endless body",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n",
            b"x",
            "timeout",
        ),
    ];
    for (name, head, filler, kind) in cases {
        let srv = endless(head, filler);
        let s = bounded_endless_run(name, &srv.url("/"), &[], kind);
        assert_eq!(s["ok"].as_u64(), Some(0), "{name}");
        assert!(
            srv.connections.load(Ordering::Relaxed) >= 4,
            "{name}: the stream reached every connection"
        );
    }
}

/// Interrupted while such a server streams, brink stops at once with 130, writes its result
/// and leaves no temporary file (before the fix it gave up after 3 s and wrote nothing).
#[test]
fn an_interrupt_during_an_endless_stream_keeps_the_result() {
    use crate::hardening::{signal, spawn, wait_at_most};
    let _cpu = crate::support::cpu_exclusive();
    let srv = endless(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;",
        b"a",
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let result = dir.path().join("r.json");
    let url = srv.url("/");
    let child = spawn(&[
        "run",
        &url,
        "-c",
        "4",
        "--threads",
        "1",
        "-d",
        "30s",
        "-q",
        "--json",
        result.to_str().unwrap(),
    ]);
    let mut child = Killed(child);
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child.0, 2);
    let (code, took) = wait_at_most(&mut child.0, Duration::from_secs(10));
    assert_eq!(code, Some(130));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&result).expect("result written")).expect("JSON");
    assert_eq!(r["interrupted"], true);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
}

/// A completion probe's URL rendered from a response that would end the request line, add a
/// Host line and smuggle a DELETE is refused: never sent, every job failed with the reason.
/// Before the fix brink sent the foreign Host and the DELETE once per job.
#[test]
fn a_job_url_from_a_response_never_reaches_the_wire() {
    use std::sync::Mutex;
    let seen: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
    let s = seen.clone();
    let handler: testkit::Handler = Arc::new(move |r: &testkit::Req| {
        let host = r
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        s.lock().unwrap_or_else(|e| e.into_inner()).push((
            r.method.to_string(),
            r.path.to_string(),
            host,
        ));
        if r.method == "POST" {
            let job = r#"{"job": "/jobs/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nDELETE /admin"}"#;
            testkit::Reply::ok(job, Duration::ZERO)
        } else {
            testkit::Reply::ok(r#"{"state":"DONE"}"#, Duration::ZERO)
        }
    });
    let srv = testkit::serve(handler).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("jobs.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: jobs\n    load: {{ connections: 1, requests: 5 }}\n    flow:\n      - name: start\n        method: POST\n        path: /start\n        extract: {{ job: \"$.job\" }}\n        complete: {{ get: \"{{{{job}}}}\", until: '$.state == \"DONE\"', every: 50ms, within: 2s }}\n",
            srv.url("")
        ),
    )
    .expect("write plan");
    let ran = brink_json(&["run", plan.to_str().unwrap()]);
    let a = &ran.result["scenarios"][0]["async"];
    assert_eq!(a["failed"].as_u64(), Some(5), "{a}\n{}", ran.stderr);
    assert_eq!(a["completed"].as_u64(), Some(0), "{a}");
    let why = a["first_failure"].as_str().unwrap_or_default();
    assert!(why.contains("refused") && why.contains("\\r\\n"), "{why}");
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    let authority = srv.url("").trim_start_matches("http://").to_string();
    assert_eq!(
        seen.len(),
        5,
        "only the five POSTs reached the server: {seen:?}"
    );
    for (method, path, host) in seen.iter() {
        assert_eq!((method.as_str(), path.as_str()), ("POST", "/start"));
        assert_eq!(host, &authority);
    }
}

/// Every place in brink's source that writes an HTTP/1.1 request head: the load's (whose
/// rendered values the workload checks: requests, and WebSocket upgrades) and the one guard for everything sent beside it
/// (scrapes, health and completion probes). A new place must go through the guard.
#[test]
fn every_request_head_is_written_in_a_guarded_place() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let mut dirs = vec![root.join("crates")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("list").flatten() {
            let p = entry.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if p.is_dir() && !["tests", "benches", "examples", "testkit"].contains(&name) {
                dirs.push(p);
            } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
                let text = std::fs::read_to_string(&p).expect("read");
                // Code before the file's tests.
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                if code.contains(r"HTTP/1.1\r\n") || code.contains(r#"b" HTTP/1.1"#) {
                    let rel = p.strip_prefix(&root).unwrap_or(&p);
                    found.push(rel.display().to_string());
                }
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            // A WebSocket's upgrade: the load's, its path and header values rendered by
            // `Vu::render_head` under the same checks as every request's.
            "crates/engine/src/proto/ws/handshake.rs",
            "crates/model/src/guard.rs",
            "crates/workload/src/request.rs"
        ],
        "request heads written outside the guard"
    );
}

/// A reflection service answering every file request with 200 new files that import names
/// never sent ends in a clear error (exit 2) within seconds, having asked a bounded number of
/// times. Before the bound brink took 1.5 GB in 15 s and did not end.
#[test]
fn endless_reflection_imports_end_in_a_clear_error() {
    // A wall-clock verdict: never beside a test that takes a CPU away.
    let _cpu = crate::support::cpu_shared();
    let asked = Arc::new(AtomicU64::new(0));
    let handler = testkit::reflection::endless_imports(200, asked.clone());
    let srv = testkit::grpc::serve_grpc(testkit::Options::default(), handler).expect("server");
    let url = format!("grpc://{}", srv.addr);
    let (code, took, peak_mib, _) = run_watched(&url, &["--call", "evil.Svc/Get", "-n", "5"]);
    eprintln!("endless reflection: exit {code:?} in {took:?}, peak {peak_mib} MiB");
    assert_eq!(code, Some(2));
    assert!(took < Duration::from_secs(12), "{took:?}");
    assert!(peak_mib < 256, "{peak_mib} MiB");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["run", &url])
        .args(["--call", "evil.Svc/Get", "-n", "5"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("server reflection gave up after"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let n = asked.load(Ordering::Relaxed);
    // Two runs, each within the bound (v1 listing, then the files).
    assert!(
        n <= 2 * (2 + grpc::reflection::MOST_REQUESTS as u64),
        "{n} requests in two runs"
    );
}

/// 20 calls of greeter.proto's SayHello to the gRPC server at `addr`, with `extra` flags.
pub fn say_hello(addr: std::net::SocketAddr, extra: &[&str]) -> crate::support::Ran {
    let proto = crate::grpc::greeter();
    let url = format!("grpc://{addr}");
    let mut args = vec!["run", &url, "--proto"];
    let proto = proto.display().to_string();
    args.extend([
        proto.as_str(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "20",
    ]);
    args.extend_from_slice(extra);
    brink_json(&args)
}

/// Answers whose messages are broken fail as a gRPC client fails them, whatever status the
/// trailers claim: a message announcing 4 GiB and carrying 5 bytes (over the largest message,
/// RESOURCE_EXHAUSTED, as grpc-go and grpc-java report it), the compressed flag without a
/// `grpc-encoding`, and an answer that ends inside a message (INTERNAL); a message over
/// `--max-message-size` is RESOURCE_EXHAUSTED. Before, each came out 20/20 OK.
#[test]
fn broken_grpc_answers_are_not_ok() {
    use testkit::grpc::{Answer, Call};
    let cases: [(&str, Vec<u8>, &[&str], &str); 4] = [
        (
            "4 GiB announced, 5 bytes carried",
            vec![0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5],
            &[],
            "RESOURCE_EXHAUSTED",
        ),
        (
            "compressed without grpc-encoding",
            vec![1, 0, 0, 0, 4, 0x0a, 0x02, b'h', b'i'],
            &[],
            "INTERNAL",
        ),
        (
            "ends inside a message",
            vec![0, 0, 0, 0, 9, 0x0a, 0x02],
            &[],
            "INTERNAL",
        ),
        (
            "over --max-message-size",
            [&[0u8, 0, 0, 0x07, 0xd0][..], &[b'x'; 2000]].concat(),
            &["--max-message-size", "1KiB"],
            "RESOURCE_EXHAUSTED",
        ),
    ];
    for (name, body, flags, code) in cases {
        let handler: testkit::grpc::GrpcHandler = Arc::new(move |_: &Call| Answer {
            raw: true,
            ..Answer::ok(body.clone())
        });
        let srv = testkit::grpc::serve_grpc(testkit::Options::default(), handler).expect("server");
        let ran = say_hello(srv.addr, flags);
        let s = &ran.result["summary"];
        assert_eq!(
            s["grpc_status"],
            serde_json::json!({ code: 20 }),
            "{name}: {}",
            ran.stderr
        );
        assert_eq!(s["ok"].as_u64(), Some(0), "{name}");
    }
    // The same answer well formed is OK: the checks judge the frames, not the server.
    let handler: testkit::grpc::GrpcHandler =
        Arc::new(|_: &Call| Answer::ok(vec![0x0a, 0x02, b'h', b'i']));
    let srv = testkit::grpc::serve_grpc(testkit::Options::default(), handler).expect("server");
    let ran = say_hello(srv.addr, &["-q", "--max-message-size", "1KiB"]);
    assert_eq!(
        ran.result["summary"]["grpc_status"],
        serde_json::json!({"OK": 20})
    );
}

/// A server that holds 100 calls past their 1 s deadline and then ends them its own way (a
/// CANCEL reset at the deadline as grpc-go's transport does, DEADLINE_EXCEEDED trailers, or
/// nothing) sees all 100 counted DEADLINE_EXCEEDED, whoever noticed first, with no protocol
/// error and no connection reopened: the other calls on a connection are not harmed. Before,
/// brink counted 4 DEADLINE_EXCEEDED, 35 timeouts and 61 protocol errors, and reconnected.
#[test]
fn a_passed_deadline_is_deadline_exceeded_whoever_notices() {
    use testkit::deadline::AtDeadline;
    let srv = testkit::deadline::serve_deadline(vec![
        AtDeadline::Reset,
        AtDeadline::Trailers,
        AtDeadline::Hold,
    ])
    .expect("server");
    let proto = crate::grpc::greeter();
    let ran = brink_json(&[
        "run",
        &format!("grpc://{}", srv.addr),
        "--proto",
        proto.to_str().unwrap(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "100",
        "-c",
        "100",
        "--connections",
        "4",
        "--timeout",
        "1s",
        "-q",
    ]);
    let s = &ran.result["summary"];
    assert_eq!(
        s["grpc_status"],
        serde_json::json!({"DEADLINE_EXCEEDED": 100}),
        "{}\n{}",
        s["errors_by_kind"],
        ran.stderr
    );
    let errors = &s["errors_by_kind"];
    let transport: u64 = errors
        .as_object()
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum());
    assert_eq!(transport, 0, "{errors}");
    assert_eq!(s["connections_opened"].as_u64(), Some(4), "{s}");
    assert_eq!(srv.counters.connections(), 4);
}

/// Smaller: a plan error on a 200 KB line is one screen, cut around the column; hooks write
/// beside the history, never into the working directory.
#[test]
fn a_huge_plan_line_gives_a_short_error_and_hooks_stay_out_of_the_checkout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = dir.path().join("big.yaml");
    let key = "k".repeat(200_000);
    std::fs::write(
        &plan,
        format!("target: http://127.0.0.1:9/\nscenarios:\n  - {{ name: a, {key}: 1 }}\n"),
    )
    .expect("write");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["validate", plan.to_str().unwrap()])
        .timeout(Duration::from_secs(20))
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.len() < 2000, "{} bytes", err.len());
    assert!(err.contains("big.yaml:3:"), "{err}");

    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let history = dir.path().join("data").join("history.db");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).expect("mkdir");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .current_dir(&work)
        .env("BRINK_HISTORY", &history)
        .args([
            "find",
            &srv.url("/"),
            "--to",
            "2",
            "--step",
            "2s",
            "--warmup",
            "0s",
        ])
        .args([
            "--cooldown",
            "0s",
            "-q",
            "--hook-after",
            "echo done > \"$BRINK_OUT_DIR/x\"",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("brink runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(&work).expect("list").collect();
    assert!(
        left.is_empty(),
        "nothing in the working directory: {left:?}"
    );
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("data").join("hooks"))
        .expect("hooks beside the history")
        .flatten()
        .collect();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].path().join("x").exists());
}

/// `--http2` against a server that speaks only HTTP/1.1: every request fails, and the error
/// says why and what to do instead of only counting `protocol` errors.
#[test]
fn http2_against_an_http1_server_says_so() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["run", &srv.url("/"), "--http2", "-n", "10", "-q"])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("the server did not answer HTTP/2") && err.contains("drop --http2"),
        "{err}"
    );
    // The same flag against an HTTP/2 server that fails for another reason says nothing of it.
    // It reads the first byte, so the rest of the client's preface is unread when it closes:
    // the kernel answers with a reset, whatever the timing.
    let closed = RawServer::start(|mut s, _| {
        let _ = s.read(&mut [0u8; 1]);
    });
    let out = assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["run", &closed.url("/"), "--http2", "-n", "3", "-q"])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("brink runs");
    // It says what happened instead: every attempt's connection closed under it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(
        err.trim(),
        "error: no request succeeded (3 attempts: reset 3)",
        "{err}"
    );
}

/// One HTTP/2 frame: 9-byte header, then `payload`.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// What a hostile HTTP/2 server does once the client's preface is in.
#[derive(Clone, Copy, Debug)]
enum H2Abuse {
    /// SETTINGS frames without end (each asks for an ACK).
    SettingsFlood,
    /// PING frames without end (each asks for a PONG).
    PingFlood,
    /// A response HEADERS without END_HEADERS, then CONTINUATION frames without end.
    EndlessContinuation,
    /// A response whose header list is 32 MiB (HEADERS + CONTINUATION, then END_HEADERS).
    HugeHeaderList,
    /// RST_STREAM for every odd stream id, without end.
    RstFlood,
    /// An initial window of 0 that never opens: a request body can never be sent.
    ZeroWindow,
    /// SETTINGS_MAX_CONCURRENT_STREAMS 0: no request may ever be sent.
    NoStreams,
    /// GOAWAY (last stream 0) at once, then the connection closes: nothing is ever processed.
    GoawayAtOnce,
    /// DATA on the first stream before any HEADERS, then DATA without end.
    DataBeforeHeaders,
    /// A frame header announcing 1 MiB (over the 16 KiB brink allows).
    HugeFrame,
    /// `:status 100` answers without end on the first stream.
    InterimFlood,
}

/// Serves `abuse` over h2c on every connection, draining what the client sends.
fn h2_abuser(abuse: H2Abuse) -> RawServer {
    RawServer::start(move |mut sock, until| {
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_err() {
            return;
        }
        if let Ok(mut drain) = sock.try_clone() {
            std::thread::spawn(move || {
                let mut sink = [0u8; 16384];
                while matches!(drain.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
        let settings = match abuse {
            H2Abuse::ZeroWindow => frame(4, 0, 0, &[0, 4, 0, 0, 0, 0]),
            H2Abuse::NoStreams => frame(4, 0, 0, &[0, 3, 0, 0, 0, 0]),
            H2Abuse::GoawayAtOnce => {
                let mut f = frame(4, 0, 0, &[]);
                f.extend(frame(7, 0, 0, &[0; 8]));
                let _ = sock.write_all(&f);
                return;
            }
            H2Abuse::HugeFrame => {
                let mut f = frame(4, 0, 0, &[]);
                f.extend_from_slice(&[0x10, 0, 0, 0, 0, 0, 0, 0, 1]);
                f
            }
            _ => frame(4, 0, 0, &[]),
        };
        if sock.write_all(&settings).is_err() {
            return;
        }
        // A literal header (never indexed) of 16,000 bytes: `x-junk: aaaa...`.
        let junk = {
            let mut b = vec![0x10, 6];
            b.extend_from_slice(b"x-junk");
            b.extend_from_slice(&[0x7f, 0x81, 0xfc, 0x7c]); // 16,000 as an HPACK integer
            b.extend(std::iter::repeat_n(b'a', 16_000));
            b
        };
        let block: Vec<u8> = match abuse {
            H2Abuse::SettingsFlood => frame(4, 0, 0, &[]).repeat(1000),
            H2Abuse::PingFlood => frame(6, 0, 0, &[1; 8]).repeat(1000),
            H2Abuse::EndlessContinuation => frame(9, 0, 1, &junk),
            H2Abuse::RstFlood => (0..1000u32)
                .flat_map(|i| frame(3, 0, 2 * i + 1, &[0, 0, 0, 8]))
                .collect(),
            H2Abuse::DataBeforeHeaders => frame(0, 0, 1, b"hello"),
            // `:status` (static name 8) with the literal value 100, END_HEADERS.
            H2Abuse::InterimFlood => frame(1, 0x4, 1, &[0x08, 3, b'1', b'0', b'0']),
            H2Abuse::HugeHeaderList
            | H2Abuse::ZeroWindow
            | H2Abuse::NoStreams
            | H2Abuse::GoawayAtOnce
            | H2Abuse::HugeFrame => Vec::new(),
        };
        match abuse {
            H2Abuse::EndlessContinuation if sock.write_all(&frame(1, 0, 1, &[0x88])).is_err() => {
                return;
            }
            H2Abuse::HugeHeaderList => {
                let mut out = frame(1, 0, 1, &[0x88]);
                for i in 0..2048 {
                    let end = if i == 2047 { 0x4 } else { 0 };
                    out.extend(frame(9, end, 1, &junk));
                }
                let _ = sock.write_all(&out);
            }
            _ => {}
        }
        while Instant::now() < until && !block.is_empty() && sock.write_all(&block).is_ok() {}
        while Instant::now() < until && sock.write_all(&[]).is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

/// Runs brink against `url` with `args`, polling its peak RSS; (exit code, wall time, peak
/// RSS in MiB, the result).
pub fn run_watched(url: &str, args: &[&str]) -> (Option<i32>, Duration, u64, serde_json::Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let t = Instant::now();
    let child =
        std::process::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args(["run", url])
            .args(args)
            .arg("--json")
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("brink starts");
    let (code, peak_mib) = crate::support::watch_peak(child, Duration::from_secs(60));
    let result = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (code, t.elapsed(), peak_mib, result)
}

/// HTTP/2 abuse from the server side (floods of SETTINGS, PING and RST_STREAM, endless
/// CONTINUATION, a 32 MiB header list, a window that never opens, no streams allowed, a GOAWAY
/// before anything, DATA before HEADERS, an oversized frame, endless interim answers) ends as
/// counted errors within the run's deadlines, in bounded memory: no hang, no success counted.
#[test]
fn http2_abuse_from_the_server_ends_as_counted_errors() {
    let _cpu = crate::support::cpu_light();
    for abuse in [
        H2Abuse::SettingsFlood,
        H2Abuse::PingFlood,
        H2Abuse::EndlessContinuation,
        H2Abuse::HugeHeaderList,
        H2Abuse::RstFlood,
        H2Abuse::ZeroWindow,
        H2Abuse::NoStreams,
        H2Abuse::GoawayAtOnce,
        H2Abuse::DataBeforeHeaders,
        H2Abuse::HugeFrame,
        H2Abuse::InterimFlood,
    ] {
        let srv = h2_abuser(abuse);
        let (code, took, peak_mib, r) = run_watched(
            &srv.url("/"),
            &[
                "--http2",
                "-m",
                "POST",
                "-b",
                "hello",
                "-n",
                "8",
                "-c",
                "2",
                "--timeout",
                "1s",
                "-q",
            ],
        );
        let s = &r["summary"];
        eprintln!(
            "{abuse:?}: exit {code:?} in {:.1}s, peak {peak_mib} MiB, ok {}, errors {}",
            took.as_secs_f64(),
            s["ok"],
            s["errors_by_kind"]
        );
        assert_eq!(code, Some(3), "{abuse:?}: every request fails: {s}");
        assert_eq!(
            s["requests"].as_u64(),
            Some(8),
            "{abuse:?}: all counted: {s}"
        );
        // 8 requests on 2 connections, one after another on each, 1 s timeout each: 4 s at
        // most, plus a second (and the process's own start).
        assert!(took < Duration::from_secs(6), "{abuse:?}: {took:?}");
        assert!(peak_mib < 64, "{abuse:?}: {peak_mib} MiB");
    }
}

/// The same endless streams over TLS (the tokio path): the request deadline fires and the run
/// ends within its grace.
#[test]
fn an_endless_stream_over_tls_cannot_hold_the_run() {
    let _cpu = crate::support::cpu_exclusive();
    let cases: [(&str, &[u8], &[u8], &str); 2] = [
        (
            "endless body",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n",
            b"x",
            "timeout",
        ),
        (
            "endless chunk extension",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;",
            b"a",
            "protocol",
        ),
    ];
    for (name, head, filler, kind) in cases {
        let (head, filler) = (head.to_vec(), filler.to_vec());
        let handler: testkit::Handler = Arc::new(move |_: &testkit::Req| testkit::Reply::Endless {
            head: head.clone(),
            filler: filler.clone(),
        });
        let opts = testkit::Options {
            tls: true,
            threads: 2,
            ..testkit::Options::default()
        };
        let srv = testkit::serve_with(opts, handler).expect("server");
        bounded_endless_run(name, &srv.url("/"), &["--insecure"], kind);
    }
}
