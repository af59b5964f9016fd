//! Where a recorded run stands, as the history stores it and every view of the history reads
//! it: one enum instead of words compared in several places.

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

#[cfg(test)]
mod tests {
    use super::RunStatus;

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
    }
}
