//! What a distributed run says about each of its workers, in the result: who it was, how its
//! clock and its start compared with the coordinator's, what it sent and how it ended.

use serde::{Deserialize, Serialize};

/// One worker of a distributed run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// The address it was reached at.
    pub name: String,
    /// Its machine's name, from its hello (empty if it never said).
    pub host: String,
    /// Its part: index of count.
    pub index: u64,
    pub count: u64,
    /// Its clock minus the coordinator's, and how far off that estimate may be, ms.
    pub clock_offset_ms: Option<f64>,
    pub clock_bound_ms: Option<f64>,
    /// How much later than the agreed instant its load started, ms (negative: earlier).
    pub start_skew_ms: Option<f64>,
    /// Attempts it finished, over the seconds it sent.
    pub requests: u64,
    pub seconds: u64,
    /// Its engine threads, its process's CPU over the run (% of one core), and its threads'
    /// time on a CPU and ready but waiting for one (% of the time they had), as the generator
    /// check counts them.
    pub threads: u64,
    pub cpu_percent: Option<f64>,
    pub busy_percent: Option<f64>,
    pub waiting_percent: Option<f64>,
    /// Share (0-100) of the scheduling periods in which its cgroup's CPU limit (a pod's)
    /// throttled it; absent without a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_percent: Option<f64>,
    pub status: WorkerStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl WorkerReport {
    /// Who it is and how it ended, as every output says it: `127.0.0.1:7701 (2 of 3) lost:
    /// closed its stream`.
    pub fn said(&self) -> String {
        format!(
            "{} ({} of {}) {}: {}",
            self.name,
            self.index + 1,
            self.count,
            self.status,
            self.why.as_deref().unwrap_or("no reason given")
        )
    }

    /// The first worker of `all` that did not finish its share, said as [`said`](Self::said).
    pub fn first_short(all: &[WorkerReport]) -> Option<String> {
        all.iter()
            .find(|w| w.status != WorkerStatus::Done)
            .map(|w| format!("worker {}", w.said()))
    }
}

/// How a worker of a distributed run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerStatus {
    /// It sent its whole share and said so.
    Done,
    /// It said it could not go on, and why.
    Failed,
    /// It stopped answering (or never said it was done): what a worker is until it says so.
    #[default]
    Lost,
}

impl WorkerStatus {
    /// The name results use: `done`, `failed`, `lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerStatus::Done => "done",
            WorkerStatus::Failed => "failed",
            WorkerStatus::Lost => "lost",
        }
    }
}

impl std::fmt::Display for WorkerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
