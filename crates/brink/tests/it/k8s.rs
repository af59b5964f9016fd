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
    // The pods run the plan from the Secret, under its own name (a pod keeps no history).
    assert!(
        yaml.contains(r#"\"load\":{\"url\":\"plan.yaml\"}"#),
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
            for kind in ["role", "secret", "service", "job"] {
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

/// Where etcd, kube-apiserver and kube-controller-manager are (built by
/// tests/k8s/control-plane.sh; .ci/run builds them once and caches them), or `None` to skip
/// (never when the control plane is required).
fn control_plane() -> Option<PathBuf> {
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
        return None;
    };
    Some(bin)
}

#[test]
fn a_real_api_server_takes_the_objects_and_the_job_controller_makes_the_pods() {
    // No kubelet here, so the pods stay Pending.
    let Some(bin) = control_plane() else { return };
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
        // The command the coordinator runs is in the Secret, not in the pod's spec.
        assert!(
            cmd.ends_with(&["--order-file", "/run/brink/token/order"]),
            "{cmd:?}"
        );
        assert!(!cmd.contains(&"plan.yaml"), "{cmd:?}");
        assert_eq!(p["volumes"], serde_json::json!(["token", "plan"]), "{p}");
    }
}

/// The whole `brink k8s run` against the real control plane, its pods run as local processes
/// by the test's process kubelet (tests/k8s/kubelet.py): one run clashes with an existing
/// Service, one runs to its end over 3 workers, one is interrupted.
#[test]
fn k8s_run_drives_a_real_job_and_keeps_its_merged_result() {
    let Some(bin) = control_plane() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let server = testkit::serve(testkit::handlers::fixed(std::time::Duration::from_millis(
        1,
    )))
    .expect("server");
    let dir = tempfile::tempdir().unwrap();
    let (plans, out) = (dir.path().join("plans"), dir.path().join("out"));
    std::fs::create_dir_all(&plans).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let plan = |name: &str, load: &str| {
        let text = format!(
            "target: {}\nscenarios:\n  - name: {name}\n    load: {{ {load} }}\n    flow:\n      - path: /\n",
            server.url("/")
        );
        std::fs::write(plans.join(format!("{name}.yaml")), text).unwrap();
    };
    plan("plan", "rate: 200/s, duration: 3s");
    plan("long", "rate: 100/s, duration: 60s");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k8s/k8s_run.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&bin)
        .arg(env!("CARGO_BIN_EXE_brink"))
        .arg(&plans)
        .arg(&out)
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let nothing_left = serde_json::json!({
        "jobs": [], "pods": [], "services": [], "configmaps": [], "secrets": []
    });
    assert_eq!(r["kubelet_errors"], serde_json::json!([]), "{r}");

    // No node runs the pods: said in one line once --pod-wait is over, everything deleted.
    let lost = &r["no_node"];
    assert_eq!(lost["code"], 2, "{lost}");
    let err = lost["stderr"].as_str().unwrap().trim();
    assert!(
        err.lines().count() == 1
            && err.contains("did not start within 3s")
            && err.contains("Pending"),
        "{err}"
    );
    assert_eq!(lost["left"], nothing_left, "{lost}");

    // A name taken: one line, exit 2, and what the run had made before is gone again.
    let clash = &r["clash"];
    assert_eq!(clash["code"], 2, "{clash}");
    let err = clash["stderr"].as_str().unwrap().trim();
    assert!(
        err.lines().count() == 1 && err.contains("already exists"),
        "{err}"
    );
    let mut only_theirs = nothing_left.clone();
    only_theirs["services"] = serde_json::json!(["clash"]);
    assert_eq!(clash["left"], only_theirs);

    // To its end: the exact split and the merged result, kept here, nothing left there.
    let full = &r["full"];
    assert_eq!(full["code"], 0, "{full}");
    assert_eq!(full["left"], nothing_left, "{full}");
    let stdout = full["stdout"].as_str().unwrap();
    assert!(stdout.contains("workers       3 merged"), "{stdout}");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("full.json")).unwrap()).unwrap();
    assert_eq!(result["summary"]["requests"], 600);
    assert_eq!(result["interrupted"], false);
    let workers = result["scenarios"][0]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3);
    for w in workers {
        assert_eq!(w["requests"], 200, "{w}");
        let skew = w["start_skew_ms"].as_f64().unwrap();
        eprintln!("{}: start skew {skew} ms", w["name"]);
        assert!(w["name"].as_str().unwrap().starts_with("full-"), "{w}");
    }

    // Interrupted: the coordinator stopped its workers and reported; 130, kept, cleaned up.
    let cut = &r["interrupted"];
    assert_eq!(cut["code"], 130, "{cut}");
    assert_eq!(cut["left"], nothing_left, "{cut}");
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("interrupted.json")).unwrap()).unwrap();
    assert_eq!(kept["interrupted"], true);
    let cut_requests = kept["summary"]["requests"].as_u64().unwrap();
    assert!(cut_requests > 0 && cut_requests < 6000, "{cut_requests}");
    // Every request the server answered is in one of the two results.
    assert_eq!(server.counters.requests(), 600 + cut_requests);

    // Both runs are in the local history.
    let h = Command::cargo_bin("brink")
        .unwrap()
        .args(["history", "--json", "--history"])
        .arg(out.join("history.db"))
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&h.stdout).expect("history JSON");
    let names: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // The runs that never started have nothing to keep; the two others are there.
    assert_eq!(names, ["long", "plan"], "{runs}");
}

