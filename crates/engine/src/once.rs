//! One gRPC call outside any load, for what must be asked of the server before a run: server
//! reflection (which methods exist and their message types). It connects exactly as a run
//! would (the same TCP, TLS, ALPN and HTTP/2 code and options), sends one message and reads
//! the whole answer on a runtime of its own.

use crate::net::conn::{Conn, Connector};
use crate::net::tls::TlsOptions;
use crate::proto::body::CallBody;
use crate::run::tls_for;
use bytes::Bytes;
use model::Target;
use stats::ErrorKind;
use std::sync::Arc;
use std::time::Duration;
use workload::capture::Budget;
use workload::{Request, Workload};

/// The most a one-off answer may hold.
const MOST: usize = 64 << 20;

/// What a one-off call returned: its gRPC status code and the response body (gRPC frames).
#[derive(Clone, Debug)]
pub struct Answer {
    pub code: u16,
    pub body: Vec<u8>,
}

/// Calls `path` (`/package.Service/Method`) on `target` with the framed `message` and the
/// gRPC headers; `Err` says why no answer came (connection, TLS, timeout, protocol).
pub fn grpc_call(
    target: &Target,
    tls: &TlsOptions,
    timeout: Duration,
    path: &str,
    message: Vec<u8>,
) -> Result<Answer, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start runtime: {e}"))?;
    let connector = Connector {
        addr: target.resolve().map_err(|e| e.to_string())?,
        tls: tls_for(target, tls, true).map_err(|e| e.to_string())?,
        http2: true,
        connect_timeout: timeout,
        keepalive: true,
        scheme: if target.tls { "https" } else { "http" },
        authority: target.authority.clone(),
        workload: Arc::new(Workload::single(Request::fixed("", "POST", path, &[], b""))),
        h1_static: vec![None],
        captures: Budget::new(MOST),
        grpc_timeout: None,
    };
    let uri = format!("{}://{}{path}", connector.scheme, connector.authority);
    let req = http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(CallBody::full(Bytes::from(message)))
        .map_err(|e| e.to_string())?;
    let call = async {
        let (conn, _) = connector.connect().await.map_err(describe)?;
        let Conn::H2(mut h2) = conn else {
            return Err("the server does not speak HTTP/2".to_string());
        };
        let outcome = h2
            .roundtrip(req, Some(&connector.captures))
            .await
            .map_err(|_| "the server closed the connection".to_string())?;
        let (reply, kept) = outcome.map_err(describe)?;
        Ok(Answer {
            code: reply.grpc.map_or(2, |g| g.code),
            body: kept.map(|k| k.body.clone()).unwrap_or_default(),
        })
    };
    rt.block_on(async {
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    })
}

/// Why a one-off call failed, in words.
fn describe(k: ErrorKind) -> String {
    match k {
        ErrorKind::Connect => "cannot connect".into(),
        ErrorKind::ConnectTimeout => "the connection timed out".into(),
        ErrorKind::Tls => "the TLS handshake failed".into(),
        ErrorKind::Timeout => "no answer in time".into(),
        ErrorKind::Reset => "the connection was reset".into(),
        ErrorKind::Closed => "the connection closed".into(),
        other => format!("{} error", other.name().replace('_', " ")),
    }
}
