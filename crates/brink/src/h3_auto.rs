//! `--http3=auto`: one GET over HTTP/2 (or the HTTP/1.1 the server picks) before the run. Its
//! `Alt-Svc` `h3` entries on the target's own host (each port once, at most three) are tried
//! at once, each with one QUIC handshake within the connect timeout; the first in the
//! server's order that answers is where the run speaks HTTP/3. When none does (or none is
//! advertised) the run stays on what answered. Both are kept in the result
//! (`target.discovered`), with why each entry was not taken (at most eight reasons).

use crate::exit::Fail;
use engine::{Protocol, Target, TlsOptions};
use model::alt_svc::{self, Discovered, Entry};
use model::Wire;
use std::time::Duration;

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
    // At most MOST_TRIED distinct ports are tried, all at once, each with one QUIC
    // handshake: the whole discovery takes one connect timeout at most, however many entries
    // the header lists (one silent port listed thousands of times costs one timeout, not
    // hours), and the first port in the server's order that answered is taken.
    let mut order: Vec<Result<u16, String>> = Vec::new();
    let mut ports: Vec<u16> = Vec::new();
    let mut passed = 0usize;
    for entry in entries {
        match entry {
            Entry::Ignored(why) => order.push(Err(why)),
            Entry::Port(p) if ports.contains(&p) => {}
            Entry::Port(_) if ports.len() >= MOST_TRIED => passed += 1,
            Entry::Port(p) => {
                ports.push(p);
                order.push(Ok(p));
            }
        }
    }
    let tried = try_ports(&target, tls, connect_timeout, &ports)?;
    let mut not_taken = Vec::new();
    let mut port = None;
    for entry in order {
        match entry {
            Err(why) => not_taken.push(why),
            Ok(p) => match tried.iter().find(|(q, _)| *q == p) {
                Some((_, Ok(()))) => {
                    port = Some(p);
                    break;
                }
                Some((_, Err(why))) => not_taken.push(format!("h3=\":{p}\": {why}")),
                None => {}
            },
        }
    }
    if passed > 0 && port.is_none() {
        not_taken.push(format!(
            "{passed} more port{} not tried (at most {MOST_TRIED} ports are)",
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

/// A port tried, and whether it answered (or why not).
type Tried = (u16, Result<(), String>);

/// One QUIC handshake to each of `ports` on the target's host, all at once, each within
/// `timeout`: whether each answered, or why not.
fn try_ports(
    target: &Target,
    tls: &TlsOptions,
    timeout: Duration,
    ports: &[u16],
) -> Result<Vec<Tried>, Fail> {
    let mut theres = Vec::new();
    for &p in ports {
        let mut there = target
            .clone()
            .with_http3(true)
            .map_err(|e| Fail::input(e.to_string()))?;
        there.port = p;
        theres.push(there);
    }
    Ok(std::thread::scope(|scope| {
        let tries: Vec<_> = theres
            .iter()
            .map(|there| scope.spawn(move || engine::h3_answers(there, tls, timeout)))
            .collect();
        ports
            .iter()
            .zip(tries)
            .map(|(&p, t)| {
                let answered = match t.join() {
                    Ok(r) => r.map(|_| ()),
                    Err(_) => Err("the handshake's thread failed".to_string()),
                };
                (p, answered)
            })
            .collect()
    }))
}
