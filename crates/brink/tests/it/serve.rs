//! `brink serve` on a real history: the JSON API lists what runs recorded, a run in progress
//! streams its seconds, writes need the X-Brink header, and bound elsewhere than loopback every
//! request needs the printed token. In the system's headless Chromium: the live page gains
//! points while its run goes, the runs list shows the runs (a hostile scenario name as text),
//! ticking two and comparing shows the verdicts and charts, and a run's page draws its report.

use crate::support::Killed;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

/// One HTTP/1.1 exchange over a fresh connection: (status, headers, body).
fn http(port: u16, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("serve listens");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// Where a `brink serve` listens and the token it printed (`None`: send none).
pub(crate) struct Ui {
    port: u16,
    token: Option<String>,
}

impl Ui {
    pub(crate) fn of(url: &str) -> Ui {
        Ui {
            port: port_of(url),
            token: url.split("token=").nth(1).map(str::to_string),
        }
    }

    /// The header that carries the token, if any.
    fn auth(&self) -> String {
        self.token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default()
    }
}

pub(crate) fn get(ui: &Ui, path: &str, extra: &str) -> (u16, String, String) {
    http(
        ui.port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{}{extra}\r\n",
            ui.auth()
        ),
    )
}

fn post(ui: &Ui, path: &str, extra: &str) -> (u16, String, String) {
    http(
        ui.port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n{}{extra}\r\n",
            ui.auth()
        ),
    )
}

/// Starts `brink serve` with `args`; returns the child (killed when dropped) and the URL it
/// printed.
pub(crate) fn serve(history: &Path, args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args(["serve", "--port", "0", "--history"])
        .arg(history)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line}"))
        .to_string();
    (Killed(child), url)
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://")
        .split(['/', '?'])
        .next()
        .and_then(|h| h.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the URL")
}

fn record(history: &Path, plan: &Path, secs: u64) -> Child {
    Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", history)
        .args([
            "run",
            plan.to_str().unwrap(),
            "-q",
            "-d",
            &format!("{secs}s"),
        ])
        .spawn()
        .unwrap()
}

