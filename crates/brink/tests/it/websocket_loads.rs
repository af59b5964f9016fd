//! WebSocket messages under the load shapes brink drives on its epoll loop for plain
//! `ws://`: a ramp that retires connections, an open-model rate, and a server that ends
//! idle connections between arrivals. Against Python's `websockets` server, every
//! connection opened is accounted once, and closed the way the protocol says.

use crate::support::{brink_json, Killed};
use crate::websocket::python_server;
use serde_json::Value;

/// A Python `websockets` server running `handler`, and its URL; stopped when dropped.
fn serving(handler: &str) -> Option<(Killed, String, tempfile::TempDir)> {
    let log = tempfile::tempdir().expect("tmp");
    let (server, port) = python_server(handler, &log.path().join("log"), &[])?;
    Some((server, format!("ws://127.0.0.1:{port}/"), log))
}

const ECHO: &str = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
"#;

/// The close codes of a run's connections, summed.
fn closes(ws: &Value) -> u64 {
    ws["close_codes"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
}

/// Connections retired by a ramp down close with the close handshake, as those open at the
/// end do: every upgrade ends in a 1000 the server echoed, none ended by the server.
#[test]
fn a_ramp_down_closes_the_connections_it_retires_with_the_handshake() {
    let _cpu = crate::support::cpu_shared();
    let Some((_server, url, _log)) = serving(ECHO) else {
        return;
    };
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "m {{seq}}",
        "--stages",
        "0.5s:6,1s:6,0.5s:2,1s:2",
        "-q",
    ]);
    let s = &ran.result["summary"];
    let ws = &s["websocket"];
    assert_eq!(s["errors"], 0, "{}\n{}", s["errors_by_kind"], ran.stderr);
    assert!(s["ok"].as_u64().unwrap_or(0) > 100, "{s}");
    assert_eq!(ws["messages_sent"], s["requests"], "{ws}");
    let upgrades = ws["upgrades"].as_u64().unwrap_or(0);
    assert!(upgrades >= 6, "{ws}");
    assert_eq!(ws["close_codes"]["1000"].as_u64(), Some(upgrades), "{ws}");
    assert_eq!(closes(ws), upgrades, "{ws}");
    assert_eq!(ws["unexpected_closes"], 0, "{ws}");
}

/// An open-model rate of messages: every arrival is sent and answered, and the pool's
/// connections close cleanly at the end.
#[test]
fn an_open_model_rate_sends_every_arrival_and_closes_cleanly() {
    let _cpu = crate::support::cpu_shared();
    let Some((_server, url, _log)) = serving(ECHO) else {
        return;
    };
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hi",
        "--rate",
        "200",
        "-d",
        "2s",
        "-q",
    ]);
    let s = &ran.result["summary"];
    let ws = &s["websocket"];
    assert_eq!(s["requests"], 400, "{s}\n{}", ran.stderr);
    assert_eq!(s["ok"], 400, "{}", s["errors_by_kind"]);
    assert_eq!(ws["messages_received"], 400, "{ws}");
    let upgrades = ws["upgrades"].as_u64().unwrap_or(0);
    assert!(upgrades >= 1, "{ws}");
    assert_eq!(ws["close_codes"]["1000"].as_u64(), Some(upgrades), "{ws}");
    assert_eq!(ws["unexpected_closes"], 0, "{ws}");
}

/// Answers each message, then ends the connection 20 ms later with 1001 (going away).
const ONE_AND_GONE: &str = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
        await asyncio.sleep(0.02)
        await ws.close(1001, "bye")
        return
"#;

