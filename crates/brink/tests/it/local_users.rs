//! Another user of the same machine: `nobody`, through `runuser`, tries to read what brink
//! keeps and to redirect what it writes. brink's files are its user's alone (folders 0700,
//! files 0600), never at a predictable shared path, and never opened through a link.
//! These tests need root (to become `nobody`); CI runs as root and requires them.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Whether this process can act as a second user; when CI requires it, not being able to is
/// a failure rather than a skip.
pub fn second_user() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let runuser = Command::new("runuser").arg("--help").output().is_ok();
    if !(root && runuser) {
        assert!(
            std::env::var_os("BRINK_REQUIRE_SECOND_USER").is_none(),
            "BRINK_REQUIRE_SECOND_USER is set but this test cannot become nobody (root: {root}, runuser: {runuser})"
        );
        eprintln!("acting as a second local user needs root and runuser: skipping");
        return false;
    }
    true
}

/// Runs `args` as the user `nobody`.
pub fn as_nobody(args: &[&str]) -> Output {
    Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .args(args)
        .output()
        .expect("runuser runs")
}

/// A folder like `/tmp`: everyone may create in it (sticky), so `nobody` can plant things.
pub fn shared_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    d
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .mode()
        & 0o7777
}

/// `nobody` cannot read `file`.
fn unreadable_by_nobody(file: &Path) {
    let out = as_nobody(&["cat", file.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "nobody read {}: {} bytes",
        file.display(),
        out.stdout.len()
    );
}

fn brink() -> assert_cmd::Command {
    let mut c =
        assert_cmd::Command::new(crate::support::held(assert_cmd::cargo::cargo_bin("brink")));
    c.timeout(Duration::from_secs(60));
    c
}

/// A short search with an `after` hook writing to its stdout.
fn find_with_hook(url: &str, extra: &[&str], env: &[(&str, &Path)]) -> (Output, serde_json::Value) {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let json = out_dir.path().join("r.json");
    let mut c = brink();
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["find", url, "--to", "2", "--step", "2s", "--warmup", "0s"])
        .args([
            "--cooldown",
            "0s",
            "-q",
            "--hook-after",
            "echo SECRET-OUTPUT",
        ])
        .args(extra)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("brink runs");
    let r = std::fs::read(&json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, r)
}

