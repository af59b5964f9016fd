//! Where to send and what counts as success: a parsed target URL, a `Name: value` header as
//! typed on a command line, and the set of statuses that count as success.

use std::net::{SocketAddr, ToSocketAddrs};

/// Why a target or request could not be set up.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TargetError {
    #[error("invalid URL '{0}': {1}")]
    Url(String, String),
    #[error("unsupported scheme '{0}' in '{1}' (use {schemes})", schemes = Protocol::schemes())]
    Scheme(String, String),
    #[error("cannot resolve host '{0}': {1}")]
    Resolve(String, String),
    #[error("invalid header '{0}': expected 'Name: value'")]
    Header(String),
    #[error("-H {0}: {1}")]
    HeaderValue(String, &'static str),
    #[error("invalid method '{0}'")]
    Method(String),
}

/// What a run speaks to its target: the one value every layer asks, from the plan to the
/// worker loop. The URL's scheme says HTTP or gRPC; `--http2` (or a plan's `http2: true`)
/// picks HTTP/2 for an HTTP URL. Whether TLS carries it is the target's other half
/// ([`Target::tls`]): every protocol here runs over TCP or TLS alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    Http2,
    /// gRPC calls over HTTP/2 (`grpc://` is h2c, `grpcs://` TLS).
    Grpc,
    /// WebSocket (RFC 6455): an HTTP/1.1 upgrade, then messages (`ws://`, `wss://`).
    Ws,
    /// HTTP/3 over QUIC (RFC 9114): `--http3` on an `https://` URL.
    Http3,
}

impl Protocol {
    /// Every protocol, in the order a scheme error lists them.
    pub const ALL: [Protocol; 5] = [
        Protocol::Http1,
        Protocol::Http2,
        Protocol::Grpc,
        Protocol::Ws,
        Protocol::Http3,
    ];

    /// The protocol a URL scheme names, and whether TLS carries it (`None`: not ours).
    /// HTTP/2 has no scheme of its own: `--http2` picks it for an `http(s)://` URL.
    pub fn from_scheme(scheme: &str) -> Option<(Protocol, bool)> {
        Protocol::ALL.into_iter().find_map(|p| {
            [false, true]
                .into_iter()
                .find(|&tls| p.scheme(tls).eq_ignore_ascii_case(scheme) && p.named_by_scheme())
                .map(|tls| (p, tls))
        })
    }

    /// The URL scheme this protocol is written with, over TCP or over TLS.
    pub fn scheme(self, tls: bool) -> &'static str {
        match (self, tls) {
            (Protocol::Http1 | Protocol::Http2 | Protocol::Http3, false) => "http",
            (Protocol::Http1 | Protocol::Http2 | Protocol::Http3, true) => "https",
            (Protocol::Grpc, false) => "grpc",
            (Protocol::Grpc, true) => "grpcs",
            (Protocol::Ws, false) => "ws",
            (Protocol::Ws, true) => "wss",
        }
    }

    /// Whether a URL's scheme alone selects it (HTTP/2 is chosen by a flag over `http://`).
    fn named_by_scheme(self) -> bool {
        match self {
            Protocol::Http1 | Protocol::Grpc | Protocol::Ws => true,
            Protocol::Http2 | Protocol::Http3 => false,
        }
    }

    /// The port a URL without one means.
    pub fn default_port(self, tls: bool) -> u16 {
        match self {
            Protocol::Http1 | Protocol::Http2 | Protocol::Grpc | Protocol::Ws | Protocol::Http3 => {
                if tls {
                    443
                } else {
                    80
                }
            }
        }
    }

    /// What a TLS client offers in ALPN, most wanted first (a server answering HTTP/1.1 to
    /// an HTTP/2 offer is seen, and said, by the run).
    pub fn alpn(self) -> &'static [&'static [u8]] {
        match self {
            Protocol::Http1 | Protocol::Ws => &[b"http/1.1"],
            Protocol::Http2 | Protocol::Grpc => &[b"h2", b"http/1.1"],
            Protocol::Http3 => &[b"h3"],
        }
    }

    /// Whether requests in flight share connections as streams (`--connections`).
    pub fn multiplexed(self) -> bool {
        match self {
            Protocol::Http1 | Protocol::Ws => false,
            Protocol::Http2 | Protocol::Grpc | Protocol::Http3 => true,
        }
    }

    /// Whether each exchange is an HTTP request judged by its status (what a completion
    /// probe or a remote-write endpoint must be, and what event streams are read over); a
    /// gRPC call is judged by its own code.
    pub fn is_http(self) -> bool {
        match self {
            Protocol::Http1 | Protocol::Http2 | Protocol::Http3 => true,
            Protocol::Grpc | Protocol::Ws => false,
        }
    }

    /// The wire protocol it speaks (gRPC is HTTP/2).
    pub fn wire(self) -> Wire {
        match self {
            Protocol::Http1 => Wire::Http1,
            Protocol::Http2 | Protocol::Grpc => Wire::H2,
            Protocol::Ws => Wire::Ws,
            Protocol::Http3 => Wire::H3,
        }
    }

    /// The schemes a URL may use, for an error naming them.
    pub fn schemes() -> String {
        let mut all: Vec<String> = Vec::new();
        for p in Protocol::ALL.into_iter().filter(|p| p.named_by_scheme()) {
            for tls in [false, true] {
                all.push(format!("{}://", p.scheme(tls)));
            }
        }
        all.join(", ")
    }
}

