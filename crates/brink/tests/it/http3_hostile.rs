//! HTTP/3 servers that misbehave (testkit's raw quinn server, told how): malformed answers,
//! resets, a connection closed under load, a stream limit never raised, GOAWAY at once, an
//! answer that never ends. Every request is counted once, as the kind of error it met, and
//! every run ends on time.

use crate::support::brink_json;
use std::time::{Duration, Instant};
use testkit::H3Misbehaviour as M;

/// Runs `-n N -c 1` against a server misbehaving as told; the result's summary, and how long
/// the run took.
fn against(how: M, n: &str, extra: &[&str]) -> (serde_json::Value, Duration, u64) {
    let srv = testkit::serve_h3_raw(how).expect("raw h3 server starts");
    let url = srv.url("/");
    let started = Instant::now();
    let mut args = vec![
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        n,
        "-c",
        "1",
        "--no-history",
    ];
    args.extend_from_slice(extra);
    let r = brink_json(&args);
    let took = started.elapsed();
    let streams = srv.streams.load(std::sync::atomic::Ordering::Relaxed);
    (r.result["summary"].clone(), took, streams)
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![kind, u8::try_from(payload.len()).expect("short payload")];
    b.extend_from_slice(payload);
    b
}

#[test]
fn malformed_http3_answers_are_protocol_errors_one_per_request() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let status_200 = [0x00, 0x00, 0xd9];
    let head = frame(0x01, &status_200);
    let malformed: Vec<(&str, Vec<u8>)> = vec![
        ("data before the head", frame(0x00, b"hi")),
        (
            "settings on a request stream",
            [head.clone(), frame(0x04, b"")].concat(),
        ),
        (
            "a dynamic-table reference",
            frame(0x01, &[0x00, 0x00, 0x80]),
        ),
        (
            "a Huffman string that is not",
            frame(0x01, &[0x00, 0x00, 0x5f, 0x1d, 0x81, 0x00]),
        ),
        (
            "ends inside a frame",
            [head.clone(), vec![0x00, 0x10, b'a']].concat(),
        ),
        (
            "a head too large to read",
            vec![0x01, 0x80, 0x10, 0x00, 0x01],
        ),
        ("garbage", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff".to_vec()),
    ];
    for (what, bytes) in malformed {
        let (s, took, streams) = against(M::Bytes(bytes), "5", &["--timeout", "2s"]);
        assert_eq!(s["requests"], 5, "{what}: {s}");
        assert_eq!(s["errors_by_kind"]["protocol"], 5, "{what}: {s}");
        assert_eq!(streams, 5, "{what}: each request sent once");
        assert!(took < Duration::from_secs(8), "{what}: {took:?}");
    }
    // The same server answering well formed bytes: all fine (the test can fail both ways).
    let good = [head, frame(0x00, b"ok")].concat();
    let (s, _, _) = against(M::Bytes(good), "5", &[]);
    assert_eq!((&s["ok"], &s["bytes_in"]), (&5.into(), &10.into()), "{s}");
}

