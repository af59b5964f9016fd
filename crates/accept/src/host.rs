//! Which names a server bound to loopback answers in `Host`: this machine's loopback names
//! (`127.0.0.1`, `[::1]`, `localhost`, any port) and the ones the user allowed. A page on a
//! name an attacker's DNS points at 127.0.0.1 (DNS rebinding) is same-origin with a loopback
//! server and could read it through a visitor's browser; its `Host` still says its own name,
//! so every loopback server without a token (`brink serve`, `--metrics-listen`) refuses it.

/// Whether `host` (a `Host` header: name, optional port) names this machine's loopback or one
/// of `allowed`.
pub fn allowed(host: &str, allowed: &[String]) -> bool {
    let name = host_name(host);
    ["127.0.0.1", "[::1]", "localhost"]
        .iter()
        .any(|l| name.eq_ignore_ascii_case(l))
        || allowed
            .iter()
            .any(|a| host_name(a).eq_ignore_ascii_case(name))
}

/// `host[:port]` or `[v6][:port]` -> the name part (brackets kept for IPv6).
fn host_name(host: &str) -> &str {
    let host = host.trim();
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if host.starts_with('[') {
        return match host.split_once(']') {
            Some((_, "")) => host,
            Some((v6, port)) if port.strip_prefix(':').is_some_and(digits) => &host[..=v6.len()],
            _ => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if digits(port) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::allowed;

    #[test]
    fn loopback_names_with_any_port_and_the_allowed_ones() {
        for h in [
            "127.0.0.1",
            "127.0.0.1:9464",
            "[::1]:80",
            "LOCALHOST:1",
            "localhost",
        ] {
            assert!(allowed(h, &[]), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:9464",
            "127.0.0.1.evil.example",
            "[::1]x",
            "",
        ] {
            assert!(!allowed(h, &[]), "{h}");
        }
        assert!(allowed("box.lan:8080", &["box.lan".to_string()]));
    }
}
