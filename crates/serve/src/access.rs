//! Who may use the web UI. Bound to loopback without a token, anyone on this machine may read,
//! and write (from loopback). Bound anywhere else a token is required (generated when none is
//! given) and every request without it is refused. A token arrives as `?token=` (the URL
//! `brink serve` prints; the answer then sets a same-site cookie so links keep working),
//! `Authorization: Bearer`, or that cookie. Writes also need the `X-Brink: 1` header, which a
//! page on another site cannot send without the browser asking first (and nothing here answers
//! that question), so another site cannot change the history through a visitor's browser.
//!
//! On loopback, a page on a name that an attacker's DNS points at 127.0.0.1 (DNS rebinding) is
//! same-origin with this server and could send that header. So on loopback only loopback
//! names (`127.0.0.1`, `[::1]`, `localhost`, with any port) and the names given with
//! `--allow-host` are served, and a write that carries an `Origin` must come from the `Host`
//! it was sent to.

use accept::host::allowed as host_allowed;
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
    /// A `Host` that is not a loopback name nor allowed, on loopback (403): DNS rebinding.
    Host,
    /// A write whose `Origin` is not the `Host` it was sent to (403).
    Origin,
}

impl Refused {
    /// The one-line reason given with the refusal.
    pub fn reason(&self) -> &'static str {
        match self {
            Refused::Token => "a token is required: open the URL brink serve printed",
            Refused::Write => "changes need the X-Brink: 1 header (and, from elsewhere than this machine, the token)",
            Refused::Host => "this name is not served: open 127.0.0.1, [::1] or localhost, or start brink serve with --allow-host NAME",
            Refused::Origin => "a change sent from a page of another origin is refused",
        }
    }
}

/// What the request carries that access depends on.
pub struct Presented<'a> {
    pub query_token: Option<&'a str>,
    pub bearer: Option<&'a str>,
    pub cookie: Option<&'a str>,
    pub write_header: bool,
    pub peer: SocketAddr,
    /// The `Host` header (`None` when absent).
    pub host: Option<&'a str>,
    /// The `Origin` header, when the client sent one.
    pub origin: Option<&'a str>,
}

/// Where the server listens and which names it serves beyond the loopback ones.
pub struct Policy<'a> {
    pub token: Option<&'a str>,
    /// Bound to a loopback address: names are checked.
    pub loopback: bool,
    /// `--allow-host` names (a port, if given, is ignored).
    pub allowed_hosts: &'a [String],
}

/// Whether a request may go on; `write` for requests that change the history.
pub fn check(policy: &Policy, p: &Presented, write: bool) -> Result<(), Refused> {
    if policy.loopback
        && !p
            .host
            .is_some_and(|h| host_allowed(h, policy.allowed_hosts))
    {
        return Err(Refused::Host);
    }
    if write {
        if let (Some(origin), Some(host)) = (p.origin, p.host) {
            let same = ["http://", "https://"].iter().any(|s| {
                origin
                    .strip_prefix(s)
                    .is_some_and(|o| o.eq_ignore_ascii_case(host))
            });
            if !same {
                return Err(Refused::Origin);
            }
        }
    }
    let token = policy.token;
    if let Some(t) = token {
        let given = p.query_token.or(p.bearer).or(p.cookie);
        if !given.is_some_and(|g| model::secret::same(g, t)) {
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

/// A fresh 128-bit token, as hex.
pub fn generate() -> Result<String, String> {
    model::secret::fresh(16)
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
            host: Some("127.0.0.1:8089"),
            origin: None,
        }
    }

    /// Bound to loopback (names checked) or elsewhere, with `token`.
    fn policy(token: Option<&str>, loopback: bool) -> Policy<'_> {
        Policy {
            token,
            loopback,
            allowed_hosts: &[],
        }
    }

    #[test]
    fn without_a_token_only_loopback_writes_and_only_with_the_header() {
        let local = from("127.0.0.1:5000");
        assert_eq!(check(&policy(None, true), &local, false), Ok(()));
        assert_eq!(
            check(&policy(None, true), &local, true),
            Err(Refused::Write)
        );
        let local_w = Presented {
            write_header: true,
            ..from("127.0.0.1:5000")
        };
        assert_eq!(check(&policy(None, true), &local_w, true), Ok(()));
        let remote_w = Presented {
            write_header: true,
            ..from("10.1.2.3:5000")
        };
        assert_eq!(
            check(&policy(None, true), &remote_w, true),
            Err(Refused::Write)
        );
    }

    #[test]
    fn with_a_token_every_request_needs_it() {
        let t = Some("s3cret");
        assert_eq!(
            check(&policy(t, false), &from("127.0.0.1:1"), false),
            Err(Refused::Token)
        );
        let wrong = Presented {
            bearer: Some("s3creT"),
            ..from("10.0.0.1:1")
        };
        assert_eq!(check(&policy(t, false), &wrong, false), Err(Refused::Token));
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
            assert_eq!(check(&policy(t, false), &ok, false), Ok(()));
            // A write from elsewhere with the token still needs the header.
            assert_eq!(check(&policy(t, false), &ok, true), Err(Refused::Write));
        }
    }

    #[test]
    fn on_loopback_only_loopback_names_are_served() {
        let allowed = ["brink.internal:9000".to_string()];
        let lo = Policy {
            token: None,
            loopback: true,
            allowed_hosts: &allowed,
        };
        for host in [
            "127.0.0.1:8089",
            "127.0.0.1",
            "[::1]:8089",
            "LOCALHOST:8089",
            "localhost",
            "brink.internal",
        ] {
            let p = Presented {
                host: Some(host),
                ..from("127.0.0.1:5000")
            };
            assert_eq!(check(&lo, &p, false), Ok(()), "{host}");
        }
        for host in [
            Some("rebound.attacker.example:8089"),
            Some("127.0.0.1.attacker.example"),
            Some("localhost.attacker.example"),
            Some("[::1].x"),
            Some(""),
            None,
        ] {
            let p = Presented {
                host,
                ..from("127.0.0.1:5000")
            };
            assert_eq!(check(&lo, &p, false), Err(Refused::Host), "{host:?}");
        }
        // Bound elsewhere, the token is the guard; names are not checked.
        let p = Presented {
            host: Some("brink.example.org"),
            query_token: Some("s3cret"),
            ..from("10.0.0.1:1")
        };
        assert_eq!(check(&policy(Some("s3cret"), false), &p, false), Ok(()));
    }

    #[test]
    fn a_write_from_another_origin_is_refused() {
        let lo = policy(None, true);
        let write = |origin| Presented {
            write_header: true,
            origin,
            ..from("127.0.0.1:5000")
        };
        assert_eq!(
            check(&lo, &write(Some("http://127.0.0.1:8089")), true),
            Ok(())
        );
        assert_eq!(check(&lo, &write(None), true), Ok(()));
        for bad in ["http://attacker.example", "http://127.0.0.1:9999", "null"] {
            assert_eq!(
                check(&lo, &write(Some(bad)), true),
                Err(Refused::Origin),
                "{bad}"
            );
        }
        // Reads are not judged by their origin.
        assert_eq!(
            check(
                &lo,
                &Presented {
                    origin: Some("null"),
                    ..from("127.0.0.1:1")
                },
                false
            ),
            Ok(())
        );
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
