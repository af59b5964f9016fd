//! One request outside any load, for what must be asked of the server before or beside a run:
//! server reflection (which methods exist and their message types), the completion probes'
//! polls over TLS, and whether the server advertises HTTP/3 (`--http3=auto`). It connects exactly as a run would (the same TCP, TLS, ALPN, HTTP/1.1 and
//! HTTP/2 code and options) and reads the whole answer on a runtime of its own.

use crate::net::conn::Connector;
use crate::net::tls::tls_for;
use crate::net::tls::TlsOptions;
use crate::proto::body::CallBody;
use crate::proto::h1::H1Conn;
use crate::proto::h2::H2Conn;
use bytes::Bytes;
use model::{Protocol, Target};
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
    let rt = runtime()?;
    let connector = connector(target, tls, timeout, Protocol::Grpc)?;
    let uri = format!("{}://{}{path}", connector.scheme, connector.authority);
    let req = http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(CallBody::full(Bytes::from(message)))
        .map_err(|e| e.to_string())?;
    let call = async {
        let (stream, _) = connector.open().await.map_err(unopened)?;
        if stream.alpn_h2() == Some(false) {
            return Err("the server does not speak HTTP/2".to_string());
        }
        let mut h2 = H2Conn::handshake(stream).await.map_err(describe)?;
        let outcome = h2
            .roundtrip(
                req,
                Some(&connector.captures),
                connector.max_message,
                connector.events,
                None,
            )
            .await
            .map_err(|_| "the server closed the connection".to_string())?;
        let (reply, kept) = outcome.map_err(describe)?;
        Ok(Answer {
            code: reply.call.map_or(2, |g| g.code),
            body: kept.map(|k| k.body.clone()).unwrap_or_default(),
        })
    };
    rt.block_on(async {
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    })
}

/// Why a connection did not open, in words.
fn unopened(u: crate::proto::reply::Unopened) -> String {
    match u.why {
        Some(why) => format!("{}: {why}", describe(u.kind)),
        None => describe(u.kind),
    }
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

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start runtime: {e}"))
}

/// A connector to `target` alone, as a run's would be.
fn connector(
    target: &Target,
    tls: &TlsOptions,
    timeout: Duration,
    protocol: Protocol,
) -> Result<Connector, String> {
    Ok(Connector {
        addr: target.resolve().map_err(|e| e.to_string())?,
        tls: tls_for(target, tls, protocol).map_err(|e| e.to_string())?,
        protocol,
        connect_timeout: timeout,
        keepalive: true,
        scheme: if target.tls { "https" } else { "http" },
        authority: target.authority.clone(),
        workload: Arc::new(Workload::single(Request::fixed(
            "",
            "GET",
            &target.path,
            &[],
            b"",
        ))),
        h1_static: vec![None],
        captures: Budget::new(MOST),
        headers_only: Budget::new(0),
        timeout,
        max_message: crate::net::conn::DEFAULT_GRPC_MAX_MESSAGE,
        events: Default::default(),
        early_data: tls.early_data,
    })
}

/// How completion probes fetch: plain HTTP/1.1 as observe does, and `https://` over the
/// engine's TLS with the run's options.
pub fn completion_fetch(tls: TlsOptions) -> observe::completion::Fetch {
    let plain = observe::completion::plain_fetch();
    Arc::new(move |t: &Target, timeout: Duration| {
        if t.tls {
            get_tls(t, &tls, timeout)
        } else {
            plain(t, timeout)
        }
    })
}

/// `GET target` over TLS (HTTP/1.1): the status, `Retry-After` in seconds, and the body.
fn get_tls(
    target: &Target,
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<(u16, Option<f64>, Vec<u8>), String> {
    let rt = runtime()?;
    let connector = connector(target, tls, timeout, Protocol::Http1)?;
    let head = model::guard::get_head(
        &target.path,
        &target.authority,
        &[("User-Agent", "brink-probe"), ("Accept", "*/*")],
    )?;
    let call = async {
        let (stream, _) = connector.open().await.map_err(unopened)?;
        let mut h1 = H1Conn::new(stream);
        let (reply, kept) = h1
            .roundtrip(
                head.as_bytes(),
                false,
                Some(&connector.captures),
                connector.events,
                None,
            )
            .await
            .map_err(describe)?;
        let kept = kept.unwrap_or_default();
        let retry_after = kept
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("retry-after"))
            .and_then(|(_, v)| v.trim().parse::<f64>().ok());
        Ok((reply.status, retry_after, kept.body.clone()))
    };
    rt.block_on(async {
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    })
}

