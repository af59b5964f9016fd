//! A fast HTTP/3 server for `bench/h3.sh`: quinn on one thread, answering every request
//! stream with the same precomputed answer (`200`, a 13-byte body) once the request has
//! ended. It decodes nothing (no QPACK, no frame parsing), so it costs the server only what
//! QUIC does, and a generator measured against it is not waiting on a slow server as it is
//! on caddy. A bench fixture, not a test server: `testkit::serve_h3` is the one tests use.
//!
//! `cargo run --release -p engine --example h3_server -- [PORT] [SECONDS]`
//! Binds 127.0.0.1:PORT (UDP, default 18443) with a fresh self-signed certificate and stops
//! after SECONDS (default 600).

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

type Res<T> = Result<T, Box<dyn Error>>;

/// The answer: HEADERS (QPACK, static table only: `:status 200` is entry 25), then DATA.
const ANSWER: &[u8] = b"\x01\x03\x00\x00\xd9\x00\x0dhello, world\n";
/// The server's control stream: its type (0x00) and an empty SETTINGS frame.
const CONTROL: &[u8] = b"\x00\x04\x00";

fn main() {
    if let Err(e) = run() {
        eprintln!("h3_server: {e}");
        std::process::exit(2);
    }
}

fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().map_or(Ok(18443), |p| p.parse())?;
    let seconds: u64 = args.next().map_or(Ok(600), |s| s.parse())?;
    let (mut tls, _, _) = testkit::tls::server_config(false, false)?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(1024u32.into());
    config.transport_config(Arc::new(transport));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // Buffers as large as the kernel allows (as quic-go's servers ask for): at the default
        // a burst of hundreds of handshakes overflows the socket and its Initials are lost.
        let socket = std::net::UdpSocket::bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, 8 << 20);
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&socket, 8 << 20);
        let runtime = quinn::default_runtime().ok_or("no async runtime")?;
        let endpoint = quinn::Endpoint::new(
            quinn::EndpointConfig::default(),
            Some(config),
            socket,
            runtime,
        )?;
        let serving = async {
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        serve(conn).await;
                    }
                });
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(seconds), serving).await;
        Ok(())
    })
}

/// One connection: the control stream, the peer's own streams drained, each request answered.
async fn serve(conn: quinn::Connection) {
    let mut control = conn.open_uni().await.ok();
    if let Some(c) = control.as_mut() {
        let _ = c.write_all(CONTROL).await;
    }
    let uni = conn.clone();
    tokio::spawn(async move {
        // The control stream stays open as long as the connection: closing it is an error.
        let _control = control;
        while let Ok(mut s) = uni.accept_uni().await {
            tokio::spawn(async move { while let Ok(Some(_)) = s.read_chunk(4096, true).await {} });
        }
    });
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        tokio::spawn(async move {
            while let Ok(Some(_)) = recv.read_chunk(4096, true).await {}
            let _ = send.write_chunk(Bytes::from_static(ANSWER)).await;
            let _ = send.finish();
        });
    }
}
