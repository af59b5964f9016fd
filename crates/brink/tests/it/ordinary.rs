//! Servers nobody here wrote, as a new user points brink at them: Python's stock
//! `http.server` (HTTP/1.0, a new connection per request, a listen backlog of 5) and a
//! multi-process nginx. The capacity answer must agree with Little's law on every step
//! (connections / throughput = mean latency), with itself (one capacity, throughput words that
//! match the steps) and with wrk's throughput at the same connections.

use crate::find::find;
use crate::support::{self, Killed};
use serde_json::Value;
use std::io::BufRead;
use std::time::Duration;

/// Python's `http.server` as shipped: `python3 -m http.server` serving a small file.
pub(crate) struct StockPython {
    _child: Killed,
    _dir: tempfile::TempDir,
    pub(crate) url: String,
}

fn stock_python() -> StockPython {
    stock_python_serving(&[("index.html", "hello\n")])
}

/// Python's `http.server` serving these files (name, content) from a fresh directory.
pub(crate) fn stock_python_serving(files: &[(&str, &str)]) -> StockPython {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let mut child = std::process::Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 runs");
    let stdout = child.stdout.take().expect("piped");
    let child = Killed(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("it says where it serves");
    // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    StockPython {
        _child: child,
        _dir: dir,
        url: format!("http://127.0.0.1:{port}/"),
    }
}

/// Every closed-model step agrees with Little's law (mean latency within 10% of connections /
/// throughput, checked here on the step's own figures) or names a cause brink can see; with
/// `strict` (a server without stalls), every one agrees.
pub(crate) fn assert_littles_law(f: &Value, strict: bool, text: &str) {
    if f["by"] != "connections" {
        return;
    }
    for s in f["steps"].as_array().expect("steps") {
        if s["interrupted"] == true || s["rps"].as_f64().unwrap_or(0.0) == 0.0 {
            continue;
        }
        let gap = &s["little"];
        let (n, x, mean) = (
            s["level"].as_f64().unwrap(),
            s["rps"].as_f64().unwrap(),
            s["mean"].as_f64().unwrap(),
        );
        let expected = n / x * 1000.0;
        if gap.is_null() {
            assert!(
                (mean / expected - 1.0).abs() <= 0.10,
                "{n} connections at {x:.0} req/s: mean {mean:.2} ms against {expected:.2} ms, and no word of it\n{text}"
            );
        } else {
            assert!(!strict, "a step disagreed with Little's law: {gap}\n{text}");
            assert_ne!(gap["cause"]["kind"], "unexplained", "{gap}\n{text}");
            assert_eq!(gap["mean_ms"].as_f64(), Some(mean), "one mean: {gap} {s}");
            assert!(
                text.contains("Little's law: connections / throughput is"),
                "{text}"
            );
        }
    }
}

