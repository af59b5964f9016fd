//! Which protocol a freshly opened connection speaks: the registry of [`Session`]s. The
//! run's protocol decides, and over TLS the server's ALPN answer (HTTP/2 asked, HTTP/1.1
//! answered: the connection speaks HTTP/1.1, and the run's hint says why its requests fail);
//! a WebSocket's upgrade is part of opening its connection.

use crate::net::conn::{Connector, SetupTimes};
use crate::proto::reply::Unopened;
use crate::proto::session::Conn;
use crate::proto::{h1, h2, h3, ws};
use model::Protocol;
use stats::ErrorKind;
use workload::Vu;

/// Opens a connection for `connector`'s protocol: its transport, then the protocol's own
/// set-up over it. Over TLS the server's ALPN answer decides between HTTP/2 and HTTP/1.1. A
/// WebSocket upgrades with `vu`'s current request (its path and headers). Each stage has
/// `--connect-timeout` (TCP and TLS in `Connector::open`; HTTP/2's handshake here, counted
/// as `connect_timeout`; a WebSocket's upgrade in its session, counted as `handshake`).
pub async fn connect(connector: &Connector, vu: &mut Vu) -> Result<(Conn, SetupTimes), Unopened> {
    if connector.protocol == Protocol::Http3 {
        // QUIC: no TCP stream; the worker's UDP endpoint carries it.
        return h3::open(connector).await;
    }
    let (stream, mut times) = connector.open().await?;
    let conn = match (connector.protocol, stream.alpn_h2()) {
        (Protocol::Http1, _) | (Protocol::Http2 | Protocol::Grpc, Some(false)) => {
            h1::session(stream)
        }
        (Protocol::Http2 | Protocol::Grpc, _) => {
            let within = connector.connect_timeout;
            match tokio::time::timeout(within, h2::session(stream)).await {
                Ok(opened) => opened?,
                Err(_) => {
                    let why = format!("no HTTP/2 handshake within {within:?} (--connect-timeout)");
                    return Err(Unopened::because(ErrorKind::ConnectTimeout, why));
                }
            }
        }
        (Protocol::Ws, _) => {
            let (conn, upgrade) = ws::session::session(stream, connector, vu).await?;
            times.upgrade = Some(upgrade);
            conn
        }
        (Protocol::Http3, _) => {
            return Err(Unopened::because(
                ErrorKind::Protocol,
                "HTTP/3 runs over QUIC, not TCP",
            ));
        }
    };
    Ok((conn, times))
}
