//! The example plans in `examples/`: every one validates, and every one runs end to end (each
//! scenario shortened to a one-second ramp to 20 req/s with flags) against the demo service, whose
//! endpoints they were written for, and meets its latency and error SLOs at that light load.

use assert_cmd::Command;
use std::path::PathBuf;
use std::time::Duration;

fn examples() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut plans: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    plans.sort();
    plans
}

#[test]
fn every_example_validates() {
    let plans = examples();
    assert!(plans.len() >= 5, "{plans:?}");
    for p in plans {
        crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .arg("validate")
            .arg(&p)
            .assert()
            .code(0);
    }
}

/// Every whole plan the README shows (a `yaml` block that starts with `target:`) validates as
/// written.
#[test]
fn the_readme_s_plans_validate() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let blocks: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.starts_with("target:") && b.contains("scenarios:"))
        .collect();
    assert!(!blocks.is_empty(), "the README shows a plan");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "email,password\na@x.test,pw\n",
    )
    .unwrap();
    for (i, b) in blocks.iter().enumerate() {
        let p = dir.path().join(format!("readme-{i}.yaml"));
        std::fs::write(&p, b).unwrap();
        let out = crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .arg("validate")
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README plan {i}:\n{b}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_example_runs_against_the_demo_service() {
    // The plans' latency objectives must hold (p95 < 100 ms on a 2 ms service): a verdict on
    // time, with a light load (under a tenth of a CPU). Shared, six tests and a release build
    // beside it once made a p95 of 148 ms.
    let _cpu = crate::support::cpu_light();
    let demo = testkit::demo::spawn(8, Duration::from_millis(2)).unwrap();
    let target = demo.server.url("");
    for p in examples() {
        let out = crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .arg("run")
            .arg(&p)
            .args([
                "--target",
                &target,
                "--stages",
                "1s:20/s",
                "-q",
                "--json",
                "/dev/stdout",
            ])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "{}: {code:?} {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("result JSON");
        assert_eq!(code == Some(0), r["slo_passed"] == true, "{}", p.display());
        for s in r["scenarios"].as_array().unwrap() {
            // Latency and error objectives hold at this light load; only the throughput floors
            // (`rps >= N`, written for the plan's own rates) may miss under the shortened load.
            for slo in s["slo"].as_array().unwrap() {
                let metric = slo["metric"].as_str().unwrap();
                assert!(
                    slo["pass"] == true || metric.starts_with("rps"),
                    "{}: {slo}",
                    p.display()
                );
            }
            // A 0 -> 20/s ramp over 1 s starts 10 iterations (the area under the ramp), each
            // sent: 10 requests, or for the one flow of four steps (login, list x3) 10 logins.
            // A flow's later steps are not started once the schedule is over, and its last
            // two iterations are due 106 and 51 ms before that: on a busy machine a stall
            // there cuts their lists (seen once in CI: 39 of 40). So the flow sends 10
            // logins exactly and 24 to 30 lists (at most those two iterations cut short).
            let flow = p.ends_with("browse-flow.yaml");
            let sc = &s["summary"]["schedule"];
            assert_eq!(
                (&sc["intended"], &sc["not_sent"]),
                (&10.into(), &0.into()),
                "{} {}: {sc}",
                p.display(),
                s["name"]
            );
            let sent = |name: &str| {
                s["requests"]
                    .as_array()
                    .and_then(|r| r.iter().find(|q| q["name"] == name))
                    .and_then(|q| q["summary"]["requests"].as_u64())
                    .unwrap_or_else(|| panic!("{}: no {name} row", p.display()))
            };
            if flow {
                assert_eq!(sent("login"), 10, "{}", p.display());
                assert!((24..=30).contains(&sent("list")), "{}", p.display());
                assert_eq!(
                    s["summary"]["requests"].as_u64(),
                    Some(sent("login") + sent("list"))
                );
            } else {
                assert_eq!(
                    s["summary"]["requests"],
                    10,
                    "{} {}",
                    p.display(),
                    s["name"]
                );
            }
        }
    }
}

/// A flow's rate is iterations: `browse-flow.yaml` (login, then `list` with `weight: 3`) at
/// 20 iterations/s sends 80 requests/s, and every figure says which it counts.
#[test]
fn a_flow_counts_iterations_and_requests_apart() {
    let demo = testkit::demo::spawn(8, Duration::from_millis(2)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let out = crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .args(["run", "examples/browse-flow.yaml", "--target"])
        .arg(demo.server.url(""))
        .args(["--rate", "20", "-d", "3s", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .current_dir(env!("CARGO_MANIFEST_DIR").to_string() + "/../..")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{text}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let s = &r["scenarios"][0];
    assert_eq!(s["load"]["flow_steps"], 4, "{}", s["load"]);
    assert!(text.contains("20 iterations/s (80 requests/s)"), "{text}");
    let sc = &s["summary"]["schedule"];
    assert_eq!(sc["iterations"], true, "{sc}");
    assert_eq!(sc["intended"], 60, "{sc}");
    assert_eq!(sc["not_sent"], 0, "{sc}");
    assert!(
        text.contains("60 iterations intended (20.0 iterations/s)"),
        "{text}"
    );
    let rps = s["summary"]["rps"].as_f64().unwrap();
    assert!(
        (72.0..=84.0).contains(&rps),
        "80 requests/s, measured {rps}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("target iterations/s"),
        "the chart's load line"
    );
    // The lists' checks ran on every list answer and all passed.
    let lists = s["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "list")
        .unwrap()["summary"]["requests"]
        .as_u64()
        .unwrap();
    for c in s["checks"].as_array().expect("checks") {
        assert_eq!(c["request"], "list", "{c}");
        assert_eq!(c["passed"].as_u64(), Some(lists), "{c}");
        assert_eq!(c["failed"], 0, "{c}");
    }
    assert!(text.contains("checks        100% passed"), "{text}");
}