#[test]
fn the_history_in_a_browser() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: '{HOSTILE}'\n    load: {{ connections: 2 }}\n    requests: [ {{ path: / }} ]\n",
            srv.url("")
        ),
    )
    .unwrap();
    for _ in 0..2 {
        assert!(record(&h, &plan, 2).wait().unwrap().success());
    }
    let (server, url) = serve(&h, &[]);
    let ui = Ui::of(&url);
    let port = ui.port;

    let (status, _, body) = get(&ui, "/api/runs", "");
    assert_eq!(status, 200, "{body}");
    let runs: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["name"], HOSTILE);
    let (status, _, page) = get(&ui, "/", "");
    assert_eq!(status, 200);
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;") && !page.contains(HOSTILE));
    let (a, b) = (
        runs[1]["id"].as_i64().unwrap(),
        runs[0]["id"].as_i64().unwrap(),
    );
    let (status, _, body) = get(&ui, &format!("/api/compare?a={a}&b={b}"), "");
    assert_eq!(status, 200, "{body}");
    let c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["schema"], "brink.compare/v1");
    // Writes need the header a page on another site cannot send.
    assert_eq!(post(&ui, &format!("/api/run/{a}/baseline"), "").0, 403);
    assert_eq!(
        post(&ui, &format!("/api/run/{a}/baseline"), "X-Brink: 1\r\n").0,
        200
    );
    let (_, _, body) = get(
        &ui,
        &format!(
            "/api/runs?name={}",
            "%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"
        ),
        "",
    );
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed[1]["baseline"], true, "{listed}");

    // A run in progress: its seconds stream as Server-Sent Events.
    let mut running = record(&h, &plan, 12);
    let db = history::History::open(&h).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let live_id = loop {
        let list = db.list(&history::Filter::default()).unwrap();
        if let Some(r) = list.iter().find(|r| r.status == model::RunStatus::Running) {
            if !db.seconds(r.id, 0).unwrap().is_empty() {
                break r.id;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the third run was never recorded as running"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut sse = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sse.write_all(
        format!(
            "GET /api/live/{live_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n",
            ui.auth()
        )
        .as_bytes(),
    )
    .unwrap();
    let mut buf = vec![0u8; 8192];
    let mut got = String::new();
    while !got.contains("\ndata: {\"seq\"") {
        let n = sse.read(&mut buf).expect("events arrive");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(got.contains("text/event-stream"), "{got}");
    drop(sse);

    if let Some(seen) =
        crate::support::browser_check("check_serve.py", &[&url, &live_id.to_string()])
    {
        for k in ["console_errors", "page_errors", "dialogs", "foreign"] {
            assert_eq!(seen[k], Value::Array(vec![]), "{k}: {seen}");
        }
        let points = seen["live_points"].as_array().unwrap();
        assert!(
            points[1].as_u64() > points[0].as_u64(),
            "the live page gained points: {points:?}"
        );
        // The live page draws latency and throughput; the list has the three runs.
        assert_eq!(seen["live_canvases"], 2, "{seen}");
        assert_eq!(seen["runs_rows"], 3, "{seen}");
        assert_eq!(seen["runs_imgs"], 0);
        assert!(
            seen["runs_text"].as_str().unwrap().contains(HOSTILE),
            "shown as text"
        );
        assert_eq!(seen["tickable"], 2, "the running run cannot be ticked");
        assert_eq!(seen["button_disabled_before"], true);
        assert_eq!(seen["button_disabled_after"], false);
        let compare = seen["compare_text"].as_str().unwrap();
        assert!(
            compare.contains("95% interval") && compare.contains("p99"),
            "{compare}"
        );
        assert!(compare.contains("insufficient data"), "2 s runs: {compare}");
        // p99 over time and successful requests per second; a 2 s run's report draws
        // latency over time, throughput and the latency distribution.
        assert_eq!(seen["compare_canvases"], 2, "{seen}");
        assert_eq!(seen["run_figures"], 3, "{seen}");
        assert_eq!(
            seen["run_legends"], seen["run_figures"],
            "every chart drawn"
        );
        assert_eq!(seen["run_imgs"], 0);
    }
    assert!(running.wait().unwrap().success());
    drop(server);
}

/// Every request needs the token, on loopback as elsewhere: another user of the machine
/// reaches loopback too. The token is fresh unless given in a file or $BRINK_SERVE_TOKEN; on
/// the command line (where every user can read it) it is refused.
#[test]
fn every_request_needs_the_token_on_loopback_too() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    for bind in ["127.0.0.1", "0.0.0.0"] {
        let (server, url) = serve(&h, &["--bind", bind]);
        let ui = Ui::of(&url);
        let token = ui.token.clone().expect("a generated token in the URL");
        assert_eq!(token.len(), 32);
        let bare = Ui {
            port: ui.port,
            token: None,
        };
        assert_eq!(get(&bare, "/", "").0, 401, "{bind}");
        assert_eq!(get(&bare, "/api/runs", "").0, 401, "{bind}");
        assert_eq!(get(&bare, "/api/runs?token=wrong-token-123", "").0, 401);
        assert_eq!(post(&bare, "/api/run/1/delete", "X-Brink: 1\r\n").0, 401);
        let (status, head, _) = get(&bare, &format!("/?token={token}"), "");
        assert_eq!(status, 200);
        assert!(head.contains("brink_token="), "{head}");
        assert!(head.contains("HttpOnly"), "{head}");
        let cookie = format!("Cookie: brink_token={token}\r\n");
        assert_eq!(get(&bare, "/api/runs", &cookie).0, 200);
        assert_eq!(get(&ui, "/api/runs", "").0, 200);
        drop(server);
    }
    // A token from a file, or from the environment.
    let file = dir.path().join("token");
    std::fs::write(&file, "from-a-file-0123456789\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "serve",
            "--port",
            "0",
            "--token-file",
            file.to_str().unwrap(),
        ])
        .arg("--history")
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("other users may read it"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (server, url) = serve(&h, &["--token-file", file.to_str().unwrap()]);
    assert!(url.ends_with("?token=from-a-file-0123456789"), "{url}");
    drop(server);
    let mut child = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_SERVE_TOKEN", "from-the-environment-42")
        .args(["serve", "--port", "0", "--history"])
        .arg(&h)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(Killed(child));
    assert!(line.contains("?token=from-the-environment-42"), "{line}");
    // On the command line, or too short: refused in one line.
    for args in [
        &["--token", "long-enough-but-visible-to-all"][..],
        &["--token-file", "/nonexistent/token"],
    ] {
        let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .args(["serve", "--port", "0", "--history"])
            .arg(&h)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim().lines().count(),
            1
        );
    }
    std::fs::write(&file, "short\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .args([
            "serve",
            "--port",
            "0",
            "--token-file",
            file.to_str().unwrap(),
        ])
        .arg("--history")
        .arg(&h)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 16"));
}

