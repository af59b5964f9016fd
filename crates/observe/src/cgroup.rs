//! A service as its cgroup v2: how most services run (a container, a systemd unit, a pod).
//! `cpu.stat` gives its CPU time and, under a CPU limit, its throttled periods;
//! `memory.current` its memory and `pids.current` its tasks, where those controllers are on.
//! A path is the cgroup's directory, or a path under the cgroup v2 mount
//! (`system.slice/nginx.service`).

use std::path::{Path, PathBuf};

/// One reading of a cgroup.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    pub cpu_s: f64,
    /// CFS periods and throttled periods, under a CPU limit.
    pub cfs: Option<(f64, f64)>,
    pub memory_bytes: Option<f64>,
    pub tasks: Option<f64>,
}

/// The cgroup directory `spec` names: an existing directory with a `cpu.stat`, as given or
/// under the cgroup v2 mount.
pub fn resolve(spec: &str) -> Result<PathBuf, String> {
    let given = Path::new(spec);
    let candidates: Vec<PathBuf> = if given.is_absolute() && given.join("cpu.stat").is_file() {
        vec![given.to_path_buf()]
    } else {
        let mount = mount().ok_or("no cgroup v2 mount on this machine")?;
        vec![mount.join(spec.trim_start_matches('/'))]
    };
    candidates
        .into_iter()
        .find(|p| p.join("cpu.stat").is_file())
        .ok_or_else(|| format!("no cgroup v2 '{spec}' (a directory with cpu.stat)"))
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` beside v1).
pub fn mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let point = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(point))
    })
}

/// Reads `dir`; `None` when it is gone.
pub fn read(dir: &Path) -> Option<Reading> {
    let stat = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    let field = |name: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
    };
    let number = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
    };
    Some(Reading {
        cpu_s: field("usage_usec ")? / 1e6,
        cfs: field("nr_periods ").zip(field("nr_throttled ")),
        memory_bytes: number("memory.current"),
        tasks: number("pids.current"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_reads_from_its_files() {
        let dir = std::env::temp_dir().join(format!("brink-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cpu.stat"),
            "usage_usec 2500000\nuser_usec 2000000\nnr_periods 40\nnr_throttled 10\n",
        )
        .unwrap();
        std::fs::write(dir.join("memory.current"), "1048576\n").unwrap();
        let r = read(&dir).unwrap();
        assert_eq!(r.cpu_s, 2.5);
        assert_eq!(r.cfs, Some((40.0, 10.0)));
        assert_eq!(r.memory_bytes, Some(1048576.0));
        assert_eq!(r.tasks, None);
        assert_eq!(resolve(dir.to_str().unwrap()).unwrap(), dir);
        assert!(resolve("/nonexistent/cgroup").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
