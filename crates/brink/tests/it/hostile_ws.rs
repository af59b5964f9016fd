//! Hostile WebSocket servers, one raw socket each: upgrades that never finish or lie, frames
//! that break the rules (masked, 2^63 bytes long), a message that never ends, a ping flood
//! at a reader that never reads, a close with an error code. Every case ends within its
//! deadline as a counted error of the right kind, with brink's memory bounded.

use crate::hostile::RawServer;
use crate::support::{brink_json, watch_peak};
use base64::Engine as _;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Reads an upgrade request's head; its `Sec-WebSocket-Key`.
fn read_upgrade(sock: &mut TcpStream) -> Option<String> {
    let mut seen = Vec::new();
    let mut b = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        if sock.read(&mut b).ok()? != 1 || seen.len() > 1 << 16 {
            return None;
        }
        seen.push(b[0]);
    }
    let head = String::from_utf8_lossy(&seen).into_owned();
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("sec-websocket-key")
            .then(|| v.trim().to_string())
    })
}

fn accept(key: &str) -> String {
    let input = format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(d.as_ref())
}

/// A server that upgrades properly, then does `then` with the socket.
fn upgraded<F>(then: F) -> RawServer
where
    F: Fn(TcpStream, Instant) + Send + Sync + 'static,
{
    RawServer::start(move |mut sock, until| {
        let Some(key) = read_upgrade(&mut sock) else {
            return;
        };
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
            accept(&key)
        );
        if sock.write_all(answer.as_bytes()).is_ok() {
            then(sock, until);
        }
    })
}

/// `-c 2 -d 2s --timeout 1s --connect-timeout 1s --grace 1s` against `srv`: ends within 6 s
/// with every attempt counted as `kind`; the summary.
fn bounded(name: &str, srv: &RawServer, extra: &[&str], kind: &str) -> serde_json::Value {
    let url = format!("ws://127.0.0.1:{}/", srv.port);
    let mut args = vec![
        "run",
        &url,
        "--message",
        "hi",
        "-c",
        "2",
        "--threads",
        "1",
        "-d",
        "2s",
        "--timeout",
        "1s",
        "--connect-timeout",
        "1s",
        "--grace",
        "1s",
        "-q",
    ];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let ran = brink_json(&args);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(6), "{name}: took {took:?}");
    let s = ran.result["summary"].clone();
    let counted = s["errors_by_kind"][kind].as_u64().unwrap_or(0);
    assert!(
        counted >= 2,
        "{name}: attempts counted as {kind}: {}\n{}",
        s["errors_by_kind"],
        ran.stderr
    );
    assert_eq!(s["ok"], 0, "{name}: nothing succeeds");
    s
}