/// Another local user (`nobody`) can neither list the runs nor delete one through the UI
/// bound to loopback, and cannot read the token from the process list.
#[test]
fn another_local_user_cannot_use_the_ui() {
    if !crate::local_users::second_user() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let ran = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", &h)
        .args(["run", &srv.url("/"), "-n", "5", "-q"])
        .status()
        .unwrap();
    assert!(ran.success());
    let (server, url) = serve(&h, &[]);
    let ui = Ui::of(&url);
    let token = ui.token.clone().unwrap();
    let base = format!("http://127.0.0.1:{}", ui.port);
    let as_nobody = |args: &[&str]| crate::local_users::as_nobody(args);
    let list = as_nobody(&[
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("{base}/api/runs"),
    ]);
    assert_eq!(String::from_utf8_lossy(&list.stdout), "401");
    let delete = as_nobody(&[
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "POST",
        "-H",
        "X-Brink: 1",
        &format!("{base}/api/run/1/delete"),
    ]);
    assert_eq!(String::from_utf8_lossy(&delete.stdout), "401");
    let ps = as_nobody(&["ps", "-eo", "args"]);
    let seen = String::from_utf8_lossy(&ps.stdout);
    assert!(
        seen.contains("brink serve") || seen.contains("serve --port"),
        "ps works: {seen}"
    );
    assert!(
        !seen.contains(&token),
        "the token is not in the process list"
    );
    assert_eq!(get(&ui, "/api/runs", "").0, 200, "the owner still can");
    drop(server);
}

/// DNS rebinding: a page on a name the attacker points at 127.0.0.1 is same-origin with the UI
/// and may send X-Brink: 1. On loopback only loopback names (and --allow-host ones) are
/// served, and a write must come from the origin it was sent to. Before, a forged POST from a
/// rebound name deleted a run.
#[test]
fn a_rebound_name_cannot_use_the_ui() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let ran = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", &h)
        .args(["run", &srv.url("/"), "-n", "5", "-q"])
        .status()
        .unwrap();
    assert!(ran.success());
    let (server, url) = serve(&h, &["--allow-host", "brink.test"]);
    let ui = Ui::of(&url);
    let port = ui.port;
    let send = |method: &str, path: &str, host: &str, extra: &str| {
        http(
            port,
            &format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n{}{extra}\r\n", ui.auth()),
        )
    };
    let rebound = format!("rebound.attacker.example:{port}");
    let (status, _, body) = send("GET", "/", &rebound, "");
    assert_eq!(status, 403, "{body}");
    assert_eq!(body.trim().lines().count(), 1, "{body}");
    assert!(body.contains("--allow-host"), "{body}");
    let forged = format!("X-Brink: 1\r\nOrigin: http://{rebound}\r\n");
    assert_eq!(send("POST", "/api/run/1/delete", &rebound, &forged).0, 403);
    // The right Host with another site's Origin.
    let local = format!("127.0.0.1:{port}");
    let other = "X-Brink: 1\r\nOrigin: http://attacker.example\r\n";
    assert_eq!(send("POST", "/api/run/1/delete", &local, other).0, 403);
    let (status, _, body) = send("GET", "/api/runs", &local, "");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body)
            .unwrap()
            .as_array()
            .map(Vec::len),
        Some(1),
        "the run survived: {body}"
    );
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("brink.test:{port}"),
    ] {
        assert_eq!(send("GET", "/", &host, "").0, 200, "{host}");
    }
    let own = format!("X-Brink: 1\r\nOrigin: http://{local}\r\n");
    assert_eq!(send("POST", "/api/run/1/delete", &local, &own).0, 200);
    drop(server);
}

