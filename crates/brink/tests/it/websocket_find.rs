//! `brink find` over WebSocket, against Python's `websockets` server: by connections held
//! (paced, each pinging on its own phase) it finds how many the server keeps, in connections,
//! not req/s; by message rate it finds the rate a slow echo keeps within its objective. And
//! paced messages are measured from when they were due.

use crate::support::{brink_json, Killed};
use crate::websocket::python_server;

/// A Python `websockets` server running `handler`, and its URL; stopped when dropped.
struct Serving {
    url: String,
    _server: Killed,
    _log: tempfile::TempDir,
}

/// Starts `handler` ([`python_server`]); `None` where the server may be skipped.
fn serving(handler: &str) -> Option<Serving> {
    let log = tempfile::tempdir().expect("tmp");
    let (server, port) = python_server(handler, &log.path().join("log"), &[])?;
    Some(Serving {
        url: format!("ws://127.0.0.1:{port}/"),
        _server: server,
        _log: log,
    })
}

/// Keeps at most six connections; a seventh is closed at once with 1013 (try again later).
const SIX_AT_MOST: &str = r#"
live = 0
async def echo(ws):
    global live
    if live >= 6:
        await ws.close(1013, "full")
        return
    live += 1
    try:
        async for m in ws:
            await ws.send(m)
    finally:
        live -= 1
"#;

/// Answers pings, and ends every connection 1.2 s after it opened (1001, going away).
const ENDS_EVERY_CONNECTION: &str = r#"
async def echo(ws):
    await asyncio.sleep(1.2)
    await ws.close(1001, "bye")
"#;

#[test]
fn held_connections_the_server_ends_fail_the_dropped_objective() {
    let _cpu = crate::support::cpu_shared();
    let Some(server) = serving(ENDS_EVERY_CONNECTION) else {
        return;
    };
    let url = server.url.as_str();
    // Every ping is answered, so no attempt fails: only `dropped` sees the connections go.
    let ran = brink_json(&[
        "find",
        url,
        "--hold",
        "--every",
        "300ms",
        "--from",
        "2",
        "--to",
        "4",
        "--slo",
        "closed<1%",
        "--slo",
        "dropped<1%",
        "--step",
        "3s",
        "--warmup",
        "1s",
        "--cooldown",
        "0s",
    ]);
    let f = &ran.result["find"];
    assert!(f["max_sustainable"].is_null(), "{f}\n{}", ran.stdout);
    let first = &f["steps"][0];
    assert_eq!(first["pass"], false, "{first}");
    assert!(ran.stdout.contains("FAIL dropped < 1%"), "{}", ran.stdout);
}

/// Answers one message at a time, each after 4 ms of blocking work: at most 250 a second.
const SLOW_ECHO: &str = r#"
async def echo(ws):
    async for m in ws:
        time.sleep(0.004)
        await ws.send(m)
"#;

#[test]
fn a_search_by_connections_held_finds_how_many_the_server_keeps() {
    let _cpu = crate::support::cpu_light();
    let Some(server) = serving(SIX_AT_MOST) else {
        return;
    };
    let url = server.url.as_str();
    let ran = brink_json(&[
        "find",
        url,
        "--hold",
        "--every",
        "200ms",
        "--from",
        "2",
        "--to",
        "16",
        "--slo",
        "closed<1%",
        "--step",
        "2s",
        "--warmup",
        "1s",
        "--cooldown",
        "0s",
    ]);
    let f = &ran.result["find"];
    assert_eq!(f["max_sustainable"]["level"], 6.0, "{f}\n{}", ran.stdout);
    assert_eq!(f["every_ms"], 200.0, "{f}");
    // Throughput is the pace times the connections, by design: no scalability fit, no knee
    // and no Little's law check is read off it.
    assert!(f["usl"].is_null() && f["knee"].is_null(), "{f}");
    for s in f["steps"].as_array().expect("steps") {
        assert!(s.get("little").is_none_or(|l| l.is_null()), "{s}");
    }
    for sc in ran.result["scenarios"].as_array().expect("scenarios") {
        assert_eq!(sc["load"]["every_ms"], 200.0, "{}", sc["load"]);
    }
    assert!(
        ran.stdout
            .contains("Capacity: 6 connections held, each sending every 200ms"),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("queue"), "{}", ran.stdout);
}

