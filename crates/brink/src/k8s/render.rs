//! The Kubernetes objects of a distributed run, as typed values: one Secret with everything a
//! pod is given (the run's token, the command it runs and the plan with every file it names,
//! since a header or a data file may hold credentials, and Jobs, pods and ConfigMaps are read
//! by more people than Secrets are), a headless Service that gives
//! each pod a stable name (`NAME-I.NAME`), and one Indexed Job: index 0 coordinates, indexes
//! 1..=N are workers, all the same image and command (`brink k8s pod`). The Job never re-runs
//! a worker's load (`backoffLimitPerIndex: 0`, `restartPolicy: Never`, replacement only of
//! failed pods), succeeds when the coordinator does (`successPolicy` on index 0), ends by
//! itself after the run's length plus slack (`activeDeadlineSeconds`) and is cleaned up after
//! `--ttl`.

use crate::cli::K8sObjectArgs;
use crate::exit::Fail;
use k8s_openapi::api::batch::v1::{Job, JobSpec, SuccessPolicy, SuccessPolicyRule};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, KeyToPath,
    ObjectFieldSelector, PodSpec, PodTemplateSpec, ResourceRequirements, Secret,
    SecretVolumeSource, Service, ServicePort, ServiceSpec, Toleration, TopologySpreadConstraint,
    Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use std::collections::BTreeMap;
use std::time::Duration;

/// The port workers listen on in their pods.
pub const PORT: u16 = 7700;
/// The variable that holds the pod's address.
pub const POD_IP: &str = "POD_IP";
/// Where the token and the command are mounted, and the plan's directory in the pod (every
/// pod's working directory).
pub const TOKEN_DIR: &str = "/run/brink/token";
pub const PLAN_DIR: &str = "/run/brink/plan";
/// Added to the run's length for the Job's deadline: pods to start, workers to be reached.
const SLACK: Duration = Duration::from_secs(600);
/// A Secret holds at most 1 MiB.
const SECRET_MAX: usize = 1 << 20;
/// The label the Job controller puts on its pods.
const JOB_LABEL: &str = "batch.kubernetes.io/job-name";

/// What goes into the objects, checked.
pub struct Inputs {
    pub name: String,
    pub workers: usize,
    pub token: String,
    /// The plan's file name and every file it names (path in the plan's directory, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// What the coordinator runs (in the plan's directory in the pod), a JSON `PodOrder`.
    pub order: String,
    /// The run's length (all scenarios and pauses); `None`: not known (`-n` only).
    pub length: Option<Duration>,
    /// The mark of the coordinator's report lines (`k8s run`; render has none).
    pub report: Option<String>,
}

/// The objects of one run.
pub struct Objects {
    pub role: Role,
    pub secret: Secret,
    pub service: Service,
    pub job: Job,
}

/// Every object of the run `i`.
pub fn objects(a: &K8sObjectArgs, i: &Inputs) -> Result<Objects, Fail> {
    Ok(Objects {
        role: role(a, i),
        secret: secret(a, i)?,
        service: service(a, i),
        job: job(a, i)?,
    })
}

impl Objects {
    /// The objects to print, in the order to apply them (the Role first, when asked).
    pub fn values(&self, rbac: bool) -> Result<Vec<serde_json::Value>, Fail> {
        let mut out = Vec::new();
        if rbac {
            out.push(json(&self.role)?);
        }
        out.push(json(&self.secret)?);
        out.push(json(&self.service)?);
        out.push(json(&self.job)?);
        Ok(out)
    }
}

fn json<T: serde::Serialize>(o: &T) -> Result<serde_json::Value, Fail> {
    serde_json::to_value(o).map_err(|e| Fail::input(format!("cannot write an object: {e}")))
}

fn meta(a: &K8sObjectArgs, instance: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: a.namespace.clone(),
        labels: Some(labels(instance)),
        ..ObjectMeta::default()
    }
}

fn labels(instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "brink".to_string()),
        (
            "app.kubernetes.io/instance".to_string(),
            instance.to_string(),
        ),
    ])
}

/// The Secret: the token, what the coordinator runs (`order`, JSON) and the plan's files
/// (`f0`, `f1`, ...).
fn secret(a: &K8sObjectArgs, i: &Inputs) -> Result<Secret, Fail> {
    let size: usize = i.files.iter().map(|(_, b)| b.len()).sum();
    if size > SECRET_MAX {
        return Err(Fail::input(format!(
            "the plan and its files take {size} bytes; a Secret holds at most 1 MiB: make the data files smaller"
        )));
    }
    let files: BTreeMap<String, k8s_openapi::ByteString> = i
        .files
        .iter()
        .enumerate()
        .map(|(k, (_, bytes))| (format!("f{k}"), k8s_openapi::ByteString(bytes.clone())))
        .collect();
    Ok(Secret {
        metadata: meta(a, &i.name, &format!("{}-token", i.name)),
        string_data: Some(BTreeMap::from([
            ("token".to_string(), i.token.clone()),
            ("order".to_string(), i.order.clone()),
        ])),
        data: (!files.is_empty()).then_some(files),
        ..Secret::default()
    })
}

