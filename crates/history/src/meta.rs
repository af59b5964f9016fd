//! What is recorded about a run besides its result: what ran, against what, from where (the
//! git commit and branch of the working directory, the host), and the user's tags and note.

use std::process::Command;

/// The description of a run, known before it starts.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub started_at: String,
    /// `run` or `find`.
    pub command: String,
    /// The plan's scenario (or `run` for a URL; several scenarios joined by `, `).
    pub name: String,
    pub target: String,
    pub method: String,
    /// `closed`, `open`, or `search`.
    pub load_model: String,
    /// The level in words: `50 connections`, `200/s`, `3 stages`, `by connections`.
    pub load_level: String,
    pub git_commit: Option<String>,
    pub git_branch: Option<String>,
    pub host: String,
    pub note: Option<String>,
    pub tags: Vec<(String, String)>,
}

/// The commit and branch of the working directory, when it is in a git repository (and git
/// is installed); a detached head has no branch.
pub fn git_info() -> (Option<String>, Option<String>) {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let branch = commit
        .as_ref()
        .and_then(|_| git(&["rev-parse", "--abbrev-ref", "HEAD"]))
        .filter(|b| b != "HEAD");
    (commit, branch)
}

/// This machine's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
