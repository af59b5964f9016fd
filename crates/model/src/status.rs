//! Where a recorded run stands and which command made it, as the history stores them and
//! every view of the history reads them: enums instead of words compared in several places.

/// A recorded run's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Its process is still measuring (or was when last seen).
    #[default]
    Running,
    /// Finished with a result.
    Done,
    /// The command ended without a result.
    Failed,
    /// Its process is gone (killed, crashed): what it recorded is kept.
    Died,
}

impl RunStatus {
    /// The word stored and shown: `running`, `done`, `failed`, `died`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Died => "died",
        }
    }

    /// The status a stored word names; `None` for a word no brink writes.
    pub fn parse(word: &str) -> Option<RunStatus> {
        [
            RunStatus::Running,
            RunStatus::Done,
            RunStatus::Failed,
            RunStatus::Died,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command a recorded run came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunCommand {
    /// `brink run`: scenarios at the load given.
    #[default]
    Run,
    /// `brink find`: a capacity search, whose steps fail by design.
    Find,
    /// `brink k8s run`: a run from pods on a Kubernetes cluster.
    #[serde(rename = "k8s run")]
    K8sRun,
}

impl RunCommand {
    /// The word stored and shown: `run`, `find`, `k8s run`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunCommand::Run => "run",
            RunCommand::Find => "find",
            RunCommand::K8sRun => "k8s run",
        }
    }

    /// The command a stored word names; `None` for a word no brink writes.
    pub fn parse(word: &str) -> Option<RunCommand> {
        [RunCommand::Run, RunCommand::Find, RunCommand::K8sRun]
            .into_iter()
            .find(|c| c.as_str() == word)
    }
}

impl std::fmt::Display for RunCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{RunCommand, RunStatus};

    #[test]
    fn words_round_trip() {
        for s in [
            RunStatus::Running,
            RunStatus::Done,
            RunStatus::Failed,
            RunStatus::Died,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(RunStatus::parse("paused"), None);
        for c in [RunCommand::Run, RunCommand::Find, RunCommand::K8sRun] {
            assert_eq!(RunCommand::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(
                json,
                format!("\"{}\"", c.as_str()),
                "serde says the stored word"
            );
        }
        let worker = crate::WorkerStatus::Failed;
        assert_eq!(serde_json::to_string(&worker).unwrap(), "\"failed\"");
    }
}
