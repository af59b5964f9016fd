//! An HTTP/3 server (quinn and the h3 crates) on 127.0.0.1, UDP port 0, with a fresh
//! certificate, for the client's HTTP/3 paths. [`Reply::Full`], [`Reply::Events`] and
//! [`Reply::Tokens`] are served; other replies become a 500.

use crate::{Counters, Handler, Options, Reply, Server};
use bytes::Bytes;
use h3_quinn::quinn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Serves `handler` over HTTP/3 (`opts.threads` runtime threads; `opts.port` on UDP; with
/// `opts.rotate_after`, a GOAWAY after that many requests on a connection).
pub fn serve_h3(opts: Options, handler: Handler) -> std::io::Result<Server> {
    let (mut tls, pem, client) =
        crate::tls::server_config(false, opts.mtls).map_err(std::io::Error::other)?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = u32::MAX;
    if opts.refuse_early_data {
        tls.session_storage = Arc::new(Forgetful);
    }
    let quic =
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(std::io::Error::other)?;
    let config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let counters = Arc::new(Counters::default());
    let shared: Arc<Mutex<Option<quinn::Endpoint>>> = Arc::default();
    let (slot, port) = (shared.clone(), opts.port);
    let bind = move || {
        let endpoint = quinn::Endpoint::server(config, SocketAddr::from(([127, 0, 0, 1], port)))?;
        let addr = endpoint.local_addr()?;
        if let Ok(mut s) = slot.lock() {
            *s = Some(endpoint);
        }
        // The accept loop's TCP listener is not used: HTTP/3 answers on the UDP port.
        let (_, unused) = accept::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        Ok((addr, unused))
    };
    let (c, rotate) = (counters.clone(), opts.rotate_after);
    let (addr, running) = accept::spawn("testkit-h3", opts.threads, bind, move |_, stop| {
        let endpoint = shared.lock().ok().and_then(|mut s| s.take());
        async move {
            let Some(endpoint) = endpoint else {
                return;
            };
            accept_loop(endpoint, stop, (handler, c), rotate).await;
        }
    })?;
    Ok(Server {
        addr,
        counters,
        cert_pem: Some(pem),
        client,
        started: Instant::now(),
        _running: running,
    })
}

async fn accept_loop(
    endpoint: quinn::Endpoint,
    mut stop: accept::Stop,
    (handler, counters): (Handler, Arc<Counters>),
    rotate_after: Option<u64>,
) {
    let seq = Arc::new(AtomicU64::new(0));
    loop {
        let incoming = tokio::select! {
            _ = &mut stop => break,
            i = endpoint.accept() => match i {
                Some(i) => i,
                None => break,
            },
        };
        let (handler, counters, seq) = (handler.clone(), counters.clone(), seq.clone());
        tokio::spawn(async move {
            let Ok(conn) = incoming.await else {
                return;
            };
            counters.connections.fetch_add(1, Ordering::Relaxed);
            let Ok(mut h3) = h3::server::Connection::new(h3_quinn::Connection::new(conn)).await
            else {
                return;
            };
            let mut served = 0u64;
            while let Ok(Some(resolver)) = h3.accept().await {
                served += 1;
                if rotate_after == Some(served) {
                    // As a server rotating connections does: GOAWAY, then the requests already
                    // in flight are served and later ones refused.
                    let _ = h3.shutdown(1).await;
                }
                let (handler, counters, seq) = (handler.clone(), counters.clone(), seq.clone());
                tokio::spawn(async move {
                    let Ok((req, stream)) = resolver.resolve_request().await else {
                        return;
                    };
                    counters.requests.fetch_add(1, Ordering::Relaxed);
                    let _ =
                        answer(req, stream, &handler, seq.fetch_add(1, Ordering::Relaxed)).await;
                });
            }
        });
    }
    endpoint.close(0u32.into(), b"done");
}

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Reads the request's body, asks `handler`, and sends its answer.
async fn answer(
    req: http::Request<()>,
    mut stream: Stream,
    handler: &Handler,
    seq: u64,
) -> Result<(), h3::error::StreamError> {
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await? {
        use bytes::Buf;
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    let path = req
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let headers = model::header_pairs(req.headers());
    let method = req.method().to_string();
    let owned = demo_service::OwnedReq {
        method,
        path,
        headers,
        body: Bytes::from(body),
    };
    let reply = handler(&owned.as_req(seq));
    let head = |status: u16, media: Option<&'static str>| {
        let mut resp = http::Response::builder().status(status);
        if let Some(m) = media {
            resp = resp.header(http::header::CONTENT_TYPE, m);
        }
        resp.body(()).unwrap_or_default()
    };
    match reply {
        Reply::Full {
            status,
            body,
            delay,
            ..
        } => {
            tokio::time::sleep(delay).await;
            stream.send_response(head(status, None)).await?;
            if !body.is_empty() {
                stream.send_data(Bytes::from(body)).await?;
            }
        }
        other => match other.cadence() {
            Some(c) => {
                stream
                    .send_response(head(200, Some("text/event-stream")))
                    .await?;
                let start = tokio::time::Instant::now();
                for (n, event) in (0u32..).zip(c.events) {
                    tokio::time::sleep_until(start + c.first + c.every * n).await;
                    stream
                        .send_data(Bytes::from(crate::stamped(&event)))
                        .await?;
                }
                if !c.tail.is_empty() {
                    stream.send_data(Bytes::from(c.tail)).await?;
                }
            }
            None => {
                stream.send_response(head(500, None)).await?;
                stream
                    .send_data(Bytes::from_static(b"unsupported reply"))
                    .await?;
            }
        },
    }
    stream.finish().await
}

/// Session storage that keeps nothing: tickets go out (offering 0-RTT) and no session is ever
/// found again, so every resumption is a full handshake and its early data refused.
#[derive(Debug)]
struct Forgetful;

impl rustls::server::StoresServerSessions for Forgetful {
    fn put(&self, _: Vec<u8>, _: Vec<u8>) -> bool {
        true
    }
    fn get(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn take(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn can_cache(&self) -> bool {
        true
    }
}
