//! HTTP/3 as a [`Session`] of the tokio worker: opening a QUIC connection on the worker's
//! endpoint (its handshake timed as the connection's set-up), and one request's exchange.

use super::early::{self, Early};
use super::{connection_kind, control, wire, H3Conn, Shared, Unprocessed};
use crate::net::conn::{Connector, SetupTimes};
use crate::net::tls::EarlyData;
use crate::proto::reply::{Idle, Unopened};
use crate::proto::session::{Conn, Exchange, Session, Tally};
use bytes::Bytes;
use stats::ErrorKind;
use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Context;
use std::time::{Duration, Instant};
use workload::Vu;

thread_local! {
    /// This worker thread's QUIC endpoint (one UDP socket for all its connections), with the
    /// TLS configuration it was made for.
    static ENDPOINT: RefCell<Option<(usize, quinn::Endpoint)>> = const { RefCell::new(None) };
}

/// The worker thread's endpoint for `connector`, made on first use.
fn endpoint(connector: &Connector) -> Result<quinn::Endpoint, Unopened> {
    let Some((tls, _)) = &connector.tls else {
        return Err(Unopened::because(
            ErrorKind::Tls,
            "HTTP/3 needs TLS (an https:// URL)",
        ));
    };
    let key = Arc::as_ptr(tls) as usize;
    ENDPOINT.with_borrow_mut(|slot| {
        if let Some((k, e)) = slot.as_ref() {
            if *k == key {
                return Ok(e.clone());
            }
        }
        let e = new_endpoint(connector.addr, tls)?;
        *slot = Some((key, e.clone()));
        Ok(e)
    })
}

/// A QUIC client endpoint on a UDP socket of its own for connections to `to` with `tls`.
pub(super) fn new_endpoint(
    to: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<quinn::Endpoint, Unopened> {
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls.clone())
        .map_err(|e| Unopened::because(ErrorKind::Tls, format!("QUIC needs TLS 1.3: {e}")))?;
    let socket_failed =
        |e: std::io::Error| Unopened::because(ErrorKind::Connect, format!("UDP socket: {e}"));
    let runtime = quinn::default_runtime()
        .ok_or_else(|| socket_failed(std::io::Error::other("no async runtime")))?;
    let mut e = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        udp_socket(to).map_err(socket_failed)?,
        runtime,
    )
    .map_err(socket_failed)?;
    let mut client = quinn::ClientConfig::new(Arc::new(quic));
    client.transport_config(Arc::new(transport()));
    e.set_default_client_config(client);
    Ok(e)
}

/// What a client connection allows its server: no streams of the server's own but its three
/// unidirectional ones (control and QPACK's two; push is never allowed), and no datagrams, so
/// that nothing is kept per connection for what HTTP/3 does not use.
fn transport() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_bidi_streams(0u32.into())
        .max_concurrent_uni_streams(PEER_UNI_STREAMS.into())
        .datagram_receive_buffer_size(None);
    t
}

/// The server's control stream, QPACK's encoder and decoder streams, and room for a few of
/// unknown (reserved) types, which are refused.
const PEER_UNI_STREAMS: u32 = 8;

/// How much the kernel may hold for brink's UDP socket each way. Its default (some 200 KiB) is
/// fewer than 200 full datagrams: a worker opening hundreds of connections at once gets their
/// handshakes' certificates in one burst, and a socket that small drops them, each drop a
/// retransmission a third of a second later counted against the server as handshake time. The
/// kernel caps the figure at `net.core.rmem_max`/`wmem_max`.
const SOCKET_BUFFER: usize = 8 << 20;

/// The worker's UDP socket for connections to `to`: bound to loopback when the target is on it
/// (nothing beyond this machine can reach it then), else to the unspecified address of its
/// family; its buffers asked for [`SOCKET_BUFFER`].
fn udp_socket(to: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let ip: IpAddr = match to.ip() {
        ip if ip.is_loopback() => ip,
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = std::net::UdpSocket::bind((ip, 0))?;
    // Best effort: a smaller buffer than asked is still a working socket.
    let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&socket, SOCKET_BUFFER);
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(&socket, SOCKET_BUFFER);
    Ok(socket)
}

/// Opens an HTTP/3 connection: the QUIC handshake (TLS 1.3 inside it, ALPN `h3`), then
/// HTTP/3's control streams. Both within `--connect-timeout`; the handshake is the
/// connection's set-up time (QUIC has no separate connect).
pub async fn open(connector: &Connector) -> Result<(Conn, SetupTimes), Unopened> {
    let (conn, times) = dial(connector).await?;
    Ok((Box::new(conn), times))
}

