//! WebSocket against servers nobody here wrote: Python's `websockets` echo server and
//! Debian's `websocketd` running `cat`. Counts, bytes and round trips are held to what the
//! servers must have done, and the close handshake to what the server logged.

use crate::support::{brink_json, Killed};
use std::io::BufRead;
use std::process::{Command, Stdio};

/// Python's `websockets` echo server on a free port, its stderr kept in `log`.
fn python_echo(log: &std::path::Path) -> Option<(Killed, u16)> {
    python_echo_with(log, &[])
}

/// [`python_echo`], over TLS with `tls` = [certificate, key] when given.
fn python_echo_with(log: &std::path::Path, tls: &[&std::path::Path]) -> Option<(Killed, u16)> {
    let echo = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
"#;
    python_server(echo, log, tls)
}

/// A Python `websockets` server whose handler is `echo(ws)` as `handler` defines it.
pub(crate) fn python_server(
    handler: &str,
    log: &std::path::Path,
    tls: &[&std::path::Path],
) -> Option<(Killed, u16)> {
    python_command(handler, log, tls).map(started)
}

/// The command that runs [`python_server`]; `None` (or a failed test where the server is
/// required) without Python's websockets.
fn python_command(
    handler: &str,
    log: &std::path::Path,
    tls: &[&std::path::Path],
) -> Option<Command> {
    let script = format!(
        "{}{handler}{}",
        r#"
import asyncio, json, os, ssl, sys, time
from websockets.asyncio.server import serve
"#,
        r#"
async def main():
    tls = None
    if len(sys.argv) > 2:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[1], sys.argv[2])
    ping = float(os.environ.get("PING_EVERY", "0")) or None
    async with serve(echo, "127.0.0.1", 0, ssl=tls, ping_interval=ping, ping_timeout=0.2) as s:
        print(s.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().create_future()
asyncio.run(main())
"#
    );
    let have = Command::new("python3")
        .args(["-c", "import websockets"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var_os("BRINK_REQUIRE_WS_SERVERS").is_none(),
            "Python's websockets is required here but not installed"
        );
        eprintln!("python3 websockets not installed: skipping");
        return None;
    }
    let mut cmd = Command::new("python3");
    cmd.args(["-c", &script])
        .args(tls)
        .stderr(std::fs::File::create(log).expect("log"));
    Some(cmd)
}

/// [`python_server`] pinging each client every 300 ms (closing it, 1011, when no pong comes
/// within 200 ms).
fn python_server_pinging(handler: &str, log: &std::path::Path) -> Option<(Killed, u16)> {
    let mut cmd = python_command(handler, log, &[])?;
    cmd.env("PING_EVERY", "0.3");
    Some(started(cmd))
}

/// Starts a server that prints its port on its first line; it is killed when dropped.
fn started(mut cmd: Command) -> (Killed, u16) {
    let mut child = Killed(cmd.stdout(Stdio::piped()).spawn().expect("the server runs"));
    let stdout = child.0.stdout.take().expect("stdout");
    let mut port = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut port)
        .expect("the server prints its port");
    (child, port.trim().parse().expect("a port"))
}

