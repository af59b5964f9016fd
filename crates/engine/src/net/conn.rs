//! Opening connections for the tokio worker and speaking the chosen protocol over them: TCP
//! (with a connect timeout), TLS with ALPN, then HTTP/1.1 or HTTP/2. Every failure becomes an [`ErrorKind`].

use crate::proto::body::{messages, CallBody};
use crate::proto::h1::H1Conn;
use crate::proto::h2::{H2Conn, Unprocessed};
use crate::proto::reply::{Idle, Reply};
use bytes::Bytes;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use stats::ErrorKind;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use workload::capture::Budget;
use workload::{Captured, Vu, Workload};

/// gRPC clients' default largest message received (grpc-go, grpc-java): 4 MiB.
pub const DEFAULT_GRPC_MAX_MESSAGE: usize = 4 << 20;

/// Everything needed to open a connection to the target; shared by all workers.
pub struct Connector {
    pub addr: SocketAddr,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    pub http2: bool,
    pub connect_timeout: Duration,
    pub keepalive: bool,
    /// `http` or `https`, for HTTP/2's `:scheme`.
    pub scheme: &'static str,
    /// `host[:port]`, for `Host` and `:authority`.
    pub authority: String,
    pub workload: Arc<Workload>,
    /// Per step: its HTTP/1.1 bytes when they never change (serialised once), else `None`.
    pub h1_static: Vec<Option<Bytes>>,
    /// What responses kept for extraction may hold together.
    pub captures: Arc<Budget>,
    /// gRPC targets: the call's deadline as sent in `grpc-timeout` (the run's `--timeout`).
    /// Every call then also says `content-type: application/grpc` and `te: trailers`, unless
    /// the request sets them itself.
    pub grpc_timeout: Option<String>,
    /// Largest gRPC message an answer may carry.
    pub grpc_max_message: usize,
}

/// How long opening one connection took.
#[derive(Clone, Copy, Debug)]
pub struct SetupTimes {
    pub connect: Duration,
    pub tls: Option<Duration>,
}

/// How many fresh connections an unprocessed HTTP/2 request is tried on before it counts as
/// `closed`.
const H2_RESENDS: usize = 3;

/// A response and, when the step extracts from it, its kept headers and body.
pub type Outcome = Result<(Reply, Option<Captured>), ErrorKind>;

/// An open connection of whichever protocol was negotiated. Plain-TCP HTTP/1.1 never gets
/// here: it runs on the epoll worker.
pub enum Conn {
    /// Boxed: TLS state is large and allocated once per connection anyway.
    Tls(Box<H1Conn<TlsStream<TcpStream>>>),
    H2(H2Conn),
}

impl Conn {
    /// Another handle on the same connection, for HTTP/2 (whose streams run side by side);
    /// `None` for HTTP/1.1, which carries one request at a time.
    pub fn share(&self) -> Option<Conn> {
        match self {
            Conn::H2(c) => Some(Conn::H2(c.clone())),
            Conn::Tls(_) => None,
        }
    }

    /// Whether the connection can take the next request (HTTP/2 streams need no check).
    pub async fn idle(&mut self) -> Idle {
        match self {
            Conn::Tls(c) => c.idle().await,
            Conn::H2(_) => Idle::Open,
        }
    }
}

