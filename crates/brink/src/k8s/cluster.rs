//! The Kubernetes API as `brink k8s run` uses it, through kube-rs: the cluster's version
//! checked, the run's objects created and deleted, its pods read, the coordinator's log
//! opened. Every failure is one line that names the object and the namespace; what a pod's
//! state says (an image that cannot be pulled, a pod that failed) is read here too.

use super::render::Objects;
use crate::exit::Fail;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// The oldest Kubernetes that keeps every field of the Job (`backoffLimitPerIndex`,
/// `successPolicy`, `podReplacementPolicy`).
const OLDEST: (u32, u32) = (1, 33);
/// The annotation with a pod's index in its Indexed Job.
const INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// Container states in which a pod will never run its command.
const STUCK: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "CrashLoopBackOff",
];

/// A cluster and the namespace of the run.
pub struct Cluster {
    client: Client,
    pub ns: String,
}

/// What this run created: its Job, which owns everything else; deleted at the end.
#[derive(Default)]
pub struct Created {
    job: Option<String>,
}

impl Cluster {
    /// The cluster kubectl would use (`$KUBECONFIG`, `~/.kube/config`, or the pod's own),
    /// checked to be recent enough.
    pub async fn connect(ns: Option<&str>) -> Result<Cluster, Fail> {
        let config = kube::Config::infer().await.map_err(|e| {
            Fail::input(format!(
                "no Kubernetes cluster to run on: {} (brink reads kubectl's configuration: $KUBECONFIG or ~/.kube/config)",
                chain(&e)
            ))
        })?;
        let url = config.cluster_url.to_string();
        let client = Client::try_from(config).map_err(|e| {
            Fail::input(format!("cannot reach the cluster at {url}: {}", chain(&e)))
        })?;
        let info = client.apiserver_version().await.map_err(|e| {
            Fail::input(format!(
                "the Kubernetes API at {url} does not answer: {}",
                chain(&e)
            ))
        })?;
        if (number(&info.major), number(&info.minor)) < OLDEST {
            return Err(Fail::input(format!(
                "the cluster runs Kubernetes {}.{}; a run on pods needs {}.{} or later (Indexed Jobs with backoffLimitPerIndex)",
                info.major, info.minor, OLDEST.0, OLDEST.1
            )));
        }
        let ns = ns.map_or_else(|| client.default_namespace().to_string(), str::to_string);
        Ok(Cluster { client, ns })
    }

    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// Creates the run's objects: the Job first, suspended (no pod starts before what it
    /// mounts exists), then the others owned by it, then the Job started. Once the Job
    /// exists it is noted in `created`: deleting it removes everything (the garbage
    /// collector follows the owner references), whatever becomes of this process. A Job
    /// whose fields the cluster dropped is refused.
    pub async fn create(&self, o: &mut Objects, created: &mut Created) -> Result<(), Fail> {
        let mut job = o.job.clone();
        if let Some(spec) = job.spec.as_mut() {
            spec.suspend = Some(true);
        }
        let job: Job = self.post_kept(&job).await?;
        created.job = job.metadata.name.clone();
        let spec = job.spec.clone().unwrap_or_default();
        if spec.backoff_limit_per_index.is_none() || spec.success_policy.is_none() {
            return Err(Fail::input(format!(
                "the cluster dropped backoffLimitPerIndex or successPolicy from the Job in namespace {}: a run on pods needs Kubernetes {}.{}+ with those Job features on",
                self.ns, OLDEST.0, OLDEST.1
            )));
        }
        o.owned_by(&job);
        self.post(&o.secret).await?;
        self.post(&o.service).await?;
        if let Some(p) = &o.policy {
            self.post(p).await?;
        }
        let name = job.metadata.name.unwrap_or_default();
        let start = serde_json::json!({ "spec": { "suspend": false } });
        self.api::<Job>()
            .patch(&name, &PatchParams::default(), &Patch::Merge(&start))
            .await
            .map_err(|e| {
                Fail::input(format!(
                    "cannot start job {name} in namespace {}: {}",
                    self.ns,
                    reason(&e)
                ))
            })?;
        Ok(())
    }

