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
    let o = crate::support::held(Command::cargo_bin("brink"))
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

const FLAGS: [&str; 26] = [
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
    "--annotation",
    "sidecar.istio.io/inject=false",
    "--image-pull-secret",
    "regcred",
    "--service-account",
    "load-gen",
    "--rbac",
];

/// The rendered objects without the bodies of their PEM blocks (a run's CA and keys are
/// fresh each time); the blocks' first and last lines stay.
fn without_key_material(yaml: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in yaml.lines() {
        let t = line.trim();
        if t.starts_with("-----END") {
            inside = false;
        }
        if !inside {
            out.push_str(line);
            out.push('\n');
        }
        if t.starts_with("-----BEGIN") {
            inside = true;
        }
    }
    out
}

#[test]
fn rendered_objects_are_the_golden_file_and_pass_the_schemas() {
    let (code, yaml, err) = render(&FLAGS);
    assert_eq!(code, Some(0), "{err}");
    let golden = here().join("golden/k8s-render.yaml");
    let stable = without_key_material(&yaml);
    if std::env::var_os("BRINK_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &stable).unwrap();
    }
    let want =
        std::fs::read_to_string(&golden).expect("golden file (BRINK_UPDATE_GOLDEN=1 writes it)");
    // Each run makes its own CA: two renders share no key.
    let (_, again, _) = render(&FLAGS);
    assert_ne!(again, yaml, "a fresh CA and keys per render");
    assert_eq!(without_key_material(&again), stable);
    for block in ["CERTIFICATE", "PRIVATE KEY"] {
        assert!(
            yaml.contains(&format!("-----BEGIN {block}-----")),
            "{block}"
        );
    }
    assert_eq!(
        stable, want,
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
            for kind in [
                "role",
                "serviceaccount",
                "rolebinding",
                "secret",
                "service",
                "networkpolicy",
                "job",
            ] {
                assert!(
                    text.contains(&format!("passed for resource {kind}/")),
                    "{kind}: {text}"
                );
            }
        }
        Err(e) => {
            assert!(!required, "kubernetes-validate is required here: {e}");
            eprintln!("kubernetes-validate is not installed: the schema check is skipped");
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
        "target: http://svc.test:9/\ndata:\n  u: { csv: ../users.csv }\nscenarios:\n  - name: s\n    load: { connections: 1, duration: 1s }\n    requests: [ { path: / } ]\n",
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
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--cpu",
                "abc",
            ],
            "--cpu abc: a Kubernetes quantity",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--memory",
                "1GB",
            ],
            "--memory 1GB: a Kubernetes quantity",
        ),
        (
            vec!["k8s/plan.yaml", "--workers", "2", "--image", "i", "--rbac"],
            "--rbac needs --namespace",
        ),
        (
            vec!["http://127.0.0.1:8080/", "--workers", "2", "--image", "i"],
            "the target 127.0.0.1 is this machine",
        ),
        (
            vec!["http://2130706433:8080/", "--workers", "2", "--image", "i"],
            "the target 2130706433 is this machine",
        ),
        (
            vec!["http://[::]:8080/", "--workers", "2", "--image", "i"],
            "is this machine",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--out",
                "prometheus=http://127.1:9090/api/v1/write",
            ],
            "--out prometheus=http://127.1:9090/api/v1/write 127.1 is this machine",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--observe",
                "pid=1",
            ],
            "--observe pid=1: in a run on pods that is a process of the coordinator's pod",
        ),
        (
            vec!["k8s/plan.yaml", "--workers", "2", "--image", ""],
            "--image \"\"",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--annotation",
                "Bad Key=v",
            ],
            "--annotation \"Bad Key\"",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--annotation",
                "k=v",
                "--annotation",
                "k=w",
            ],
            "--annotation: k is given twice",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--node-selector",
                "k=bad value!",
            ],
            "--node-selector k=bad value!: a label value",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--toleration",
                "k=v=w:NoSchedule",
            ],
            "--toleration k=v=w:NoSchedule",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--memory",
                "1",
            ],
            "--memory 1: out of range (memory: from 4Mi to 1Pi)",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--cpu",
                "1e400",
            ],
            "--cpu 1e400",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--service-account",
                "Bad Name",
            ],
            "--service-account \"Bad Name\"",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--rbac",
                "--namespace",
                "",
            ],
            "--namespace \"\"",
        ),
        (
            vec![
                "k8s/plan.yaml",
                "--workers",
                "2",
                "--image",
                "i",
                "--json",
                "r.json",
            ],
            "--json: rendering runs nothing",
        ),
        (
            vec!["http://localhost:8080/", "--workers", "2", "--image", "i"],
            "or --allow-loopback-target",
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
    // Starting etcd, the API server and the controller manager takes both CPUs for a while:
    // nothing that measures time runs beside it.
    let _cpu = crate::support::cpu_exclusive();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k8s/job_pods.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&bin)
        .arg(crate::support::held(env!("CARGO_BIN_EXE_brink")))
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
    // The namespace enforces the "restricted" Pod Security Standard: no pod was refused.
    assert_eq!(r["refused"], serde_json::json!([]), "{r}");
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
            cmd.ends_with(&[
                "--order-file",
                "/run/brink/token/order",
                "--tls-dir",
                "/run/brink/token"
            ]),
            "{cmd:?}"
        );
        assert!(!cmd.contains(&"plan.yaml"), "{cmd:?}");
        assert_eq!(
            p["volumes"],
            serde_json::json!(["token", "plan", "scratch"]),
            "{p}"
        );
        // The label the NetworkPolicy admits the coordinator by is the one the Job
        // controller puts on its pods.
        assert_eq!(
            p["labels"]["batch.kubernetes.io/job-completion-index"], i,
            "{p}"
        );
    }
}

