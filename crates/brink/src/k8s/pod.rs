//! The pod every index of a run's Job runs: what it mounts (the run's Secret, read-only; a
//! private scratch folder, the one place it writes), who it runs as (a non-root user with the
//! Secret's files readable through its group, no privilege escalation, no capabilities, the
//! runtime's seccomp profile, a read-only root filesystem: what a namespace enforcing the
//! "restricted" Pod Security Standard admits), and where it runs (requests equal to limits so
//! a generator is Guaranteed and never throttled unseen, node selectors, tolerations,
//! spreading, annotations, pull secrets, service account).

use super::check;
use super::inputs::{labels, secret_name, Inputs, JOB_LABEL, PORT};
use crate::cli::K8sObjectArgs;
use crate::exit::Fail;
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath,
    LocalObjectReference, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext, Toleration,
    TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use std::collections::BTreeMap;

/// The variable that holds the pod's address.
pub const POD_IP: &str = "POD_IP";
/// Where the token, the command and the run's TLS files are mounted.
pub const TOKEN_DIR: &str = "/run/brink/token";
/// The plan's directory in the pod (every pod's working directory).
pub const PLAN_DIR: &str = "/run/brink/plan";
/// The one folder a pod writes to (a worker's seconds until the coordinator has them):
/// `$TMPDIR`, an emptyDir, since the root filesystem is read-only.
pub const SCRATCH_DIR: &str = "/run/brink/scratch";
/// The image's user and group (the Containerfile's `USER 65532:65532`).
const USER: i64 = 65532;

pub fn pod_template(a: &K8sObjectArgs, i: &Inputs) -> Result<PodTemplateSpec, Fail> {
    let mut command = vec![
        "brink".to_string(),
        "k8s".into(),
        "pod".into(),
        "--workers".into(),
        i.workers.to_string(),
        "--name".into(),
        i.name.clone(),
        "--port".into(),
        PORT.to_string(),
        "--token-file".into(),
        format!("{TOKEN_DIR}/token"),
        "--order-file".into(),
        format!("{TOKEN_DIR}/order"),
        "--tls-dir".into(),
        TOKEN_DIR.into(),
    ];
    if let Some(nonce) = &i.report {
        command.extend(["--report".to_string(), nonce.clone()]);
    }
    let container = Container {
        name: "brink".into(),
        image: Some(a.image.clone()),
        command: Some(command),
        working_dir: Some(PLAN_DIR.to_string()),
        ports: Some(vec![ContainerPort {
            name: Some("brink".into()),
            container_port: i32::from(PORT),
            ..ContainerPort::default()
        }]),
        resources: resources(a)?,
        volume_mounts: Some(mounts()),
        env: Some(env()),
        security_context: Some(container_security()),
        ..Container::default()
    };
    let mut pod_labels = labels(&i.name);
    pod_labels.insert(JOB_LABEL.into(), i.name.clone());
    Ok(PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            annotations: pairs("--annotation", &a.annotation, false)?,
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            // With the headless Service of the same name, pod I is `NAME-I.NAME`.
            subdomain: Some(i.name.clone()),
            // Nothing in a pod talks to the Kubernetes API: no credentials for it.
            automount_service_account_token: Some(false),
            service_account_name: a.service_account.clone(),
            image_pull_secrets: (!a.image_pull_secret.is_empty()).then(|| {
                a.image_pull_secret
                    .iter()
                    .map(|n| LocalObjectReference { name: n.clone() })
                    .collect()
            }),
            security_context: Some(pod_security()),
            containers: vec![container],
            volumes: Some(volumes(i)),
            node_selector: pairs("--node-selector", &a.node_selector, true)?,
            tolerations: tolerations(a)?,
            topology_spread_constraints: spread(a, i)?,
            ..PodSpec::default()
        }),
    })
}

/// The image's non-root user; the Secret's files (0400, root's) are given to its group.
fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(USER),
        run_as_group: Some(USER),
        fs_group: Some(USER),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            ..SeccompProfile::default()
        }),
        ..PodSecurityContext::default()
    }
}

fn container_security() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Capabilities::default()
        }),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        ..SecurityContext::default()
    }
}

/// The pod's address (workers listen on it) and its scratch folder.
fn env() -> Vec<EnvVar> {
    vec![
        EnvVar {
            name: POD_IP.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "status.podIP".into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
        EnvVar {
            name: "TMPDIR".into(),
            value: Some(SCRATCH_DIR.into()),
            ..EnvVar::default()
        },
    ]
}

fn mounts() -> Vec<VolumeMount> {
    let mount = |name: &str, path: &str, read_only: bool| VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: Some(read_only),
        ..VolumeMount::default()
    };
    vec![
        mount("token", TOKEN_DIR, true),
        mount("plan", PLAN_DIR, true),
        mount("scratch", SCRATCH_DIR, false),
    ]
}

