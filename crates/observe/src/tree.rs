//! A service as its process tree: the process a user names (nginx's master, a gunicorn
//! arbiter, a shell script's PID) and every descendant, new ones included, read from /proc at
//! each sample. Counters (CPU, context switches, the wait for a CPU) are summed as rates over
//! the processes seen in both readings (a process new since the last reading counts whole:
//! all its time is since then); gauges (memory, threads, descriptors, sockets) are summed.
//! The tree is also said in words (`pid 812 (nginx) and 2 descendants (nginx x2)`), so a
//! figure is never read as one worker's when it is the service's. brink (this process and
//! any other running the same program, with what they started) is left out when it runs
//! under the process observed.

use crate::procfs::{self, Reading};
use std::collections::BTreeMap;

/// Every process of the tree rooted at `root`, with its reading; `None` when `root` is gone.
pub fn read(root: u32) -> Option<Tree> {
    let members = members(root);
    let root_reading = procfs::read(root)?;
    let mut procs = BTreeMap::new();
    procs.insert(root, root_reading);
    for &(pid, _) in members.iter().skip(1) {
        if let Some(r) = procfs::read(pid) {
            procs.insert(pid, r);
        }
    }
    Some(Tree {
        root,
        said: words(root, &members),
        procs,
    })
}

/// One reading of a process tree.
#[derive(Clone, Debug)]
pub struct Tree {
    pub root: u32,
    /// The tree in words.
    pub said: String,
    pub procs: BTreeMap<u32, Reading>,
}

impl Tree {
    /// A gauge summed over the tree.
    pub fn sum(&self, f: fn(&Reading) -> f64) -> f64 {
        self.procs.values().map(f).sum()
    }

    /// How much counter `f` grew since `before`, over the whole tree: processes in both
    /// readings by their growth, new ones whole, gone ones not at all.
    pub fn grew(&self, before: &Tree, f: fn(&Reading) -> Option<f64>) -> Option<f64> {
        let mut total = 0.0;
        for (pid, now) in &self.procs {
            let v = f(now)?;
            total += match before.procs.get(pid).and_then(f) {
                Some(old) => (v - old).max(0.0),
                None => v,
            };
        }
        Some(total)
    }

    /// The root's reading (its cgroup's throttling stands for the tree's).
    pub fn root(&self) -> Option<&Reading> {
        self.procs.get(&self.root)
    }
}

/// `root` and its descendants with their command names, root first.
fn members(root: u32) -> Vec<(u32, String)> {
    let mut children: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
    let mut root_comm = String::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((comm, ppid)) = comm_and_parent(&stat) else {
            continue;
        };
        if pid == root {
            root_comm = comm.clone();
        }
        children.entry(ppid).or_default().push((pid, comm));
    }
    // brink is never the service: observing a shell (or a test) that started it, or other
    // brink processes, leaves them and whatever they started out.
    let mut out = vec![(root, root_comm)];
    let mut i = 0;
    while i < out.len() {
        let pid = out[i].0;
        if let Some(kids) = children.remove(&pid) {
            out.extend(kids.into_iter().filter(|(p, _)| !is_brink(*p)));
        }
        i += 1;
    }
    out
}

/// Whether `pid` runs this very program (this process, or another brink).
fn is_brink(pid: u32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    pid == std::process::id() || exe(&pid.to_string()).is_some_and(|e| Some(e) == exe("self"))
}

/// The command name and parent pid of a `/proc/PID/stat` line.
fn comm_and_parent(stat: &str) -> Option<(String, u32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let ppid = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((comm, ppid))
}

/// `pid 812 (nginx)`, or `pid 812 (nginx) and 2 descendants (nginx x2)`.
fn words(root: u32, members: &[(u32, String)]) -> String {
    let head = format!(
        "pid {root} ({})",
        members.first().map_or("?", |(_, c)| c.as_str())
    );
    let rest = &members[1.min(members.len())..];
    if rest.is_empty() {
        return head;
    }
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, c) in rest {
        *by_name.entry(c.as_str()).or_default() += 1;
    }
    let names: Vec<String> = by_name
        .iter()
        .map(|(c, n)| {
            if *n > 1 {
                format!("{c} x{n}")
            } else {
                c.to_string()
            }
        })
        .collect();
    format!(
        "{head} and {} descendant{} ({})",
        rest.len(),
        if rest.len() == 1 { "" } else { "s" },
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_name_and_parent() {
        let line = "812 (nginx: worker) S 811 812 812 0 -1 4194624 ...";
        assert_eq!(comm_and_parent(line), Some(("nginx: worker".into(), 811)));
        assert_eq!(comm_and_parent("garbage"), None);
    }

    #[test]
    fn the_tree_is_said_in_words() {
        let m = |v: &[(u32, &str)]| {
            v.iter()
                .map(|(p, c)| (*p, c.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(words(5, &m(&[(5, "app")])), "pid 5 (app)");
        assert_eq!(
            words(5, &m(&[(5, "nginx"), (6, "nginx"), (7, "nginx")])),
            "pid 5 (nginx) and 2 descendants (nginx x2)"
        );
    }

    #[test]
    fn this_process_and_a_child_are_one_tree() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let t = read(me).expect("this process");
        assert!(t.procs.contains_key(&child.id()), "{:?}", t.procs.keys());
        assert!(t.said.contains("sleep"), "{}", t.said);
        let _ = child.kill();
        let _ = child.wait();
    }
}
