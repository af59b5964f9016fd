//! Streamed answers: a `text/event-stream` answer is read as its events, and a run says what
//! a reader of the stream waits for (the head, the first event, each next one), checked
//! against a server of known cadence.

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use testkit::{Reply, Req};

fn run(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, r.stdout)
}

/// A model server's cadence: the first token 60 ms after the head, then one every 20 ms,
/// ten in all: an answer takes 60 + 9 x 20 = 240 ms.
fn cadenced(tls: bool) -> testkit::Server {
    let opts = testkit::Options {
        tls,
        ..testkit::Options::default()
    };
    testkit::serve_with(
        opts,
        Arc::new(|_: &Req| Reply::Events {
            first: Duration::from_millis(60),
            every: Duration::from_millis(20),
            events: 10,
            slot: false,
        }),
    )
    .unwrap()
}

#[test]
fn an_event_stream_is_timed_by_its_events() {
    let _cpu = crate::support::cpu_shared();
    let srv = cadenced(false);
    check_cadence(&[&srv.url("/v1/stream"), "-c", "4", "-d", "3s"]);
}

#[test]
fn an_event_stream_over_tls_is_timed_by_its_events() {
    // TLS takes the tokio worker's path, not the epoll loop's.
    let _cpu = crate::support::cpu_shared();
    let srv = cadenced(true);
    check_cadence(&[&srv.url("/v1/stream"), "-c", "4", "-d", "3s", "--insecure"]);
}

/// A hyper server (HTTP/2) with [`cadenced`]'s cadence.
fn cadenced_h2(tls: bool) -> testkit::Server {
    let opts = testkit::Options {
        tls,
        ..testkit::Options::default()
    };
    testkit::serve_hyper(
        opts,
        Arc::new(|_: &Req| Reply::Events {
            first: Duration::from_millis(60),
            every: Duration::from_millis(20),
            events: 10,
            slot: false,
        }),
    )
    .unwrap()
}

#[test]
fn an_event_stream_over_http2_is_timed_by_its_events() {
    // HTTP/2 over TLS: hyper's client on the tokio worker, each event a DATA frame.
    let _cpu = crate::support::cpu_shared();
    let srv = cadenced_h2(true);
    let url = srv.url("/v1/stream");
    check_cadence(&[&url, "--http2", "-c", "4", "-d", "3s", "--insecure"]);
}

#[test]
fn an_event_stream_over_h2c_is_timed_by_its_events() {
    // h2c with prior knowledge: brink's own HTTP/2 client on the epoll loop.
    let _cpu = crate::support::cpu_shared();
    let srv = cadenced_h2(false);
    let url = srv.url("/v1/stream");
    check_cadence(&[&url, "--http2", "-c", "4", "-d", "3s"]);
}

