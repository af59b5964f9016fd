//! `--http3=auto` (one request over HTTP/2 or HTTP/1.1 first; HTTP/3 when the server's
//! Alt-Svc advertises it on the same host, on the port it names) and `find --http3`. The
//! asking server is testkit's raw TLS one (it picks HTTP/1.1), the HTTP/3 one testkit's quinn
//! + h3 server; caddy's own Alt-Svc is checked in `http3.rs`.

use crate::support::brink_json;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

fn h3_server() -> testkit::Server {
    let reply = testkit::Reply::ok("h3", Duration::from_millis(2));
    let handler: testkit::Handler = Arc::new(move |_: &testkit::Req| reply.clone());
    testkit::serve_h3(testkit::Options::default(), handler).expect("h3 server starts")
}

/// A TLS server answering every request with `alt_svc` (when given) as its Alt-Svc header
/// (several fields when it holds a line break).
fn asking_server(alt_svc: Option<&str>) -> testkit::Server {
    let header = alt_svc.map_or(String::new(), |v| {
        v.lines().map(|f| format!("Alt-Svc: {f}\r\n")).collect()
    });
    let bytes = format!("HTTP/1.1 200 OK\r\n{header}Content-Length: 2\r\n\r\nh1").into_bytes();
    let handler: testkit::Handler = Arc::new(move |_: &testkit::Req| testkit::Reply::Raw {
        bytes: bytes.clone(),
        close: false,
    });
    let opts = testkit::Options {
        tls: true,
        ..Default::default()
    };
    testkit::serve_with(opts, handler).expect("TLS server starts")
}

fn auto(url: &str) -> (Value, String) {
    let r = brink_json(&[
        "run",
        url,
        "--http3=auto",
        "-k",
        "-n",
        "20",
        "-c",
        "2",
        "--connect-timeout",
        "500ms",
        "--no-history",
    ]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert_eq!(r.result["summary"]["ok"], 20, "{}", r.result["summary"]);
    (r.result["target"].clone(), r.stdout)
}

#[test]
fn http3_advertised_on_the_same_host_is_taken() {
    let h3 = h3_server();
    let port = h3.addr.port();
    let asking = asking_server(Some(&format!("h3-29=\":1\", h3=\":{port}\"; ma=60")));
    let (target, out) = auto(&asking.url("/"));
    assert_eq!(target["protocol"], "h3", "{target}");
    let d = &target["discovered"];
    assert_eq!(
        (&d["asked_over"], &d["status"], &d["chose"], &d["port"]),
        (&"http/1.1".into(), &200.into(), &"h3".into(), &port.into()),
        "{d}"
    );
    assert!(d["ms"].as_f64().is_some_and(|ms| ms > 0.0), "{d}");
    assert_eq!(h3.counters.requests(), 20, "the load went over HTTP/3");
    assert_eq!(asking.counters.requests(), 1, "one request asked");
    assert!(
        out.contains(&format!("running over HTTP/3 on UDP port {port}")),
        "{out}"
    );
}

#[test]
fn the_first_entry_that_answers_is_taken_in_any_spelling() {
    let h3 = h3_server();
    let port = h3.addr.port();
    // Nothing on this UDP port: its handshake times out, the next entry is tried.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
    let dead = dead.local_addr().expect("addr").port();
    for alt_svc in [
        format!("h3=\":{dead}\", h3=\":{port}\""),
        format!("h2=\":443\"\nh3=\"127.0.0.1:{port}\"; ma=60"),
    ] {
        let asking = asking_server(Some(&alt_svc));
        let (target, _) = auto(&asking.url("/"));
        assert_eq!(target["protocol"], "h3", "{alt_svc}: {target}");
        assert_eq!(target["discovered"]["port"], port, "{target}");
    }
    assert_eq!(h3.counters.requests(), 40, "both runs went over HTTP/3");
}

#[test]
fn without_http3_taken_the_run_stays_where_it_asked_and_says_why() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound");
    let silent = silent.local_addr().expect("addr").port();
    let cases = [
        (None, None),
        (Some("clear".to_string()), None),
        (
            Some("h3=\"elsewhere.example:443\"".to_string()),
            Some("another host"),
        ),
        (Some("h3=\":0\"".to_string()), Some("not a port")),
        (
            Some(format!("h3=\":{silent}\"")),
            Some("no QUIC handshake within"),
        ),
    ];
    for (alt_svc, why) in cases {
        let asking = asking_server(alt_svc.as_deref());
        let (target, out) = auto(&asking.url("/"));
        assert_eq!(target["protocol"], "http/1.1", "{alt_svc:?}: {target}");
        let d = &target["discovered"];
        assert_eq!(d["chose"], "http/1.1", "{d}");
        assert!(d.get("port").is_none(), "{d}");
        assert_eq!(
            asking.counters.requests(),
            21,
            "{alt_svc:?}: asked once, then loaded"
        );
        match why {
            None => assert!(out.contains("(no HTTP/3 advertised)"), "{out}"),
            Some(why) => {
                let said = d["not_taken"][0].as_str().unwrap_or_default();
                assert!(said.contains(why), "{alt_svc:?}: {d}");
                assert!(out.contains("not taken: ") && out.contains(why), "{out}");
            }
        }
    }
}

