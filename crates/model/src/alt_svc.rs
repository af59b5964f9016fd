//! `--http3=auto`: a server says it also speaks HTTP/3 in an `Alt-Svc` header (RFC 7838) on
//! an HTTP/1.1 or HTTP/2 answer, `h3=":443"; ma=86400`. This reads the header's `h3` entries
//! (each a port to try, or why it is not taken) and keeps what the discovery found, for the
//! result to show beside the run it chose.

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
    /// The `h3` entries not taken, each with why (another host, not a port, no QUIC
    /// handshake there), in the header's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_taken: Vec<String>,
}

/// The most of an `Alt-Svc` header a result keeps.
pub const MOST_SHOWN: usize = 200;

/// One `h3` entry of an `Alt-Svc` header: the UDP port to try, or why it is not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    Port(u16),
    Ignored(String),
}

/// The `h3` entries of `header` (several header fields joined with `,`), in the server's order
/// of preference, for a target on `host`. An alternative on another host is not taken: brink
/// loads only the host it was given.
pub fn h3_entries(header: &str, host: &str) -> Vec<Entry> {
    header
        .split(',')
        .filter_map(|entry| {
            let first = entry.split(';').next()?.trim();
            let (proto, authority) = first.split_once('=')?;
            (proto.trim() == "h3").then(|| entry_for(authority.trim(), host))
        })
        .collect()
}

fn entry_for(authority: &str, host: &str) -> Entry {
    let ignored = |why: &str| Entry::Ignored(format!("h3={}: {why}", shown(authority.as_bytes())));
    let Some(quoted) = authority
        .strip_prefix('"')
        .and_then(|a| a.strip_suffix('"'))
    else {
        return ignored("not a quoted host:port");
    };
    let Some((named, port)) = quoted.rsplit_once(':') else {
        return ignored("no port");
    };
    let bare = |h: &str| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()
    };
    if !named.is_empty() && bare(named) != bare(host) {
        return ignored("another host, not loaded");
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Entry::Port(p),
        _ => ignored("not a port"),
    }
}

/// `header` as a result keeps it: printable ASCII as it is, any other byte as `\xNN`, at most
/// [`MOST_SHOWN`] characters.
pub fn shown(header: &[u8]) -> String {
    let mut text = String::new();
    for &b in header {
        if text.len() >= MOST_SHOWN {
            text.push_str("...");
            break;
        }
        if (0x20..0x7f).contains(&b) {
            text.push(char::from(b));
        } else {
            text.push_str(&format!("\\x{b:02x}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(header: &str) -> Vec<u16> {
        h3_entries(header, "127.0.0.1")
            .into_iter()
            .filter_map(|e| match e {
                Entry::Port(p) => Some(p),
                Entry::Ignored(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_same_hosts_h3_ports_are_found_in_order() {
        assert_eq!(ports(r#"h3=":443"; ma=86400"#), [443]);
        assert_eq!(ports(r#"h3-29=":9000", h3=":8443"; ma=2592000"#), [8443]);
        assert_eq!(
            ports(r#"h2=":443", h3 = ":4433", h3=":4434""#),
            [4433, 4434]
        );
        assert_eq!(ports(r#"h3="127.0.0.1:7443""#), [7443]);
        assert_eq!(
            h3_entries(r#"h3="[::1]:7443""#, "[::1]"),
            [Entry::Port(7443)]
        );
    }

    #[test]
    fn other_hosts_drafts_and_nonsense_are_not_taken_and_say_why() {
        for (header, why) in [
            (r#"h3="other.example:443""#, "another host"),
            (r#"h3=":0""#, "not a port"),
            (r#"h3=":99999""#, "not a port"),
            (r#"h3=:443"#, "not a quoted host:port"),
            (r#"h3="""#, "no port"),
            (r#"h3="443""#, "no port"),
        ] {
            let e = h3_entries(header, "127.0.0.1");
            assert!(
                matches!(&e[..], [Entry::Ignored(w)] if w.contains(why)),
                "{header}: {e:?}"
            );
        }
        for header in [r#"h3-29=":443""#, "clear", ""] {
            assert_eq!(h3_entries(header, "127.0.0.1"), [], "{header}");
        }
    }

    #[test]
    fn a_hostile_header_is_kept_printable_and_short() {
        let hostile = format!("h3=\":443\"\r\n<script>\u{1b}[31m{}", "x".repeat(1000));
        let kept = shown(hostile.as_bytes());
        assert!(kept.len() <= MOST_SHOWN + 8, "{}", kept.len());
        assert!(
            kept.starts_with(r#"h3=":443"\x0d\x0a<script>\x1b"#),
            "{kept}"
        );
        assert!(kept.ends_with("..."), "{kept}");
    }
}
