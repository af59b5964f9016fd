//! The history against real SQLite files: a run recorded as it goes and then in full, listed
//! and filtered, named by id or `latest~N`, removed, marked as a baseline; several writers at
//! once lose nothing; a file that is not a history, or one from a newer brink, is refused.

use super::*;

fn result() -> RunResult {
    serde_json::from_str(include_str!("fixtures/run.json")).expect("fixture is a result")
}

fn meta(name: &str, target: &str, tags: &[(&str, &str)]) -> Meta {
    Meta {
        started_at: "2026-11-23T01:00:00Z".into(),
        command: model::RunCommand::Run,
        name: name.into(),
        target: target.into(),
        method: "GET".into(),
        load_model: Some(model::LoadModel::Closed),
        load_level: "2 connections".into(),
        host: "test".into(),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Meta::default()
    }
}

#[test]
fn a_run_is_kept_as_it_goes_and_then_whole() {
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("sub/history.db")).unwrap();
    let id = h
        .begin(&meta("run", "http://a/", &[("env", "ci")]))
        .unwrap();
    assert_eq!(
        h.run(id).unwrap().unwrap().status,
        model::RunStatus::Running
    );
    let r = result();
    for row in &r.timeseries {
        h.second(id, 0, "run", row).unwrap();
    }
    // While it runs, the seconds are there and the result is not.
    let seconds = h.seconds(id, 0).unwrap();
    assert_eq!(seconds.len(), r.timeseries.len());
    assert_eq!(seconds[0].3.requests, r.timeseries[0].requests);
    assert!(h.result(id).unwrap().is_none());
    let after_first = h.seconds(id, seconds[0].0).unwrap();
    assert_eq!(after_first.len(), r.timeseries.len() - 1);

    h.finish(id, &r).unwrap();
    h.exit(id, 0).unwrap();
    let run = h.run(id).unwrap().unwrap();
    assert_eq!(run.status, model::RunStatus::Done);
    assert_eq!(run.requests, Some(r.summary.requests as i64));
    assert_eq!(run.p99_ms, Some(r.summary.latency_ms.p99));
    assert_eq!(run.exit_code, Some(0));
    assert_eq!(run.tags, [("env".to_string(), "ci".to_string())]);
    let back = h.result(id).unwrap().unwrap();
    assert_eq!(back.summary.latency_hdr, r.summary.latency_hdr);
    assert_eq!(back.seed, r.seed);
}

#[test]
fn runs_are_listed_newest_first_filtered_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("h.db")).unwrap();
    let a = h
        .begin(&meta("login", "http://a/", &[("env", "ci")]))
        .unwrap();
    let b = h.begin(&meta("login", "http://b/", &[])).unwrap();
    let c = h
        .begin(&meta("search", "http://a/", &[("env", "prod")]))
        .unwrap();
    let ids = |f: Filter| -> Vec<i64> { h.list(&f).unwrap().iter().map(|r| r.id).collect() };
    assert_eq!(ids(Filter::default()), [c, b, a]);
    let by_target = Filter {
        target: Some("http://a/".into()),
        ..Filter::default()
    };
    assert_eq!(ids(by_target), [c, a]);
    let by_tag = Filter {
        tags: vec![("env".into(), "ci".into())],
        ..Filter::default()
    };
    assert_eq!(ids(by_tag), [a]);
    let by_name = Filter {
        name: Some("login".into()),
        limit: 1,
        ..Filter::default()
    };
    assert_eq!(ids(by_name), [b]);

    assert_eq!(h.resolve("latest").unwrap(), c);
    assert_eq!(h.resolve("latest~2").unwrap(), a);
    assert_eq!(h.resolve(&b.to_string()).unwrap(), b);
    assert!(h.resolve("latest~3").unwrap_err().0.contains("fewer runs"));
    assert!(h.resolve("999").unwrap_err().0.contains("no run 999"));
    assert!(h.resolve("yesterday").unwrap_err().0.contains("give an id"));

    assert_eq!(h.baseline_of(a).unwrap(), None);
    h.set_baseline(a).unwrap();
    let a2 = h.begin(&meta("login", "http://a/", &[])).unwrap();
    assert_eq!(h.baseline_of(a2).unwrap(), Some(a));
    h.set_baseline(a2).unwrap();
    assert_eq!(
        h.baseline_of(a).unwrap(),
        Some(a2),
        "one baseline per target and name"
    );
    assert!(!h.run(a).unwrap().unwrap().baseline);

    assert!(h.remove(b).unwrap());
    assert!(!h.remove(b).unwrap());
    assert!(h.run(b).unwrap().is_none());
}

