//! A local process read from /proc: CPU time, resident memory, threads, open file descriptors
//! and sockets (the descriptors that are sockets: its TCP connections and listeners).

/// One reading of /proc/PID.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub cpu_s: f64,
    pub rss_bytes: f64,
    pub threads: f64,
    pub fds: f64,
    pub sockets: f64,
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
    Some(Reading {
        cpu_s: (field(14)? + field(15)?) / ticks,
        rss_bytes: field(24)? * page,
        threads: field(20)?,
        fds,
        sockets,
    })
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
    }
}
