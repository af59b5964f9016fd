//! What a run on pods is given, checked here as the API server would check it, so a mistake
//! is one line before anything is created, not a failure at `kubectl apply` or halfway into
//! `k8s run`: object names, label keys and values, annotation keys, the image; and every
//! address the coordinator's pod would reach (the target, the health check, completion
//! probes, `--out`, `--observe`) that inside a pod would be the pod itself.

use crate::exit::Fail;
use std::net::{IpAddr, Ipv4Addr};

/// A DNS label (namespaces, a Service's name): lowercase letters, digits and '-', at most 63.
pub fn dns_label(flag: &str, v: &str) -> Result<(), Fail> {
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && v.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    ok.then_some(()).ok_or_else(|| {
        Fail::input(format!(
            "{flag} {v:?}: lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit"
        ))
    })
}

/// A DNS subdomain (Secrets, ServiceAccounts): DNS labels joined by '.', at most 253.
pub fn dns_subdomain(flag: &str, v: &str) -> Result<(), Fail> {
    let ok = !v.is_empty() && v.len() <= 253 && v.split('.').all(|l| dns_label(flag, l).is_ok());
    ok.then_some(()).ok_or_else(|| {
        Fail::input(format!(
            "{flag} {v:?}: a Kubernetes name (lowercase letters, digits, '-' and '.', at most 253)"
        ))
    })
}

/// A label or annotation key: an optional DNS-subdomain prefix and '/', then a name of at
/// most 63 (letters, digits, '-', '_', '.', starting and ending with a letter or digit).
pub fn qualified_name(flag: &str, k: &str) -> Result<(), Fail> {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| dns_subdomain(flag, p).is_ok());
    if prefix_ok && label_value(name) && !name.is_empty() {
        return Ok(());
    }
    Err(Fail::input(format!(
        "{flag} {k:?}: a key is [PREFIX/]NAME, NAME at most 63 letters, digits, '-', '_' or '.' starting and ending with a letter or digit, PREFIX a lowercase DNS name"
    )))
}

/// A label value: empty, or at most 63 letters, digits, '-', '_', '.' starting and ending
/// with a letter or digit.
pub fn label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric())
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
}

/// An image reference: not empty, no whitespace or control characters.
pub fn image(v: &str) -> Result<(), Fail> {
    let ok = !v.is_empty() && !v.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then_some(()).ok_or_else(|| {
        Fail::input(format!(
            "--image {v:?}: an image reference such as registry.example/brink:1.0 (no spaces)"
        ))
    })
}

/// Whether `host` (a URL's host: a name, an IPv4 address in any form the resolver takes,
/// or a bracketed IPv6 address) is this machine: loopback, or the unspecified address a
/// connection to which reaches the local host.
pub fn is_local(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let named = bare.trim_end_matches('.').to_ascii_lowercase();
    if named == "localhost" || named.ends_with(".localhost") {
        return true;
    }
    let ip = bare
        .parse::<IpAddr>()
        .ok()
        .or_else(|| inet_aton(bare).map(IpAddr::V4));
    match ip {
        Some(IpAddr::V4(v4)) => v4.is_loopback() || v4.is_unspecified(),
        Some(IpAddr::V6(v6)) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
        None => false,
    }
}

/// An IPv4 address as the C resolver reads one: one to four parts, each decimal, 0x-hex or
/// 0-octal, the last filling the bytes left (`127.1`, `2130706433`, `0x7f000001`, `0`).
fn inet_aton(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<u64> = s
        .split('.')
        .map(|p| {
            if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                u64::from_str_radix(h, 16).ok()
            } else if p.len() > 1 && p.starts_with('0') {
                u64::from_str_radix(&p[1..], 8).ok()
            } else if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) {
                p.parse().ok()
            } else {
                None
            }
        })
        .collect::<Option<_>>()?;
    let (last, head) = parts.split_last()?;
    if parts.len() > 4 || head.iter().any(|&p| p > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if room < 64 && *last >= 1u64 << room {
        return None;
    }
    let value = head
        .iter()
        .enumerate()
        .fold(*last, |v, (i, &p)| v | p << (24 - 8 * i as u32));
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_this_machine_is_local() {
        for h in [
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0",
            "0.0.0.0",
            "[::1]",
            "[::]",
            "[::ffff:127.0.0.1]",
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "0177.0.0.1",
        ] {
            assert!(is_local(h), "{h}");
        }
        for h in [
            "checkout.shop.svc",
            "10.0.0.1",
            "[2001:db8::1]",
            "128.0.0.1",
            "1.2.3.4.5",
            "256.1",
            "localhost.example",
        ] {
            assert!(!is_local(h), "{h}");
        }
    }

    #[test]
    fn names_and_keys_as_the_api_server_takes_them() {
        assert!(qualified_name("--annotation", "sidecar.istio.io/inject").is_ok());
        assert!(qualified_name("--annotation", "k").is_ok());
        for bad in ["Bad Key", "a/b/c", "Example.COM/k", &"x".repeat(64), ""] {
            assert!(qualified_name("--annotation", bad).is_err(), "{bad}");
        }
        assert!(label_value("load") && label_value("") && !label_value("bad value!"));
        assert!(dns_subdomain("--service-account", "load-gen").is_ok());
        for bad in ["Bad_Name", "", "a b"] {
            assert!(dns_subdomain("--image-pull-secret", bad).is_err(), "{bad}");
        }
        assert!(dns_label("--namespace", &"n".repeat(64)).is_err());
        assert!(image("reg/brink:1").is_ok());
        assert!(image("reg/brink:1 --privileged").is_err() && image("").is_err());
    }
}
