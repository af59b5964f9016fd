//! Names of the server figures brink observes, shared by the sources that take them (`/proc`,
//! Prometheus), the result file that stores them and the diagnosis that reads them, so all of
//! them use one name per figure.

/// Server CPU, in % of one core.
pub const CPU: &str = "srv cpu";
/// Server resident memory, in bytes.
pub const RSS: &str = "srv rss";
/// Server threads.
pub const THREADS: &str = "srv threads";
/// Server open file descriptors.
pub const FDS: &str = "srv fds";
/// Server sockets.
pub const SOCKETS: &str = "srv sockets";
/// Server CPU throttling: % of the cgroup's CFS periods that were throttled.
pub const THROTTLED: &str = "srv throttled";
/// Server threads' time ready to run but waiting for a CPU, in % of one core (as CPU).
pub const CPU_WAIT: &str = "srv cpu wait";

/// Whether a figure is a percentage.
pub fn is_percent(name: &str) -> bool {
    [CPU, THROTTLED, CPU_WAIT].contains(&name)
}
/// Server context switches per second: voluntary (waiting) and involuntary (preempted).
pub const CTX_VOL: &str = "srv ctx vol/s";
pub const CTX_INVOL: &str = "srv ctx invol/s";
/// This host's TCP listen-queue overflows and drops, and retransmitted segments, per second
/// (from /proc/net: the whole network namespace, not only the service).
pub const LISTEN_OVERFLOWS: &str = "host listen overflows/s";
pub const LISTEN_DROPS: &str = "host listen drops/s";
pub const RETRANSMITS: &str = "host retransmits/s";
