//! `--http3=auto`: one GET over HTTP/2 (or the HTTP/1.1 the server picks) before the run. Its
//! `Alt-Svc` `h3` entries on the target's own host are tried in the server's order, each with
//! one QUIC handshake; the first that answers is where the run speaks HTTP/3. When none does
//! (or none is advertised) the run stays on what answered. Both are kept in the result
//! (`target.discovered`), with why each entry was not taken.

use crate::exit::Fail;
use engine::{Protocol, Target, TlsOptions};
use model::alt_svc::{self, Discovered, Entry};
use model::Wire;
use std::time::{Duration, Instant};

/// The most distinct advertised ports tried, each with one QUIC handshake.
const MOST_TRIED: usize = 3;
/// The most reasons a result keeps for entries not taken (the last says how many more).
const MOST_NOT_TAKEN: usize = 8;

/// The target the run loads after asking, and what the asking found.
pub fn choose(
    target: Target,
    tls: &TlsOptions,
    timeout: Duration,
    connect_timeout: Duration,
) -> Result<(Target, Discovered), Fail> {
    if target.protocol != Protocol::Http1 || !target.tls {
        return Err(Fail::input(
            "--http3=auto needs an https:// URL (HTTP/3 runs over QUIC, which is TLS 1.3)",
        ));
    }
    let asked = engine::discover_h3(&target, tls, timeout).map_err(|why| {
        Fail::input(format!(
            "--http3=auto: asking {} failed: {why}",
            target.url()
        ))
    })?;
    let header = asked.alt_svc.as_deref().map(String::from_utf8_lossy);
    let entries = header
        .as_deref()
        .map_or_else(Vec::new, |h| alt_svc::h3_entries(h, &target.host));
    let mut not_taken = Vec::new();
    let mut port = None;
    // The whole discovery gets one connect timeout and at most MOST_TRIED ports, each tried
    // once: a header listing one silent port thousands of times costs one timeout, not hours.
    let until = Instant::now() + connect_timeout;
    let mut tried: Vec<u16> = Vec::new();
    let mut passed = 0usize;
    for entry in entries {
        let why = match entry {
            Entry::Ignored(why) => why,
            Entry::Port(p) if port.is_some() || tried.contains(&p) => continue,
            Entry::Port(p) => {
                let left = until.saturating_duration_since(Instant::now());
                if tried.len() >= MOST_TRIED || left.is_zero() {
                    passed += 1;
                    continue;
                }
                tried.push(p);
                let mut there = target
                    .clone()
                    .with_http3(true)
                    .map_err(|e| Fail::input(e.to_string()))?;
                there.port = p;
                match engine::h3_answers(&there, tls, left) {
                    Ok(_) => {
                        port = Some(p);
                        continue;
                    }
                    Err(why) => format!("h3=\":{p}\": {why}"),
                }
            }
        };
        if port.is_none() {
            not_taken.push(why);
        }
    }
    if passed > 0 {
        not_taken.push(format!(
            "{passed} more port{} not tried (at most {MOST_TRIED} ports, within one connect timeout)",
            if passed == 1 { "" } else { "s" }
        ));
    }
    if not_taken.len() > MOST_NOT_TAKEN {
        let more = not_taken.len() - (MOST_NOT_TAKEN - 1);
        not_taken.truncate(MOST_NOT_TAKEN - 1);
        not_taken.push(format!("{more} more entries not taken"));
    }
    let mut chosen = match port {
        Some(_) => target.with_http3(true),
        None => Ok(target.with_http2(asked.over == Wire::H2)),
    }
    .map_err(|e| Fail::input(e.to_string()))?;
    if let Some(p) = port {
        chosen.port = p;
    }
    let discovered = Discovered {
        asked_over: asked.over,
        status: asked.status,
        alt_svc: asked.alt_svc.as_deref().map(alt_svc::shown),
        ms: asked.took.as_secs_f64() * 1000.0,
        chose: chosen.protocol.wire(),
        port,
        not_taken,
    };
    Ok((chosen, discovered))
}
