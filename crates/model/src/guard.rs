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

/// `value` escaped so it prints on one line (control bytes, bytes beyond ASCII and
/// backslashes as escapes, quotes as they are), cut after about `most` characters.
pub fn escaped(value: &[u8], most: usize) -> String {
    let mut shown = String::new();
    for &b in value {
        if shown.len() >= most {
            shown.push_str("...");
            break;
        }
        match b {
            b'"' | b'\'' => shown.push(char::from(b)),
            _ => shown.extend(b.escape_ascii().map(char::from)),
        }
    }
    shown
}

/// The head of a `GET` brink sends beside the load (scrapes, health and completion probes):
/// the one place such a head is written, under the load's rules, so a path rendered from a
/// response can only be refused, never add a header or a request. The error names the fault
/// and the escaped value, and starts with `refused`.
pub fn get_head(path: &str, authority: &str, headers: &[(&str, &str)]) -> Result<String, String> {
    let refuse = |why: &str, v: &str| format!("refused: {why}: \"{}\"", escaped(v.as_bytes(), 120));
    if let Some(why) = path_fault(path.as_bytes()) {
        return Err(refuse(why, path));
    }
    if let Some(why) = authority_fault(authority.as_bytes()) {
        return Err(refuse(why, authority));
    }
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n");
    for (name, value) in headers {
        if !is_token(name.as_bytes()) {
            return Err(refuse("not a header name", name));
        }
        if let Some(why) = header_value_fault(value.as_bytes()) {
            return Err(refuse(why, value));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    Ok(head)
}

/// Why a `Host` value may not be sent: anything but the characters of a host, an IPv6
/// literal and a port.
fn authority_fault(a: &[u8]) -> Option<&'static str> {
    let ok = |c: &u8| c.is_ascii_alphanumeric() || b".-_:[]%~".contains(c);
    (a.is_empty() || !a.iter().all(ok)).then_some("not a host[:port]")
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
    fn probe_heads() {
        let h = get_head("/jobs/1?x=%20", "127.0.0.1:8080", &[("Accept", "*/*")]).unwrap();
        assert_eq!(
            h,
            "GET /jobs/1?x=%20 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\n\r\n"
        );
        let smuggling = "/jobs/1 HTTP/1.1\r\nHost: x\r\n\r\nDELETE /admin";
        let e = get_head(smuggling, "h", &[]).unwrap_err();
        assert!(
            e.starts_with("refused: space in the path: \"/jobs/1 HTTP/1.1\\r\\n"),
            "{e}"
        );
        assert!(get_head("/", "h\r\nX: y", &[]).is_err());
        assert!(get_head("/", "[::1]:80", &[("X-A", "b\nc")]).is_err());
        assert!(get_head("/", "[::1]:80", &[("X A", "b")]).is_err());
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