#[test]
fn k8s_run_without_a_cluster_is_one_line_and_exit_2() {
    // A port nothing listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters: [{{name: t, cluster: {{server: \"https://{closed}\"}}}}]\nusers: [{{name: t, user: {{token: x}}}}]\ncontexts: [{{name: t, context: {{cluster: t, user: t}}}}]\n"
        ),
    )
    .unwrap();
    let missing = dir.path().join("missing");
    let cases: Vec<(&Path, Vec<&str>, String)> = vec![
        (&kubeconfig, vec![], "needs --workers".into()),
        (
            &missing,
            vec!["--workers", "2"],
            "no Kubernetes cluster to run on".into(),
        ),
        (
            &kubeconfig,
            vec!["--workers", "2"],
            format!("the Kubernetes API at https://{closed}/ does not answer"),
        ),
    ];
    for (config, extra, says) in cases {
        let o = Command::cargo_bin("brink")
            .unwrap()
            .current_dir(here().join("fixtures"))
            .env("KUBECONFIG", config)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .args(["k8s", "run", "k8s/plan.yaml", "--image", "i"])
            .args(&extra)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(
            err.trim().lines().count() == 1 && err.contains(&says),
            "{extra:?}: {err}"
        );
    }
}

/// Credentials in a plan's headers or on the command line go into the Secret only: no Job,
/// pod command or other object shows them. `--out` travels to the coordinator's pod;
/// `--metrics-listen`, which would listen where nothing scrapes, is refused with the reason.
#[test]
fn credentials_go_into_the_secret_only() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "target: http://10.0.0.1:8080\nscenarios:\n  - name: s\n    load: { connections: 1, duration: 1s }\n    requests: [ { path: /, headers: { Authorization: \"Bearer plan-s3cret\" } } ]\n",
    )
    .unwrap();
    let token = here().join("fixtures/k8s/token");
    let base = [
        "--workers",
        "2",
        "--image",
        "i",
        "--token-file",
        token.to_str().unwrap(),
    ];
    let mut from_plan = vec![plan.to_str().unwrap()];
    from_plan.extend(base);
    let mut from_flags = vec![
        "http://10.0.0.1:8080/",
        "-d",
        "1s",
        "-H",
        "X-Api-Key: flag-k3y",
    ];
    from_flags.extend(base);
    from_flags.extend(["--out", "prometheus=http://10.0.0.2:9090/api/v1/write"]);
    for (args, secret) in [(from_plan, "plan-s3cret"), (from_flags, "flag-k3y")] {
        let (code, yaml, err) = render(&args);
        assert_eq!(code, Some(0), "{err}");
        let docs: Vec<&str> = yaml.split("\n---\n").collect();
        for d in &docs {
            if !d.contains("kind: \"Secret\"") {
                assert!(!d.contains(secret), "{secret} outside the Secret: {d}");
            }
        }
        let secret_doc = docs
            .iter()
            .find(|d| d.contains("kind: \"Secret\""))
            .unwrap();
        assert!(
            secret_doc.contains(secret) || yaml_files_hold(secret_doc, secret),
            "the Secret carries it: {secret_doc}"
        );
        if secret == "flag-k3y" {
            assert!(
                secret_doc
                    .contains(r#"\"out\":[\"prometheus=http://10.0.0.2:9090/api/v1/write\"]"#),
                "--out travels: {secret_doc}"
            );
        }
    }
    // A header's {{env NAME}} is read here, where the user runs render: its value goes into
    // the Secret (the pods have none of this environment) and nowhere else.
    let o = Command::cargo_bin("brink")
        .unwrap()
        .current_dir(here().join("fixtures"))
        .env("BRINK_TEST_KEY", "env-s3cret")
        .args(["k8s", "render", "http://10.0.0.1:8080/", "-d", "1s"])
        .args(["-H", "X-Key: {{env BRINK_TEST_KEY}}"])
        .args(base)
        .output()
        .unwrap();
    let yaml = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for d in yaml.split("\n---\n") {
        let secret = d.contains("kind: \"Secret\"");
        assert_eq!(d.contains("env-s3cret"), secret, "{d}");
    }
    // A body read from a file here (-b @FILE) is refused as --body-file is: the pod has no
    // such file.
    let (code, _, err) = render(
        &["http://10.0.0.1:8080/", "-m", "POST", "-b", "@plan.yaml"]
            .into_iter()
            .chain(base)
            .collect::<Vec<_>>(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("-b @FILE names a file on this machine"),
        "{err}"
    );
    let mut listen = vec![
        "http://10.0.0.1:8080/",
        "-d",
        "1s",
        "--metrics-listen",
        "0.0.0.0:9100",
    ];
    listen.extend(base);
    let (code, out, err) = render(&listen);
    assert_eq!(code, Some(2), "{out}");
    assert!(err.contains("--out prometheus=URL"), "{err}");
}

/// Whether one of the Secret's base64 files holds `text`.
fn yaml_files_hold(doc: &str, text: &str) -> bool {
    use base64::Engine;
    doc.lines()
        .filter_map(|l| l.trim().strip_prefix("f0: \"")?.strip_suffix('"'))
        .filter_map(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
        .any(|b| String::from_utf8_lossy(&b).contains(text))
}