/// [`open`]'s connection, as itself.
async fn dial(connector: &Connector) -> Result<(H3Conn, SetupTimes), Unopened> {
    let started = Instant::now();
    let endpoint = endpoint(connector)?;
    let name = match &connector.tls {
        Some((_, name)) => name.to_str().into_owned(),
        None => return Err(Unopened::because(ErrorKind::Tls, "HTTP/3 needs TLS")),
    };
    let within = connector.connect_timeout;
    let late = || {
        let why = format!("no QUIC handshake within {within:?} (--connect-timeout)");
        Unopened::because(ErrorKind::ConnectTimeout, why)
    };
    let connecting = endpoint
        .connect(connector.addr, &name)
        .map_err(|e| Unopened::because(ErrorKind::Connect, e.to_string()))?;
    // With --0rtt and a session to resume, the connection carries requests at once.
    let (connecting, early) = match connector.early_data {
        EarlyData::Off => (Some(connecting), None),
        _ => match connecting.into_0rtt() {
            Ok((quic, accepted)) => (None, Some((quic, accepted))),
            Err(connecting) => (Some(connecting), None),
        },
    };
    let (quic, early) = match (connecting, early) {
        (_, Some((quic, accepted))) => {
            let e = Arc::new(Early::default());
            tokio::spawn(early::watch(quic.clone(), accepted, e.clone()));
            (quic, Some(e))
        }
        (Some(connecting), None) => match tokio::time::timeout(within, connecting).await {
            Err(_) => return Err(late()),
            Ok(Err(e)) => return Err(handshake_failed(&e, &name)),
            Ok(Ok(c)) => (c, None),
        },
        (None, None) => return Err(late()),
    };
    // Over 0-RTT: until the connection could carry requests, not the whole handshake.
    let handshake = started.elapsed();
    // brink's control stream, with its SETTINGS; it stays open as long as the connection.
    let mut ours = quic
        .open_uni()
        .await
        .map_err(|e| Unopened::because(connection_kind(&e), e.to_string()))?;
    ours.write_all(&wire::control_stream())
        .await
        .map_err(|e| Unopened::because(ErrorKind::Closed, e.to_string()))?;
    let state = Arc::new(control::State::default());
    tokio::spawn(control::serve(quic.clone(), ours, state.clone()));
    let times = SetupTimes {
        connect: handshake,
        tls: None,
        upgrade: None,
    };
    let zero_rtt = stats::ZeroRtt {
        connections: u64::from(early.is_some()),
        ..Default::default()
    };
    let shared = Rc::new(Shared { quic, state, early });
    Ok((
        H3Conn {
            shared,
            events: None,
            codes: Vec::new(),
            opened: Vec::new(),
            zero_rtt,
        },
        times,
    ))
}

/// One QUIC handshake (ALPN `h3`) to `connector`'s address on an endpoint of its own, closed
/// at once, within `--connect-timeout`: whether HTTP/3 answers there, and how long it took.
pub async fn handshake_only(connector: &Connector) -> Result<Duration, Unopened> {
    let started = Instant::now();
    let (tls, name) = match &connector.tls {
        Some((tls, name)) => (tls, name.to_str().into_owned()),
        None => return Err(Unopened::because(ErrorKind::Tls, "HTTP/3 needs TLS")),
    };
    let endpoint = new_endpoint(connector.addr, tls)?;
    let connecting = endpoint
        .connect(connector.addr, &name)
        .map_err(|e| Unopened::because(ErrorKind::Connect, e.to_string()))?;
    let within = connector.connect_timeout;
    let quic = match tokio::time::timeout(within, connecting).await {
        Err(_) => {
            let why = format!("no QUIC handshake within {within:?}");
            return Err(Unopened::because(ErrorKind::ConnectTimeout, why));
        }
        Ok(Err(e)) => return Err(handshake_failed(&e, &name)),
        Ok(Ok(c)) => c,
    };
    let took = started.elapsed();
    quic.close(quinn::VarInt::from_u32(wire::H3_NO_ERROR as u32), b"");
    // The close goes out before the endpoint is dropped (bounded: the peer may be gone).
    let _ = tokio::time::timeout(Duration::from_millis(200), endpoint.wait_idle()).await;
    Ok(took)
}

/// Why a QUIC handshake failed, counted as its kind: TLS's alert (a certificate refused, no
/// common ALPN) is `tls`, silence `connect_timeout`, a server that speaks no QUIC version
/// brink does `handshake`, anything else `connect`. `name`: the server name brink sent.
fn handshake_failed(e: &quinn::ConnectionError, name: &str) -> Unopened {
    use quinn::ConnectionError as C;
    let crypto = |code: quinn::TransportErrorCode| (0x100..0x200).contains(&u64::from(code));
    let (kind, hint) = match e {
        C::TimedOut => (ErrorKind::ConnectTimeout, ""),
        C::VersionMismatch => (ErrorKind::Handshake, ""),
        C::TransportError(t) if crypto(t.code) => (ErrorKind::Tls, ""),
        C::ConnectionClosed(c) if crypto(c.error_code) => {
            // The server's alert: with an IP address no SNI went out, and a server that picks
            // its certificate by name may have none to offer.
            let ip = name.parse::<std::net::IpAddr>().is_ok();
            let hint = " (no SNI is sent for an IP address: a server that picks its certificate by name may refuse; --authority NAME:PORT sends one)";
            (ErrorKind::Tls, if ip { hint } else { "" })
        }
        _ => (ErrorKind::Connect, ""),
    };
    Unopened::because(kind, format!("{e}{hint}"))
}

