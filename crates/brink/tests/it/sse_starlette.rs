//! Held event streams against a server nobody here wrote: `sse-starlette` (PyPI) under
//! uvicorn, a notification feed that resumes after the `Last-Event-ID` it is sent and pings
//! its streams with comments. brink's reconnects, resumes, events and delivery delays are held
//! to what the server counted.

use crate::support::{brink_json, Killed};
use serde_json::Value;
use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};

/// The feed: each stream resumes after its `Last-Event-ID`, sends `PER` events `EVERY` s
/// apart (each with its ID, `retry: 100` and its send time), pinging every `PING` s, then
/// ends (`PER` 0: never). `/stats` says what it saw.
const FEED: &str = r#"
import asyncio, json, socket, sys, time
import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

PER, EVERY, PING = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
seen = {"opened": 0, "resumed": 0, "bad_ids": 0}

async def feed(request):
    last = request.headers.get("last-event-id")
    seen["opened"] += 1
    if last:
        seen["resumed"] += 1
        if not last.isdigit() or int(last) % max(PER, 1):
            seen["bad_ids"] += 1
    start = int(last) if last and last.isdigit() else 0
    async def events():
        n = start
        while PER == 0 or n < start + PER:
            n += 1
            await asyncio.sleep(EVERY)
            yield ServerSentEvent(data=json.dumps({"n": n, "ts": time.time()}), id=str(n), retry=100)
    return EventSourceResponse(events(), ping=PING)

async def stats(request):
    return JSONResponse(seen)

app = Starlette(routes=[Route("/feed", feed), Route("/stats", stats)])
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(1024)
print(sock.getsockname()[1], flush=True)
asyncio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve(sockets=[sock]))
"#;

/// The feed on a free port; `None` (or a failed test where it is required) without
/// sse-starlette.
fn feed(per: u32, every: f64, ping: u32) -> Option<(Killed, u16)> {
    let have = Command::new("python3")
        .args(["-c", "import sse_starlette, uvicorn"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var_os("BRINK_REQUIRE_SSE_SERVERS").is_none(),
            "sse-starlette and uvicorn are required here but not installed"
        );
        eprintln!("sse-starlette not installed: skipping");
        return None;
    }
    let mut child = Killed(
        Command::new("python3")
            .args(["-c", FEED])
            .args([per.to_string(), every.to_string(), ping.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let mut port = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut port)
        .expect("the feed prints its port");
    Some((child, port.trim().parse().expect("a port")))
}

/// What the feed counted (`/stats`).
fn stats(port: u16) -> Value {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connects");
    let req = format!("GET /stats HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("sends");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("reads");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).expect("JSON stats")
}

#[test]
fn held_streams_on_sse_starlette_reconnect_and_resume_as_the_server_counts() {
    let _cpu = crate::support::cpu_shared();
    // Five events 50 ms apart, then the end; reopened 100 ms later.
    let Some((_feed, port)) = feed(5, 0.05, 15) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/feed");
    let ran = brink_json(&[
        "run",
        &url,
        "--hold",
        "-c",
        "4",
        "-d",
        "3s",
        "--sent-at",
        "$.ts",
    ]);
    let out = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "{out}");
    let (st, seen) = (&ran.result["summary"]["stream"], stats(port));
    let reconnects = st["reconnects"].as_u64().unwrap();
    let opened = seen["opened"].as_u64().unwrap();
    // Each stream brink opened reached the server, bar one per slot cut by the end.
    assert!(
        opened <= reconnects + 4 && opened + 4 >= reconnects + 4,
        "server {seen}, brink {st}"
    );
    assert!(
        reconnects >= 12,
        "a stream lasts ~0.3 s with its wait: {st}"
    );
    assert_eq!(st["resumed"], seen["resumed"], "{seen}: {st}");
    assert_eq!(
        seen["bad_ids"], 0,
        "each resume names the last event: {seen}"
    );
    let (events, ended) = (
        st["events"].as_u64().unwrap(),
        st["streams"].as_u64().unwrap(),
    );
    assert!(
        events >= 5 * ended && events <= 5 * (ended + 4),
        "{events} events, {ended} streams ended"
    );
    assert!(st["delay_ms"]["p99"].as_f64().unwrap() < 100.0, "{st}");
    assert_eq!(st["undated"], 0, "{st}");
}

#[test]
fn sse_starlette_pings_keep_a_quiet_held_stream_alive() {
    let _cpu = crate::support::cpu_shared();
    // An event every 2.5 s, a ping comment every second, never ending: quieter than the
    // idle timeout between events, never between pings.
    let Some((_feed, port)) = feed(0, 2.5, 1) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/feed");
    let args = [
        "run",
        &url,
        "--hold",
        "-c",
        "3",
        "-d",
        "4s",
        "--idle-timeout",
        "1800ms",
    ];
    let ran = brink_json(&args);
    let out = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, Some(0), "{out}");
    let s = &ran.result["summary"];
    assert_eq!(s["errors"], 0, "{out}");
    let st = &s["stream"];
    assert_eq!(
        (&st["held"], &st["reconnects"]),
        (&Value::from(3), &Value::from(0)),
        "{st}"
    );
    // One event per stream at 2.5 s; the pings are comments, not events.
    assert_eq!(st["events"], 3, "{st}");
    assert_eq!(stats(port)["opened"], 3);
}