#[test]
fn upgrades_that_never_finish_or_lie_are_handshake_errors() {
    let _cpu = crate::support::cpu_shared();
    let silent = RawServer::start(|mut sock, until| {
        if read_upgrade(&mut sock).is_some() {
            while Instant::now() < until && sock.write_all(b"").is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
    let s = bounded("never answers", &silent, &[], "handshake");
    // Connections cut while upgrading were never held: no up time, no close code.
    assert!(s["websocket"]["connected_ms"].is_null(), "{s}");
    assert!(s["websocket"]["close_codes"]["1006"].is_null(), "{s}");
    let wrong = RawServer::start(|mut sock, _| {
        if read_upgrade(&mut sock).is_some() {
            let _ = sock.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n");
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let s = bounded("a wrong Sec-WebSocket-Accept", &wrong, &[], "handshake");
    let refused = &s["websocket"]["upgrades_refused"];
    assert_eq!(refused["101"], s["errors_by_kind"]["handshake"], "{s}");
    let refused = RawServer::start(|mut sock, _| {
        if read_upgrade(&mut sock).is_some() {
            let _ = sock.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let s = bounded("403", &refused, &[], "handshake");
    // Counted by the status the server answered with, and the bytes each way are the
    // upgrades' own.
    let handshakes = s["errors_by_kind"]["handshake"].as_u64().unwrap_or(0);
    assert_eq!(s["websocket"]["upgrades_refused"]["403"], handshakes, "{s}");
    assert_eq!(s["websocket"]["upgrades"], 0, "{s}");
    let (sent, read) = (s["bytes_out"].as_u64(), s["bytes_in"].as_u64());
    assert!(sent.unwrap_or(0) >= handshakes * 150, "{s}");
    assert_eq!(read, Some(handshakes * 45), "{s}");
    let endless = RawServer::start(|mut sock, until| {
        if read_upgrade(&mut sock).is_some() {
            let _ = sock.write_all(b"HTTP/1.1 101 Switching Protocols\r\n");
            let line =
                b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(100);
            while Instant::now() < until && sock.write_all(&line).is_ok() {}
        }
    });
    bounded("an endless head", &endless, &[], "handshake");
}

#[test]
fn frames_that_break_the_rules_are_protocol_errors() {
    let _cpu = crate::support::cpu_shared();
    // A masked frame from the server.
    let masked = upgraded(|mut sock, _| {
        let mut b = [0u8; 64];
        let _ = sock.read(&mut b);
        let _ = sock.write_all(&[0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
        std::thread::sleep(Duration::from_secs(1));
    });
    bounded("a masked frame", &masked, &[], "protocol");
    // A frame announcing 2^63 bytes.
    let huge = upgraded(|mut sock, _| {
        let mut b = [0u8; 64];
        let _ = sock.read(&mut b);
        let mut f = vec![0x82, 127];
        f.extend_from_slice(&(1u64 << 63).to_be_bytes());
        let _ = sock.write_all(&f);
        std::thread::sleep(Duration::from_secs(1));
    });
    bounded("2^63 bytes announced", &huge, &[], "protocol");
}

/// A message whose fragments never end, and a frame longer than the limit, are refused at
/// `--max-message-size` (close 1009): brink holds no more than that.
#[test]
fn a_message_that_never_ends_is_cut_at_the_limit() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = upgraded(|mut sock, until| {
        let mut b = [0u8; 64];
        let _ = sock.read(&mut b);
        let mut frag = vec![0x02, 126, 0xFF, 0xFF];
        frag.extend(std::iter::repeat_n(b'a', 0xFFFF));
        if sock.write_all(&frag).is_err() {
            return;
        }
        frag[0] = 0x00;
        while Instant::now() < until && sock.write_all(&frag).is_ok() {}
    });
    let url = format!("ws://127.0.0.1:{}/", srv.port);
    let child = std::process::Command::new(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .args([
            "run",
            &url,
            "--message",
            "hi",
            "-c",
            "4",
            "--threads",
            "1",
            "-d",
            "2s",
            "--timeout",
            "5s",
            "--grace",
            "1s",
            "--max-message-size",
            "1MiB",
            "--no-history",
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("brink runs");
    let (code, peak) = watch_peak(child, Duration::from_secs(10));
    assert!(code.is_some(), "brink ended by itself");
    assert!(peak < 100, "peak RSS {peak} MiB with a 1 MiB message limit");
    bounded(
        "an endless message",
        &srv,
        &["--max-message-size", "1MiB"],
        "protocol",
    );
}

/// A server that floods pings and never reads the pongs: the exchange ends at `--timeout`.
#[test]
fn a_ping_flood_at_a_reader_that_never_reads_times_out() {
    let _cpu = crate::support::cpu_shared();
    let srv = upgraded(|mut sock, until| {
        let ping = [0x89u8, 4, b'p', b'i', b'n', b'g'].repeat(10_000);
        while Instant::now() < until && sock.write_all(&ping).is_ok() {}
    });
    bounded("a ping flood", &srv, &[], "timeout");
}

/// A server that closes with 1011: each exchange ends as `closed`, the close echoed.
#[test]
fn a_server_close_ends_the_exchange_as_closed() {
    let _cpu = crate::support::cpu_shared();
    let srv = upgraded(|mut sock, _| {
        let mut b = [0u8; 64];
        let _ = sock.read(&mut b);
        let _ = sock.write_all(&[0x88, 2, 0x03, 0xF3]);
        let mut echo = [0u8; 8];
        let _ = sock.read(&mut echo);
    });
    let s = bounded("close 1011", &srv, &[], "closed");
    let closes = s["websocket"]["close_codes"]["1011"].as_u64().unwrap_or(0);
    assert!(closes >= 2, "{}", s["websocket"]);
}

/// Held connections that the server ends after 300 ms (a close 1001, or a plain drop) are
/// counted as ended by the server, with their code (1006 for the drop) and how long they
/// stayed up; the slots reconnect.
#[test]
fn held_connections_the_server_ends_are_counted() {
    let _cpu = crate::support::cpu_shared();
    // Pinging every 100 ms, and every 5 s: between its pings a connection is still read, so
    // an end is seen when it comes, not at the next ping.
    let cases = [
        ("close 1001", true, "1001", "100ms"),
        ("drop", false, "1006", "100ms"),
        ("close 1001, resting", true, "1001", "5s"),
        ("drop, resting", false, "1006", "5s"),
    ];
    for (name, close, code, every) in cases {
        let srv = upgraded(move |mut sock, _| {
            let t = Instant::now();
            let mut b = [0u8; 256];
            let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
            // Answer pings with pongs for 300 ms, then end the connection.
            while t.elapsed() < Duration::from_millis(300) {
                if let Ok(n) = sock.read(&mut b) {
                    if n == 0 {
                        return;
                    }
                    if n >= 14 && b[0] == 0x89 {
                        let key = [b[2], b[3], b[4], b[5]];
                        let mut pong = vec![0x8A, 8];
                        pong.extend((0..8).map(|i| b[6 + i] ^ key[i % 4]));
                        let _ = sock.write_all(&pong);
                    }
                }
            }
            if close {
                let _ = sock.write_all(&[0x88, 2, 0x03, 0xE9]);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let url = format!("ws://127.0.0.1:{}/", srv.port);
        let ran = brink_json(&[
            "run",
            &url,
            "--hold",
            "-c",
            "2",
            "--every",
            every,
            "-d",
            "2s",
            "--threads",
            "1",
            "-q",
        ]);
        let ws = &ran.result["summary"]["websocket"];
        let unexpected = ws["unexpected_closes"].as_u64().unwrap_or(0);
        assert!(unexpected >= 4, "{name}: {ws}\n{}", ran.stderr);
        assert!(
            ws["close_codes"][code].as_u64().unwrap_or(0) >= 4,
            "{name}: {ws}"
        );
        let up = ws["connected_ms"]["p50"].as_f64().unwrap_or(0.0);
        assert!((250.0..=800.0).contains(&up), "{name}: stayed up {up} ms");
        assert!(
            ws["upgrades"].as_u64().unwrap_or(0) >= 4,
            "{name}: the slots reconnect"
        );
    }
}

/// A rule broken while no exchange waits (a close frame too short to hold a code, sent to a
/// held connection resting between pings, or between two scheduled messages) is a
/// `protocol` error when it is seen, not a quiet end.
#[test]
fn rules_broken_between_messages_are_protocol_errors() {
    let _cpu = crate::support::cpu_shared();
    let srv = upgraded(|mut sock, _| {
        // Answer the first message or ping (a short frame, masked), then break the rule.
        let mut b = [0u8; 256];
        let _ = sock.set_read_timeout(Some(Duration::from_millis(300)));
        if let Ok(n) = sock.read(&mut b) {
            let len = usize::from(b[1] & 0x7f);
            if n >= 6 + len && len < 126 {
                let answer = if b[0] == 0x89 { 0x8A } else { b[0] };
                let mut out = vec![answer, b[1] & 0x7f];
                out.extend((0..len).map(|i| b[6 + i] ^ b[2 + i % 4]));
                let _ = sock.write_all(&out);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
        let _ = sock.write_all(&[0x88, 1, 0x03]);
        std::thread::sleep(Duration::from_millis(300));
    });
    let url = format!("ws://127.0.0.1:{}/", srv.port);
    let shapes: [&[&str]; 2] = [
        &["--hold", "-c", "2", "--every", "5s"],
        &["--message", "hi", "--rate", "2"],
    ];
    for shape in shapes {
        let mut args = vec!["run", url.as_str(), "-d", "3s", "--threads", "1", "-q"];
        args.extend_from_slice(shape);
        let ran = brink_json(&args);
        let s = &ran.result["summary"];
        let protocol = s["errors_by_kind"]["protocol"].as_u64().unwrap_or(0);
        assert!(protocol >= 2, "{shape:?}: {s}\n{}", ran.stderr);
        // The rule the close frame broke is said.
        let why = &ran.result["scenarios"][0]["answer_failures"][0]["reason"];
        assert_eq!(
            why, "a close frame's code or reason is invalid",
            "{shape:?}"
        );
    }
}

/// Connections that do not open say why, once per request: a plain-text server behind a
/// `wss://` URL, and an upgrade answered with 403.
#[test]
fn connections_that_do_not_open_say_why() {
    let _cpu = crate::support::cpu_shared();
    // Whatever comes first (an upgrade request, a TLS ClientHello) is answered with a 403.
    let plain = RawServer::start(|mut sock, _| {
        let mut first = [0u8; 2048];
        if sock.read(&mut first).is_ok_and(|n| n > 0) {
            let _ = sock.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
        }
    });
    // Reads the ClientHello, then closes without a word.
    let mute = RawServer::start(|mut sock, _| {
        let mut first = [0u8; 4096];
        let _ = sock.read(&mut first);
    });
    let cases = [
        (&plain, "wss", "tls", "plain text, not TLS"),
        (&plain, "ws", "handshake", "answered 403 instead of 101"),
        (&mute, "wss", "tls", "before the TLS handshake finished"),
    ];
    for (server, scheme, kind, why) in cases {
        let url = format!("{scheme}://127.0.0.1:{}/", server.port);
        let ran = brink_json(&["run", &url, "--message", "hi", "-n", "3", "-c", "1"]);
        let failures = &ran.result["scenarios"][0]["setup_failures"];
        assert_eq!(failures[0]["kind"], kind, "{failures}");
        assert_eq!(failures[0]["count"], 3, "{failures}");
        let reason = failures[0]["reason"].as_str().unwrap_or("");
        assert!(reason.contains(why), "{scheme}: {reason}");
        assert!(
            ran.stdout.contains(why),
            "{scheme}: the terminal says it:\n{}",
            ran.stdout
        );
    }
}

/// A server that reads and never answers: the messages still waiting when the run ends
/// were sent, and count as sent (messages and bytes), as unfinished, not as nothing.
#[test]
fn messages_still_waiting_at_the_end_are_counted_as_sent() {
    let _cpu = crate::support::cpu_shared();
    let silent = upgraded(|mut sock, until| {
        let mut b = [0u8; 256];
        let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
        while Instant::now() < until && !matches!(sock.read(&mut b), Ok(0)) {}
    });
    let url = format!("ws://127.0.0.1:{}/", silent.port);
    let ran = brink_json(&[
        "run",
        &url,
        "--message",
        "hi",
        "-c",
        "2",
        "-d",
        "1s",
        "--grace",
        "500ms",
        "-q",
    ]);
    let s = &ran.result["summary"];
    assert_eq!(s["unfinished"], 2, "{s}");
    assert_eq!(s["websocket"]["messages_sent"], 2, "{}", s["websocket"]);
    // Two upgrade requests and two 8-byte frames ("hi" masked).
    assert!(s["bytes_out"].as_u64().unwrap_or(0) > 2 * (150 + 8), "{s}");
    assert!(ran.stderr.contains("none finished"), "{}", ran.stderr);
}

/// A server that never answers brink's close: the connection ends without a close frame
/// from it, which is counted as 1006 (not as the server's doing), so every upgraded
/// connection is accounted by exactly one close code.
#[test]
fn a_close_the_server_never_answers_counts_as_abnormal() {
    let _cpu = crate::support::cpu_shared();
    let mute = upgraded(|mut sock, until| {
        let mut buf = [0u8; 256];
        // Echo nothing useful: answer each client frame with an empty text frame, and never
        // send a close (reading on until brink gives up).
        while Instant::now() < until {
            match sock.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) if buf[0] & 0x0F == 0x8 => continue,
                Ok(_) => {
                    if sock.write_all(&[0x81, 0x00]).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let url = format!("ws://127.0.0.1:{}/", mute.port);
    let t = Instant::now();
    let ran = brink_json(&["run", &url, "--message", "hi", "-c", "2", "-n", "10", "-q"]);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let ws = &ran.result["summary"]["websocket"];
    assert_eq!(ran.result["summary"]["ok"], 10, "{}", ran.stderr);
    assert_eq!(ws["upgrades"], 2, "{ws}");
    assert_eq!(ws["close_codes"], serde_json::json!({"1006": 2}), "{ws}");
    assert_eq!(ws["unexpected_closes"], 0, "{ws}");
    // The second brink waited for the unanswered closes is not part of the load: the run's
    // duration (and so its rate) ends with its last answer.
    let took = ran.result["summary"]["duration_s"].as_f64().unwrap_or(9.0);
    assert!(took < 0.5, "duration {took} s");
}

/// Reads one short masked frame from the client (a message or a ping); false when none came.
fn read_short_frame(sock: &mut TcpStream) -> bool {
    let mut head = [0u8; 2];
    if sock.read_exact(&mut head).is_err() {
        return false;
    }
    let len = usize::from(head[1] & 0x7f);
    if len >= 126 {
        return false;
    }
    let mut rest = vec![0u8; 4 + len];
    sock.read_exact(&mut rest).is_ok()
}

/// Every message is answered with a 3 MiB message followed by a burst of a million 2-byte
/// unsolicited pongs (2 MiB). Taking each tiny frame once shifted the rest of a 4 MiB read
/// buffer: a burst like this cost minutes of CPU, outside any deadline. Now it costs time
/// linear in its bytes: the exchanges succeed and the run ends on time, on the epoll loop
/// (closed model) and the tokio one (open model).
#[test]
fn a_burst_of_tiny_frames_after_a_large_message_costs_linear_time() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = upgraded(|mut sock, until| {
        let mut out = vec![0x82u8, 127];
        out.extend_from_slice(&(3u64 << 20).to_be_bytes());
        out.resize(out.len() + (3 << 20), b'a');
        out.extend([0x8Au8, 0].repeat(1 << 20));
        while Instant::now() < until && read_short_frame(&mut sock) {
            if sock.write_all(&out).is_err() {
                return;
            }
        }
    });
    let url = format!("ws://127.0.0.1:{}/", srv.port);
    for shape in [&["-c", "2"][..], &["--rate", "10", "-c", "2"]] {
        let mut args = vec![
            "run",
            url.as_str(),
            "--message",
            "hi",
            "--threads",
            "1",
            "-d",
            "2s",
            "--timeout",
            "1s",
            "--grace",
            "1s",
            "-q",
        ];
        args.extend_from_slice(shape);
        let t = Instant::now();
        let ran = brink_json(&args);
        let took = t.elapsed();
        let s = &ran.result["summary"];
        assert!(
            took < Duration::from_secs(6),
            "{shape:?}: took {took:?}\n{s}"
        );
        assert_eq!(s["errors"], 0, "{shape:?}: {s}\n{}", ran.stderr);
        // Each exchange moves 5 MiB through loopback and the parser: tens of milliseconds.
        let ok = s["ok"].as_u64().unwrap_or(0);
        assert!(ok >= 10, "{shape:?}: {ok} exchanges in 2 s\n{s}");
    }
}