/// Every message is answered once, the counts are exact, the bytes are the frames plus the
/// upgrades, and every connection ends with a close handshake the server saw (it logs a
/// connection closed without one).
#[test]
fn python_websockets_echo_answers_every_message() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let Some((_server, port)) = python_echo(&log) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/echo");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hello {{seq}}",
        "-c",
        "4",
        "-n",
        "2000",
        "-q",
    ]);
    let r = &ran.result;
    let s = &r["summary"];
    assert_eq!(s["requests"], 2000, "{}", ran.stderr);
    assert_eq!(s["ok"], 2000, "{}", ran.stderr);
    assert_eq!(s["errors"], 0, "{}", s["errors_by_kind"]);
    assert_eq!(r["target"]["protocol"], "websocket");
    let problems = crate::support::schema_problems(crate::support::RESULT_SCHEMA, r);
    assert!(problems.is_empty(), "{problems:?}");
    let ws = &s["websocket"];
    assert_eq!(ws["upgrades"], 4, "{ws}");
    assert_eq!(ws["messages_sent"], 2000, "{ws}");
    assert_eq!(ws["messages_received"], 2000, "{ws}");
    // Each connection ended with the close handshake: the server's 1000 echoed back.
    assert_eq!(ws["close_codes"], serde_json::json!({"1000": 4}), "{ws}");
    assert!(
        ws["upgrade_ms"]["p50"].as_f64().is_some_and(|p| p > 0.0),
        "{ws}"
    );
    // Each message goes out in one masked frame (6 header bytes) and comes back unchanged in
    // one unmasked frame (2 header bytes): 4 bytes more out than in, per message. The
    // connections' upgrades and closes count too: four requests and answers of a few hundred
    // bytes each (which is the longer depends on the server's headers), and four close
    // frames each way (8 bytes out, 4 in).
    let (bytes_in, bytes_out) = (s["bytes_in"].as_u64(), s["bytes_out"].as_u64());
    let (bytes_in, bytes_out) = (bytes_in.expect("in"), bytes_out.expect("out"));
    let messages = (bytes_out as i64 - bytes_in as i64) - 4 * (8 - 4);
    assert!(
        (messages - 4 * 2000).abs() <= 4 * 200,
        "in {bytes_in}, out {bytes_out}"
    );
    let request = format!("GET /echo HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n\r\n", "k".repeat(24));
    assert!(
        bytes_out >= 4 * (request.len() as u64 + 8) + 2000 * (6 + "hello 0".len() as u64),
        "out {bytes_out}"
    );
    assert!(
        bytes_in >= 2000 * (2 + "hello 0".len() as u64),
        "in {bytes_in}"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !logged.contains("no close frame"),
        "the server saw connections end without a close handshake:\n{logged}"
    );
}

/// wss:// over TLS (a certificate from a test CA): upgraded and answered as over TCP, the TLS
/// handshake timed apart; a CA that did not issue the server's certificate is a `tls` error.
#[test]
fn wss_over_tls_answers_and_checks_the_certificate() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let files = testkit::tls::files(dir.path()).expect("certificates");
    let tls = [files.server_cert.as_path(), files.server_key.as_path()];
    let Some((_server, port)) = python_echo_with(&dir.path().join("server.log"), &tls) else {
        return;
    };
    let url = format!("wss://127.0.0.1:{port}/");
    let ca = files.ca.to_str().expect("utf-8");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hi",
        "-c",
        "2",
        "-n",
        "200",
        "--cacert",
        ca,
        "-q",
    ]);
    let s = &ran.result["summary"];
    assert_eq!(s["ok"], 200, "{}\n{}", s["errors_by_kind"], ran.stderr);
    assert!(
        s["tls_ms"]["p50"].as_f64().is_some_and(|t| t > 0.0),
        "{}",
        s["tls_ms"]
    );
    assert_eq!(s["websocket"]["upgrades"], 2);
    let other = files.other_ca.to_str().expect("utf-8");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hi",
        "-c",
        "1",
        "-n",
        "3",
        "--cacert",
        other,
        "-q",
    ]);
    let s = &ran.result["summary"];
    // Each of the three attempts fails its handshake, and nothing else happens.
    assert_eq!((&s["requests"], &s["ok"]), (&3.into(), &0.into()), "{s}");
    assert_eq!(s["errors_by_kind"]["tls"], 3, "{}", s["errors_by_kind"]);
}

