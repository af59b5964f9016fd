//! `brink k8s render`: the objects of a run over pods are the committed golden file (same
//! flags, same token: the same bytes), they pass the Kubernetes 1.34 schemas strictly
//! (`kubernetes-validate --strict`, from PyPI; required in CI), and what cannot go into a
//! cluster is refused in one line.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn render(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::cargo_bin("brink")
        .unwrap()
        .current_dir(here().join("fixtures"))
        .args(["k8s", "render"])
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

const FLAGS: [&str; 20] = [
    "k8s/plan.yaml",
    "--workers",
    "3",
    "--image",
    "registry.example/brink:0.1.0",
    "--name",
    "checkout-load",
    "--namespace",
    "perf",
    "--token-file",
    "k8s/token",
    "--cpu",
    "2",
    "--memory",
    "1Gi",
    "--node-selector",
    "pool=load",
    "--toleration",
    "dedicated=load:NoSchedule",
    "--rbac",
];

#[test]
fn rendered_objects_are_the_golden_file_and_pass_the_schemas() {
    let (code, yaml, err) = render(&FLAGS);
    assert_eq!(code, Some(0), "{err}");
    let golden = here().join("golden/k8s-render.yaml");
    if std::env::var_os("BRINK_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &yaml).unwrap();
    }
    let want =
        std::fs::read_to_string(&golden).expect("golden file (BRINK_UPDATE_GOLDEN=1 writes it)");
    assert_eq!(
        yaml, want,
        "the rendered objects changed: check them, then BRINK_UPDATE_GOLDEN=1"
    );
    // The pods run the plan from the ConfigMap, under its own name, without the history.
    assert!(
        yaml.contains("- \"run\"\n            - \"plan.yaml\"\n            - \"--no-history\""),
        "{yaml}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("objects.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let required = std::env::var_os("BRINK_REQUIRE_K8S_VALIDATE").is_some();
    match std::process::Command::new("kubernetes-validate")
        .args(["--strict", "-k", "1.34.0"])
        .arg(&file)
        .output()
    {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{text}");
            for kind in ["role", "secret", "configmap", "service", "job"] {
                assert!(
                    text.contains(&format!("passed for resource {kind}/")),
                    "{kind}: {text}"
                );
            }
        }
        Err(e) => {
            assert!(!required, "kubernetes-validate is required here: {e}");
            eprintln!("kubernetes-validate not installed: schemas not checked");
        }
    }
}

#[test]
fn what_cannot_go_into_a_cluster_is_one_line_and_exit_2() {
    // A plan in sub/ naming ../users.csv: the file exists, but outside the plan's directory.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("users.csv"), "id\n1\n").unwrap();
    let up = dir.path().join("sub/up.yaml");
    std::fs::write(
        &up,
        "target: http://127.0.0.1:9/\ndata:\n  u: { csv: ../users.csv }\nscenarios:\n  - name: s\n    load: { connections: 1, duration: 1s }\n    requests: [ { path: / } ]\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["k8s/plan.yaml", "--image", "i"], "needs --workers"),
        (vec!["k8s/plan.yaml", "--workers", "2"], "--image"),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--name",
                "Bad_Name",
            ],
            "--name Bad_Name",
        ),
        (
            vec![
                "http://127.0.0.1:9/",
                "--workers",
                "2",
                "--image",
                "i",
                "--body-file",
                "k8s/token",
            ],
            "name it in a plan",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--toleration",
                "x:Sometimes",
            ],
            "--toleration x:Sometimes",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--spread",
                "rack",
            ],
            "--spread rack",
        ),
        (
            vec![up.to_str().unwrap(), "--workers", "2", "--image", "i"],
            "outside its own directory",
        ),
    ];
    for (args, says) in cases {
        let (code, out, err) = render(&args);
        assert_eq!(code, Some(2), "{args:?}: {out}{err}");
        assert!(out.is_empty(), "nothing printed on an error: {out}");
        assert!(
            err.trim().lines().count() == 1 && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_real_api_server_takes_the_objects_and_the_job_controller_makes_the_pods() {
    // etcd, kube-apiserver and kube-controller-manager built by tests/k8s/control-plane.sh
    // (.ci/run builds them once and caches them); no kubelet, so the pods stay Pending.
    let bin = std::env::var_os("BRINK_K8S_BIN")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/brink-ci/k8s")))
        .filter(|b| b.join("kube-apiserver").exists() && b.join("etcd").exists());
    let required = std::env::var_os("BRINK_REQUIRE_K8S").is_some();
    let Some(bin) = bin else {
        assert!(
            !required,
            "the control plane is required here: bash tests/k8s/control-plane.sh"
        );
        eprintln!("no control plane built: skipping (bash tests/k8s/control-plane.sh)");
        return;
    };
    let _cpu = crate::support::cpu_exclusive();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k8s/job_pods.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&bin)
        .arg(env!("CARGO_BIN_EXE_brink"))
        .arg(here().join("fixtures/k8s"))
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    // Every object was accepted as it is, by the server's own validation.
    for a in r["applied"].as_array().unwrap() {
        assert_eq!(a[1], 201, "{a}");
    }
    let job = &r["job"];
    assert_eq!(job["completionMode"], "Indexed");
    assert_eq!(
        (job["completions"].as_u64(), job["parallelism"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(job["backoffLimitPerIndex"], 0);
    assert_eq!(job["successPolicy"]["rules"][0]["succeededIndexes"], "0");
    let pods = r["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 4, "{r}");
    let mut indexes: Vec<&str> = pods.iter().map(|p| p["index"].as_str().unwrap()).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, ["0", "1", "2", "3"]);
    for p in pods {
        let i = p["index"].as_str().unwrap();
        // The names the coordinator dials: pod I is load-I in the Service's subdomain.
        assert_eq!(p["hostname"], format!("load-{i}").as_str(), "{p}");
        assert_eq!(p["subdomain"], "load", "{p}");
        assert!(p["env"]["JOB_COMPLETION_INDEX"].is_object(), "{p}");
        let cmd: Vec<&str> = p["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(&cmd[..3], ["brink", "k8s", "pod"], "{p}");
        assert!(
            cmd.ends_with(&["--", "run", "plan.yaml", "--no-history"]),
            "{cmd:?}"
        );
        assert_eq!(p["volumes"], serde_json::json!(["token", "plan"]), "{p}");
    }
}