/// The token, the order and the TLS files; the plan and its files (else an empty working
/// folder: a worker never works in /); the scratch folder.
fn volumes(i: &Inputs) -> Vec<Volume> {
    let key = |key: &str, path: &str| KeyToPath {
        key: key.into(),
        path: path.into(),
        ..KeyToPath::default()
    };
    let from_secret = |items: Vec<KeyToPath>| SecretVolumeSource {
        secret_name: Some(secret_name(i)),
        default_mode: Some(0o400),
        items: Some(items),
        ..SecretVolumeSource::default()
    };
    let empty = || EmptyDirVolumeSource::default();
    let plan = if i.files.is_empty() {
        Volume {
            name: "plan".into(),
            empty_dir: Some(empty()),
            ..Volume::default()
        }
    } else {
        let items = i.files.iter().enumerate();
        Volume {
            name: "plan".into(),
            secret: Some(from_secret(
                items
                    .map(|(k, (path, _))| key(&format!("f{k}"), path))
                    .collect(),
            )),
            ..Volume::default()
        }
    };
    let mut given = vec![key("token", "token"), key("order", "order")];
    given.extend(i.tls.files.iter().map(|(k, _)| key(k, k)));
    vec![
        Volume {
            name: "token".into(),
            secret: Some(from_secret(given)),
            ..Volume::default()
        },
        plan,
        Volume {
            name: "scratch".into(),
            empty_dir: Some(empty()),
            ..Volume::default()
        },
    ]
}

/// Requests equal to limits: with both, the pods are Guaranteed.
fn resources(a: &K8sObjectArgs) -> Result<Option<ResourceRequirements>, Fail> {
    let mut r = BTreeMap::new();
    if let Some(c) = &a.cpu {
        r.insert("cpu".to_string(), Quantity(quantity("--cpu", c)?));
    }
    if let Some(m) = &a.memory {
        r.insert("memory".to_string(), Quantity(quantity("--memory", m)?));
    }
    Ok((!r.is_empty()).then(|| ResourceRequirements {
        requests: Some(r.clone()),
        limits: Some(r),
        ..ResourceRequirements::default()
    }))
}

/// A Kubernetes quantity as the API accepts it: a positive decimal number and one of its
/// suffixes (`2`, `500m`, `1.5`, `1Gi`, `512M`, `1e3`), of a size a pod can have: CPU from
/// 1m to 10,000 cores, memory from 4Mi to 1Pi (a bare `1` is one byte, surely a mistake).
pub fn quantity(flag: &str, v: &str) -> Result<String, Fail> {
    const SUFFIXES: [(&str, f64); 14] = [
        ("", 1.0),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
    ];
    let bad = || {
        Fail::input(format!(
            "{flag} {v}: a Kubernetes quantity, e.g. 2, 500m (CPU), 1Gi, 512Mi (memory)"
        ))
    };
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, suffix) = v.split_at(end);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let scale = match suffix.strip_prefix(['e', 'E']) {
        Some(e) if !e.is_empty() && e.chars().all(|c| c.is_ascii_digit()) => {
            10f64.powi(e.parse::<i32>().map_err(|_| bad())?)
        }
        _ => SUFFIXES
            .iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, x)| *x)
            .ok_or_else(bad)?,
    };
    let amount = number * scale;
    let (low, high, unit) = if flag == "--cpu" {
        (1e-3, 1e4, "CPU: from 1m to 10000 cores")
    } else {
        (
            4.0 * 1048576.0,
            1125899906842624.0,
            "memory: from 4Mi to 1Pi",
        )
    };
    if !(amount.is_finite() && (low..=high).contains(&amount)) {
        return Err(Fail::input(format!("{flag} {v}: out of range ({unit})")));
    }
    Ok(v.to_string())
}

/// `KEY=VALUE` flags (--node-selector, --annotation) as a map: each key as the API server
/// takes it, each given once; `labels`: the values are label values too.
fn pairs(
    flag: &str,
    given: &[String],
    labels: bool,
) -> Result<Option<BTreeMap<String, String>>, Fail> {
    let mut out = BTreeMap::new();
    for s in given {
        let Some((k, v)) = s.split_once('=') else {
            return Err(Fail::input(format!("{flag} {s}: expected KEY=VALUE")));
        };
        check::qualified_name(flag, k)?;
        if labels && !check::label_value(v) {
            return Err(Fail::input(format!(
                "{flag} {s}: a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
            )));
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(Fail::input(format!("{flag}: {k} is given twice")));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

fn tolerations(a: &K8sObjectArgs) -> Result<Option<Vec<Toleration>>, Fail> {
    const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
    let list = a
        .toleration
        .iter()
        .map(|t| {
            let bad = || {
                Fail::input(format!(
                    "--toleration {t}: expected KEY[=VALUE]:EFFECT, EFFECT one of {}",
                    EFFECTS.join(", ")
                ))
            };
            let (kv, effect) = t.rsplit_once(':').ok_or_else(bad)?;
            if !EFFECTS.contains(&effect) || kv.is_empty() {
                return Err(bad());
            }
            let (key, value) = match kv.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (kv, None),
            };
            check::qualified_name("--toleration", key)?;
            if value.as_deref().is_some_and(|v| !check::label_value(v)) {
                return Err(bad());
            }
            Ok(Toleration {
                key: Some(key.to_string()),
                operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
                value,
                effect: Some(effect.to_string()),
                ..Toleration::default()
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((!list.is_empty()).then_some(list))
}

fn spread(a: &K8sObjectArgs, i: &Inputs) -> Result<Option<Vec<TopologySpreadConstraint>>, Fail> {
    let key = match a.spread.as_str() {
        "hostname" => "kubernetes.io/hostname",
        "zone" => "topology.kubernetes.io/zone",
        "none" => return Ok(None),
        other => {
            return Err(Fail::input(format!(
                "--spread {other}: hostname, zone or none"
            )))
        }
    };
    Ok(Some(vec![TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.into(),
        // Spread where the cluster can; never leave a worker unscheduled for it.
        when_unsatisfiable: "ScheduleAnyway".into(),
        label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(JOB_LABEL.to_string(), i.name.clone())])),
            ..LabelSelector::default()
        }),
        ..TopologySpreadConstraint::default()
    }]))
}
