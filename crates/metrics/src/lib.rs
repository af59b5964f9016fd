//! A run's live metrics where the user already looks: the series (`series`) kept as seconds
//! are merged, as Prometheus families (`families`), written in Prometheus's text format
//! (`text`) and served at `GET /metrics` on an address of the user's choosing for Prometheus
//! to scrape, or pushed each second by remote write (`remote`). Beyond loopback the caller
//! must give a token, and every scrape must present it (`Authorization: Bearer`); it is
//! compared in constant time. On loopback without one, only loopback names are answered in
//! `Host`, so a web page on a rebound name cannot read the run through a browser. The endpoint
//! keeps at most [`MOST_SCRAPERS`] connections and closes one idle for [`IDLE`] (`accept::gate`).

mod families;
mod remote;
mod series;
mod text;

pub use families::{families, Family, Sample, FAMILIES};
pub use remote::{Delivered, Destination, RemoteWrite, MOST_QUEUED};
pub use series::{Process, Series, BOUNDS, QUANTILES};
pub use text::{escape, render};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Connections the endpoint keeps at most (a new one past this closes the oldest): whatever
/// scrapers do, they cannot take the descriptors the load needs.
pub const MOST_SCRAPERS: usize = 16;
/// A connection without a request for this long is closed.
const IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// The endpoint, serving until dropped.
pub struct Endpoint {
    pub addr: SocketAddr,
    _running: accept::Running,
}

/// Serves `series` at `http://ADDR/metrics`; with `token`, only to scrapes that present it.
pub fn listen(
    addr: SocketAddr,
    token: Option<String>,
    series: Arc<Mutex<Series>>,
) -> std::io::Result<Endpoint> {
    // Without a token on loopback, only loopback names are answered (DNS rebinding).
    let check_host = token.is_none() && addr.ip().is_loopback();
    let token = Arc::new(token);
    let gate = accept::gate::Gate::new(MOST_SCRAPERS, IDLE);
    let (addr, running) = accept::serve("brink-metrics", 1, addr, move |sock, _| {
        let (series, token) = (series.clone(), token.clone());
        let pass = gate.admit();
        tokio::spawn(pass.clone().guard(async move {
            let svc = hyper::service::service_fn(move |req| {
                pass.touch();
                let answer = answer(&req, &series, token.as_deref(), check_host);
                async move { Ok::<_, Infallible>(answer) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        }));
    })?;
    Ok(Endpoint {
        addr,
        _running: running,
    })
}

fn answer<B>(
    req: &Request<B>,
    series: &Mutex<Series>,
    token: Option<&str>,
    check_host: bool,
) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, ctype: &str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = ctype.parse() {
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        r
    };
    let host = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|v| v.to_str().ok());
    if check_host && !host.is_some_and(|h| accept::host::allowed(h, &[])) {
        let text =
            "this endpoint answers only loopback names in Host (127.0.0.1, [::1], localhost)\n";
        return reply(
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            text.into(),
        );
    }
    if let Some(t) = token {
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| model::secret::same(g, t)) {
            let text = "a bearer token is required (the one in --metrics-token-file)\n";
            return reply(
                StatusCode::UNAUTHORIZED,
                "text/plain; charset=utf-8",
                text.into(),
            );
        }
    }
    if req.uri().path() != "/metrics" {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "see /metrics\n".into(),
        );
    }
    let text = match series.lock() {
        Ok(s) => render(&s),
        Err(_) => String::new(),
    };
    reply(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        text,
    )
}
