//! A gRPC server over hyper's HTTP/2 (h2c, or TLS with ALPN): each call's request messages
//! (unframed, all of a client stream) go to a handler that chooses the status code, the reply
//! messages (several, paced, for a server stream) and a delay; the answer is framed messages
//! and `grpc-status` / `grpc-message` trailers, as gRPC servers send them (a non-OK status
//! comes as a trailers-only answer). The handler sees raw message bytes, so a test decodes
//! them with the `.proto` it sent them with.

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
    /// The (first) request message, without its 5-byte frame header.
    pub message: &'a [u8],
    /// Every request message of the call (a client stream sends several).
    pub messages: &'a [Vec<u8>],
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
    /// Server streaming: messages sent after `message`, each `interval` after the last.
    pub more: Vec<Vec<u8>>,
    pub interval: Duration,
    /// `message` is the answer's body as it goes on the wire, not framed: for servers that
    /// send broken frames.
    pub raw: bool,
}

impl Answer {
    pub fn ok(message: Vec<u8>) -> Answer {
        Answer {
            code: 0,
            message,
            delay: Duration::ZERO,
            more: Vec::new(),
            interval: Duration::ZERO,
            raw: false,
        }
    }

    pub fn code(code: u16) -> Answer {
        Answer {
            code,
            message: Vec::new(),
            delay: Duration::ZERO,
            more: Vec::new(),
            interval: Duration::ZERO,
            raw: false,
        }
    }
}

pub type GrpcHandler = Arc<dyn Fn(&Call) -> Answer + Send + Sync>;

/// A response body: frames a task hands over as it produces them (messages, paced, then the
/// trailers); a trailers-only answer has none.
struct Reply(Option<tokio::sync::mpsc::Receiver<Frame<Bytes>>>);

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.0.as_mut() {
            Some(rx) => rx.poll_recv(cx).map(|f| f.map(Ok)),
            None => Poll::Ready(None),
        }
    }
}

/// Sends `a`'s messages (the first at once, the rest `a.interval` apart), then OK trailers.
fn stream_reply(a: Answer) -> Reply {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        if a.raw {
            let _ = tx.send(Frame::data(Bytes::from(a.message))).await;
            let _ = tx.send(Frame::trailers(status_headers(0))).await;
            return;
        }
        let mut first = true;
        for m in std::iter::once(a.message).chain(a.more) {
            if !first {
                tokio::time::sleep(a.interval).await;
            }
            first = false;
            if tx.send(Frame::data(framed(&m))).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Frame::trailers(status_headers(0))).await;
    });
    Reply(Some(rx))
}

/// The messages of a request body (5-byte header, then the length it gives), unframed.
fn unframe(mut body: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let [_, a, b, c, d, rest @ ..] = body {
        let len = (u32::from_be_bytes([*a, *b, *c, *d]) as usize).min(rest.len());
        out.push(rest[..len].to_vec());
        body = &rest[len..];
    }
    out
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
    let messages = unframe(&body);
    let a = handler(&Call {
        path: &path,
        message: messages.first().map_or(&[][..], Vec::as_slice),
        messages: &messages,
        metadata: &metadata,
        authority: &authority,
        seq,
    });
    tokio::time::sleep(a.delay).await;
    let mut resp = if a.code == 0 {
        hyper::Response::new(stream_reply(a))
    } else {
        // Trailers-only: the status travels in the headers of an empty answer.
        let mut r = hyper::Response::new(Reply(None));
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
    spawn_server(&opts, true, move |sock, counters, acceptor| {
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
    })
}