/// The whole `brink k8s run` and `k8s find` against the real control plane, in a namespace
/// enforcing the "restricted" Pod Security Standard, as a user bound only to the Role brink
/// prints, the pods run as local processes by the test's process kubelet (tests/k8s/
/// kubelet.py: the image's non-root user, Secret files with their modes and the pod's
/// fsGroup, a read-only root, log streams cut once): one run clashes with an existing
/// Service, one runs to its end over 3 workers, one is interrupted, one loses its CLI to
/// SIGKILL, and one searches a server of known capacity.
#[test]
fn k8s_run_drives_a_real_job_and_keeps_its_merged_result() {
    let Some(bin) = control_plane() else { return };
    // The control plane's start takes both CPUs for a while: alone.
    let _cpu = crate::support::cpu_exclusive();
    let server = testkit::serve(testkit::handlers::fixed(std::time::Duration::from_millis(
        1,
    )))
    .expect("server");
    // 4 slots of 20 ms: at most 200 req/s, whoever sends them.
    let slotted = testkit::serve_with(
        testkit::Options {
            threads: 2,
            slots: Some(4),
            ..testkit::Options::default()
        },
        testkit::handlers::slotted(std::time::Duration::from_millis(20)),
    )
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
    plan("short", "rate: 100/s, duration: 4s");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/k8s/k8s_run.py");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .arg(&bin)
        .arg(crate::support::held(env!("CARGO_BIN_EXE_brink")))
        .arg(&plans)
        .arg(&out)
        .arg(slotted.url("/"))
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let nothing_left = serde_json::json!({
        "jobs": [], "pods": [], "services": [], "configmaps": [], "secrets": [],
        "networkpolicies": []
    });
    assert_eq!(r["kubelet_errors"], serde_json::json!([]), "{r}");
    // Every pod could read what was mounted for it as the image's non-root user.
    assert_eq!(r["kubelet_refused"], serde_json::json!([]), "{r}");
    // The coordinators' log streams were cut (and read on from where they were): those of
    // the full, interrupted and searching runs at least.
    assert!(r["log_cuts"].as_u64().unwrap() >= 3, "{r}");

    // No node runs the pods: said in one line once --pod-wait is over, everything deleted.
    let lost = &r["no_node"];
    assert_eq!(lost["code"], 2, "{lost}");
    let err = lost["stderr"].as_str().unwrap().trim();
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.contains("--allow-loopback-target"))
        .collect();
    assert!(
        said.len() == 1 && err.contains("did not start within 3s") && err.contains("Pending"),
        "{err}"
    );
    assert_eq!(lost["left"], nothing_left, "{lost}");

    // A name taken: one line, exit 2, and what the run had made before is gone again (the
    // garbage collector follows the Job it owned).
    let clash = &r["clash"];
    assert_eq!(clash["code"], 2, "{clash}");
    let err = clash["stderr"].as_str().unwrap();
    assert!(err.contains("already exists"), "{err}");
    let mut only_theirs = nothing_left.clone();
    only_theirs["services"] = serde_json::json!(["clash"]);
    assert_eq!(clash["left"], only_theirs);

    // To its end, its log stream cut once: the exact split and the merged result, whole,
    // kept here, nothing left there.
    let full = &r["full"];
    assert_eq!(full["code"], 0, "{full}");
    assert_eq!(full["left"], nothing_left, "{full}");
    let stdout = full["stdout"].as_str().unwrap();
    assert!(stdout.contains("workers       3 merged"), "{stdout}");
    assert!(
        !full["stderr"].as_str().unwrap().contains("lost lines"),
        "{full}"
    );
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

    // The CLI killed outright: the Job ran to its end, and its TTL and the garbage collector
    // removed it, its pods, its Secret, Service and NetworkPolicy.
    let killed = &r["killed"];
    assert_eq!(killed["code"], -9, "{killed}");
    assert_eq!(killed["left"], nothing_left, "{killed}");
    // Every request the server answered is in a result, or was sent by the run no one
    // waited for (its 400), or was in flight when the interrupted run stopped (its
    // `unfinished`: the server may have answered it after the worker stopped reading).
    let in_flight = kept["summary"]["unfinished"].as_u64().unwrap_or(0);
    let answered = server.counters.requests();
    let accounted = 600 + cut_requests + 400;
    assert!(
        (accounted..=accounted + in_flight).contains(&answered),
        "the server answered {answered}; results hold {accounted}, {in_flight} unfinished"
    );

    // The search over 3 pods: the server's 200 req/s, as one machine finds it.
    let found = &r["found"];
    assert_eq!(found["left"], nothing_left, "{found}");
    let pods: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("found.json")).unwrap()).unwrap();
    let url = slotted.url("/");
    let (code, local, text) = crate::find::find(
        &[
            &url,
            "--by",
            "rate",
            "--from",
            "50",
            "--to",
            "800",
            "--slo",
            "p99<100ms",
            "--step",
            "2s",
            "--warmup",
            "1s",
            "--cooldown",
            "0s",
            "--grace",
            "1s",
        ],
        std::time::Duration::from_secs(180),
    );
    assert_eq!(code, Some(0), "{text}");
    for (who, f) in [("pods", &pods), ("one machine", &local)] {
        let best = f["find"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ok_rps"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(
            (best - 200.0).abs() / 200.0 < 0.10,
            "{who}: max throughput {best}, capacity 200: {found}"
        );
    }
    let level = |f: &serde_json::Value| f["find"]["max_sustainable"]["level"].as_f64().unwrap();
    let (on_pods, alone) = (level(&pods), level(&local));
    eprintln!("max sustainable: {on_pods}/s over 3 pods, {alone}/s on one machine");
    // Each search ends within its last bracket (--precision 5%): two of them within two.
    assert!(
        (on_pods - alone).abs() / alone.max(on_pods) <= 0.10,
        "pods {on_pods}, one machine {alone}: {found}"
    );
    for step in pods["scenarios"].as_array().unwrap() {
        let names: Vec<&str> = step["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 3, "every step over the 3 worker pods: {step}");
    }

    // The runs are in the local history, the search as a search.
    let h = crate::support::held(Command::cargo_bin("brink"))
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
    // The runs that never started, and the one whose CLI was killed, have nothing kept.
    assert_eq!(names.len(), 3, "{runs}");
    assert!(names.contains(&"long") && names.contains(&"plan"), "{runs}");
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["command"] == "find" && r["name"] == names[0]),
        "the search is the newest run, kept as a search: {runs}"
    );
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
        let o = crate::support::held(Command::cargo_bin("brink"))
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
    let o = crate::support::held(Command::cargo_bin("brink"))
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

