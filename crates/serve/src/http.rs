//! The HTTP side: a small hyper server on its own runtime, access checks before anything else,
//! and routing to pages and API handlers (which read the history on blocking threads); the
//! answers' shapes are in `reply`.

use crate::access::{self, Presented, Refused};
use crate::query;
use crate::reply::{not_found, text, Out};
use crate::Ctx;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

/// Binds `addr` and serves on a runtime of its own until the handle is dropped.
pub fn listen(addr: SocketAddr, ctx: Arc<Ctx>) -> std::io::Result<(SocketAddr, accept::Running)> {
    accept::serve("brink-serve", 2, addr, move |sock, _peer| {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let ctx = ctx.clone();
                async move { Ok::<_, Infallible>(route(ctx, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    })
}

/// Runs `f` with the history on a blocking thread.
pub async fn with_history<F>(ctx: &Ctx, f: F) -> Out
where
    F: FnOnce(&history::History) -> Out + Send + 'static,
{
    let path = ctx.history.clone();
    tokio::task::spawn_blocking(move || match history::History::open(&path) {
        Ok(h) => f(&h),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("history: {e}")),
    })
    .await
    .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "internal error"))
}

async fn route(ctx: Arc<Ctx>, req: Request<hyper::body::Incoming>) -> Out {
    let path = req.uri().path().to_string();
    let pairs = query::pairs(req.uri().query());
    let header = |n: hyper::header::HeaderName| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (auth, cookies) = (
        header(hyper::header::AUTHORIZATION),
        header(hyper::header::COOKIE),
    );
    let (host, origin) = (header(hyper::header::HOST), header(hyper::header::ORIGIN));
    let write = req.method() != Method::GET && req.method() != Method::HEAD;
    let presented = Presented {
        query_token: query::get(&pairs, "token"),
        bearer: auth.as_deref().and_then(|a| a.strip_prefix("Bearer ")),
        cookie: cookies
            .as_deref()
            .and_then(|c| access::cookie(c, access::COOKIE)),
        write_header: req.headers().get("x-brink").is_some_and(|v| v == "1"),
        host: host.as_deref(),
        origin: origin.as_deref(),
    };
    let policy = access::Policy {
        token: &ctx.token,
        loopback: ctx.loopback,
        allowed_hosts: &ctx.allowed_hosts,
    };
    if let Err(why) = access::check(&policy, &presented, write) {
        let status = match why {
            Refused::Token => StatusCode::UNAUTHORIZED,
            _ => StatusCode::FORBIDDEN,
        };
        return text(status, why.reason());
    }
    let set_cookie = presented.query_token.is_some();
    let mut out = dispatch(&ctx, req.method().clone(), &path, pairs).await;
    if set_cookie {
        let t = &ctx.token;
        if let Ok(v) = format!("{}={t}; HttpOnly; SameSite=Strict; Path=/", access::COOKIE).parse()
        {
            out.headers_mut().insert(hyper::header::SET_COOKIE, v);
        }
    }
    out
}

/// `/run/12` -> 12 when `path` is `prefix` followed by a number (and optionally `suffix`).
fn id_in(path: &str, prefix: &str, suffix: &str) -> Option<i64> {
    path.strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}

async fn dispatch(ctx: &Arc<Ctx>, method: Method, path: &str, q: Vec<(String, String)>) -> Out {
    match (&method, path) {
        (&Method::GET, "/") => with_history(ctx, move |h| crate::pages::runs(h, &q)).await,
        (&Method::GET, "/compare") => {
            with_history(ctx, move |h| crate::pages::compare(h, &q)).await
        }
        (&Method::GET, "/api/runs") => with_history(ctx, move |h| crate::api::runs(h, &q)).await,
        (&Method::GET, "/api/compare") => {
            with_history(ctx, move |h| crate::api::compare(h, &q)).await
        }
        (&Method::GET, p) if p.starts_with("/run/") => match id_in(p, "/run/", "") {
            Some(id) => with_history(ctx, move |h| crate::pages::run(h, id)).await,
            None => not_found(),
        },
        (&Method::GET, p) if p.starts_with("/live/") => match id_in(p, "/live/", "") {
            Some(id) => with_history(ctx, move |h| crate::pages::live(h, id)).await,
            None => not_found(),
        },
        (&Method::GET, p) if p.starts_with("/api/live/") => match id_in(p, "/api/live/", "") {
            Some(id) => crate::api::live(ctx.clone(), id, &q),
            None => not_found(),
        },
        (&Method::GET, p) if p.starts_with("/api/run/") => match id_in(p, "/api/run/", "") {
            Some(id) => {
                let download = query::get(&q, "download").is_some();
                with_history(ctx, move |h| crate::api::run(h, id, download)).await
            }
            None => not_found(),
        },
        (&Method::POST, p) if p.starts_with("/api/run/") => {
            if let Some(id) = id_in(p, "/api/run/", "/baseline") {
                with_history(ctx, move |h| crate::api::baseline(h, id)).await
            } else if let Some(id) = id_in(p, "/api/run/", "/delete") {
                with_history(ctx, move |h| crate::api::delete(h, id)).await
            } else {
                not_found()
            }
        }
        _ => not_found(),
    }
}
