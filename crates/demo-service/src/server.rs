//! A small HTTP/1.1 server on 127.0.0.1 (hyper) for a [`Handler`]: each request gets the
//! handler's answer, waiting for a service slot first when the answer asks for one. It runs on
//! its own thread and runtime (`accept`) and stops when dropped.

use crate::{Answer, Handler, Req};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A running server; dropping it stops it.
pub struct Server {
    pub addr: SocketAddr,
    _running: accept::Running,
}

impl Server {
    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// Serves `handler` on 127.0.0.1:`port` (0: any free port) with `threads` runtime threads and
/// at most `slots` slot-holding answers at once.
pub fn serve(port: u16, threads: usize, slots: usize, handler: Handler) -> std::io::Result<Server> {
    let ctx = Arc::new(Ctx {
        handler,
        slots: Arc::new(Semaphore::new(slots.max(1))),
        seq: AtomicU64::new(0),
    });
    let at = SocketAddr::from(([127, 0, 0, 1], port));
    let (addr, running) = accept::serve("demo-service", threads, at, move |sock, _| {
        let _ = sock.set_nodelay(true);
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| answer(ctx.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
    })?;
    Ok(Server {
        addr,
        _running: running,
    })
}

/// A request read whole from hyper, for handlers that see plain values.
pub struct OwnedReq {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl OwnedReq {
    /// Reads `req`, its body included (a body that fails to arrive is empty).
    pub async fn read(req: hyper::Request<hyper::body::Incoming>) -> OwnedReq {
        let method = req.method().to_string();
        let path = req
            .uri()
            .path_and_query()
            .map_or("/".to_string(), |p| p.to_string());
        let headers = model::header_pairs(req.headers());
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        OwnedReq {
            method,
            path,
            headers,
            body,
        }
    }

    /// The request as a handler sees it, `seq`-th in arrival order.
    pub fn as_req(&self, seq: u64) -> Req<'_> {
        Req {
            method: &self.method,
            path: &self.path,
            seq,
            headers: &self.headers,
            body: &self.body,
        }
    }
}

struct Ctx {
    handler: Handler,
    slots: Arc<Semaphore>,
    seq: AtomicU64,
}

async fn answer(
    ctx: Arc<Ctx>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let req = OwnedReq::read(req).await;
    let a: Answer = (ctx.handler)(&req.as_req(ctx.seq.fetch_add(1, Ordering::Relaxed)));
    let _permit = if a.slot {
        ctx.slots.clone().acquire_owned().await.ok()
    } else {
        None
    };
    if !a.delay.is_zero() {
        tokio::time::sleep(a.delay).await;
    }
    let mut resp = hyper::Response::new(Full::new(Bytes::from(a.body)));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(a.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if a.close {
        resp.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    Ok(resp)
}
