//! A local process read from /proc: CPU time, resident memory, threads, open file descriptors
//! and sockets (the descriptors that are sockets: its TCP connections and listeners), context
//! switches, and its cgroup's CPU throttling (cgroup v2 `cpu.stat`) when it has a CPU limit.

/// One reading of /proc/PID.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub cpu_s: f64,
    pub rss_bytes: f64,
    pub threads: f64,
    pub fds: f64,
    pub sockets: f64,
    /// Context switches since it started: voluntary (it waited) and involuntary (preempted).
    pub ctx_vol: f64,
    pub ctx_invol: f64,
    /// Its cgroup's CFS periods and throttled periods since the cgroup began, when known.
    pub cfs: Option<(f64, f64)>,
}

/// Reads /proc/PID; `None` when the process is gone.
pub fn read(pid: u32) -> Option<Reading> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok());
    let ticks = 100.0; // USER_HZ on Linux
    let page = 4096.0;
    let (mut fds, mut sockets) = (0.0, 0.0);
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for e in dir.flatten() {
            fds += 1.0;
            if std::fs::read_link(e.path())
                .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            {
                sockets += 1.0;
            }
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    Some(Reading {
        cpu_s: (field(14)? + field(15)?) / ticks,
        rss_bytes: field(24)? * page,
        threads: field(20)?,
        fds,
        sockets,
        ctx_vol: status_field(&status, "voluntary_ctxt_switches:").unwrap_or(0.0),
        ctx_invol: status_field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0.0),
        cfs: cgroup_cfs(pid),
    })
}

fn status_field(status: &str, name: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().parse().ok())
}

/// (periods, throttled periods) of the process's CPU cgroup (v2, or v1's `cpu` controller),
/// when it has a CPU limit.
fn cgroup_cfs(pid: u32) -> Option<(f64, f64)> {
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?.trim());
        let dirs: Vec<String> = if controllers.is_empty() {
            vec![format!("/sys/fs/cgroup{path}")]
        } else if controllers.split(',').any(|c| c == "cpu") {
            ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
                .iter()
                .map(|c| format!("/sys/fs/cgroup/{c}{path}"))
                .collect()
        } else {
            return None;
        };
        dirs.iter().find_map(|d| {
            let stat = std::fs::read_to_string(format!("{d}/cpu.stat")).ok()?;
            cfs_of(&stat)
        })
    })
}

/// `nr_periods` and `nr_throttled` of a `cpu.stat` (absent without a CPU limit).
pub fn cfs_of(stat: &str) -> Option<(f64, f64)> {
    let get = |name: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    Some((get("nr_periods ")?, get("nr_throttled ")?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        let r = super::read(std::process::id()).expect("own /proc entry");
        assert!(
            r.threads >= 1.0 && r.rss_bytes > 0.0 && r.fds >= 1.0,
            "{r:?}"
        );
        assert!(super::read(u32::MAX).is_none());
        assert!(r.ctx_vol + r.ctx_invol > 0.0, "{r:?}");
    }

    #[test]
    fn cfs_throttling_from_cpu_stat() {
        let limited = "usage_usec 100\nnr_periods 1000\nnr_throttled 410\nthrottled_usec 5\n";
        assert_eq!(super::cfs_of(limited), Some((1000.0, 410.0)));
        assert_eq!(
            super::cfs_of("usage_usec 100\nuser_usec 50\n"),
            None,
            "no CPU limit"
        );
    }
}
