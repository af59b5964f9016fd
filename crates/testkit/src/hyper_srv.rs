//! A hyper server speaking HTTP/1.1 and HTTP/2 (h2c prior knowledge on plain TCP, ALPN over
//! TLS), for the client paths the raw server cannot exercise. [`Reply::Full`] and
//! [`Reply::Events`] and [`Reply::Tokens`] are served; other replies become a 500.

use crate::{spawn_server, Handler, Options, Reply, Server};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Per connection: graceful shutdown after `after` requests.
struct Rotate {
    after: Option<u64>,
    served: AtomicU64,
    due: tokio::sync::Notify,
}

impl Rotate {
    fn served_one(&self) {
        let n = self.served.fetch_add(1, Ordering::Relaxed) + 1;
        if self.after == Some(n) {
            self.due.notify_one();
        }
    }

    /// Drives `conn` to its end, shutting it down gracefully once it is due.
    async fn serve<I, S>(&self, conn: auto::Connection<'_, I, S, TokioExecutor>)
    where
        S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<Body>,
        >,
        S::Future: Send + 'static,
        S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    {
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = self.due.notified() => {}
        }
        conn.as_mut().graceful_shutdown();
        let _ = conn.await;
    }
}

/// A response body of either kind.
type Body = BoxBody<Bytes, Infallible>;

fn full(status: u16, body: Vec<u8>) -> hyper::Response<Body> {
    let mut resp = hyper::Response::new(Full::new(Bytes::from(body)).boxed());
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    resp
}

/// `text/event-stream` with the cadence of [`Reply::Events`] and [`Reply::Tokens`]
/// (without slots), each event a frame of its own.
fn event_stream(c: crate::Cadence) -> hyper::Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        for (n, event) in (0u32..).zip(c.events) {
            tokio::time::sleep_until(start + c.first + c.every * n).await;
            if tx.send(Bytes::from(crate::stamped(&event))).await.is_err() {
                return;
            }
        }
        if !c.tail.is_empty() {
            let _ = tx.send(Bytes::from(c.tail)).await;
        }
    });
    let mut resp = hyper::Response::new(accept::ChannelBody(rx).boxed());
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    resp
}

/// Serves `handler` with hyper (HTTP/1.1 + HTTP/2).
pub fn serve_hyper(opts: Options, handler: Handler) -> std::io::Result<Server> {
    let seq = Arc::new(AtomicU64::new(0));
    spawn_server(&opts, true, move |sock, counters, acceptor| {
        let (handler, counters, seq, acceptor) = (
            handler.clone(),
            counters.clone(),
            seq.clone(),
            acceptor.clone(),
        );
        let rotate = Arc::new(Rotate {
            after: opts.rotate_after,
            served: AtomicU64::new(0),
            due: tokio::sync::Notify::new(),
        });
        let r = rotate.clone();
        let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (handler, counters, seq) = (handler.clone(), counters.clone(), seq.clone());
            r.served_one();
            async move {
                let req = demo_service::OwnedReq::read(req).await;
                counters.requests.fetch_add(1, Ordering::Relaxed);
                let reply = handler(&req.as_req(seq.fetch_add(1, Ordering::Relaxed)));
                let resp = match reply {
                    Reply::Full {
                        status,
                        body,
                        delay,
                        ..
                    } => {
                        tokio::time::sleep(delay).await;
                        full(status, body)
                    }
                    other => match other.cadence() {
                        Some(c) => event_stream(c),
                        None => full(500, b"unsupported reply".to_vec()),
                    },
                };
                Ok::<_, Infallible>(resp)
            }
        });
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            match acceptor {
                Some(a) => {
                    if let Ok(tls) = a.accept(sock).await {
                        let conn = builder.serve_connection(TokioIo::new(tls), svc);
                        rotate.serve(conn).await;
                    }
                }
                None => {
                    let conn = builder.serve_connection(TokioIo::new(sock), svc);
                    rotate.serve(conn).await;
                }
            }
        });
    })
}
