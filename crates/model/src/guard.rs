//! What may go on the wire. brink sends exactly what the user wrote: a value that came from a
//! CSV cell, an environment variable or a previous response must never add a header or smuggle
//! a second request. The same rules judge literal values before a run (plans and flags, so a
//! mistake is reported with its place) and every rendered value before it is sent (so data
//! seen only at run time is refused, counted as an `invalid_request` error, and
//! never sent), on every protocol path. Nothing is percent-encoded silently: it is refused.

/// Whether `b` is an HTTP token (RFC 9110 §5.6.2): method and header names.
pub fn is_token(b: &[u8]) -> bool {
    !b.is_empty()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
}

/// Why a header value may not be sent, if it may not: CR or LF would end the header line (and
/// could start new headers or a new request), NUL is refused by every server.
pub fn header_value_fault(v: &[u8]) -> Option<&'static str> {
    v.iter().find_map(|&c| match c {
        b'\r' => Some("carriage return (CR) in a header value"),
        b'\n' => Some("line feed (LF) in a header value"),
        0 => Some("NUL byte in a header value"),
        _ => None,
    })
}

/// Why a request target (path and query) may not be sent, if it may not.
pub fn path_fault(p: &[u8]) -> Option<&'static str> {
    if p.first() != Some(&b'/') {
        return Some("the path does not start with '/'");
    }
    path_bytes_fault(p)
}

/// Why a piece of a path may not be sent: a space or a control byte would end the request
/// line early (and could start headers of the attacker's choosing).
pub fn path_bytes_fault(p: &[u8]) -> Option<&'static str> {
    p.iter().find_map(|&c| match c {
        b' ' => Some("space in the path"),
        0..=0x1f | 0x7f => Some("control byte in the path"),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(is_token(b"GET") && is_token(b"X-Request-Id") && is_token(b"a!#$%&'*+-.^_`|~9"));
        for bad in [&b""[..], b"X Y", b"X:Y", b"X\r\n", b"caf\xc3\xa9", b"(x)"] {
            assert!(!is_token(bad), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn header_values() {
        assert_eq!(header_value_fault(b"Bearer abc\tdef \xc3\xa9"), None);
        assert!(header_value_fault(b"abc\r\nX-Injected: yes").is_some());
        assert!(header_value_fault(b"abc\nX").is_some());
        assert!(header_value_fault(b"a\0").is_some());
    }

    #[test]
    fn paths() {
        assert_eq!(path_fault(b"/items?q=a%20b&x=caf\xc3\xa9"), None);
        for bad in [
            &b"items"[..],
            b"",
            b"/a b",
            b"/a\r\nHost: x",
            b"/a\x7f",
            b"/\t",
        ] {
            assert!(
                path_fault(bad).is_some(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
