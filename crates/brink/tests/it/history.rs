//! The run history end to end against real SQLite files: runs are recorded with their tags,
//! note, git commit and exit code; `history`, `show`, `report` and `compare` read them by id,
//! `latest~N` and `baseline`; seconds are written while a run goes (a killed run keeps them);
//! two processes recording at once lose nothing; a history that cannot be written warns once
//! and changes nothing else.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn brink(history: &Path) -> Command {
    let mut c = crate::support::held(Command::cargo_bin("brink")).expect("binary built");
    c.env("BRINK_HISTORY", history);
    c
}

fn stdout_json(c: &mut Command) -> Value {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn runs_are_recorded_listed_shown_and_compared_by_id() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let json = dir.path().join("r.json");
    for (tag, note) in [("env=ci", "first"), ("env=prod", "second")] {
        brink(&h)
            .args(["run", &srv.url("/"), "-c", "2", "-n", "200", "-q"])
            .args(["--tag", tag, "--note", note, "--json"])
            .arg(&json)
            .timeout(Duration::from_secs(30))
            .assert()
            .code(0);
    }
    let runs = stdout_json(brink(&h).args(["history", "--json"]));
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let (latest, first) = (&runs[0], &runs[1]);
    assert!(latest["id"].as_i64() > first["id"].as_i64(), "newest first");
    assert_eq!(latest["note"], "second");
    assert_eq!(latest["tags"], serde_json::json!([["env", "prod"]]));
    assert_eq!(latest["status"], "done");
    assert_eq!(latest["exit_code"], 0);
    assert_eq!(latest["requests"], 200);
    assert_eq!(latest["command"], "run");
    assert_eq!(latest["target"], srv.url("/"));
    let in_git = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert_eq!(latest["git_commit"].is_string(), in_git, "{latest}");

    let by_tag = stdout_json(brink(&h).args(["history", "--json", "--tag", "env=ci"]));
    assert_eq!(by_tag.as_array().unwrap().len(), 1);
    assert_eq!(by_tag[0]["note"], "first");

    // `show --json` is the stored result: the same as the --json file of that run.
    let shown = stdout_json(brink(&h).args(["show", "latest", "--json"]));
    let file: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        shown["summary"]["latency_hdr"],
        file["summary"]["latency_hdr"]
    );
    assert_eq!(shown["seed"], file["seed"]);
    brink(&h)
        .args(["show", "latest~1"])
        .assert()
        .code(0)
        .stdout(predicates::str::contains(format!("GET {}", srv.url("/"))));

    // The table lists both; report and compare take ids.
    brink(&h)
        .arg("history")
        .assert()
        .code(0)
        .stdout(predicates::str::contains(srv.url("/")));
    let page = dir.path().join("r.html");
    brink(&h)
        .args(["report", "latest", "--html"])
        .arg(&page)
        .assert()
        .code(0);
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("<!doctype html>"));
    let first_id = first["id"].as_i64().unwrap().to_string();
    brink(&h)
        .args(["compare", "baseline", "latest"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no baseline"));
    brink(&h)
        .args(["history", "baseline", &first_id])
        .assert()
        .code(0);
    let c = stdout_json(brink(&h).args(["compare", "baseline", "latest", "--format", "json"]));
    assert_eq!(c["before"][0], format!("run {first_id}"));
    assert_eq!(c["after"][0], format!("run {}", latest["id"]));

    brink(&h).args(["history", "rm", "latest"]).assert().code(0);
    let runs = stdout_json(brink(&h).args(["history", "--json"]));
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["baseline"], true);
    brink(&h)
        .args(["show", "99"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no run 99"));
}

/// The recorded seconds of the only run in `h`, and its status.
fn recorded(h: &Path) -> (usize, String) {
    let db = history::History::open(h).unwrap();
    let runs = db.list(&history::Filter::default()).unwrap();
    let run = runs.first().expect("a run was recorded");
    (db.seconds(run.id, 0).unwrap().len(), run.status.to_string())
}

#[test]
fn seconds_are_kept_as_the_run_goes_even_when_it_is_killed() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let mut child =
        std::process::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")))
            .env("BRINK_HISTORY", &h)
            .args(["run", &srv.url("/"), "-c", "2", "-d", "30s", "-q"])
            .spawn()
            .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = 0;
    while Instant::now() < deadline && seen < 3 {
        std::thread::sleep(Duration::from_millis(300));
        if h.exists() {
            seen = std::panic::catch_unwind(|| recorded(&h).0).unwrap_or(0);
        }
    }
    assert!(seen >= 3, "seconds appear while the run goes");
    assert_eq!(recorded(&h).1, "running");
    child.kill().unwrap();
    child.wait().unwrap();
    let (after_kill, status) = recorded(&h);
    assert!(after_kill >= seen, "{after_kill} < {seen}");
    assert_eq!(status, "died", "its process is gone: it will never finish");
}

#[test]
fn processes_recording_at_once_into_a_new_file_lose_nothing() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::from_millis(1))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let children: Vec<_> = (0..3)
        .map(|i| {
            let out = dir.path().join(format!("r{i}.json"));
            let child = std::process::Command::new(crate::support::held(
                assert_cmd::cargo::cargo_bin("brink"),
            ))
            .env("BRINK_HISTORY", &h)
            .args(["run", &srv.url("/"), "-c", "2", "-d", "3s", "-q", "--json"])
            .arg(&out)
            .spawn()
            .unwrap();
            (child, out)
        })
        .collect();
    let db_path = h.clone();
    let mut seconds_by_result = Vec::new();
    for (mut child, out) in children {
        assert!(child.wait().unwrap().success());
        let r: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
        seconds_by_result.push(r["timeseries"].as_array().unwrap().len());
    }
    let db = history::History::open(&db_path).unwrap();
    let runs = db.list(&history::Filter::default()).unwrap();
    assert_eq!(runs.len(), 3);
    let mut recorded: Vec<usize> = runs
        .iter()
        .map(|r| db.seconds(r.id, 0).unwrap().len())
        .collect();
    recorded.sort();
    seconds_by_result.sort();
    assert_eq!(recorded, seconds_by_result);
    assert!(runs
        .iter()
        .all(|r| r.status == model::RunStatus::Done && r.exit_code == Some(0)));
}