#[test]
fn a_search_by_message_rate_finds_the_rate_a_slow_echo_keeps() {
    let _cpu = crate::support::cpu_light();
    let Some(server) = serving(SLOW_ECHO) else {
        return;
    };
    let url = server.url.as_str();
    let ran = brink_json(&[
        "find",
        url,
        "--message",
        "m{{seq}}",
        "--by",
        "rate",
        "--from",
        "50",
        "--to",
        "400",
        "--slo",
        "msg.p90<100ms",
        "--step",
        "2s",
        "--warmup",
        "1s",
        "--cooldown",
        "0s",
    ]);
    let f = &ran.result["find"];
    let rps = f["max_sustainable"]["rps"].as_f64().unwrap_or(0.0);
    // 4 ms a message is 250/s at most; Python's own work per message takes some of it.
    // Past it the open model's queue grows every second, and p90 with it: a p90 objective
    // finds the limit without failing a level on one slow message among a hundred.
    assert!((80.0..=250.0).contains(&rps), "{rps}\n{}", ran.stdout);
    assert!(f["every_ms"].is_null(), "{f}");
    // The rate the search asked is messages: every step sent what it answered.
    for s in f["steps"].as_array().expect("steps") {
        assert_eq!(s["errors"], 0, "{s}");
    }
}

/// Answers each message of a connection 300 ms after it came.
const SLOWER_THAN_THE_PACE: &str = r#"
async def echo(ws):
    async for m in ws:
        await asyncio.sleep(0.3)
        await ws.send(m)
"#;

#[test]
fn paced_messages_held_up_by_slow_answers_wait_in_their_latency() {
    let _cpu = crate::support::cpu_shared();
    let Some(server) = serving(SLOWER_THAN_THE_PACE) else {
        return;
    };
    let url = server.url.as_str();
    // One message due every 100 ms; each answer takes 300 ms, so each message goes out later
    // than it was due, and later each time: 0.3 s, 0.5 s, 0.7 s, ... from when it was due.
    let ran = brink_json(&[
        "run",
        url,
        "--message",
        "m",
        "--every",
        "100ms",
        "-c",
        "1",
        "-d",
        "2s",
    ]);
    let s = &ran.result["summary"];
    let ms = |h: &str, p: &str| s[h][p].as_f64().unwrap_or(0.0);
    assert!(
        (290.0..450.0).contains(&ms("service_time_ms", "p50")),
        "{s}\n{}",
        ran.stderr
    );
    assert!(ms("latency_ms", "max") >= 1000.0, "{s}");
    assert!(
        ms("latency_ms", "mean") >= 1.8 * ms("service_time_ms", "mean"),
        "{s}"
    );
    assert_eq!(ran.result["scenarios"][0]["load"]["every_ms"], 100.0);
    // The pace asked for 20 messages and the connection could send about 7: said, not a
    // quietly lower rate.
    let sc = &s["schedule"];
    assert_eq!(sc["intended"], 20, "{sc}");
    assert!(sc["not_sent"].as_u64().unwrap_or(0) >= 10, "{sc}");
    assert_eq!(sc["shortfall"]["limit"], "pace", "{sc}");
    assert!(ran.stdout.contains("SHORTFALL"), "{}", ran.stdout);
}

/// A held search's dry run says the pace each connection keeps and what a step must meet.
#[test]
fn a_held_search_dry_run_names_its_pace_and_objectives() {
    let out = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args([
            "find",
            "ws://127.0.0.1:9/",
            "--hold",
            "--every",
            "500ms",
            "--slo",
            "dropped < 0.1%",
            "--dry-run",
        ])
        .output()
        .expect("brink runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("each connection sends every 500ms"), "{text}");
    assert!(
        text.contains("a step passes while: dropped < 0.1%"),
        "{text}"
    );
}