/// The capacity lines agree with the steps: the capacity is the maximum sustainable level's
/// throughput, and throughput "stays near" its peak only if it did.
fn assert_one_capacity(f: &Value, text: &str) {
    let steps = f["steps"].as_array().unwrap();
    let max = &f["max_sustainable"];
    let rps = max["rps"].as_f64().expect("a maximum sustainable level");
    let capacity = text
        .lines()
        .find(|l| l.starts_with(" Capacity: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        capacity.contains(&format!(" {} req/s", results::fmt::fmt_rate(rps))),
        "{capacity}\n{text}"
    );
    assert_eq!(text.matches(" Capacity: ").count(), 1, "{text}");
    let mut by_level: Vec<&Value> = steps
        .iter()
        .filter(|s| s["ok_rps"].as_f64() > Some(0.0))
        .collect();
    by_level.sort_by(|a, b| {
        a["level"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["level"].as_f64().unwrap())
    });
    let peak = by_level
        .iter()
        .map(|s| s["ok_rps"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let top = by_level.last().unwrap()["ok_rps"].as_f64().unwrap();
    if let Some(reading) = text.lines().find(|l| l.starts_with("reading it:")) {
        if top < 0.9 * peak {
            assert!(
                reading.contains("throughput fell from"),
                "{reading}\n{text}"
            );
            assert!(!reading.contains("stays near"), "{reading}");
        } else {
            assert!(reading.contains("stays near"), "{reading}\n{text}");
        }
    }
}

/// wrk's requests per second at `conns` connections for `secs` seconds; `None` (the test
/// skips the comparison) without wrk, unless CI requires it: then a wrk that is missing, or
/// whose output has no figure to read, fails the test rather than skip the comparison.
pub(crate) fn wrk_rps(url: &str, conns: u32, secs: u32) -> Option<f64> {
    let required = std::env::var_os("BRINK_REQUIRE_WRK").is_some();
    let out = std::process::Command::new("wrk")
        .args(["-t1", &format!("-c{conns}"), &format!("-d{secs}s"), url])
        .output();
    let Ok(out) = out else {
        assert!(!required, "wrk is required here but not installed");
        eprintln!("wrk not installed: skipping the comparison");
        return None;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok());
    assert!(
        rps.is_some() || !required,
        "wrk gave no Requests/sec: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rps
}

#[test]
fn stock_python_server_gets_one_capacity_that_holds() {
    let _cpu = support::cpu_exclusive();
    let py = stock_python();
    let (code, r, text) = find(
        &[
            &py.url,
            "--slo",
            "p99<50ms",
            "--slo",
            "errors<0.1%",
            "--step",
            "4s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "128",
            "--precision",
            "0.15",
            "--no-history",
        ],
        Duration::from_secs(240),
    );
    let f = &r["find"];
    assert!(code.is_some(), "{text}");
    assert_littles_law(f, false, &text);
    assert_one_capacity(f, &text);
    // Its backlog of 5 drops SYNs when many connect at once: the 1 s retransmission is part of
    // what those requests waited for, so the objectives break long before 128 connections.
    let level = f["max_sustainable"]["level"].as_f64().unwrap();
    assert!(level < 128.0, "{text}");
    let failed = f["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["pass"] == false)
        .expect("a level failed");
    assert!(
        failed["p99"].as_f64().unwrap() > 50.0,
        "the first failing step: {failed}\n{text}"
    );
    // The server's own throughput moves with the machine, and not always one way (its
    // threads fight for the GIL: 1,100 req/s at 1 connection, 450 at 2; 1,332 to 1,826
    // across one CI search, 445 to 873 in another with a release build beside it; brink's
    // two runs at one level seconds apart once read 654 and 520 while wrk's read 499 and
    // 486). So the search's figure, a minute old, is not held to wrk's now: brink and wrk
    // run in turn at the level found, three rounds of 3 s, and the median of the rounds'
    // ratios (each pair seconds apart, so a drift between rounds cancels) is within 15%.
    let conns = level.to_string();
    let mut ratios = Vec::new();
    for _ in 0..3 {
        let ran = support::brink_json(&["run", &py.url, "-c", &conns, "-d", "3s", "--no-history"]);
        assert!(ran.code.is_some(), "{}", ran.stderr);
        let ours = ran.result["summary"]["rps"].as_f64().unwrap();
        if let Some(wrk) = wrk_rps(&py.url, level as u32, 3) {
            ratios.push((ours / wrk, ours, wrk));
        }
    }
    if !ratios.is_empty() {
        ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
        let median = ratios[ratios.len() / 2].0;
        assert!(
            (1.0 / 1.15..=1.15).contains(&median),
            "brink/wrk req/s at {level} connections, by round (ratio, brink, wrk): {ratios:?}\n{text}"
        );
    }
}

#[test]
fn a_run_rate_is_over_its_schedule_not_its_grace() {
    let _cpu = support::cpu_exclusive();
    let py = stock_python();
    let ran = support::brink_json(&["run", &py.url, "-c", "64", "-d", "3s", "--no-history"]);
    let s = &ran.result["summary"];
    assert!(ran.code.is_some(), "{}", ran.stderr);
    let secs = s["duration_s"].as_f64().unwrap();
    assert!(
        (secs - 3.0).abs() < 0.01,
        "rates are over the 3 s schedule: {s}"
    );
    let requests = s["requests"].as_u64().unwrap();
    let in_grace = s["in_grace"].as_u64().unwrap();
    let rps = s["rps"].as_f64().unwrap();
    assert!(
        ((requests - in_grace) as f64 / 3.0 - rps).abs() < 1.0,
        "{s}"
    );
    if in_grace > 0 {
        assert!(ran.stdout.contains("ended in the "), "{}", ran.stdout);
        assert!(s["grace_s"].as_f64().unwrap() > 0.0, "{s}");
    }
    // Requests that opened their connection waited for it: latency covers it, service time
    // does not, and the closed-model table shows both.
    assert!(
        s["latency_ms"]["mean"].as_f64() >= s["service_time_ms"]["mean"].as_f64(),
        "{s}"
    );
    assert!(ran.stdout.contains("\n  service time "), "{}", ran.stdout);
}

/// A stock multi-process nginx (a master and `workers` workers) answering `ok` on a port of
/// this machine; stopped on drop. `None` without nginx, unless CI requires it.
pub(crate) struct Nginx {
    child: std::process::Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// The master's process id (what a user has at hand).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nginx {
    /// A fast shutdown through the master (SIGTERM), so its workers go with it: killing the
    /// master outright would leave them running.
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn nginx(workers: u32) -> Option<Nginx> {
    let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(bin) = bin else {
        assert!(
            std::env::var_os("BRINK_REQUIRE_NGINX").is_none(),
            "nginx is required here but not installed"
        );
        eprintln!("nginx not installed: skipping");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let d = dir.path().display();
    // `/` is a small file; `/limited/` the same behind a shared limit of 2,000 requests a
    // second that queues what comes faster (limit_req with a burst): a service of known
    // capacity whose latency past it is connections / 2,000 s.
    std::fs::create_dir_all(dir.path().join("www/limited")).unwrap();
    std::fs::write(dir.path().join("www/index.html"), "ok\n").unwrap();
    std::fs::write(dir.path().join("www/limited/index.html"), "ok\n").unwrap();
    let conf = format!(
        "daemon off; master_process on; worker_processes {workers}; pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  limit_req_zone $host zone=all:1m rate=2000r/s;
  server {{
    listen 127.0.0.1:{port}; root {d}/www;
    location /limited/ {{ limit_req zone=all burst=100000; }}
  }}
}}
"
    );
    let path = dir.path().join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let child = std::process::Command::new(bin)
        .args(["-p", &d.to_string(), "-c", path.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nginx starts");
    let ng = Nginx {
        child,
        url: format!("http://127.0.0.1:{port}/"),
        _dir: dir,
    };
    let t = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "nginx did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(ng)
}

#[test]
fn multi_process_nginx_gets_one_capacity_that_holds() {
    let _cpu = support::cpu_light();
    let Some(ng) = nginx(2) else { return };
    let url = format!("{}limited/", ng.url);
    let (code, r, text) = find(
        &[
            &url,
            "--slo",
            "p99<20ms",
            "--step",
            "3s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--to",
            "128",
            "--no-history",
        ],
        Duration::from_secs(240),
    );
    let f = &r["find"];
    assert!(code.is_some(), "{text}");
    // A queue in front of a fixed rate: N connections wait N / 2,000 s, exactly.
    assert_littles_law(f, true, &text);
    assert_one_capacity(f, &text);
    let level = f["max_sustainable"]["level"].as_f64().unwrap();
    let sustained = f["max_sustainable"]["rps"].as_f64().unwrap();
    // p99 < 20 ms holds up to about 40 connections (20 ms at 2,000 req/s).
    assert!((30.0..=42.0).contains(&level), "{text}");
    assert!(support::rel(sustained, 2000.0) < 0.05, "{text}");
    if let Some(wrk) = wrk_rps(&url, level as u32, 3) {
        assert!(
            support::rel(sustained, wrk) < 0.05,
            "brink {sustained:.0} req/s at {level} connections, wrk {wrk:.0}\n{text}"
        );
    }
}

/// The CPU seconds of `pid` so far (utime + stime), from /proc.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, r)| r.split_whitespace().collect());
    let f = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (f(14) + f(15)) / 100.0
}

/// The children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok())
                == Some(pid)
        })
        .collect()
}

#[test]
fn observing_nginx_s_master_sums_its_workers() {
    let _cpu = support::cpu_exclusive();
    let Some(ng) = nginx(2) else { return };
    let workers = children(ng.pid());
    assert_eq!(workers.len(), 2, "{workers:?}");
    let before: f64 = workers.iter().map(|&p| cpu_s(p)).sum();
    let t = std::time::Instant::now();
    let pid = format!("pid={}", ng.pid());
    let ran = support::brink_json(&[
        "run",
        &ng.url,
        "-c",
        "8",
        "-d",
        "4s",
        "--observe",
        &pid,
        "--no-history",
    ]);
    let wall = t.elapsed().as_secs_f64();
    let used: f64 = workers.iter().map(|&p| cpu_s(p)).sum::<f64>() - before;
    let s = &ran.result["scenarios"][0];
    let seen = s["observed_sources"].to_string();
    assert!(
        seen.contains("(nginx) and 2 descendants (nginx x2)"),
        "{seen}\n{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("descendants (nginx x2)"),
        "{}",
        ran.stdout
    );
    // What the workers used, as /proc says, against what brink observed of the master's tree.
    let truth = used / wall * 100.0;
    let mean = s["observed"]["srv cpu"]["mean"].as_f64().unwrap();
    assert!(truth > 10.0, "the workers worked: {truth:.0}%");
    assert!(
        (mean - truth).abs() < truth * 0.35 + 10.0,
        "observed {mean:.0}% of a core, the workers used {truth:.0}%"
    );
}

#[test]
fn a_cgroup_is_observed_whole() {
    // A cgroup v2 of our own with a busy process in it; skipped where this test may not make
    // one (not root, no cgroup v2 mount).
    let mount = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.starts_with("cgroup2 "))
                .then(|| left.split_whitespace().nth(4).map(str::to_string))
                .flatten()
        });
    // Root may make a cgroup: CI requires it (BRINK_REQUIRE_CPU_LIMIT), so this cannot skip.
    let required = std::env::var_os("BRINK_REQUIRE_CPU_LIMIT").is_some();
    let Some(mount) = mount else {
        assert!(
            !required,
            "no cgroup v2 mount, and a cgroup is required here"
        );
        eprintln!("no cgroup v2 mount: skipping");
        return;
    };
    let name = format!("brink-test-{}", std::process::id());
    let dir = std::path::Path::new(&mount).join(&name);
    if let Err(e) = std::fs::create_dir(&dir) {
        assert!(!required, "cannot make a cgroup under {mount}: {e}");
        eprintln!("cannot make a cgroup under {mount}: skipping");
        return;
    }
    let _cpu = support::cpu_exclusive();
    let mut spin = std::process::Command::new("python3")
        .args([
            "-c",
            "import time\nt=time.time()\nwhile time.time()-t<8: pass",
        ])
        .spawn()
        .unwrap();
    let moved = std::fs::write(dir.join("cgroup.procs"), spin.id().to_string());
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let spec = format!("cgroup={name}");
    let ran = support::brink_json(&[
        "run",
        &srv.url("/"),
        "-c",
        "1",
        "-d",
        "3s",
        "--observe",
        &spec,
        "--no-history",
    ]);
    let _ = spin.kill();
    let _ = spin.wait();
    let _ = std::fs::remove_dir(&dir);
    moved.expect("the busy process moves into the test's cgroup");
    let s = &ran.result["scenarios"][0];
    assert!(
        s["observed_sources"].to_string().contains(&name),
        "{}",
        s["observed_sources"]
    );
    let mean = s["observed"]["srv cpu"]["mean"].as_f64().unwrap();
    assert!(
        mean > 40.0,
        "a spinning process: {mean:.0}% of a core\n{}",
        ran.stdout
    );
}