#[test]
fn http3_resets_and_closes_are_counted_as_such() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    // H3_EXCESSIVE_LOAD on each stream: the connection carries on.
    let (s, _, streams) = against(M::Reset(0x107), "4", &[]);
    assert_eq!(s["errors_by_kind"]["reset"], 4, "{s}");
    assert_eq!(s["errors_by_code"]["reset:H3_EXCESSIVE_LOAD"], 4, "{s}");
    assert_eq!(streams, 4);
    // A code HTTP/3 does not define is shown as it came.
    let (s, _, _) = against(M::Reset(0x5f), "2", &[]);
    assert_eq!(s["errors_by_code"]["reset:0x5f"], 2, "{s}");
    // The whole connection closed with it: each request on a fresh one, each `closed`.
    let (s, took, _) = against(M::Close(0x107), "3", &[]);
    assert_eq!(s["errors_by_kind"]["closed"], 3, "{s}");
    assert_eq!(s["errors_by_code"]["closed:H3_EXCESSIVE_LOAD"], 3, "{s}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn a_stream_limit_never_raised_ends_in_timeouts_on_time() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    // Two streams allowed per connection, never freed: two answers, then the next request
    // waits for a stream it never gets, until --timeout; the slot then starts over on a
    // fresh connection (as after any timeout).
    let (s, took, streams) = against(M::StreamLimit(2), "6", &["--timeout", "400ms"]);
    assert_eq!(s["requests"], 6, "{s}");
    assert_eq!(s["ok"], 4, "{s}");
    assert_eq!(s["errors_by_kind"]["timeout"], 2, "{s}");
    assert_eq!(s["connections_opened"], 2, "{s}");
    assert_eq!(streams, 4, "no stream past the limit was opened");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn a_flow_window_never_opened_ends_in_timeouts_on_time() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    // The server answers at once but never reads: a small body fits its 1 KiB window, a
    // 64 KiB one never gets through and ends at --timeout.
    let small = "x".repeat(100);
    let (s, _, _) = against(M::NoWindow(1024), "2", &["-m", "POST", "-b", &small]);
    assert_eq!(s["ok"], 2, "{s}");
    let big = "x".repeat(64 * 1024);
    let args = ["-m", "POST", "-b", &big, "--timeout", "400ms"];
    let (s, took, _) = against(M::NoWindow(1024), "2", &args);
    assert_eq!(s["errors_by_kind"]["timeout"], 2, "{s}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn goaway_at_once_is_tried_on_fresh_connections_then_closed() {
    let srv = testkit::serve_h3_raw(M::GoawayAtOnce).expect("raw h3 server starts");
    let url = srv.url("/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "2",
        "-c",
        "1",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["requests"], 2, "{s}");
    assert_eq!(s["errors_by_kind"]["closed"], 2, "{s}");
    assert_eq!(s["errors_by_code"]["closed:GOAWAY"], 2, "{s}");
    // Each request was tried on fresh connections, and every one of them is counted.
    let conns = srv.connections.load(std::sync::atomic::Ordering::Relaxed);
    assert!((2..=8).contains(&conns), "{conns} connections");
    assert_eq!(s["connections_opened"], conns, "{s}");
}

/// A GOAWAY naming a request stream that the server leaves open: the request was not
/// processed (RFC 9114 §5.2), so it is tried again at once on a fresh connection, not held
/// until `--timeout`.
#[test]
fn goaway_under_an_open_stream_is_tried_again_at_once() {
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve_h3_raw(M::GoawayHoldingStreams).expect("raw h3 server starts");
    let url = srv.url("/");
    let t = Instant::now();
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "2",
        "-c",
        "1",
        "--timeout",
        "10s",
        "--no-history",
    ]);
    let took = t.elapsed();
    let s = &r.result["summary"];
    assert_eq!(s["requests"], 2, "{s}");
    assert_eq!(s["errors_by_code"]["closed:GOAWAY"], 2, "{s}");
    assert!(
        took < Duration::from_secs(5),
        "waited for --timeout: {took:?}"
    );
    let conns = srv.connections.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(s["connections_opened"], conns, "{s}");
}

#[test]
fn a_rejected_stream_is_tried_again_on_the_same_connection() {
    let srv = testkit::serve_h3_raw(M::RejectAll).expect("raw h3 server starts");
    let url = srv.url("/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "4",
        "-c",
        "1",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["errors_by_kind"]["reset"], 4, "{s}");
    assert_eq!(s["errors_by_code"]["reset:H3_REQUEST_REJECTED"], 4, "{s}");
    // Three tries each, all on the one connection.
    assert_eq!(srv.streams.load(std::sync::atomic::Ordering::Relaxed), 12);
    assert_eq!(
        srv.connections.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(s["connections_opened"], 1, "{s}");
}

#[test]
fn a_control_stream_breaking_the_rules_closes_the_connection_with_its_code() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let cases: [(&str, &[u8], &str); 4] = [
        ("no SETTINGS first", b"\x07\x01\x00", "H3_MISSING_SETTINGS"),
        (
            "a second SETTINGS",
            b"\x04\x00\x04\x00",
            "H3_FRAME_UNEXPECTED",
        ),
        (
            "DATA on the control stream",
            b"\x04\x00\x00\x01x",
            "H3_FRAME_UNEXPECTED",
        ),
        (
            "GOAWAY naming no request stream",
            b"\x04\x00\x07\x01\x01",
            "H3_ID_ERROR",
        ),
    ];
    for (what, bytes, code) in cases {
        let (s, took, _) = against(M::Control(bytes.to_vec()), "2", &["--timeout", "3s"]);
        assert_eq!(s["errors_by_kind"]["protocol"], 2, "{what}: {s}");
        assert_eq!(
            s["errors_by_code"][format!("protocol:{code}")],
            2,
            "{what}: {s}"
        );
        assert!(took < Duration::from_secs(5), "{what}: {took:?}");
    }
}

#[test]
fn an_answer_that_never_ends_is_a_timeout_in_bounded_memory() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    let (s, took, _) = against(M::Endless, "2", &["--timeout", "700ms"]);
    assert_eq!(s["errors_by_kind"]["timeout"], 2, "{s}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}
