//! What a response's header block may hold (RFC 9113 §8.1.1, §8.2.1, §8.2.2, §8.3.2), checked
//! field by field as HPACK decodes them, so brink's client judges a response as hyper's h2
//! does: `:status` is exactly three digits; pseudo-headers are known ones, each at most once,
//! before every regular field and never in trailers; names are lowercase; no connection-specific field
//! (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`, a `te`
//! other than `trailers`); every `content-length` agrees and is digits. A block that breaks
//! any of these is malformed: its stream fails as a protocol error.
//!
//! One rule is hyper's, not the RFC's: a request pseudo-header (`:path`, `:method`, ...) in a
//! response is malformed by RFC 9113 §8.3, but h2 (hyper's HTTP/2) accepts it, and one server
//! must get one verdict whichever client carries the load, so brink's client accepts it too.

/// Fields that only HTTP/1.1 connections have.
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// The pseudo-headers h2 knows; `:status` first.
const PSEUDO: [&[u8]; 6] = [
    b"status",
    b"method",
    b"scheme",
    b"authority",
    b"path",
    b"protocol",
];

/// One header block being checked.
#[derive(Debug, Default)]
pub struct Check {
    /// A trailer block (after the response's headers): no pseudo-header at all.
    trailers: bool,
    pub status: Option<u16>,
    /// The `content-length` every copy agreed on.
    pub length: Option<u64>,
    /// Some field broke a rule.
    pub malformed: bool,
    /// `content-type: text/event-stream`: the body is Server-Sent Events.
    pub event_stream: bool,
    /// A `content-encoding` other than identity.
    pub encoded: bool,
    regular_seen: bool,
    /// The pseudo-headers seen, by their index in [`PSEUDO`].
    pseudo_seen: [bool; 6],
    /// The decoded size as RFC 9113 counts it (name + value + 32 per field).
    pub size: usize,
}

impl Check {
    /// A check for a response's headers (`trailers` false) or its trailers.
    pub fn new(trailers: bool) -> Check {
        Check {
            trailers,
            ..Check::default()
        }
    }

    /// Takes one decoded field.
    pub fn field(&mut self, name: &[u8], value: &[u8]) {
        self.size += name.len() + value.len() + 32;
        if let Some(pseudo) = name.strip_prefix(b":") {
            let known = PSEUDO.iter().position(|p| *p == pseudo);
            let first = known.is_some_and(|i| !std::mem::replace(&mut self.pseudo_seen[i], true));
            if self.trailers || self.regular_seen || !first {
                self.malformed = true;
            } else if known == Some(0) {
                self.status = status(value);
                self.malformed |= self.status.is_none();
            }
            return;
        }
        self.regular_seen = true;
        if name.is_empty() || name.iter().any(u8::is_ascii_uppercase) {
            self.malformed = true;
            return;
        }
        // Only names of these lengths need a closer look: te (2), upgrade (7), connection and
        // keep-alive (10), content-length (14), proxy-connection (16), transfer-encoding (17).
        match name.len() {
            2 => self.malformed |= name == b"te" && value != b"trailers",
            14 if name == b"content-length" => match (digits(value), self.length) {
                (Some(n), None) => self.length = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => self.malformed = true,
            },
            12 if name == b"content-type" => {
                self.event_stream = crate::proto::events::is_event_stream(value);
            }
            16 if name == b"content-encoding" => {
                self.encoded = crate::proto::events::is_encoded(value);
            }
            7 | 10 | 16 | 17 => self.malformed |= CONNECTION_SPECIFIC.contains(&name),
            _ => {}
        }
    }
}

/// `:status` as three ASCII digits, 100 to 599.
fn status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = v.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
    (100..=599).contains(&n).then_some(n)
}

/// A non-empty run of ASCII digits that fits a u64.
fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(trailers: bool, fields: &[(&str, &str)]) -> Check {
        let mut c = Check::new(trailers);
        for (n, v) in fields {
            c.field(n.as_bytes(), v.as_bytes());
        }
        c
    }

    #[test]
    fn good_blocks_pass() {
        let c = check(
            false,
            &[
                (":status", "200"),
                ("content-length", "5"),
                ("te", "trailers"),
            ],
        );
        assert!(!c.malformed);
        assert_eq!((c.status, c.length), (Some(200), Some(5)));
        let c = check(
            false,
            &[
                (":status", "204"),
                ("content-length", "0"),
                ("content-length", "0"),
            ],
        );
        assert!(!c.malformed);
        assert!(!check(true, &[("grpc-status", "0")]).malformed);
        // Malformed by the RFC, accepted by hyper's h2: brink's client agrees with hyper.
        assert!(!check(false, &[(":method", "GET"), (":status", "200")]).malformed);
    }

    #[test]
    fn each_broken_rule_is_malformed() {
        for fields in [
            &[(":status", "+200")][..],
            &[(":status", "0200")],
            &[(":status", "20")],
            &[(":status", "099")],
            &[(":status", "200"), (":status", "200")],
            &[(":status", "200"), (":path", "/"), (":path", "/")],
            &[(":status", "200"), (":foo", "1")],
            &[("x", "1"), (":status", "200")],
            &[(":status", "200"), ("X-Upper", "1")],
            &[(":status", "200"), ("connection", "close")],
            &[(":status", "200"), ("transfer-encoding", "chunked")],
            &[(":status", "200"), ("keep-alive", "5")],
            &[(":status", "200"), ("upgrade", "h2c")],
            &[(":status", "200"), ("te", "gzip")],
            &[
                (":status", "200"),
                ("content-length", "5"),
                ("content-length", "6"),
            ],
            &[(":status", "200"), ("content-length", "-1")],
            &[(":status", "200"), ("content-length", "")],
        ] {
            assert!(check(false, fields).malformed, "{fields:?}");
        }
        assert!(
            check(true, &[(":status", "200")]).malformed,
            "pseudo in trailers"
        );
    }
}
