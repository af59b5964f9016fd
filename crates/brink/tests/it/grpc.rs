//! Unary gRPC calls end to end against a real HTTP/2 gRPC server on loopback: the message on
//! the wire is the protobuf of the JSON given, metadata arrives, every call ends in exactly one
//! status code (counted by name) or transport error, `--ok-codes` moves the success line, TLS
//! works, calls still in flight at the end are unfinished, and bad input is one line, exit 2.

use assert_cmd::Command;
use predicates::prelude::PredicateBooleanExt;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::grpc::{serve_grpc, Answer, Call};

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

pub(crate) fn greeter() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grpc/greeter.proto")
}

/// HelloReply { message: "hi" }.
pub(crate) const REPLY: [u8; 4] = [0x0a, 0x02, b'h', b'i'];

/// (path, message, metadata) of each call, with the `:authority` as metadata `:authority`.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Vec<u8>, Vec<(String, String)>)>>>;

/// A Greeter that answers OK, except UNAVAILABLE for call 3 of every 10 and NOT_FOUND for 7.
pub(crate) fn greeter_server(tls: bool, delay: Duration) -> (testkit::Server, Seen) {
    let opts = testkit::Options {
        tls,
        ..testkit::Options::default()
    };
    greeter_with(opts, delay)
}

pub(crate) fn greeter_with(opts: testkit::Options, delay: Duration) -> (testkit::Server, Seen) {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let handler = Arc::new(move |c: &Call| {
        let mut metadata = c.metadata.to_vec();
        metadata.push((":authority".into(), c.authority.to_string()));
        s.lock()
            .unwrap()
            .push((c.path.to_string(), c.message.to_vec(), metadata));
        let mut a = match c.seq % 10 {
            3 => Answer::code(14),
            7 => Answer::code(5),
            _ => Answer::ok(REPLY.to_vec()),
        };
        a.delay = delay;
        a
    });
    (serve_grpc(opts, handler).expect("server starts"), seen)
}

fn run(url: &str, extra: &[&str]) -> (Option<i32>, Value, String) {
    let proto = greeter();
    let mut all = vec!["run", url, "--proto", proto.to_str().unwrap()];
    if !extra.contains(&"--call") {
        all.extend(["--call", "helloworld.Greeter/SayHello"]);
    }
    all.push("-q");
    all.extend_from_slice(extra);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, r.stderr)
}

