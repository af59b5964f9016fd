//! The committed JSON Schema describes real output: a result from an open-model run (which has
//! the `schedule` section), from a closed-model run and from a capacity search all validate.

use assert_cmd::Command;
use std::time::Duration;
use testkit::handlers;

fn schema() -> serde_json::Value {
    serde_json::from_str(crate::support::RESULT_SCHEMA).expect("schema is JSON")
}

fn result_of(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let out = crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(args)
        .arg("--json")
        .arg(&path)
        .arg("-q")
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn results_validate_against_the_committed_schema() {
    let srv = testkit::serve(handlers::fixed(Duration::ZERO)).unwrap();
    let url = srv.url("/");
    let validator = jsonschema::validator_for(&schema()).expect("schema compiles");
    for args in [
        vec!["run", url.as_str(), "-c", "2", "-n", "100"],
        vec!["run", url.as_str(), "--rate", "200", "-d", "1s"],
        vec![
            "find",
            url.as_str(),
            "--to",
            "2",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
        ],
    ] {
        let v = result_of(&args);
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{args:?}: {errors:#?}");
    }
    // The schema is strict enough to catch a renamed key.
    let mut v = result_of(&["run", url.as_str(), "-c", "1", "-n", "10"]);
    let s = v["summary"].as_object_mut().unwrap();
    let rps = s.remove("rps").unwrap();
    s.insert("req_per_sec".into(), rps);
    assert!(
        !validator.is_valid(&v),
        "a renamed summary key must fail validation"
    );
}
