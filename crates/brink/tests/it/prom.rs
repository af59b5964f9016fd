//! Debian's Prometheus, started by a test on loopback with its own storage directory, and
//! asked over its HTTP API: the real store `--metrics-listen` and `--out` are checked against.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether Prometheus is installed; where CI requires it (`BRINK_REQUIRE_PROMETHEUS`), its
/// absence fails the test instead.
pub fn available() -> bool {
    if Command::new("prometheus").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("BRINK_REQUIRE_PROMETHEUS").is_none(),
        "prometheus is required here (apt-get install prometheus)"
    );
    eprintln!("prometheus not installed: skipping");
    false
}

pub struct Prom {
    child: Child,
    pub web: u16,
    _dir: tempfile::TempDir,
}

impl Prom {
    /// Starts Prometheus on `127.0.0.1:web`, scraping `scrape` (a port) every second when
    /// given, with its remote-write receiver on when `receiver`; waits until it is ready.
    pub fn start(web: u16, scrape: Option<u16>, receiver: bool) -> Prom {
        Prom::launch(web, scrape, receiver, &[])
    }

    /// [`Prom::start`] with its remote-write receiver on and native histograms enabled.
    pub fn start_native(web: u16) -> Prom {
        Prom::launch(web, None, true, &["--enable-feature=native-histograms"])
    }

    fn launch(web: u16, scrape: Option<u16>, receiver: bool, extra: &[&str]) -> Prom {
        let dir = tempfile::tempdir().expect("a directory");
        let config = dir.path().join("prometheus.yml");
        let jobs = scrape.map_or_else(String::new, |port| format!(
            "scrape_configs:\n  - job_name: brink\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ));
        std::fs::write(&config, format!("global:\n  scrape_interval: 1s\n{jobs}")).unwrap();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"));
        if receiver {
            cmd.arg("--web.enable-remote-write-receiver");
        }
        cmd.args(extra);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let p = Prom {
            child,
            web,
            _dir: dir,
        };
        let start = Instant::now();
        while p.get("/-/ready").is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "prometheus not ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// `GET path`: the body of a 200 answer.
    pub fn get(&self, path: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.web)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        out.starts_with("HTTP/1.1 200")
            .then(|| out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()))?
    }

    /// An instant PromQL query's results.
    pub fn results(&self, q: &str) -> Vec<serde_json::Value> {
        let path = format!("/api/v1/query?query={}", percent(q));
        let body = self.get(&path).expect("an answer");
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        v["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("{q}: {body}"))
    }

    /// An instant PromQL query's one value.
    pub fn query(&self, q: &str) -> f64 {
        let r = self.results(q);
        r.first()
            .and_then(|x| x["value"][1].as_str())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{q}: {r:?}"))
    }
}

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `q` for a URL's query string.
fn percent(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Which of brink's histogram buckets `seconds` falls in (by index; past the last bound,
/// one more).
pub fn bucket(seconds: f64) -> usize {
    metrics::BOUNDS
        .iter()
        .position(|&b| seconds <= b)
        .unwrap_or(metrics::BOUNDS.len())
}
