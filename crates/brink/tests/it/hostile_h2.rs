//! Hostile HTTP/2 servers, third round, against both of brink's HTTP/2 clients: its own h2c
//! client on the epoll loop (plain TCP, kept alive) and hyper's (`--no-keepalive` takes it).
//! Each server here is a raw socket in this process that reads the client's first request and
//! answers it as written: malformed answers must count as `protocol` on both paths alike;
//! floods and a server that asks without reading end within the deadlines in bounded memory;
//! a request refused again and again keeps one deadline.

use crate::hostile::{frame, run_watched, RawServer};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// An HPACK literal field without indexing and a new name (names and values under 127 bytes).
fn field(name: &str, value: &str) -> Vec<u8> {
    let mut b = vec![0x00, name.len() as u8];
    b.extend_from_slice(name.as_bytes());
    b.push(value.len() as u8);
    b.extend_from_slice(value.as_bytes());
    b
}

/// `:status` as a literal value (static name 8), so any bytes can be sent.
fn status(value: &str) -> Vec<u8> {
    let mut b = vec![0x08, value.len() as u8];
    b.extend_from_slice(value.as_bytes());
    b
}

const HEADERS: u8 = 1;
const DATA: u8 = 0;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// Reads the client's preface, sends an empty SETTINGS, and reads frames until its first
/// HEADERS; that frame's stream id.
fn first_request(sock: &mut TcpStream) -> Option<u32> {
    let mut preface = [0u8; 24];
    sock.read_exact(&mut preface).ok()?;
    sock.write_all(&frame(4, 0, 0, &[])).ok()?;
    next_request(sock)
}

/// Keeps reading what the client sends (so it never blocks) on another thread.
fn drain(sock: &TcpStream) {
    if let Ok(mut d) = sock.try_clone() {
        std::thread::spawn(move || {
            let mut sink = [0u8; 16384];
            while matches!(d.read(&mut sink), Ok(n) if n > 0) {}
        });
    }
}

