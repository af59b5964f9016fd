//! `--http3=auto`: a server says it also speaks HTTP/3 in an `Alt-Svc` header (RFC 7838) on
//! an HTTP/1.1 or HTTP/2 answer, `h3=":443"; ma=86400`. This reads the header and keeps what
//! the discovery found, for the result to show beside the run it chose.

use crate::Wire;

/// How the protocol of an `--http3=auto` run was chosen: one request over HTTP/2 (or the
/// HTTP/1.1 the server picked), its status and `Alt-Svc`, and what the run then spoke.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Discovered {
    /// What the discovery request went over.
    pub asked_over: Wire,
    pub status: u16,
    /// The `Alt-Svc` header as the server sent it (at most [`MOST_SHOWN`] characters,
    /// escaped); absent when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt_svc: Option<String>,
    /// How long the discovery request took, connect included.
    pub ms: f64,
    /// What the run spoke: `h3` when the server advertised HTTP/3 on the target's host.
    pub chose: Wire,
    /// The UDP port HTTP/3 was spoken on, when it was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// The most of an `Alt-Svc` header a result keeps.
pub const MOST_SHOWN: usize = 200;

/// The port `header` advertises HTTP/3 (`h3`) on for the same host, if any. An alternative on
/// another host is not taken: brink loads only the host it was given.
pub fn h3_port(header: &str) -> Option<u16> {
    header.split(',').find_map(|entry| {
        let first = entry.split(';').next()?.trim();
        let (proto, authority) = first.split_once('=')?;
        if proto.trim() != "h3" {
            return None;
        }
        let authority = authority.trim().strip_prefix('"')?.strip_suffix('"')?;
        let (host, port) = authority.rsplit_once(':')?;
        if !host.is_empty() {
            return None;
        }
        port.parse::<u16>().ok().filter(|p| *p > 0)
    })
}

/// `header` as a result keeps it: printable ASCII, at most [`MOST_SHOWN`] characters.
pub fn shown(header: &[u8]) -> String {
    let text: String = header.escape_ascii().to_string();
    match text.char_indices().nth(MOST_SHOWN) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_hosts_h3_port_is_found() {
        assert_eq!(h3_port(r#"h3=":443"; ma=86400"#), Some(443));
        assert_eq!(
            h3_port(r#"h3-29=":9000", h3=":8443"; ma=2592000"#),
            Some(8443)
        );
        assert_eq!(h3_port(r#"h2=":443", h3 = ":4433""#), Some(4433));
    }

    #[test]
    fn other_hosts_drafts_and_nonsense_are_not_taken() {
        for header in [
            r#"h3="other.example:443""#,
            r#"h3-29=":443""#,
            "clear",
            r#"h3=":0""#,
            r#"h3=":99999""#,
            r#"h3=:443"#,
            "",
            r#"h3="""#,
        ] {
            assert_eq!(h3_port(header), None, "{header}");
        }
    }

    #[test]
    fn a_hostile_header_is_kept_escaped_and_short() {
        let hostile = format!("h3=\":443\"\r\n<script>{}", "x".repeat(1000));
        let kept = shown(hostile.as_bytes());
        assert!(kept.len() <= MOST_SHOWN + 3, "{}", kept.len());
        assert!(!kept.contains('\r') && !kept.contains('\n'), "{kept}");
    }
}