/// A run whose process was killed never finishes: it is shown as died with the seconds it
/// recorded, in `brink history`, the API and the live view, whose stream ends. Before, it
/// stayed `running` forever and every viewer waited on it.
#[test]
fn a_killed_run_is_shown_as_died() {
    // Bounded by the clock: never beside a test that hogs the CPU.
    let _cpu = crate::support::cpu_shared();
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let mut child = Killed(
        Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .env("BRINK_HISTORY", &h)
            .args(["run", &srv.url("/"), "-c", "2", "-d", "30s", "-q"])
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        if let Ok(db) = history::History::open(&h) {
            let list = db.list(&history::Filter::default()).unwrap_or_default();
            if let Some(r) = list.iter().find(|r| r.status == model::RunStatus::Running) {
                if db.seconds(r.id, 0).map(|s| s.len()).unwrap_or(0) >= 2 {
                    break r.id;
                }
            }
        }
        assert!(Instant::now() < deadline, "the run was never recorded");
        std::thread::sleep(Duration::from_millis(100));
    };
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", &h)
        .arg("history")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("died"), "{listed}");
    let (server, url) = serve(&h, &[]);
    let ui = Ui::of(&url);
    let (_, _, body) = get(&ui, "/api/runs", "");
    let runs: Value = serde_json::from_str(&body).unwrap();
    let run = runs
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == id))
        .unwrap_or_else(|| panic!("run {id} listed: {body}"));
    assert_eq!(run["status"], "died", "{run}");
    let (status, _, page) = get(&ui, &format!("/run/{id}"), "");
    assert_eq!(status, 200);
    assert!(page.contains("died"), "the page says so");
    // The live stream sends what was recorded, then ends.
    let t = Instant::now();
    let (status, _, events) = get(&ui, &format!("/api/live/{id}"), "");
    assert_eq!(status, 200);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(events.contains("data: {\"seq\""), "{events}");
    assert!(
        events.contains("event: end\ndata: {\"status\":\"died\"}"),
        "{events}"
    );
    drop(server);
}

/// Text from a small generator: every string it makes mixes one- to four-byte characters,
/// combining marks, right-to-left and zero-width ones, and markup, so that no byte offset is
/// safe to cut at.
struct Unicode(u64);

impl Unicode {
    const PALETTE: [&'static str; 16] = [
        "a", "é", "漢", "🦀", "\u{301}", "\u{202e}", "\u{200d}", "<", "&", "\"", "'", "\\", "ß",
        "𝄞", " ", "ﬁ",
    ];

    fn text(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                Self::PALETTE[(self.0 >> 60) as usize]
            })
            .collect()
    }
}

/// Replaces every string under a naming key (names, URLs, paths, notes, reasons) with random
/// Unicode, everywhere in a result.
fn unicode_names(v: &mut Value, gen: &mut Unicode) {
    const KEYS: [&str; 10] = [
        "name",
        "url",
        "path",
        "request",
        "note",
        "reason",
        "error",
        "first_failure",
        "value",
        "part",
    ];
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if x.is_string() && KEYS.contains(&k.as_str()) {
                    *x = Value::String(gen.text(3 + k.len()));
                } else {
                    unicode_names(x, gen);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| unicode_names(x, gen)),
        _ => {}
    }
}

