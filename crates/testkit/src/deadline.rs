//! A gRPC server on the `h2` crate itself, for what hyper's server API cannot do: it holds
//! every call past the deadline the client sent (`grpc-timeout`) and then ends it the way the
//! test chooses, as real servers do: a CANCEL reset at the deadline (grpc-go's transport),
//! DEADLINE_EXCEEDED trailers (a handler that noticed), or nothing at all (a stuck handler).

use crate::{spawn_server, Options, Server};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How the server ends a call whose deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtDeadline {
    /// RST_STREAM with CANCEL, at the deadline (racing the client's own timer).
    Reset,
    /// Trailers-only `grpc-status: 4`, at the deadline (racing the client's own timer).
    Trailers,
    /// Nothing: the call is held for `hold`, then answered OK.
    Hold,
}

/// How long `Hold` holds.
const HOLD: Duration = Duration::from_secs(5);

/// Serves h2c; call `i` (in arrival order) is ended by `modes[i % modes.len()]`.
pub fn serve_deadline(modes: Vec<AtDeadline>) -> std::io::Result<Server> {
    let modes = std::sync::Arc::new(modes);
    let seq = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    spawn_server(&Options::default(), true, move |sock, counters, _| {
        let (modes, seq, counters) = (modes.clone(), seq.clone(), counters.clone());
        tokio::spawn(async move {
            let Ok(mut conn) = h2::server::handshake(sock).await else {
                return;
            };
            while let Some(Ok((req, respond))) = conn.accept().await {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                let n = seq.fetch_add(1, Ordering::Relaxed) as usize;
                let mode = modes[n % modes.len().max(1)];
                tokio::spawn(call(req, respond, mode));
            }
        });
    })
}

async fn call(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    mode: AtDeadline,
) {
    let deadline = req
        .headers()
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(grpc_timeout)
        .unwrap_or(Duration::from_secs(1));
    let mut body = req.into_body();
    while let Some(Ok(d)) = body.data().await {
        let _ = body.flow_control().release_capacity(d.len());
    }
    match mode {
        AtDeadline::Reset => {
            tokio::time::sleep(deadline).await;
            respond.send_reset(h2::Reason::CANCEL);
        }
        AtDeadline::Trailers => {
            tokio::time::sleep(deadline).await;
            let resp = http::Response::builder()
                .header("content-type", "application/grpc")
                .header("grpc-status", "4")
                .header("grpc-message", "deadline exceeded")
                .body(());
            if let Ok(resp) = resp {
                let _ = respond.send_response(resp, true);
            }
        }
        AtDeadline::Hold => {
            tokio::time::sleep(HOLD).await;
            let resp = http::Response::builder()
                .header("content-type", "application/grpc")
                .body(());
            if let Ok(resp) = resp {
                if let Ok(mut s) = respond.send_response(resp, false) {
                    let _ = s.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), false);
                    let mut t = http::HeaderMap::new();
                    t.insert("grpc-status", http::HeaderValue::from_static("0"));
                    let _ = s.send_trailers(t);
                }
            }
        }
    }
}

/// `grpc-timeout` (`1000m`, `1S`, `500000u`...) as a duration.
fn grpc_timeout(v: &str) -> Option<Duration> {
    let (n, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}
