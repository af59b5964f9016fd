//! A local process read from /proc: CPU time, resident memory, threads, open file descriptors
//! and sockets (the descriptors that are sockets: its TCP connections and listeners), context
//! switches, and its cgroup's CPU throttling (cgroup v2 `cpu.stat`) when it has a CPU limit.
//! Also scheduler figures (`schedstat`): a process's threads' time waiting for a CPU (a
//! service starved by what shares its cores), and the calling thread's own, so brink's
//! workers can tell time spent working from time spent waiting for a CPU others held.

/// One reading of /proc/PID.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub cpu_s: f64,
    pub rss_bytes: f64,
    pub threads: f64,
    pub fds: f64,
    pub sockets: f64,
    /// Context switches of all its threads since they started: voluntary (they waited) and
    /// involuntary (preempted).
    pub ctx_vol: f64,
    pub ctx_invol: f64,
    /// The CPUs it may run on (its affinity): the most CPU time it can take a second.
    pub cpus_allowed: f64,
    /// Its cgroup's CFS periods and throttled periods since the cgroup began, when known.
    pub cfs: Option<(f64, f64)>,
    /// Seconds its threads have spent ready to run but waiting for a CPU (their schedstat,
    /// summed), when the kernel keeps it.
    pub waiting_s: Option<f64>,
}

/// A process's CPU seconds (user and system) and resident bytes, from /proc/PID/stat alone:
/// cheap enough to read every second whatever the process holds open.
pub fn usage(pid: u32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (cpu_s, rss_bytes, _) = stat_fields(&stat)?;
    Some((cpu_s, rss_bytes))
}

/// CPU seconds, resident bytes and threads from a `/proc/PID/stat` line.
fn stat_fields(stat: &str) -> Option<(f64, f64, f64)> {
    // Fields after the command name (which may contain spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok());
    let ticks = 100.0; // USER_HZ on Linux
    let page = 4096.0;
    Some((
        (field(14)? + field(15)?) / ticks,
        field(24)? * page,
        field(20)?,
    ))
}

/// Reads /proc/PID; `None` when the process is gone.
pub fn read(pid: u32) -> Option<Reading> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (cpu_s, rss_bytes, threads) = stat_fields(&stat)?;
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
    let tasks = threads_of(pid);
    Some(Reading {
        cpu_s,
        rss_bytes,
        threads,
        fds,
        sockets,
        ctx_vol: tasks.as_ref().map_or(0.0, |t| t.ctx_vol),
        ctx_invol: tasks.as_ref().map_or(0.0, |t| t.ctx_invol),
        cpus_allowed: status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map_or(0.0, |l| f64::from(cpus_in(l))),
        cfs: cgroup_cfs(pid),
        waiting_s: tasks.map(|t| t.waiting_ns as f64 / 1e9),
    })
}

/// What every thread of a process says of itself, summed.
struct Tasks {
    ctx_vol: f64,
    ctx_invol: f64,
    waiting_ns: u64,
}

/// The context switches and run-queue wait of every thread of `pid`, summed: a process's own
/// `status` counts its first thread's switches only (a JVM's showed none).
fn threads_of(pid: u32) -> Option<Tasks> {
    let mut sum = Tasks {
        ctx_vol: 0.0,
        ctx_invol: 0.0,
        waiting_ns: 0,
    };
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let text = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        sum.waiting_ns += sched_of(&text).map_or(0, |s| s.waiting_ns);
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        sum.ctx_vol += status_field(&status, "voluntary_ctxt_switches:").unwrap_or(0.0);
        sum.ctx_invol += status_field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0.0);
    }
    Some(sum)
}

/// How many CPUs a `Cpus_allowed_list` names (`0-3,6`: 5).
fn cpus_in(list: &str) -> u32 {
    list.trim()
        .split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
                b.checked_sub(a).map(|d| d + 1)
            }
            None => part.trim().parse::<u32>().ok().map(|_| 1),
        })
        .sum()
}

/// The calling thread's time on a CPU, its time ready to run but waiting for one, and how many
/// times it was put on a CPU, since the thread started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sched {
    pub on_cpu_ns: u64,
    pub waiting_ns: u64,
    pub slices: u64,
}

impl Sched {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Sched) -> Sched {
        Sched {
            on_cpu_ns: self.on_cpu_ns.saturating_sub(earlier.on_cpu_ns),
            waiting_ns: self.waiting_ns.saturating_sub(earlier.waiting_ns),
            slices: self.slices.saturating_sub(earlier.slices),
        }
    }

    /// The sum of two threads' figures.
    pub fn plus(self, other: Sched) -> Sched {
        Sched {
            on_cpu_ns: self.on_cpu_ns + other.on_cpu_ns,
            waiting_ns: self.waiting_ns + other.waiting_ns,
            slices: self.slices + other.slices,
        }
    }
}

