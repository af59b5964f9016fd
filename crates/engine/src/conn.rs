//! Opening connections for the tokio worker and speaking the chosen protocol over them: TCP
//! (with a connect timeout), TLS with ALPN, then HTTP/1.1 or HTTP/2. Every failure becomes an [`ErrorKind`].

use crate::h1::{H1Conn, Reply};
use crate::h2::H2Conn;
use crate::target::RequestSpec;
use bytes::Bytes;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use stats::ErrorKind;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Maps an I/O error to the error kind it is counted under.
pub fn io_kind(e: &io::Error) -> ErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::UnexpectedEof => ErrorKind::Closed,
        K::TimedOut => ErrorKind::Timeout,
        K::InvalidData => ErrorKind::Protocol,
        _ => ErrorKind::Reset,
    }
}

/// Everything needed to open a connection to the target; shared by all workers.
pub struct Connector {
    pub addr: SocketAddr,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    pub http2: bool,
    pub connect_timeout: Duration,
    /// HTTP/1.1 request bytes, serialised once.
    pub h1_request: Bytes,
    pub spec: RequestSpec,
    /// Absolute URI for HTTP/2 (`:scheme`, `:authority`, `:path`).
    pub uri: http::Uri,
}

/// An open connection of whichever protocol was negotiated. Plain-TCP HTTP/1.1 never gets
/// here: it runs on the epoll worker.
pub enum Conn {
    /// Boxed: TLS state is large and allocated once per connection anyway.
    Tls(Box<H1Conn<TlsStream<TcpStream>>>),
    H2(H2Conn),
}

impl Connector {
    /// Opens a connection: TCP, then TLS and ALPN when the target is `https://`.
    pub async fn connect(&self) -> Result<Conn, ErrorKind> {
        let tcp =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
                Err(_) => return Err(ErrorKind::ConnectTimeout),
                Ok(Err(_)) => return Err(ErrorKind::Connect),
                Ok(Ok(s)) => s,
            };
        let _ = tcp.set_nodelay(true);
        let Some((config, name)) = &self.tls else {
            // Without TLS this path only serves HTTP/2 (h2c with prior knowledge).
            return Ok(Conn::H2(H2Conn::handshake(tcp).await?));
        };
        let handshake = TlsConnector::from(config.clone()).connect(name.clone(), tcp);
        let tls = match tokio::time::timeout(self.connect_timeout, handshake).await {
            Err(_) => return Err(ErrorKind::ConnectTimeout),
            Ok(Err(_)) => return Err(ErrorKind::Tls),
            Ok(Ok(s)) => s,
        };
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            Ok(Conn::H2(H2Conn::handshake(tls).await?))
        } else {
            Ok(Conn::Tls(Box::new(H1Conn::new(tls))))
        }
    }

    /// One request on `conn`.
    pub async fn send(&self, conn: &mut Conn) -> Result<Reply, ErrorKind> {
        let head = self.spec.is_head();
        match conn {
            Conn::Tls(c) => c.roundtrip(&self.h1_request, head).await,
            Conn::H2(c) => c.roundtrip(&self.spec, &self.uri).await,
        }
    }
}