/// A subscription: each connection sends its subscribe message once, then takes what the
/// server pushes (a message every 10 ms carrying its send time): the messages are the
/// requests, their latency the wait for each, and the delivery delay is read from `$.ts`.
#[test]
fn a_subscription_counts_pushed_messages_and_their_delay() {
    let _cpu = crate::support::cpu_shared();
    let feed = r#"
async def echo(ws):
    sub = await ws.recv()
    i = 0
    while True:
        await ws.send(json.dumps({"ts": time.time() * 1000, "n": i, "sub": sub}))
        i += 1
        await asyncio.sleep(0.01)
"#;
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_server(feed, &dir.path().join("server.log"), &[]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/prices");
    let ran = brink_json(&[
        "run",
        &url,
        "--subscribe",
        "--message",
        "{\"sub\": \"prices\"}",
        "--sent-at",
        "$.ts",
        "-c",
        "4",
        "-d",
        "2s",
        "-q",
    ]);
    let s = &ran.result["summary"];
    let got = s["ok"].as_u64().unwrap_or(0);
    // Four connections, a message every 10 ms (a little more with Python's scheduling).
    assert!((400..=850).contains(&got), "{got} messages\n{}", ran.stderr);
    let gap = s["latency_ms"]["p50"].as_f64().expect("p50");
    assert!(
        (8.0..=20.0).contains(&gap),
        "the wait for each message, p50 {gap} ms"
    );
    let ws = &s["websocket"];
    assert_eq!(
        ws["messages_sent"], 4,
        "one subscribe message per connection: {ws}"
    );
    assert_eq!(ws["undated"], 0, "{ws}");
    let delay = ws["delay_ms"]["p50"].as_f64().expect("delay");
    assert!(
        (0.0..=5.0).contains(&delay),
        "delivery delay p50 {delay} ms"
    );
    // A path that finds nothing: every message undated, none dated.
    let ran = brink_json(&[
        "run",
        &url,
        "--subscribe",
        "--message",
        "x",
        "--sent-at",
        "$.nope",
        "-c",
        "1",
        "-d",
        "1s",
        "-q",
    ]);
    let ws = &ran.result["summary"]["websocket"];
    assert!(ws["undated"].as_u64().unwrap_or(0) > 20, "{ws}");
    assert!(ws["delay_ms"].is_null(), "{ws}");
}

/// A subscription without a message sends nothing: the server pushes on its own.
#[test]
fn a_subscription_without_a_message_sends_none() {
    let _cpu = crate::support::cpu_shared();
    let feed = r#"
async def echo(ws):
    async def told():
        async for m in ws:
            print("GOT-MESSAGE", repr(m), file=sys.stderr, flush=True)
    asyncio.ensure_future(told())
    while True:
        await ws.send("tick")
        await asyncio.sleep(0.01)
"#;
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let Some((_server, port)) = python_server(feed, &log, &[]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&["run", &url, "--subscribe", "-c", "2", "-d", "1s", "-q"]);
    let ws = &ran.result["summary"]["websocket"];
    assert_eq!(ws["messages_sent"], 0, "{ws}");
    assert!(ws["messages_received"].as_u64().unwrap_or(0) > 20, "{ws}");
    let told = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!told.contains("GOT-MESSAGE"), "{told}");
}

/// `--message` is a template: each message is rendered afresh ({{seq}}), as the server saw.
#[test]
fn messages_are_rendered_from_their_template() {
    let _cpu = crate::support::cpu_shared();
    let record = r#"
async def echo(ws):
    async for m in ws:
        print(m, file=sys.stderr, flush=True)
        await ws.send(m)
"#;
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("server.log");
    let Some((server, port)) = python_server(record, &log, &[]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hello {{seq}}",
        "-c",
        "1",
        "-n",
        "5",
        "-q",
    ]);
    assert_eq!(ran.result["summary"]["ok"], 5, "{}", ran.stderr);
    drop(server);
    let got = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<&str> = got.lines().filter(|l| l.starts_with("hello")).collect();
    assert_eq!(lines.len(), 5, "{got}");
    assert!(
        lines.iter().all(|l| !l.contains("{{") && l.len() > 6),
        "{got}"
    );
    let distinct: std::collections::BTreeSet<_> = lines.iter().collect();
    assert_eq!(distinct.len(), 5, "each message rendered afresh: {got}");
    let bad = Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args(["run", &url, "--message", "{{nosuch}}", "-n", "1"])
        .output()
        .expect("brink runs");
    assert_eq!(
        bad.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// A server that pings every 300 ms and drops a client that does not answer within 200 ms:
/// held connections resting for 5 s between their own pings answer every ping and stay up.
#[test]
fn resting_connections_answer_the_servers_pings() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let keepalive = r#"
async def echo(ws):
    async for m in ws:
        await ws.send(m)
"#;
    let Some((_server, port)) = python_server_pinging(keepalive, &dir.path().join("s.log")) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&[
        "run", &url, "--hold", "-c", "2", "--every", "5s", "-d", "2s", "-q",
    ]);
    let ws = &ran.result["summary"]["websocket"];
    assert!(
        ws["pings"].as_u64().unwrap_or(0) >= 6,
        "{ws}\n{}",
        ran.stderr
    );
    assert_eq!(ws["unexpected_closes"], 0, "{ws}");
    assert_eq!(ws["close_codes"], serde_json::json!({"1000": 2}), "{ws}");
}