/// Python's threading `http.server` with 4 slots of 20 ms (a semaphore): it can serve at
/// most 200 req/s, and asked for more it queues the rest without bound.
struct Slotted {
    _child: Killed,
    url: String,
}

fn slotted_python() -> Slotted {
    let script = [
        "import http.server, threading, time",
        "slots = threading.Semaphore(4)",
        "class H(http.server.BaseHTTPRequestHandler):",
        "    protocol_version = 'HTTP/1.1'",
        "    disable_nagle_algorithm = True",
        "    def do_GET(self):",
        "        with slots: time.sleep(0.02)",
        "        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')",
        "    def log_message(self, *a): pass",
        "class S(http.server.ThreadingHTTPServer): request_queue_size = 1024",
        "s = S(('127.0.0.1', 0), H)",
        "print(s.server_address[1], flush=True)",
        "s.serve_forever()",
    ]
    .join("\n");
    let mut child = std::process::Command::new("python3")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let stdout = child.stdout.take().expect("piped");
    let child = Killed(child);
    let mut port = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut port)
        .expect("it says its port");
    Slotted {
        _child: child,
        url: format!("http://127.0.0.1:{}/", port.trim()),
    }
}

/// A rate search never calls an overload sustainable: every step above the service's 200/s
/// ceiling fails (it delivered less than asked, or its latency climbed, before p99 reached
/// its objective), the capacity is what the sustainable step delivered, and it is within 3%
/// of wrk's saturated throughput on the same server.
#[test]
fn a_rate_search_never_calls_an_overload_sustainable() {
    let _cpu = support::cpu_light();
    let py = slotted_python();
    let (code, r, text) = find(
        &[
            &py.url,
            "--by",
            "rate",
            "--from",
            "50/s",
            "--to",
            "400/s",
            "--step",
            "6s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--precision",
            "3%",
            "--no-history",
        ],
        Duration::from_secs(240),
    );
    assert_eq!(code, Some(0), "{text}");
    let f = &r["find"];
    for s in f["steps"].as_array().expect("steps") {
        let level = s["level"].as_f64().unwrap();
        if s["pass"] == true {
            assert!(level <= 200.0, "{level}/s passed past the ceiling\n{text}");
        }
    }
    let max = &f["max_sustainable"];
    let (level, rps) = (max["level"].as_f64().unwrap(), max["rps"].as_f64().unwrap());
    assert!(rps >= level * 0.97, "delivered {rps} at {level}/s\n{text}");
    assert!(rps <= level * 1.01, "{rps} delivered at {level}/s\n{text}");
    let peer = [8, 16]
        .iter()
        .filter_map(|&c| wrk_rps(&py.url, c, 4))
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    if let Some(wrk) = peer {
        assert!(
            support::rel(rps, wrk) <= 0.03,
            "brink's capacity {rps:.0} req/s, wrk's saturated {wrk:.0}\n{text}"
        );
    }
}
