//! Peers that connect to brink's own listeners and say nothing: hundreds of idle connections
//! to a worker's port, or to the live-metrics endpoint, with the descriptor limit low. They
//! must not make the accept loop spin, keep the coordinator out, or take the descriptors the
//! load needs.

use crate::prom::free_port;
use crate::support::Killed;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Opens up to `n` idle connections to `port` (each given a second to connect).
fn idle(port: u16, n: usize) -> Vec<TcpStream> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok())
        .collect()
}

/// CPU seconds process `pid` has used.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // utime and stime are fields 14 and 15; after "pid (comm)" they are the 12th and 13th.
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    ticks as f64 / 100.0
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// 300 idle connections to a worker whose descriptor limit is 256: its accept loop rests
/// instead of spinning, the idle connections are closed within seconds, and a coordinator
/// with the token still runs a load through it.
#[test]
fn idle_connections_cannot_keep_the_coordinator_from_a_worker() {
    let _cpu = crate::support::cpu_light();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "a-worker-token-0123456789\n").expect("token");
    let port = free_port();
    let brink = crate::support::held(assert_cmd::cargo::cargo_bin("brink"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 256 && exec {} worker --listen 127.0.0.1:{port} --token-file {}",
            brink.display(),
            token.display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("worker starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the worker says where");
    let worker = Killed(child);
    let pid = worker.0.id();

    let held = idle(port, 300);
    assert!(held.len() >= 256, "{} idle connections", held.len());
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_s(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_s(pid) - before;
    assert!(
        used < 0.5,
        "the worker used {used:.2} s of CPU in 2 s with idle peers"
    );

    let t = Instant::now();
    let out = Command::new(&brink)
        .args(["run", &srv.url("/"), "-n", "50", "-c", "2", "-q"])
        .args(["--worker", &format!("127.0.0.1:{port}"), "--token-file"])
        .arg(&token)
        .output()
        .expect("coordinator runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(srv.counters.requests(), 50);

    // Unauthenticated connections are closed after a few seconds; the worker lets them go.
    std::thread::sleep(Duration::from_secs(6));
    let fds = open_fds(pid);
    assert!(fds < 64, "the worker still holds {fds} descriptors");
    drop(held);
}

/// 330 idle connections to the live-metrics endpoint of a run whose descriptor limit is 300,
/// opening a connection per request: no connection the load makes fails for want of a
/// descriptor, because the endpoint keeps at most a few.
#[test]
fn idle_scrapers_cannot_take_the_loads_descriptors() {
    let _cpu = crate::support::cpu_exclusive();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let port = free_port();
    let brink = crate::support::held(assert_cmd::cargo::cargo_bin("brink"));
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n 300 && exec {} run {} -c 100 -d 4s --no-keepalive --metrics-listen 127.0.0.1:{port} --no-history -q --json {}",
            brink.display(),
            srv.url("/"),
            json.display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("brink runs");
    let mut run = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the endpoint never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = idle(port, 330);
    assert!(held.len() >= 300, "{} idle connections", held.len());
    let status = loop {
        if let Some(s) = run.0.try_wait().expect("status") {
            break s;
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(20),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(held);
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("a result")).expect("JSON");
    let s = &r["summary"];
    assert_eq!(status.code(), Some(0), "{s}");
    assert_eq!(
        s["errors"], 0,
        "no connection failed: {}",
        s["errors_by_kind"]
    );
    assert!(s["requests"].as_u64().unwrap_or(0) > 100, "{s}");
}
