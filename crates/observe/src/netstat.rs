//! This host's TCP counters that explain a limit the service's own figures do not: listen
//! queue overflows and drops (`/proc/net/netstat`, TcpExt) and retransmitted segments
//! (`/proc/net/snmp`, Tcp). They cover the whole network namespace, so they are read only when
//! the service runs here (`--observe pid=N`).

/// One reading of the counters (totals since boot).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counters {
    pub listen_overflows: f64,
    pub listen_drops: f64,
    pub retransmits: f64,
}

/// Reads the counters; `None` when /proc/net is not readable.
pub fn read() -> Option<Counters> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    Some(Counters {
        listen_overflows: field(&netstat, "TcpExt", "ListenOverflows")?,
        listen_drops: field(&netstat, "TcpExt", "ListenDrops")?,
        retransmits: field(&snmp, "Tcp", "RetransSegs")?,
    })
}

/// `name` of section `prefix` in the two-line (names, values) format of /proc/net.
fn field(text: &str, prefix: &str, name: &str) -> Option<f64> {
    let tag = format!("{prefix}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&tag));
    let names = lines.next()?;
    let values = lines.next()?;
    let at = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(at)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_named_fields_of_a_section() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 312 315\nIpExt: InNoRoutes\nIpExt: 4\n";
        assert_eq!(super::field(text, "TcpExt", "ListenOverflows"), Some(312.0));
        assert_eq!(super::field(text, "TcpExt", "ListenDrops"), Some(315.0));
        assert_eq!(super::field(text, "TcpExt", "Missing"), None);
        assert!(super::read().is_some(), "this host's /proc/net");
    }
}