/// `k8s find --render`: the search travels in the Secret with the load (the coordinator pod
/// runs the search); hooks, which would run in a pod with no shell, are refused; a loopback
/// target with --allow-loopback-target is one warning, not a refusal.
#[test]
fn a_search_on_pods_renders_its_order_and_refuses_hooks() {
    let find = |extra: &[&str]| {
        let o = crate::support::held(Command::cargo_bin("brink"))
            .unwrap()
            .current_dir(here().join("fixtures"))
            .args(["k8s", "find", "http://checkout.shop.svc:8080/", "--render"])
            .args([
                "--workers",
                "2",
                "--image",
                "i",
                "--token-file",
                "k8s/token",
            ])
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, yaml, err) = find(&["--by", "rate", "--to", "5000", "--slo", "p99<50ms"]);
    assert_eq!(code, Some(0), "{err}");
    let order = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("order: "))
        .expect("the order in the Secret");
    let order: String = serde_json::from_str(order).unwrap();
    let order: serde_json::Value = serde_json::from_str(&order).unwrap();
    assert_eq!(order["search"]["by"], "rate", "{order}");
    assert_eq!(order["search"]["to"], "5000", "{order}");
    assert_eq!(
        order["load"]["slo"],
        serde_json::json!(["p99<50ms"]),
        "{order}"
    );
    // The Job lasts as long as the longest search, not the hour of an unknown length.
    let deadline: u64 = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("activeDeadlineSeconds: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(deadline > 600 && deadline < 3600, "{deadline}");
    let (code, out, err) = find(&["--hook-after", "echo done"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(err.contains("a search on pods runs no hooks"), "{err}");
    let o = crate::support::held(Command::cargo_bin("brink"))
        .unwrap()
        .current_dir(here().join("fixtures"))
        .args(["k8s", "render", "http://127.0.0.1:8080/", "-d", "2s"])
        .args(["--workers", "2", "--image", "i", "--allow-loopback-target"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.trim().lines().count() == 1 && err.contains("--allow-loopback-target"),
        "{err}"
    );
}

/// Values YAML would refuse or change (DEL, NEL) read back exactly through a YAML parser; the
/// Job's deadline counts the time completion checks may take; a sub-second --ttl is a second,
/// not "delete at once".
#[test]
fn odd_values_read_back_exactly_and_the_deadline_counts_the_wait() {
    let (code, yaml, err) = render(&[
        "http://checkout.shop.svc:8080/",
        "-d",
        "30s",
        "--complete-when",
        "/sold until $.sold >= 1",
        "--complete-within",
        "20m",
        "--workers",
        "1",
        "--image",
        "i",
        "--ttl",
        "500ms",
        "--annotation",
        "k=del\u{7f}here",
        "-H",
        "X-A: a\u{7f}b\u{85}c",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("objects.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let script = "import yaml,sys,json\n\
        docs=list(yaml.safe_load_all(open(sys.argv[1])))\n\
        job=[d for d in docs if d['kind']=='Job'][0]\n\
        sec=[d for d in docs if d['kind']=='Secret'][0]\n\
        print(json.dumps({'annotation': job['spec']['template']['metadata']['annotations']['k'],\n\
          'headers': json.loads(sec['stringData']['order'])['load']['headers'],\n\
          'deadline': job['spec']['activeDeadlineSeconds'],\n\
          'ttl': job['spec']['ttlSecondsAfterFinished']}))";
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&file)
        .output()
        .expect("python3 with PyYAML");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["annotation"], "del\u{7f}here");
    assert_eq!(r["headers"], serde_json::json!(["X-A: a\u{7f}b\u{85}c"]));
    // 30 s of load, up to 20 minutes of waiting for the work to complete, 10 minutes slack.
    assert_eq!(r["deadline"], 30 + 20 * 60 + 600);
    assert_eq!(r["ttl"], 1);
}