#[test]
fn a_history_that_cannot_be_written_changes_nothing_else() {
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, vec![b'x'; 8192]).unwrap();
    let json = dir.path().join("r.json");
    for history in [corrupt.as_path(), Path::new("/proc/no/such/dir/history.db")] {
        let out = brink(history)
            .args(["run", &srv.url("/"), "-c", "2", "-n", "100", "-q", "--json"])
            .arg(&json)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches("warning: run history not kept").count(),
            1,
            "warned once: {err}"
        );
        let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(r["summary"]["requests"], 100);
    }
    // --no-history records nothing at all.
    let h = dir.path().join("none.db");
    brink(&h)
        .args(["run", &srv.url("/"), "-n", "10", "-q", "--no-history"])
        .assert()
        .code(0);
    assert!(!h.exists());
}

/// A service searched under two settings: one table of capacity by tag, the search's line in
/// the list says its capacity (not only that it found one), and a history written before the
/// capacity column gets it from the stored results.
#[test]
fn searches_under_settings_give_one_capacity_table() {
    // A wall-clock verdict with a light load: beside other light tests only.
    let _cpu = crate::support::cpu_light();
    // Two slots of 10 ms (at most 200 req/s) and four (at most 400 req/s).
    let serve = |slots: usize| {
        testkit::serve_with(
            testkit::Options {
                slots: Some(slots),
                ..testkit::Options::default()
            },
            std::sync::Arc::new(|_: &testkit::Req| testkit::Reply::Full {
                status: 200,
                body: b"ok".to_vec(),
                delay: Duration::from_millis(10),
                slot: true,
                close: false,
            }),
        )
        .unwrap()
    };
    let (two, four) = (serve(2), serve(4));
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("history.db");
    let by_rate = ["--by", "rate", "--from", "50", "--to", "150"];
    for (srv, tag, by) in [
        (&two, "replicas=2", &["--to", "8"][..]),
        (&four, "replicas=4", &["--to", "8"][..]),
        (&two, "search=rate", &by_rate[..]),
    ] {
        brink(&h)
            .args(["find", &srv.url("/"), "--slo", "p99<35ms"])
            .args(by)
            .args(["--step", "2s", "--warmup", "1s", "--cooldown", "0s", "-q"])
            .args(["--tag", tag])
            .timeout(Duration::from_secs(120))
            .assert()
            .code(0);
    }
    let out = brink(&h).args(["history", "capacity"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = |tag: &str| {
        text.lines()
            .find(|l| l.starts_with(tag))
            .unwrap_or_else(|| panic!("no {tag} row:\n{text}"))
            .to_string()
    };
    let rps = |l: &str| -> f64 {
        let cell = l.split(" req/s").next().unwrap();
        cell.split_whitespace()
            .last()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    let (r2, r4) = (rps(&line("replicas=2")), rps(&line("replicas=4")));
    assert!(r2 > 120.0 && r2 < 210.0, "{text}");
    assert!(r4 > 1.6 * r2 && r4 < 420.0, "{text}");
    assert!(line("replicas=4").contains(" connections"), "{text}");
    // A search by rate reads in its own unit: its level is a rate, not connections.
    let rate = line("search=rate");
    assert!(
        rate.contains(" 150/s ") && !rate.contains("connection"),
        "{text}"
    );
    // Each row says how its search stepped, and whether brink's host disturbed it (none
    // was here: a quiet search's mark is '-').
    assert!(rate.contains(" rate "), "{text}");
    assert!(
        text.lines().next().unwrap_or("").contains(" host "),
        "{text}"
    );
    assert!(rate.contains(" rate        -  "), "{text}");
    assert!(line("replicas=2").contains(" connections "), "{text}");
    // The run list: a run's row and a search's line up, column by column.
    brink(&h)
        .args(["run", &two.url("/"), "-n", "5", "-c", "1", "-q"])
        .assert()
        .success();
    let out = brink(&h).arg("history").output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let name_at = list
        .lines()
        .next()
        .unwrap_or("")
        .find("name")
        .expect("header");
    let rows: Vec<&str> = list.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{list}");
    for row in rows {
        let c: Vec<char> = row.chars().collect();
        assert!(c[name_at - 1] == ' ' && c[name_at] != ' ', "{list}");
    }
    let rows = stdout_json(brink(&h).args(["history", "capacity", "--json"]));
    let by: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["tags"][0][1].as_str().unwrap(), r["by"].as_str().unwrap()))
        .collect();
    assert_eq!(
        by,
        [("2", "connections"), ("4", "connections"), ("rate", "rate")],
        "{rows}"
    );
    // The list says each search's capacity.
    let list = brink(&h).args(["history"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains(" capacity ") && list.contains(" req/s at "),
        "{list}"
    );
    // brink serve's runs page has the same table.
    let (server, url) = crate::serve::serve(&h, &[]);
    let (status, _, page) = crate::serve::get(&crate::serve::Ui::of(&url), "/", "");
    drop(server);
    assert_eq!(status, 200);
    let table = page
        .split("<h2>Capacity by tag</h2>")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap_or_else(|| panic!("no capacity table:\n{page}"));
    for (tag, rps) in [("replicas=2", r2), ("replicas=4", r4)] {
        let row = table
            .split("<tr>")
            .find(|r| r.contains(tag))
            .unwrap_or_else(|| panic!("no {tag} row: {table}"));
        assert!(
            row.contains(&format!("{} req/s", results::fmt::fmt_rate(rps))),
            "{row}"
        );
        assert!(row.contains(" connections</td>"), "{row}");
    }
    // An older file: the column emptied, the migration's update fills it from the results.
    let conn = rusqlite::Connection::open(&h).unwrap();
    conn.execute_batch("UPDATE runs SET capacity_rps = NULL; PRAGMA user_version = 2;")
        .unwrap();
    conn.execute_batch("ALTER TABLE runs DROP COLUMN capacity_rps;")
        .unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN disturbed; ALTER TABLE runs DROP COLUMN floor;",
    )
    .unwrap();
    drop(conn);
    let again = stdout_json(brink(&h).args(["history", "capacity", "--json"]));
    assert!(
        again
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["capacity_rps"].as_f64().is_some_and(|x| x > 100.0)),
        "{again}"
    );
}

/// A history the user names (`BRINK_HISTORY` or `--history`) lives in a folder of theirs:
/// the file is private (0600), the folder is left as it was (only brink's own folder under
/// `~/.local/share` is brink's to narrow); a folder missing on the way is made 0700.
#[test]
fn a_history_the_user_names_leaves_their_folder_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).unwrap();
    let theirs = tempfile::tempdir().unwrap();
    std::fs::set_permissions(theirs.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let by_env = theirs.path().join("h.db");
    let by_flag = theirs.path().join("new/h2.db");
    let url = srv.url("/");
    let run = ["run", url.as_str(), "-n", "3", "-c", "1", "-q"];
    brink(&by_env).args(run).assert().success();
    brink(&by_env)
        .args(run)
        .arg("--history")
        .arg(&by_flag)
        .assert()
        .success();
    assert_eq!(mode(theirs.path()), 0o755, "the user's folder");
    assert_eq!(mode(&by_env), 0o600);
    assert_eq!(mode(&by_flag), 0o600);
    assert_eq!(mode(&theirs.path().join("new")), 0o700, "made by brink");
}
