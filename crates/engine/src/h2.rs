//! HTTP/2 through hyper's connection API: h2c with prior knowledge for `http://`, ALPN `h2` for
//! `https://`. Each connection slot owns one HTTP/2 connection and keeps one stream in flight,
//! so `-c` means the same concurrency for both protocols.

use crate::conn::io_kind;
use crate::h1::reader::MAX_CAPTURE;
use crate::h1::Reply;
use crate::workload::Captured;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use stats::ErrorKind;
use tokio::io::{AsyncRead, AsyncWrite};

/// One HTTP/2 connection; its driver runs as a task on the worker's runtime.
pub struct H2Conn {
    send: SendRequest<Full<Bytes>>,
}

impl H2Conn {
    /// Performs the HTTP/2 handshake over an established transport.
    pub async fn handshake<S>(io: S) -> Result<H2Conn, ErrorKind>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .map_err(|e| hyper_kind(&e))?;
        tokio::spawn(async move {
            // The driver ends when the connection does; errors surface on the next request.
            let _ = conn.await;
        });
        Ok(H2Conn { send })
    }

    /// Sends one request and reads the whole response body, keeping it when `capture` is set.
    pub async fn roundtrip(
        &mut self,
        req: http::Request<Full<Bytes>>,
        capture: bool,
    ) -> Result<(Reply, Option<Captured>), ErrorKind> {
        self.send.ready().await.map_err(|e| hyper_kind(&e))?;
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| hyper_kind(&e))?;
        let status = resp.status().as_u16();
        let mut kept = capture.then(|| Captured {
            headers: resp
                .headers()
                .iter()
                .map(|(n, v)| {
                    (
                        n.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: Vec::new(),
        });
        let mut body = resp.into_body();
        let mut bytes_in = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| hyper_kind(&e))?;
            if let Some(d) = frame.data_ref() {
                bytes_in += d.len() as u64;
                if let Some(k) = kept.as_mut() {
                    let room = MAX_CAPTURE.saturating_sub(k.body.len());
                    k.body.extend_from_slice(&d[..d.len().min(room)]);
                }
            }
        }
        let reply = Reply {
            status,
            bytes_in,
            keep_alive: true,
            stray: false,
        };
        Ok((reply, kept))
    }
}

fn hyper_kind(e: &hyper::Error) -> ErrorKind {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io_kind(io);
        }
        src = s.source();
    }
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_closed() || e.is_canceled() || e.is_incomplete_message() {
        ErrorKind::Closed
    } else {
        ErrorKind::Protocol
    }
}
