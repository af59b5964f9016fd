//! A gRPC server over hyper's HTTP/2 (h2c, or TLS with ALPN): each call's request message
//! (unframed) goes to a handler that chooses the status code, the reply message and a delay;
//! the answer is a framed message and `grpc-status` / `grpc-message` trailers, as gRPC servers
//! send them (a non-OK status comes as a trailers-only answer). The handler sees raw message
//! bytes, so a test decodes them with the `.proto` it sent them with.

use crate::{spawn_server, Options, Server};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// One call as the handler sees it.
pub struct Call<'a> {
    /// `/package.Service/Method`.
    pub path: &'a str,
    /// The request message, without its 5-byte frame header.
    pub message: &'a [u8],
    /// Request headers (metadata), lower-case names.
    pub metadata: &'a [(String, String)],
    /// The `:authority` the client sent.
    pub authority: &'a str,
    /// 0 for the first call the server received, then 1, 2, ...
    pub seq: u64,
}

/// The answer to a call.
#[derive(Clone, Debug)]
pub struct Answer {
    pub code: u16,
    pub message: Vec<u8>,
    pub delay: Duration,
}

impl Answer {
    pub fn ok(message: Vec<u8>) -> Answer {
        Answer {
            code: 0,
            message,
            delay: Duration::ZERO,
        }
    }

    pub fn code(code: u16) -> Answer {
        Answer {
            code,
            message: Vec::new(),
            delay: Duration::ZERO,
        }
    }
}

pub type GrpcHandler = Arc<dyn Fn(&Call) -> Answer + Send + Sync>;

/// A response body: one data frame (if any), then the trailers.
struct Reply {
    data: Option<Bytes>,
    trailers: Option<hyper::HeaderMap>,
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }
}

fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

fn status_headers(code: u16) -> hyper::HeaderMap {
    let mut h = hyper::HeaderMap::new();
    if let Ok(v) = code.to_string().parse() {
        h.insert("grpc-status", v);
    }
    if code != 0 {
        h.insert(
            "grpc-message",
            hyper::header::HeaderValue::from_static("injected"),
        );
    }
    h
}

async fn answer(
    handler: GrpcHandler,
    seq: u64,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Reply> {
    let path = req.uri().path().to_string();
    let authority = req
        .uri()
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let metadata = model::header_pairs(req.headers());
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message = body.get(5..).unwrap_or_default();
    let a = handler(&Call {
        path: &path,
        message,
        metadata: &metadata,
        authority: &authority,
        seq,
    });
    tokio::time::sleep(a.delay).await;
    let mut resp = if a.code == 0 {
        hyper::Response::new(Reply {
            data: Some(framed(&a.message)),
            trailers: Some(status_headers(0)),
        })
    } else {
        // Trailers-only: the status travels in the headers of an empty answer.
        let mut r = hyper::Response::new(Reply {
            data: None,
            trailers: None,
        });
        r.headers_mut().extend(status_headers(a.code));
        r
    };
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/grpc"),
    );
    resp
}

/// Serves `handler` over HTTP/2 (TLS when `opts.tls`).
pub fn serve_grpc(opts: Options, handler: GrpcHandler) -> std::io::Result<Server> {
    let seq = Arc::new(AtomicU64::new(0));
    spawn_server(
        opts.threads,
        opts.port,
        (opts.tls, opts.mtls),
        true,
        move |sock, counters, acceptor| {
            let (handler, counters, seq, acceptor) = (
                handler.clone(),
                counters.clone(),
                seq.clone(),
                acceptor.clone(),
            );
            let svc = service_fn(move |req| {
                let (handler, counters) = (handler.clone(), counters.clone());
                let n = seq.fetch_add(1, Ordering::Relaxed);
                async move {
                    counters.requests.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, Infallible>(answer(handler, n, req).await)
                }
            });
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                match acceptor {
                    Some(a) => {
                        if let Ok(tls) = a.accept(sock).await {
                            let _ = builder.serve_connection(TokioIo::new(tls), svc).await;
                        }
                    }
                    None => {
                        let _ = builder.serve_connection(TokioIo::new(sock), svc).await;
                    }
                }
            });
        },
    )
}
