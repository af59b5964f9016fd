//! Client protocol paths against real servers: HTTP/1.1 framings (length, chunked,
//! close-delimited, HEAD), TLS with a verified or skipped certificate, HTTP/2 via h2c and ALPN.

use crate::common::{closed, run, spec, with_request};
use engine::RunSpec;
use stats::ErrorKind;
use std::io::Write;
use std::time::Duration;
use testkit::{handlers, Options};

fn n_requests(url: &str, n: u64) -> RunSpec {
    let mut s = spec(url, closed(2, None));
    s.max_requests = Some(n);
    s
}

#[test]
fn chunked_bodies_are_read_completely_and_the_connection_reused() {
    let srv = testkit::serve(handlers::faults()).unwrap();
    let out = run(&n_requests(&srv.url("/chunked"), 100));
    assert_eq!(out.totals.all.ok, 100);
    assert_eq!(
        srv.counters.connections(),
        2,
        "a fully read chunked body leaves the connection reusable"
    );
    // Each body is 20,013 bytes plus chunk framing and the head.
    assert!(
        out.totals.all.bytes_in > 100 * 20_013,
        "bytes_in {}",
        out.totals.all.bytes_in
    );
}

#[test]
fn close_delimited_bodies_end_at_eof_and_reconnect() {
    let srv = testkit::serve(handlers::faults()).unwrap();
    let out = run(&n_requests(&srv.url("/close"), 50));
    assert_eq!(out.totals.all.ok, 50, "{:?}", out.totals.all.errors_by_kind);
    assert_eq!(
        srv.counters.connections(),
        50,
        "each response closes its connection"
    );
}

#[test]
fn head_responses_have_no_body() {
    let srv = testkit::serve(handlers::fixed(Duration::ZERO)).unwrap();
    let s = with_request(n_requests(&srv.url("/"), 50), "HEAD", &[], "");
    let out = run(&s);
    assert_eq!(
        out.totals.all.ok, 50,
        "a HEAD response with Content-Length must not wait for a body"
    );
    assert_eq!(srv.counters.connections(), 2);
}

#[test]
fn truncated_and_dropped_responses_are_closed_errors() {
    let srv = testkit::serve(handlers::faults()).unwrap();
    for path in ["/partial", "/drop"] {
        let out = run(&n_requests(&srv.url(path), 20));
        assert_eq!(
            out.totals.all.errors_by_kind[ErrorKind::Closed.index()],
            20,
            "{path}"
        );
    }
}

