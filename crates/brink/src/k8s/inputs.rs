//! What the objects of a run on pods are made of, and the names and labels they share:
//! the Secret, Service, NetworkPolicy and Job (`render.rs`), the pod (`pod.rs`) and the Role
//! (`rbac.rs`) all read them here, so none of those reads another.

use super::certs::RunTls;
use crate::cli::K8sObjectArgs;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;
use std::time::Duration;

/// The port workers listen on in their pods.
pub const PORT: u16 = 7700;
/// Added to the run's length for the Job's deadline: pods to start, workers to be reached.
pub const SLACK: Duration = Duration::from_secs(600);
/// A run whose length is not known (`-n` only) gets this long.
pub const UNKNOWN_LENGTH: Duration = Duration::from_secs(3600);
/// The label the Job controller puts on its pods.
pub const JOB_LABEL: &str = "batch.kubernetes.io/job-name";

/// What goes into the objects, checked.
pub struct Inputs {
    pub name: String,
    pub workers: usize,
    pub token: String,
    /// The run's CA and certificates.
    pub tls: RunTls,
    /// The plan's file name and every file it names (path in the plan's directory, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// What the coordinator runs (in the plan's directory in the pod), a JSON `PodOrder`.
    pub order: String,
    /// The run's length (all scenarios and pauses, or a search's longest); `None`: not
    /// known (`-n` only).
    pub length: Option<Duration>,
    /// The mark of the coordinator's report lines (`k8s run`; render has none).
    pub report: Option<String>,
}

pub fn meta(a: &K8sObjectArgs, instance: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: a.namespace.clone(),
        labels: Some(labels(instance)),
        ..ObjectMeta::default()
    }
}

pub fn labels(instance: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "brink".to_string()),
        (
            "app.kubernetes.io/instance".to_string(),
            instance.to_string(),
        ),
    ])
}

/// The Secret's name.
pub fn secret_name(i: &Inputs) -> String {
    format!("{}-token", i.name)
}