/// A server that ends idle connections between arrivals (10 a second, 100 ms apart): each
/// end is counted by its code and as the server's, no message fails for it, and the next
/// arrival opens a fresh connection. Over `ws://` (the epoll loop) and `wss://` (tokio) alike.
#[test]
fn connections_the_server_ends_while_idle_are_counted_and_reopened() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let files = testkit::tls::files(dir.path()).expect("certificates");
    let tls = [files.server_cert.as_path(), files.server_key.as_path()];
    let ca = files.ca.to_str().expect("utf-8");
    for (scheme, tls) in [("ws", &[][..]), ("wss", &tls[..])] {
        let log = dir.path().join(format!("{scheme}.log"));
        let Some((_server, port)) = python_server(ONE_AND_GONE, &log, tls) else {
            return;
        };
        let url = format!("{scheme}://127.0.0.1:{port}/");
        let ran = brink_json(&[
            "run",
            &url,
            "--message",
            "hi",
            "--rate",
            "10",
            "-d",
            "2s",
            "-c",
            "1",
            "--cacert",
            ca,
            "-q",
        ]);
        let s = &ran.result["summary"];
        let ws = &s["websocket"];
        assert_eq!(s["requests"], 20, "{scheme}: {s}\n{}", ran.stderr);
        assert_eq!(s["ok"], 20, "{scheme}: {}", s["errors_by_kind"]);
        let gone = ws["close_codes"]["1001"].as_u64().unwrap_or(0);
        assert!(gone >= 15, "{scheme}: most ended by the server: {ws}");
        assert_eq!(
            ws["unexpected_closes"].as_u64(),
            Some(gone),
            "{scheme}: {ws}"
        );
        assert_eq!(ws["upgrades"].as_u64(), Some(20), "{scheme}: {ws}");
    }
}

/// Each answer followed by 200 more messages of 1 KiB: 200 KiB the socket's window cannot
/// hold for long.
const ANSWER_AND_MORE: &str = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
        for _ in range(200):
            await ws.send("z" * 1024)
"#;

/// A server that sends more than the answer: what waits in the socket after an answer is
/// read on, never left there (with the window full, the server could send nothing more, and
/// the connection would stall until a timeout, its close handshake unanswered).
#[test]
fn what_follows_an_answer_is_read_not_left_in_the_socket() {
    let _cpu = crate::support::cpu_shared();
    let Some((_server, url, _log)) = serving(ANSWER_AND_MORE) else {
        return;
    };
    for load in [
        &["-c", "1", "-n", "100"][..],
        &["--rate", "50", "-n", "40"][..],
    ] {
        let mut args = vec![
            "run",
            url.as_str(),
            "--message",
            "hi",
            "--timeout",
            "1s",
            "-q",
        ];
        args.extend_from_slice(load);
        let ran = brink_json(&args);
        let s = &ran.result["summary"];
        let ws = &s["websocket"];
        let n = s["requests"].as_u64().unwrap_or(0);
        assert_eq!(
            s["ok"].as_u64(),
            Some(n),
            "{load:?}: {}\n{}",
            s["errors_by_kind"],
            ran.stderr
        );
        // -n 100 and -n 40: each scheduled message is sent once.
        let want = if load[0] == "-c" { 100 } else { 40 };
        assert_eq!(n, want, "{load:?}: {s}");
        // The close handshake read past everything the server pushed, to its close.
        let upgrades = ws["upgrades"].as_u64().unwrap_or(0);
        assert_eq!(
            ws["close_codes"]["1000"].as_u64(),
            Some(upgrades),
            "{load:?}: {ws}"
        );
        // More than the answers were read. How much more depends on when the server reads
        // the close: websockets stops pushing then, so a fast closed loop may see only part
        // of the 200 extra messages per answer (the stall this test guards against shows as
        // timeouts and a missing close code above, not here).
        assert!(
            ws["messages_received"].as_u64().unwrap_or(0) > n,
            "{load:?}: {ws}"
        );
    }
}

/// After its first answer, pushes 1 KiB messages without end.
const FIREHOSE: &str = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
        while True:
            await ws.send("z" * 1024)
"#;

/// A connection flooded while brink has nothing to ask still gets its reads in turns: the
/// run ends within its duration, grace and close deadline.
#[test]
fn a_flooded_idle_connection_does_not_hold_the_run_past_its_end() {
    // A bound on the run's length: alone.
    let _cpu = crate::support::cpu_exclusive();
    let Some((_server, url, _log)) = serving(FIREHOSE) else {
        return;
    };
    let t = std::time::Instant::now();
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hi",
        "--rate",
        "10",
        "-d",
        "1s",
        "-c",
        "1",
        "--timeout",
        "1s",
        "--grace",
        "1s",
        "-q",
    ]);
    let took = t.elapsed();
    // 1 s of schedule, 1 s of grace, 1 s for the close handshake, and start-up.
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    let s = &ran.result["summary"];
    // Ten messages at 10/s, each answered by the next message the server pushed.
    assert_eq!(
        (&s["requests"], &s["ok"]),
        (&10.into(), &10.into()),
        "{s}\n{}",
        ran.stderr
    );
    assert!(
        s["websocket"]["messages_received"].as_u64().unwrap_or(0) > 100,
        "{s}"
    );
}