/// A run of `args` against a [`cadenced`] server reads its cadence.
fn check_cadence(args: &[&str]) {
    let (code, r, out) = run(args);
    assert_eq!(code, Some(0), "{out}");
    let s = &r["summary"];
    let st = &s["stream"];
    let streams = st["streams"].as_u64().unwrap();
    assert_eq!(
        streams,
        s["ok"].as_u64().unwrap(),
        "every answer streamed: {st}"
    );
    assert_eq!(st["events"].as_u64().unwrap(), streams * 10, "{st}");
    // Little's law on the answers: 4 streams held / answers per second = 240 ms each.
    assert!(
        (40..=52).contains(&streams),
        "{streams} answers in 3 s over 4: {st}"
    );
    let ms = |v: &Value| v.as_f64().unwrap();
    let first_byte = ms(&st["first_byte_ms"]["p50"]);
    let first_event = ms(&st["first_event_ms"]["p50"]);
    let gap = ms(&st["event_gap_ms"]["p50"]);
    assert!(first_byte < 15.0, "the head comes at once: {st}");
    assert!(
        (58.0..=80.0).contains(&first_event),
        "first event {first_event} ms, truth 60: {st}"
    );
    assert!((17.0..=26.0).contains(&gap), "gap {gap} ms, truth 20: {st}");
    let latency = ms(&s["latency_ms"]["p50"]);
    assert!(
        (238.0..=275.0).contains(&latency),
        "the whole answer {latency} ms, truth 240"
    );
    assert!(
        out.contains("events read")
            && out.contains("answers ended")
            && out.contains("first event p50"),
        "{out}"
    );
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn an_answer_that_is_no_event_stream_has_no_stream_figures() {
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::ok("data: x\n\n", Duration::ZERO))).unwrap();
    let (code, r, out) = run(&[&srv.url("/"), "-n", "20", "-c", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(r["summary"].get("stream").is_none(), "{}", r["summary"]);
    assert!(!out.contains("events read"), "{out}");
}

#[test]
fn stream_reads_any_answer_as_events_and_max_event_size_bounds_them() {
    // Events in a chunked answer that does not say text/event-stream.
    let chunks = vec![b"data: a\n\n".to_vec(), b"data: b\n\ndata: c\n\n".to_vec()];
    let srv = testkit::serve(Arc::new(move |_: &Req| Reply::Chunked(chunks.clone()))).unwrap();
    let (code, r, out) = run(&[&srv.url("/"), "-n", "10", "-c", "2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        r["summary"].get("stream").is_none(),
        "not asked: {}",
        r["summary"]
    );
    let (code, r, out) = run(&[&srv.url("/"), "-n", "10", "-c", "2", "--stream"]);
    assert_eq!(code, Some(0), "{out}");
    let st = &r["summary"]["stream"];
    assert_eq!(
        (st["streams"].as_u64(), st["events"].as_u64()),
        (Some(10), Some(30)),
        "{st}"
    );
    // An event of 2,000 bytes where at most 1 KiB is allowed.
    let big = [b"data: ".to_vec(), vec![b'x'; 2000], b"\n\n".to_vec()].concat();
    let srv = testkit::serve(Arc::new(move |_: &Req| Reply::Chunked(vec![big.clone()]))).unwrap();
    let args = [&srv.url("/")[..], "-n", "10", "-c", "2", "--stream"];
    let (code, _, out) = run(&args);
    assert_eq!(code, Some(0), "within the default 1 MiB: {out}");
    let (code, r, out) = run(&[&args[..], &["--max-event-size", "1KiB"]].concat());
    assert_eq!(code, Some(3), "{out}");
    assert_eq!(
        r["summary"]["errors_by_kind"]["protocol"], 10,
        "{}",
        r["summary"]
    );
    let bad = crate::support::brink_json(&["run", &srv.url("/"), "--max-event-size", "lots"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.starts_with("error: --max-event-size: "),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_plan_reads_its_answers_as_events_when_it_says_stream() {
    let chunks = vec![b"data: a\n\ndata: b\n\n".to_vec()];
    let srv = testkit::serve(Arc::new(move |_: &Req| Reply::Chunked(chunks.clone()))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    let text = format!(
        "target: {}\ndefaults: {{ stream: true }}\nscenarios:\n  - name: s\n    load: {{ connections: 1, requests: 5 }}\n    requests: [ {{ path: / }} ]\n",
        srv.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let (code, r, out) = run(&[plan.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let st = &r["summary"]["stream"];
    assert_eq!(
        (st["streams"].as_u64(), st["events"].as_u64()),
        (Some(5), Some(10)),
        "{st}"
    );
}

#[test]
fn an_endless_event_is_an_error_within_its_bound_and_the_run_ends() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_exclusive();
    // The head says events, then one `data:` line that never ends.
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ".to_vec();
    let srv = testkit::serve(Arc::new(move |_: &Req| Reply::Endless {
        head: head.clone(),
        filler: b"x".to_vec(),
    }))
    .unwrap();
    let t0 = std::time::Instant::now();
    let (code, r, out) = run(&[&srv.url("/"), "-n", "3", "-c", "1"]);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(code, Some(3), "nothing succeeded: {out}");
    let kinds = &r["summary"]["errors_by_kind"];
    assert_eq!(kinds["protocol"], 3, "{kinds}");
}

#[test]
fn a_search_on_time_to_first_event_finds_the_slots_of_a_model_server() {
    // 4 slots; a stream holds one for 20 ms to its first event and 4 x 10 ms more. Up to 4
    // streams at once, the first event comes at 20 ms; a fifth waits up to 60 ms for a slot,
    // so first_event.p99 < 50ms holds up to 4 concurrent streams.
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve_with(
        testkit::Options {
            threads: 2,
            slots: Some(4),
            ..testkit::Options::default()
        },
        Arc::new(|_: &Req| Reply::Events {
            first: Duration::from_millis(20),
            every: Duration::from_millis(10),
            events: 5,
            slot: true,
        }),
    )
    .unwrap();
    let url = srv.url("/v1/completions");
    let (code, r, text) = crate::find::find(
        &[
            &url,
            "--slo",
            "first_event.p99<50ms",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "16",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(0), "{text}");
    let level = r["find"]["max_sustainable"]["level"].as_f64().unwrap();
    assert_eq!(level, 4.0, "{text}");
    let failed: Vec<&Value> = r["find"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["pass"] == false)
        .collect();
    assert!(
        failed
            .iter()
            .all(|s| s["reason"].as_str().unwrap().contains("first_event.p99")),
        "{failed:?}"
    );
}

#[test]
fn a_stream_that_stops_sending_ends_at_its_idle_timeout_on_every_path() {
    // The first event at once, the next a minute later: the stream has gone quiet.
    let stalled = Arc::new(|_: &Req| Reply::Events {
        first: Duration::ZERO,
        every: Duration::from_secs(60),
        events: 3,
        slot: false,
    });
    let _cpu = crate::support::cpu_shared();
    let tls = testkit::Options {
        tls: true,
        ..testkit::Options::default()
    };
    let h1 = testkit::serve_with(testkit::Options::default(), stalled.clone()).unwrap();
    let h1s = testkit::serve_with(tls.clone(), stalled.clone()).unwrap();
    let h2c = testkit::serve_hyper(testkit::Options::default(), stalled.clone()).unwrap();
    let h2s = testkit::serve_hyper(tls, stalled).unwrap();
    for (name, url, extra) in [
        ("http/1.1", h1.url("/s"), &[][..]),
        ("http/1.1 tls", h1s.url("/s"), &["--insecure"][..]),
        ("h2c", h2c.url("/s"), &["--http2"][..]),
        ("h2 tls", h2s.url("/s"), &["--http2", "--insecure"][..]),
    ] {
        let started = std::time::Instant::now();
        let mut args = vec![url.as_str(), "-n", "3", "-c", "1", "--timeout", "20s"];
        args.extend(["--idle-timeout", "300ms"]);
        args.extend(extra);
        let (_, r, out) = run(&args);
        let took = started.elapsed();
        let s = &r["summary"];
        assert_eq!(s["errors_by_kind"]["timeout"], 3, "{name}: {out}");
        assert!(took < Duration::from_secs(8), "{name}: {took:?}: {out}");
    }
}

#[test]
fn held_streams_that_never_end_still_say_their_events_and_gaps() {
    // A notification channel: an event every 100 ms for far longer than the run.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::Events {
        first: Duration::ZERO,
        every: Duration::from_millis(100),
        events: 10_000,
        slot: false,
    }))
    .unwrap();
    let (_, r, out) = run(&[
        &srv.url("/notify"),
        "-c",
        "3",
        "-d",
        "2s",
        "--timeout",
        "60s",
        "--grace",
        "0s",
    ]);
    let st = &r["summary"]["stream"];
    assert_eq!(st["streams"], 0, "none ended: {st}");
    // Heads and first events are timed as they are read, whether or not the stream ends.
    for first in ["first_byte_ms", "first_event_ms"] {
        assert!(st[first]["p99"].as_f64().unwrap() < 50.0, "{first}: {st}");
    }
    let events = st["events"].as_u64().unwrap();
    assert!(
        (51..=66).contains(&events),
        "3 streams x 2 s at 10/s: {events}: {st}"
    );
    let gap = st["event_gap_ms"]["p50"].as_f64().unwrap();
    assert!(
        (95.0..=112.0).contains(&gap),
        "gap {gap} ms, truth 100: {st}"
    );
    assert!(out.contains("events read"), "{out}");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

/// An event stream sent compressed (`Content-Encoding: gzip`: a header the user added, or a
/// server that compresses unasked) has no events brink can read as they come: each answer is
/// `not_stream`, never ok with no events, under `--stream` and `--llm` alike. The same
/// stream sent plain is read.
#[test]
fn a_compressed_event_stream_is_not_a_stream() {
    // gzip of "data: x\n\ndata: y\n\n".
    const GZ: [u8; 34] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x4b, 0x49, 0x2c, 0x49, 0xb4,
        0x52, 0xa8, 0xe0, 0xe2, 0x4a, 0x01, 0x33, 0x2a, 0xb9, 0xb8, 0x00, 0x46, 0xc2, 0x05, 0x5e,
        0x12, 0x00, 0x00, 0x00,
    ];
    let answer = |coding: &str, body: &[u8]| {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{coding}Content-Length: {}\r\n\r\n",
            body.len()
        );
        [head.as_bytes(), body].concat()
    };
    let gz = answer("Content-Encoding: gzip\r\n", &GZ);
    let zipped = testkit::serve(Arc::new(move |_: &Req| Reply::Raw {
        bytes: gz.clone(),
        close: false,
    }))
    .unwrap();
    let plain = answer("Content-Encoding: identity\r\n", b"data: x\n\ndata: y\n\n");
    let plain = testkit::serve(Arc::new(move |_: &Req| Reply::Raw {
        bytes: plain.clone(),
        close: false,
    }))
    .unwrap();
    for extra in [&["--stream"][..], &["--llm", "--model", "m"]] {
        let mut args = vec![zipped.url("/v1/completions"), "-n".into(), "10".into()];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, r, out) = run(&args);
        let s = &r["summary"];
        assert_eq!(code, Some(3), "{extra:?}: {out}");
        assert_eq!(s["errors_by_kind"]["not_stream"], 10, "{extra:?}: {s}");
        assert_eq!(s["status"]["200"], 10, "{extra:?}: answered, not ok: {s}");
    }
    let (code, r, out) = run(&[&plain.url("/"), "-n", "10", "--stream"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(r["summary"]["stream"]["events"], 20, "{}", r["summary"]);
}