#[test]
fn post_bodies_arrive() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let srv = testkit::serve(std::sync::Arc::new(move |r: &testkit::Req| {
        s2.lock().unwrap().push((
            r.method.to_string(),
            String::from_utf8_lossy(r.body).to_string(),
        ));
        testkit::Reply::status(201)
    }))
    .unwrap();
    let s = with_request(
        n_requests(&srv.url("/register"), 10),
        "POST",
        &[("Content-Type", "application/json")],
        r#"{"a":1}"#,
    );
    assert_eq!(run(&s).totals.all.status.get(201), 10);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 10);
    assert!(seen.iter().all(|(m, b)| m == "POST" && b == r#"{"a":1}"#));
}

fn tls_server(h2: bool) -> testkit::Server {
    let opts = Options {
        tls: true,
        ..Options::default()
    };
    if h2 {
        testkit::serve_hyper(opts, handlers::fixed(Duration::ZERO)).unwrap()
    } else {
        testkit::serve_with(opts, handlers::fixed(Duration::ZERO)).unwrap()
    }
}

#[test]
fn tls_verifies_with_cacert_and_fails_without() {
    let srv = tls_server(false);
    let mut pem = tempfile::NamedTempFile::new().unwrap();
    pem.write_all(srv.cert_pem.as_ref().unwrap().as_bytes())
        .unwrap();
    let mut s = n_requests(&srv.url("/"), 30);
    s.tls.cacert = Some(pem.path().to_path_buf());
    assert_eq!(run(&s).totals.all.ok, 30, "verified against the test CA");
    s.tls.cacert = None;
    let out = run(&s);
    assert_eq!(
        out.totals.all.errors_by_kind[ErrorKind::Tls.index()],
        30,
        "an unknown CA is a TLS error"
    );
    s.tls.insecure = true;
    let out = run(&s);
    assert_eq!(
        out.totals.all.ok, 30,
        "--insecure skips verification: {:?}",
        out.totals.all.errors_by_kind
    );
}

#[test]
fn http2_over_tls_via_alpn() {
    let srv = tls_server(true);
    let mut s = n_requests(&srv.url("/"), 40);
    s.tls.insecure = true;
    s.target.protocol = model::Protocol::Http2;
    let out = run(&s);
    assert_eq!(out.totals.all.ok, 40, "{:?}", out.totals.all.errors_by_kind);
    assert_eq!(srv.counters.connections(), 2);
}

#[test]
fn http2_cleartext_prior_knowledge() {
    let srv = testkit::serve_hyper(Options::default(), handlers::fixed(Duration::ZERO)).unwrap();
    let mut s = n_requests(&srv.url("/"), 40);
    s.target.protocol = model::Protocol::Http2;
    let out = run(&s);
    assert_eq!(out.totals.all.ok, 40, "{:?}", out.totals.all.errors_by_kind);
    assert_eq!(srv.counters.connections(), 2);
}

/// h2c runs on brink's own HTTP/2 client (the epoll worker): twenty streams share the two
/// connections asked for, every request is answered once, and what each carried (method, path,
/// a header, a body larger than the server's first window, so it waits for WINDOW_UPDATEs)
/// arrives whole, against hyper's server.
#[test]
fn http2_cleartext_streams_share_connections_and_bodies_pass_the_window() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let srv = testkit::serve_hyper(
        Options::default(),
        std::sync::Arc::new(move |r: &testkit::Req| {
            s2.lock().unwrap().push((
                r.method.to_string(),
                r.path.to_string(),
                r.header("x-run").map(str::to_string),
                r.body.len(),
            ));
            testkit::Reply::status(201)
        }),
    )
    .unwrap();
    let body = "b".repeat(200_000);
    let mut s = with_request(
        n_requests(&srv.url("/upload?x=1"), 300),
        "PUT",
        &[("X-Run", "h2c")],
        &body,
    );
    s.target.protocol = model::Protocol::Http2;
    s.load = closed(20, None);
    s.connections = Some(2);
    let out = run(&s);
    assert_eq!(
        out.totals.all.status.get(201),
        300,
        "{:?}",
        out.totals.all.errors_by_kind
    );
    assert_eq!(srv.counters.requests(), 300, "each request sent once");
    assert_eq!(
        srv.counters.connections(),
        2,
        "the streams share two connections"
    );
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|(m, p, h, n)| m == "PUT"
        && p == "/upload?x=1"
        && h.as_deref() == Some("h2c")
        && *n == 200_000));
}

/// Each merged second says how many requests were in flight when it ended, on all three
/// loops: 4 connections against a 200 ms server always hold 4 (or 3, in the instant between
/// an answer and the next send).
#[test]
fn each_second_counts_the_requests_in_flight_on_every_loop() {
    let _cpu = crate::common::cpu_light();
    let slow = || handlers::fixed(Duration::from_millis(200));
    let plain = testkit::serve(slow()).unwrap();
    let h2c = testkit::serve_hyper(Options::default(), slow()).unwrap();
    let tls = testkit::serve_with(
        Options {
            tls: true,
            ..Options::default()
        },
        slow(),
    )
    .unwrap();
    for (name, srv, protocol) in [
        ("epoll h1", &plain, model::Protocol::Http1),
        ("epoll h2c", &h2c, model::Protocol::Http2),
        ("tokio tls", &tls, model::Protocol::Http1),
    ] {
        let mut s = spec(&srv.url("/"), closed(4, Some(2.5)));
        s.target.protocol = protocol;
        s.tls.insecure = true;
        s.threads = 2;
        let mut seen = Vec::new();
        engine::run(
            &s,
            &std::sync::atomic::AtomicBool::new(false),
            &mut |v: &merge::SecondView| {
                seen.push(v.all.in_flight);
                false
            },
        )
        .expect("run starts");
        assert!(seen.len() >= 2, "{name}: {seen:?}");
        assert!(
            seen[..2].iter().all(|n| (3..=4).contains(n)),
            "{name}: {seen:?}"
        );
    }
}
