//! Notification channels: `--hold` keeps the `-c` event streams for the run and reopens each
//! one that ends as a browser's `EventSource` does (after the stream's `retry:`, sending the
//! `Last-Event-ID` it confirmed), and `--sent-at` reads each event's delivery delay from the
//! send time its data carries. Checked against a feed server that resumes after the ID it is
//! sent, on every HTTP path.

use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Reply, Req};

fn run(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = crate::support::brink_json(&all);
    (r.code, r.result, format!("{}{}", r.stdout, r.stderr))
}

/// Each request's `Last-Event-ID` (`None` when it sent none), in arrival order.
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// A feed: five events 40 ms apart, resuming after the `Last-Event-ID` it is sent, and a
/// reconnection time of 100 ms; it records what each request said.
fn feed() -> (testkit::Handler, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let handler: testkit::Handler = Arc::new(move |r: &Req| {
        let id = r.header("last-event-id").map(str::to_string);
        let after = id.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
        if let Ok(mut l) = log.lock() {
            l.push(id);
        }
        Reply::Feed {
            after,
            events: 5,
            every: Duration::from_millis(40),
            retry_ms: 100,
        }
    });
    (handler, seen)
}

#[test]
fn held_streams_reconnect_with_last_event_id_on_every_path() {
    let _cpu = crate::support::cpu_shared();
    let tls = testkit::Options {
        tls: true,
        ..testkit::Options::default()
    };
    let plain = testkit::Options::default();
    let serve = |opts: &testkit::Options, server: &str| {
        let (h, seen) = feed();
        let srv = match server {
            "h1" => testkit::serve_with(opts.clone(), h),
            "h3" => testkit::serve_h3(opts.clone(), h),
            _ => testkit::serve_hyper(opts.clone(), h),
        };
        (srv.unwrap(), seen)
    };
    for (name, (srv, seen), extra) in [
        ("http/1.1", serve(&plain, "h1"), &[][..]),
        ("http/1.1 tls", serve(&tls, "h1"), &["--insecure"][..]),
        ("h2c", serve(&plain, "h2"), &["--http2"][..]),
        ("h2 tls", serve(&tls, "h2"), &["--http2", "--insecure"][..]),
        ("h3", serve(&plain, "h3"), &["--http3", "--insecure"][..]),
    ] {
        let url = srv.url("/feed");
        let mut args = vec![
            url.as_str(),
            "--hold",
            "-c",
            "2",
            "-d",
            "2s",
            "--grace",
            "0s",
        ];
        args.extend(["--sent-at", "$.ts"]);
        args.extend(extra);
        let (code, r, out) = run(&args);
        assert_eq!(code, Some(0), "{name}: {out}");
        let st = &r["summary"]["stream"];
        let seen = seen.lock().unwrap().clone();
        // Each stream lasts 160 ms and the next opens 100 ms after it ends: about seven
        // per slot in 2 s. Without the stream's retry: (3 s) there would be none; without any
        // wait, twelve per slot.
        let reconnects = st["reconnects"].as_u64().unwrap();
        assert!((8..=15).contains(&reconnects), "{name}: {reconnects}: {st}");
        // The server saw every stream brink opened, bar one per slot cut by the end.
        let opened = seen.len() as u64;
        assert!(
            opened <= reconnects + 2 && opened + 2 >= reconnects + 2,
            "{name}: server saw {opened}, brink {reconnects} reconnects"
        );
        assert_eq!(seen.iter().filter(|id| id.is_none()).count(), 2, "{name}");
        // Each stream confirmed the last of its five IDs, so every resume says a multiple
        // of five, and resumes where the slot's last stream ended.
        for id in seen.iter().flatten() {
            let n: u64 = id.parse().unwrap_or(1);
            assert!(
                n > 0 && n.is_multiple_of(5),
                "{name}: Last-Event-ID {id}: {seen:?}"
            );
        }
        let resumed = st["resumed"].as_u64().unwrap();
        assert_eq!(resumed, reconnects, "{name}: every reconnect resumes: {st}");
        let events = st["events"].as_u64().unwrap();
        assert!(
            events >= 5 * (opened - 2) && events <= 5 * opened,
            "{name}: {events} events from {opened} streams"
        );
        // Loopback: delivered within milliseconds of the send time each event carries.
        let delay = &st["delay_ms"];
        assert!(delay["p99"].as_f64().unwrap() < 50.0, "{name}: {delay}");
        assert_eq!(st["undated"], 0, "{name}: {st}");
        assert!(out.contains("reconnects"), "{name}: {out}");
        assert!(out.contains("delivery"), "{name}: {out}");
        let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
}

#[test]
fn a_held_stream_ends_at_its_silence_not_at_the_request_timeout() {
    let _cpu = crate::support::cpu_shared();
    // An event every 100 ms, for far longer than the run.
    let steady = testkit::serve(Arc::new(|_: &Req| Reply::Events {
        first: Duration::ZERO,
        every: Duration::from_millis(100),
        events: 10_000,
        slot: false,
    }))
    .unwrap();
    let url = steady.url("/s");
    let args = [
        &url,
        "--hold",
        "-c",
        "2",
        "-d",
        "1500ms",
        "--timeout",
        "400ms",
    ];
    let (code, r, out) = run(&args);
    let s = &r["summary"];
    assert_eq!((code, &s["errors"]), (Some(0), &Value::from(0)), "{out}");
    assert_eq!(s["stream"]["reconnects"], 0, "{out}");
    let events = s["stream"]["events"].as_u64().unwrap();
    assert!(
        (24..=34).contains(&events),
        "2 streams x 1.5 s at 10/s: {events}"
    );
    assert!(!s["stream"]["first_event_ms"].is_null(), "{}", s["stream"]);
    // The first event at once, then silence: each held stream ends as a timeout after
    // --idle-timeout, and reopens after a browser's 3 s.
    let quiet = testkit::serve(Arc::new(|_: &Req| Reply::Events {
        first: Duration::ZERO,
        every: Duration::from_secs(60),
        events: 2,
        slot: false,
    }))
    .unwrap();
    let url = quiet.url("/s");
    let started = std::time::Instant::now();
    let args = [
        &url,
        "--hold",
        "-c",
        "2",
        "-d",
        "2s",
        "--idle-timeout",
        "300ms",
    ];
    let (_, r, out) = run(&args);
    let s = &r["summary"];
    assert_eq!(s["errors_by_kind"]["timeout"], 2, "{out}");
    assert_eq!(s["stream"]["reconnects"], 0, "{out}");
    assert!(started.elapsed() < Duration::from_secs(10), "{out}");
}

#[test]
fn an_id_that_cannot_be_a_header_is_not_sent_back() {
    let _cpu = crate::support::cpu_shared();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    // A control byte in the ID, then one far longer than a header should be; the stream
    // ends at once and asks to be reopened after 50 ms.
    let srv = testkit::serve(Arc::new(move |r: &Req| {
        let mut l = log.lock().unwrap();
        l.push(r.header("last-event-id").map(str::to_string));
        let id = match l.len() {
            1 => "ok-1".to_string(),
            2 => "bad\u{1}id".to_string(),
            3 => "ok-3".to_string(),
            _ => "x".repeat(9_000),
        };
        let body = format!("retry: 50\nid: {id}\ndata: x\n\n");
        Reply::CloseDelimited(body.into_bytes())
    }))
    .unwrap();
    let url = srv.url("/s");
    let args = [&url, "--hold", "--stream", "-c", "1", "-d", "1s"];
    let (_, r, out) = run(&args);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 5, "{seen:?}: {out}");
    assert_eq!(seen[0], None);
    assert_eq!(seen[1].as_deref(), Some("ok-1"));
    assert_eq!(seen[2], None, "a control byte: not sent");
    assert_eq!(seen[3].as_deref(), Some("ok-3"));
    assert_eq!(seen[4], None, "9,000 bytes: not sent");
    let st = &r["summary"]["stream"];
    assert_eq!(
        st["reconnects"].as_u64(),
        Some(seen.len() as u64 - 1),
        "{st}"
    );
}