/// What `--http3=auto`'s first request found.
#[derive(Clone, Debug)]
pub struct Asked {
    /// What it went over: HTTP/2, or the HTTP/1.1 the server picked.
    pub over: model::Wire,
    pub status: u16,
    /// The `Alt-Svc` header as it came.
    pub alt_svc: Option<Vec<u8>>,
    /// How long it took, connect included.
    pub took: Duration,
}

/// `--http3=auto`'s first request: `GET target` over TLS with ALPN offering HTTP/2 (and the
/// HTTP/1.1 a server may pick instead), its headers read and its body not kept.
pub fn discover_h3(target: &Target, tls: &TlsOptions, timeout: Duration) -> Result<Asked, String> {
    let rt = runtime()?;
    let connector = connector(target, tls, timeout, Protocol::Http2)?;
    let started = std::time::Instant::now();
    let call = async {
        let (stream, _) = connector.open().await.map_err(unopened)?;
        let budget = Some(&connector.headers_only);
        let (wire, (reply, kept)) = if stream.alpn_h2() == Some(true) {
            let uri = format!("https://{}{}", connector.authority, target.path);
            let req = http::Request::get(uri)
                .header("user-agent", "brink-probe")
                .body(CallBody::full(Bytes::new()))
                .map_err(|e| e.to_string())?;
            let mut h2 = H2Conn::handshake(stream).await.map_err(describe)?;
            let answer = h2
                .roundtrip(req, budget, MOST, connector.events, None)
                .await
                .map_err(|_| "the server closed the connection".to_string())?;
            (model::Wire::H2, answer.map_err(describe)?)
        } else {
            let head = model::guard::get_head(
                &target.path,
                &target.authority,
                &[("User-Agent", "brink-probe"), ("Accept", "*/*")],
            )?;
            let mut h1 = H1Conn::new(stream);
            let answer = h1
                .roundtrip(head.as_bytes(), false, budget, connector.events, None)
                .await
                .map_err(describe)?;
            (model::Wire::Http1, answer)
        };
        // Several Alt-Svc fields are one list (RFC 9110 §5.3).
        let fields: Vec<&str> = kept
            .iter()
            .flat_map(|k| {
                k.headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case("alt-svc"))
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        let alt_svc = (!fields.is_empty()).then(|| fields.join(", ").into_bytes());
        Ok(Asked {
            over: wire,
            status: reply.status,
            alt_svc,
            took: started.elapsed(),
        })
    };
    rt.block_on(async {
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
    })
}

/// Whether HTTP/3 answers at `target` (its host, the port to try): one QUIC handshake, ALPN
/// `h3`, with the run's TLS options, within `timeout`; how long it took, or why not.
pub fn h3_answers(
    target: &Target,
    tls: &TlsOptions,
    timeout: Duration,
) -> Result<Duration, String> {
    let rt = runtime()?;
    let connector = connector(target, tls, timeout, Protocol::Http3)?;
    rt.block_on(crate::proto::h3::handshake_only(&connector))
        .map_err(unopened)
}

/// Whether a plain-TCP target answers HTTP/2's connection preface with an HTTP/1 response
/// (it speaks only HTTP/1.1): the preface and an empty SETTINGS frame, then the first bytes
/// back, within `timeout`. Asked after HTTP/2 requests all failed, to say why.
pub fn answers_http1_to_h2(target: &Target, timeout: Duration) -> bool {
    use std::io::{Read, Write};
    if target.tls {
        return false; // ALPN settles the protocol over TLS.
    }
    let Ok(addr) = target.resolve() else {
        return false;
    };
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    let hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    if s.write_all(hello).is_err() {
        return false;
    }
    let mut first = [0u8; 7];
    s.read_exact(&mut first).is_ok() && &first == b"HTTP/1."
}