/// Little's law holds on a closed-model run: connections / throughput = mean latency.
#[test]
fn python_websockets_round_trips_hold_littles_law() {
    let _cpu = crate::support::cpu_exclusive();
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_echo(&dir.path().join("server.log")) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "ping",
        "-c",
        "8",
        "-d",
        "2s",
        "--threads",
        "1",
        "-q",
    ]);
    let s = &ran.result["summary"];
    let rps = s["rps"].as_f64().expect("rps");
    let mean = s["latency_ms"]["mean"].as_f64().expect("mean");
    let predicted = 8.0 / rps * 1000.0;
    assert!(
        crate::support::rel(mean, predicted) < 0.15,
        "mean {mean:.3} ms against 8 / {rps:.0}/s = {predicted:.3} ms"
    );
}

/// Held connections ping every interval: each ping's pong is a request, every connection
/// stays up the whole run and ends with brink's close.
#[test]
fn held_connections_ping_and_stay_up() {
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().expect("tmp");
    let Some((_server, port)) = python_echo(&dir.path().join("server.log")) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&[
        "run", &url, "--hold", "-c", "20", "--every", "200ms", "-d", "2s", "-q",
    ]);
    let s = &ran.result["summary"];
    let requests = s["requests"].as_u64().expect("requests");
    // 20 connections x one ping per 200 ms x 2 s.
    assert!(
        (160..=220).contains(&requests),
        "{requests} pings\n{}",
        ran.stderr
    );
    assert_eq!(s["ok"], requests);
    // The pace was kept: 200 pings asked for, none short, no shortfall.
    let sc = &s["schedule"];
    assert_eq!(sc["intended"], 200, "{sc}");
    assert_eq!(sc["not_sent"], 0, "{sc}");
    assert!(sc["shortfall"].is_null(), "{sc}");
    let ws = &s["websocket"];
    assert_eq!(ws["upgrades"], 20, "{ws}");
    assert_eq!(ws["unexpected_closes"], 0, "{ws}");
    assert_eq!(ws["close_codes"], serde_json::json!({"1000": 20}), "{ws}");
    let up = ws["connected_ms"]["p50"].as_f64().expect("up");
    assert!(
        (1700.0..=2500.0).contains(&up),
        "connections stayed up {up} ms"
    );
}

/// websocketd runs `cat` per connection: each message comes back as a line.
#[test]
fn websocketd_running_cat_echoes_each_message() {
    let _cpu = crate::support::cpu_shared();
    let Ok(bin) = which("websocketd") else {
        assert!(
            std::env::var_os("BRINK_REQUIRE_WS_SERVERS").is_none(),
            "websocketd is required here but not installed"
        );
        eprintln!("websocketd not installed: skipping");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(bin)
        .args([
            &format!("--port={port}"),
            "--address=127.0.0.1",
            "--loglevel=error",
            "cat",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("websocketd runs");
    let _server = Killed(child);
    wait_for_port(port);
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "line",
        "-c",
        "2",
        "-n",
        "300",
        "-q",
    ]);
    let s = &ran.result["summary"];
    assert_eq!(s["requests"], 300, "{}", ran.stderr);
    assert_eq!(s["ok"], 300, "{}", s["errors_by_kind"]);
}

/// The gorilla/websocket echo server (Go), built from the Go module proxy by
/// tests/ws/goecho.sh, started with `args`; its port.
fn go_echo(args: &[&str]) -> Option<(Killed, u16)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/ws/goecho.sh");
    let built = Command::new("bash").arg(script).output();
    let path = match built {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            assert!(
                std::env::var_os("BRINK_REQUIRE_WS_SERVERS").is_none(),
                "the Go echo server is required here but could not be built"
            );
            eprintln!("Go echo server not built: skipping");
            return None;
        }
    };
    let mut cmd = Command::new(path);
    cmd.args(args).stderr(Stdio::null());
    Some(started(cmd))
}