impl Connector {
    /// Opens a connection: TCP, then TLS and ALPN when the target is `https://`. Returns it
    /// with how long the TCP connect and the TLS handshake took.
    pub async fn connect(&self) -> Result<(Conn, SetupTimes), ErrorKind> {
        let started = Instant::now();
        let tcp =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(self.addr)).await {
                Err(_) => return Err(ErrorKind::ConnectTimeout),
                Ok(Err(_)) => return Err(ErrorKind::Connect),
                Ok(Ok(s)) => s,
            };
        let connected = Instant::now();
        let mut times = SetupTimes {
            connect: connected - started,
            tls: None,
        };
        let _ = tcp.set_nodelay(true);
        let Some((config, name)) = &self.tls else {
            // Without TLS this path only serves HTTP/2 (h2c with prior knowledge).
            return Ok((Conn::H2(H2Conn::handshake(tcp).await?), times));
        };
        let handshake = TlsConnector::from(config.clone()).connect(name.clone(), tcp);
        let tls = match tokio::time::timeout(self.connect_timeout, handshake).await {
            Err(_) => return Err(ErrorKind::ConnectTimeout),
            Ok(Err(_)) => return Err(ErrorKind::Tls),
            Ok(Ok(s)) => s,
        };
        times.tls = Some(connected.elapsed());
        let conn = if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            Conn::H2(H2Conn::handshake(tls).await?)
        } else {
            Conn::Tls(Box::new(H1Conn::new(tls)))
        };
        Ok((conn, times))
    }

    /// Serialises every step whose bytes never change; a step that breaks the wire rules
    /// even before templating (a literal value) is an error: nothing could ever be sent.
    pub fn static_requests(
        workload: &Workload,
        authority: &str,
        keepalive: bool,
    ) -> Result<Vec<Option<Bytes>>, String> {
        let mut vu = Vu::new(workload, 0);
        (0..workload.requests.len())
            .map(|i| {
                let step = &workload.requests[i];
                step.check_literals()
                    .map_err(|e| format!("request '{}': {e}", step.name))?;
                if !step.is_static() {
                    return Ok(None);
                }
                vu.current = i;
                vu.render_h1(workload, authority, keepalive).map_err(|r| {
                    format!("request '{}': {} refused: {}", step.name, r.part, r.value)
                })?;
                Ok(Some(Bytes::copy_from_slice(&vu.buf)))
            })
            .collect()
    }

    /// Makes the HTTP/1.1 bytes of `vu`'s current request available: a static request needs
    /// nothing; a templated one is rendered into `vu.buf`. Returns the bytes' length, or
    /// `Err` when the rendered request was refused (the refusal is left in `vu.refused`).
    /// With `--trace` every request is its own bytes: a static one is copied into `vu.buf`
    /// (no allocation once the buffer has grown) and its `traceparent` stamped there.
    pub fn prepare_h1(&self, vu: &mut Vu) -> Result<usize, ErrorKind> {
        let traced = self.workload.trace.is_some();
        match &self.h1_static[vu.current] {
            Some(b) if !traced => return Ok(b.len()),
            Some(b) => {
                vu.buf.clear();
                vu.buf.extend_from_slice(b);
            }
            None => {
                if let Err(r) = vu.render_h1(&self.workload, &self.authority, self.keepalive) {
                    vu.refused = Some(r);
                    return Err(ErrorKind::InvalidRequest);
                }
            }
        }
        vu.stamp_trace(&self.workload);
        Ok(vu.buf.len())
    }

    /// The HTTP/1.1 bytes prepared by [`Connector::prepare_h1`].
    pub fn h1_bytes<'a>(&'a self, vu: &'a Vu) -> &'a [u8] {
        match &self.h1_static[vu.current] {
            Some(b) if self.workload.trace.is_none() => b,
            _ => &vu.buf,
        }
    }

    /// One request (`vu`'s next) on `conn`; returns the outcome and the bytes sent.
    pub async fn send(&self, conn: &mut Conn, vu: &mut Vu) -> (Outcome, u64) {
        let step = &self.workload.requests[vu.current];
        let capture = (!step.extract.is_empty()).then_some(&self.captures);
        match conn {
            Conn::Tls(c) => {
                let len = match self.prepare_h1(vu) {
                    Ok(len) => len,
                    Err(kind) => return (Err(kind), 0),
                };
                let r = c
                    .roundtrip(self.h1_bytes(vu), step.is_head(), capture)
                    .await;
                (r, len as u64)
            }
            Conn::H2(_) => {
                let (path, values, body) = match vu.render_parts(&self.workload) {
                    Ok(parts) => parts,
                    Err(r) => {
                        vu.refused = Some(r);
                        return (Err(ErrorKind::InvalidRequest), 0);
                    }
                };
                let len = body.len() as u64;
                let uri = format!("{}://{}{}", self.scheme, self.authority, path);
                let body = Bytes::from(body);
                let paced = step
                    .message
                    .as_ref()
                    .and_then(|m| m.stream)
                    .filter(|s| s.client && !s.interval.is_zero())
                    .map(|s| s.interval);
                let build = || {
                    let mut req = http::Request::builder()
                        .method(step.method.as_str())
                        .uri(uri.as_str());
                    for ((name, _), value) in step.headers.iter().zip(&values) {
                        req = req.header(name.as_str(), value.as_slice());
                    }
                    if let Some(deadline) = &self.grpc_timeout {
                        for (name, value) in [
                            ("content-type", "application/grpc"),
                            ("te", "trailers"),
                            ("grpc-timeout", deadline.as_str()),
                        ] {
                            if !step
                                .headers
                                .iter()
                                .any(|(n, _)| n.eq_ignore_ascii_case(name))
                            {
                                req = req.header(name, value);
                            }
                        }
                    }
                    req.body(match paced {
                        Some(interval) => CallBody::paced(messages(&body), interval),
                        None => CallBody::full(body.clone()),
                    })
                };
                // A request the server never processed (it was rotating the connection: GOAWAY,
                // REFUSED_STREAM) is sent again, once per fresh connection, and counted once.
                for _ in 0..H2_RESENDS {
                    let Ok(req) = build() else {
                        return (Err(ErrorKind::Protocol), 0);
                    };
                    let Conn::H2(h2c) = &mut *conn else { break };
                    match h2c.roundtrip(req, capture, self.grpc_max_message).await {
                        Ok(outcome) => return (outcome, len),
                        // Boxed: rare, and large (see the worker's connect).
                        Err(Unprocessed) => match Box::pin(self.connect()).await {
                            Ok((fresh, _)) => *conn = fresh,
                            Err(kind) => return (Err(kind), 0),
                        },
                    }
                }
                (Err(ErrorKind::Closed), 0)
            }
        }
    }
}
