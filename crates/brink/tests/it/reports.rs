//! HTML and CSV outputs end to end: a real run against an in-process server, written with
//! `--html`/`--csv` and again with `brink report`, then opened in the system's headless Chromium
//! (driven by Playwright for Python): charts draw, nothing is fetched, no console error, and a
//! request and scenario named like markup show as text.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn brink() -> Command {
    crate::support::held(Command::cargo_bin("brink")).expect("binary built")
}

fn json_of(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("result written")).expect("valid JSON")
}

const HOSTILE_REQUEST: &str = "<img src=x onerror=alert(1)>";
const HOSTILE_SCENARIO: &str = "</script><script>alert(2)</script>";

/// What the browser saw, or `None` when no browser is installed and none is required.
pub(crate) fn open_in_browser(page: &Path) -> Option<Value> {
    crate::support::browser_check("check_page.py", &[&format!("file://{}", page.display())])
}

/// The page as a user's browser sees it: every figure drew its chart, nothing left the page,
/// nothing ran that the page did not ship.
pub(crate) fn assert_page_sound(page: &Path, seen: &Value, charts: u64) {
    let file_url = format!("file://{}", page.display());
    let requests: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(
        requests,
        [file_url.as_str()],
        "the page fetched nothing else"
    );
    assert_eq!(seen["console_errors"], Value::Array(vec![]), "{seen}");
    assert_eq!(seen["page_errors"], Value::Array(vec![]), "{seen}");
    assert_eq!(
        seen["dialogs"],
        Value::Array(vec![]),
        "no injected script ran"
    );
    assert_eq!(seen["imgs"], 0, "no element came from data");
    assert_eq!(seen["links"], Value::Array(vec![]), "no src or href at all");
    let figures = seen["figures"].as_u64().unwrap();
    assert_eq!(figures, charts, "{seen}");
    assert_eq!(
        seen["canvases"].as_u64().unwrap(),
        figures,
        "one canvas a chart: {seen}"
    );
    assert_eq!(
        seen["legends"].as_u64().unwrap(),
        figures,
        "every chart drawn"
    );
    // The system's dark setting turns the page dark and redraws every chart in its palette.
    assert_eq!(seen["light_bg"], "rgb(255, 255, 255)", "{seen}");
    assert_eq!(seen["dark_bg"], "rgb(15, 18, 24)", "{seen}");
    assert_eq!(seen["dark_legends"].as_u64().unwrap(), figures, "{seen}");
    assert_eq!(seen["dark_canvases"], seen["canvases"], "{seen}");
    assert_eq!(
        seen["recoloured"].as_u64().unwrap(),
        figures,
        "every chart redrawn in the dark palette: {seen}"
    );
}