    async fn post<K>(&self, obj: &K) -> Result<String, Fail>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Serialize + Debug,
        K::DynamicType: Default,
    {
        let made = self.post_kept(obj).await?;
        Ok(made.meta().name.clone().unwrap_or_default())
    }

    async fn post_kept<K>(&self, obj: &K) -> Result<K, Fail>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Serialize + Debug,
        K::DynamicType: Default,
    {
        let name = obj.meta().name.clone().unwrap_or_default();
        let kind = K::kind(&K::DynamicType::default()).to_string();
        self.api::<K>()
            .create(&PostParams::default(), obj)
            .await
            .map_err(|e| {
                let hint = match &e {
                    kube::Error::Api(s) if s.code == 409 => {
                        " (another run of that name: delete it, or give another --name)"
                    }
                    kube::Error::Api(s) if s.code == 403 => {
                        " (brink k8s render --rbac --name NAME prints the Role a run of that name needs)"
                    }
                    _ => "",
                };
                Fail::input(format!(
                    "cannot create {kind} {name} in namespace {}: {}{hint}",
                    self.ns,
                    reason(&e)
                ))
            })
    }

    /// Deletes the run's Job: its pods and the objects it owns go with it (in the
    /// background, by the garbage collector). What could not be deleted is said with the
    /// command that deletes it.
    pub async fn delete(&self, c: &Created) -> Option<String> {
        let background = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        let n = c.job.as_ref()?;
        self.gone::<Job>(n, &background).await
    }

    async fn gone<K>(&self, name: &str, dp: &DeleteParams) -> Option<String>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
        K::DynamicType: Default,
    {
        match self.api::<K>().delete(name, dp).await {
            Ok(_) => None,
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => {
                let kind = K::kind(&K::DynamicType::default()).to_lowercase();
                Some(format!(
                    "{kind} {name} is left: {} (kubectl delete {kind} {name} -n {})",
                    reason(&e),
                    self.ns
                ))
            }
        }
    }

    /// The pods of the Job `job`, by index.
    pub async fn pods(&self, job: &str) -> Result<Vec<Pod>, Fail> {
        let lp = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
        let mut pods = self
            .api::<Pod>()
            .list(&lp)
            .await
            .map_err(|e| Fail::input(format!("cannot read the pods of {job}: {}", reason(&e))))?
            .items;
        pods.sort_by_key(index);
        Ok(pods)
    }

    /// Why the Job failed, once it has.
    pub async fn job_failed(&self, job: &str) -> Option<String> {
        let j = self.api::<Job>().get(job).await.ok()?;
        let failed = j
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Failed" && c.status == "True")?;
        Some(format!(
            "{}: {}",
            failed.reason.unwrap_or_default(),
            failed.message.unwrap_or_default()
        ))
    }

    /// Asks a pod to end (its command gets SIGTERM, then `grace` seconds).
    pub async fn stop_pod(&self, pod: &str, grace: u32) -> Result<(), String> {
        let dp = DeleteParams {
            grace_period_seconds: Some(grace),
            ..DeleteParams::default()
        };
        match self.api::<Pod>().delete(pod, &dp).await {
            Ok(_) => Ok(()),
            Err(e) => Err(reason(&e)),
        }
    }

    /// The log of the pod's container from its start (or from `since`, a whole second),
    /// each line with the node's time, followed while it runs.
    pub async fn log(
        &self,
        pod: &str,
        since: Option<k8s_openapi::jiff::Timestamp>,
    ) -> Result<impl futures_util::AsyncBufRead + Unpin + Send + 'static, Fail> {
        let lp = LogParams {
            container: Some("brink".into()),
            follow: true,
            timestamps: true,
            since_time: since,
            ..LogParams::default()
        };
        self.api::<Pod>()
            .log_stream(pod, &lp)
            .await
            .map(Box::pin)
            .map_err(|e| Fail::input(format!("cannot read the log of pod {pod}: {}", reason(&e))))
    }
}

