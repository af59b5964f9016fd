//! How brink connects, from the flags: `--insecure`, `--cacert`, `--cert`/`--key`,
//! `--authority`, `--0rtt`, and the default connect timeout. A run uses them, and so does what is asked
//! of the server before it (gRPC reflection), so they live apart from both.

use crate::cli::LoadArgs;
use crate::exit::Fail;
use engine::{EarlyData, Target, TlsOptions};
use plan::Settings;
use std::time::Duration;

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `--insecure`, `--cacert`, `--cert`/`--key` and `--authority`, checked: the files exist, the
/// certificate comes with its key, the authority is a `host[:port]`. The authority replaces the
/// target's (sent as `Host` or `:authority`) and names the certificate the server must show.
pub fn tls_options(
    a: &LoadArgs,
    mut target: Target,
    plan: &Settings,
) -> Result<(Target, TlsOptions), Fail> {
    for (flag, p) in [
        ("--cacert", &a.cacert),
        ("--cert", &a.cert),
        ("--key", &a.key),
    ] {
        if let Some(p) = p {
            if !p.is_file() {
                return Err(Fail::input(format!("{flag} {}: no such file", p.display())));
            }
        }
    }
    let client = match (&a.cert, &a.key) {
        (Some(c), Some(k)) => Some((c.clone(), k.clone())),
        (None, None) => None,
        _ => {
            return Err(Fail::input(
                "--cert and --key go together (mutual TLS needs both)",
            ))
        }
    };
    let mut server_name = None;
    if let Some(auth) = &a.authority {
        let host = authority_host(auth).ok_or_else(|| {
            Fail::input(format!(
                "--authority '{}': expected host or host:port",
                auth.escape_debug()
            ))
        })?;
        server_name = Some(host.to_string());
        target.authority = auth.clone();
    }
    let tls = TlsOptions {
        insecure: a.insecure || plan.insecure.unwrap_or(false),
        cacert: a.cacert.clone(),
        client,
        server_name,
        early_data: early_data(a, plan)?,
    };
    Ok((target, tls))
}

/// `--0rtt[=all]`, for HTTP/3 only (early data over TCP would need TLS 1.3 early data in every
/// HTTP/1.1 and HTTP/2 client brink drives).
fn early_data(a: &LoadArgs, plan: &Settings) -> Result<EarlyData, Fail> {
    let Some(which) = a.zero_rtt.as_deref().or(plan.zero_rtt) else {
        return Ok(EarlyData::Off);
    };
    if !(a.http3() || plan.http3.unwrap_or(false)) {
        return Err(Fail::input(
            "--0rtt (0rtt: in a plan) applies to HTTP/3 (--http3, or http3: true in the plan)",
        ));
    }
    Ok(match which {
        "all" => EarlyData::All,
        _ => EarlyData::Idempotent,
    })
}

/// The host of `host[:port]` (`[v6]:port` too), when the whole is a valid authority.
fn authority_host(auth: &str) -> Option<&str> {
    let (host, port, colons) = match auth.strip_prefix('[') {
        Some(rest) => {
            let (h, after) = rest.split_once(']')?;
            if !after.is_empty() && !after.starts_with(':') {
                return None;
            }
            (h, after.strip_prefix(':'), true)
        }
        None => match auth.split_once(':') {
            Some((h, p)) => (h, Some(p), false),
            None => (auth, None, false),
        },
    };
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._".contains(&b) || (colons && b == b':');
    let host_ok = !host.is_empty() && host.bytes().all(allowed);
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
    (host_ok && port_ok).then_some(host)
}
