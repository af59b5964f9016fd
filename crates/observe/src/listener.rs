//! Who serves a port on this host: the process holding the listening socket (from
//! /proc/net/tcp{,6} and the processes' descriptors). A load test of 127.0.0.1:8080 that
//! reaches `docker-proxy` measures a userland copy loop in front of the service; brink says so.

/// Userland proxies that forward a published port to a container or a cluster.
pub const PROXIES: [&str; 7] = [
    "docker-proxy",
    "rootlessport",
    "rootlesskit",
    "slirp4netns",
    "vpnkit-bridge",
    "kubectl",
    "socat",
];

/// The process listening on TCP `port` here: (pid, command name); `None` when none is found
/// (or its descriptors cannot be read).
pub fn owner(port: u16) -> Option<(u32, String)> {
    let inodes: Vec<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| listening(&text, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for proc_dir in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = proc_dir
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(proc_dir.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            if wanted.iter().any(|w| link.as_os_str() == w.as_str()) {
                let comm =
                    std::fs::read_to_string(proc_dir.path().join("comm")).unwrap_or_default();
                return Some((pid, comm.trim().to_string()));
            }
        }
    }
    None
}

/// The inodes of the sockets listening on `port` in a /proc/net/tcp table.
fn listening(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local = f.get(1)?;
            let p = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
            (p == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_this_process_listening() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (pid, _) = super::owner(port).expect("our own listener");
        assert_eq!(pid, std::process::id());
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1\n   1: 0100007F:1F90 0100007F:D000 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1\n";
        assert_eq!(super::listening(table, 8080), [4242]);
    }
}
