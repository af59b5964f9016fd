//! What every connection of a run shares ([`Connector`]: address, TLS, the protocol, the
//! requests' fixed bytes) and opening its transport for the tokio worker: TCP with a connect
//! timeout, then TLS with ALPN. Which protocol is then spoken over it is the protocols' own
//! business (`proto::session`). Every failure becomes an [`ErrorKind`].

use crate::proto::reply::Unopened;
use bytes::Bytes;
use model::Protocol;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use stats::ErrorKind;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use workload::capture::Budget;
use workload::{Vu, Workload};

/// gRPC clients' default largest message received (grpc-go, grpc-java): 4 MiB.
pub const DEFAULT_GRPC_MAX_MESSAGE: usize = 4 << 20;

/// Everything needed to open a connection to the target; shared by all workers.
pub struct Connector {
    pub addr: SocketAddr,
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    pub protocol: Protocol,
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
    /// No room at all: answers kept for their headers (and body length) only.
    pub headers_only: Arc<Budget>,
    /// How long a request may take (`--timeout`): protocols that tell the server their
    /// deadline send it (gRPC's `grpc-timeout`).
    pub timeout: Duration,
    /// Largest message an answer may carry (gRPC).
    pub max_message: usize,
    /// Which answers are read as events.
    pub events: crate::proto::events::EventRule,
    /// HTTP/3 `--0rtt`: which requests go as early data on a resumed connection.
    pub early_data: crate::net::tls::EarlyData,
}

/// How long opening one connection took.
#[derive(Clone, Copy, Debug)]
pub struct SetupTimes {
    pub connect: Duration,
    pub tls: Option<Duration>,
    /// A WebSocket's upgrade (request sent to 101 read).
    pub upgrade: Option<Duration>,
}

/// An open transport, before any protocol is spoken on it: what [`Connector::open`] hands to
/// the protocol chosen ([`crate::proto::session::connect`]).
pub enum Stream {
    Tcp(TcpStream),
    /// Boxed: TLS state is large and allocated once per connection anyway.
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Whether TLS's ALPN settled on HTTP/2 (`None` without TLS: nothing was negotiated).
    pub fn alpn_h2(&self) -> Option<bool> {
        match self {
            Stream::Tcp(_) => None,
            Stream::Tls(t) => Some(t.get_ref().1.alpn_protocol() == Some(b"h2")),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Why a TLS handshake failed, in words: rustls's, and what it usually means when the
/// server answered in plain text.
fn tls_why(e: &std::io::Error) -> String {
    let why = e.to_string();
    if why.contains("InvalidContentType") {
        format!("{why} (the server answered in plain text, not TLS: is it http:// or ws://?)")
    } else if e.kind() == std::io::ErrorKind::UnexpectedEof {
        format!("{why} (the server closed the connection before the TLS handshake finished: does this port speak TLS?)")
    } else {
        why
    }
}

impl Connector {
    /// Where the answer to `step` is kept, if it is: within the run's budget when a check or
    /// an extraction reads its body, its headers only when its checks read no more.
    pub fn capture_for(&self, step: &workload::Request) -> Option<&Arc<Budget>> {
        match (step.keeps_response(), step.keeps_body()) {
            (false, _) => None,
            (true, true) => Some(&self.captures),
            (true, false) => Some(&self.headers_only),
        }
    }

    /// Opens a transport: TCP, then TLS and ALPN when the target is `https://` or `grpcs://`.
    /// Returns it with how long the TCP connect and the TLS handshake took.
    pub async fn open(&self) -> Result<(Stream, SetupTimes), Unopened> {
        let started = Instant::now();
        let within = self.connect_timeout;
        let late = |what: &str| format!("no {what} within {within:?} (--connect-timeout)");
        let tcp = match tokio::time::timeout(within, TcpStream::connect(self.addr)).await {
            Err(_) => {
                return Err(Unopened::because(
                    ErrorKind::ConnectTimeout,
                    late("connect"),
                ))
            }
            Ok(Err(e)) => return Err(Unopened::because(ErrorKind::Connect, e.to_string())),
            Ok(Ok(s)) => s,
        };
        let connected = Instant::now();
        let mut times = SetupTimes {
            connect: connected - started,
            tls: None,
            upgrade: None,
        };
        let _ = tcp.set_nodelay(true);
        let Some((config, name)) = &self.tls else {
            return Ok((Stream::Tcp(tcp), times));
        };
        let handshake = TlsConnector::from(config.clone()).connect(name.clone(), tcp);
        let tls = match tokio::time::timeout(within, handshake).await {
            Err(_) => {
                let why = late("TLS handshake");
                return Err(Unopened::because(ErrorKind::ConnectTimeout, why));
            }
            Ok(Err(e)) => return Err(Unopened::because(ErrorKind::Tls, tls_why(&e))),
            Ok(Ok(s)) => s,
        };
        times.tls = Some(connected.elapsed());
        Ok((Stream::Tls(Box::new(tls)), times))
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
        let resumed = self.resumes(vu);
        match &self.h1_static[vu.current] {
            Some(b) if !traced && !resumed => return Ok(b.len()),
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
        if let (true, Some(id)) = (resumed, vu.resume.last_id()) {
            let id = id.to_vec();
            workload::resume::add_to_h1(&mut vu.buf, &id);
        }
        Ok(vu.buf.len())
    }

    /// Whether `vu`'s request goes out with the `Last-Event-ID` its held stream confirmed
    /// (a request that names that header itself is sent as written).
    pub fn resumes(&self, vu: &Vu) -> bool {
        self.events.hold
            && vu.resume.last_id().is_some()
            && !self.workload.requests[vu.current]
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("last-event-id"))
    }

    /// The HTTP/1.1 bytes prepared by [`Connector::prepare_h1`].
    pub fn h1_bytes<'a>(&'a self, vu: &'a Vu) -> &'a [u8] {
        match &self.h1_static[vu.current] {
            Some(b) if self.workload.trace.is_none() && !self.resumes(vu) => b,
            _ => &vu.buf,
        }
    }
}
