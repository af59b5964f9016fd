//! What is recorded about a run besides its result: what ran, against what, from where (the
//! git commit and branch of the working directory, the host), and the user's tags and note.

use std::process::Command;

/// The description of a run, known before it starts.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub started_at: String,
    pub command: model::RunCommand,
    /// The plan's scenario (or `run` for a URL; several scenarios joined by `, `).
    pub name: String,
    pub target: String,
    pub method: String,
    /// The model of the load (a search's: by rate is open, by connections closed); `None`
    /// when there was no load (a plan that failed before its first scenario).
    pub load_model: Option<model::LoadModel>,
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

pub use observe::procfs::hostname;

/// This process as `BOOT_ID/PID/START_TICKS` (`/proc`), a name no other process on this host
/// has now or later: a reused pid has another start time, a reboot another boot id.
pub fn this_process() -> Option<String> {
    process_name(std::process::id())
}

fn process_name(pid: u32) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22 (start time), counted after the command name, which may hold spaces.
    let after_name = stat.rsplit_once(')')?.1;
    let start = after_name.split_whitespace().nth(19)?;
    Some(format!("{}/{pid}/{start}", boot.trim()))
}

/// Whether the process recorded as `name` ([`this_process`]) is gone: false when that cannot
/// be told (a name from elsewhere or in another form).
pub fn process_gone(name: &str) -> bool {
    let Some(pid) = name.split('/').nth(1).and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    process_name(pid).as_deref() != Some(name)
}