#[test]
fn hold_and_sent_at_say_where_they_do_not_fit() {
    let url = "http://127.0.0.1:9/feed";
    for (args, says) in [
        (
            vec![url, "--hold", "--rate", "10", "-d", "1s"],
            "not --rate",
        ),
        (vec![url, "--hold", "-n", "10"], "give -d alone"),
        (vec![url, "--hold", "-n", "10", "-d", "3s"], "give -d alone"),
        (vec![url, "--sent-at", "ts", "-d", "1s"], "starts with $"),
        (
            vec![
                "http://127.0.0.1:9/v1/chat/completions",
                "--hold",
                "--llm",
                "--model",
                "m",
                "-d",
                "1s",
            ],
            "--llm stream ends",
        ),
        (vec![url, "--sent-at", "$[", "-d", "1s"], "--sent-at $["),
        (
            vec!["grpc://127.0.0.1:9", "--hold", "-d", "1s"],
            "--hold and --sent-at apply",
        ),
        (
            vec!["ws://127.0.0.1:9/", "--sent-at", "$.ts", "--message", "x"],
            "add --subscribe",
        ),
    ] {
        let (code, _, out) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(out.contains(says), "{args:?}: {out}");
    }
}

#[test]
fn a_search_holds_streams_and_judges_their_events() {
    let _cpu = crate::support::cpu_light();
    // Endless feeds: an event every 50 ms, each saying when it was sent.
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::Feed {
        after: 0,
        events: 100_000,
        every: Duration::from_millis(50),
        retry_ms: 100,
    }))
    .unwrap();
    let url = srv.url("/feed");
    let find = |slo: &str| {
        let args = [
            "find",
            &url,
            "--hold",
            "--sent-at",
            "$.ts",
            "--slo",
            slo,
            "--slo",
            "event_gap.p99<500ms",
            "--from",
            "2",
            "--to",
            "8",
            "--step",
            "2s",
            "--warmup",
            "500ms",
        ];
        let r = crate::support::brink_json(&args);
        (r.code, r.result, format!("{}{}", r.stdout, r.stderr))
    };
    let (code, r, out) = find("delivery.p99<200ms");
    assert_eq!(code, Some(0), "{out}");
    let f = &r["find"];
    assert_eq!(f["held_streams"], true, "{f}");
    assert_eq!(f["max_sustainable"]["level"], 8.0, "{out}");
    assert!(out.contains("8 connections held"), "{out}");
    // Each level says what its streams carried: 20 events a second each.
    for step in f["steps"].as_array().unwrap() {
        let (level, held) = (step["level"].as_f64().unwrap(), &step["held"]);
        let rate = held["events_per_s"].as_f64().unwrap();
        assert!(
            (rate / (20.0 * level) - 1.0).abs() < 0.15,
            "{level}: {held}"
        );
        assert!(held["delivery_p99_ms"].as_f64().unwrap() < 200.0, "{held}");
    }
    assert!(out.contains("events/s"), "{out}");
    assert!(!out.contains("no successful response"), "{out}");
    // Loopback cannot deliver within a microsecond: the first level fails on it, and says so.
    let (code, r, out) = find("delivery.p99<0.001ms");
    assert_eq!(code, Some(1), "{out}");
    let steps = &r["find"]["steps"];
    let why = steps[0]["reason"].as_str().unwrap_or("");
    assert!(why.starts_with("delivery.p99"), "{why}: {out}");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, &r);
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn a_delivery_objective_needs_the_send_time_it_reads() {
    let (code, _, out) = run(&[
        "http://127.0.0.1:9/f",
        "-d",
        "1s",
        "--slo",
        "delivery.p99<1s",
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("add --sent-at"), "{out}");
}

#[test]
fn reconnects_are_counted_though_no_stream_carried_an_event() {
    let _cpu = crate::support::cpu_shared();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    // Every stream refused; a browser's wait before each retry is 3 s, so -d 4s sees one.
    let srv = testkit::serve(Arc::new(move |r: &Req| {
        log.lock()
            .unwrap()
            .push(r.header("last-event-id").map(str::to_string));
        Reply::status(503)
    }))
    .unwrap();
    let url = srv.url("/s");
    let (code, r, out) = run(&[&url, "--hold", "-c", "2", "-d", "4s"]);
    assert_eq!(code, Some(3), "{out}");
    let st = &r["summary"]["stream"];
    let opened = seen.lock().unwrap().len() as u64;
    assert_eq!(opened, 4, "{out}");
    assert_eq!(
        (&st["reconnects"], &st["resumed"]),
        (&Value::from(2), &Value::from(0)),
        "{st}"
    );
    assert!(out.contains("reconnects"), "{out}");
}

#[test]
fn a_plan_holds_its_streams_when_it_says_hold() {
    let _cpu = crate::support::cpu_shared();
    let (h, seen) = feed();
    let srv = testkit::serve(h).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    let text = format!(
        "target: {}\nscenarios:\n  - name: feed\n    hold: true\n    load: {{ connections: 2, duration: 1500ms }}\n    requests: [ {{ path: /feed }} ]\n",
        srv.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let (code, r, out) = run(&[plan.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let st = &r["scenarios"][0]["summary"]["stream"];
    let resumed = seen.lock().unwrap().iter().flatten().count() as u64;
    assert!(resumed >= 6, "{resumed}: {out}");
    assert_eq!(st["resumed"].as_u64(), Some(resumed), "{st}");
    // A WebSocket scenario holds its connections another way, and says so.
    let ws = dir.path().join("ws.yaml");
    let text = "target: ws://127.0.0.1:9/\nscenarios:\n  - name: w\n    hold: true\n    load: { connections: 1, duration: 1s }\n    requests: [ { message: x } ]\n";
    std::fs::write(&ws, text).unwrap();
    let (code, _, out) = run(&[ws.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("every:"), "{out}");
}

#[test]
fn what_held_and_broken_streams_read_is_in_the_bytes_read() {
    let _cpu = crate::support::cpu_shared();
    // An event every 100 ms (`data: token N`, 14 or 15 bytes with its blank line), never
    // ending: none of it ends as an answer, all of it was read.
    let srv = testkit::serve(Arc::new(|_: &Req| Reply::Events {
        first: Duration::ZERO,
        every: Duration::from_millis(100),
        events: 10_000,
        slot: false,
    }))
    .unwrap();
    let url = srv.url("/s");
    let (_, r, out) = run(&[&url, "--hold", "-c", "2", "-d", "1500ms"]);
    let s = &r["summary"];
    let events = s["stream"]["events"].as_u64().unwrap();
    let bytes = s["bytes_in"].as_u64().unwrap();
    assert!(
        bytes >= events * 14 && bytes <= (events + 2) * 16,
        "{bytes} bytes for {events} events: {out}"
    );
}
