//! The Kubernetes objects of a distributed run, as typed values: one Secret with everything a
//! pod is given (the run's token and certificates, the command it runs and the plan with every
//! file it names, since a header or a data file may hold credentials, and Jobs, pods and
//! ConfigMaps are read by more people than Secrets are), a headless Service that gives each
//! pod a stable name (`NAME-I.NAME`), a NetworkPolicy that lets only the coordinator pod reach
//! the workers' port, and one Indexed Job: index 0 coordinates, indexes 1..=N are workers, all
//! the same image and command (`brink k8s pod`). The Job never re-runs a worker's load
//! (`backoffLimitPerIndex: 0`, `restartPolicy: Never`, replacement only of failed pods),
//! succeeds when the coordinator does (`successPolicy` on index 0), ends by itself after the
//! run's length plus slack (`activeDeadlineSeconds`) and is cleaned up after `--ttl`. `k8s
//! run` makes the Job the owner of the others, so the garbage collector removes them with it.

use super::inputs::{meta, secret_name, JOB_LABEL, PORT};
pub use super::inputs::{Inputs, SLACK, UNKNOWN_LENGTH};
use super::pod::pod_template;
use crate::cli::K8sObjectArgs;
use crate::exit::Fail;
use k8s_openapi::api::batch::v1::{Job, JobSpec, SuccessPolicy, SuccessPolicyRule};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::core::v1::{Secret, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// A Secret holds at most 1 MiB.
const SECRET_MAX: usize = 1 << 20;
/// The label with a pod's index in its Job.
const INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// The objects of one run.
pub struct Objects {
    pub rbac: (Role, ServiceAccount, RoleBinding),
    pub secret: Secret,
    pub service: Service,
    pub policy: Option<NetworkPolicy>,
    pub job: Job,
}

/// Every object of the run `i`.
pub fn objects(a: &K8sObjectArgs, i: &Inputs) -> Result<Objects, Fail> {
    Ok(Objects {
        rbac: super::rbac::objects(a, i),
        secret: secret(a, i)?,
        service: service(a, i),
        policy: (!a.no_network_policy).then(|| policy(a, i)),
        job: job(a, i)?,
    })
}

impl Objects {
    /// The objects to print, in the order to apply them (the Role first, when asked).
    pub fn values(&self, rbac: bool) -> Result<Vec<serde_json::Value>, Fail> {
        let mut out = Vec::new();
        if rbac {
            out.push(json(&self.rbac.0)?);
            out.push(json(&self.rbac.1)?);
            out.push(json(&self.rbac.2)?);
        }
        out.push(json(&self.secret)?);
        out.push(json(&self.service)?);
        if let Some(p) = &self.policy {
            out.push(json(p)?);
        }
        out.push(json(&self.job)?);
        Ok(out)
    }

    /// Makes the Job (created, with its `uid`) the owner of the run's other objects.
    pub fn owned_by(&mut self, job: &Job) {
        let owner = OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: job.metadata.name.clone().unwrap_or_default(),
            uid: job.metadata.uid.clone().unwrap_or_default(),
            // Deleting the Job never waits for these (no finalizer rights needed).
            block_owner_deletion: Some(false),
            controller: Some(false),
        };
        let own = |m: &mut ObjectMeta| m.owner_references = Some(vec![owner.clone()]);
        own(&mut self.secret.metadata);
        own(&mut self.service.metadata);
        if let Some(p) = &mut self.policy {
            own(&mut p.metadata);
        }
    }
}

fn json<T: serde::Serialize>(o: &T) -> Result<serde_json::Value, Fail> {
    serde_json::to_value(o).map_err(|e| Fail::input(format!("cannot write an object: {e}")))
}

/// The Secret: the token, what the coordinator runs (`order`, JSON), the run's TLS files and
/// the plan's files (`f0`, `f1`, ...).
fn secret(a: &K8sObjectArgs, i: &Inputs) -> Result<Secret, Fail> {
    // Everything the Secret holds counts against its limit, not only the plan's files.
    let files: usize = i.files.iter().map(|(_, b)| b.len()).sum();
    let rest =
        i.token.len() + i.order.len() + i.tls.files.iter().map(|(_, p)| p.len()).sum::<usize>();
    if files + rest > SECRET_MAX {
        return Err(Fail::input(format!(
            "the plan and its files take {files} bytes, and with the run's token, certificates and order the Secret would hold {} bytes; a Secret holds at most 1 MiB: make the data files smaller",
            files + rest
        )));
    }
    let files: BTreeMap<String, k8s_openapi::ByteString> = i
        .files
        .iter()
        .enumerate()
        .map(|(k, (_, bytes))| (format!("f{k}"), k8s_openapi::ByteString(bytes.clone())))
        .collect();
    let mut text = BTreeMap::from([
        ("token".to_string(), i.token.clone()),
        ("order".to_string(), i.order.clone()),
    ]);
    for (key, pem) in &i.tls.files {
        text.insert(key.to_string(), pem.clone());
    }
    Ok(Secret {
        metadata: meta(a, &i.name, &secret_name(i)),
        string_data: Some(text),
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

/// Only the run's coordinator pod (index 0 of its Job) reaches the workers' port; nothing
/// reaches the run's pods otherwise. Their own connections out are not limited.
fn policy(a: &K8sObjectArgs, i: &Inputs) -> NetworkPolicy {
    let job = || BTreeMap::from([(JOB_LABEL.to_string(), i.name.clone())]);
    let mut coordinator = job();
    coordinator.insert(INDEX_LABEL.to_string(), "0".into());
    NetworkPolicy {
        metadata: meta(a, &i.name, &i.name),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(job()),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(coordinator),
                        ..LabelSelector::default()
                    }),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(i32::from(PORT))),
                    protocol: Some("TCP".into()),
                    ..NetworkPolicyPort::default()
                }]),
            }]),
            ..NetworkPolicySpec::default()
        }),
    }
}

fn job(a: &K8sObjectArgs, i: &Inputs) -> Result<Job, Fail> {
    let pods = i32::try_from(i.workers + 1).map_err(|_| Fail::input("too many workers"))?;
    let length = i.length.unwrap_or(UNKNOWN_LENGTH);
    let ttl = plan::parse_duration(&a.ttl).map_err(|e| Fail::input(format!("--ttl: {e}")))?;
    // Whole seconds, rounded up: `--ttl 500ms` is not "delete at once".
    let ttl = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
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
            ttl_seconds_after_finished: Some(ttl.min(i32::MAX as u64) as i32),
            template: pod_template(a, i)?,
            ..JobSpec::default()
        }),
        ..Job::default()
    })
}
