//! Helpers shared by the topics: running brink and reading what it wrote, result schemas,
//! the browser and CPU locks. (The engine's own tests, run in-process, are in the engine
//! crate: crates/engine/tests/engine.)

/// Relative difference |a-b|/b.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b
}

/// Runs a browser check (`tests/browser/NAME`, Playwright for Python driving the system's
/// Chromium) with `args` after the Chromium path is appended, and returns the JSON it prints;
/// `None` when no browser is installed and `BRINK_REQUIRE_BROWSER` is not set.
pub fn browser_check(script: &str, args: &[&str]) -> Option<serde_json::Value> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser")
        .join(script);
    let required = std::env::var_os("BRINK_REQUIRE_BROWSER").is_some();
    let Some(chromium) = ["chromium", "chromium-browser"]
        .iter()
        .map(|c| std::path::Path::new("/usr/bin").join(c))
        .find(|p| p.exists())
    else {
        assert!(!required, "Chromium is required here but not installed");
        eprintln!("chromium not installed: skipping the browser check");
        return None;
    };
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args(args)
        .arg(&chromium)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("No module named 'playwright'") {
        assert!(
            !required,
            "Playwright for Python is required here: {stderr}"
        );
        eprintln!("playwright not installed: skipping the browser check");
        return None;
    }
    assert!(out.status.success(), "browser check failed: {stderr}");
    Some(serde_json::from_slice(&out.stdout).expect("the check prints JSON"))
}

/// The committed result schema.
pub const RESULT_SCHEMA: &str = include_str!("../../../../schemas/brink.result.v1.json");
/// The committed comparison schema.
pub const COMPARE_SCHEMA: &str = include_str!("../../../../schemas/brink.compare.v1.json");

/// The places where `v` breaks `schema` (empty when it is valid), each with its JSON path.
pub fn schema_problems(schema: &str, v: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// What a `brink` command left: its exit code, the result it wrote with `--json` (`Null`
/// when it wrote none), and its output.
pub struct Ran {
    pub code: Option<i32>,
    pub result: serde_json::Value,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `brink ARGS --json FILE` (bounded to a minute) and reads back what it wrote.
pub fn brink_json(args: &[&str]) -> Ran {
    ran(
        std::process::Command::new(env!("CARGO_BIN_EXE_brink")),
        args,
    )
}

/// [`brink_json`] with brink and all its threads kept on one CPU (`taskset -c CPU`).
pub fn brink_json_on_cpu(cpu: usize, args: &[&str]) -> Ran {
    let mut c = std::process::Command::new("taskset");
    c.args(["-c", &cpu.to_string(), env!("CARGO_BIN_EXE_brink")]);
    ran(c, args)
}

/// [`brink_json_on_cpu`] at the lowest priority (`nice -n 19`): beside busy loops on that
/// CPU, brink gets only what they leave, every time it wakes.
pub fn brink_json_on_cpu_niced(cpu: usize, args: &[&str]) -> Ran {
    let mut c = std::process::Command::new("nice");
    c.args(["-n", "19", "taskset", "-c", &cpu.to_string()]);
    c.arg(env!("CARGO_BIN_EXE_brink"));
    ran(c, args)
}

fn ran(brink: std::process::Command, args: &[&str]) -> Ran {
    // Every load this helper starts holds the CPU lock: shared, to the end of the test,
    // unless the test holds it already.
    testkit::cpu::hold_shared();
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("r.json");
    let out = assert_cmd::Command::from_std(brink)
        .args(args)
        .arg("--json")
        .arg(&json)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("brink runs");
    Ran {
        code: out.status.code(),
        result: std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(serde_json::Value::Null),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A Python HTTP/1.1 server (threaded, keep-alive) answering every GET `ok` after spending
/// `cpu_ms` of CPU, run by `python` (a path, or a link under another name); killed on drop.
pub struct PyServer {
    pub child: std::process::Child,
    pub url: String,
}

impl PyServer {
    pub fn start(python: &std::path::Path, cpu_ms: u32) -> PyServer {
        let script = [
            "import http.server, time".to_string(),
            "class H(http.server.BaseHTTPRequestHandler):".into(),
            "    protocol_version = 'HTTP/1.1'".into(),
            // Headers and body leave in two writes: without this, Nagle holds the body for
            // the client's delayed ACK (40 ms a response).
            "    disable_nagle_algorithm = True".into(),
            "    def do_GET(self):".into(),
            "        t = time.thread_time()".into(),
            format!("        while time.thread_time() - t < {}: pass", f64::from(cpu_ms) / 1000.0),
            "        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')".into(),
            "    def log_message(self, *a): pass".into(),
            "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)".into(),
            "print(s.server_address[1], flush=True)".into(),
            "s.serve_forever()".into(),
        ]
        .join("\n");
        let mut child = std::process::Command::new(python)
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut port = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut port)
            .expect("the server prints its port");
        PyServer {
            child,
            url: format!("http://127.0.0.1:{}/", port.trim()),
        }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process killed (and reaped) when dropped, so a failed assertion cannot leave a
/// server running that holds the test's output open.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Tests whose verdict depends on time (a bound, a rate, a latency, a capacity) or that take
/// a CPU from others (busy loops, a spinning service, a saturated generator) run alone: the
/// one lock of every test process ([`testkit::cpu`]), exclusive.
pub fn cpu_exclusive() -> testkit::cpu::Cpu {
    testkit::cpu::exclusive()
}

/// Tests whose verdict depends on time but whose load is light (under a quarter of a CPU in
/// all, measured, and measuring no CPU) run beside other light ones only: the same lock,
/// light ([`testkit::cpu`] says the rule).
pub fn cpu_light() -> testkit::cpu::Cpu {
    testkit::cpu::light()
}

/// `bin` (brink's path or a command running it), once this test holds the CPU lock: shared
/// for the rest of the test unless it took it already. Every way the tests start brink goes
/// through here, so none runs beside a test that measures time.
pub fn held<T>(bin: T) -> T {
    testkit::cpu::hold_shared();
    bin
}

/// Tests that make load but only count run beside each other, never beside an exclusive one.
/// The helpers that start brink ([`brink_json`] and its kin) take it themselves.
pub fn cpu_shared() -> testkit::cpu::Cpu {
    testkit::cpu::shared()
}

/// Waits for `child` (killed if it outlives `limit`, which fails the test) while polling its
/// peak resident memory; (exit code, peak RSS in MiB).
pub fn watch_peak(child: std::process::Child, limit: std::time::Duration) -> (Option<i32>, u64) {
    let t = std::time::Instant::now();
    let mut child = Killed(child);
    let status = format!("/proc/{}/status", child.0.id());
    let mut peak_kib = 0u64;
    let code = loop {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(v) = s.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
                let kib = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                peak_kib = peak_kib.max(kib);
            }
        }
        if let Some(s) = child.0.try_wait().expect("status") {
            break s.code();
        }
        assert!(
            t.elapsed() < limit,
            "the process did not end within {limit:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (code, peak_kib >> 10)
}
