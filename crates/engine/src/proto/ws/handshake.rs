//! The opening handshake (RFC 6455 §4): the HTTP/1.1 Upgrade request brink sends, and the
//! server's answer judged strictly (101, `Upgrade: websocket`, `Connection: upgrade`, and the
//! `Sec-WebSocket-Accept` that proves it read this key). Anything else is a refused upgrade,
//! counted by its status; a head that never ends is bounded by [`MAX_HEAD`].

use base64::Engine as _;

/// The GUID a server appends to the key (RFC 6455 §1.3).
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The most bytes an answer's head may take.
pub const MAX_HEAD: usize = 16 * 1024;
/// The most header lines an answer's head may have.
const MAX_HEADERS: usize = 64;

/// Why an upgrade failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The server answered with this status instead of 101.
    Status(u16),
    /// A 101 that is not a WebSocket upgrade, or not for this key: what was wrong.
    Wrong(&'static str),
    /// The head was not HTTP, or longer than [`MAX_HEAD`] or [`MAX_HEADERS`] lines.
    Malformed,
}

impl Refused {
    /// The status the refusal is counted under: the server's, 101 for an upgrade that was not
    /// one, none for a head that was not HTTP.
    pub fn status(&self) -> Option<u16> {
        match self {
            Refused::Status(s) => Some(*s),
            Refused::Wrong(_) => Some(101),
            Refused::Malformed => None,
        }
    }

    /// Why, in words.
    pub fn why(&self) -> String {
        match self {
            Refused::Status(s) => format!("answered {s} instead of 101 Switching Protocols"),
            Refused::Wrong(w) => format!("a 101 with {w}"),
            Refused::Malformed => {
                format!("an answer that is not HTTP, or a head over {MAX_HEAD} bytes or {MAX_HEADERS} header lines")
            }
        }
    }
}

/// A fresh `Sec-WebSocket-Key`: 16 random bytes in base64.
pub fn key(random: [u8; 16]) -> String {
    base64::engine::general_purpose::STANDARD.encode(random)
}

/// The `Sec-WebSocket-Accept` a server must answer `key` with.
pub fn accept(key: &str) -> String {
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(GUID.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// The upgrade request for `path` on `authority`, with the step's own headers (`Host` and
/// the WebSocket headers are brink's; a step's header of the same name is left out).
pub fn request(path: &str, authority: &str, key: &str, headers: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n").as_bytes());
    out.extend_from_slice(b"Upgrade: websocket\r\nConnection: Upgrade\r\n");
    out.extend_from_slice(format!("Sec-WebSocket-Key: {key}\r\n").as_bytes());
    out.extend_from_slice(b"Sec-WebSocket-Version: 13\r\n");
    let ours = [
        "host",
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
    ];
    for (name, value) in headers {
        if ours.iter().any(|o| name.eq_ignore_ascii_case(o)) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Judges the answer in `buf` to the request made with `key` offering the subprotocols
/// `offered`: `Ok(Some(n))` when its head (`n` bytes) accepts the upgrade, `Ok(None)` when
/// more bytes are needed.
pub fn answer(buf: &[u8], key: &str, offered: &[&[u8]]) -> Result<Option<usize>, Refused> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(None),
        Ok(httparse::Status::Partial) | Err(_) => return Err(Refused::Malformed),
    };
    match resp.code {
        Some(101) => {}
        Some(code) => return Err(Refused::Status(code)),
        None => return Err(Refused::Malformed),
    }
    let has = |name: &str, token: &str| {
        resp.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case(name)
                && h.value
                    .split(|&b| b == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    };
    if !has("upgrade", "websocket") {
        return Err(Refused::Wrong("no Upgrade: websocket"));
    }
    if !has("connection", "upgrade") {
        return Err(Refused::Wrong("no Connection: upgrade"));
    }
    let want = accept(key);
    let accepted = resp
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-accept"))
        .map(|h| h.value.trim_ascii() == want.as_bytes())
        .collect::<Vec<_>>();
    if accepted != [true] {
        return Err(Refused::Wrong("a wrong Sec-WebSocket-Accept"));
    }
    let chosen: Vec<&[u8]> = resp
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-protocol"))
        .map(|h| h.value.trim_ascii())
        .collect();
    match chosen.as_slice() {
        [] => {}
        [one] if offered.contains(one) => {}
        // RFC 6455 §4.1: a subprotocol the client did not offer fails the connection.
        _ => return Err(Refused::Wrong("a subprotocol nobody offered")),
    }
    if resp
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("sec-websocket-extensions"))
    {
        // None was asked for: a server may not impose one (RFC 6455 §9.1).
        return Err(Refused::Wrong("an extension nobody asked for"));
    }
    Ok(Some(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_key_is_accepted() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn answers_are_judged() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        assert_eq!(answer(ok.as_bytes(), key, &[]), Ok(Some(ok.len())));
        assert_eq!(answer(&ok.as_bytes()[..40], key, &[]), Ok(None));
        let wrong = ok.replace(
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        );
        assert_eq!(
            answer(wrong.as_bytes(), key, &[]),
            Err(Refused::Wrong("a wrong Sec-WebSocket-Accept"))
        );
        let no_upgrade = ok.replace("Upgrade: WebSocket\r\n", "");
        assert!(matches!(
            answer(no_upgrade.as_bytes(), key, &[]),
            Err(Refused::Wrong(_))
        ));
        let refused = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(
            answer(refused.as_bytes(), key, &[]),
            Err(Refused::Status(403))
        );
        let chat = ok.replace("\r\n\r\n", "\r\nSec-WebSocket-Protocol: chat\r\n\r\n");
        assert_eq!(
            answer(chat.as_bytes(), key, &[]),
            Err(Refused::Wrong("a subprotocol nobody offered"))
        );
        assert_eq!(
            answer(chat.as_bytes(), key, &[b"json", b"chat"]),
            Ok(Some(chat.len()))
        );
        let endless = format!("HTTP/1.1 101 OK\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(
            answer(endless.as_bytes(), key, &[]),
            Err(Refused::Malformed)
        );
    }

    #[test]
    fn the_request_keeps_the_steps_headers_but_not_ours() {
        let r = request(
            "/chat?x=1",
            "127.0.0.1:9",
            "k",
            &[("Authorization", b"Bearer t"), ("Upgrade", b"h2c")],
        );
        let r = String::from_utf8(r).unwrap();
        assert!(r.starts_with("GET /chat?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"));
        assert!(r.contains("Authorization: Bearer t\r\n"));
        assert!(!r.contains("h2c"));
        assert!(r.ends_with("Sec-WebSocket-Version: 13\r\nAuthorization: Bearer t\r\n\r\n"));
    }
}
