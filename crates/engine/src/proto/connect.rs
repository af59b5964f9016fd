//! Which protocol a freshly opened connection speaks: the registry of [`Session`]s. The
//! run's protocol decides, and over TLS the server's ALPN answer (HTTP/2 asked, HTTP/1.1
//! answered: the connection speaks HTTP/1.1, and the run's hint says why its requests fail).

use crate::net::conn::{Connector, SetupTimes};
use crate::proto::session::Conn;
use crate::proto::{h1, h2};
use model::Protocol;
use stats::ErrorKind;

/// Opens a connection for `connector`'s protocol: its transport, then the protocol's own
/// set-up over it. Over TLS the server's ALPN answer decides between HTTP/2 and HTTP/1.1.
pub async fn connect(connector: &Connector) -> Result<(Conn, SetupTimes), ErrorKind> {
    let (stream, times) = connector.open().await?;
    let conn = match (connector.protocol, stream.alpn_h2()) {
        (Protocol::Http1, _) | (Protocol::Http2 | Protocol::Grpc, Some(false)) => {
            h1::session(stream)
        }
        (Protocol::Http2 | Protocol::Grpc, _) => h2::session(stream).await?,
    };
    Ok((conn, times))
}
