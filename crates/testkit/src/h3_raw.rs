//! A misbehaving HTTP/3 server on quinn, for the client's hostile-peer tests: it speaks
//! QUIC correctly and HTTP/3 as told ([`Misbehaviour`]), on 127.0.0.1, UDP port 0, with a fresh
//! certificate. It stops when dropped.

use bytes::Bytes;
use quinn::VarInt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What the server does with each request stream.
#[derive(Clone, Debug)]
pub enum Misbehaviour {
    /// Sends these bytes as the answer, then ends the stream.
    Bytes(Vec<u8>),
    /// Resets the stream with this HTTP/3 error code.
    Reset(u64),
    /// Closes the whole connection with this HTTP/3 error code.
    Close(u64),
    /// Allows this many request streams per connection and answers them, but never reads
    /// them to their end, so the limit is never raised.
    StreamLimit(u32),
    /// Sends GOAWAY (stream 0: no request will be processed) as the connection opens, and
    /// rejects every request with H3_REQUEST_REJECTED.
    GoawayAtOnce,
    /// On each request stream, sends GOAWAY (stream 0: it will process none) on its control
    /// stream and leaves the request stream open, unanswered.
    GoawayHoldingStreams,
    /// Sends a head, then a DATA frame that never ends.
    Endless,
    /// Rejects every request with H3_REQUEST_REJECTED, the connection carrying on.
    RejectAll,
    /// Sends these bytes on its control stream after the stream's type (instead of an empty
    /// SETTINGS), and never answers a request.
    Control(Vec<u8>),
    /// Gives each request stream a flow window of this many bytes and never reads it, so a
    /// larger request body never gets through.
    NoWindow(u32),
}

/// The running server: where it listens, its certificate, and how many request streams
/// and connections it saw.
pub struct RawH3 {
    pub addr: SocketAddr,
    pub cert_pem: String,
    pub streams: Arc<AtomicU64>,
    pub connections: Arc<AtomicU64>,
    endpoint: quinn::Endpoint,
}

impl RawH3 {
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
}

impl Drop for RawH3 {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"done");
    }
}

/// A 200 with a 2-byte body (QPACK static `:status 200`).
const OK: &[u8] = b"\x01\x03\x00\x00\xd9\x00\x02ok";

/// Starts the server on a thread of its own.
pub fn serve_h3_raw(how: Misbehaviour) -> std::io::Result<RawH3> {
    let (mut tls, pem, _) =
        crate::tls::server_config(false, false).map_err(std::io::Error::other)?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic =
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(std::io::Error::other)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let mut t = quinn::TransportConfig::default();
    match how {
        Misbehaviour::StreamLimit(n) => {
            t.max_concurrent_bidi_streams(n.into());
        }
        Misbehaviour::NoWindow(n) => {
            t.stream_receive_window(n.into());
        }
        _ => {}
    }
    config.transport_config(Arc::new(t));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let endpoint = {
        let _in = rt.enter();
        quinn::Endpoint::server(config, SocketAddr::from(([127, 0, 0, 1], 0)))?
    };
    let (streams, connections) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let server = RawH3 {
        addr: endpoint.local_addr()?,
        cert_pem: pem,
        streams: streams.clone(),
        connections: connections.clone(),
        endpoint: endpoint.clone(),
    };
    std::thread::spawn(move || {
        rt.block_on(async move {
            while let Some(incoming) = endpoint.accept().await {
                let (how, streams) = (how.clone(), streams.clone());
                connections.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        serve(conn, how, streams).await;
                    }
                });
            }
        })
    });
    Ok(server)
}

async fn serve(conn: quinn::Connection, how: Misbehaviour, streams: Arc<AtomicU64>) {
    let mut control = match conn.open_uni().await {
        Ok(c) => c,
        Err(_) => return,
    };
    // Its type and an empty SETTINGS, then, told to, GOAWAY for stream 0.
    let mut opening = vec![0x00, 0x04, 0x00];
    match &how {
        Misbehaviour::GoawayAtOnce => opening.extend_from_slice(&[0x07, 0x01, 0x00]),
        Misbehaviour::Control(bytes) => opening = [&[0x00][..], bytes].concat(),
        _ => {}
    }
    if control.write_all(&opening).await.is_err() {
        return;
    }
    let mut held = Vec::new();
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        streams.fetch_add(1, Ordering::Relaxed);
        let code = |c: u64| VarInt::from_u64(c).unwrap_or(VarInt::MAX);
        match &how {
            Misbehaviour::Bytes(b) => {
                let b = Bytes::from(b.clone());
                tokio::spawn(async move {
                    let _ = send.write_chunk(b).await;
                    let _ = send.finish();
                    let _ = recv.read_to_end(1 << 16).await;
                });
            }
            Misbehaviour::Reset(c) => {
                let _ = send.reset(code(*c));
                let _ = recv.stop(code(*c));
            }
            Misbehaviour::Close(c) => conn.close(code(*c), b"told to"),
            Misbehaviour::StreamLimit(_) | Misbehaviour::NoWindow(_) => {
                let _ = send.write_all(OK).await;
                let _ = send.finish();
                held.push((send, recv));
            }
            Misbehaviour::Control(_) => held.push((send, recv)),
            Misbehaviour::GoawayHoldingStreams => {
                if control.write_all(&[0x07, 0x01, 0x00]).await.is_err() {
                    return;
                }
                held.push((send, recv));
            }
            Misbehaviour::GoawayAtOnce | Misbehaviour::RejectAll => {
                let _ = send.reset(code(0x10b));
                let _ = recv.stop(code(0x10b));
            }
            Misbehaviour::Endless => {
                tokio::spawn(async move {
                    let head = b"\x01\x03\x00\x00\xd9\x00\xc0\x00\x01\x00\x00\x00\x00\x00";
                    if send.write_all(head).await.is_err() {
                        return;
                    }
                    let zeros = Bytes::from(vec![0u8; 16 * 1024]);
                    while send.write_chunk(zeros.clone()).await.is_ok() {}
                });
            }
        }
    }
    drop(control);
}