/// Every page and API answer of `brink serve`, every report (`show`, `report --html --csv`,
/// `history`) renders runs whose every stored field is random Unicode: never a 500, never a
/// panic. A commit id cut at byte 12 used to make /run/N answer 500.
#[test]
fn every_page_takes_any_unicode() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let json = dir.path().join("r.json");
    let ran = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", dir.path().join("other.db"))
        .args(["run", &srv.url("/"), "-n", "200", "-c", "2", "-q", "--json"])
        .arg(&json)
        .status()
        .unwrap();
    assert!(ran.success());
    let real: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut gen = Unicode(7);
    let db = history::History::open(&h).unwrap();
    let mut ids = Vec::new();
    for k in 0..6 {
        let meta = history::Meta {
            started_at: gen.text(20),
            command: [model::RunCommand::Run, model::RunCommand::Find][k % 2],
            name: gen.text(13),
            target: gen.text(25),
            method: gen.text(4),
            load_model: Some(model::LoadModel::Open),
            load_level: gen.text(14),
            git_commit: Some(gen.text(40)),
            git_branch: Some(gen.text(12)),
            host: gen.text(11),
            note: Some(gen.text(30)),
            tags: vec![(gen.text(7), gen.text(9)), (gen.text(3), gen.text(13))],
        };
        let id = db.begin(&meta).unwrap();
        let mut result = real.clone();
        unicode_names(&mut result, &mut gen);
        let result: results::RunResult = serde_json::from_value(result).expect("still a result");
        for row in &result.timeseries {
            db.second(id, 0, &gen.text(8), row).unwrap();
        }
        if k % 3 != 2 {
            db.finish(id, &result).unwrap();
            db.exit(id, 0).unwrap();
        }
        ids.push(id);
    }
    let (server, url) = serve(&h, &[]);
    let ui = Ui::of(&url);
    let mut paths = vec![
        "/".to_string(),
        "/api/runs".to_string(),
        format!("/?name={}", "%F0%9F%A6%80%CC%81"),
        format!("/compare?a={}&b={}", ids[0], ids[1]),
        format!("/api/compare?a={}&b={}", ids[0], ids[1]),
    ];
    for id in &ids {
        for p in ["/run/", "/live/", "/api/run/"] {
            paths.push(format!("{p}{id}"));
        }
    }
    // Runs 3 and 6 never finished: they have no result to serve as JSON (404, said so);
    // every other page of every run is there.
    let unfinished: Vec<i64> = ids
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 3 == 2)
        .map(|(_, id)| *id)
        .collect();
    for p in &paths {
        let (status, _, body) = get(&ui, p, "");
        let no_result = unfinished.iter().any(|id| *p == format!("/api/run/{id}"));
        assert_eq!(status, if no_result { 404 } else { 200 }, "{p}: {body}");
    }
    for id in &ids {
        let finished = !unfinished.contains(id);
        let id = id.to_string();
        let html = dir.path().join(format!("{id}.html"));
        let csv = dir.path().join(format!("{id}.csv"));
        for args in [
            vec!["show", id.as_str()],
            vec![
                "report",
                id.as_str(),
                "--html",
                html.to_str().unwrap(),
                "--csv",
                csv.to_str().unwrap(),
            ],
            vec!["history"],
        ] {
            let out = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
                .env("BRINK_HISTORY", &h)
                .args(&args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            // `show` and `report` of a run without a result say so (exit 2); all else works.
            if finished || args[0] == "history" {
                assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
            } else {
                assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
                assert!(err.contains(&format!("run {id} has no result")), "{err}");
            }
        }
    }
    drop(server);
}