/// Against gorilla/websocket: every message answered, in binary too (a message that is not
/// UTF-8 goes as a binary frame and comes back as one), each connection closed cleanly.
#[test]
fn go_gorilla_echo_answers_text_and_binary() {
    let _cpu = crate::support::cpu_shared();
    let Some((_server, port)) = go_echo(&[]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let dir = tempfile::tempdir().expect("tmp");
    let bin = dir.path().join("msg.bin");
    std::fs::write(&bin, [0xFFu8, 0xFE, 0x00, 0x01]).expect("write");
    for args in [
        vec!["--message", "{\"id\": {{seq}}}"],
        vec!["--message-file", bin.to_str().expect("utf-8 path")],
    ] {
        let mut all = vec!["run", url.as_str(), "-c", "8", "-n", "4000", "-q"];
        all.extend(args.iter().copied());
        let ran = brink_json(&all);
        let s = &ran.result["summary"];
        assert_eq!(
            s["ok"], 4000,
            "{args:?}: {}\n{}",
            s["errors_by_kind"], ran.stderr
        );
        let ws = &s["websocket"];
        assert_eq!(ws["messages_received"], 4000, "{ws}");
        assert_eq!(ws["close_codes"], serde_json::json!({"1000": 8}), "{ws}");
    }
}

/// A server that closes each connection (1001, going away) after one message: the next
/// message on it ends as `closed`, the close code is counted, and the slot reconnects.
#[test]
fn go_server_going_away_is_counted_by_its_code() {
    let _cpu = crate::support::cpu_shared();
    let Some((_server, port)) = go_echo(&["-close", "1001"]) else {
        return;
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let ran = brink_json(&["run", &url, "--message", "x", "-c", "2", "-n", "200", "-q"]);
    let s = &ran.result["summary"];
    let (ok, closed) = (
        s["ok"].as_u64().unwrap_or(0),
        s["errors_by_kind"]["closed"].as_u64().unwrap_or(0),
    );
    assert_eq!(ok + closed, 200, "{}", ran.stderr);
    assert!(
        (80..=120).contains(&ok),
        "one answer per connection: {ok} ok, {closed} closed"
    );
    let ws = &s["websocket"];
    let going_away = ws["close_codes"]["1001"].as_u64().unwrap_or(0);
    assert!(going_away >= 80, "{ws}");
    assert!(ws["unexpected_closes"].as_u64().unwrap_or(0) >= 80, "{ws}");
    assert!(
        ws["upgrades"].as_u64().unwrap_or(0) >= 80,
        "the slots reconnect: {ws}"
    );
}

/// Flags that would go unused are refused in one line, before any load.
#[test]
fn flags_that_do_not_apply_are_refused() {
    for (args, want) in [
        (
            vec!["run", "ws://127.0.0.1:9/"],
            "needs the message it sends",
        ),
        (
            vec!["run", "ws://127.0.0.1:9/", "--message", "x", "-b", "y"],
            "-b/--body applies to http://",
        ),
        (
            vec!["run", "ws://127.0.0.1:9/", "--message", "x", "--http2"],
            "--http2 applies to http://",
        ),
        (
            vec!["run", "ws://127.0.0.1:9/", "--hold", "--rate", "10"],
            "--hold and --every pace each connection of the closed model",
        ),
        (
            vec!["run", "http://127.0.0.1:9/", "--message", "x"],
            "--message, --message-file, --every, --subscribe and --match-id apply to ws://",
        ),
        (
            vec!["run", "http://127.0.0.1:9/", "--match-id", "$.id"],
            "apply to ws:// and wss:// URLs",
        ),
        (
            vec!["run", "ws://127.0.0.1:9/", "--subscribe", "--every", "1s"],
            "a --subscribe connection sends once",
        ),
        (
            vec![
                "find",
                "ws://127.0.0.1:9/",
                "--hold",
                "--by",
                "rate",
                "--from",
                "10",
                "--to",
                "20",
            ],
            "search them with --by connections",
        ),
        (
            vec![
                "find",
                "ws://127.0.0.1:9/",
                "--message",
                "x",
                "--every",
                "1s",
                "--by",
                "rate",
                "--from",
                "10",
                "--to",
                "20",
            ],
            "search them with --by connections",
        ),
    ] {
        let out = Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
            .args(&args)
            .output()
            .expect("brink runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        })
        .ok_or(())
}

fn wait_for_port(port: u16) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "nothing listens on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
