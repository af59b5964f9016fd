//! Who may use the web UI: whoever holds its token, on loopback too. Loopback is not a
//! boundary between the users of one machine, so without the token any of them could read the
//! history (whole results, query strings with keys) or delete runs. The token arrives as
//! `?token=` (the URL `brink serve` prints once; the answer then sets an HttpOnly, same-site
//! cookie so links keep working), `Authorization: Bearer`, or that cookie. Writes also need
//! the `X-Brink: 1` header, which a page on another site cannot send without the browser
//! asking first (and nothing here answers that question), so another site cannot change the
//! history through a visitor's browser.
//!
//! On loopback, a page on a name that an attacker's DNS points at 127.0.0.1 (DNS rebinding) is
//! same-origin with this server and could send that header. So on loopback only loopback
//! names (`127.0.0.1`, `[::1]`, `localhost`, with any port) and the names given with
//! `--allow-host` are served, and a write that carries an `Origin` must come from the `Host`
//! it was sent to.

use accept::host::allowed as host_allowed;
/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "brink_token";

/// Why a request is refused.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// No token, or a wrong one (401).
    Token,
    /// A write without `X-Brink: 1` (403).
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
            Refused::Write => "changes need the X-Brink: 1 header",
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
    /// The `Host` header (`None` when absent).
    pub host: Option<&'a str>,
    /// The `Origin` header, when the client sent one.
    pub origin: Option<&'a str>,
}

/// Where the server listens and which names it serves beyond the loopback ones.
pub struct Policy<'a> {
    pub token: &'a str,
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
    let given = p.query_token.or(p.bearer).or(p.cookie);
    if !given.is_some_and(|g| model::secret::same(g, policy.token)) {
        return Err(Refused::Token);
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

    const TOKEN: &str = "s3cret-token-123";

    /// A request to 127.0.0.1 with the right token as a Bearer header.
    fn with_token() -> Presented<'static> {
        Presented {
            query_token: None,
            bearer: Some(TOKEN),
            cookie: None,
            write_header: false,
            host: Some("127.0.0.1:8089"),
            origin: None,
        }
    }

    /// Bound to loopback (names checked) or elsewhere.
    fn policy(loopback: bool) -> Policy<'static> {
        Policy {
            token: TOKEN,
            loopback,
            allowed_hosts: &[],
        }
    }

    #[test]
    fn every_request_needs_the_token_on_loopback_too() {
        for loopback in [true, false] {
            let none = Presented {
                bearer: None,
                ..with_token()
            };
            assert_eq!(check(&policy(loopback), &none, false), Err(Refused::Token));
            let wrong = Presented {
                bearer: Some("s3cret-token-12X"),
                ..with_token()
            };
            assert_eq!(check(&policy(loopback), &wrong, false), Err(Refused::Token));
            let empty = Presented {
                bearer: Some(""),
                ..with_token()
            };
            assert_eq!(check(&policy(loopback), &empty, false), Err(Refused::Token));
            for ok in [
                Presented {
                    query_token: Some(TOKEN),
                    bearer: None,
                    ..with_token()
                },
                with_token(),
                Presented {
                    cookie: Some(TOKEN),
                    bearer: None,
                    ..with_token()
                },
            ] {
                assert_eq!(check(&policy(loopback), &ok, false), Ok(()));
                // A write with the token still needs the header.
                assert_eq!(check(&policy(loopback), &ok, true), Err(Refused::Write));
                let w = Presented {
                    write_header: true,
                    ..ok
                };
                assert_eq!(check(&policy(loopback), &w, true), Ok(()));
            }
        }
    }

    #[test]
    fn on_loopback_only_loopback_names_are_served() {
        let allowed = ["brink.internal:9000".to_string()];
        let lo = Policy {
            token: TOKEN,
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
                ..with_token()
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
                ..with_token()
            };
            assert_eq!(check(&lo, &p, false), Err(Refused::Host), "{host:?}");
        }
        // Bound elsewhere, the token is the guard; names are not checked.
        let p = Presented {
            host: Some("brink.example.org"),
            ..with_token()
        };
        assert_eq!(check(&policy(false), &p, false), Ok(()));
    }

    #[test]
    fn a_write_from_another_origin_is_refused() {
        let lo = policy(true);
        let write = |origin| Presented {
            write_header: true,
            origin,
            ..with_token()
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
        let read = Presented {
            origin: Some("null"),
            ..with_token()
        };
        assert_eq!(check(&lo, &read, false), Ok(()));
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