/// A server that answers each connection's first request with `answer(stream)` and then
/// holds the connection open until its deadline.
fn answering(answer: fn(u32) -> Vec<u8>) -> RawServer {
    RawServer::start(move |mut sock, until| {
        let Some(id) = first_request(&mut sock) else {
            return;
        };
        drain(&sock);
        if sock.write_all(&answer(id)).is_err() {
            return;
        }
        while Instant::now() < until && sock.write_all(&[]).is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

fn headers(id: u32, flags: u8, fields: &[Vec<u8>]) -> Vec<u8> {
    frame(HEADERS, flags | END_HEADERS, id, &fields.concat())
}

/// What one run counted: (ok, the error kinds seen).
fn outcome(r: &serde_json::Value) -> (u64, Vec<String>) {
    let s = &r["summary"];
    let kinds = s["errors_by_kind"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    (s["ok"].as_u64().unwrap_or(0), kinds)
}

/// One request (`method`) over each client; what each counted.
fn both_paths(url: &str, method: &str) -> [(u64, Vec<String>); 2] {
    let base = [
        "--http2",
        "-m",
        method,
        "-n",
        "1",
        "-c",
        "1",
        "--timeout",
        "2s",
        "-q",
    ];
    let mut hyper = base.to_vec();
    hyper.push("--no-keepalive");
    [&base[..], &hyper[..]].map(|args| {
        let (_, took, _, r) = run_watched(url, args);
        assert!(took < Duration::from_secs(10), "{url}: {took:?}");
        outcome(&r)
    })
}

/// RFC 9113's rules for a response (§8.1.1 content-length, §8.2.1 field names, §8.2.2
/// connection-specific fields, §8.3.2 `:status`, trailers end the stream, frames only on
/// streams the client opened, SETTINGS in range) judged the same by brink's client and
/// hyper's: the well-formed answers are OK on both, every broken one `protocol` on both
/// (where hyper is laxer than the RFC, a request pseudo-header in a response, both accept).
#[test]
fn both_http2_clients_judge_malformed_answers_alike() {
    let _cpu = crate::support::cpu_exclusive();
    type Case = (&'static str, &'static str, fn(u32) -> Vec<u8>, bool);
    let cases: [Case; 19] = [
        // Malformed by RFC 9113 §8.3, but hyper's h2 takes it: both clients do.
        (
            "a request pseudo-header first",
            "GET",
            |id| headers(id, END_STREAM, &[field(":method", "GET"), status("200")]),
            true,
        ),
        (
            "unknown pseudo",
            "GET",
            |id| headers(id, END_STREAM, &[status("200"), field(":foo", "1")]),
            false,
        ),
        (
            "well formed",
            "GET",
            |id| {
                let mut f = headers(id, 0, &[status("200"), field("content-length", "2")]);
                f.extend(frame(DATA, END_STREAM, id, b"ok"));
                f
            },
            true,
        ),
        (
            "HEAD with a length and no body",
            "HEAD",
            |id| {
                headers(
                    id,
                    END_STREAM,
                    &[status("200"), field("content-length", "100")],
                )
            },
            true,
        ),
        (
            "content-length over the body",
            "GET",
            |id| {
                let mut f = headers(id, 0, &[status("200"), field("content-length", "10")]);
                f.extend(frame(DATA, END_STREAM, id, b"abc"));
                f
            },
            false,
        ),
        (
            "content-length under the body",
            "GET",
            |id| {
                let mut f = headers(id, 0, &[status("200"), field("content-length", "2")]);
                f.extend(frame(DATA, END_STREAM, id, b"abcdef"));
                f
            },
            false,
        ),
        (
            "status +200",
            "GET",
            |id| headers(id, END_STREAM, &[status("+200")]),
            false,
        ),
        (
            "status 0200",
            "GET",
            |id| headers(id, END_STREAM, &[status("0200")]),
            false,
        ),
        (
            "a request pseudo-header twice",
            "GET",
            |id| {
                headers(
                    id,
                    END_STREAM,
                    &[status("200"), field(":path", "/"), field(":path", "/")],
                )
            },
            false,
        ),
        (
            "a pseudo-header after a field",
            "GET",
            |id| headers(id, END_STREAM, &[field("x", "1"), status("200")]),
            false,
        ),
        (
            "an uppercase name",
            "GET",
            |id| headers(id, END_STREAM, &[status("200"), field("X-Upper", "1")]),
            false,
        ),
        (
            "connection",
            "GET",
            |id| {
                headers(
                    id,
                    END_STREAM,
                    &[status("200"), field("connection", "close")],
                )
            },
            false,
        ),
        (
            "transfer-encoding",
            "GET",
            |id| {
                headers(
                    id,
                    END_STREAM,
                    &[status("200"), field("transfer-encoding", "chunked")],
                )
            },
            false,
        ),
        (
            "data after trailers without END_STREAM",
            "GET",
            |id| {
                let mut f = headers(id, 0, &[status("200")]);
                f.extend(frame(DATA, 0, id, b"ok"));
                f.extend(headers(id, 0, &[field("x-trailer", "1")]));
                f.extend(frame(DATA, END_STREAM, id, b"more"));
                f
            },
            false,
        ),
        (
            "an answer on a stream never opened",
            "GET",
            |id| headers(id + 2, END_STREAM, &[status("200")]),
            false,
        ),
        (
            "an answer on an even stream",
            "GET",
            |id| headers(id + 1, END_STREAM, &[status("200")]),
            false,
        ),
        (
            "SETTINGS_MAX_FRAME_SIZE 100",
            "GET",
            |_| frame(4, 0, 0, &[0, 5, 0, 0, 0, 100]),
            false,
        ),
        (
            "SETTINGS_MAX_FRAME_SIZE 2^24",
            "GET",
            |_| frame(4, 0, 0, &[0, 5, 1, 0, 0, 0]),
            false,
        ),
        (
            "SETTINGS_ENABLE_PUSH 7",
            "GET",
            |_| frame(4, 0, 0, &[0, 2, 0, 0, 0, 7]),
            false,
        ),
    ];
    let mut disagree = Vec::new();
    for (name, method, answer, good) in cases {
        let srv = answering(answer);
        let [own, hyper] = both_paths(&srv.url("/"), method);
        eprintln!("{name}: brink's client {own:?}, hyper's {hyper:?}");
        let want = if good {
            (1, vec![])
        } else {
            (0, vec!["protocol".to_string()])
        };
        if own != want || hyper != want {
            disagree.push(format!(
                "{name}: want {want:?}, brink's {own:?}, hyper's {hyper:?}"
            ));
        }
    }
    assert!(disagree.is_empty(), "{disagree:#?}");
}

/// Reads the client's frames and answers every request HEADERS with `answer(stream)` after
/// `wait`, without ever draining otherwise (what it reads is only what it must).
fn per_request(wait: Duration, answer: fn(u32) -> Vec<u8>) -> RawServer {
    RawServer::start(move |mut sock, until| {
        let mut id = first_request(&mut sock);
        while let Some(stream) = id {
            if Instant::now() >= until {
                return;
            }
            std::thread::sleep(wait);
            if sock.write_all(&answer(stream)).is_err() {
                return;
            }
            id = next_request(&mut sock);
        }
    })
}

/// Reads frames until the next HEADERS; its stream id.
fn next_request(sock: &mut TcpStream) -> Option<u32> {
    loop {
        let mut head = [0u8; 9];
        sock.read_exact(&mut head).ok()?;
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        sock.read_exact(&mut payload).ok()?;
        if head[3] == HEADERS {
            return Some(u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff);
        }
    }
}

/// A server that answers 200 and then, never reading again, sends `flood(stream)` over and
/// over until its deadline.
fn flooding(flood: fn(u32) -> Vec<u8>) -> RawServer {
    RawServer::start(move |mut sock, until| {
        let Some(id) = first_request(&mut sock) else {
            return;
        };
        if sock.write_all(&headers(id, 0, &[status("200")])).is_err() {
            return;
        }
        let block = flood(id);
        while Instant::now() < until && sock.write_all(&block).is_ok() {}
    })
}

/// Floods that ask something of brink or nothing at all, each with a byte of data now and
/// then so that a client counting any data as progress never stops them: PINGs from a server
/// that never reads the answers, PRIORITY frames, frames of an unknown type, data on a stream
/// never opened. brink's client ends each as a protocol error within the request's timeout
/// plus a second, in under 64 MiB; hyper's ends each within the timeout too.
#[test]
fn http2_floods_end_within_the_deadline_in_bounded_memory() {
    let _cpu = crate::support::cpu_exclusive();
    type Flood = (&'static str, fn(u32) -> Vec<u8>);
    let floods: [Flood; 4] = [
        ("PING with a byte of data", |id| {
            let mut b = frame(6, 0, 0, &[7; 8]).repeat(1000);
            b.extend(frame(DATA, 0, id, b"x"));
            b
        }),
        ("PRIORITY with a byte of data", |id| {
            let mut b = frame(2, 0, id, &[0, 0, 0, 0, 16]).repeat(1000);
            b.extend(frame(DATA, 0, id, b"x"));
            b
        }),
        ("unknown frame types with a byte of data", |id| {
            let mut b = frame(0xfa, 0, 0, b"whatever").repeat(1000);
            b.extend(frame(DATA, 0, id, b"x"));
            b
        }),
        ("data on a stream never opened", |id| {
            frame(DATA, 0, id + 2, b"xxxxxxxx").repeat(1000)
        }),
    ];
    for (name, flood) in floods {
        let srv = flooding(flood);
        for (path, extra) in [
            ("brink's client", None),
            ("hyper's", Some("--no-keepalive")),
        ] {
            for load in [["-n", "1"], ["-d", "2s"]] {
                let mut args = vec!["--http2", "-c", "1", "--timeout", "3s", "-q"];
                args.extend(load);
                args.extend(extra);
                let (code, took, peak_mib, r) = run_watched(&srv.url("/"), &args);
                let (ok, kinds) = outcome(&r);
                eprintln!(
                    "{name}, {path}, {load:?}: exit {code:?} in {:.1}s, peak {peak_mib} MiB, ok {ok}, {kinds:?}",
                    took.as_secs_f64()
                );
                assert_eq!(ok, 0, "{name}, {path}: nothing is OK");
                assert!(!kinds.is_empty(), "{name}, {path}: counted as errors");
                assert!(peak_mib < 64, "{name}, {path}: {peak_mib} MiB");
                let limit = if load[0] == "-n" { 3 + 2 } else { 2 + 3 + 2 };
                assert!(
                    took < Duration::from_secs(limit),
                    "{name}, {path}, {load:?}: {took:?}"
                );
                if extra.is_none() {
                    assert_eq!(kinds, ["protocol"], "{name}: cut off as a flood");
                }
            }
        }
    }
}

/// A server that waits 2.5 s and then refuses the stream (REFUSED_STREAM), every time: with
/// `--timeout 3s` the request has one deadline across its resends, and ends as a `timeout`
/// within it, on both clients.
#[test]
fn a_refused_request_keeps_one_deadline_across_resends() {
    let _cpu = crate::support::cpu_light();
    let srv = per_request(Duration::from_millis(2500), |id| {
        frame(3, 0, id, &7u32.to_be_bytes())
    });
    for extra in [None, Some("--no-keepalive")] {
        let mut args = vec!["--http2", "-n", "1", "-c", "1", "--timeout", "3s", "-q"];
        args.extend(extra);
        let (_, took, _, r) = run_watched(&srv.url("/"), &args);
        let (ok, kinds) = outcome(&r);
        eprintln!("{extra:?}: {:.1}s, ok {ok}, {kinds:?}", took.as_secs_f64());
        assert_eq!((ok, kinds), (0, vec!["timeout".to_string()]), "{extra:?}");
        assert!(took < Duration::from_secs(5), "{extra:?}: {took:?}");
    }
}

/// A server that opens every window wide, answers each stream at once and never reads: brink
/// must not copy every 4 MiB body it would send into memory (it reached 448 MiB in 5 s).
/// Bodies wait while the socket is full, and an answered stream's unsent body is dropped.
#[test]
fn answers_without_reading_cannot_make_bodies_pile_up() {
    let _cpu = crate::support::cpu_light();
    let srv = RawServer::start(|mut sock, until| {
        let Some(mut id) = first_request(&mut sock) else {
            return;
        };
        let mut wide = frame(4, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]);
        wide.extend(frame(8, 0, 0, &(0x7fff_ffffu32 - 65_535).to_be_bytes()));
        if sock.write_all(&wide).is_err() {
            return;
        }
        while Instant::now() < until {
            let mut f = frame(8, 0, 0, &(4u32 << 20).to_be_bytes());
            f.extend(headers(id, END_STREAM, &[status("200")]));
            if sock.write_all(&f).is_err() {
                return;
            }
            id += 2;
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 4 << 20]).expect("body");
    let args = [
        "--http2",
        "-c",
        "1",
        "-d",
        "3s",
        "--timeout",
        "2s",
        "-m",
        "POST",
        "--body-file",
        body.to_str().unwrap(),
        "-q",
    ];
    let (code, took, peak_mib, r) = run_watched(&srv.url("/"), &args);
    eprintln!(
        "exit {code:?} in {:.1}s, peak {peak_mib} MiB, {}",
        took.as_secs_f64(),
        r["summary"]
    );
    assert!(peak_mib < 64, "{peak_mib} MiB");
    assert!(took < Duration::from_secs(3 + 2 + 5 + 2), "{took:?}");
}

/// A server that says `text/event-stream` and then sends one event that never ends: `data: `
/// and then `x` in DATA frames of 16 KiB until its deadline, never a newline.
fn endless_event() -> RawServer {
    RawServer::start(move |mut sock, until| {
        let Some(id) = first_request(&mut sock) else {
            return;
        };
        drain(&sock);
        let head = headers(
            id,
            0,
            &[status("200"), field("content-type", "text/event-stream")],
        );
        if sock.write_all(&head).is_err() || sock.write_all(&frame(DATA, 0, id, b"data: ")).is_err()
        {
            return;
        }
        let block = frame(DATA, 0, id, &[b'x'; 16 * 1024]);
        while Instant::now() < until && sock.write_all(&block).is_ok() {}
    })
}

/// An event that never ends is a protocol error at its bound (--max-event-size 1MiB), on
/// both HTTP/2 clients, long before the request's timeout, in bounded memory.
#[test]
fn an_endless_event_over_http2_ends_at_its_bound() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = endless_event();
    for extra in [None, Some("--no-keepalive")] {
        let mut args = vec!["--http2", "-n", "1", "-c", "1", "--timeout", "20s", "-q"];
        args.extend(extra);
        let (_, took, peak_mib, r) = run_watched(&srv.url("/"), &args);
        let (ok, kinds) = outcome(&r);
        assert_eq!((ok, kinds), (0, vec!["protocol".to_string()]), "{extra:?}");
        assert!(took < Duration::from_secs(10), "{extra:?}: {took:?}");
        assert!(peak_mib < 64, "{extra:?}: {peak_mib} MiB");
    }
}
