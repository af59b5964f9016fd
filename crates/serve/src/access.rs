//! Who may use the web UI. Bound to loopback without a token, anyone on this machine may read,
//! and write (from loopback). Bound anywhere else a token is required (generated when none is
//! given) and every request without it is refused. A token arrives as `?token=` (the URL
//! `brink serve` prints; the answer then sets a same-site cookie so links keep working),
//! `Authorization: Bearer`, or that cookie. Writes also need the `X-Brink: 1` header, which a
//! page on another site cannot send without the browser asking first (and nothing here answers
//! that question), so another site cannot change the history through a visitor's browser.

use std::net::SocketAddr;

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "brink_token";

/// Why a request is refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// No token, or a wrong one (401).
    Token,
    /// A write without `X-Brink: 1`, or from elsewhere than loopback without a token (403).
    Write,
}

/// What the request carries that access depends on.
pub struct Presented<'a> {
    pub query_token: Option<&'a str>,
    pub bearer: Option<&'a str>,
    pub cookie: Option<&'a str>,
    pub write_header: bool,
    pub peer: SocketAddr,
}

/// Whether a request may go on; `write` for requests that change the history.
pub fn check(token: Option<&str>, p: &Presented, write: bool) -> Result<(), Refused> {
    if let Some(t) = token {
        let given = p.query_token.or(p.bearer).or(p.cookie);
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), t.as_bytes())) {
            return Err(Refused::Token);
        }
    } else if write && !p.peer.ip().is_loopback() {
        return Err(Refused::Write);
    }
    if write && !p.write_header {
        return Err(Refused::Write);
    }
    Ok(())
}

/// Compares without stopping at the first difference, so timing says nothing about the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh 128-bit token from the system's random source, as hex.
pub fn generate() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(peer: &str) -> Presented<'static> {
        Presented {
            query_token: None,
            bearer: None,
            cookie: None,
            write_header: false,
            peer: peer.parse().unwrap(),
        }
    }

    #[test]
    fn without_a_token_only_loopback_writes_and_only_with_the_header() {
        let local = from("127.0.0.1:5000");
        assert_eq!(check(None, &local, false), Ok(()));
        assert_eq!(check(None, &local, true), Err(Refused::Write));
        let local_w = Presented {
            write_header: true,
            ..from("127.0.0.1:5000")
        };
        assert_eq!(check(None, &local_w, true), Ok(()));
        let remote_w = Presented {
            write_header: true,
            ..from("10.1.2.3:5000")
        };
        assert_eq!(check(None, &remote_w, true), Err(Refused::Write));
    }

    #[test]
    fn with_a_token_every_request_needs_it() {
        let t = Some("s3cret");
        assert_eq!(check(t, &from("127.0.0.1:1"), false), Err(Refused::Token));
        let wrong = Presented {
            bearer: Some("s3creT"),
            ..from("10.0.0.1:1")
        };
        assert_eq!(check(t, &wrong, false), Err(Refused::Token));
        for ok in [
            Presented {
                query_token: Some("s3cret"),
                ..from("10.0.0.1:1")
            },
            Presented {
                bearer: Some("s3cret"),
                ..from("10.0.0.1:1")
            },
            Presented {
                cookie: Some("s3cret"),
                ..from("10.0.0.1:1")
            },
        ] {
            assert_eq!(check(t, &ok, false), Ok(()));
            // A write from elsewhere with the token still needs the header.
            assert_eq!(check(t, &ok, true), Err(Refused::Write));
        }
    }

    #[test]
    fn tokens_are_fresh_and_cookies_are_read() {
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert_eq!(cookie("x=1; brink_token=abc; y=2", COOKIE), Some("abc"));
        assert_eq!(cookie("x=1", COOKIE), None);
    }
}
