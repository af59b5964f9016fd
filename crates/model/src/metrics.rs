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

/// A figure's name for a CSV header or a script: lowercase, `_` between words, its unit said
/// (`srv cpu` -> `srv_cpu_percent`, `srv rss` -> `srv_rss_bytes`, `host listen drops/s` ->
/// `host_listen_drops_per_s`); a `--metric` name is cleaned the same way.
pub fn column(name: &str) -> String {
    let unit = if is_percent(name) {
        " percent"
    } else if name == RSS {
        " bytes"
    } else {
        ""
    };
    let spelled = format!("{name}{unit}")
        .replace("/s", " per s")
        .replace('%', " percent");
    let mut out = String::with_capacity(spelled.len());
    for c in spelled.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_machine_names_with_units() {
        let cases = [
            (CPU, "srv_cpu_percent"),
            (RSS, "srv_rss_bytes"),
            (THREADS, "srv_threads"),
            (THROTTLED, "srv_throttled_percent"),
            (CPU_WAIT, "srv_cpu_wait_percent"),
            (CTX_INVOL, "srv_ctx_invol_per_s"),
            (LISTEN_DROPS, "host_listen_drops_per_s"),
            (RETRANSMITS, "host_retransmits_per_s"),
            ("db_conns", "db_conns"),
            ("Queue Depth (%)", "queue_depth_percent"),
        ];
        for (name, want) in cases {
            assert_eq!(column(name), want, "{name}");
        }
    }
}
