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
        let t = Instant::now();
        // Four servers' threads against brink's one worker: brink cannot keep up.
        let ran = brink_json(&[
            "run",
            &srv.url("/"),
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
        ]);
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(6),
            "{name}: the run took {took:?}\n{}",
            ran.stderr
        );
        let s = &ran.result["summary"];
        let errors = s["errors_by_kind"][kind].as_u64().unwrap_or(0);
        assert!(
            errors >= 4,
            "{name}: every attempt counted as {kind}: {}\n{}",
            s["errors_by_kind"],
            ran.stderr
        );
        assert_eq!(s["ok"].as_u64(), Some(0), "{name}");
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