/// The calling thread's scheduler figures; `None` where the kernel does not keep them.
pub fn thread_sched() -> Option<Sched> {
    sched_of(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
}

/// Parses a `schedstat` line: nanoseconds on a CPU, nanoseconds waiting, timeslices.
pub fn sched_of(text: &str) -> Option<Sched> {
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some(Sched {
        on_cpu_ns: f.next()??,
        waiting_ns: f.next()??,
        slices: f.next()??,
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
            // cgroup v2: wherever it is mounted (`/sys/fs/cgroup/unified` beside v1).
            let root = crate::cgroup::mount().unwrap_or_else(|| "/sys/fs/cgroup".into());
            vec![format!("{}{path}", root.display())]
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

/// (periods, throttled periods) of this process's CPU cgroup, when it has a CPU limit: read
/// before and after a run, [`throttled_share`] says whether the limit held brink back.
pub fn own_cfs() -> Option<(f64, f64)> {
    cgroup_cfs(std::process::id())
}

/// The share (0..1) of the scheduling periods between two [`own_cfs`] readings in which the
/// cgroup's CPU limit throttled it; `None` without a limit or without a period between them.
pub fn throttled_share(before: Option<(f64, f64)>, after: Option<(f64, f64)>) -> Option<f64> {
    let ((p0, t0), (p1, t1)) = (before?, after?);
    let periods = p1 - p0;
    (periods > 0.0).then(|| ((t1 - t0) / periods).clamp(0.0, 1.0))
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

/// This machine's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let r = super::read(std::process::id()).expect("own /proc entry");
        assert!(
            r.threads >= 1.0 && r.rss_bytes > 0.0 && r.fds >= 1.0,
            "{r:?}"
        );
        assert!(super::read(u32::MAX).is_none());
        assert!(r.ctx_vol + r.ctx_invol > 0.0, "{r:?}");
        assert!(r.waiting_s.is_some_and(|w| w >= 0.0), "{r:?}");
    }

    #[test]
    fn usage_reads_the_same_cpu_and_memory_cheaply() {
        let burn = (0..2_000_000u64).fold(0u64, |a, b| a.wrapping_add(b * b));
        let (cpu, rss) = super::usage(std::process::id()).expect("own /proc entry");
        let r = super::read(std::process::id()).expect("own /proc entry");
        assert!(burn > 0 && cpu >= 0.0 && cpu <= r.cpu_s, "{cpu} {r:?}");
        assert!(rss > 0.0 && (rss - r.rss_bytes).abs() < 64.0 * 1024.0 * 1024.0);
        assert!(super::usage(u32::MAX).is_none());
    }

    #[test]
    fn a_thread_s_scheduler_figures_count_its_work() {
        assert_eq!(
            super::sched_of("542461877 491879 43\n"),
            Some(super::Sched {
                on_cpu_ns: 542_461_877,
                waiting_ns: 491_879,
                slices: 43
            })
        );
        assert_eq!(super::sched_of("12 x 3"), None);
        let before = super::thread_sched().expect("this kernel keeps schedstat");
        // A thread that never left its CPU would have run in no new slice: the sleep makes it
        // leave once, so it comes back in at least one.
        std::thread::sleep(std::time::Duration::from_millis(1));
        let t = std::time::Instant::now();
        let mut spin = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(50) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        let d = super::thread_sched().unwrap().since(before);
        // 50 ms of wall time spent either on a CPU or waiting for one (a shared machine).
        assert!(d.on_cpu_ns + d.waiting_ns >= 40_000_000, "{d:?}");
        assert!(d.on_cpu_ns > 0 && d.slices >= 1, "{d:?}");
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

    #[test]
    fn an_affinity_list_counts_its_cpus() {
        assert_eq!(cpus_in("0-3,6\n"), 5);
        assert_eq!(cpus_in("1"), 1);
        assert_eq!(cpus_in("0-1"), 2);
        assert_eq!(cpus_in("0,2,4-7"), 6);
        assert_eq!(cpus_in("junk,3-1"), 0);
    }

    /// This process's reading counts its threads' switches: a thread spawned here that
    /// sleeps fifty times adds at least fifty voluntary switches its main thread never made.
    #[test]
    fn context_switches_are_every_threads() {
        let me = std::process::id();
        let main_only = |pid: u32| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            status_field(&status, "voluntary_ctxt_switches:").unwrap_or(0.0)
        };
        let before = read(me).expect("reading").ctx_vol;
        let main_before = main_only(me);
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            for _ in 0..50 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // Read while this thread still lives: its switches are in the sum.
            let _ = tx.send(read(std::process::id()).map(|r| r.ctx_vol));
            std::thread::sleep(std::time::Duration::from_millis(50));
        });
        let during = rx.recv().ok().flatten().expect("reading");
        let _ = t.join();
        assert!(during - before >= 50.0, "{before} -> {during}");
        assert!(
            main_only(me) - main_before < 50.0,
            "the main thread only waited"
        );
        assert!(read(me).expect("reading").cpus_allowed >= 1.0);
    }
}