/// At 1280 px the runs page keeps its verdict and baseline columns on screen (long names,
/// targets, loads and tags wrap), a trend only joins runs of the same load, and a search's
/// report keeps its step table in its own scrolling box with the level column frozen; the
/// report's charts leave out the last partial second and draw the latency objective. Checked
/// by element widths in the system's Chromium.
#[test]
fn pages_fit_a_1280_pixel_screen() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let long = format!(
        "/api/v1/{}/items?filter={}",
        "catalogue".repeat(6),
        "x".repeat(60)
    );
    let url = srv.url(&long);
    let record = |c: &str, extra: &[&str]| {
        let ok = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .env("BRINK_HISTORY", &h)
            .args([
                "run",
                &url,
                "-c",
                c,
                "-n",
                "30",
                "-q",
                "--tag",
                "environment=staging-eu-west",
            ])
            .args(["--note", &"a long note about pool sizes ".repeat(4)])
            .args(extra)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    record("2", &[]);
    record("2", &[]);
    record("4", &[]);
    let report = dir.path().join("r.html");
    let search = dir.path().join("f.html");
    let pid = format!("pid={}", std::process::id());
    let ok = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", &h)
        .args([
            "run",
            &srv.url("/"),
            "-c",
            "2",
            "-d",
            "2500ms",
            "-q",
            "--slo",
            "p99<100",
        ])
        .arg("--html")
        .arg(&report)
        .status()
        .unwrap();
    assert!(ok.success());
    // A search whose failing step has a long reason (every objective breaks at once) and a
    // wide set of server figures: one service slot of 8 ms, so latency is 8 ms a connection:
    // from 4 connections every request waits 32 ms, and all six objectives under 24 ms break
    // whatever the machine's noise.
    let queue = testkit::serve_with(
        testkit::Options {
            slots: Some(1),
            ..Default::default()
        },
        testkit::handlers::slotted(Duration::from_millis(8)),
    )
    .unwrap();
    let found = Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
        .env("BRINK_HISTORY", &h)
        .args([
            "find",
            &queue.url("/"),
            "--from",
            "4",
            "--to",
            "8",
            "--step",
            "2s",
            "--warmup",
            "1s",
        ])
        .args(["--slo", "p50<24", "--slo", "p90<24", "--slo", "p99<24"])
        .args(["--slo", "mean<24", "--slo", "p75<24", "--slo", "p95<24"])
        .args([
            "--cooldown",
            "0s",
            "-q",
            "--observe",
            &pid,
            "--metric",
            "custom_a=x",
            "--metric",
            "a_rather_long_name_for_the_queue_depth_of_the_service=x",
            "--metric",
            "another_rather_long_name_for_open_file_descriptors=x",
        ])
        .arg("--html")
        .arg(&search)
        .status()
        .unwrap();
    assert!(found.code().is_some());
    // The URL brink serve printed, with its token.
    let (server, url) = serve(&h, &[]);
    let shots = dir.path().join("shot");
    let pages = [
        url,
        format!("file://{}", report.display()),
        format!("file://{}", search.display()),
    ];
    let mut args: Vec<&str> = vec![shots.to_str().unwrap()];
    args.extend(pages.iter().map(String::as_str));
    let Some(seen) = crate::support::browser_check("check_widths.py", &args) else {
        return;
    };
    drop(server);
    assert_eq!(seen["page_errors"], serde_json::json!([]), "{seen}");
    let p = &seen["pages"];
    for page in p.as_array().unwrap() {
        assert!(
            page["scroll_width"].as_f64().unwrap() <= 1280.0,
            "overflows: {page}"
        );
    }
    // The runs page: verdict and baseline on screen; one trend (two runs at 2 connections).
    let runs = &p[0];
    for col in ["verdict_right", "against_right"] {
        let right = runs[col][0].as_f64().unwrap_or(9999.0);
        assert!(right <= 1280.0, "{col} at {right}: {runs}");
    }
    assert_eq!(runs["trend_rows"], 1, "{runs}");
    // The run's report: 2.5 s charted as its 2 whole seconds, with the objective's line.
    let latency = &p[1]["charts"][0];
    assert_eq!(latency["x"], 2, "{latency}");
    assert!(
        latency["series"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "SLO p99 < 100ms"),
        "{latency}"
    );
    // The search's report: the step table fits the page with its verdict next to the level,
    // a failing step's long reason on its own line under it (rows stay one line tall); the
    // server figures in their own table; every scrolling box no wider than the page, its level
    // column frozen.
    let find = &p[2];
    let boxes = find["boxes"].as_array().unwrap();
    assert!(boxes.len() >= 2, "steps and server figures apart: {find}");
    assert!(
        boxes.iter().all(|b| b[0].as_f64().unwrap() <= 1280.0),
        "{find}"
    );
    assert!(
        boxes[0][1].as_f64() <= boxes[0][0].as_f64(),
        "the step table needs no scrolling: {find}"
    );
    let verdict = find["verdict_right"][0].as_f64().unwrap_or(9999.0);
    assert!(verdict <= 1280.0, "verdict at {verdict}: {find}");
    let why = find["why_rows"].as_array().unwrap();
    assert!(
        why.iter().any(|w| w.as_str().unwrap_or("").len() > 60),
        "a long reason is shown: {find}"
    );
    let rows = find["step_rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{find}");
    assert!(
        rows.iter().all(|h| h.as_f64().unwrap() < 40.0),
        "step rows stay one line tall: {find}"
    );
    assert!(
        find["sticky"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s == "sticky"),
        "{find}"
    );
    assert!(
        std::fs::metadata(format!("{}.0.png", shots.display())).is_ok(),
        "screenshots kept"
    );
}