/// Without a history, hook outputs go to a fresh folder only brink's user can enter, not to
/// the predictable `$TMPDIR/brink-hooks` another user made first; and a hooks folder that
/// belongs to another user, or a link planted in one, is refused: a root-only file named by a
/// link is never overwritten.
#[test]
fn hook_outputs_cannot_be_read_or_redirected_by_another_user() {
    if !second_user() {
        return;
    }
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let shared = shared_dir();
    let planted = shared.path().join("brink-hooks");
    let made = as_nobody(&["mkdir", "-m", "777", planted.to_str().unwrap()]);
    assert!(made.status.success(), "{made:?}");

    let (out, r) = find_with_hook(
        &srv.url("/"),
        &["--no-history"],
        &[("TMPDIR", shared.path())],
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hook = &r["find"]["hooks"][0];
    assert_eq!(hook["exit_code"], 0, "{hook}");
    let stdout = PathBuf::from(hook["stdout"].as_str().expect("a stdout file"));
    assert_eq!(
        std::fs::read_dir(&planted).expect("list").count(),
        0,
        "nothing written into the folder another user made"
    );
    let folder = stdout.parent().expect("a folder");
    assert_eq!(mode(folder), 0o700, "{}", folder.display());
    assert_eq!(mode(&stdout), 0o600);
    assert_eq!(std::fs::metadata(folder).unwrap().uid(), 0);
    assert!(std::fs::read_to_string(&stdout)
        .unwrap()
        .contains("SECRET-OUTPUT"));
    unreadable_by_nobody(&stdout);
    std::fs::remove_dir_all(folder).expect("clean up");

    // A hooks folder another user owns, holding a link to a root-only file.
    let root_only = tempfile::tempdir().expect("temp dir");
    let precious = root_only.path().join("precious");
    std::fs::write(&precious, "keep").expect("write");
    let theirs = shared.path().join("theirs");
    as_nobody(&["mkdir", "-m", "777", theirs.to_str().unwrap()]);
    for name in ["after-search.out", "after-search.err"] {
        let l = theirs.join(name);
        std::os::unix::fs::symlink(&precious, &l).expect("link");
    }
    let (_, r) = find_with_hook(
        &srv.url("/"),
        &["--no-history", "--hooks-dir", theirs.to_str().unwrap()],
        &[],
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
    let error = r["find"]["hooks"][0]["error"].as_str().unwrap_or("");
    assert!(error.contains("another user"), "{}", r["find"]["hooks"]);

    // A folder of brink's user, with a link planted in it: refused, the target untouched.
    let mine = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(&precious, mine.path().join("after-search.out")).expect("link");
    let (_, r) = find_with_hook(
        &srv.url("/"),
        &["--no-history", "--hooks-dir", mine.path().to_str().unwrap()],
        &[],
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep");
    let error = r["find"]["hooks"][0]["error"].as_str().unwrap_or("");
    assert!(error.contains("link"), "{}", r["find"]["hooks"]);
}

/// The history (whole results, query strings with keys) is created 0600 in folders 0700, and
/// one left readable by an older brink is narrowed: another user reads none of it.
#[test]
fn the_history_is_its_users_alone() {
    if !second_user() {
        return;
    }
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let shared = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |data: &Path| {
        let out = brink()
            .env_remove("BRINK_HISTORY")
            .env("XDG_DATA_HOME", data)
            .args([
                "run",
                &srv.url("/?api_key=hunter2"),
                "-n",
                "5",
                "-c",
                "1",
                "-q",
            ])
            .output()
            .expect("brink runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let fresh = shared.path().join("fresh");
    run(&fresh);
    let db = fresh.join("brink/history.db");
    assert_eq!(mode(&fresh), 0o700);
    assert_eq!(mode(&fresh.join("brink")), 0o700);
    assert_eq!(mode(&db), 0o600);

    // As an older brink left it: folders 0755, the file 0644.
    let old = shared.path().join("old");
    std::fs::create_dir_all(old.join("brink")).unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(old.join("brink"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(&db, old.join("brink/history.db")).unwrap();
    std::fs::set_permissions(
        old.join("brink/history.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    run(&old);
    assert_eq!(mode(&old.join("brink")), 0o700);
    assert_eq!(mode(&old.join("brink/history.db")), 0o600);
    for side in ["history.db-wal", "history.db-shm"] {
        let p = old.join("brink").join(side);
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{side}");
        }
    }
    // Even with the folders opened up again, the file itself keeps nobody out.
    std::fs::set_permissions(old.join("brink"), std::fs::Permissions::from_mode(0o755)).unwrap();
    unreadable_by_nobody(&old.join("brink/history.db"));

    // A history named by the user in a folder of theirs: the file is private there too, and
    // a link planted at its name is refused.
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let named = tmp.path().join("h.db");
    let out = brink()
        .args([
            "run",
            &srv.url("/"),
            "-n",
            "3",
            "-c",
            "1",
            "-q",
            "--history",
        ])
        .arg(&named)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&named), 0o600);
    unreadable_by_nobody(&named);
    let link = shared.path().join("l.db");
    std::os::unix::fs::symlink(&db, &link).expect("link");
    let out = brink()
        .args(["history", "--history"])
        .arg(&link)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("link"), "{err}");
}

/// Results written into a folder everyone may write to (like /tmp): another user's file there
/// is replaced by one of ours, 0600 (its mode says nothing about ours), and another user's
/// FIFO or link at the name is refused, so nobody receives the result.
#[test]
fn results_in_a_shared_folder_reach_no_one_else() {
    if !second_user() {
        return;
    }
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let shared = shared_dir();
    let at = |n: &str| shared.path().join(n);
    let theirs = at("theirs");
    let made = as_nobody(&[
        "sh",
        "-c",
        &format!(
            "cd {} && touch r1.json && chmod 666 r1.json && mkdir theirs && touch theirs/f && ln -s {}/theirs/f r2.json && mkfifo r3.json",
            shared.path().display(),
            shared.path().display()
        ),
    ]);
    assert!(made.status.success(), "{made:?}");
    let run = |out: &Path| {
        brink()
            .args([
                "run",
                &srv.url("/?key=k3y"),
                "-n",
                "2",
                "-c",
                "1",
                "-q",
                "--no-history",
            ])
            .arg("--json")
            .arg(out)
            .output()
            .expect("brink runs")
    };
    let o = run(&at("r1.json"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(mode(&at("r1.json")), 0o600);
    assert_eq!(std::fs::metadata(at("r1.json")).unwrap().uid(), 0);
    unreadable_by_nobody(&at("r1.json"));
    for name in ["r2.json", "r3.json"] {
        let o = run(&at(name));
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("another user"), "{name}: {err}");
    }
    assert_eq!(std::fs::read(theirs.join("f")).unwrap().len(), 0);
}

/// A history, or a hooks folder, in a folder another user may write to is refused: there
/// they could make SQLite's -wal file first and read every run, or swap the hooks folder.
#[test]
fn a_history_or_hooks_folder_open_to_others_is_refused() {
    if !second_user() {
        return;
    }
    let srv = testkit::serve(testkit::handlers::fixed(Duration::ZERO)).expect("server");
    let shared = shared_dir();
    let out = brink()
        .args(["run", &srv.url("/"), "-n", "1", "-q", "--history"])
        .arg(shared.path().join("h.db"))
        .output()
        .expect("brink runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("other users may create files"), "{err}");
    assert!(!shared.path().join("h.db-wal").exists());
    // A hooks folder inside a folder of nobody's.
    let theirs = shared.path().join("theirs");
    as_nobody(&["mkdir", "-m", "777", theirs.to_str().unwrap()]);
    let (_, r) = find_with_hook(
        &srv.url("/"),
        &[
            "--no-history",
            "--hooks-dir",
            theirs.join("out").to_str().unwrap(),
        ],
        &[],
    );
    let error = r["find"]["hooks"][0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("other users") || error.contains("another user"),
        "{}",
        r["find"]["hooks"]
    );
    assert!(!theirs.join("out").join("after-search.out").exists());
}