impl Session for H3Conn {
    fn share(&self) -> Option<Conn> {
        Some(Box::new(self.clone()))
    }

    fn idle(&mut self, _: &mut Context<'_>, _: Duration) -> Idle {
        // A closing connection shows on the next request.
        Idle::Open
    }

    fn send<'a>(
        &'a mut self,
        connector: &'a Connector,
        vu: &'a mut Vu,
        tally: Tally<'a>,
    ) -> Exchange<'a> {
        Box::pin(self.exchange(connector, vu, tally))
    }

    fn events(&mut self) -> Option<Box<crate::proto::events::Events>> {
        self.events.take()
    }

    fn survives(&self, kind: ErrorKind) -> bool {
        // A reset stream or a malformed answer ends one stream; the connection is fine
        // unless it is closing.
        matches!(kind, ErrorKind::Reset | ErrorKind::Protocol)
            && self.shared.quic.close_reason().is_none()
            && !self.shared.state.refuses(None)
    }

    fn account(&mut self, rec: &mut stats::Bucket, _: bool) {
        for code in self.codes.drain(..) {
            rec.record_code(&code, 1);
        }
        for took in self.opened.drain(..) {
            rec.setup
                .record_connect(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        }
        rec.setup
            .record_zero_rtt(&std::mem::take(&mut self.zero_rtt));
    }
}

impl H3Conn {
    async fn exchange(
        &mut self,
        connector: &Connector,
        vu: &mut Vu,
        tally: Tally<'_>,
    ) -> (crate::proto::reply::Outcome, u64) {
        let step = &connector.workload.requests[vu.current];
        let capture = connector.capture_for(step);
        let (path, values, body) = match vu.render_parts(&connector.workload) {
            Ok(parts) => parts,
            Err(r) => {
                vu.refused = Some(r);
                return (Err(ErrorKind::InvalidRequest), 0);
            }
        };
        let len = body.len() as u64;
        let last_id = connector.resumes(vu).then(|| vu.resume.last_id()).flatten();
        let mut fields: Vec<(&str, &[u8])> = step
            .headers
            .iter()
            .zip(&values)
            .map(|((name, _), value)| (name.as_str(), value.as_slice()))
            .collect();
        if let Some(id) = &last_id {
            fields.push(("last-event-id", id));
        }
        let mut head = Vec::with_capacity(128 + path.len());
        wire::put_headers(
            &mut head,
            &wire::Head {
                method: step.method.as_str(),
                authority: &connector.authority,
                path: &path,
                headers: &fields,
            },
        );
        if !body.is_empty() {
            wire::put_data_header(&mut head, body.len());
        }
        let head = Bytes::from(head);
        let (rule, body) = (connector.events, Bytes::from(body));
        let early = connector.early_data.allows(step.method.as_str());
        // A request the server never processed is sent again and counted once: on the same
        // connection when the server rejected the stream alone, on a fresh one when the
        // connection was going away.
        let mut last = Unprocessed::Rejected;
        for _ in 0..RESENDS {
            let tally = (tally, vu.current, early);
            match self
                .roundtrip(head.clone(), body.clone(), capture, rule, tally)
                .await
            {
                Ok(outcome) => return (outcome, len),
                Err(u @ Unprocessed::Rejected) => last = u,
                // The handshake has ended: the next try goes as an ordinary request.
                Err(u @ Unprocessed::EarlyRefused) => last = u,
                Err(u @ Unprocessed::GoingAway) => {
                    last = u;
                    if let Err(kind) = self.reopen(connector).await {
                        return (Err(kind), 0);
                    }
                }
            }
        }
        let (kind, code) = match last {
            Unprocessed::Rejected => (ErrorKind::Reset, "reset:H3_REQUEST_REJECTED"),
            Unprocessed::GoingAway => (ErrorKind::Closed, "closed:GOAWAY"),
            Unprocessed::EarlyRefused => (ErrorKind::Reset, "reset:0RTT_REJECTED"),
        };
        self.codes.push(code.to_string());
        (Err(kind), 0)
    }

    /// Replaces this handle's connection with a fresh one, counted as the worker counts the
    /// connections it opens.
    async fn reopen(&mut self, connector: &Connector) -> Result<(), ErrorKind> {
        // Boxed: rare, and large (a QUIC handshake).
        let (mut fresh, times) = Box::pin(dial(connector)).await.map_err(|u| u.kind)?;
        fresh.codes = std::mem::take(&mut self.codes);
        fresh.opened = std::mem::take(&mut self.opened);
        fresh.opened.push(times.connect);
        fresh.zero_rtt.requests += self.zero_rtt.requests;
        fresh.zero_rtt.refused += self.zero_rtt.refused;
        *self = fresh;
        Ok(())
    }
}

/// How many times an unprocessed request is tried before it counts as an error (as for
/// HTTP/2).
const RESENDS: usize = 3;