#[test]
fn a_hostile_alt_svc_is_kept_escaped_and_short() {
    // (Control bytes in a header value are an HTTP/1.1 protocol error before any of this.)
    let hostile = format!("h3=\":1\"<script>alert(1)</script>{}", "x".repeat(5000));
    let asking = asking_server(Some(&hostile));
    let (target, out) = auto(&asking.url("/"));
    let kept = target["discovered"]["alt_svc"].as_str().unwrap_or_default();
    assert!(kept.len() <= 203, "{} characters kept", kept.len());
    assert!(
        kept.starts_with("h3=\":1\"<script>"),
        "kept as sent: {kept}"
    );
    assert!(kept.ends_with("..."), "{kept}");
    assert!(
        !out.contains(&"x".repeat(300)),
        "the terminal shows it cut short"
    );
    // ":1" followed by junk is no port: nothing is taken from it.
    assert_eq!(target["protocol"], "http/1.1", "{target}");
}

#[test]
fn auto_needs_an_https_url_and_an_answer() {
    let r = brink_json(&["run", "http://127.0.0.1:9/", "--http3=auto", "-n", "1"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("--http3=auto needs an https:// URL"),
        "{}",
        r.stderr
    );
    // Nothing listens: the asking fails, named, before any load.
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bound");
    let port = free.local_addr().expect("addr").port();
    drop(free);
    let url = format!("https://127.0.0.1:{port}/");
    let r = brink_json(&["run", &url, "--http3=auto", "-k", "-n", "1"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--http3=auto: asking"), "{}", r.stderr);
}

#[test]
fn find_searches_over_http3() {
    let h3 = h3_server();
    let (code, r, text) = crate::find::find(
        &[
            &h3.url("/"),
            "--http3",
            "-k",
            "--slo",
            "p99<500ms",
            "--step",
            "2s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
            "--to",
            "4",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(0), "{text}");
    let f = &r["find"];
    let steps = f["steps"].as_array().cloned().unwrap_or_default();
    assert!(steps.len() >= 2, "{f}");
    assert!(
        steps
            .iter()
            .all(|s| s["requests"].as_u64() > Some(0) && s["errors"] == 0),
        "{f}"
    );
    assert_eq!(r["target"]["protocol"], "h3", "{}", r["target"]);
    crate::ordinary::assert_littles_law(f, false, &text);
    assert!(h3.counters.requests() > 0, "the search went over HTTP/3");
}

/// A header listing one silent port thousands of times, and many silent ports: each port is
/// tried once, at most three are tried, and the whole discovery takes one connect timeout;
/// what the result keeps of it stays short.
#[test]
fn many_entries_cost_one_connect_timeout_at_most() {
    let _cpu = crate::support::cpu_shared();
    let socks: Vec<std::net::UdpSocket> = (0..6)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").expect("udp bound"))
        .collect();
    let ports: Vec<u16> = socks
        .iter()
        .map(|s| s.local_addr().expect("addr").port())
        .collect();
    let same = format!("h3=\":{}\"", ports[0]);
    let one_port = vec![same; 4500].join(", ");
    let many_ports = ports
        .iter()
        .map(|p| format!("h3=\":{p}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let junk = (0..40)
        .map(|i| format!("h3=\"host{i}.example:443\""))
        .collect::<Vec<_>>()
        .join(", ");
    for (name, header, tried) in [
        ("one port 4,500 times", one_port, 1),
        ("six silent ports", many_ports, 3),
        ("forty other hosts", junk, 0),
    ] {
        let asking = asking_server(Some(&header));
        let t = std::time::Instant::now();
        let (target, _) = auto(&asking.url("/"));
        let took = t.elapsed();
        // One 500 ms connect timeout for all the tries, and the 20 requests themselves.
        assert!(took < Duration::from_millis(2500), "{name}: {took:?}");
        let d = &target["discovered"];
        assert_eq!(target["protocol"], "http/1.1", "{name}: {d}");
        let said: Vec<&str> = d["not_taken"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let handshakes = said
            .iter()
            .filter(|w| w.contains("no QUIC handshake"))
            .count();
        assert!(handshakes <= tried, "{name}: {said:?}");
        assert!(said.len() <= 8, "{name}: {} reasons kept", said.len());
        if name == "six silent ports" {
            assert!(said.iter().any(|w| w.contains("not tried")), "{said:?}");
        }
        if name == "forty other hosts" {
            assert_eq!(
                said.last().copied(),
                Some("33 more entries not taken"),
                "{said:?}"
            );
        }
    }
}
