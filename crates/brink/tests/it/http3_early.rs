//! HTTP/3 0-RTT (`--0rtt`): connections that resume a session carry requests before their
//! handshake ends, counted as such; methods a replay could repeat wait for the handshake unless
//! `--0rtt=all`; early data the server refuses is sent again and counted once; the flag is
//! refused where it does not apply. The server is testkit's quinn + h3 one, which offers 0-RTT
//! in its session tickets.

use crate::support::brink_json;
use serde_json::Value;

fn server(opts: testkit::Options) -> (testkit::Server, tempfile::TempDir, String) {
    let reply = testkit::Reply::ok("early", std::time::Duration::ZERO);
    let handler: testkit::Handler = std::sync::Arc::new(move |_: &testkit::Req| reply.clone());
    let srv = testkit::serve_h3(opts, handler).expect("h3 server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, srv.cert_pem.as_deref().unwrap_or_default()).expect("ca written");
    let ca = ca.display().to_string();
    (srv, dir, ca)
}

/// `n` requests one after another, each on a connection of its own, with `flags`.
fn run(url: &str, ca: &str, n: u64, flags: &[&str]) -> Value {
    let n = n.to_string();
    let mut args = vec![
        "run",
        url,
        "--http3",
        "--cacert",
        ca,
        "--no-keepalive",
        "-c",
        "1",
        "-n",
        &n,
        "--no-history",
    ];
    args.extend_from_slice(flags);
    let r = brink_json(&args);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let s = r.result["summary"].clone();
    assert_eq!(s["requests"].to_string(), n, "{s}");
    assert_eq!(s["ok"].to_string(), n, "{s}");
    s
}

fn early(s: &Value) -> (u64, u64, u64) {
    let z = &s["zero_rtt"];
    let n = |k: &str| z[k].as_u64().unwrap_or(u64::MAX);
    (n("connections"), n("requests"), n("refused"))
}

#[test]
fn resumed_connections_send_gets_as_early_data() {
    let (srv, _dir, ca) = server(testkit::Options::default());
    let s = run(&srv.url("/"), &ca, 20, &["--0rtt"]);
    let (conns, requests, refused) = early(&s);
    // The first connection has no session to resume; the others each carried their one GET
    // before the handshake ended (each waited for its server's next ticket before closing).
    assert!((17..=19).contains(&conns), "{s}");
    assert_eq!((requests, refused), (conns, 0), "{s}");
    assert_eq!(s["connections_opened"], 20, "{s}");
    assert_eq!(
        srv.counters.requests(),
        20,
        "the server answered every one once"
    );

    // Without the flag no request goes early and the summary says nothing of 0-RTT.
    let s = run(&srv.url("/"), &ca, 5, &[]);
    assert!(s.get("zero_rtt").is_none(), "{s}");

    // Asked with keep-alive: the one connection never resumes, and the summary says zero.
    let r = brink_json(&[
        "run",
        &srv.url("/"),
        "--http3",
        "--cacert",
        &ca,
        "-c",
        "1",
        "-n",
        "5",
        "--0rtt",
        "--no-history",
    ]);
    let s = &r.result["summary"];
    assert_eq!(s["ok"], 5, "{s}");
    assert_eq!(early(s), (0, 0, 0), "{s}");
}

#[test]
fn a_post_waits_for_the_handshake_unless_all_methods_are_asked() {
    let (srv, _dir, ca) = server(testkit::Options::default());
    let post = ["-m", "POST", "--body", "order=1"];
    let s = run(&srv.url("/"), &ca, 12, &[&["--0rtt"][..], &post].concat());
    let (conns, requests, _) = early(&s);
    assert!(conns >= 8, "connections still resume: {s}");
    assert_eq!(requests, 0, "a POST never goes as early data: {s}");

    let s = run(
        &srv.url("/"),
        &ca,
        12,
        &[&["--0rtt=all"][..], &post].concat(),
    );
    let (conns, requests, refused) = early(&s);
    assert!(conns >= 8, "{s}");
    assert_eq!((requests, refused), (conns, 0), "{s}");
    assert_eq!(
        srv.counters.requests(),
        24,
        "each POST reached the server once"
    );
}

#[test]
fn early_data_the_server_refuses_is_sent_again_and_counted_once() {
    let opts = testkit::Options {
        refuse_early_data: true,
        ..Default::default()
    };
    let (srv, _dir, ca) = server(opts);
    let s = run(&srv.url("/"), &ca, 10, &["--0rtt"]);
    let (conns, requests, refused) = early(&s);
    assert!(conns >= 6, "{s}");
    assert_eq!(
        (requests, refused),
        (conns, conns),
        "every early GET refused: {s}"
    );
    assert_eq!(s["errors"], 0, "{s}");
    assert_eq!(
        srv.counters.requests(),
        10,
        "each answered once, after its handshake"
    );
}

#[test]
fn zero_rtt_is_refused_off_http3() {
    let r = brink_json(&["run", "https://127.0.0.1:9/", "--0rtt", "-n", "1"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--0rtt (0rtt: in a plan) applies to HTTP/3"),
        "{}",
        r.stderr
    );
    let r = brink_json(&["run", "https://127.0.0.1:9/", "--http3", "--0rtt=some"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

#[test]
fn a_plan_asks_for_0rtt_and_http3_auto_by_name() {
    let (srv, dir, ca) = server(testkit::Options::default());
    let plan = dir.path().join("early.yaml");
    let text = format!(
        "target: {}\ndefaults:\n  http3: true\n  0rtt: true\n  keepalive: false\nscenarios:\n  - name: early gets\n    load: {{ connections: 1, requests: 10 }}\n    requests: [ {{ path: / }} ]\n",
        srv.url("/")
    );
    std::fs::write(&plan, text).expect("plan written");
    let r = brink_json(&[
        "run",
        &plan.display().to_string(),
        "--cacert",
        &ca,
        "--no-history",
    ]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let s = &r.result["scenarios"][0]["summary"];
    let (conns, requests, refused) = early(s);
    assert!(conns >= 6, "{s}");
    assert_eq!((requests, refused), (conns, 0), "{s}");

    // validate says what each scenario speaks.
    let v = crate::support::held(assert_cmd::Command::cargo_bin("brink"))
        .expect("binary built")
        .args(["validate", &plan.display().to_string()])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .expect("validate ran");
    let out = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "{out}");
    assert!(out.contains("early gets: https://127.0.0.1:"), "{out}");
    assert!(out.contains("/ over h3, mix of 1"), "{out}");

    // A misspelt value names its place.
    std::fs::write(&plan, "target: https://127.0.0.1:1\nscenarios:\n  - name: a\n    http3: sometimes\n    requests: [ { path: / } ]\n").expect("plan written");
    let r = brink_json(&["run", &plan.display().to_string(), "--no-history"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("early.yaml:4:12: http3: 'sometimes' is not true, false or auto"),
        "{}",
        r.stderr
    );
}