/// The wire protocol a result reports, named as ALPN spells it (`http/1.1`, `h2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Wire {
    #[serde(rename = "http/1.1")]
    Http1,
    #[serde(rename = "h2")]
    H2,
    /// WebSocket, after its HTTP/1.1 upgrade.
    #[serde(rename = "websocket")]
    Ws,
    #[serde(rename = "h3")]
    H3,
}

impl Wire {
    pub fn name(self) -> &'static str {
        match self {
            Wire::Http1 => "http/1.1",
            Wire::H2 => "h2",
            Wire::Ws => "websocket",
            Wire::H3 => "h3",
        }
    }
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed target URL: where to connect, over what, and what to speak.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// `https://` and `grpcs://`: the connection is TLS.
    pub tls: bool,
    pub protocol: Protocol,
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
    /// `host[:port]` as sent in `Host` / `:authority` (port omitted when it is the default).
    pub authority: String,
}

impl Target {
    /// Parses a URL; the port must be within 1..=65535.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let bad = |why: &str| TargetError::Url(url.to_string(), why.to_string());
        let (scheme, _) = url
            .split_once("://")
            .ok_or_else(|| bad("expected scheme://host"))?;
        let (protocol, tls) = Protocol::from_scheme(scheme)
            .ok_or_else(|| TargetError::Scheme(scheme.to_ascii_lowercase(), url.to_string()))?;
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let auth = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
        let (host, port) = split_host_port(auth);
        if host.is_empty() {
            return Err(bad("missing host"));
        }
        let default_port = protocol.default_port(tls);
        let port = match port {
            None => default_port,
            Some(p) => match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad(&format!("port {p} out of range 1-65535"))),
                Ok(n) => n,
            },
        };
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let path = if path.is_empty() { "/" } else { path };
        let bare_host = host.to_string();
        let host_part = if bare_host.contains(':') {
            format!("[{bare_host}]")
        } else {
            bare_host.clone()
        };
        let authority = if port == default_port {
            host_part
        } else {
            format!("{host_part}:{port}")
        };
        Ok(Target {
            tls,
            protocol,
            host: bare_host,
            port,
            path: path.to_string(),
            authority,
        })
    }

    /// This target spoken over HTTP/2 when `on` (an HTTP URL with `--http2`); gRPC is HTTP/2
    /// already.
    pub fn with_http2(mut self, on: bool) -> Target {
        if on && self.protocol == Protocol::Http1 {
            self.protocol = Protocol::Http2;
        }
        self
    }

    /// This target spoken over HTTP/3 when `on`: an `https://` URL only (QUIC is TLS 1.3).
    pub fn with_http3(mut self, on: bool) -> Result<Target, TargetError> {
        if !on {
            return Ok(self);
        }
        if self.protocol != Protocol::Http1 || !self.tls {
            let url = format!(
                "{}://{}{}",
                self.protocol.scheme(self.tls),
                self.authority,
                self.path
            );
            let why = "--http3 needs an https:// URL (HTTP/3 runs over QUIC, which is TLS 1.3)";
            return Err(TargetError::Url(url, why.to_string()));
        }
        self.protocol = Protocol::Http3;
        Ok(self)
    }

    /// This target with the path `path` (a completion probe's rendered URL): refused when the
    /// path breaks the wire rules, so a value from a response cannot reach a request line.
    pub fn with_path(&self, path: String) -> Result<Target, TargetError> {
        if let Some(why) = crate::guard::path_fault(path.as_bytes()) {
            return Err(TargetError::Url(
                crate::guard::escaped(path.as_bytes(), 120),
                why.to_string(),
            ));
        }
        Ok(Target {
            path,
            ..self.clone()
        })
    }

    /// Resolves the host once, before the run; the first address is used for every connection.
    pub fn resolve(&self) -> Result<SocketAddr, TargetError> {
        let err = |e: String| TargetError::Resolve(self.host.clone(), e);
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| err(e.to_string()))?
            .next()
            .ok_or_else(|| err("no address".into()))
    }

    /// Scheme name.
    pub fn scheme(&self) -> &'static str {
        self.protocol.scheme(self.tls)
    }

    /// The full URL, normalised.
    pub fn url(&self) -> String {
        format!("{}://{}{}", self.scheme(), self.authority, self.path)
    }
}

