//! `--http3=auto`: one GET over HTTP/2 (or the HTTP/1.1 the server picks) before the run; when
//! its `Alt-Svc` advertises HTTP/3 on the target's own host, the run speaks HTTP/3 to the port
//! it names, else it stays on what answered. Both are kept in the result (`target.discovered`).

use crate::exit::Fail;
use engine::{Protocol, Target, TlsOptions};
use model::alt_svc::{self, Discovered};
use model::Wire;
use std::time::Duration;

/// The target the run loads after asking, and what the asking found.
pub fn choose(
    target: Target,
    tls: &TlsOptions,
    timeout: Duration,
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
    let port = asked
        .alt_svc
        .as_deref()
        .and_then(|h| std::str::from_utf8(h).ok())
        .and_then(alt_svc::h3_port);
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
    };
    Ok((chosen, discovered))
}