#[test]
fn writers_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let r = result();
    let threads: Vec<_> = (0..4)
        .map(|w| {
            let (path, r) = (path.clone(), r.clone());
            std::thread::spawn(move || {
                // Each writer has its own connection, as separate processes would.
                let h = History::open(&path).unwrap();
                for i in 0..10 {
                    let id = h
                        .begin(&meta(&format!("w{w}-{i}"), "http://a/", &[]))
                        .unwrap();
                    for row in &r.timeseries {
                        h.second(id, 0, "run", row).unwrap();
                    }
                    h.finish(id, &r).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let h = History::open(&path).unwrap();
    let all = h
        .list(&Filter {
            limit: 1000,
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(all.len(), 40);
    assert!(all.iter().all(|r| r.status == model::RunStatus::Done));
    for run in &all {
        assert_eq!(h.seconds(run.id, 0).unwrap().len(), r.timeseries.len());
    }
}

#[test]
fn what_is_not_a_usable_history_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![b'x'; 8192]).unwrap();
    assert!(History::open(&junk).is_err());

    let newer = dir.path().join("newer.db");
    let conn = Connection::open(&newer).unwrap();
    conn.pragma_update(None, "user_version", schema::VERSION + 1)
        .unwrap();
    drop(conn);
    let e = History::open(&newer).err().expect("refused");
    assert!(e.0.contains("newer than this brink"), "{e}");

    // Opening twice migrates once.
    let fresh = dir.path().join("fresh.db");
    drop(History::open(&fresh).unwrap());
    let h = History::open(&fresh).unwrap();
    let v: i64 = h
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, schema::VERSION);
}

#[test]
fn one_verdict_for_every_view() {
    use model::{RunCommand as C, RunStatus as S};
    let run = |status, command, slo_passed, interrupted, max: Option<f64>| Run {
        status,
        command,
        slo_passed,
        interrupted,
        max_sustainable: max,
        ..Run::default()
    };
    let cases = [
        (run(S::Running, C::Run, None, false, None), Verdict::Running),
        (
            run(S::Failed, C::Find, Some(true), false, Some(4.0)),
            Verdict::Failed,
        ),
        (run(S::Died, C::Run, Some(true), false, None), Verdict::Died),
        (
            run(S::Done, C::Run, Some(true), true, None),
            Verdict::Interrupted,
        ),
        // A search's steps fail by design: it is judged by whether a level held.
        (
            run(S::Done, C::Find, Some(false), false, Some(16.0)),
            Verdict::Found,
        ),
        (
            run(S::Done, C::Find, Some(false), false, None),
            Verdict::NoneHeld,
        ),
        (run(S::Done, C::Run, Some(true), false, None), Verdict::Pass),
        (
            run(S::Done, C::K8sRun, Some(false), false, None),
            Verdict::Fail,
        ),
        (run(S::Done, C::Run, None, false, None), Verdict::NoSlos),
    ];
    for (r, want) in cases {
        assert_eq!(r.verdict(), want, "{r:?}");
    }
}

/// A search that kept a step its own host disturbed twice is marked in the history, and one
/// whose capacity is a floor (every level up to --to passed) says "at least", with its
/// capacity step's figures, not the pool of all its steps: when it is recorded, and in a
/// history written before the marks existed (read from its result).
#[test]
fn a_search_that_kept_a_disturbed_step_is_marked() {
    let found = |disturbed: bool| {
        let mut r = result();
        let step = results::find::StepRow {
            level: 8.0,
            disturbed,
            pass: !disturbed,
            ok_rps: 412.0,
            p99: 21.5,
            requests: 100,
            errors: 1,
            ..Default::default()
        };
        // The disturbed search failed its one step; the other passed it, up to --to 8.
        let (max_sustainable, stop) = match disturbed {
            true => (None, Some(results::find::Stop::FirstFailed { from: 8.0 })),
            false => (
                Some(results::find::Sustained {
                    level: 8.0,
                    rps: 412.0,
                    slo: Vec::new(),
                    resolution: None,
                }),
                Some(results::find::Stop::AllPassed { to: 8.0 }),
            ),
        };
        r.find = Some(results::find::FindResult {
            by: results::find::By::Connections,
            steps: vec![step],
            max_sustainable,
            knee: None,
            usl: None,
            diagnosis: Vec::new(),
            findings: Vec::new(),
            stopped: String::new(),
            stop,
            hooks: Vec::new(),
            captures: Vec::new(),
            reruns: Vec::new(),
            every_ms: None,
            held_streams: false,
        });
        r
    };
    let dir = tempfile::tempdir().unwrap();
    let h = History::open(&dir.path().join("now.db")).unwrap();
    let search = Meta {
        command: model::RunCommand::Find,
        ..meta("find", "http://a/", &[])
    };
    let (a, b) = (h.begin(&search).unwrap(), h.begin(&search).unwrap());
    h.finish(a, &found(true)).unwrap();
    h.finish(b, &found(false)).unwrap();
    assert!(h.run(a).unwrap().unwrap().disturbed);
    let quiet = h.run(b).unwrap().unwrap();
    assert!(!quiet.disturbed && quiet.floor);
    assert_eq!(
        quiet.capacity().as_deref(),
        Some("capacity at least 412 req/s at 8 connections")
    );
    assert_eq!(
        (quiet.ok_rps, quiet.p99_ms, quiet.error_rate),
        (Some(412.0), Some(21.5), Some(0.01)),
        "the capacity step's figures"
    );

    // A history at schema 3 holding the same two results: the migration reads the mark.
    let old = dir.path().join("old.db");
    {
        let conn = rusqlite::Connection::open(&old).unwrap();
        for sql in &schema::MIGRATIONS[..3] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        for d in [true, false] {
            let json = serde_json::to_string(&found(d)).unwrap();
            conn.execute(
                "INSERT INTO runs (started_at, status, command, name, target, method,
                 load_model, load_level, brink_version, host, result)
                 VALUES ('2026-11-01T00:00:00Z', 'done', 'find', 'find', 'http://a/', 'GET',
                 'closed', 'by connections', '0', 'test', ?1)",
                [json],
            )
            .unwrap();
        }
    }
    let h = History::open(&old).unwrap();
    let (first, second) = (h.run(1).unwrap().unwrap(), h.run(2).unwrap().unwrap());
    assert!(first.disturbed && !first.floor);
    assert!(!second.disturbed && second.floor);
}