/// Splits `host[:port]` or `[v6]:port`.
fn split_host_port(auth: &str) -> (&str, Option<&str>) {
    if let Some(rest) = auth.strip_prefix('[') {
        let (h, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (h, after.strip_prefix(':'));
    }
    match auth.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (auth, None),
    }
}

/// Headers as `(name, value)` text pairs (values decoded lossily), for extraction and for
/// servers that hand requests to plain handlers.
pub fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Parses `Name: value`.
pub fn parse_header(h: &str) -> Result<(String, String), TargetError> {
    let (n, v) = h
        .split_once(':')
        .ok_or_else(|| TargetError::Header(h.to_string()))?;
    let n = n.trim();
    if !crate::guard::is_token(n.as_bytes()) {
        return Err(TargetError::Header(h.escape_debug().to_string()));
    }
    if let Some(why) = crate::guard::header_value_fault(v.as_bytes()) {
        return Err(TargetError::HeaderValue(n.to_string(), why));
    }
    Ok((n.to_string(), v.trim().to_string()))
}

/// Which response statuses count as success. Default: everything below 400.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusSet(Vec<(u16, u16)>);

impl Default for StatusSet {
    fn default() -> Self {
        StatusSet(vec![(100, 399)])
    }
}

impl StatusSet {
    /// Parses `200-299,404` style lists.
    pub fn parse(s: &str) -> Result<StatusSet, crate::UnitError> {
        let code = |p: &str| {
            p.trim()
                .parse::<u16>()
                .ok()
                .filter(|c| (100..=599).contains(c))
                .ok_or_else(|| crate::UnitError::Status(p.trim().to_string(), s.to_string()))
        };
        let ranges = s
            .split(',')
            .map(|part| match part.split_once('-') {
                Some((a, b)) => match (code(a)?, code(b)?) {
                    (a, b) if a > b => Err(crate::UnitError::Status(
                        part.trim().to_string(),
                        s.to_string(),
                    )),
                    range => Ok(range),
                },
                None => code(part).map(|c| (c, c)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StatusSet(ranges))
    }

    /// The inclusive ranges of codes that count as success.
    pub fn ranges(&self) -> &[(u16, u16)] {
        &self.0
    }

    /// Whether `status` counts as success.
    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/api?x=1").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (false, "127.0.0.1", 8080, "/api?x=1")
        );
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = Target::parse("https://localhost").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.authority.as_str()),
            (443, "/", "localhost")
        );
        let t = Target::parse("http://[::1]:9000/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.authority.as_str()),
            ("::1", "[::1]:9000")
        );
    }

    #[test]
    fn every_protocol_reads_back_from_its_scheme() {
        for p in Protocol::ALL {
            for tls in [false, true] {
                let url = format!("{}://h/", p.scheme(tls));
                let t = Target::parse(&url).unwrap();
                let t = t.with_http2(p == Protocol::Http2);
                // HTTP/3 is QUIC, always TLS: `--http3` on an http:// URL is refused.
                let h3 = t.clone().with_http3(p == Protocol::Http3);
                if p == Protocol::Http3 && !tls {
                    assert!(h3.is_err(), "{url}");
                    continue;
                }
                let t = h3.unwrap();
                assert_eq!((t.protocol, t.tls, t.url()), (p, tls, url.clone()));
                assert_eq!(t.port, p.default_port(tls), "{url}");
            }
        }
        let e = Target::parse("ftp://x/").unwrap_err().to_string();
        assert!(
            e.ends_with("(use http://, https://, grpc://, grpcs://, ws://, wss://)"),
            "{e}"
        );
        assert_eq!(Protocol::from_scheme("GRPCS"), Some((Protocol::Grpc, true)));
    }

    #[test]
    fn rejects_bad_urls() {
        for (url, want) in [
            ("ftp://x/", "unsupported scheme 'ftp'"),
            ("127.0.0.1:80", "expected scheme://host"),
            ("http://127.0.0.1:70000/", "invalid URL"),
            ("http://127.0.0.1:0/", "out of range"),
            ("http:///path", "invalid URL"),
        ] {
            let e = match Target::parse(url) {
                Ok(t) => panic!("{url} parsed as {t:?}"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    #[test]
    fn headers_and_statuses() {
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": empty name").is_err());
        assert_eq!(
            parse_header("X-A:  b ").unwrap(),
            ("X-A".into(), "b".into())
        );
        let s = StatusSet::parse("200-299,404").unwrap();
        assert!(s.contains(204) && s.contains(404) && !s.contains(500) && !s.contains(302));
        assert!(StatusSet::parse("200-700").is_err());
        assert!(StatusSet::default().contains(302) && !StatusSet::default().contains(400));
    }
}