/// An error in the API server's own words when it gave some.
fn reason(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        other => chain(other),
    }
}

/// An error and its causes on one line (`client error (Connect): tcp connect error:
/// Connection refused`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = c.source();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `34` of `34`, `34+` or `34-gke.1`.
fn number(s: &str) -> u32 {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

/// A pod's index in its Job (pods without one last).
pub fn index(p: &Pod) -> usize {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INDEX))
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Whether a pod's command has started (it may have ended since).
pub fn started(p: &Pod) -> bool {
    matches!(phase(p), "Running" | "Succeeded" | "Failed")
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// The exit code of a pod's command, once it has ended.
pub fn exit_code(p: &Pod) -> Option<i32> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find_map(|c| Some(c.state.as_ref()?.terminated.as_ref()?.exit_code))
}

/// Why a pod will never run its command, when that is so: a container stuck (an image that
/// cannot be pulled, a bad configuration) or a pod that failed before its command ran.
pub fn stuck(p: &Pod) -> Option<String> {
    let name = p.metadata.name.as_deref().unwrap_or("?");
    let status = p.status.as_ref()?;
    for c in status.container_statuses.iter().flatten() {
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
        if let Some(w) = waiting.filter(|w| STUCK.contains(&w.reason.as_deref().unwrap_or(""))) {
            return Some(format!(
                "pod {name}: {}: {}",
                w.reason.as_deref().unwrap_or(""),
                w.message.as_deref().unwrap_or("")
            ));
        }
    }
    (phase(p) == "Failed" && exit_code(p).is_none()).then(|| {
        format!(
            "pod {name} failed: {}",
            status
                .message
                .as_deref()
                .or(status.reason.as_deref())
                .unwrap_or("no reason given")
        )
    })
}

/// Why a pod has not started yet, in the cluster's words (`Pending (Unschedulable: 0/3
/// nodes are available ...)`).
pub fn waiting(p: &Pod) -> String {
    let name = p.metadata.name.as_deref().unwrap_or("?");
    let status = p.status.as_ref();
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    match unscheduled {
        Some(c) => format!(
            "{name} {} ({}: {})",
            phase(p),
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or("")
        ),
        None => format!("{name} {}", phase(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
        PodCondition, PodStatus,
    };

    fn pod(phase: &str, state: ContainerState) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("load-1-x".into());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "brink".into(),
                state: Some(state),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn a_pod_that_will_never_run_says_why() {
        let pull = pod(
            "Pending",
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("ImagePullBackOff".into()),
                    message: Some("Back-off pulling image \"reg/brink:x\"".into()),
                }),
                ..ContainerState::default()
            },
        );
        assert_eq!(
            stuck(&pull).as_deref(),
            Some("pod load-1-x: ImagePullBackOff: Back-off pulling image \"reg/brink:x\"")
        );
        // Creating a container takes a while: not stuck.
        let creating = pod(
            "Pending",
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("ContainerCreating".into()),
                    message: None,
                }),
                ..ContainerState::default()
            },
        );
        assert_eq!(stuck(&creating), None);
        assert!(!started(&creating));
        // A command that ran and failed is the coordinator's to report, not a stuck pod.
        let ended = pod(
            "Failed",
            ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 2,
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            },
        );
        assert_eq!((stuck(&ended), exit_code(&ended)), (None, Some(2)));
        assert!(started(&ended));
        let mut unscheduled = pod("Pending", ContainerState::default());
        if let Some(s) = unscheduled.status.as_mut() {
            s.conditions = Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                message: Some("0/3 nodes are available".into()),
                ..PodCondition::default()
            }]);
        }
        assert_eq!(
            waiting(&unscheduled),
            "load-1-x Pending (Unschedulable: 0/3 nodes are available)"
        );
    }

    #[test]
    fn versions_read_as_clusters_write_them() {
        assert_eq!(
            (number("1"), number("34+"), number("33-gke.1")),
            (1, 34, 33)
        );
        assert!((number("1"), number("32+")) < OLDEST);
        assert!((number("1"), number("33")) >= OLDEST);
    }
}