#[test]
fn every_call_ends_in_one_status_code() {
    let (srv, seen) = greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    let (code, r, err) = run(
        &url,
        &[
            "--data",
            r#"{"name":"x","times":3}"#,
            "-H",
            "authorization: Bearer t0ken",
            "-n",
            "200",
            "-c",
            "4",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    assert_eq!(s["requests"], 200);
    assert_eq!(s["ok"], 160);
    assert_eq!(s["errors"], 40);
    assert_eq!(
        s["grpc_status"],
        serde_json::json!({"OK": 160, "UNAVAILABLE": 20, "NOT_FOUND": 20})
    );
    assert_eq!(s["status"], serde_json::json!({}), "no HTTP status counted");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        r["target"]["url"],
        format!("{url}/helloworld.Greeter/SayHello")
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 200);
    for (path, message, metadata) in seen.iter() {
        assert_eq!(path, "/helloworld.Greeter/SayHello");
        assert_eq!(message, &[0x0a, 0x01, b'x', 0x10, 0x03]);
        let meta = |k: &str| {
            metadata
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(meta("content-type"), Some("application/grpc"));
        assert_eq!(meta("te"), Some("trailers"));
        assert_eq!(meta("authorization"), Some("Bearer t0ken"));
        assert_eq!(meta("grpc-timeout"), Some("30000m"), "the default deadline");
    }
    drop(seen);

    // The terminal counts the codes by name.
    let out = brink()
        .args(["run", &url, "--proto", greeter().to_str().unwrap()])
        .args(["--call", "helloworld.Greeter/SayHello", "-n", "20"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("grpc codes"), "{text}");
    assert!(text.contains("UNAVAILABLE: 2"), "{text}");
    assert!(
        text.contains("errors        4  (NOT_FOUND: 2, UNAVAILABLE: 2)"),
        "{text}"
    );

    // An objective on one code's share: 10% UNAVAILABLE breaks a 5% limit.
    let (code, r, _) = run(&url, &["-n", "100", "--slo", "code.UNAVAILABLE < 5%"]);
    assert_eq!(code, Some(1));
    let slo = &r["scenarios"][0]["slo"][0];
    assert_eq!(slo["metric"], "code.UNAVAILABLE");
    assert_eq!(slo["result"], "10%");
    assert_eq!(slo["pass"], false);

    // NOT_FOUND may count as success.
    let (code, r, err) = run(&url, &["-n", "100", "--ok-codes", "OK,not_found"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["ok"], 90);
    assert_eq!(
        r["scenarios"][0]["ok_codes"],
        serde_json::json!(["OK", "NOT_FOUND"])
    );
}

#[test]
fn tls_and_the_open_model_and_calls_in_flight_at_the_end() {
    let (srv, _) = greeter_server(true, Duration::from_millis(300));
    let url = format!("grpcs://{}", srv.addr);
    // 40 calls/s for 2 s; each takes 300 ms, so about 12 are in flight when the schedule
    // ends, and a 100 ms grace leaves them unfinished: never errors.
    let (code, r, err) = run(
        &url,
        &[
            "--insecure",
            "--rate",
            "40",
            "-c",
            "50",
            "-d",
            "2s",
            "--grace",
            "100ms",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let s = &r["summary"];
    let unfinished = s["unfinished"].as_u64().unwrap();
    assert!((5..=20).contains(&unfinished), "{s}");
    let counted: u64 = s["grpc_status"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(counted, s["requests"].as_u64().unwrap(), "{s}");
    assert_eq!(s["errors_by_kind"]["timeout"], 0);
    assert!(s["latency_ms"]["p50"].as_f64().unwrap() >= 300.0, "{s}");
}

#[test]
fn bad_grpc_input_is_one_line_before_any_load() {
    let (srv, seen) = greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    for (extra, says) in [
        (
            vec!["--call", "helloworld.Greeter/SayHi"],
            "methods: SayHello, SayHelloStream",
        ),
        (
            vec!["--data", r#"{"times":"many"}"#],
            "helloworld.HelloRequest",
        ),
        (vec!["--ok-codes", "FINE"], "not a gRPC status code"),
        (vec!["-m", "PUT"], "a gRPC call is --call with --data"),
    ] {
        let (code, _, err) = run(&url, &extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    brink()
        .args(["run", &url, "-n", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs --call"));
    brink()
        .args(["run", "http://127.0.0.1:1/", "--call", "a.B/C", "-n", "1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("apply to grpc://"));
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
    // --list prints the methods and sends nothing.
    brink()
        .args(["run", &url, "--proto", greeter().to_str().unwrap(), "--list"])
        .assert()
        .code(0)
        .stdout(predicates::str::contains(
            "helloworld.Greeter/SayHello  (helloworld.HelloRequest -> helloworld.HelloReply, unary)",
        ));
    assert!(seen.lock().unwrap().is_empty(), "--list sends nothing");
}

#[test]
fn a_capacity_search_steps_grpc_calls() {
    let (srv, _) = greeter_server(false, Duration::from_millis(2));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("f.json");
    let out = brink()
        .args(["find", &format!("grpc://{}", srv.addr), "-q"])
        .args(["--proto", greeter().to_str().unwrap()])
        .args([
            "--call",
            "helloworld.Greeter/SayHello",
            "--ok-codes",
            "OK,14,5",
        ])
        .args([
            "--to",
            "2",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
        ])
        .arg("--json")
        .arg(&json)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["find"]["max_sustainable"]["level"], 2.0, "{}", r["find"]);
    // The server answers its calls 3, 13, 23, ... UNAVAILABLE and 7, 17, ... NOT_FOUND, the
    // rest OK; every one was counted once, and all three codes are ok here.
    let s = &r["summary"];
    let n = s["requests"].as_u64().unwrap();
    let ending = |d: u64| (0..n).filter(|k| k % 10 == d).count() as u64;
    let codes = &s["grpc_status"];
    assert_eq!(
        (&codes["UNAVAILABLE"], &codes["NOT_FOUND"], &codes["OK"]),
        (
            &ending(3).into(),
            &ending(7).into(),
            &(n - ending(3) - ending(7)).into()
        ),
        "{s}"
    );
    assert_eq!(s["ok"], n, "{s}");
}

#[test]
fn calls_in_flight_share_the_connections_asked_for() {
    // 20 calls in flight over 2 HTTP/2 connections: the server sees exactly two.
    let (srv, _) = greeter_server(false, Duration::from_millis(5));
    let (code, r, err) = run(
        &format!("grpc://{}", srv.addr),
        &[
            "-c",
            "20",
            "--connections",
            "2",
            "--threads",
            "1",
            "-n",
            "400",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["requests"], 400);
    assert_eq!(r["summary"]["grpc_status"]["OK"], 320);
    assert_eq!(srv.counters.connections(), 2);
    // Without --connections, gRPC takes one connection per worker thread.
    let (srv, _) = greeter_server(false, Duration::from_millis(5));
    let (code, _, err) = run(
        &format!("grpc://{}", srv.addr),
        &["-c", "20", "--threads", "2", "-n", "200"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(srv.counters.connections(), 2);
    // The same for plain HTTP/2, and only there.
    let h2 = testkit::serve_hyper(
        testkit::Options::default(),
        testkit::handlers::fixed(Duration::from_millis(2)),
    )
    .unwrap();
    let out = brink()
        .args([
            "run",
            &h2.url("/"),
            "--http2",
            "-c",
            "16",
            "--connections",
            "1",
        ])
        .args(["--threads", "1", "-n", "300", "-q"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(h2.counters.requests(), 300);
    assert_eq!(h2.counters.connections(), 1);
    brink()
        .args([
            "run",
            &h2.url("/"),
            "-c",
            "4",
            "--connections",
            "2",
            "-n",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs --http2"));
}

#[test]
fn mutual_tls_and_the_authority() {
    let opts = testkit::Options {
        tls: true,
        mtls: true,
        ..testkit::Options::default()
    };
    let (srv, seen) = greeter_with(opts, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let ca = write("ca.pem", srv.cert_pem.as_deref().unwrap());
    let id = srv.client.clone().unwrap();
    let (cert, key) = (write("c.pem", &id.cert_pem), write("k.pem", &id.key_pem));
    let url = format!("grpcs://127.0.0.1:{}", srv.addr.port());
    let verified = ["--cacert", ca.as_str(), "-n", "20", "--ok-codes", "OK,5,14"];

    // With the client certificate every call goes through, verified against the CA.
    let mut args = verified.to_vec();
    args.extend(["--cert", cert.as_str(), "--key", key.as_str()]);
    let (code, r, err) = run(&url, &args);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["ok"], 20, "{}", r["summary"]);

    // --authority is sent as :authority and names the certificate to expect: the server's
    // holds "localhost", not "svc.internal".
    let localhost = format!("localhost:{}", srv.addr.port());
    let mut args_auth = args.clone();
    args_auth.extend(["--authority", localhost.as_str()]);
    let (code, r, err) = run(&url, &args_auth);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["ok"], 20);
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert!(
        last.2.contains(&(":authority".into(), localhost.clone())),
        "{last:?}"
    );
    // The result names the address dialled beside the authority sent.
    let dialled = format!("127.0.0.1:{}", srv.addr.port());
    assert_eq!(r["target"]["dialled"], dialled.as_str(), "{}", r["target"]);
    let mut args_wrong = args.clone();
    args_wrong.extend(["--authority", "svc.internal"]);
    let (_, r, _) = run(&url, &args_wrong);
    assert_eq!(r["summary"]["ok"], 0);
    assert_eq!(
        r["summary"]["errors_by_kind"]["tls"], 20,
        "{}",
        r["summary"]
    );

    // Without it the server refuses every handshake; the calls are TLS errors, none OK.
    let served = seen.lock().unwrap().len();
    let (_, r, _) = run(&url, &verified);
    assert_eq!(r["summary"]["ok"], 0);
    assert_eq!(r["summary"]["errors"], 20, "{}", r["summary"]);
    assert_eq!(
        seen.lock().unwrap().len(),
        served,
        "no call reached the service"
    );

    // Half an identity, or a missing file, is one line and exit 2.
    for (extra, says) in [
        (
            vec!["--cert", cert.as_str()],
            "--cert and --key go together",
        ),
        (
            vec!["--cert", cert.as_str(), "--key", "/nonexistent.key"],
            "--key /nonexistent.key: no such file",
        ),
        (
            vec!["--authority", "a b"],
            "--authority 'a b': expected host",
        ),
    ] {
        let (code, _, err) = run(&url, &extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
}

/// The `name` (field 1) of a HelloRequest as sent.
pub(crate) fn name_of(message: &[u8]) -> String {
    match message {
        [0x0a, len, rest @ ..] => String::from_utf8_lossy(&rest[..usize::from(*len)]).into_owned(),
        _ => String::new(),
    }
}

#[test]
fn templated_messages_and_data_files() {
    let (srv, seen) = greeter_server(false, Duration::ZERO);
    let url = format!("grpc://{}", srv.addr);
    // {{seq}} fills a string and (as the JSON mapping allows) an int32 given as a string;
    // metadata is templated too.
    let (code, r, err) = run(
        &url,
        &[
            "--data",
            r#"{"name":"user{{seq}}","times":"{{seq}}"}"#,
            "-H",
            "x-request: r{{seq}}",
            "-n",
            "10",
            "-c",
            "1",
            "--ok-codes",
            "OK,5,14",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(r["summary"]["ok"], 10);
    let calls = std::mem::take(&mut *seen.lock().unwrap());
    let mut names: Vec<String> = calls.iter().map(|c| name_of(&c.1)).collect();
    names.sort_by_key(|n| n[4..].parse::<u32>().unwrap_or(99));
    let want: Vec<String> = (0..10).map(|i| format!("user{i}")).collect();
    assert_eq!(names, want);
    for (_, message, metadata) in &calls {
        let n: u8 = name_of(message)[4..].parse().unwrap();
        // times (field 2) is n, left out when 0 as proto3 does.
        let tail = &message[2 + message[1] as usize..];
        assert_eq!(tail, if n == 0 { vec![] } else { vec![0x10, n] });
        assert!(
            metadata.contains(&("x-request".into(), format!("r{n}"))),
            "{metadata:?}"
        );
    }

    // A data file's messages go out in turn.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.ndjson");
    std::fs::write(
        &file,
        "{\"name\":\"a\"}\n{\"name\":\"b\"}\n\n{\"name\":\"c\"}\n",
    )
    .unwrap();
    let (code, _, err) = run(
        &url,
        &["--data-file", file.to_str().unwrap(), "-n", "6", "-c", "1"],
    );
    assert_eq!(code, Some(0), "{err}");
    let names: Vec<String> = seen.lock().unwrap().iter().map(|c| name_of(&c.1)).collect();
    assert_eq!(names, ["a", "b", "c", "a", "b", "c"]);

    // A rendered value that makes the message unfit (text in an int32) is refused before it
    // is sent, and shown as rendered.
    seen.lock().unwrap().clear();
    let (_, r, _) = run(
        &url,
        &["--data", r#"{"times":"n{{seq}}"}"#, "-n", "3", "-c", "1"],
    );
    assert_eq!(
        r["summary"]["errors_by_kind"]["invalid_request"], 3,
        "{}",
        r["summary"]
    );
    let refused = &r["scenarios"][0]["refused"][0];
    assert_eq!(refused["part"], "message", "{refused}");
    assert_eq!(refused["value"], r#"{"times":"n0"}"#, "{refused}");
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");

    // A message that does not fit, JSON that does not parse, an unknown placeholder: named,
    // exit 2, nothing sent.
    seen.lock().unwrap().clear();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"[{"name":"a"},{"times":"many"}]"#).unwrap();
    let broken = dir.path().join("broken.ndjson");
    std::fs::write(&broken, "{\"name\":\"a\"}\n{oops\n").unwrap();
    for (extra, says) in [
        (
            vec!["--data-file", bad.to_str().unwrap()],
            "message 2: the data does not match helloworld.HelloRequest",
        ),
        (
            vec!["--data-file", broken.to_str().unwrap()],
            "broken.ndjson: line 2",
        ),
        (vec!["--data", r#"{"name":"{{sqe}}"}"#], "--data: "),
        (vec!["--data", "{"], "--data: not JSON"),
        (vec!["-H", "x: {{nope}}"], "-H x: "),
    ] {
        let (code, _, err) = run(&url, &extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
}

/// A Greeter that knows only SayHello (UNIMPLEMENTED for any other path), with server
/// reflection of greeter.proto in the `versions` given (none when `None`).
pub(crate) fn reflecting_server(
    versions: Option<testkit::reflection::Versions>,
) -> (testkit::Server, Arc<Mutex<Vec<String>>>) {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let p = paths.clone();
    let service: testkit::grpc::GrpcHandler = Arc::new(move |c: &Call| {
        p.lock().unwrap().push(c.path.to_string());
        if c.path == "/helloworld.Greeter/SayHello" {
            Answer::ok(REPLY.to_vec())
        } else {
            Answer::code(12)
        }
    });
    let handler = match versions {
        Some(v) => {
            let pool = grpc::compile(&[greeter()], &[]).unwrap();
            testkit::reflection::with_reflection(service, pool, v)
        }
        None => service,
    };
    let srv = serve_grpc(testkit::Options::default(), handler).expect("server starts");
    (srv, paths)
}

#[test]
fn server_reflection_stands_in_for_the_proto() {
    use testkit::reflection::Versions;
    for versions in [Versions::Both, Versions::V1AlphaOnly] {
        let (srv, paths) = reflecting_server(Some(versions));
        let url = format!("grpc://{}", srv.addr);
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let out = brink()
            .args(["run", &url, "--call", "helloworld.Greeter/SayHello"])
            .args(["--data", r#"{"name":"r","at":"1970-01-01T00:00:01Z"}"#])
            .args(["-n", "10", "-q", "--json"])
            .arg(&json)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{versions:?}: {err}");
        let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(r["summary"]["grpc_status"], serde_json::json!({"OK": 10}));
        let paths = paths.lock().unwrap();
        assert_eq!(
            paths.iter().filter(|p| p.ends_with("/SayHello")).count(),
            10,
            "reflection calls are not load: {paths:?}"
        );
        // The import (google/protobuf/timestamp.proto) was asked for by name: the Timestamp
        // field encoded, so the pool is complete.
        drop(paths);

        brink()
            .args(["run", &url, "--list"])
            .assert()
            .code(0)
            .stdout(predicates::str::contains(
                "helloworld.Greeter/SayHelloStream  (helloworld.HelloRequest -> helloworld.HelloReply, server streaming)",
            ))
            .stdout(predicates::str::contains("grpc.reflection").not());
    }

    let (srv, paths) = reflecting_server(Some(Versions::Both));
    let url = format!("grpc://{}", srv.addr);
    for (call, says) in [
        (
            "helloworld.Greter/SayHello",
            "no service helloworld.Greter on the server (services: helloworld.Greeter)",
        ),
        (
            "helloworld.Greeter/SayHi",
            "methods: SayHello, SayHelloStream",
        ),
    ] {
        brink()
            .args(["run", &url, "--call", call, "-n", "1"])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    assert!(!paths
        .lock()
        .unwrap()
        .iter()
        .any(|p| p.ends_with("/SayHello")));

    // A server without reflection: said, with the way out.
    let (srv, paths) = reflecting_server(None);
    let out = brink()
        .args(["run", &format!("grpc://{}", srv.addr)])
        .args(["--call", "helloworld.Greeter/SayHello", "-n", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not offer reflection"), "{err}");
    assert!(err.contains("--proto FILE"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(
        paths.lock().unwrap().len(),
        2,
        "v1 then v1alpha, and no load"
    );
    // Nobody listening: said too.
    drop(srv);
    let out = brink()
        .args(["run", "grpc://127.0.0.1:1", "--call", "a.B/C", "-n", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("server reflection: cannot connect"), "{err}");
}

#[test]
fn codes_per_second_reach_the_report_and_compare() {
    // Before: 10% UNAVAILABLE and 10% NOT_FOUND; after: every call OK.
    let (faulty, _) = greeter_server(false, Duration::ZERO);
    let healthy = serve_grpc(
        testkit::Options::default(),
        Arc::new(|_: &Call| Answer::ok(REPLY.to_vec())),
    )
    .expect("server starts");
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.json"),
        dir.path().join("after.json"),
    );
    for (srv, file) in [(&faulty, &before), (&healthy, &after)] {
        let (code, r, err) = run(&format!("grpc://{}", srv.addr), &["-n", "200", "-c", "2"]);
        assert_eq!(code.map(|c| c <= 1), Some(true), "{err}");
        std::fs::write(file, serde_json::to_vec(&r).unwrap()).unwrap();
    }
    let r: Value = serde_json::from_slice(&std::fs::read(&before).unwrap()).unwrap();
    let per_second = |code: &str| -> u64 {
        r["timeseries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["grpc_status"][code].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(
        (
            per_second("OK"),
            per_second("UNAVAILABLE"),
            per_second("NOT_FOUND")
        ),
        (160, 20, 20)
    );

    let html = dir.path().join("r.html");
    brink()
        .args([
            "report",
            before.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ])
        .assert()
        .code(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("code UNAVAILABLE") && page.contains("code NOT_FOUND"));
    assert!(!page.contains("code OK"), "OK is not an error");

    let out = brink()
        .args(["compare", before.to_str().unwrap(), after.to_str().unwrap()])
        .args(["--format", "json", "--allow-mismatch"])
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&out.stdout).expect("compare JSON");
    let row = |metric: &str| {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == metric)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let unavailable = row("code UNAVAILABLE");
    assert_eq!(
        (
            unavailable["before"].as_f64(),
            unavailable["after"].as_f64()
        ),
        (Some(0.1), Some(0.0)),
        "{c}"
    );
    assert_eq!(row("code NOT_FOUND")["before"], 0.1);
    assert!(row("code OK").is_null());
}