fn service(a: &K8sObjectArgs, i: &Inputs) -> Service {
    Service {
        metadata: meta(a, &i.name, &i.name),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // Workers are reached before they are "ready": they have no readiness probe.
            publish_not_ready_addresses: Some(true),
            selector: Some(BTreeMap::from([(JOB_LABEL.to_string(), i.name.clone())])),
            ports: Some(vec![ServicePort {
                name: Some("brink".into()),
                port: i32::from(PORT),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn job(a: &K8sObjectArgs, i: &Inputs) -> Result<Job, Fail> {
    let pods = i32::try_from(i.workers + 1).map_err(|_| Fail::input("too many workers"))?;
    let length = i.length.unwrap_or(Duration::from_secs(3600));
    let ttl = plan::parse_duration(&a.ttl).map_err(|e| Fail::input(format!("--ttl: {e}")))?;
    Ok(Job {
        metadata: meta(a, &i.name, &i.name),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(pods),
            parallelism: Some(pods),
            // A worker's load is never run twice: a failed index stays failed.
            backoff_limit_per_index: Some(0),
            pod_replacement_policy: Some("Failed".into()),
            success_policy: Some(SuccessPolicy {
                rules: vec![SuccessPolicyRule {
                    succeeded_indexes: Some("0".into()),
                    ..SuccessPolicyRule::default()
                }],
            }),
            active_deadline_seconds: Some((length + SLACK).as_secs() as i64),
            ttl_seconds_after_finished: Some(ttl.as_secs().min(i32::MAX as u64) as i32),
            template: pod_template(a, i)?,
            ..JobSpec::default()
        }),
        ..Job::default()
    })
}

fn pod_template(a: &K8sObjectArgs, i: &Inputs) -> Result<PodTemplateSpec, Fail> {
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
    ];
    if let Some(nonce) = &i.report {
        command.extend(["--report".to_string(), nonce.clone()]);
    }
    let mut mounts = vec![VolumeMount {
        name: "token".into(),
        mount_path: TOKEN_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    }];
    let key = |key: &str, path: &str| KeyToPath {
        key: key.into(),
        path: path.into(),
        ..KeyToPath::default()
    };
    let from_secret = |items: Vec<KeyToPath>| SecretVolumeSource {
        secret_name: Some(format!("{}-token", i.name)),
        default_mode: Some(0o400),
        items: Some(items),
        ..SecretVolumeSource::default()
    };
    let plan = if i.files.is_empty() {
        // Nothing to read: an empty working folder (a worker never works in /).
        Volume {
            name: "plan".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
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
    let volumes = vec![
        Volume {
            name: "token".into(),
            secret: Some(from_secret(vec![
                key("token", "token"),
                key("order", "order"),
            ])),
            ..Volume::default()
        },
        plan,
    ];
    mounts.push(VolumeMount {
        name: "plan".into(),
        mount_path: PLAN_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    });
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
        resources: resources(a),
        volume_mounts: Some(mounts),
        // Workers listen on the pod's own address.
        env: Some(vec![EnvVar {
            name: POD_IP.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "status.podIP".into(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ..Container::default()
    };
    let mut pod_labels = labels(&i.name);
    pod_labels.insert(JOB_LABEL.into(), i.name.clone());
    Ok(PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(pod_labels),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            // With the headless Service of the same name, pod I is `NAME-I.NAME`.
            subdomain: Some(i.name.clone()),
            // Nothing in a pod talks to the Kubernetes API: no credentials for it.
            automount_service_account_token: Some(false),
            containers: vec![container],
            volumes: Some(volumes),
            node_selector: node_selector(a)?,
            tolerations: tolerations(a)?,
            topology_spread_constraints: spread(a, i)?,
            ..PodSpec::default()
        }),
    })
}

fn resources(a: &K8sObjectArgs) -> Option<ResourceRequirements> {
    let mut r = BTreeMap::new();
    if let Some(c) = &a.cpu {
        r.insert("cpu".to_string(), Quantity(c.clone()));
    }
    if let Some(m) = &a.memory {
        r.insert("memory".to_string(), Quantity(m.clone()));
    }
    (!r.is_empty()).then(|| ResourceRequirements {
        requests: Some(r.clone()),
        limits: Some(r),
        ..ResourceRequirements::default()
    })
}

fn node_selector(a: &K8sObjectArgs) -> Result<Option<BTreeMap<String, String>>, Fail> {
    let pairs = a
        .node_selector
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(Fail::input(format!(
                "--node-selector {s}: expected KEY=VALUE"
            ))),
        })
        .collect::<Result<BTreeMap<_, _>, _>>()?;
    Ok((!pairs.is_empty()).then_some(pairs))
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

/// The namespace permissions `brink k8s run` needs: its objects, its pods (read, and the
/// coordinator's deleted on Ctrl-C so it stops and reports) and the coordinator's log.
fn role(a: &K8sObjectArgs, i: &Inputs) -> Role {
    let rule = |group: &str, resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    };
    let manage = ["get", "list", "watch", "create", "delete"];
    Role {
        metadata: meta(a, &i.name, &format!("{}-runner", i.name)),
        rules: Some(vec![
            rule("batch", &["jobs"], &manage),
            rule("", &["services", "secrets"], &manage),
            rule("", &["pods"], &["get", "list", "watch", "delete"]),
            rule("", &["pods/log"], &["get"]),
        ]),
    }
}
