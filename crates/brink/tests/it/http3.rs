//! HTTP/3 over QUIC (`--http3`): requests counted against the server's own count over shared
//! and separate connections, event streams read as over HTTP/1.1 and HTTP/2, the handshake's
//! failures named, a silent UDP port bounded by `--connect-timeout`, and the flags that do
//! not fit refused. The server is testkit's quinn + h3 one, with a fresh certificate.

use crate::support::brink_json;
use std::time::Duration;

fn server(reply: testkit::Reply) -> (testkit::Server, tempfile::TempDir, String) {
    let handler: testkit::Handler = std::sync::Arc::new(move |_: &testkit::Req| reply.clone());
    let srv = testkit::serve_h3(testkit::Options::default(), handler).expect("h3 server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, srv.cert_pem.as_deref().unwrap_or_default()).expect("ca written");
    let ca = ca.display().to_string();
    (srv, dir, ca)
}

#[test]
fn http3_requests_are_counted_as_the_server_counts_them() {
    let (srv, _dir, ca) = server(testkit::Reply::ok("hello", Duration::from_millis(5)));
    let url = srv.url("/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "400",
        "-c",
        "8",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(
        (&s["requests"], &s["ok"]),
        (&400.into(), &400.into()),
        "{s}"
    );
    assert_eq!(
        srv.counters.requests(),
        400,
        "the server counted what brink counted"
    );
    assert_eq!(s["bytes_in"], 400 * 5, "{s}");
    assert_eq!(
        r.result["target"]["protocol"], "h3",
        "{}",
        r.result["target"]
    );
    // Little's law: 8 streams in flight, each served in at least 5 ms.
    let mean = s["latency_ms"]["mean"].as_f64().unwrap_or(0.0);
    let rps = s["rps"].as_f64().unwrap_or(0.0);
    assert!(mean >= 5.0, "mean {mean} ms");
    let little = 8.0 / rps * 1000.0;
    assert!(
        (little - mean).abs() / mean < 0.25,
        "8 / {rps} req/s = {little} ms vs mean {mean} ms"
    );
    assert_eq!(
        srv.counters.connections(),
        8,
        "one QUIC connection per slot"
    );

    // --connections: the 8 streams share 2 connections.
    let before = srv.counters.connections();
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "200",
        "-c",
        "8",
        "--connections",
        "2",
        "--no-history",
    ]);
    assert_eq!(r.result["summary"]["ok"], 200, "{}", r.result["summary"]);
    assert_eq!(srv.counters.connections() - before, 2);
}