fn plan(dir: &Path, url: &str) -> PathBuf {
    let p = dir.join("plan.yaml");
    std::fs::write(
        &p,
        format!(
            "target: {url}\nscenarios:\n  - name: '{HOSTILE_SCENARIO}'\n    load: {{ connections: 2, duration: 3s }}\n    requests:\n      - {{ name: '{HOSTILE_REQUEST}', path: /mix, weight: 3 }}\n      - {{ name: plain, path: /status/200 }}\n    slo: [ 'p99 < 2s' ]\n  - name: second\n    load: {{ rate: 50/s, duration: 2s }}\n    requests: [ {{ path: /status/200 }} ]\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_suite_becomes_a_page_and_a_csv_that_show_data_as_text() {
    let srv = testkit::serve(testkit::handlers::faults()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = plan(dir.path(), &srv.url(""));
    let (json, html, csv) = (
        dir.path().join("r.json"),
        dir.path().join("r.html"),
        dir.path().join("r.csv"),
    );
    let out = brink()
        .args(["run", p.to_str().unwrap(), "-q", "--timeout", "1s"])
        .args(["--json", json.to_str().unwrap()])
        .args(["--html", html.to_str().unwrap()])
        .args(["--csv", csv.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json_of(&json);
    let page = std::fs::read_to_string(&html).unwrap();
    // Escaped in the tables, never raw anywhere (the embedded data has no '<' at all).
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!page.contains(HOSTILE_REQUEST));
    assert!(!page.contains(HOSTILE_SCENARIO));
    assert!(page.contains("Content-Security-Policy"));

    // CSV: one row per second of each scenario, in order, with the header documented.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "scenario,t,requests,ok,errors,rps,p50_ms,p90_ms,p99_ms,max_ms,target,connects,connect_p99_ms,tls_p99_ms,upgrade_p99_ms"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let seconds: usize = r["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["timeseries"].as_array().unwrap().len())
        .sum();
    assert_eq!(rows.len(), seconds);
    let requests: u64 = rows.iter().map(|c| c[2].parse::<u64>().unwrap()).sum();
    assert_eq!(requests, r["summary"]["requests"].as_u64().unwrap());
    assert!(rows.iter().any(|c| c[0] == "second"));

    // `brink report` from the file gives the same page.
    let again = dir.path().join("again.html");
    brink()
        .args(["report", json.to_str().unwrap(), "--html"])
        .arg(&again)
        .assert()
        .code(0);
    let again_page = std::fs::read_to_string(&again).unwrap();
    assert!(again_page == page, "the page from the result file differs");

    if let Some(seen) = open_in_browser(&html) {
        assert_page_sound(&html, &seen, 8);
        let text = seen["text"].as_str().unwrap();
        assert!(text.contains(HOSTILE_REQUEST), "shown as text");
        assert!(text.contains(HOSTILE_SCENARIO), "shown as text");
        // The /mix path fails some requests: the errors chart is there.
        assert!(text.contains("Errors per second"), "{text}");
    }
}

#[test]
fn a_search_page_marks_its_levels_and_its_steps_go_to_csv() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (json, html, csv) = (
        dir.path().join("f.json"),
        dir.path().join("f.html"),
        dir.path().join("f.csv"),
    );
    brink()
        .args(["find", &srv.url("/"), "-q", "--to", "4", "--step", "2s"])
        .args(["--warmup", "1s", "--cooldown", "0s", "--threads", "1"])
        .args(["--json", json.to_str().unwrap()])
        .args(["--html", html.to_str().unwrap()])
        .args(["--csv", csv.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    let r = json_of(&json);
    let steps = std::fs::read_to_string(dir.path().join("f.steps.csv")).unwrap();
    let mut lines = steps.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("level,unit,pass,p50_ms,p75_ms,p90_ms,p99_ms"));
    let levels: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(levels, ["1", "2", "4"]);
    assert_eq!(r["find"]["steps"].as_array().unwrap().len(), 3);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Capacity search") && page.contains("max sustainable"));

    // A search compares by its maximum sustainable level; against itself, unchanged.
    let out = brink()
        .args(["compare", "--format", "json"])
        .arg(&json)
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["rows"][0]["metric"], "max sustainable", "{c}");
    assert_eq!(c["rows"][0]["verdict"], "unchanged", "{c}");
    assert_eq!(c["rows"][0]["decides"], true, "{c}");
    if let Some(seen) = open_in_browser(&html) {
        // Three charts, and the USL fit's when the search found one (three levels that grow
        // nearly in proportion sometimes fit no curve better than their mean).
        let usl = u64::from(!r["find"]["usl"].is_null());
        assert_page_sound(&html, &seen, 3 + usl);
        // Every level up to --to 4 passed: the page gives the floor it found, not a limit.
        let text = seen["text"].as_str().unwrap();
        assert!(
            text.contains("Capacity: at least")
                && text.contains("every level up to --to 4 connections"),
            "{text}"
        );
    }
}

#[test]
fn report_refuses_what_it_cannot_read_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("x.json");
    std::fs::write(&not_json, "{ nope").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"schema":"k6/summary"}"#).unwrap();
    let out_html = dir.path().join("o.html");
    // A FIFO nobody writes and a device without end are not read at all (they hung, and
    // /dev/zero filled memory).
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (file, says) in [
        (dir.path().join("missing.json"), "No such file"),
        (not_json, "not JSON"),
        (other, "schema k6/summary is not one this brink reads"),
        (fifo, "not a regular file"),
        ("/dev/zero".into(), "not a regular file"),
    ] {
        let path = file.to_str().unwrap();
        let html = out_html.to_str().unwrap();
        for args in [
            vec!["report", path, "--html", html],
            vec!["compare", path, path],
        ] {
            let out = brink()
                .args(&args)
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
    }
    assert!(!out_html.exists(), "nothing written from bad input");
    brink()
        .args(["report", "r.json"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("nothing to write"));
}
