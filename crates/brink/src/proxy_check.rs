//! Before load goes to a port on this machine: is the process listening on it a userland
//! proxy (docker-proxy, kubectl port-forward, ...) rather than the service? Then the run
//! measures the proxy's copy loop as much as the service, and brink warns, once per port.

use model::Target;
use runner::Job;

/// Warns about each loopback target whose port is served by a known proxy.
pub fn warn_about_proxies(jobs: &[Job]) {
    let mut seen: Vec<u16> = Vec::new();
    for job in jobs {
        let t = &job.spec.target;
        if !is_loopback(t) || seen.contains(&t.port) {
            continue;
        }
        seen.push(t.port);
        if let Some(text) = proxy_warning(t) {
            crate::console::warn(&text);
        }
    }
}

/// The warning for `t`, when a proxy serves its port.
fn proxy_warning(t: &Target) -> Option<String> {
    let (pid, comm) = observe::listener::owner(t.port)?;
    observe::listener::PROXIES.contains(&comm.as_str()).then(|| {
        format!(
            "{}:{} is served by {comm} (pid {pid}), a userland proxy in front of the service: it copies every byte and can be the limit this run measures; target the service's own address to measure the service",
            t.host, t.port
        )
    })
}

fn is_loopback(t: &Target) -> bool {
    t.host == "localhost"
        || t.host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