#[test]
fn http3_event_streams_are_read_as_events() {
    let reply = testkit::Reply::Events {
        first: Duration::from_millis(20),
        every: Duration::from_millis(5),
        events: 6,
        slot: false,
    };
    let (srv, _dir, ca) = server(reply);
    let r = brink_json(&[
        "run",
        &srv.url("/feed"),
        "--http3",
        "--cacert",
        &ca,
        "-n",
        "20",
        "-c",
        "4",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["ok"], 20, "{s}");
    assert_eq!(s["stream"]["events"], 20 * 6, "{}", s["stream"]);
    let first = s["stream"]["first_event_ms"]["p50"].as_f64().unwrap_or(0.0);
    assert!(
        first >= 20.0,
        "first event after the server's 20 ms: {first}"
    );
}

#[test]
fn http3_handshake_failures_and_silence_are_named_and_bounded() {
    // Its verdict is a time bound: taken before the clock starts, held to the end.
    let _cpu = crate::support::cpu_light();
    let (srv, _dir, _ca) = server(testkit::Reply::ok("hello", Duration::ZERO));
    // The server's certificate is not trusted: a TLS failure, named.
    let r = brink_json(&[
        "run",
        &srv.url("/"),
        "--http3",
        "-n",
        "3",
        "-c",
        "1",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["errors_by_kind"]["tls"], 3, "{s}");
    assert_eq!(srv.counters.requests(), 0);

    // A UDP port that answers nothing: each connection gives up at --connect-timeout.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
    let port = silent.local_addr().expect("addr").port();
    let started = std::time::Instant::now();
    let url = format!("https://127.0.0.1:{port}/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "2",
        "-c",
        "1",
        "--connect-timeout",
        "300ms",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["errors_by_kind"]["connect_timeout"], 2, "{s}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A UDP port that answers every datagram with a burst of garbage (no QUIC at all, some of
    // it shaped like long headers): ignored, each connection still bounded by the timeout.
    let noisy = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
    let port = noisy.local_addr().expect("addr").port();
    noisy
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout set");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let over = done.clone();
    let answering = std::thread::spawn(move || {
        let (mut buf, until) = (
            [0u8; 2048],
            std::time::Instant::now() + Duration::from_secs(20),
        );
        let mut sent = 0u64;
        while std::time::Instant::now() < until && !over.load(std::sync::atomic::Ordering::Relaxed)
        {
            if let Ok((_, from)) = noisy.recv_from(&mut buf) {
                for i in 0..8u8 {
                    let mut junk = vec![0xc0 | i; 1200];
                    junk[1..5].copy_from_slice(&[0, 0, 0, 1]);
                    let _ = noisy.send_to(&junk, from);
                    sent += 1;
                }
            }
        }
        sent
    });
    let started = std::time::Instant::now();
    let url = format!("https://127.0.0.1:{port}/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "2",
        "-c",
        "1",
        "--connect-timeout",
        "300ms",
        "--no-history",
    ]);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let s = &r.result["summary"];
    assert_eq!(
        (&s["requests"], &s["errors_by_kind"]["connect_timeout"]),
        (&2.into(), &2.into()),
        "{s}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(answering.join().unwrap_or(0) > 0, "the garbage was sent");
}

#[test]
fn http3_flags_that_do_not_fit_are_refused() {
    for (args, says) in [
        (
            &["run", "http://127.0.0.1:1/", "--http3"][..],
            "--http3 needs an https:// URL",
        ),
        (
            &["run", "https://127.0.0.1:1/", "--http3", "--http2"][..],
            "HTTP/2 and HTTP/3 are two protocols",
        ),
        (
            &["run", "wss://127.0.0.1:1/", "--http3"][..],
            "--http3 applies to https:// URLs",
        ),
        (
            &["run", "grpcs://127.0.0.1:1", "--http3", "--call", "a.B/C"][..],
            "--http3 applies to https:// URLs; gRPC",
        ),
    ] {
        let r = brink_json(args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
}

#[test]
fn a_plan_speaks_http3_with_http3_true_in_the_open_model() {
    let (srv, dir, ca) = server(testkit::Reply::ok("ok", Duration::from_millis(1)));
    let plan = dir.path().join("h3.yaml");
    let text = format!(
        "target: {}\ndefaults:\n  http3: true\nscenarios:\n  - name: paced\n    load: {{ rate: 200/s, duration: 2s, connections: 8 }}\n    requests: [ {{ name: get, path: /x }} ]\n",
        srv.url("")
    );
    std::fs::write(&plan, text).expect("plan written");
    let path = plan.display().to_string();
    let r = brink_json(&["run", &path, "--cacert", &ca, "--no-history"]);
    let s = &r.result["summary"];
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let ok = s["ok"].as_u64().unwrap_or(0);
    assert!((390..=401).contains(&ok), "200/s for 2 s: {s}");
    assert_eq!(
        srv.counters.requests(),
        ok,
        "the server counted what brink counted"
    );
    assert_eq!(
        r.result["target"]["protocol"], "h3",
        "{}",
        r.result["target"]
    );
    // The open model's schedule: every intended request sent and answered (how late they
    // went is a benchmark's question, not a test's on a shared machine).
    let sched = &s["schedule"];
    assert_eq!(
        (&sched["intended"], &sched["not_sent"]),
        (&ok.into(), &0.into()),
        "{sched}"
    );
}

/// Debian's caddy (HTTP/3 on by default), on a free port, its own CA for 127.0.0.1 (never
/// installed in the system's trust store: `skip_install_trust`, as caddy running as root
/// would otherwise do): `None` when caddy is not installed (a failure when
/// `BRINK_REQUIRE_CADDY` is set).
fn caddy() -> Option<(crate::support::Killed, tempfile::TempDir, u16)> {
    let found = std::process::Command::new("caddy")
        .arg("version")
        .output()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("BRINK_REQUIRE_CADDY").is_none(),
            "caddy is required here but not installed"
        );
        eprintln!("caddy not installed: skipping");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    // A port free for UDP (HTTP/3) and TCP (HTTP/1.1 and HTTP/2) alike.
    let port = loop {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
        let port = udp.local_addr().expect("addr").port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            break port;
        }
    };
    let d = dir.path().display();
    let config = format!(
        "{{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n\tdefault_sni localhost\n\tstorage file_system {d}/data\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\nhttps://localhost:{port}, https://127.0.0.1:{port} {{\n\ttls internal\n\trespond \"hello\" 200\n}}\n"
    );
    let file = dir.path().join("Caddyfile");
    std::fs::write(&file, config).expect("Caddyfile written");
    let child = std::process::Command::new("caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&file)
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("caddy starts");
    let child = crate::support::Killed(child);
    // Ready once it answers over TCP.
    let t = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "caddy never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some((child, dir, port))
}

#[test]
fn caddy_answers_over_http3_and_http2_alike() {
    let Some((_caddy, dir, port)) = caddy() else {
        return;
    };
    let url = format!("https://127.0.0.1:{port}/");
    for proto in ["--http3", "--http2"] {
        let r = brink_json(&[
            "run",
            &url,
            proto,
            "-k",
            "-n",
            "300",
            "-c",
            "4",
            "--no-history",
        ]);
        let s = &r.result["summary"];
        assert_eq!(r.code, Some(0), "{proto}: {}{}", r.stdout, r.stderr);
        assert_eq!(
            (&s["requests"], &s["ok"]),
            (&300.into(), &300.into()),
            "{proto}: {s}"
        );
        assert_eq!(s["bytes_in"], 300 * 5, "{proto}: {s}");
        // Little's law: 4 in flight / throughput = mean latency.
        let mean = s["latency_ms"]["mean"].as_f64().unwrap_or(0.0);
        let little = 4.0 / s["rps"].as_f64().unwrap_or(1.0) * 1000.0;
        assert!(
            (little - mean).abs() / mean < 0.3,
            "{proto}: {little} ms vs mean {mean} ms"
        );
        let want = if proto == "--http3" { "h3" } else { "h2" };
        assert_eq!(r.result["target"]["protocol"], want);
    }
    // --http3=auto: caddy advertises HTTP/3 on its HTTP/2 answers (Alt-Svc h3=":PORT").
    let r = brink_json(&[
        "run",
        &url,
        "--http3=auto",
        "-k",
        "-n",
        "50",
        "--no-history",
    ]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let d = &r.result["target"]["discovered"];
    assert_eq!(
        (&d["asked_over"], &d["chose"], &d["port"]),
        (&"h2".into(), &"h3".into(), &port.into()),
        "{d}"
    );
    assert_eq!(r.result["target"]["protocol"], "h3");
    assert_eq!(r.result["summary"]["ok"], 50, "{}", r.result["summary"]);
    // Both in one command: a plan whose scenarios differ only in the protocol.
    let plan = dir.path().join("both.yaml");
    let text = format!(
        "target: {url}\nscenarios:\n  - name: over h2\n    http2: true\n    load: {{ connections: 4, requests: 200 }}\n    requests: [ {{ path: / }} ]\n  - name: over h3\n    http3: true\n    load: {{ connections: 4, requests: 200 }}\n    requests: [ {{ path: / }} ]\n"
    );
    std::fs::write(&plan, text).expect("plan written");
    let r = brink_json(&["run", &plan.display().to_string(), "-k", "--no-history"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let scenarios = r.result["scenarios"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let seen: Vec<(String, u64)> = scenarios
        .iter()
        .map(|sc| {
            let proto = sc["target"]["protocol"].as_str().unwrap_or("?").to_string();
            (proto, sc["summary"]["ok"].as_u64().unwrap_or(0))
        })
        .collect();
    assert_eq!(seen, [("h2".to_string(), 200), ("h3".to_string(), 200)]);
}

#[test]
fn a_server_rotating_connections_costs_no_errors_over_http3() {
    // GOAWAY every 10 requests: requests it never processed go again on a fresh connection,
    // counted once.
    let opts = testkit::Options {
        rotate_after: Some(10),
        ..testkit::Options::default()
    };
    let reply = testkit::Reply::ok("ok", Duration::from_millis(1));
    let handler: testkit::Handler = std::sync::Arc::new(move |_: &testkit::Req| reply.clone());
    let srv = testkit::serve_h3(opts, handler).expect("h3 server starts");
    let r = brink_json(&[
        "run",
        &srv.url("/"),
        "--http3",
        "-k",
        "-n",
        "300",
        "-c",
        "4",
        "--connections",
        "1",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(
        (&s["requests"], &s["ok"]),
        (&300.into(), &300.into()),
        "{s}"
    );
    assert_eq!(srv.counters.requests(), 300, "each request processed once");
    assert!(
        srv.counters.connections() >= 20,
        "{} connections",
        srv.counters.connections()
    );
}

/// A UDP server that answers every QUIC Initial with a Version Negotiation packet offering
/// only a version nobody speaks, for `for_` (RFC 9000 §17.2.1).
fn version_negotiation(for_: Duration) -> u16 {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
    let port = sock.local_addr().expect("addr").port();
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    std::thread::spawn(move || {
        let end = std::time::Instant::now() + for_;
        let mut buf = [0u8; 2048];
        while std::time::Instant::now() < end {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let p = &buf[..n];
            // A long header: flags, version, DCID length and DCID, SCID length and SCID.
            if n < 7 || p[0] & 0x80 == 0 {
                continue;
            }
            let dl = usize::from(p[5]);
            let Some(&sl) = p.get(6 + dl) else { continue };
            let Some(scid) = p.get(7 + dl..7 + dl + usize::from(sl)) else {
                continue;
            };
            let dcid = &p[6..6 + dl];
            let mut vn = vec![0x80 | 0x2a, 0, 0, 0, 0];
            vn.push(sl);
            vn.extend_from_slice(scid);
            vn.push(p[5]);
            vn.extend_from_slice(dcid);
            vn.extend_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
            let _ = sock.send_to(&vn, from);
        }
    });
    port
}

#[test]
fn a_server_speaking_no_common_quic_version_is_a_handshake_error() {
    let port = version_negotiation(Duration::from_secs(8));
    let url = format!("https://127.0.0.1:{port}/");
    let r = brink_json(&[
        "run",
        &url,
        "--http3",
        "-k",
        "-n",
        "3",
        "-c",
        "1",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["errors_by_kind"]["handshake"], 3, "{s}");
    assert!(!r.stdout.contains("refused"), "{}", r.stdout);
}
